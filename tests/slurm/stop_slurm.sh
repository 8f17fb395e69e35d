#!/usr/bin/env bash
# Stops what tests/slurm/start_slurm.sh started (slurmd, slurmctld, munged), by their pid files.
set -u
for pidfile in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/munge/munged.pid; do
    if [ -s "$pidfile" ]; then
        kill "$(cat "$pidfile")" 2>/dev/null && echo "stopped $(basename "$pidfile" .pid)"
    fi
done
