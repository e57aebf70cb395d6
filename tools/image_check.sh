#!/usr/bin/env bash
# The container image, built and run (`make image`; the README's "The container image").
#
# Builds deploy/Dockerfile with Debian's buildah on a Debian base made by debootstrap, then
# runs it with podman (SQLite, then PostgreSQL) and checks what an operator relies on: the
# uid, /healthz, /readyz, a signed webhook answered 202 and handled, the HEALTHCHECK, no test
# or stand-in package in the runtime, the image's size. The build and run commands are read
# from the README's marked block (image-check:begin/end), so the README shows what ran.
#
# Nothing machine-specific is written here: the Debian mirror comes from apt's configuration,
# the extra CA certificates (the host's trust store minus Debian's bundle) from the system
# trust store, both at run time. Cached between runs, outside the checkout:
#   $IMAGE_CHECK_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/followup-bot-image)
#     base-<key>.tar   the debootstrap root file system, keyed by suite, packages, certificates
#     storage/         podman/buildah vfs storage: the base and the last image built, no more
# The build is skipped when the hash of the image's inputs (the Dockerfile, the files it
# copies, the base) names an image already in the storage.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${IMAGE_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/followup-bot-image}
# The image's Python is the one Debian ships in the base's release: bookworm, Python 3.11.
SUITE=${IMAGE_SUITE:-bookworm}
# What the official python image brings that the Dockerfile relies on: python, pip (a venv
# over /usr/local, so `pip` and `python` are first on PATH as there), certificates.
BASE_PACKAGES=python3,python3-venv,ca-certificates
README_BEGIN='<!-- image-check:begin -->'
README_END='<!-- image-check:end -->'
# The runtime must hold none of these (the dev extra, the GitHub/Buildkite stand-ins).
FORBIDDEN_PACKAGES='pytest|pytest-aiohttp|pytest-xdist|pytest-cov|coverage|mypy|ruff|hypothesis|followup-bot-sandbox|sandbox'

log() { printf 'image-check: %s\n' "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
need() { command -v "$1" >/dev/null || fail "$1 is missing (apt-get install $2)"; }

# The first http(s) URI of an apt source that carries $SUITE: deb822 files, then one-line ones.
debian_mirror() {
  local files=(/etc/apt/sources.list.d/*.sources) f
  for f in "${files[@]}"; do
    [ -r "$f" ] || continue
    awk -v suite="$SUITE" '
      /^[[:space:]]*$/ { if (uri != "" && has) { print uri; exit } uri=""; has=0; next }
      /^URIs:/ { uri=$2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) has=1 }
      END { if (uri != "" && has) print uri }' "$f" | head -n1
  done | grep -m1 . && return 0
  cat "$(apt-config shell X Dir::Etc::sourcelist | sed "s/X='\(.*\)'/\1/")" 2>/dev/null \
    /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v suite="$SUITE" '$1 == "deb" && $0 ~ " " suite " " { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' |
    grep -m1 . || fail "no apt source for $SUITE in apt's configuration"
}

# The host's trust store (the bundle OpenSSL uses by default), as a file name.
host_bundle() {
  python3 -c 'import ssl; p = ssl.get_default_verify_paths(); print(p.cafile or p.openssl_cafile)'
}

# The host's extra CA certificates (a proxy's, say): those of its trust store that the
# base's own bundle (Debian's) lacks, one PEM file each into $2. The build's pip and apt
# reach the package index and the mirror only with them.
extra_certificates() {
  python3 - "$(host_bundle)" "$1" "$2" <<'PY'
import re, sys
from pathlib import Path
PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
def certs(path):
    return {"".join(m.split()) : m for m in PEM.findall(Path(path).read_text())}
host, base = certs(sys.argv[1]), certs(sys.argv[2])
for n, key in enumerate(sorted(set(host) - set(base))):
    Path(sys.argv[3], f"host-extra-{n}.crt").write_text(host[key] + "\n")
    print(f"host-extra-{n}.crt")
PY
}

base_key() {
  { echo "$SUITE $BASE_PACKAGES"; debian_mirror; cat "$(host_bundle)"; } | sha256sum | cut -c1-16
}

make_base() {
  local key=$1 work mirror
  local tar="$CACHE/base-$key.tar"
  [ -s "$tar" ] && { log "base $SUITE cached ($tar)"; return 0; }
  need debootstrap debootstrap
  mirror=$(debian_mirror)
  work=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
  log "debootstrap $SUITE (minbase + $BASE_PACKAGES) from apt's mirror"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$work/root" "$mirror" \
    >"$work/log" 2>&1 || { tail -n 20 "$work/log" >&2; rm -rf "$work"; fail "debootstrap"; }
  local extra
  extra=$(extra_certificates "$work/root/etc/ssl/certs/ca-certificates.crt" \
    "$work/root/usr/local/share/ca-certificates" | wc -l)
  log "$extra extra CA certificate(s) from the host's trust store"
  chroot "$work/root" update-ca-certificates >/dev/null 2>&1
  chroot "$work/root" python3 -m venv /usr/local
  chroot "$work/root" sh -c 'ln -sf python3 /usr/local/bin/python'
  # pip in the venv trusts the system store (pip's own bundle lacks the extra ones).
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$work/root/etc/pip.conf"
  rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
  tar -C "$work/root" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$work"
  # Older bases are of no further use.
  find "$CACHE" -maxdepth 1 -name 'base-*.tar' ! -name "base-$key.tar" -delete
}


# The README's marked block: its commands, `\` continuations joined, one a line.
readme_commands() {
  awk -v b="$README_BEGIN" -v e="$README_END" '
    index($0, b) { on=1; next } index($0, e) { on=0 }
    on && !/^```/ && !/^[[:space:]]*#/ && NF {
      line = line $0
      if (sub(/\\[[:space:]]*$/, " ", line)) next
      print line; line="" }' "$ROOT/README.md"
}

# The hash of everything the image is made of: the Dockerfile, the context it copies (as
# the .dockerignore lets in: the lock, the packaging metadata, bot/, handlers/), the base,
# and the build command.
inputs_hash() {
  { cat "$ROOT/deploy/Dockerfile" "$ROOT/deploy/Dockerfile.dockerignore" \
      "$ROOT/requirements.lock" "$ROOT/pyproject.toml" "$ROOT/README.md"
    (cd "$ROOT" && find bot handlers -type f ! -path '*/__pycache__/*' ! -name '*.pyc' |
      LC_ALL=C sort | xargs sha256sum)
    echo "$1"; echo "$BUILD_CMD"; } | sha256sum | cut -c1-16
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

http() { python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error
url = sys.argv[1]
try:
    with urllib.request.urlopen(url, timeout=5) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print(0)
PY
}

# A signed GitHub ping (X-Hub-Signature-256 over the body); prints the status code.
signed_ping() { python3 - "$1" "$2" <<'PY'
import hashlib, hmac, json, sys, urllib.request, urllib.error, uuid
url, secret = sys.argv[1], sys.argv[2]
body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
req = urllib.request.Request(url, data=body, method="POST", headers={
    "Content-Type": "application/json", "X-GitHub-Event": "ping",
    "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": sig})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
PY
}

# A GitHub stand-in on loopback, so that nothing the image does reaches out: which
# installation covers a repository, asked with the App's JWT; anything else is a 404.
start_github() {
  GITHUB_PORT=$(free_port)
  python3 - "$GITHUB_PORT" "$WORK/github.log" <<'PY' &
import json, re, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, log = int(sys.argv[1]), sys.argv[2]
class Handler(BaseHTTPRequestHandler):
    def answer(self):
        jwt = self.headers.get("Authorization", "").lower().startswith("bearer ")
        found = self.command == "GET" and re.fullmatch(r"/repos/[^/]+/[^/]+/installation", self.path)
        with open(log, "a") as out:
            print(self.command, self.path, "jwt" if jwt else "no-jwt", flush=True, file=out)
        body = json.dumps({"id": 1} if found and jwt else {"message": "Not Found"}).encode()
        self.send_response(200 if found and jwt else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = answer
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
  GITHUB_PID=$!
}

wait_for() {  # URL: until it answers 200, 90 s at most
  local i
  for i in $(seq 1 180); do
    [ "$(http "$1")" = 200 ] && return 0
    podman ps --filter "name=^$NAME\$" --format '{{.Names}}' | grep -q . || return 1
    sleep 0.5
  done
  return 1
}

# One run of the image, from the README's run command, against $FOLLOWUP_BOT_DATABASE.
check_run() {
  local label=$1 database=$2 port base
  port=$(free_port)
  NAME=followup-bot-check-$label-$$
  ENV_FILE=$WORK/env-$label
  SECRET=check-secret-$RANDOM$RANDOM
  { echo "FOLLOWUP_BOT_WEBHOOK_SECRET=$SECRET"
    echo "FOLLOWUP_BOT_APP_ID=1"
    echo "FOLLOWUP_BOT_PRIVATE_KEY=$(awk '{printf "%s\\n", $0}' "$WORK/key.pem")"
    echo "FOLLOWUP_BOT_PORT=$port"
    echo "FOLLOWUP_BOT_REPOSITORIES=followup-bot/image-check"
    echo "FOLLOWUP_BOT_GITHUB_API_URL=http://127.0.0.1:$GITHUB_PORT"
    [ -n "$database" ] && echo "FOLLOWUP_BOT_DATABASE=$database"; true; } >"$ENV_FILE"
  export NAME ENV_FILE IMAGE
  if [ -n "$database" ]; then
    podman run --rm --ulimit nofile="$NOFILE" --ulimit nproc="$NPROC" --network host --env-file "$ENV_FILE" "$IMAGE" followup-bot migrate \
      >"$WORK/migrate-$label.log" 2>&1 || { cat "$WORK/migrate-$label.log" >&2; fail "$label: migrate"; }
  fi
  log "$label: $RUN_CMD"
  # (podman 4.3 logs that it cannot reach systemd for the health check's timer: harmless.)
  eval "$RUN_CMD" >/dev/null 2>"$WORK/run-$label.log" || { cat "$WORK/run-$label.log" >&2; fail "$label: run"; }
  base=http://127.0.0.1:$port
  wait_for "$base/healthz" || { podman logs "$NAME" >&2 || true; fail "$label: /healthz never answered 200"; }
  local uid; uid=$(podman exec "$NAME" id -u)
  [ "$uid" = 10001 ] || fail "$label: runs as uid $uid, not 10001"
  wait_for "$base/readyz" || { podman logs "$NAME" >&2 || true; fail "$label: /readyz never answered 200"; }
  local code; code=$(signed_ping "$base/webhooks/github" "$SECRET")
  [ "$code" = 202 ] || fail "$label: a signed webhook got $code, not 202"
  [ "$(signed_ping "$base/webhooks/github" wrong-secret)" = 401 ] ||
    fail "$label: a badly signed webhook was not refused with 401"
  local i done=
  for i in $(seq 1 40); do
    if podman exec "$NAME" followup-bot deliveries list --json 2>/dev/null |
      python3 -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else d.get("deliveries",[]); sys.exit(0 if any(x.get("event")=="ping" and x.get("status")=="done" for x in d) else 1)'; then
      done=1; break
    fi
    sleep 0.5
  done
  [ -n "$done" ] || { podman exec "$NAME" followup-bot deliveries list >&2 || true; fail "$label: the webhook was not handled (no ping delivery done in the inbox)"; }
  podman healthcheck run "$NAME" >/dev/null 2>&1 || fail "$label: the image's HEALTHCHECK failed"
  log "$label: uid 10001, /healthz 200, /readyz 200, signed webhook 202 and handled"
  podman rm -f "$NAME" >/dev/null 2>&1
}

start_postgres() {
  local bindir pgport
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [ -x "$bindir/initdb" ] || { log "no PostgreSQL server (apt-get install postgresql): skipping that run"; return 1; }
  pgport=$(free_port)
  mkdir -p "$WORK/pg"
  local as=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$WORK/pg"; chmod 755 "$WORK"; as=(runuser -u postgres -- env -C /); fi
  "${as[@]}" "$bindir/initdb" -D "$WORK/pg/data" -U followup -A trust -E UTF8 --no-sync >/dev/null
  "${as[@]}" "$bindir/pg_ctl" -D "$WORK/pg/data" -w -l "$WORK/pg/log" \
    -o "-p $pgport -k $WORK/pg -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  PG_STOP=("${as[@]}" "$bindir/pg_ctl" -D "$WORK/pg/data" -m fast -w stop)
  "${as[@]}" "$bindir/createdb" -h 127.0.0.1 -p "$pgport" -U followup followup_bot
  PG_URL=postgresql://followup@127.0.0.1:$pgport/followup_bot
}

cleanup() {
  local rc=$?
  [ -n "${NAME:-}" ] && podman rm -f "$NAME" >/dev/null 2>&1 || true
  [ -n "${GITHUB_PID:-}" ] && kill "$GITHUB_PID" 2>/dev/null || true
  [ -n "${PG_STOP:-}" ] && "${PG_STOP[@]}" >/dev/null 2>&1 || true
  # A failed build leaves its working container behind.
  buildah rm --all >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit $rc
}

main() {
  need buildah buildah; need podman podman; need runc runc
  mkdir -p "$CACHE/storage"
  WORK=$(mktemp -d)
  trap cleanup EXIT
  # A storage of its own (vfs: no overlay or fuse needed), so pruning it touches nothing else.
  printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' \
    "$CACHE/storage/root" "$CACHE/storage/run" >"$CACHE/storage.conf"
  export CONTAINERS_STORAGE_CONF=$CACHE/storage.conf
  # runc (crun cannot set limits here) and cgroupfs; containers get the host's own limits
  # (podman's defaults ask for more than a container may have on some hosts).
  NOFILE=$(ulimit -Sn):$(ulimit -Hn) NPROC=$(n=$(ulimit -Hu); [ "$n" = unlimited ] || [ "$n" -gt 4096 ] && n=4096; echo "$n:$n")
  export NOFILE NPROC
  printf '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' \
    >"$CACHE/containers.conf"
  export CONTAINERS_CONF=$CACHE/containers.conf
  mapfile -t COMMANDS < <(readme_commands)
  [ "${#COMMANDS[@]}" = 2 ] || fail "README.md: expected the build and the run command between $README_BEGIN and $README_END"
  BUILD_CMD=${COMMANDS[0]} RUN_CMD=${COMMANDS[1]}

  local key; key=$(base_key)
  make_base "$key"
  BASE=localhost/followup-bot-base:$key
  podman image exists "$BASE" || podman import --quiet "$CACHE/base-$key.tar" "$BASE" >/dev/null
  IMAGE=localhost/followup-bot:check-$(inputs_hash "$key")
  export BASE IMAGE
  if podman image exists "$IMAGE"; then
    log "image inputs unchanged: $IMAGE already built"
  else
    log "$BUILD_CMD"
    local t0=$SECONDS
    (cd "$ROOT" && eval "$BUILD_CMD") >"$WORK/build.log" 2>&1 ||
      { tail -n 40 "$WORK/build.log" >&2; fail "build"; }
    log "built in $((SECONDS - t0)) s"
  fi
  # Only the base and this image stay: older check images and dangling layers go.
  podman images --format '{{.Repository}}:{{.Tag}}' |
    grep -E '^localhost/followup-bot(-base)?:' | grep -vxF -e "$IMAGE" -e "$BASE" |
    xargs -r podman rmi -f >/dev/null 2>&1 || true
  podman image prune -f >/dev/null 2>&1 || true

  podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" | grep -q /healthz ||
    fail "the image has no HEALTHCHECK probing /healthz (was it built with --format docker?)"
  local user; user=$(podman image inspect --format '{{.Config.User}}' "$IMAGE")
  [ "${user%%:*}" = 10001 ] || fail "the image's USER is $user"
  # One container for both (each run copies the image's files on vfs).
  local pkgs
  pkgs=$(podman run --rm --ulimit nofile="$NOFILE" --ulimit nproc="$NPROC" --network none "$IMAGE" \
    sh -c 'pip list --format freeze; for m in sandbox tests pytest; do python -c "import $m" 2>/dev/null && echo "importable: $m"; done; true' \
    2>/dev/null) || fail "the image does not run"
  if grep -iE "^($FORBIDDEN_PACKAGES)==|^importable:" <<<"$pkgs"; then fail "test or stand-in packages in the runtime (above)"; fi
  grep -qi '^followup-bot==' <<<"$pkgs" || fail "followup-bot is not installed in the image"
  local size; size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
  log "image $IMAGE: $((size / 1000000)) MB, USER $user, HEALTHCHECK present, runtime packages clean"

  openssl genrsa -out "$WORK/key.pem" 2048 2>/dev/null || fail "openssl genrsa"
  start_github
  check_run sqlite ""
  if start_postgres; then check_run postgresql "$PG_URL"; fi
  log "ok"
}

main "$@"
