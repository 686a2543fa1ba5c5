"""Screenshots of ``--viewer`` for the docs: both kinds, on a real Xvfb display.

Writes docs/img/viewer_mujoco.png (MuJoCo's viewer on HalfCheetah-v5) and docs/img/viewer_window.png
(the window kind on CartPole-v1). Needs Xvfb (bash tools/test_setup.sh installs it). Run from the
repository root:

    MUJOCO_GL=egl python tools/viewer_screenshots.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "viewer_mujoco.png": (["--policy", "helpers.policies:linear_policy", "--env", "HalfCheetah-v5", "--max-steps", "60",
                           "--out", "/tmp/viewer_shot_mujoco.jsonl"], "viewer: showing episode 0", (0, 0, 533, 400)),
    "viewer_window.png": (["--policy", "helpers.badfactories:cartpole_policy", "--env", "CartPole-v1", "--max-steps",
                           "60",
                           "--out", "/tmp/viewer_shot_window.mp4", "--overlay"],
                          "viewer: showing episode 1", (100, 100, 700, 500)),  # SDL centres its window
}


def main() -> None:
    from PIL import ImageGrab

    display = ":93"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "800x600x24", "-nolisten", "tcp"])
    try:
        time.sleep(1.5)
        for name, (argv, ready, box) in RUNS.items():
            env = {**os.environ, "DISPLAY": display, "MUJOCO_GL": "egl",
                   "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
            cmd = [sys.executable, "-m", "torchrl_render", *argv, "--num-trajs", "3", "--overwrite", "--viewer",
                   "--render-fps", "20", "--debug"]
            proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
            for line in proc.stderr:
                if ready in line:
                    break
            time.sleep(1.0 if "mujoco" in name else 0.3)  # a few steps into the episode
            shot = ImageGrab.grab(xdisplay=display).crop(box)
            shot.thumbnail((480, 360))
            shot.save(ROOT / "docs" / "img" / name, optimize=True)
            proc.stderr.read()
            proc.wait(120)
            print(ROOT / "docs" / "img" / name)
    finally:
        xvfb.terminate()
        xvfb.wait(10)


if __name__ == "__main__":
    main()
