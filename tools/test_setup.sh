#!/usr/bin/env bash
# What the test suite needs beyond the Python package: run by `make test` (and so by CI) on a fresh machine.
# Each part is idempotent and quick when already installed. Usage: bash tools/test_setup.sh .venv/bin/python
set -euo pipefail
PY=${1:-.venv/bin/python}

# the sweep tests start a real local Ray cluster (the `ray` extra of pyproject.toml).
"$PY" -c 'import ray, sys; sys.exit(ray.__version__ != "2.60.0")' 2>/dev/null || "$PY" -m pip install -q 'ray==2.60.0'

# --logger's tests read TensorBoard, CSV, W&B offline and MLflow local-store logs back (the `loggers` extra of
# pyproject.toml).
"$PY" -c 'import tensorboard, wandb, moviepy.editor, mlflow, sqlalchemy, alembic, omegaconf' 2>/dev/null \
    || "$PY" -m pip install -q -c "$(dirname "$0")/../constraints.txt" 'tensorboard==2.21.0' 'wandb==0.31.0' \
        'moviepy==1.0.3' 'mlflow-skinny==3.17.2' 'SQLAlchemy==2.1.9' 'alembic==1.20.1' 'omegaconf==2.4.0'

# The SB3 interop tests (tests/policies/test_sb3.py, the policy conformance matrix) train tiny stable-baselines3 models.
"$PY" -c 'import stable_baselines3, sys; sys.exit(stable_baselines3.__version__ != "2.9.2")' 2>/dev/null \
    || "$PY" -m pip install -q 'stable-baselines3==2.9.2'

# tests/docs runs every block of the docs, through sybil (the dev extra has it; a venv made before it had not).
"$PY" -c 'import sybil' 2>/dev/null || "$PY" -m pip install -q -c "$(dirname "$0")/../constraints.txt" 'sybil==10.1.0'

# the replay page's tests run in real headless Chromium (Debian's package), driven by playwright.
# Never `playwright install`: it downloads a browser build; the tests use /usr/bin/chromium.
if [ ! -x /usr/bin/chromium ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
"$PY" -c "import playwright" 2>/dev/null || "$PY" -m pip install -q playwright==1.65.2

# --viewer: a real X server, key presses and screenshots for tests/live/test_viewer.py (Debian's packages).
if ! command -v Xvfb >/dev/null || ! command -v xdotool >/dev/null || ! command -v xwd >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xvfb xdotool x11-apps
fi

# torchrl.render's own test suite (tests/compat/test_peer_suite.py runs ../shared/peer/run.sh) writes an mp4 through
# torchcodec, which loads Debian's FFmpeg: the benchmark set-up installs both (idempotent), so the mp4 test runs
# instead of skipping.
bash "$(dirname "$0")/../benchmarks/setup.sh" "$PY"

# the Minari dataset tests (tests/datasets) make datasets with Minari's DataCollector (its `create` extra: jax) in both
# storage backends (`arrow`: pyarrow), and read ours back (the `datasets` extra of pyproject.toml).
"$PY" -c 'import minari, h5py, pyarrow, jax, sys; sys.exit(minari.__version__ != "0.5.4")' 2>/dev/null \
    || "$PY" -m pip install -q -c "$(dirname "$0")/../constraints.txt" 'minari[hdf5,arrow,create]==0.5.4'
