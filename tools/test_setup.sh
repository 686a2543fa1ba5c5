#!/usr/bin/env bash
# What the test suite needs beyond the Python package: run by `make test` (and so by CI) on a fresh machine.
# Each part is idempotent and quick when already installed. Usage: bash tools/test_setup.sh .venv/bin/python
set -euo pipefail
PY=${1:-.venv/bin/python}
