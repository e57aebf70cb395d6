#!/usr/bin/env bash
# The test suite's set-up, run by `make test` and `make quick` before anything else:
#
# 1. The system packages the tests need (Debian's names), found by their commands:
#    git (the GitHub stand-in keeps real git repositories), g++ (the ABI tests compile fake
#    torch libraries), binutils (`nm`, which the ABI audit runs), postgresql (the store's
#    tests on a real server), docker-registry and apache2-utils (`htpasswd`: the registry
#    client's tests start Debian's distribution registry), chromium and chromium-driver
#    (the status page's browser tests), nodejs and npm (the octokit packages below).
#    Missing ones are installed with apt-get when run as root; otherwise one message names
#    the command to run, and nothing else runs.
# 2. The pinned @octokit npm packages the contract data is cut from
#    (sandbox/data/regenerate.py --print-packages), for the test that cuts it again and
#    compares: installed once into the user's cache folder (outside the checkout; no network
#    once there) and named by FOLLOWUP_BOT_OCTOKIT_NODE_MODULES.
# 3. A PostgreSQL server for the whole run: initdb into a temporary directory (on the RAM
#    file system TEST_TMPDIR names, if any), loopback only, on a free port; as root it runs
#    as the postgres account (PostgreSQL refuses root). Its URL goes to the tests as
#    FOLLOWUP_BOT_TEST_POSTGRES and its binaries' folder as FOLLOWUP_BOT_PG_BINDIR (for
#    the tests that start servers of their own). It is stopped when COMMAND ends, however.
#
# Then COMMAND runs, and its exit status is this script's.
#
# Usage: tools/test_setup.sh COMMAND...   set up, run COMMAND, stop the server
#        tools/test_setup.sh --check      only say which packages are missing (exit 1 if any)
# Environment: PYTHON (python3), TEST_TMPDIR (the server's files; empty: TMPDIR), and a
# FOLLOWUP_BOT_TEST_POSTGRES, FOLLOWUP_BOT_PG_BINDIR or FOLLOWUP_BOT_OCTOKIT_NODE_MODULES
# already set is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

# command → the Debian package that installs it
REQUIRED=(
  "git git"
  "g++ g++"
  "nm binutils"
  "docker-registry docker-registry"
  "htpasswd apache2-utils"
  "chromium chromium"
  "chromedriver chromium-driver"
  "node nodejs"
  "npm npm"
)
PG_PACKAGE=postgresql
# Debian's server packages put initdb, pg_ctl and postgres here (pg_config --bindir needs
# postgresql-server-dev, which the tests do not).
PG_LIB=/usr/lib/postgresql

fail() {
  echo "tools/test_setup.sh: $*" >&2
  exit 1
}

# The folder holding the PostgreSQL server binaries, or nothing.
find_pg_bindir() {
  if [ -n "${FOLLOWUP_BOT_PG_BINDIR:-}" ]; then
    echo "$FOLLOWUP_BOT_PG_BINDIR"
    return
  fi
  local dir
  # The newest version first.
  for dir in $(printf '%s\n' "$PG_LIB"/*/bin | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return
    fi
  done
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
  fi
}

# The Debian packages whose commands are missing, one line each.
missing_packages() {
  local entry
  for entry in "${REQUIRED[@]}"; do
    command -v "${entry%% *}" >/dev/null || echo "${entry#* }"
  done
  local pg
  pg=$(find_pg_bindir)
  [ -n "$pg" ] && [ -x "$pg/initdb" ] || echo "$PG_PACKAGE"
}

check_python() {
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
    || fail "the suite needs Python 3.11 or newer as $PYTHON (make test PYTHON=python3.12)"
}

install_packages() {
  local missing
  missing=$(missing_packages | tr '\n' ' ')
  missing=${missing% }
  [ -z "$missing" ] && return
  local command="apt-get update && apt-get install -y --no-install-recommends $missing"
  if [ "$(id -u)" != 0 ]; then
    fail "the tests need these packages, missing here: $missing
Install them as root, then run make test again:
    $command"
  fi
  command -v apt-get >/dev/null \
    || fail "the tests need these packages (Debian's names), missing here: $missing"
  echo "tools/test_setup.sh: installing $missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086  # one word per package
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
  missing=$(missing_packages | tr '\n' ' ')
  missing=${missing% }
  [ -z "$missing" ] || fail "still missing after apt-get install: $missing"
}

install_octokit() {
  [ -n "${FOLLOWUP_BOT_OCTOKIT_NODE_MODULES:-}" ] && return
  local packages key cache tmp
  packages=$("$PYTHON" sandbox/data/regenerate.py --print-packages)
  key=$(printf '%s' "$packages" | sha256sum | cut -c1-16)
  cache=${XDG_CACHE_HOME:-${HOME:?}/.cache}/followup-bot/octokit-$key
  if [ ! -f "$cache/.complete" ]; then
    echo "tools/test_setup.sh: npm install $packages" >&2
    mkdir -p "${cache%/*}"
    tmp=$(mktemp -d "${cache%/*}/.octokit-XXXXXX")
    # Data only: no package's install scripts run.
    # shellcheck disable=SC2086  # one word per package
    npm install --prefix "$tmp" --no-audit --no-fund --no-save --ignore-scripts \
      --loglevel=error $packages >/dev/null || {
      rm -rf "$tmp"
      fail "npm install $packages failed"
    }
    echo "$packages" >"$tmp/.complete"
    rm -rf "$cache"
    # Another run may have put it there meanwhile: then that one is kept.
    mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"
  fi
  export FOLLOWUP_BOT_OCTOKIT_NODE_MODULES=$cache/node_modules
}

# From / as root: the postgres account may not enter the checkout (under /root, say), and
# PostgreSQL's tools complain of a working directory they cannot change to.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- env -C / "$@"; else "$@"; fi
}

pg_dir=
stop_postgres() {
  [ -n "$pg_dir" ] || return 0
  as_pg "$pg_bindir/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}

start_postgres() {
  if [ -n "${FOLLOWUP_BOT_TEST_POSTGRES:-}" ]; then
    return
  fi
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    fail "as root PostgreSQL runs as the postgres account, and there is none"
  fi
  pg_dir=$(TMPDIR=${TEST_TMPDIR:-${TMPDIR:-}} mktemp -d -t followup-bot-pg-XXXXXX)
  trap stop_postgres EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if [ "$(id -u)" = 0 ]; then chown postgres "$pg_dir"; fi
  as_pg "$pg_bindir/initdb" -D "$pg_dir/data" -U followup -A trust -E UTF8 --no-sync \
    --locale=C >/dev/null
  local port
  port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$pg_bindir/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -o \
    "-p $port -k $pg_dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off" \
    start >/dev/null || fail "PostgreSQL did not start: $(cat "$pg_dir/log")"
  export FOLLOWUP_BOT_TEST_POSTGRES="postgresql://followup@127.0.0.1:$port/postgres"
}

if [ "${1:-}" = --check ]; then
  missing=$(missing_packages | tr '\n' ' ')
  if [ -n "$missing" ]; then
    echo "missing: ${missing% }"
    exit 1
  fi
  echo "nothing missing"
  exit 0
fi
[ $# -gt 0 ] || fail "usage: tools/test_setup.sh COMMAND... | --check"

check_python
install_packages
pg_bindir=$(find_pg_bindir)
export FOLLOWUP_BOT_PG_BINDIR=$pg_bindir
install_octokit
start_postgres
# Not exec: the EXIT trap stops the server once COMMAND ends.
status=0
"$@" || status=$?
exit "$status"
