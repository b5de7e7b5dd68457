#!/usr/bin/env bash
# The GPU pack's one command, run from the bundle that `pack.py build` wrote:
#   bash BUNDLE/run.sh OUT          (OUT gets results.json, rewritten after every part)
# Unpacks the code into a work folder (PACK_WORK, default a new temporary folder), installs
# the bundle's wheels there, and hands over to `pack.py run`, which unpacks the data beside
# the code (WORK/repo, WORK/shared/data: the layout of a checkout) and runs the parts.
#   PYTHON  interpreter (default python3: on the GPU image, the one with torch)
set -euo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
python=${PYTHON:-python3}
work=${PACK_WORK:-$(mktemp -d)}
mkdir -p "$work/repo" "$work/site"
tar -xzf "$bundle/code.tar.gz" -C "$work/repo"
if compgen -G "$bundle/wheels/*.whl" >/dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$work/site" "$bundle"/wheels/*.whl
fi
export PYTHONPATH="$work/repo/src:$work/site${PYTHONPATH:+:$PYTHONPATH}"
cd "$work/repo"
exec "$python" benchmarks/gpu_pack/pack.py run --bundle "$bundle" --work "$work" --out "$out" "${@:2}"
