#!/usr/bin/env bash
# SpotSigs signatures against word 5-grams for `dupgram pairs`, on
# Reuters-21578 + 20 Newsgroups (../shared/corpora, or DUPGRAM_CORPORA).
#
#   scripts/spotsigs-vs-ngrams.sh [OUTDIR]
#
# Runs `dupgram pairs -n 5 --min-ssr 0.5`, `dupgram pairs -n 5 --min-sscr 0.5`
# (the reference of the parameter table) and `dupgram pairs --features
# spotsigs --min-ssr 0.5` for each setting of the grid below, then
# scripts/spotsigs_compare.py prints the tables of the README's section
# "SpotSigs against word 5-grams" (pairs at SSR >= 0.5 and >= 0.8 by each,
# what each misses of the other's, examples, and the parameter grid).
# OUTDIR (default target/bench/spotsigs) keeps the pairs files and summaries.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/target/bench/spotsigs}
corpora=${DUPGRAM_CORPORA:-/work/shared/corpora}
inputs=("$corpora/reuters21578.jsonl.zst" "$corpora/20newsgroups.jsonl.zst")
for f in "${inputs[@]}"; do
  [ -f "$f" ] || { echo "spotsigs-vs-ngrams: $f is missing" >&2; exit 1; }
done
mkdir -p "$out"
cargo build --release --manifest-path "$here/Cargo.toml" --bin dupgram -q
bin=$here/target/release/dupgram
common=(--memory 1G --max-df 1000 --expand-groups)

run() { # name, options…
  local name=$1; shift
  if [ ! -s "$out/$name.tsv" ]; then
    /usr/bin/time -f "%e s wall, %M KiB peak" "$bin" pairs "${inputs[@]}" "${common[@]}" "$@" \
      -o "$out/$name.tsv" --stats-json "$out/$name.json" 2> "$out/$name.log"
  fi
  echo "$name: $(tail -1 "$out/$name.log")"
}

printf 'a\nan\nthe\nis\nwas\nare\nbe\nhas\nhave\nof\nto\nin\nfor\non\nwith\nat\nby\nfrom\nthat\nit\n' > "$out/antecedents-20.txt"

run ngrams-ssr -n 5 --min-ssr 0.5
run ngrams-sscr -n 5 --min-sscr 0.5
# The grid: name, then options.
run spot-a4-d1-c2 --features spotsigs --min-ssr 0.5
run spot-a4-d1-c2-idf --features spotsigs --min-ssr 0.5 --idf-range 0.2,0.85
run spot-a4-d1-c3 --features spotsigs --min-ssr 0.5 --chain 3
run spot-a4-d2-c2 --features spotsigs --min-ssr 0.5 --spot-distance 2
run spot-a20-d1-c2 --features spotsigs --min-ssr 0.5 --antecedents "$out/antecedents-20.txt"
# The defaults of `--features spotsigs` (the list above is DEFAULT_ANTECEDENTS).
run spot-a20-d1-c3 --features spotsigs --min-ssr 0.5 --antecedents "$out/antecedents-20.txt" --chain 3

python3 "$here/scripts/spotsigs_compare.py" "$out" "${inputs[@]}"
