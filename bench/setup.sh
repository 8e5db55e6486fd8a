#!/usr/bin/env bash
# bench/setup.sh: what the first `make test` on a fresh machine installs and builds
# (tests/prepare.sh), and how long each part takes, measured without touching this machine's own
# packages, images or caches. Run as root, with dockerd running:
#
#   bash bench/setup.sh                 # writes bench/out/setup.md
#   bash bench/setup.sh docs/bench      # the report docs/development.md cites
#
#   1. a fresh Debian root (debootstrap --variant=minbase, this host's suite, not timed) imported
#      as a scratch image; in a container of it (host network, the checkout mounted read-only):
#      `bash tests/prepare.sh packages` (the programs the tests need), then the two packages
#      prepare.sh's docker step adds on a machine without them (docker.io, debootstrap), timed;
#   2. the docker backend's image built from nothing by docker/build-sandbox-image.sh, with a
#      scratch cache folder, base name and tag (so the .debs are downloaded again), timed by step.
#
# The scratch images and folders are removed at the end. Network: the Debian mirror only.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/bench/out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "bench/setup.sh: run as root (debootstrap, docker)" >&2; exit 1; }
docker_cli=docker
[ -x /usr/bin/docker ] && docker_cli=/usr/bin/docker
docker() { "$docker_cli" "$@"; }
docker info >/dev/null 2>&1 || { echo "bench/setup.sh: no docker daemon answers" >&2; exit 1; }

scratch="$(mktemp -d /var/tmp/referee-bench-setup.XXXXXX)"
tag="referee-bench-setup-$$"
cleanup() {
  docker rmi -f "$tag-fresh:latest" "$tag-sandbox:latest" >/dev/null 2>&1 || true
  docker images --format '{{.Repository}}:{{.Tag}}' | grep "^$tag-base:" \
    | xargs -r "$docker_cli" rmi -f >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
say() { echo "[bench/setup] $*"; }
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
mirror="$(grep -hs -E '^\s*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n' \
  | grep -E '^https?://' | grep -v -- '-security' | grep -E '/debian/?$' | head -n1 || true)"
mirror="${mirror:-http://deb.debian.org/debian}"

say "a fresh $suite root (not timed)"
debootstrap --variant=minbase "$suite" "$scratch/root" "$mirror" >"$scratch/debootstrap.log" 2>&1 \
  || { tail -n 20 "$scratch/debootstrap.log" >&2; exit 1; }
tar -C "$scratch/root" -c . | docker import - "$tag-fresh:latest" >/dev/null
rm -rf "$scratch/root"

say "tests/prepare.sh packages in a container of it"
start=$SECONDS
docker run --rm --network host -v "$here:/src:ro" -w /src "$tag-fresh:latest" bash -c '
  set -e
  size() { dpkg-query -W -f "\${Installed-Size}\n" | awk "{s += \$1} END {print int(s / 1024)}"; }
  before=$(size)
  bash tests/prepare.sh packages
  start=$SECONDS
  apt-get install -y -qq --no-install-recommends docker.io debootstrap >/dev/null 2>&1
  echo "[bench/setup] docker.io debootstrap: $((SECONDS - start)) s"
  echo "[bench/setup] installed: $(( $(size) - before )) MiB"
' | tee "$scratch/packages.log"
packages_s=$((SECONDS - start))
programs_s="$(sed -n 's/^\[prepare\] packages installed in \([0-9]*\) s$/\1/p' "$scratch/packages.log")"
docker_pkgs_s="$(sed -n 's/^\[bench\/setup\] docker.io debootstrap: \([0-9]*\) s$/\1/p' "$scratch/packages.log")"
installed_mib="$(sed -n 's/^\[bench\/setup\] installed: \([0-9]*\) MiB$/\1/p' "$scratch/packages.log")"
installed="$(sed -n 's/^\[prepare\] installing \(.*\) (for .*$/\1/p' "$scratch/packages.log")"

say "the sandbox image from nothing"
start=$SECONDS
REFEREE_CACHE_DIR="$scratch/cache" REFEREE_SANDBOX_BASE="$tag-base" \
  REFEREE_SANDBOX_IMAGE="$tag-sandbox:latest" REFEREE_REBUILD=1 \
  bash "$here/docker/build-sandbox-image.sh" | tee "$scratch/image.log"
image_s=$((SECONDS - start))
step() { sed -n "s/^\[build-sandbox-image\] $1: \([0-9]*\) s$/\1/p" "$scratch/image.log"; }
size="$(docker image inspect -f '{{.Size}}' "$tag-sandbox:latest" | awk '{printf "%.1f", $1 / 1e9}')"

say "a later make test: tests/prepare.sh on this (prepared) machine"
start=$(date +%s%N)
bash "$here/tests/prepare.sh" >"$scratch/again.log" 2>&1 || { cat "$scratch/again.log" >&2; exit 1; }
again_ms=$((($(date +%s%N) - start) / 1000000))
again_s="$((again_ms / 1000)).$(((again_ms % 1000) / 100))"

cat >"$out/setup.md" <<EOF
# What the first \`make test\` prepares on a fresh machine

\`bash bench/setup.sh\` on $(nproc) CPUs, $(. /etc/os-release && echo "$PRETTY_NAME"), mirror $mirror; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg).

| step (tests/prepare.sh) | what | seconds |
|---|---|---:|
| packages | $installed | $programs_s |
| docker step, packages | docker.io debootstrap | $docker_pkgs_s |
| docker step, image: debootstrap | a Debian root with every sandbox toolchain | $(step debootstrap) |
| docker step, image: import | the root as the base image | $(step "docker import") |
| docker step, image: build | referee-sandbox on it ($size GB) | $(step "docker build") |
| **total** | | **$((programs_s + docker_pkgs_s + image_s))** |

The packages take $installed_mib MiB installed on the fresh root (container, host network: $packages_s s with its start). On a machine where all of it is there (this one), \`bash tests/prepare.sh\`, as a later \`make test\` runs it, took $again_s s.
EOF
cat "$out/setup.md"
