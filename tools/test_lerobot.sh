#!/usr/bin/env bash
# The LeRobot set-up: this package beside lerobot[pusht]==0.4.4 (torch 2.10.0 and its torchvision: lerobot 0.4.4 needs
# torch < 2.11) in a venv of its own (.venv-lerobot), from constraints-lerobot.txt, pip check clean; then tests/lerobot
# (--policy lerobot against lerobot-eval's own eval_policy on gym-pusht). `make test-lerobot` runs it, and CI.
# Usage: bash tools/test_lerobot.sh [python3.11]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3.11}
VENV=.venv-lerobot
STAMP=$VENV/.installed-$(cat constraints-lerobot.txt pyproject.toml tools/test_lerobot.sh | sha256sum | cut -c1-16)
if [ ! -f "$STAMP" ]; then
    start=$(date +%s)
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # torch and torchvision first, alone: PyPI's builds of lerobot's newest admitted torch (several GB)
    "$VENV/bin/python" -m pip install -q $(grep -E '^(torch|torchvision)==' constraints-lerobot.txt)
    "$VENV/bin/python" -m pip install -q -c constraints-lerobot.txt 'lerobot[pusht]' -e . pytest pytest-timeout
    "$VENV/bin/python" -m pip check
    echo "test-lerobot: the LeRobot venv installed in $(( $(date +%s) - start )) s"
    touch "$STAMP"
fi
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
names = ["lerobot", "torch", "torchvision", "torchrl", "tensordict", "gymnasium", "gym-pusht", "mujoco", "numpy"]
print("LeRobot set: " + ", ".join(f"{n}=={version(n)}" for n in names))
PY
export MUJOCO_GL=${MUJOCO_GL:-egl}
start=$(date +%s)
rc=0
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/lerobot || rc=$?
echo "test-lerobot: exit $rc after $(( $(date +%s) - start )) s of tests"
exit $rc
