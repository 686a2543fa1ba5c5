"""Size and load time of the html replay for 1,000 HalfCheetah frames.

Runs the shipped HalfCheetah policy for one episode of 999 steps (1,000 frames) into an html replay,
then opens it in headless Chromium (Debian's chromium through playwright, every non-file request
blocked) a few times and reports: the file size (and its parts: three.js, scene, poses), the time
from navigation to ``window.replay.ready`` as the page measures it (``performance.now()``), and the
wall time of ``page.goto`` + ready seen from Python. Also the html writer's cost in the run.

    MUJOCO_GL=egl .venv/bin/python benchmarks/replay_size.py [--frames 1000] [--loads 5] [--json out.json]
        [--screenshot docs/img/replay_page.png]

Software WebGL (SwiftShader) on a shared CPU is slower than a desktop GPU, so the load times are
upper bounds of what a user sees.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def render(out: Path, frames: int) -> dict:
    from torchrl_render import RenderConfig, render_policy

    ex = ROOT / "examples" / "half_cheetah"
    t0 = time.perf_counter()
    result = render_policy(RenderConfig(ckpt=str(ex / "policy.pt"), policy=f"{ex / 'policy.py'}:make_policy",
                                        env=f"{ex / 'policy.py'}:make_env", max_steps=frames - 1, out=str(out),
                                        overwrite=True))
    wall = time.perf_counter() - t0
    return {"frames": result.artifacts[0].num_frames, "run_wall_s": wall}


def parts(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    sizes = {"total_bytes": len(text.encode())}
    for name in ("scene", "episodes"):
        found = re.search(rf'id="replay-{name}">(.*?)</script>', text, re.S)
        sizes[f"{name}_bytes"] = len(found.group(1))
    three = (ROOT / "torchrl_render" / "replay" / "vendor" / "three.min.js").stat().st_size
    sizes["three_js_bytes"] = three
    return sizes


def load_times(path: Path, loads: int, screenshot: str | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    from helpers.browser import ARGS, CHROMIUM

    page_ms, wall_ms, blocked, stages = [], [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        for _ in range(loads):
            context = browser.new_context(viewport={"width": 1000, "height": 700})
            context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://")
                          else (blocked.append(r.request.url), r.abort()))
            page = context.new_page()
            t0 = time.perf_counter()
            page.goto(path.resolve().as_uri())
            page.wait_for_function("() => window.replay !== undefined")
            page_ms.append(page.evaluate("window.replay.ready.then(() => performance.now())"))
            stages.append(page.evaluate("replay.timing"))
            wall_ms.append((time.perf_counter() - t0) * 1000)
            frames = page.evaluate("replay.numFrames(0)")
            if screenshot and len(page_ms) == 1:
                page.evaluate("replay.seek(Math.floor(replay.numFrames(0) * 0.3), 0)")
                page.wait_for_timeout(300)
                page.screenshot(path=screenshot)
            context.close()
        browser.close()
    return {"page_ready_ms_median": statistics.median(page_ms), "page_ready_ms": page_ms,
            "wall_ready_ms_median": statistics.median(wall_ms), "frames_in_page": frames,
            "stages_ms_median": {k: statistics.median(s[k] for s in stages) for k in stages[0]},
            "blocked_requests": len(blocked)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--json", default=None)
    parser.add_argument("--screenshot", default=None, help="save a screenshot of the page (docs/img/replay_page.png)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cheetah.html"
        facts = {**render(out, args.frames), **parts(out), **load_times(out, args.loads, args.screenshot)}
    facts["total_mb"] = facts["total_bytes"] / 2**20
    facts["pose_bytes_per_frame"] = facts["episodes_bytes"] / facts["frames"]
    print(json.dumps(facts, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(facts, indent=2))


if __name__ == "__main__":
    main()
