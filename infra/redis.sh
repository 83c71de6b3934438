#!/usr/bin/env bash
# Local Redis for cotal's job queues: start|stop|status. Debian's redis-server on loopback, daemonized,
# its own directory (REDIS_DIR, default <run dir>/cotal-redis-<port>); REDIS_PORT defaults to 6379.
# Idempotent: start on a running one and stop on a stopped one are successes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
port="${REDIS_PORT:-6379}"
rundir="${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}"
dir="${REDIS_DIR:-$rundir/cotal-redis-$port}"
pidfile="$dir/redis.pid"

ping() { redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; }
ourpid() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && cat "$pidfile"; }

need() {
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    echo "redis.sh: redis-server is not installed; next: sudo apt-get install -y redis-server   (or bash infra/setup.sh)" >&2
    exit 6
  fi
}

case "${1:-}" in
  start)
    need
    if ping; then
      echo "redis.sh: Redis already answers on 127.0.0.1:$port$(p=$(ourpid) && echo " (pid $p, $dir)")"
      exit 0
    fi
    mkdir -p "$dir" && chmod 700 "$dir"
    redis-server "$here/redis/redis.conf" --port "$port" --dir "$dir" --pidfile "$pidfile" \
      --logfile "$dir/redis.log" --daemonize yes
    for _ in $(seq 1 100); do
      if ping; then echo "redis.sh: started on 127.0.0.1:$port (pid $(cat "$pidfile" 2>/dev/null || echo '?'), $dir)"; exit 0; fi
      sleep 0.05
    done
    echo "redis.sh: Redis did not answer on 127.0.0.1:$port within 5 s; see $dir/redis.log" >&2
    tail -n 20 "$dir/redis.log" >&2 || true
    exit 6
    ;;
  stop)
    if pid=$(ourpid); then
      redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || { echo "redis.sh: stopped (pid $pid)"; rm -f "$pidfile"; exit 0; }; sleep 0.05; done
      kill -9 "$pid" 2>/dev/null || true
      echo "redis.sh: stopped by SIGKILL (pid $pid)"
    elif ping; then
      echo "redis.sh: a Redis on 127.0.0.1:$port was not started by this script ($dir); leaving it alone"
    else
      echo "redis.sh: not running"
    fi
    ;;
  status)
    if ping; then
      echo "redis.sh: running on 127.0.0.1:$port$(p=$(ourpid) && echo " (pid $p, $dir)")"
    else
      echo "redis.sh: stopped (127.0.0.1:$port); next: bash infra/redis.sh start"
      exit 3
    fi
    ;;
  *)
    echo "usage: infra/redis.sh start|stop|status   (REDIS_PORT, default 6379; REDIS_DIR)" >&2
    exit 2
    ;;
esac
