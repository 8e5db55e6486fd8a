#!/bin/sh
# The images' entrypoint: `api`, `worker` or `sandbox` starts that role; anything else runs as
# a command (`docker compose run api referee verify 1 1`).
#
#   api      referee serve on $REFEREE_HOST:$REFEREE_PORT with $REFEREE_API_WORKERS processes
#   worker   referee worker (Celery, threads) with $REFEREE_WORKER_CONCURRENCY jobs at once
#   sandbox  referee serve with the bubblewrap backend: a sandbox node. Runs as root (bubblewrap
#            needs it to build each sandbox and then drops the program to uid 65534 with no
#            capability); first makes this container's own cgroups writable, so that each run
#            gets a memory, pids and CPU group nested inside the container's limits.
set -eu
role="${1:-api}"
case "$role" in
  api)
    exec referee serve --host "${REFEREE_HOST:-0.0.0.0}" --port "${REFEREE_PORT:-8000}" \
      --workers "${REFEREE_API_WORKERS:-2}" --log-level "${REFEREE_LOG_LEVEL:-info}"
    ;;
  worker)
    # Containers with host networking share the host's name: name the worker after this
    # container's id (what `docker ps` shows), so that leases and node names stay apart.
    if [ -z "${REFEREE_WORKER_NAME:-}" ]; then
      cid="$(sed -n 's#.*/containers/\([0-9a-f]\{64\}\)/hostname .*#\1#p' /proc/self/mountinfo \
        | head -n1 | cut -c1-12)"
      [ -n "$cid" ] || cid="$(hostname)-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
      export REFEREE_WORKER_NAME="worker-$cid"
    fi
    exec referee worker --concurrency "${REFEREE_WORKER_CONCURRENCY:-1}" \
      --loglevel "${REFEREE_LOG_LEVEL:-info}"
    ;;
  sandbox)
    if [ "$(id -u)" = 0 ]; then
      # Docker mounts the container's own cgroup read-only; with CAP_SYS_ADMIN it can be made
      # writable (it stays this container's subtree: nothing above it is visible).
      if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        # v2: move this process into a leaf first, so that the container's root group may hand
        # its controllers down to the per-run groups ("no internal processes").
        mount -o remount,rw /sys/fs/cgroup 2>/dev/null || true
        mkdir -p /sys/fs/cgroup/init 2>/dev/null && echo $$ >/sys/fs/cgroup/init/cgroup.procs \
          2>/dev/null || true
      else
        for ctrl in memory pids cpu cpuacct; do  # v1: one hierarchy per controller
          [ -d "/sys/fs/cgroup/$ctrl" ] && mount -o remount,bind,rw "/sys/fs/cgroup/$ctrl" \
            2>/dev/null || true
        done
      fi
    fi
    exec referee serve --host "${REFEREE_HOST:-0.0.0.0}" --port "${REFEREE_PORT:-8001}" \
      --workers 1 --log-level "${REFEREE_LOG_LEVEL:-info}"
    ;;
  *)
    exec "$@"
    ;;
esac
