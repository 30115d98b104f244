#!/usr/bin/env bash
# ensure-browser.sh — make sure a Chromium exists for the browser tests (test/browser), which drive it
# with playwright-core.
#
#   CHROMIUM_PATH set        -> use it (must be executable)
#   chromium on PATH         -> use it
#   otherwise, as root       -> install Debian's chromium with apt-get
#   otherwise                -> say what to install and exit 1
#
# Prints the browser's path on stdout; messages go to stderr. Running it twice is harmless.
set -euo pipefail

log() { printf '[ensure-browser] %s\n' "$*" >&2; }

if [ -n "${CHROMIUM_PATH:-}" ]; then
  [ -x "$CHROMIUM_PATH" ] || { log "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable"; exit 1; }
  echo "$CHROMIUM_PATH"
  exit 0
fi

if path="$(command -v chromium)"; then
  echo "$path"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  log "Chromium is missing: install Debian's package (sudo apt-get install chromium) or set CHROMIUM_PATH"
  exit 1
fi

log "installing chromium from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium fonts-liberation >&2
command -v chromium
