#!/usr/bin/env bash
# The lower-bound set-up: the lowest versions pyproject.toml admits (constraints-min.txt), in a venv of their own
# (.venv-min), then the tests not marked slow. `make test-min` runs it, and CI after `make test`.
# Usage: bash tools/test_min.sh [python3.11]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3.11}
VENV=.venv-min
STAMP=$VENV/.installed-$(cat constraints-min.txt pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$STAMP" ]; then
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q torch==2.13.0   # first: a looser spec pulls a multi-GB CUDA build
    "$VENV/bin/python" -m pip install -q -c constraints-min.txt -e '.[dev]'
    "$VENV/bin/python" -m pip check
    touch "$STAMP"
fi
# the versions this run really has, for the record
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
names = ["torch", "torchrl", "tensordict", "gymnasium", "mujoco", "dm_control", "av", "numpy", "pillow", "pygame",
         "matplotlib", "nbclient", "ipykernel", "safetensors", "pyyaml", "tqdm", "nbformat"]
print("lower-bound set: " + ", ".join(f"{n}=={version(n)}" for n in names))
PY
export MUJOCO_GL=${MUJOCO_GL:-egl}
# both cores, as `make test` (Ray's tests and each document's blocks share a worker: --dist loadgroup), in file order
"$VENV/bin/python" -m pytest -q -m "not slow" -p no:cacheprovider -p no:randomly -n "${JOBS:-2}" --dist loadgroup
