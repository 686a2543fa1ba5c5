#!/usr/bin/env bash
# The wheel as users get it: build it, install it (not editable) into a fresh venv with the known-good set
# (constraints.txt), and from a folder outside the checkout run the demo render, an html replay (its three.js
# and scripts must come from the wheel), and every command's --help and --version.
# `make test-wheel` runs it, and CI after `make test`. Usage: bash tools/test_wheel.sh [python3.11]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${1:-python3.11}
VENV=$ROOT/.venv-wheel
rm -rf dist "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q torch==2.13.0   # first: a looser spec pulls a multi-GB CUDA build
"$VENV/bin/python" -m pip wheel -q --no-deps -w dist .
WHEEL=$(ls dist/torchrl_render-*.whl)
# The listing is read whole before it is searched: `zipfile -l | grep -q` under pipefail fails at random, when
# grep exits on its first match and zipfile dies of the broken pipe.
LISTING=$("$VENV/bin/python" -m zipfile -l "$WHEEL")
grep -q "torchrl_render/replay/vendor/three.min.js" <<< "$LISTING" \
    || { echo "the wheel lacks the replay page's three.js"; exit 1; }
# pyproject says MIT: the wheel carries the licence text and says so in its metadata
grep -q "torchrl_render-.*\.dist-info/licenses/LICENSE" <<< "$LISTING" || { echo "the wheel lacks LICENSE"; exit 1; }
"$VENV/bin/python" - "$WHEEL" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(whl.read(n).decode() for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    text = next(whl.read(n).decode() for n in whl.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
assert "License-Expression: MIT" in meta, "the wheel's METADATA names no MIT licence"
assert text.startswith("MIT License") and "Permission is hereby granted" in text, "LICENSE is not the MIT text"
PY
"$VENV/bin/python" -m pip install -q -c constraints.txt "$WHEEL"
"$VENV/bin/python" -m pip check

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"   # outside the checkout: nothing can come from it but the example's factories
export MUJOCO_GL=${MUJOCO_GL:-egl}
BIN=$VENV/bin
"$BIN/python" - "$VENV" <<'PY'
import sys, torchrl_render
assert torchrl_render.__file__.startswith(sys.argv[1]), f"imported from {torchrl_render.__file__}, not the wheel"
print("torchrl_render", torchrl_render.__version__, "from", torchrl_render.__file__)
PY
VERSION=$("$BIN/python" -c 'import torchrl_render; print(torchrl_render.__version__)')
[ "$("$BIN/torchrl-render" --version)" = "torchrl-render $VERSION" ]
for sub in sweep sweep-status replay; do
    [ "$("$BIN/torchrl-render" $sub --version)" = "torchrl-render $sub $VERSION" ]
    "$BIN/torchrl-render" $sub --help > /dev/null
done
"$BIN/torchrl-render" --help > /dev/null
EX=$ROOT/examples/half_cheetah
COMMON=(--ckpt "$EX/policy.pt" --policy "$EX/policy.py:make_policy" --env "$EX/policy.py:make_env" --num-trajs 1
        --max-steps 60 --quiet)
"$BIN/torchrl-render" "${COMMON[@]}" --render-quality fast --width 160 --height 120 --out demo.mp4
"$BIN/torchrl-render" "${COMMON[@]}" --out replay.html
"$BIN/python" - <<'PY'
import json, av
from pathlib import Path
with av.open("demo.mp4") as box:
    frames = sum(1 for _ in box.decode(video=0))
assert frames == 61, frames
page = Path("replay.html").read_text()
assert len(page) > 500_000 and "three" in page.lower(), "the page lacks its vendored three.js"
meta = json.loads(Path("replay.html.metadata.json").read_text())
print(f"wheel test: demo.mp4 {frames} frames, replay.html {len(page):,} bytes, return "
      f"{meta['metrics']['per_episode'][0]['sum_reward']:.2f}")
PY
echo "wheel test passed: $WHEEL"
