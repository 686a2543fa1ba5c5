"""torchrl.render's own test suite, run against this checkout: the drop-in promise, checked by its owner's tests.

``../shared/peer/`` (beside the project folder; CI copies it there, read-only) holds TorchRL's
``test/test_render.py`` unchanged and ``run.sh``, which renames the module under test to
``torchrl_render`` and runs the 24 tests that apply (its README says which two classes are left out
and why). This test runs the script with this interpreter, on this checkout's package, and fails
when the script reports a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT

# beside the project; a checkout elsewhere (a git worktree) names the folder in TORCHRL_RENDER_PEER_SUITE
PEER = Path(os.environ.get("TORCHRL_RENDER_PEER_SUITE") or ROOT.parent / "shared" / "peer")
APPLICABLE = 24  # run.sh's README: the tests of TorchRL's suite that apply to a drop-in


@pytest.mark.slow
@pytest.mark.skipif(not (PEER / "run.sh").is_file(),
                    reason=f"torchrl.render's suite is not beside the project ({PEER} is absent)")
def test_torchrl_render_suite_passes_on_torchrl_render():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)  # this checkout's package
    env = {**os.environ, "PYTHONPATH": path, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.run(["bash", str(PEER / "run.sh"), sys.executable], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=1200)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"torchrl.render's suite failed on torchrl_render:\n{output[-6000:]}"
    summary = output.strip().splitlines()[-1]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", summary)}
    assert not counts.get("failed") and not counts.get("error") and not counts.get("errors"), summary
    assert counts.get("passed", 0) + counts.get("skipped", 0) == APPLICABLE, summary
