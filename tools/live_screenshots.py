"""Screenshots of the live page for docs/img/, taken in headless Chromium while real runs go on.

    MUJOCO_GL=egl .venv/bin/python tools/live_screenshots.py      # ~1 min; writes docs/img/live_*.png

- ``live_3d.png``: the shipped HalfCheetah-v5 policy (examples/half_cheetah), the 3-D view fed poses.
- ``live_frames.png``: CartPole-v1 (no MuJoCo model), the latest frames.
- ``mujoco_viewer.png``: :func:`torchrl_render.display_mujoco_wasm_viewer` driven by
  :func:`torchrl_render.send_mujoco_wasm_qpos` (HalfCheetah's model file).
"""

from __future__ import annotations

import logging
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
IMG = ROOT / "docs" / "img"
CHEETAH = ROOT / "examples" / "half_cheetah"
CHROMIUM_ARGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox"]


def cartpole_policy(spec):
    """Pushes toward the pole's lean: a CartPole policy that keeps it up for a while."""
    import torch

    return lambda obs: torch.nn.functional.one_hot((obs[..., 2] + 0.5 * obs[..., 3] > 0).long(), 2)  # one-hot spec


class _Url(logging.Handler):
    def __init__(self):
        super().__init__()
        self.urls = []

    def emit(self, record):
        self.urls += re.findall(r"http://\S+", record.getMessage())


def _live_run(cfg, shoot):
    """Runs ``cfg`` on a thread; ``shoot(url)`` once its live URL is logged."""
    from torchrl_render import render_policy

    catch = _Url()
    logging.getLogger("torchrl_render").addHandler(catch)
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", render_policy(cfg)), daemon=True)
    thread.start()
    while not catch.urls and thread.is_alive():
        time.sleep(0.05)
    shoot(catch.urls[0])
    thread.join()
    logging.getLogger("torchrl_render").removeHandler(catch)
    return box["result"]


def main() -> None:
    import gymnasium.envs.mujoco as gm
    import numpy as np
    from playwright.sync_api import sync_playwright

    from torchrl_render import RenderConfig, display_mujoco_wasm_viewer, send_mujoco_wasm_qpos, write_mujoco_wasm_viewer

    tmp = Path(tempfile.mkdtemp())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        page = browser.new_context(viewport={"width": 820, "height": 520}).new_page()

        def shoot(name, wait_for):
            def take(url):
                page.goto(url)
                page.wait_for_function(wait_for, timeout=60000)
                page.screenshot(path=str(IMG / name))
                print("wrote", IMG / name)
            return take

        cheetah = RenderConfig(ckpt=str(CHEETAH / "policy.pt"), policy=f"{CHEETAH / 'policy.py'}:make_policy",
                               env=f"{CHEETAH / 'policy.py'}:make_env", num_trajs=3, out=str(tmp / "c.mp4"),
                               width=96, height=96, render_quality="fast", live=0, progress=False)
        _live_run(cheetah, shoot("live_3d.png", "() => window.live && live.state().mode === '3d' && "
                                               "live.metrics().episodes_done >= 1 && live.state().step > 300"))
        cart = RenderConfig(policy=f"{Path(__file__).resolve()}:cartpole_policy", env="CartPole-v1", num_trajs=3,
                            out=str(tmp / "cart.mp4"), width=400, height=260, live=0, progress=False,
                            render_backend="env")
        _live_run(cart, shoot("live_frames.png", "() => window.live && live.state().frames > 20 && "
                                                 "live.metrics().episodes_done >= 1"))
        viewer_dir = write_mujoco_wasm_viewer(tmp / "viewer", Path(gm.__file__).parent / "assets" / "half_cheetah.xml")
        with display_mujoco_wasm_viewer(viewer_dir, port=0) as viewer:
            page.goto(viewer.url)
            page.wait_for_function("() => window.live && live.state().mode === '3d'", timeout=60000)
            send_mujoco_wasm_qpos(np.r_[0.0, 0.0, -0.2, 0.5, -0.6, 0.3, -0.4, 0.6, 0.2], port=viewer.port, wait=True)
            time.sleep(0.3)
            page.screenshot(path=str(IMG / "mujoco_viewer.png"))
            print("wrote", IMG / "mujoco_viewer.png")
        browser.close()


if __name__ == "__main__":
    main()
