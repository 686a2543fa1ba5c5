"""Screenshots of the html replay page on models the docs show: skins, followed robots, textures.

Writes, in docs/img: replay_dog.png (dm_control's dog: its skin), replay_quadruped_first.png and
replay_quadruped_last.png (dm_control's quadruped on the escape terrain, followed, frames 0 and last)
and replay_textured.png (a lettered cube: a cube texture from six PNG files, on a checker floor).
Runs in headless Chromium (Debian's chromium through playwright), from the repository root:

    MUJOCO_GL=egl python tools/replay_screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _lettered_cube(folder: Path) -> Path:
    from PIL import Image, ImageDraw, ImageFont

    faces = {"right": ("R", (190, 40, 40)), "left": ("L", (40, 160, 60)), "up": ("U", (40, 70, 190)),
             "down": ("D", (200, 170, 40)), "front": ("F", (170, 50, 170)), "back": ("B", (40, 160, 170))}
    try:
        font = ImageFont.truetype("DejaVuSans-Bold.ttf", 44)
    except OSError:
        font = ImageFont.load_default()
    for name, (letter, colour) in faces.items():
        img = Image.new("RGB", (64, 64), colour)
        ImageDraw.Draw(img).text((32, 32), letter, fill=(255, 255, 255), font=font, anchor="mm")
        img.save(folder / f"{name}.png")
    files = " ".join(f'file{n}="{n}.png"' for n in faces)
    xml = folder / "lettered_cube.xml"
    xml.write_text(f"""<mujoco>
  <asset>
    <texture name="letters" type="cube" {files}/>
    <material name="block" texture="letters"/>
    <texture name="grid" type="2d" builtin="checker" rgb1=".85 .85 .85" rgb2=".35 .35 .4" width="64" height="64"/>
    <material name="floor" texture="grid" texrepeat="4 4" texuniform="true"/>
    <texture name="sky" type="skybox" builtin="gradient" rgb1=".4 .6 .8" rgb2="0 0 0" width="32" height="32"/>
  </asset>
  <worldbody>
    <light pos="1 -1 3" dir="-.3 .3 -1"/>
    <geom type="plane" size="2 2 .1" material="floor"/>
    <body name="block" pos="0 0 .4"><freejoint/><geom type="box" size=".25 .25 .25" material="block"/></body>
  </worldbody>
</mujoco>""")
    return xml


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = parser.parse_args()
    out = Path(args.out)
    import mujoco
    import numpy as np

    from torchrl_render import RenderConfig, render_policy
    from torchrl_render.data import FrameBundle
    from torchrl_render.writers.html import HtmlWriter

    from helpers.browser import open_page

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        dog = tmp / "dog.html"
        render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy", env="dm_control/dog-walk",
                                   max_steps=30, out=str(dog)))
        with open_page(dog, width=900, height=650) as (page, top):
            page.js("replay.seek(30, 0)")
            cam = page.js("replay.camera()")
            target = np.array(cam["target"])
            page.js("([p, t]) => replay.setCamera(p, t)", [(target + [1.2, -1.6, 0.7]).tolist(), target.tolist()])
            top.screenshot(path=str(out / "replay_dog.png"))
            print("dog:", page.js("replay.drawn()"), cam["body_name"], page.errors)
        quad = tmp / "quadruped.html"
        result = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy",
                                            env="dm_control/quadruped-escape", max_steps=300, out=str(quad)))
        last = result.metrics["per_episode"][0]["length"]
        with open_page(quad, width=900, height=650) as (page, top):
            for name, frame in (("first", 0), ("last", last)):
                page.js(f"replay.seek({frame}, 0)")
                top.screenshot(path=str(out / f"replay_quadruped_{name}.png"))
                print(f"quadruped frame {frame}:", page.js("replay.camera()"))
            print("quadruped:", page.js("replay.drawn()"), page.errors)
        xml = _lettered_cube(tmp)
        model = mujoco.MjModel.from_xml_path(str(xml))
        page_path = tmp / "cube.html"
        with HtmlWriter(page_path) as writer:
            for step in range(30):
                qpos = model.qpos0.copy()
                angle = 0.6 + 0.02 * step
                qpos[3:7] = [np.cos(angle / 2), 0, 0, np.sin(angle / 2)]
                writer.write(FrameBundle({}, step, 0, state={"model": model, "qpos": qpos}))
            writer.on_episode({"episode_ix": 0, "seed": 0, "sum_reward": 0.0, "length": 29, "success": None})
        with open_page(page_path, width=900, height=650) as (page, top):
            page.js("replay.seek(0, 0); replay.setCamera([1.1, -1.3, 1.1], [0, 0, 0.35])")
            top.screenshot(path=str(out / "replay_textured.png"))
            print("textured:", page.js("replay.drawn()"), page.errors)


if __name__ == "__main__":
    main()
