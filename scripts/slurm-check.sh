#!/usr/bin/env bash
# Brings up a throw-away single-node Slurm cluster (munge, slurmctld, slurmd
# in the foreground of this script, no systemd), runs 4-shard × 4-bucket
# `dupgram slurm ngrams` and `dupgram slurm pairs` jobs on a generated
# corpus, and checks their outputs are byte-identical to one-machine
# `dupgram ngrams` and `dupgram pairs`. Stops the daemons it
# started, and only those.
#
#   scripts/slurm-check.sh            # installs slurm-wlm and munge with apt-get when missing
#
# Needs root (it writes /etc/slurm/slurm.conf and starts the daemons).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "slurm-check: $*" >&2; }

if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  log "installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge > /dev/null
fi

work=$(mktemp -d /tmp/dupgram-slurm.XXXXXX)
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT INT TERM

# --- munge ---------------------------------------------------------------------
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; }
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
for d in /run/munge /var/lib/munge /var/log/munge; do mkdir -p "$d"; chown munge:munge "$d"; done
setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F > "$work/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S /run/munge/munge.socket.2 ] && break; sleep 0.1; done
munge -n | unmunge > /dev/null

# --- slurm ---------------------------------------------------------------------
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /run/slurm /var/log/slurm
mem_mb=$(( $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) - 1024 ))
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=dupgram-ci
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
DependencyParameters=kill_invalid_depend
SchedulerParameters=sched_interval=1,bf_interval=1,sched_min_interval=100000
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mb
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
/usr/sbin/slurmctld -D -i > "$work/slurmctld.log" 2>&1 &
pids+=($!)
/usr/sbin/slurmd -D -N localhost > "$work/slurmd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ "$(sinfo -h -o %T 2> /dev/null)" = idle ] && break; sleep 0.2; done
[ "$(sinfo -h -o %T)" = idle ] || { log "the node did not come up"; cat "$work"/*.log >&2; exit 1; }
log "cluster up ($(sinfo -h -o '%N %c CPUs %m MB'))"

# --- the job -------------------------------------------------------------------
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
cd "$work"
"$bin/dupgram-gen" --tokens 400000 --seed 5 --format jsonl > corpus.jsonl 2> /dev/null
"$bin/dupgram" ngrams corpus.jsonl -n 8 --memory 64M -q -o one.tsv
"$bin/dupgram" slurm ngrams corpus.jsonl -n 8 --memory 64M -q -o staged.tsv \
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

# Submitted again, every task is found finished and the output stays.
rm staged.tsv
"$bin/dupgram" slurm ngrams corpus.jsonl -n 8 --memory 64M -q -o staged.tsv \
  --workdir "$work/job" --shards 4 --buckets 4 --wait
[ ! -e staged.tsv ] || { log "a finished job ran again"; exit 1; }
grep -q "already done" job/slurm/map-2.log
log "resubmitted: every task skipped"
echo "slurm-check: 3 passed, 0 failed"
