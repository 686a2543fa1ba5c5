"""``env``: frames from the wrapped env's own ``render()``.

* gymnasium (and gym >= 0.26) envs made with ``render_mode="rgb_array"``: ``env.render()``
  (the size is the one given to ``gymnasium.make``; ``width``/``height`` do not apply);
* dm_control envs: ``physics.render(height, width, camera_id)`` for each asked camera
  (``"default"``: camera 0 when the model has cameras, else the free camera);
* any other env (a torchrl ``EnvBase`` with a ``render()``) whose ``render()`` returns an image.

The frame reflects the simulator's state after the step, as ``env.render()`` would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from ..contracts import Array, StepView, UserEnv
from ..envs.unwrap import underlying_env
from ..errors import BackendUnavailable
from .base import DrawnFrames, RenderBackend
from .mujoco import grow_offscreen_buffer, resolve_camera_id

if TYPE_CHECKING:
    import mujoco
    import torch
    from dm_control.mujoco import Physics

    from ..config import RenderConfig


__all__ = ["EnvRenderBackend"]

#: An env's renderer for one camera: the image (an array or a tensor), or None when it has none this step.
Render: TypeAlias = "Callable[[str], Array | torch.Tensor | None]"

_RENDER_MODE_FIX = ("make the env with render_mode='rgb_array' (gymnasium.make(..., render_mode='rgb_array'), "
                    "--render-mode rgb_array), or use --from-pixels or --render-backend mujoco")


class EnvRenderBackend(RenderBackend):
    """Calls the raw env's renderer once per step.

    Args:
        render: A callable taking a camera name (from ``cameras``) and returning that camera's image.
        cameras: Names the frames are given, each passed to ``render``.
        source: ``"gymnasium"``, ``"dm_control"`` or ``"torchrl"``, for the metadata.
        size: ``(width, height)`` when the backend chooses it (dm_control), for the metadata.
    """

    name = "env"

    def __init__(self, render: Render, cameras: list[str], source: str, size: tuple[int, int] | None = None) -> None:
        super().__init__()
        self._render: Render | None = render
        self.cameras = list(cameras)
        self.source = source
        self.size = size

    @classmethod
    def from_config(cls, env: UserEnv, cfg: RenderConfig) -> EnvRenderBackend:
        raw = underlying_env(env)
        cameras = list(getattr(cfg, "camera", None) or ["default"])
        physics = getattr(raw, "physics", None)
        if physics is not None and callable(getattr(physics, "render", None)):
            return cls._for_dm_control(physics, cameras, cfg)
        if hasattr(raw, "render_mode"):
            return cls._for_gymnasium(raw, cameras)
        return cls._for_other(raw, cameras)

    @classmethod
    def _for_gymnasium(cls, raw: UserEnv, cameras: list[str]) -> EnvRenderBackend:
        mode = raw.render_mode
        if mode != "rgb_array":
            raise BackendUnavailable(
                f"the gymnasium env does not render images (render_mode={mode!r})",
                expected="render_mode='rgb_array'", got=f"render_mode={mode!r}", fix=_RENDER_MODE_FIX)
        if cameras != ["default"]:
            raise BackendUnavailable(
                "env.render() shows only the env's own camera, but named cameras were asked for",
                expected="camera 'default'", got=cameras,
                fix="use --render-backend mujoco to render named cameras, or pass camera_name= to gymnasium.make "
                    "and keep --camera default")
        return cls(lambda camera: raw.render(), cameras, "gymnasium")

    @classmethod
    def _for_dm_control(cls, physics: Physics, cameras: list[str], cfg: RenderConfig) -> EnvRenderBackend:
        width, height = int(getattr(cfg, "width", 480)), int(getattr(cfg, "height", 480))
        model = getattr(physics.model, "ptr", physics.model)
        ids = {name: _dm_camera(model, name) for name in cameras}
        backend = cls(lambda camera: physics.render(height=height, width=width, camera_id=ids[camera]),
                      cameras, "dm_control", size=(width, height))
        if getattr(physics, "_contexts", None) is None:  # dm_control sizes its GL buffer on the first render
            note = grow_offscreen_buffer(model, width, height)
            if note:
                backend.notes.append(note)
        return backend

    @classmethod
    def _for_other(cls, raw: UserEnv, cameras: list[str]) -> EnvRenderBackend:
        render = getattr(raw, "render", None)
        if not callable(render):
            raise BackendUnavailable(
                f"the env ({type(raw).__name__}) has no render()", expected="an env with render() returning an image",
                got=type(raw).__name__, fix=_RENDER_MODE_FIX)
        try:
            probe = render()
        except Exception as exc:  # any failure means this env cannot serve frames this way
            raise BackendUnavailable(
                f"{type(raw).__name__}.render() raised {type(exc).__name__}: {exc}",
                expected="render() returning an image", got=type(exc).__name__, fix=_RENDER_MODE_FIX) from exc
        if not _is_image(probe):
            raise BackendUnavailable(
                f"{type(raw).__name__}.render() does not return an image",
                expected="an array or tensor of shape (H, W, 3)", got=type(probe).__name__, fix=_RENDER_MODE_FIX)
        if cameras != ["default"]:
            raise BackendUnavailable(
                "env.render() shows only the env's own camera, but named cameras were asked for",
                expected="camera 'default'", got=cameras, fix="use --render-backend mujoco, or keep --camera default")
        return cls(lambda camera: render(), cameras, "torchrl")

    def capture(self, td: StepView | None) -> DrawnFrames | None:
        if self._render is None:
            raise RuntimeError("capture() after close()")
        frames: dict[str, Array | torch.Tensor] = {}
        for camera in self.cameras:
            frame = self._render(camera)
            if frame is None:
                return None
            while getattr(frame, "ndim", 0) > 3 and frame.shape[0] == 1:
                frame = frame[0]
            frames[camera] = frame
        return frames

    def info(self) -> dict[str, object]:
        info: dict[str, object] = {"render_backend": self.name, "source": self.source, "cameras": list(self.cameras)}
        if self.size is not None:
            info["width"], info["height"] = self.size
        return info

    def close(self) -> None:
        self._render = None


def _dm_camera(model: mujoco.MjModel, name: str) -> int:
    """dm_control's camera id for ``name`` (``"default"``: camera 0 if any, else the free camera -1)."""
    if name == "default":
        return 0 if model.ncam > 0 else -1
    return resolve_camera_id(model, name)


def _is_image(value: object) -> bool:
    shape = getattr(value, "shape", None)
    return shape is not None and 2 <= len(shape) <= 4
