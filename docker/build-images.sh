#!/usr/bin/env bash
# Builds the images of the distributed stack (docker-compose.yml) on a machine that reaches no
# image registry, and makes sure docker compose is there:
#
#   1. docker/build-sandbox-image.sh: dockerd running (started with --bridge=none
#      --iptables=false when none answers), a Debian bookworm root debootstrapped and imported
#      as referee-sandbox-base:latest (python3 and every sandbox toolchain), cached;
#   2. docker compose: the v2 plugin if the CLI has it, else Debian's docker-compose (installed);
#   3. the host's CA bundle into docker/certs/ (pip in the builds), and the CPU torch wheel of
#      $REFEREE_TORCH_WHEEL_DIR (default /opt/wheels), when there is one, served on 127.0.0.1
#      for the worker's build (no 190 MB wheel in a layer);
#   4. docker build of docker/referee.Dockerfile's targets on that base, host networking:
#      referee-server (api and workers), referee-sandbox-node, referee-redis (tag $REFEREE_TAG).
#
# Layers are cached by Docker: a second run with unchanged sources takes seconds. Run as root.
# Options (environment): REFEREE_IMAGE_BASE (default referee-sandbox-base:latest, built here),
# REFEREE_TAG (default latest), REFEREE_TORCH_WHEEL_DIR, REFEREE_REBUILD=1 (no cache).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
tag="${REFEREE_TAG:-latest}"
wheels="${REFEREE_TORCH_WHEEL_DIR:-/opt/wheels}"
t0=$SECONDS
say() { echo "[build-images] $*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "build-images.sh: run as root (dockerd, debootstrap, apt)" >&2
  exit 1
fi

# -- 1. dockerd and the base ----------------------------------------------------------------------
start=$SECONDS
if [ -z "${REFEREE_IMAGE_BASE:-}" ]; then
  bash "$here/build-sandbox-image.sh"
  base=referee-sandbox-base:latest
else
  base="$REFEREE_IMAGE_BASE"
fi
docker_cli=docker
[ -x /usr/bin/docker ] && docker_cli=/usr/bin/docker
docker() { "$docker_cli" "$@"; }
say "dockerd and base image ($base): $((SECONDS - start)) s"

# -- 2. compose -----------------------------------------------------------------------------------
start=$SECONDS
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
fi
say "compose: $( (docker compose version 2>/dev/null || docker-compose version --short) | head -n1) \
($((SECONDS - start)) s)"

# -- 3. CA bundle and torch wheel -----------------------------------------------------------------
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$here/certs/ca-certificates.crt"
fi
torch_args=()
server_pid=""
wheel="$(find "$wheels" -maxdepth 1 -name 'torch-2.13.0+cpu-*.whl' 2>/dev/null | head -n1 || true)"
if [ -n "$wheel" ]; then
  serve_dir="$(mktemp -d)"
  ln -s "$wheel" "$serve_dir/"
  # A fixed port when it is free: the URL is a build argument, part of the layers' cache key.
  port="$(python3 -c 'import socket, sys
for port in (int(sys.argv[1]), 0):
    try:
        s = socket.socket(); s.bind(("127.0.0.1", port)); print(s.getsockname()[1]); break
    except OSError:
        pass' "${REFEREE_WHEEL_PORT:-48213}")"
  python3 -m http.server --bind 127.0.0.1 --directory "$serve_dir" "$port" >/dev/null 2>&1 &
  server_pid=$!
  trap 'kill "$server_pid" 2>/dev/null || true; rm -rf "$serve_dir"' EXIT
  for _ in $(seq 1 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" \
      2>/dev/null && break
    sleep 0.1
  done
  torch_args=(--build-arg "TORCH_FIND_LINKS=http://127.0.0.1:$port/" --build-arg "TORCH_INDEX_URL=")
  say "torch from $wheel"
fi

# -- 4. the images --------------------------------------------------------------------------------
cache=()
[ "${REFEREE_REBUILD:-0}" = 1 ] && cache=(--no-cache)
build() { # build TARGET IMAGE [ARGS...]
  local target="$1" image="$2" start=$SECONDS
  shift 2
  # Host networking: this daemon has no bridge. The classic builder: no buildx needed.
  if ! DOCKER_BUILDKIT=0 docker build -q --network host "${cache[@]}" \
    --build-arg BASE="$base" "$@" --target "$target" -t "$image:$tag" \
    -f "$here/referee.Dockerfile" "$root" >"/tmp/referee-build-$target.log" 2>&1; then
    echo "build-images.sh: building $image failed; tail of /tmp/referee-build-$target.log:" >&2
    tail -n 40 "/tmp/referee-build-$target.log" >&2
    exit 1
  fi
  say "$image:$tag: $((SECONDS - start)) s, $(docker image inspect -f '{{.Size}}' "$image:$tag" \
    | awk '{printf "%.2f GB", $1 / 1e9}')"
}
# The classic builder runs every stage before the target: each build gets the torch arguments.
build server referee-server "${torch_args[@]}"
build sandbox referee-sandbox-node "${torch_args[@]}"
build redis referee-redis "${torch_args[@]}"
say "total: $((SECONDS - t0)) s"
