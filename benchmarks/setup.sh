#!/usr/bin/env bash
# Benchmark set-up (idempotent): what torchrl.render's mp4 writer needs beside torchrl itself.
#   - Debian's ffmpeg (its shared libraries are what torchcodec 0.13 loads);
#   - torchcodec==0.13.0 in the project's .venv.
# Run after `make venv` / `make test` (the .venv must exist). Usage: bash benchmarks/setup.sh [VENV_PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
VPY="${1:-.venv/bin/python}"
if [ ! -x "$VPY" ]; then
    echo "benchmarks/setup.sh: $VPY not found; run 'make venv' (or 'make test') first" >&2
    exit 2
fi

if ! command -v ffmpeg >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
    echo "benchmarks/setup.sh: installing Debian's ffmpeg (needed by torchcodec)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null
fi

if ! "$VPY" -c 'import torchcodec' >/dev/null 2>&1; then
    echo "benchmarks/setup.sh: installing torchcodec==0.13.0 into $(dirname "$VPY")/.."
    "$VPY" -m pip install -q torchcodec==0.13.0
fi

if ! "$VPY" -c 'import psutil' >/dev/null 2>&1; then  # in the dev extra; the benchmark polls RSS with it
    "$VPY" -m pip install -q 'psutil>=5.9'
fi

# torchcodec loads FFmpeg lazily: check that its encoder really works, not only the import.
"$VPY" - <<'PY'
import torch
from torchcodec.encoders import VideoEncoder
import tempfile, os
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "probe.mp4")
    VideoEncoder(frames=torch.zeros(2, 3, 16, 16, dtype=torch.uint8), frame_rate=30).to_file(path)
    assert os.path.getsize(path) > 0
import torchcodec
print(f"benchmarks/setup.sh: ok (torchcodec {torchcodec.__version__}, ffmpeg found)")
PY
