"""The render-backend table: name -> lazy backend class, in ``auto``'s order.

``auto`` tries each entry in turn and moves on only on ``BackendUnavailable``.
"""

from __future__ import annotations

from ..registry import Entry, Registry

__all__ = ["AUTO_ORDER", "BACKENDS"]

BACKENDS = Registry("render backend", {
    "auto": Entry("torchrl_render.backends.base:AutoBackend",
                  description="try pixels, then mujoco, then env, and use the first that serves the env"),
    "pixels": Entry("torchrl_render.backends.pixels:PixelsBackend",
                    description="the pixel key of each step's TensorDict (--from-pixels)"),
    "env": Entry("torchrl_render.backends.env:EnvRenderBackend",
                 description="env.render() of the wrapped env (render_mode='rgb_array')"),
    "mujoco": Entry("torchrl_render.backends.mujoco:MujocoBackend", extra="mujoco==3.17.0",
                    description="renders named MuJoCo cameras itself (gymnasium MuJoCo, dm_control) at width x height"),
    "null": Entry("torchrl_render.backends.null:NullBackend", needs_frames=False,
                  description="no frames (data-only formats)"),
}, group="torchrl_render.backends")

# pixels are free when the env already makes them; a MuJoCo model is rendered by us (size, cameras,
# --render-quality); env.render() serves everything else.
AUTO_ORDER = ("pixels", "mujoco", "env")
