"""``--viewer``: watch the rendered episodes of a run on this machine's screen while it runs.

Two kinds of window, chosen by ``--viewer`` (``auto`` when the flag stands alone):

* ``mujoco``: MuJoCo's own viewer (``mujoco.viewer.launch_passive``) opened on the env's *own*
  ``MjModel`` and ``MjData`` (gymnasium MuJoCo envs and dm_control tasks), synced after every
  step: the live simulation, with MuJoCo's camera controls (drag to orbit, scroll to zoom).
* ``window``: a plain pygame window showing the frames the run makes for its writers (overlay
  and camera layout applied: exactly the video's frames). It needs a format that makes frames.

``auto`` picks ``mujoco`` when the env has a MuJoCo model, else ``window``. Steps are paced in
real time to ``--render-fps`` (default: the env's ``metadata["render_fps"]``, else ``--fps``);
the pacing holds the viewer's steps only: it never changes what the run computes or writes.

Keys (both kinds): space pauses and resumes; the right arrow runs one step while paused;
escape (or closing the window) ends the run cleanly: the episodes that finished are kept and
written as for a shorter run; the unfinished one is dropped from the metrics and data files
(frames of it that already went to a video stay there).

The viewer needs a display (``$DISPLAY`` or ``$WAYLAND_DISPLAY`` on Linux); without one,
:class:`NoDisplayError` names ``--live`` (a page in the browser, reachable through SSH). On
macOS MuJoCo's viewer only runs under ``mjpython`` (the launcher installed with ``mujoco``).

Example:
    >>> from torchrl_render.live.viewer import Controls, KEY_SPACE, KEY_RIGHT, KEY_ESCAPE
    >>> keys = Controls()
    >>> keys.press(KEY_SPACE); keys.paused
    True
    >>> keys.press(KEY_RIGHT); keys.take_step(), keys.take_step()
    (True, False)
    >>> keys.press(KEY_ESCAPE); keys.stopped
    True
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..contracts import EpisodeMetrics, StepMetrics, UserEnv
from ..envs.gl import library_loads
from ..envs.unwrap import find_simulation, underlying_env
from ..errors import NoDisplayError, ViewerError
from .keys import KEY_ESCAPE, KEY_RIGHT, KEY_SPACE, LIVE_FIX, mjpython_error
from .windows import CameraSettings, FrameWindow, MujocoWindow

if TYPE_CHECKING:
    from ..config import RenderConfig
    from ..engine.records import StepRecord

__all__ = [
    "KEY_ESCAPE",
    "KEY_RIGHT",
    "KEY_SPACE",
    "Controls",
    "NoDisplayError",
    "Viewer",
    "ViewerError",
    "check_display",
    "mjpython_error",
    "prepare_viewer",
    "stopped_note",
]

log = logging.getLogger("torchrl_render")

def check_display() -> None:
    """Raises :class:`NoDisplayError` when no window can be opened here (Linux and BSD: no ``$DISPLAY`` nor
    ``$WAYLAND_DISPLAY``). macOS and Windows always have one; on macOS MuJoCo's viewer also needs ``mjpython``,
    which :func:`mjpython_error` checks when that viewer opens."""
    if sys.platform == "darwin" or sys.platform.startswith("win"):
        return
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise NoDisplayError("--viewer opens a window, and this machine has no display", expected="DISPLAY or "
                             "WAYLAND_DISPLAY set (a desktop session, ssh -X, or Xvfb)",
                             got="DISPLAY and WAYLAND_DISPLAY unset", fix=LIVE_FIX)


def prepare_viewer(cfg: RenderConfig, notes: list[str]) -> None:
    """Before the run builds anything: refuses a machine without a display, and keeps MuJoCo's offscreen
    rendering (the video) off the display: ``MUJOCO_GL=egl`` when it is unset and libEGL loads, so that
    the video's renderer and the viewer's GLFW window never share GLFW."""
    check_display()
    if os.environ.get("MUJOCO_GL") or "mujoco" in sys.modules:
        return
    if library_loads("egl"):
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
        notes.append("--viewer: MuJoCo's offscreen rendering set to MUJOCO_GL=egl (the viewer's window uses "
                     "GLFW on the display; the video is drawn off screen)")


class Controls:
    """The keys' effect, shared by the window's thread and the run's: pause, step once, stop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.paused = False
        self.stopped = False
        self._steps = 0

    def press(self, key: int) -> None:
        """Applies one key press (GLFW key codes: :data:`KEY_SPACE`, :data:`KEY_RIGHT`, :data:`KEY_ESCAPE`)."""
        with self._lock:
            if key == KEY_SPACE:
                self.paused = not self.paused
            elif key == KEY_RIGHT and self.paused:
                self._steps += 1
            elif key == KEY_ESCAPE:
                self.stopped = True

    def take_step(self) -> bool:
        """Whether one step may run while paused (a right-arrow press not used yet)."""
        with self._lock:
            if self._steps:
                self._steps -= 1
                return True
            return False


class Viewer:
    """An observer of the run (:class:`~torchrl_render.sink.Observer`): :meth:`on_step` for each rendered
    step (opens the window at the first one, shows the state, paces, holds while paused), :meth:`on_frame`
    with each finished frame (the ``window`` kind shows it), :meth:`close` at the end. :attr:`stopped`:
    escape or window closed; :meth:`stopped_because` says so in the run's warnings.

    Args:
        cfg: The run's :class:`~torchrl_render.RenderConfig` (``viewer``, ``render_fps``, ``fps``).
        makes_frames: Whether the run makes frames (the ``window`` kind shows them).
    """

    def __init__(self, cfg: RenderConfig, makes_frames: bool) -> None:
        self.cfg, self.makes_frames = cfg, makes_frames
        self.controls = Controls()
        self.window: MujocoWindow | FrameWindow | None = None
        self.fps: float | None = cfg.render_fps
        self._next = 0.0
        self._where = (0, 0)

    @property
    def stopped(self) -> bool:
        return self.controls.stopped or (self.window is not None and not self.window.alive())

    current_frames = True  # the window shows this step's frame, so the sink finishes it before on_step

    def on_step(self, record: StepRecord, metrics: StepMetrics) -> None:
        """Shows the state after this step, paced to real time; returns when the run may go on."""
        if self.window is None:
            self.window = self._open(record)
        if record.step == 0:
            log.info("viewer: showing episode %d", record.trajectory)
        self._where = (record.trajectory, record.step)
        self.window.show_state(record, self._caption(metrics))
        self._pace(self.window)
        self._hold(self.window, metrics)

    def on_frame(self, frame: NDArray[np.uint8], record: StepRecord | None = None,
                 metrics: StepMetrics | None = None) -> None:
        """A finished frame (uint8 HxWx3) of the run; the ``window`` kind shows it."""
        if self.window is not None:
            self.window.show_frame(frame)

    def on_episode(self, episodes: list[EpisodeMetrics]) -> None:
        """The window shows episodes as they run; a finished one changes nothing on screen."""

    def stopped_because(self, finished: int) -> str | None:
        """The run's note when the viewer ended it (None while it runs on); see :func:`stopped_note`."""
        return stopped_note(self.cfg, finished) if self.stopped else None

    def close(self, finished: bool = True) -> None:
        """Closes the window (safe twice); nothing of the viewer outlives the run."""
        window, self.window = self.window, None
        if window is not None:
            window.close()

    def _open(self, record: StepRecord) -> MujocoWindow | FrameWindow:
        sim = find_simulation(record.env) if record.env is not None else None
        kind = self.cfg.viewer
        if kind == "auto":
            kind = "mujoco" if sim is not None else "window"
        if kind == "mujoco" and sim is None:
            raise ViewerError("--viewer mujoco needs a MuJoCo env stepped in this process, and this one has no "
                              "MuJoCo model here", expected="a gymnasium MuJoCo env or a dm_control task (with "
                              "--num-envs 1 for torchrl envs)", got=type(record.env).__name__ if record.env
                              is not None else "an env in a worker process",
                              fix="use --viewer window (shows the run's frames) or --viewer alone")
        if kind == "window" and not self.makes_frames:
            raise ViewerError("--viewer window shows the run's frames, and this run makes none",
                              expected="a format that makes frames (mp4, gif, png, ...) or a MuJoCo env",
                              got=f"format {self.cfg.format!r}", fix="add a video (--out run.mp4), use a MuJoCo "
                              "env with --viewer mujoco, or --live")
        if self.fps is None:
            self.fps = _env_fps(record.env) or float(self.cfg.fps)
        window: MujocoWindow | FrameWindow = (MujocoWindow(*sim, self.controls, _env_camera(record.env))
                                              if kind == "mujoco" and sim is not None else FrameWindow(self.controls))
        log.info("viewer: opened the %s viewer, %.4g steps/s", kind, self.fps)
        return window

    def _pace(self, window: MujocoWindow | FrameWindow) -> None:
        """Waits until this step's slot in real time (keeps the window responsive meanwhile)."""
        if self.fps is None:  # never: the window opened at the first step, and set it
            raise RuntimeError("the viewer paces a step before its window opened")
        now = time.perf_counter()
        self._next = max(self._next + 1.0 / self.fps, now)
        while not self.stopped and (left := self._next - time.perf_counter()) > 0:
            window.pump(min(left, 1 / 60))

    def _hold(self, window: MujocoWindow | FrameWindow, metrics: StepMetrics) -> None:
        """While paused: the window stays live; a right-arrow press lets one step through."""
        if not self.controls.paused:
            return
        log.info("viewer: paused at episode %d, step %d", *self._where)
        while self.controls.paused and not self.stopped:
            if self.controls.take_step():
                log.info("viewer: one step (episode %d, step %d)", self._where[0], self._where[1] + 1)
                break
            window.show_state(None, self._caption(metrics))
            window.pump(1 / 60)
        else:
            if not self.stopped:
                log.info("viewer: resumed at episode %d, step %d", *self._where)
        self._next = time.perf_counter()

    def _caption(self, metrics: StepMetrics) -> str:
        """The window's text: the episode; while paused also the step and the return so far (the text
        changes once an episode while running: MuJoCo's viewer applies a new text at its next drawing)."""
        if not self.controls.paused:
            return f"episode {self._where[0]}"
        return (f"episode {self._where[0]}  step {self._where[1]}  return {metrics.get('return', 0.0):.2f}  "
                "[paused: space resumes, right arrow steps]")


def stopped_note(cfg: RenderConfig, finished: int) -> str:
    """The run's note when the viewer ended it; :class:`ViewerError` when no episode had finished (nothing to keep)."""
    asked = f"{cfg.num_trajs}" if cfg.num_trajs is not None else f"--eval-n-timesteps {cfg.eval_n_timesteps}'s"
    if not finished:
        raise ViewerError("the run was ended from the viewer (escape or the window closed) before its first episode "
                          "finished, so there is nothing to keep", expected="at least one finished episode",
                          got="0 finished episodes", fix="let an episode finish before pressing escape, or "
                          "lower --max-steps")
    log.info("viewer: the run was ended from the viewer after %d finished episode(s)", finished)
    return (f"--viewer: the run was ended from the viewer (escape or the window closed) after {finished} of {asked} "
            "episodes: the metrics and data files hold the finished ones; the unfinished episode is dropped "
            "(frames of it already written to a video stay there)")


def _env_camera(env: UserEnv) -> CameraSettings | None:
    """A gymnasium MuJoCo env's ``mujoco_renderer.default_cam_config`` (how its videos are framed), else None."""
    renderer = getattr(getattr(underlying_env(env), "unwrapped", None), "mujoco_renderer", None)
    config = getattr(renderer, "default_cam_config", None)
    return dict(config) if isinstance(config, dict) else None


def _env_fps(env: UserEnv) -> float | None:
    """The env's ``metadata["render_fps"]`` (gymnasium), looked up behind torchrl's wrappers; else None."""
    for candidate in (env, underlying_env(env)):
        try:
            meta = getattr(getattr(candidate, "unwrapped", candidate), "metadata", None)
        except Exception:  # torchrl envs forward unknown attributes; any failure means "not known"
            meta = None
        fps = meta.get("render_fps") if isinstance(meta, dict) else None
        if isinstance(fps, (int, float)) and not isinstance(fps, bool) and fps > 0:
            return float(fps)
    return None
