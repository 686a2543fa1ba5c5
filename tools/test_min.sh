#!/usr/bin/env bash
# The lower-bound set-up: the lowest versions pyproject.toml admits (constraints-min.txt), in a venv of their own
# (.venv-min), then the tests not marked slow. `make test-min` runs it, and CI after `make test`.
# Usage: bash tools/test_min.sh [python3.11]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3.11}
VENV=.venv-min
STAMP=$VENV/.installed-$(cat constraints-min.txt pyproject.toml tools/test_min.sh | sha256sum | cut -c1-16)
TORCH=$(grep -E '^torch==' constraints-min.txt)
if [ ! -f "$STAMP" ]; then
    start=$(date +%s)
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q "$TORCH"   # first, alone: PyPI's build of the lowest torch
    # the dev extra without stable-baselines3 (2.9.2 needs torch >= 2.8; older releases need gymnasium < 1.3)
    mapfile -t DEV < <("$VENV/bin/python" - <<'PY'
import tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]
print("\n".join(d for d in deps if not d.startswith("stable-baselines3")))
PY
)
    "$VENV/bin/python" -m pip install -q -c constraints-min.txt -e . "${DEV[@]}"
    "$VENV/bin/python" -m pip check
    echo "test-min: the lower-bound venv installed in $(( $(date +%s) - start )) s"
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
start=$(date +%s)
rc=0
"$VENV/bin/python" -m pytest -q -m "not slow" -p no:cacheprovider -p no:randomly -n "${JOBS:-2}" --dist loadgroup \
    || rc=$?
echo "test-min: exit $rc after $(( $(date +%s) - start )) s of tests"
exit $rc
