"""Part 1: ``--viewer`` on a real X server (Xvfb), driven with real key presses (xdotool).

The runs are real ``python -m torchrl_render`` subprocesses on real MuJoCo (HalfCheetah-v5) and
gymnasium (CartPole-v1) envs; the screen is read back with Pillow's ImageGrab (XCB). Xvfb and
xdotool come from Debian (tools/test_setup.sh installs them); without Xvfb these tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import TESTS
from helpers.xserver import xvfb

CHEETAH = ["--policy", "helpers.policies:linear_policy", "--env", "HalfCheetah-v5", "--width", "48", "--height", "48",
           "--render-quality", "fast", "--seed", "3"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def display():
    """A real X server (Xvfb, 800x600x24) on a display number it picks itself, for the module."""
    if shutil.which("Xvfb") is None or shutil.which("xdotool") is None:
        pytest.skip("Xvfb/xdotool not installed (bash tools/test_setup.sh installs them)")
    with xvfb() as number:
        assert number is not None, "Xvfb did not start"
        yield number


def grab(display: str) -> np.ndarray:
    """The root window's pixels (H x W x 3)."""
    from PIL import ImageGrab

    return np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB"))


def grab_until(display: str, shows, timeout: float = 30) -> np.ndarray:
    """The first screenshot for which ``shows(pixels)`` holds (a window appears as fast as the machine allows)."""
    deadline = time.monotonic() + timeout
    while True:
        shot = grab(display)
        if shows(shot) or time.monotonic() > deadline:
            return shot
        time.sleep(0.1)


def grab_still(display: str, gap: float = 0.3, still: int = 4, timeout: float = 60) -> np.ndarray:
    """The screenshot once ``still`` screenshots ``gap`` seconds apart are equal: the window is done drawing. A
    loaded machine draws a caption late, and MuJoCo's software-rendered viewer can hold one picture for longer
    than a single gap before its next drawing, so two equal screenshots in a row are not enough."""
    deadline, shots = time.monotonic() + timeout, [grab(display)]
    while True:
        time.sleep(gap)
        shot = grab(display)
        shots = [*shots, shot] if np.array_equal(shot, shots[-1]) else [shot]
        if len(shots) >= still or time.monotonic() > deadline:
            return shot


class Run:
    """``python -m torchrl_render ...`` under ``display``, its stderr read line by line as it comes."""

    started: list[Run] = []  # killed after each test, so a failed test leaves no window on the display

    def __init__(self, argv: list[str], display: str | None, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]), "MUJOCO_GL": "egl"}
        env.pop("WAYLAND_DISPLAY", None)
        env.pop("SDL_VIDEODRIVER", None)  # set to dummy by earlier headless runs in this process (envs.py)
        if display is None:
            env.pop("DISPLAY", None)
        else:
            env["DISPLAY"] = display
        self.lines: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "torchrl_render", *argv, "--debug"], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        Run.started.append(self)

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 120) -> str:
        """The first stderr line holding ``text`` (waits for it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for line in list(self.lines) if text in line]
            if found:
                return found[0]
            assert self.proc.poll() is None, f"exited {self.proc.returncode} before {text!r}:\n" + "\n".join(self.lines)
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} in:\n" + "\n".join(self.lines))

    def finish(self, timeout: float = 180) -> int:
        self.proc.wait(timeout)
        self._reader.join(10)
        return self.proc.returncode


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test():
    yield
    while Run.started:
        proc = Run.started.pop().proc
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def press(display: str, key: str) -> None:
    """A real key press sent to MuJoCo's viewer window (found by its title)."""
    env = {**os.environ, "DISPLAY": display}
    wid = subprocess.run(["xdotool", "search", "--name", "MuJoCo"], env=env, capture_output=True, text=True,
                         check=True).stdout.split()[0]
    subprocess.run(["xdotool", "windowfocus", "--sync", wid, "key", key], env=env, check=True, timeout=30)


def close_window(display: str, pid: int) -> None:
    """Closes the window of process ``pid`` as a window manager's close button does: a WM_DELETE_WINDOW
    message (Xlib through ctypes; Xvfb runs no window manager)."""
    import ctypes
    import ctypes.util

    wid = int(subprocess.run(["xdotool", "search", "--pid", str(pid)], env={**os.environ, "DISPLAY": display},
                             capture_output=True, text=True, check=True).stdout.split()[0])

    class ClientMessage(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                    ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                    ("format", ctypes.c_int), ("data", ctypes.c_long * 5)]

    class XEvent(ctypes.Union):
        _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]

    x11 = ctypes.CDLL(ctypes.util.find_library("X11"))
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    x11.XFlush.argtypes = x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    conn = x11.XOpenDisplay(display.encode())
    assert conn, display
    event = XEvent()
    event.xclient.type, event.xclient.window, event.xclient.format = 33, wid, 32  # 33: ClientMessage
    event.xclient.message_type = x11.XInternAtom(conn, b"WM_PROTOCOLS", 0)
    event.xclient.data[0] = x11.XInternAtom(conn, b"WM_DELETE_WINDOW", 0)
    assert x11.XSendEvent(conn, wid, 0, 0, ctypes.byref(event))
    x11.XFlush(conn)
    x11.XCloseDisplay(conn)


def per_episode(meta_path: Path) -> list[dict]:
    episodes = json.loads(meta_path.read_text())["metrics"]["per_episode"]
    return [{k: v for k, v in e.items() if k != "wall_s"} for e in episodes]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The reference run, without --viewer (npz with exact frames; 3 episodes of 25 steps)."""
    out = tmp_path_factory.mktemp("plain")
    run = Run([*CHEETAH, "--num-trajs", "3", "--max-steps", "25", "--out", str(out / "run.npz"), "--npz-frames"],
              None, out)
    assert run.finish() == 0, "\n".join(run.lines)
    return out


def test_mujoco_viewer_shows_the_model_and_leaves_the_run_unchanged(display, baseline, tmp_path):
    before = grab(display)
    run = Run([*CHEETAH, "--num-trajs", "3", "--max-steps", "25", "--out", str(tmp_path / "run.npz"),
               "--npz-frames", "--viewer", "--render-fps", "40"], display, tmp_path)
    run.wait_for("viewer: opened the mujoco viewer, 40 steps/s")
    shot = grab_until(display, lambda shot: (shot != before).any(axis=-1).mean() > 0.2)
    assert run.finish() == 0, "\n".join(run.lines)
    assert shot.std() > 10 and (shot != before).any(axis=-1).mean() > 0.2  # a window full of a model
    assert len(np.unique(shot.reshape(-1, 3), axis=0)) > 100  # shaded geometry and floor, not a flat colour
    assert per_episode(tmp_path / "run.npz.metadata.json") == per_episode(baseline / "run.npz.metadata.json")
    with np.load(tmp_path / "run.npz") as seen, np.load(baseline / "run.npz") as plain:
        assert sorted(seen.files) == sorted(plain.files)
        frames = [k for k in plain.files if k.endswith("frames")]
        # the JSON entries hold the config (which names --viewer) and the run's metadata (timing)
        arrays = [k for k in plain.files if k not in ("metadata_json", "config", "metadata")]
        assert frames and all(np.array_equal(seen[k], plain[k]) for k in arrays)  # exact pixels, same steps
    assert "--viewer: MuJoCo's offscreen rendering" not in "\n".join(run.lines)  # MUJOCO_GL=egl was given


def test_space_pauses_the_right_arrow_steps_and_escape_ends_the_run(display, baseline, tmp_path):
    """One run: paused (held still), one step, resumed; then escape keeps the finished episodes (exit 0)."""
    run = Run([*CHEETAH, "--num-trajs", "20", "--max-steps", "25", "--out", str(tmp_path / "run.jsonl"),
               "--viewer", "mujoco", "--render-fps", "40"], display, tmp_path)
    run.wait_for("viewer: opened the mujoco viewer")
    press(display, "space")
    paused = run.wait_for("viewer: paused at episode")
    first = grab_still(display)  # the viewer has drawn its "[paused ...]" caption
    time.sleep(0.6)
    assert run.proc.poll() is None and np.array_equal(grab(display), first)  # held: the model does not move
    assert sum("viewer: paused at" in line for line in run.lines) == 1  # and the run does not step
    episode, step = (int(x) for x in paused.split("episode ")[1].split(", step "))
    press(display, "Right")
    at = (episode, step + 1) if step < 25 else (episode + 1, 0)
    run.wait_for(f"viewer: paused at episode {at[0]}, step {at[1]}")
    time.sleep(0.4)  # the viewer draws the new state
    assert not np.array_equal(grab(display), first)  # one step further, and held there again
    assert sum("viewer: paused at" in line for line in run.lines) == 2
    press(display, "space")
    run.wait_for("viewer: resumed at episode")
    run.wait_for("viewer: showing episode 2")  # episodes 0 and 1 have finished
    press(display, "Escape")
    assert run.finish() == 0, "\n".join(run.lines)
    episodes = per_episode(tmp_path / "run.jsonl.metadata.json")
    assert 2 <= len(episodes) < 20 and [e["episode_ix"] for e in episodes] == list(range(len(episodes)))
    plain = per_episode(baseline / "run.npz.metadata.json")  # the same seeds: the same first episodes
    without_frames = [{k: v for k, v in e.items() if k != "num_frames"} for e in episodes[:3]]  # jsonl: no frames
    assert without_frames == [{k: v for k, v in e.items() if k != "num_frames"} for e in plain[:len(without_frames)]]
    lines = (tmp_path / "run.jsonl").read_text().splitlines()
    # the data file: finished episodes only
    assert sum(json.loads(line)["type"] == "episode" for line in lines) == len(episodes)
    assert any("the run was ended from the viewer" in line for line in run.lines)


def test_window_kind_shows_the_frames_of_a_non_mujoco_env_and_closing_it_ends_the_run(display, tmp_path):
    run = Run(["--policy", "helpers.badfactories:cartpole_policy", "--env", "CartPole-v1", "--max-steps", "30",
               "--num-trajs", "20", "--out", str(tmp_path / "run.mp4"), "--viewer", "--render-fps", "30"],
              display, tmp_path)
    run.wait_for("viewer: opened the window viewer, 30 steps/s")
    run.wait_for("viewer: showing episode 1")  # frames of episode 0 were shown; the window stays open
    shot = grab_until(display, lambda shot: (shot == 255).all(axis=-1).sum() > 100_000)
    white = (shot == 255).all(axis=-1)  # CartPole's white background, around its cart and pole
    ys, xs = np.nonzero(white)
    assert (xs.max() - xs.min() + 1, ys.max() - ys.min() + 1) == (600, 400)  # one whole 600x400 frame
    inside = white[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    assert 0.8 < inside.mean() < 1.0  # mostly background, and the cart and pole drawn on it
    close_window(display, run.proc.pid)
    assert run.finish() == 0, "\n".join(run.lines)
    episodes = per_episode(tmp_path / "run.mp4.metadata.json")
    assert 1 <= len(episodes) < 20 and (tmp_path / "run.mp4").stat().st_size > 0
    assert any("the run was ended from the viewer" in line for line in run.lines)


def test_window_kind_refuses_a_pygame_that_draws_off_screen(display, tmp_path, monkeypatch, capsys):
    """SDL_VIDEODRIVER=dummy (what headless runs set for gymnasium's pygame envs) would show nothing: refused."""
    from helpers.clicode import exit_code

    monkeypatch.setenv("DISPLAY", display)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    code = exit_code(["--policy", "helpers.badfactories:cartpole_policy", "--env", "CartPole-v1", "--max-steps", "3",
                 "--out", str(tmp_path / "run.mp4"), "--viewer", "window"])
    assert code == 2 and "pygame draws off screen here (SDL_VIDEODRIVER='dummy')" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_no_display_names_live_and_writes_nothing(tmp_path):
    run = Run([*CHEETAH, "--max-steps", "5", "--out", str(tmp_path / "run.mp4"), "--viewer"], None, tmp_path)
    assert run.finish() == 2
    message = [line for line in run.lines if line.startswith("torchrl-render: error:")]
    assert message and "--viewer opens a window, and this machine has no display" in message[0]
    assert "--live 8765" in message[0] and "ssh -L 8765:127.0.0.1:8765" in message[0]
    assert list(tmp_path.iterdir()) == []


def test_config_viewer_and_render_fps():
    from torchrl_render import RenderConfig
    from torchrl_render.errors import ConfigError

    assert RenderConfig(policy="a:b", env="c:d", viewer=True).viewer == "auto"  # Python: True means auto
    assert RenderConfig(policy="a:b", env="c:d", viewer="window", render_fps=12).render_fps == 12.0
    with pytest.raises(ConfigError, match="viewer must be one of auto, mujoco, window. Did you mean 'mujoco'"):
        RenderConfig(policy="a:b", env="c:d", viewer="mujo")
    with pytest.raises(ConfigError, match="render_fps must be a positive number"):
        RenderConfig(policy="a:b", env="c:d", render_fps=float("nan"))


def test_keys_pause_step_and_stop():
    from torchrl_render.live.viewer import KEY_ESCAPE, KEY_RIGHT, KEY_SPACE, Controls

    keys = Controls()
    keys.press(KEY_RIGHT)  # not paused: the right arrow does nothing
    assert not keys.take_step() and not keys.paused
    keys.press(KEY_SPACE)
    keys.press(KEY_RIGHT)
    keys.press(KEY_RIGHT)
    assert keys.paused and [keys.take_step() for _ in range(3)] == [True, True, False]
    keys.press(KEY_SPACE)
    keys.press(KEY_ESCAPE)
    assert not keys.paused and keys.stopped


def test_macos_without_mjpython_is_refused_with_the_fix(monkeypatch):
    """macOS cannot be run here: the check is launch_passive's own condition (mujoco.viewer._MJPYTHON unset)."""
    import mujoco.viewer

    from torchrl_render.live.viewer import mjpython_error

    assert mjpython_error(mujoco.viewer) is None  # Linux: no launcher needed
    monkeypatch.setattr(sys, "platform", "darwin")
    error = mjpython_error(mujoco.viewer)
    assert error is not None and "run the same command with mjpython" in str(error) and "--live 8765" in str(error)
    monkeypatch.setattr(mujoco.viewer, "_MJPYTHON", object())  # what mjpython sets
    assert mjpython_error(mujoco.viewer) is None


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_mujoco_viewer_opens_on_the_model_framed_as_the_env_frames_it(env_id):
    """The camera the MuJoCo viewer opens with (the env's default_cam_config, tracking the followed body),
    drawn here off screen with MuJoCo's segmentation: the whole model is in view, not a close-up."""
    import gymnasium as gym
    import mujoco

    from torchrl_render.live.viewer import _env_camera
    from torchrl_render.live.windows import frame_camera

    env = gym.make(env_id)
    env.reset(seed=0)
    model, data = env.unwrapped.model, env.unwrapped.data
    cam = mujoco.MjvCamera()
    frame_camera(mujoco, model, cam, _env_camera(env))
    assert cam.type == mujoco.mjtCamera.mjCAMERA_TRACKING and cam.trackbodyid > 0
    with mujoco.Renderer(model, 120, 160) as renderer:
        renderer.enable_segmentation_rendering()
        renderer.update_scene(data, camera=cam)
        seg = renderer.render()
    robot = (seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM) & (model.geom_bodyid[np.maximum(seg[..., 0], 0)] > 0)
    assert 0.01 < robot.mean() < 0.5, robot.mean()
    assert not (robot[0].any() or robot[-1].any() or robot[:, 0].any() or robot[:, -1].any())  # nothing cut off
    env.close()
