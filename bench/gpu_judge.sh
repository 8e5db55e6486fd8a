#!/usr/bin/env bash
# The vllm judge backend against raw vLLM offline generation: one prepared run for a GPU machine
# that may have no internet. From the repository root (or anywhere):
#
#   bash bench/gpu_judge.sh                      # 1024 judgements, max_tokens 64, median of 3
#   bash bench/gpu_judge.sh --items 256 --reps 2 # options of `python -m bench.gpu_judge`
#
# Needs an NVIDIA GPU and a Python >= 3.11 ($PYTHON, default python3) where vLLM imports, or
# vLLM's wheels in $REFEREE_WHEELS (default .whl/ in the repository): vllm==0.33.0 with torch==2.14.0
# and every other requirement the machine lacks, installed offline into a private folder. Those
# wheels weigh gigabytes (torch and vLLM's CUDA kernels): they cannot travel inside a small
# working-tree copy, so on a machine without vLLM and without them this script says what is
# missing and exits 3. referee itself runs from this working tree (no install). The report goes
# to $OUT/gpu_judge.md when OUT is set, else bench/out/gpu_judge.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
wheels="${REFEREE_WHEELS:-$root/.whl}"
site="$(mktemp -d "${TMPDIR:-/tmp}/referee-gpu-judge.XXXXXX")"
trap 'rm -rf "$site"' EXIT

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "gpu_judge: $("$py" -V 2>&1) is too old: referee needs Python >= 3.11" >&2
  exit 2
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
else
  echo "gpu_judge: nvidia-smi not found" >&2
fi

# referee from this tree: a folder whose referee/<part> links to the repository's folders, as
# pyproject's package-dir maps them (referee is a namespace package: no __init__ needed).
mkdir -p "$site/src/referee"
for part in genrm verifiers sandbox services client trainer_adapter; do
  ln -s "$root/$part" "$site/src/referee/$part"
done
export PYTHONPATH="$site/src:$root${PYTHONPATH:+:$PYTHONPATH}"

if ! "$py" -c 'import vllm' >/dev/null 2>&1; then
  if compgen -G "$wheels/vllm-*.whl" >/dev/null; then
    echo "gpu_judge: installing the wheels in $wheels (offline)"
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target "$site/wheels" "$wheels"/*.whl
    export PYTHONPATH="$site/wheels:$PYTHONPATH"
  else
    echo "gpu_judge: vLLM is not installed and $wheels holds no vllm-*.whl" >&2
  fi
fi

# Says exactly what is missing (vLLM, the torch it pins, a CUDA device) and exits 3 if anything is.
"$py" -m bench.gpu_judge --check
export PYTHONUNBUFFERED=1
exec "$py" -m bench.gpu_judge "$@"
