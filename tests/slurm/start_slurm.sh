#!/usr/bin/env bash
# A single-node Slurm on this machine, for checking the job-array example of
# docs/guides/slurm.md (tests/slurm/run_example.sh). Not part of CI.
#
# Installs Debian's slurm-wlm and munge, writes a minimal slurm.conf (one CPU-only node,
# localhost, 2 CPUs, no cgroups, no accounting), starts munged, slurmctld and slurmd, and
# waits until the node is idle. Run as root. Idempotent: the daemons an earlier start left
# running are stopped first (by their pid files: tests/slurm/stop_slurm.sh).
#
#   bash tests/slurm/start_slurm.sh        # then: sinfo; bash tests/slurm/run_example.sh
#   SLURM_CPUS=2 SLURM_MEM_MB=4000          # the node's size (defaults)
set -euo pipefail

CPUS=${SLURM_CPUS:-2}
MEM=${SLURM_MEM_MB:-4000}
NODE=$(hostname -s)
CONF=/etc/slurm/slurm.conf

apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge

# munge: the key the package made (or a new one), its run directory, the daemon as `munge`.
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
bash "$(dirname "$0")/stop_slurm.sh"      # what an earlier start left running (pid files)
sleep 1
runuser -u munge -- /usr/sbin/munged
munge -n | unmunge >/dev/null && echo "munge: up"

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm
cat > "$CONF" <<CONF
# written by tests/slurm/start_slurm.sh: one CPU-only node on localhost
ClusterName=zlhtest
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
CONF
echo "slurm.conf: $CONF (node $NODE, $CPUS CPUs, $MEM MB)"

slurmctld -c -i          # -c: a fresh state (no jobs of an earlier start); daemonises
sleep 2
slurmd
for _ in $(seq 1 30); do
    state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null || true)
    [ "$state" = "idle" ] && break
    sleep 1
done
sinfo
[ "$state" = "idle" ] || { echo "node $NODE is '$state', not idle; see /var/log/slurm/" >&2; exit 1; }
echo "slurm: up (node $NODE idle)"
