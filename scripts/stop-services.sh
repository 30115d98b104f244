#!/usr/bin/env bash
# stop-services.sh — stop the PostgreSQL and nats-server that
# scripts/ensure-services.sh started (the ones using .data/pg and
# .data/nats.pid). Services it merely found running are left alone.
# Harmless when nothing was started. Data is kept; `rm -rf .data` to wipe it.
#
# Honours ENSURE_DATA_DIR like ensure-services.sh (for testing).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR="${ENSURE_DATA_DIR:-$ROOT/.data}"

log() { printf '[stop-services] %s\n' "$*" >&2; }

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    if command -v runuser >/dev/null 2>&1; then
      (cd / && runuser -u postgres -- "$@")
    else
      local q; printf -v q '%q ' "$@"
      (cd / && su postgres -s /bin/sh -c "$q")
    fi
  else
    "$@"
  fi
}

# nats_alive PID — true if PID is a live (not zombie) nats-server process.
nats_alive() {
  local pid="$1"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  if [ -d "/proc/$pid" ]; then
    grep -q nats-server "/proc/$pid/cmdline" 2>/dev/null || return 1
  fi
  return 0
}

# ---------------------------------------------------------------- PostgreSQL
PG_DIR="$DATA_DIR/pg"
if [ -f "$DATA_DIR/pg.path" ]; then
  PG_DIR="$(cat "$DATA_DIR/pg.path")"
fi
if [ -f "$PG_DIR/postmaster.pid" ]; then
  ver="$(cat "$PG_DIR/PG_VERSION" 2>/dev/null || true)"
  bin="/usr/lib/postgresql/$ver/bin"
  if [ -z "$ver" ] || [ ! -x "$bin/pg_ctl" ]; then
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  fi
  if [ -n "$bin" ] && [ -x "$bin/pg_ctl" ]; then
    log "postgres: stopping ($PG_DIR)"
    as_pg "$bin/pg_ctl" -D "$PG_DIR" -m fast -w -t 60 stop >&2 \
      || log "postgres: pg_ctl stop failed (was it running?)"
  else
    pid="$(head -n 1 "$PG_DIR/postmaster.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      log "postgres: no pg_ctl found, sending SIGINT to pid $pid"
      kill -INT "$pid" 2>/dev/null || true
    fi
  fi
else
  log "postgres: nothing started by ensure-services.sh"
fi

# ---------------------------------------------------------------------- NATS
pidfile="$DATA_DIR/nats.pid"
if [ -f "$pidfile" ]; then
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if nats_alive "$pid"; then
    log "nats: stopping nats-server (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      nats_alive "$pid" || break
      sleep 0.2
    done
    if nats_alive "$pid"; then
      log "nats: pid $pid still running, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  else
    log "nats: pid file found but process is not running"
  fi
  rm -f "$pidfile"
else
  log "nats: nothing started by ensure-services.sh"
fi
exit 0
