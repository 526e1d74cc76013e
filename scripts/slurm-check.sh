#!/usr/bin/env bash
# Brings up a throw-away single-node Slurm cluster (scripts/lib/slurm.sh:
# munge, slurmctld, slurmd in the background of this script, no systemd),
# runs 4-shard × 4-bucket `dupgram slurm ngrams` and `dupgram slurm pairs`
# jobs on a generated corpus, and checks their outputs are byte-identical to
# one-machine `dupgram ngrams` and `dupgram pairs`; then that a resubmitted
# job redoes nothing. Stops the daemons it started, and only those.
#
#   scripts/slurm-check.sh      # installs slurm-wlm and munge with apt-get when missing
#
# Needs root (it writes /etc/slurm/slurm.conf and starts the daemons).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "slurm-check: $*" >&2; }

# shellcheck source=lib/slurm.sh
. "$here/scripts/lib/slurm.sh"
work=$(mktemp -d /tmp/dupgram-slurm.XXXXXX)
cleanup() {
  local status=$?
  slurm_down
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT INT TERM
slurm_up "$work"

cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
cd "$work"
"$bin/dupgram-gen" --tokens 400000 --seed 5 --format jsonl > corpus.jsonl 2> /dev/null

"$bin/dupgram" ngrams corpus.jsonl -n 8 --memory 64M -q -o one.tsv --lexicon one.tsv.lex
"$bin/dupgram" slurm ngrams corpus.jsonl -n 8 --memory 64M -q -o staged.tsv --lexicon staged.tsv.lex \
  --workdir "$work/job" --shards 4 --buckets 4 --wait
cmp one.tsv staged.tsv
cmp one.tsv.lex staged.tsv.lex
log "ngrams: $(wc -l < one.tsv) duplicate 8-grams, byte-identical through Slurm (4 shards × 4 buckets)"

"$bin/dupgram" pairs corpus.jsonl -n 5 --min-sscr 0.3 --memory 64M -q -o one.pairs --clusters one.clusters
"$bin/dupgram" slurm pairs corpus.jsonl -n 5 --min-sscr 0.3 --memory 64M -q -o staged.pairs --clusters staged.clusters \
  --workdir "$work/pairs-job" --shards 4 --buckets 4 --wait
cmp one.pairs staged.pairs
cmp one.clusters staged.clusters
log "pairs: $(( $(wc -l < one.pairs) - 1 )) pairs, $(wc -l < one.clusters) clusters, byte-identical through Slurm"

# Submitted again, every task is found finished and nothing is rewritten.
rm staged.tsv
"$bin/dupgram" slurm ngrams corpus.jsonl -n 8 --memory 64M -q -o staged.tsv --lexicon staged.tsv.lex \
  --workdir "$work/job" --shards 4 --buckets 4 --wait
[ ! -e staged.tsv ] || { log "a finished job ran again"; exit 1; }
grep -q "already done" job/slurm/map-2.log
log "resubmitted: every task skipped"
echo "slurm-check: 3 passed, 0 failed"
