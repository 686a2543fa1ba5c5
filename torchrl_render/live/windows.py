"""The two windows of ``--viewer`` (see :mod:`torchrl_render.live.viewer`): MuJoCo's passive viewer and a pygame window.

Both have the same small interface: ``show_state(record, caption)`` after each step (``record`` is
``None`` while paused), ``show_frame(frame)``, ``pump(seconds)`` (handles the window's events for
about that long), ``alive()`` and ``close()`` (safe twice). Heavy imports (mujoco.viewer, glfw,
pygame) live here only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from numpy.typing import NDArray

from ..contracts import Array
from ..errors import NoDisplayError
from .keys import KEY_ESCAPE, KEY_RIGHT, KEY_SPACE, LIVE_FIX, mjpython_error

if TYPE_CHECKING:
    import mujoco
    import mujoco.viewer
    import pygame

    from ..engine.records import StepRecord
    from .viewer import Controls

__all__ = ["CameraSettings", "FrameWindow", "MujocoWindow", "frame_camera"]

#: A gymnasium MuJoCo env's ``default_cam_config``: MjvCamera attributes (``distance``, ``elevation``,
#: ``azimuth``, ``trackbodyid``: numbers; ``lookat``: three of them) by name.
CameraSettings: TypeAlias = "Mapping[str, float | Array]"


class MujocoWindow:
    """``mujoco.viewer.launch_passive`` on the env's own model and data, synced after every step.

    The viewer draws on its own thread with GLFW on the display; the env (and the offscreen
    renderer of the video) stay on the run's thread. ``sync()`` copies the state into the viewer's
    scene under the viewer's lock; nothing of the viewer writes into the env's ``MjData``
    (its side panels, whose sliders could, are hidden).
    """

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, controls: Controls,
                 camera: CameraSettings | None = None) -> None:
        self.handle: mujoco.viewer.Handle | None = None
        import glfw

        if not glfw.init():  # launch_passive would wait forever for a window its thread cannot open
            raise NoDisplayError("--viewer could not open a window: GLFW cannot connect to the display",
                                 expected="a reachable X or Wayland display",
                                 got=f"DISPLAY={os.environ.get('DISPLAY')!r}", fix=LIVE_FIX)
        import mujoco
        import mujoco.viewer

        error = mjpython_error(mujoco.viewer)
        if error is not None:
            raise error
        self.mujoco = mujoco
        self.handle = mujoco.viewer.launch_passive(model, data, key_callback=controls.press,
                                                   show_left_ui=False, show_right_ui=False)
        with self.handle.lock():
            frame_camera(mujoco, model, self.handle.cam, camera or {})
        self._caption = ""

    def show_state(self, record: StepRecord | None, caption: str) -> None:
        assert self.handle is not None, "show_state() after close()"
        if caption != self._caption:  # set_texts waits for the viewer's next drawing: only on a change
            self._caption = caption
            self.handle.set_texts((self.mujoco.mjtFontScale.mjFONTSCALE_150, self.mujoco.mjtGridPos.mjGRID_TOPLEFT,
                                   caption, ""))
        self.handle.sync()  # takes the viewer's lock: the scene is copied from the env's data

    def show_frame(self, frame: NDArray[np.uint8]) -> None:
        """Frames are not shown: the viewer draws the simulation itself."""

    def pump(self, seconds: float) -> None:
        time.sleep(seconds)  # the viewer's own thread handles its events

    def alive(self) -> bool:
        return self.handle is not None and self.handle.is_running()

    def close(self) -> None:
        """Ends the viewer and waits (up to 5 s) until its thread has destroyed the window."""
        handle, self.handle = self.handle, None
        if handle is None:
            return
        handle.close()
        deadline = time.monotonic() + 5.0
        while handle._sim() is not None and time.monotonic() < deadline:  # alive until its thread has ended
            time.sleep(0.01)


def frame_camera(mujoco: ModuleType, model: mujoco.MjModel, cam: mujoco.MjvCamera, config: CameraSettings) -> None:
    """Opens on the model as the video frames it: the env's camera settings (gymnasium's
    ``default_cam_config``: distance, elevation, azimuth, lookat, trackbodyid) over MuJoCo's free
    camera, tracking the body a follow camera tracks (the model's tracking camera's, else its root)."""
    from ..replay.scene import follow_body, moving_bodies  # imports mujoco

    mujoco.mjv_defaultFreeCamera(model, cam)
    chosen = follow_body(model)
    if chosen is None:  # no moving tracking camera nor free joint: the root of the first moving tree
        moving = moving_bodies(model)
        chosen = int(model.body_rootid[moving[0]]) if moving else 0
    body = int(config.get("trackbodyid", chosen))
    if body > 0:
        cam.type, cam.trackbodyid = mujoco.mjtCamera.mjCAMERA_TRACKING, body
    for key in ("distance", "elevation", "azimuth"):
        if key in config:
            setattr(cam, key, float(config[key]))
    if "lookat" in config:
        cam.lookat[:] = np.asarray(config["lookat"], dtype=np.float64)


class FrameWindow:
    """A pygame window showing the run's frames (opened at the first frame, resized to it)."""

    def __init__(self, controls: Controls) -> None:
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        import pygame

        self.pygame, self.controls = pygame, controls
        self.screen: pygame.Surface | None = None
        self._closed = False
        self._caption = ""
        try:
            pygame.display.init()
        except pygame.error as exc:
            raise NoDisplayError(f"--viewer could not open a window: {exc}", expected="a reachable X or "
                                 "Wayland display", got=f"DISPLAY={os.environ.get('DISPLAY')!r}",
                                 fix=LIVE_FIX) from exc
        if pygame.display.get_driver() in ("dummy", "offscreen"):  # SDL_VIDEODRIVER: it would draw nowhere
            pygame.display.quit()
            raise NoDisplayError("--viewer window: pygame draws off screen here (SDL_VIDEODRIVER="
                                 f"{os.environ.get('SDL_VIDEODRIVER')!r}), so no window would appear",
                                 expected="an SDL video driver with a screen (x11, wayland, ...)",
                                 got=f"SDL_VIDEODRIVER={os.environ.get('SDL_VIDEODRIVER')!r}",
                                 fix="unset SDL_VIDEODRIVER, or " + LIVE_FIX)
        self._keys = {pygame.K_SPACE: KEY_SPACE, pygame.K_RIGHT: KEY_RIGHT, pygame.K_ESCAPE: KEY_ESCAPE}

    def show_frame(self, frame: NDArray[np.uint8]) -> None:
        if self._closed:
            return
        pygame = self.pygame
        frame = np.ascontiguousarray(frame)
        h, w = frame.shape[:2]
        if self.screen is None or self.screen.get_size() != (w, h):
            self.screen = pygame.display.set_mode((w, h))
            pygame.display.set_caption(self._caption or "torchrl_render")
        self.screen.blit(pygame.image.frombuffer(frame.tobytes(), (w, h), "RGB"), (0, 0))
        pygame.display.flip()

    def show_state(self, record: StepRecord | None, caption: str) -> None:
        if caption != self._caption and not self._closed:
            self._caption = caption
            self.pygame.display.set_caption(caption)
        self.pump(0.0)

    def pump(self, seconds: float) -> None:
        pygame = self.pygame
        if not self._closed:
            for event in pygame.event.get():
                if event.type == pygame.QUIT:
                    self._closed = True
                elif event.type == pygame.KEYDOWN and event.key in self._keys:
                    self.controls.press(self._keys[event.key])
        if seconds > 0:
            time.sleep(seconds)

    def alive(self) -> bool:
        return not self._closed

    def close(self) -> None:
        if self.screen is not None or not self._closed:
            self._closed = True
            self.screen = None
            self.pygame.display.quit()
