#!/usr/bin/env bash
# Builds referee-sandbox:latest, the image of the sandbox's docker backend, with no registry:
#
#   1. start dockerd (--bridge=none --iptables=false, logging to $REFEREE_DOCKERD_LOG) unless a
#      daemon already answers;
#   2. debootstrap a minimal Debian root (bookworm, --variant=minbase) with the toolchains,
#      cached as a tarball under $REFEREE_CACHE_DIR (default /var/cache/referee);
#   3. `docker import` it as the base image referee-sandbox-base:<key> (also tagged :latest);
#   4. `docker build` docker/sandbox.Dockerfile on top of it (--build-arg BASE=...).
#
# Idempotent: each step is skipped when its output exists (the cache key hashes the suite, the
# package list and this script's debootstrap options; the final image carries a label with the
# hash of the Dockerfile and the base). Run as root. Options (environment):
#   REFEREE_SANDBOX_TOOLCHAINS  Debian packages to include (default: every sandbox language)
#   REFEREE_SANDBOX_IMAGE       the tag to build (default referee-sandbox:latest)
#   REFEREE_SANDBOX_BASE        the base image's name (default referee-sandbox-base)
#   REFEREE_DEBIAN_MIRROR       mirror URL (default: the Debian URI of apt's sources on this host)
#   REFEREE_INSTALL_DEPS=1      apt-get install docker.io/debootstrap when missing (default 1)
#   REFEREE_REBUILD=1           ignore the cache and existing images
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache_dir="${REFEREE_CACHE_DIR:-/var/cache/referee}"
image="${REFEREE_SANDBOX_IMAGE:-referee-sandbox:latest}"
suite="${REFEREE_DEBIAN_SUITE:-bookworm}"
dockerd_log="${REFEREE_DOCKERD_LOG:-/var/log/referee-dockerd.log}"
# Measured on this machine kind (bookworm, fresh): python3 + gcc + g++ alone is a 0.4 GB root in
# 53 s of debootstrap; adding nodejs, default-jdk-headless, golang-go and rustc makes it 2.1 GB in
# 70 s (+6 s tar, +15 s import): cheap enough to have every language in the image.
toolchains="${REFEREE_SANDBOX_TOOLCHAINS:-python3 python3-pytest python3-numpy gcc g++ libc6-dev nodejs default-jdk-headless golang-go rustc}"
rebuild="${REFEREE_REBUILD:-0}"
export DEBIAN_FRONTEND=noninteractive

t0=$SECONDS
step_start=$SECONDS
step() { # step NAME: print the time the previous step took, start timing the next
  local now=$SECONDS
  [ -n "${current_step:-}" ] && echo "[build-sandbox-image] ${current_step}: $((now - step_start)) s"
  current_step="$1"
  step_start=$now
}

if [ "$(id -u)" -ne 0 ]; then
  echo "build-sandbox-image.sh: run as root (dockerd, debootstrap)" >&2
  exit 1
fi

# -- 0. tools -------------------------------------------------------------------------------------
step "install docker.io/debootstrap"
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "${REFEREE_INSTALL_DEPS:-1}" != 1 ]; then
    echo "build-sandbox-image.sh: missing ${need[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The docker.io CLI matches its daemon; a newer CLI elsewhere on PATH may want buildx.
docker_cli=docker
[ -x /usr/bin/docker ] && docker_cli=/usr/bin/docker
docker() { "$docker_cli" "$@"; }

# -- 1. the daemon --------------------------------------------------------------------------------
step "start dockerd"
if ! docker info >/dev/null 2>&1; then
  mkdir -p "$(dirname "$dockerd_log")"
  # No bridge and no iptables: containers get network none (or host); no rules are touched.
  # Its own session, so that the end (or a Ctrl-C) of the caller's process group spares it.
  setsid nohup dockerd --bridge=none --iptables=false --ip6tables=false \
    >>"$dockerd_log" 2>&1 </dev/null &
  echo "[build-sandbox-image] dockerd started, pid $! (log: $dockerd_log)"
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    echo "build-sandbox-image.sh: dockerd did not come up; tail of $dockerd_log:" >&2
    tail -n 30 "$dockerd_log" >&2
    exit 1
  fi
fi

# -- 2. the Debian root ---------------------------------------------------------------------------
step "debootstrap"
mirror="${REFEREE_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  # The first Debian (not -security) URI of apt's sources, deb822 or one-line format.
  mirror="$(grep -hs -E '^\s*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | tr ' ' '\n' | grep -E '^https?://' | grep -v -- '-security' | grep -E '/debian/?$' \
    | head -n1 || true)"
fi
if [ -z "$mirror" ]; then
  mirror="$(grep -hs -E '^\s*deb\s' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) {print $i; break}}' \
    | grep -v -- '-security' | grep -E '/debian/?$' | head -n1 || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"
include="$(echo "$toolchains" | tr -s ' ' ',' | sed 's/^,//; s/,$//')"
deboot_opts="--variant=minbase --include=$include $suite"
key="$(printf '%s\n' "$deboot_opts" "v1" | sha256sum | cut -c1-12)"
tarball="$cache_dir/sandbox-rootfs-$suite-$key.tar"
base="${REFEREE_SANDBOX_BASE:-referee-sandbox-base}:$suite-$key"
mkdir -p "$cache_dir"
if [ "$rebuild" != 1 ] && docker image inspect "$base" >/dev/null 2>&1; then
  echo "[build-sandbox-image] base image exists ($base): no root needed"
elif [ "$rebuild" = 1 ] || [ ! -s "$tarball" ]; then
  echo "[build-sandbox-image] debootstrap $deboot_opts from $mirror"
  root="$(mktemp -d "$cache_dir/rootfs.XXXXXX")"
  trap 'rm -rf "$root"' EXIT
  # --cache-dir keeps the downloaded .debs, so a rebuild with other packages downloads less.
  mkdir -p "$cache_dir/debs"
  debootstrap --variant=minbase --include="$include" --cache-dir="$cache_dir/debs" \
    "$suite" "$root" "$mirror" >"$cache_dir/debootstrap.log" 2>&1 || {
    echo "build-sandbox-image.sh: debootstrap failed; tail of $cache_dir/debootstrap.log:" >&2
    tail -n 30 "$cache_dir/debootstrap.log" >&2
    exit 1
  }
  # Trim what a sandbox never needs before packing (apt lists, docs, caches).
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/info
  tar --numeric-owner --xattrs -C "$root" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  # Older roots (another package list) are 0.4-2 GB each: keep only this one.
  find "$cache_dir" -maxdepth 1 -name 'sandbox-rootfs-*.tar' ! -path "$tarball" -delete
  rm -rf "$root"
  trap - EXIT
else
  echo "[build-sandbox-image] cached root: $tarball"
fi

# -- 3. the base image ----------------------------------------------------------------------------
step "docker import"
if [ "$rebuild" = 1 ] || ! docker image inspect "$base" >/dev/null 2>&1; then
  docker import "$tarball" "$base" >/dev/null
  echo "[build-sandbox-image] imported $base"
else
  echo "[build-sandbox-image] base image exists: $base"
fi
# The latest base under a fixed name too: docker/build-images.sh builds the stack's images on it.
docker tag "$base" "${base%%:*}:latest"

# -- 4. the sandbox image -------------------------------------------------------------------------
step "docker build"
recipe="$( (cat "$here/sandbox.Dockerfile"; echo "$base") | sha256sum | cut -c1-12)"
have="$(docker image inspect -f '{{ index .Config.Labels "org.referee.recipe" }}' "$image" 2>/dev/null || true)"
if [ "$rebuild" = 1 ] || [ "$have" != "$recipe" ]; then
  # Host networking: there is no bridge. (A RUN step that pip-installs needs the host CA bundle:
  # copy /etc/ssl/certs/ca-certificates.crt into docker/ and COPY it in; none does today.)
  DOCKER_BUILDKIT=0 docker build -q --network host \
    --build-arg BASE="$base" --label org.referee.recipe="$recipe" \
    -t "$image" -f "$here/sandbox.Dockerfile" "$here" >/dev/null
  echo "[build-sandbox-image] built $image (recipe $recipe)"
else
  echo "[build-sandbox-image] image is up to date: $image (recipe $recipe)"
fi
step ""
echo "[build-sandbox-image] total: $((SECONDS - t0)) s; tools in $image: $(docker run --rm \
  --network none "$image" cat /etc/referee-sandbox-tools | tr '\n' ' ')"
