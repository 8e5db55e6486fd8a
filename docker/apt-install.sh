#!/bin/sh
# apt-install.sh ROLE: install the Debian packages an image of ROLE needs and its base lacks.
#
#   base     python3 with venv/ensurepip (a Debian python3; the python:3.11-slim images have it)
#   sandbox  bubblewrap, setpriv, and the toolchains of the sandbox's languages
#   redis    redis-server
#   build    a C compiler and the Python headers, for the wheels PyPI ships only as sources
#
# Each package is installed only when what it provides is missing, so a base image that has
# everything (a root built by docker/build-sandbox-image.sh, say) needs no package index at all.
set -eu
need=""
want() { need="$need $*"; }
case "${1:?usage: apt-install.sh base|sandbox|build|redis}" in
  base)
    python3 -c 'import ensurepip, venv' 2>/dev/null || want python3-venv
    ;;
  sandbox)
    command -v bwrap >/dev/null 2>&1 || want bubblewrap
    command -v setpriv >/dev/null 2>&1 || want util-linux
    command -v gcc >/dev/null 2>&1 || want gcc libc6-dev
    command -v g++ >/dev/null 2>&1 || want g++
    command -v node >/dev/null 2>&1 || want nodejs
    command -v javac >/dev/null 2>&1 || want default-jdk-headless
    command -v go >/dev/null 2>&1 || want golang-go
    command -v rustc >/dev/null 2>&1 || want rustc
    ;;
  build)
    command -v gcc >/dev/null 2>&1 || want gcc libc6-dev
    python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null \
      || want python3-dev
    ;;
  redis)
    command -v redis-server >/dev/null 2>&1 || want redis-server
    ;;
  *)
    echo "apt-install.sh: unknown role $1" >&2
    exit 2
    ;;
esac
if [ -n "$need" ]; then
  # slim images drop man pages; the JDK's postinst still links into man1
  mkdir -p /usr/share/man/man1
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
  apt-get clean
  rm -rf /var/lib/apt/lists/*
fi
echo "apt-install.sh $1: installed:${need:- nothing}"
