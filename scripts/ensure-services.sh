#!/usr/bin/env bash
# ensure-services.sh — make sure PostgreSQL and NATS JetStream are reachable
# for the app (tests, dev server, benchmarks).
#
#   PostgreSQL: DATABASE_URL set            -> nothing to do
#               something on 127.0.0.1:5432 -> use it
#               otherwise                   -> start a project-local server
#                                              (.data/pg, trust auth, user postgres)
#   NATS:       NATS_URL set                -> nothing to do
#               something on 127.0.0.1:4222 -> use it
#               otherwise                   -> start a project-local nats-server
#                                              with JetStream (.data/nats)
#
# Missing binaries are installed from Debian's packages when running as root;
# otherwise the script says what to install and exits 1.
#
# All messages go to stderr; stdout stays clean. Running it twice is harmless.
# scripts/stop-services.sh stops what this script started.
#
# Overrides meant for testing this script only (defaults in brackets):
#   ENSURE_DATA_DIR  [<repo>/.data]   ENSURE_PG_HOST   [127.0.0.1]
#   ENSURE_PG_PORT   [5432]           ENSURE_NATS_HOST [127.0.0.1]
#   ENSURE_NATS_PORT [4222]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR="${ENSURE_DATA_DIR:-$ROOT/.data}"
PG_HOST="${ENSURE_PG_HOST:-127.0.0.1}"
PG_PORT="${ENSURE_PG_PORT:-5432}"
NATS_HOST="${ENSURE_NATS_HOST:-127.0.0.1}"
NATS_PORT="${ENSURE_NATS_PORT:-4222}"

log() { printf '[ensure-services] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
trap 'log "ERROR: line $LINENO: \"$BASH_COMMAND\" failed"' ERR

is_root() { [ "$(id -u)" -eq 0 ]; }

# port_open HOST PORT — true if a TCP connection succeeds (1 s timeout).
port_open() {
  local host="$1" port="$2"
  if command -v timeout >/dev/null 2>&1; then
    timeout 1 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" >/dev/null 2>&1
  else
    (exec 3<>"/dev/tcp/$host/$port") >/dev/null 2>&1
  fi
}

# nats_info HOST PORT — print the INFO line a NATS server sends on connect.
nats_info() {
  local host="$1" port="$2"
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"; IFS= read -r line <&3; printf "%s\n" "$line"' \
    "$host" "$port" 2>/dev/null || true
}

APT_UPDATED=0
apt_install() {
  is_root || return 1
  command -v apt-get >/dev/null 2>&1 || return 1
  export DEBIAN_FRONTEND=noninteractive
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    apt-get update -qq </dev/null >&2 || return 1
    APT_UPDATED=1
  fi
  log "apt-get install -y $*"
  apt-get install -y -qq --no-install-recommends "$@" </dev/null >&2
}

need_install() {
  log "cannot find $1 and not running as root, so cannot install it."
  log "Install the services with:"
  log "    sudo apt-get install -y postgresql nats-server"
  log "or point the app at running servers with DATABASE_URL / NATS_URL."
  exit 1
}

# ---------------------------------------------------------------- PostgreSQL

# pg_bindir [VERSION] — print the bin dir of the given (or newest) PostgreSQL.
pg_bindir() {
  local want="${1:-}" d best="" bestv=-1 v
  if [ -n "$want" ] && [ -x "/usr/lib/postgresql/$want/bin/pg_ctl" ]; then
    echo "/usr/lib/postgresql/$want/bin"; return 0
  fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] || continue
    v="$(basename "$(dirname "$d")")"
    v="${v%%.*}"
    [[ "$v" =~ ^[0-9]+$ ]] || continue
    if [ "$v" -gt "$bestv" ]; then bestv="$v"; best="$d"; fi
  done
  [ -n "$best" ] && echo "$best"
}

# as_pg CMD... — run a PostgreSQL tool as the right user (postgres when root).
as_pg() {
  if is_root; then
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

# When root, postgres must own the data dir and be able to reach it. If the
# repository sits somewhere user postgres cannot traverse (e.g. under /root),
# use a directory under /var/tmp instead and record its path in .data/pg.path.
pg_data_location() {
  PG_DIR="$DATA_DIR/pg"
  PG_LOG="$DATA_DIR/pg.log"
  rm -f "$DATA_DIR/pg.path"
  is_root || return 0
  chmod o+x "$DATA_DIR" 2>/dev/null || true
  if as_pg test -x "$DATA_DIR" 2>/dev/null; then
    return 0
  fi
  local key
  key="$(printf '%s' "$DATA_DIR" | cksum | cut -d' ' -f1)"
  PG_DIR="/var/tmp/ensure-services-$key/pg"
  PG_LOG="/var/tmp/ensure-services-$key/pg.log"
  mkdir -p "$(dirname "$PG_DIR")"
  chown postgres: "$(dirname "$PG_DIR")"
  printf '%s\n' "$PG_DIR" >"$DATA_DIR/pg.path"
  log "user postgres cannot reach $DATA_DIR; using $PG_DIR for the data directory"
}

# After `apt-get install postgresql`, Debian may create and start its own
# "main" cluster on our port (password auth, not usable as-is). Stop it and
# keep it from auto-starting, since we only just installed it.
pg_stop_fresh_debian_clusters() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 0
  local ver name port status rest
  while read -r ver name port status rest; do
    [ "$port" = "$PG_PORT" ] || continue
    if [ "$status" = "online" ]; then
      log "stopping Debian's freshly installed cluster $ver/$name on port $port"
      pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" stop 1>&2 \
        || pg_ctlcluster "$ver" "$name" stop 1>&2 || true
    fi
    if [ -w "/etc/postgresql/$ver/$name/start.conf" ]; then
      echo manual >"/etc/postgresql/$ver/$name/start.conf"
    fi
  done < <(pg_lsclusters -h 2>/dev/null || true)
}

pg_ready() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h "$PG_HOST" -p "$PG_PORT" >/dev/null 2>&1
  else
    port_open "$PG_HOST" "$PG_PORT"
  fi
}

ensure_postgres() {
  if [ -n "${DATABASE_URL:-}" ]; then
    log "postgres: DATABASE_URL is set, leaving it alone"
    return 0
  fi
  if pg_ready || port_open "$PG_HOST" "$PG_PORT"; then
    log "postgres: already listening on $PG_HOST:$PG_PORT"
    return 0
  fi

  local bin pgver=""
  bin="$(pg_bindir || true)"
  if [ -z "$bin" ]; then
    is_root || need_install "PostgreSQL server binaries (/usr/lib/postgresql/*/bin)"
    apt_install postgresql || die "apt-get install postgresql failed"
    pg_stop_fresh_debian_clusters
    bin="$(pg_bindir || true)"
    [ -n "$bin" ] || die "PostgreSQL installed but no /usr/lib/postgresql/*/bin/pg_ctl found"
    if pg_ready; then
      log "postgres: listening on $PG_HOST:$PG_PORT after install"
      return 0
    fi
  fi
  if is_root; then
    getent passwd postgres >/dev/null 2>&1 \
      || die "user 'postgres' does not exist (it comes with Debian's postgresql package)"
  fi

  mkdir -p "$DATA_DIR"
  pg_data_location

  # An existing data directory must be run by its own major version.
  if [ -f "$PG_DIR/PG_VERSION" ]; then
    pgver="$(cat "$PG_DIR/PG_VERSION")"
    bin="$(pg_bindir "$pgver" || true)"
    if [ "$bin" != "/usr/lib/postgresql/$pgver/bin" ]; then
      die "$PG_DIR was made by PostgreSQL $pgver, which is not installed (found $bin); remove $PG_DIR to start afresh"
    fi
  fi

  if is_root; then
    mkdir -p "$PG_DIR"
    chown postgres: "$PG_DIR"
    chmod 0700 "$PG_DIR"
    touch "$PG_LOG"
    chown postgres: "$PG_LOG"
  fi

  if [ ! -f "$PG_DIR/PG_VERSION" ]; then
    log "postgres: initdb $PG_DIR ($bin)"
    as_pg "$bin/initdb" -D "$PG_DIR" -U postgres --auth=trust -E UTF8 >&2 \
      || die "initdb failed"
  fi

  log "postgres: starting on $PG_HOST:$PG_PORT (log: $PG_LOG)"
  if ! as_pg "$bin/pg_ctl" -D "$PG_DIR" -l "$PG_LOG" \
      -o "-c listen_addresses=$PG_HOST -p $PG_PORT -k /tmp" -w -t 60 start >&2; then
    tail -n 30 "$PG_LOG" >&2 2>/dev/null || true
    die "pg_ctl start failed"
  fi


  for _ in $(seq 1 60); do
    pg_ready && { log "postgres: ready on $PG_HOST:$PG_PORT"; return 0; }
    sleep 0.5
  done
  tail -n 30 "$PG_LOG" >&2 2>/dev/null || true
  die "postgres did not become ready on $PG_HOST:$PG_PORT"
}

# ---------------------------------------------------------------------- NATS

find_nats() {
  local c
  for c in "$(command -v nats-server 2>/dev/null || true)" /usr/sbin/nats-server /usr/local/bin/nats-server; do
    if [ -n "$c" ] && [ -f "$c" ] && [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  return 1
}

nats_check_jetstream() {
  local info
  info="$(nats_info "$NATS_HOST" "$NATS_PORT")"
  if [ -n "$info" ] && [[ "$info" != *'"jetstream":true'* ]]; then
    log "WARNING: the NATS server on $NATS_HOST:$NATS_PORT does not report JetStream enabled;"
    log "         the app needs JetStream (start nats-server with -js)."
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

ensure_nats() {
  if [ -n "${NATS_URL:-}" ]; then
    log "nats: NATS_URL is set, leaving it alone"
    return 0
  fi
  if port_open "$NATS_HOST" "$NATS_PORT"; then
    log "nats: already listening on $NATS_HOST:$NATS_PORT"
    nats_check_jetstream
    return 0
  fi

  local bin
  bin="$(find_nats || true)"
  if [ -z "$bin" ]; then
    is_root || need_install "nats-server"
    apt_install nats-server || die "apt-get install nats-server failed"
    # Debian's unit (if systemd runs it) starts nats without JetStream; stop it.
    if port_open "$NATS_HOST" "$NATS_PORT" && command -v systemctl >/dev/null 2>&1; then
      log "nats: stopping Debian's nats-server service (no JetStream)"
      systemctl stop nats-server 1>&2 || true
      systemctl disable nats-server 1>&2 || true
      sleep 1
    fi
    bin="$(find_nats || true)"
    [ -n "$bin" ] || die "nats-server installed but not found"
  fi

  mkdir -p "$DATA_DIR/nats"
  local pidfile="$DATA_DIR/nats.pid" logfile="$DATA_DIR/nats.log"
  if [ -f "$pidfile" ]; then
    local old; old="$(cat "$pidfile" 2>/dev/null || true)"
    if nats_alive "$old"; then
      log "nats: our nats-server (pid $old) is running but $NATS_HOST:$NATS_PORT does not answer yet"
    else
      rm -f "$pidfile"
    fi
  fi

  if [ ! -f "$pidfile" ]; then
    log "nats: starting $bin on $NATS_HOST:$NATS_PORT with JetStream (log: $logfile)"
    nohup "$bin" -a "$NATS_HOST" -p "$NATS_PORT" -js -sd "$DATA_DIR/nats" \
      </dev/null >>"$logfile" 2>&1 &
    echo $! >"$pidfile"
    disown 2>/dev/null || true
  fi

  local pid; pid="$(cat "$pidfile")"
  for _ in $(seq 1 30); do
    if port_open "$NATS_HOST" "$NATS_PORT"; then
      log "nats: ready on $NATS_HOST:$NATS_PORT (pid $pid)"
      nats_check_jetstream
      return 0
    fi
    if ! nats_alive "$pid"; then
      rm -f "$pidfile"
      tail -n 30 "$logfile" >&2 2>/dev/null || true
      die "nats-server exited during startup"
    fi
    sleep 0.5
  done
  tail -n 30 "$logfile" >&2 2>/dev/null || true
  die "nats-server did not answer on $NATS_HOST:$NATS_PORT within 15 s"
}

ensure_postgres
ensure_nats
