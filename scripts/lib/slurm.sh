# Sourced by scripts that need a throw-away single-node Slurm cluster:
# `slurm_up DIR` installs slurm-wlm and munge when missing (apt-get), starts
# munged, slurmctld and slurmd in the background of the calling script (no
# systemd; their logs go to DIR) and waits for the node; `slurm_down` stops
# those three processes, and only those. Needs root. The steps are those of
# ../shared/notes/slurm.md.

slurm_pids=()

slurm_down() {
  local pid
  for pid in "${slurm_pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${slurm_pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  slurm_pids=()
}

slurm_up() {
  local logs=$1
  if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
    echo "slurm: installing slurm-wlm and munge" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge > /dev/null
  fi

  # munge
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  local d pid
  for d in /run/munge /var/lib/munge /var/log/munge; do mkdir -p "$d"; chown munge:munge "$d"; done
  setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F > "$logs/munged.log" 2>&1 &
  slurm_pids+=($!)
  for _ in $(seq 100); do [ -S /run/munge/munge.socket.2 ] && break; sleep 0.1; done
  munge -n | unmunge > /dev/null

  # slurm: one node, this machine; scheduling every second rather than every minute
  # State and spool live in DIR: a throw-away cluster starts from nothing.
  mkdir -p /etc/slurm /run/slurm "$logs/slurmctld.state" "$logs/slurmd.spool"
  local mem_mb=$(( $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) - 1024 ))
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=dupgram-local
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
StateSaveLocation=$logs/slurmctld.state
SlurmdSpoolDir=$logs/slurmd.spool
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mb
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  /usr/sbin/slurmctld -D -i > "$logs/slurmctld.log" 2>&1 &
  slurm_pids+=($!)
  /usr/sbin/slurmd -D -N localhost > "$logs/slurmd.log" 2>&1 &
  slurm_pids+=($!)
  local state=
  for _ in $(seq 100); do
    # A daemon that died (a bad configuration) ends the wait at once.
    for pid in "${slurm_pids[@]}"; do kill -0 "$pid" 2> /dev/null || break 2; done
    state=$(timeout 5 sinfo -h -o %T 2> /dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  if [ "$state" != idle ]; then
    echo "slurm: the node did not come up" >&2
    cat "$logs"/*.log >&2
    return 1
  fi
  echo "slurm: cluster up ($(sinfo -h -o '%N %c CPUs %m MB'))" >&2
}
