"""The render-backend table: name -> lazy backend class, in ``auto``'s order.

``auto`` tries each entry in turn and moves on only on ``BackendUnavailable``.

torchrl.render's names resolve here too, on first use: ``RenderBackend``, ``EnvRenderBackend``,
``NullRenderBackend`` (our ``null``), ``TensorDictPixelsBackend`` (our ``pixels``) and
``MujocoStateReader``. They are the classes ``--render-backend`` uses, with our contract
(``from_config(env, cfg)``, ``capture(td) -> {camera: frame}``; see ``docs/migrating.md``).

Example:
    >>> from torchrl_render.backends import NullRenderBackend, TensorDictPixelsBackend
    >>> NullRenderBackend.name, TensorDictPixelsBackend.name
    ('null', 'pixels')
"""

from __future__ import annotations

import importlib
from typing import Any

from ..registry import Entry, Registry

__all__ = ["AUTO_ORDER", "BACKENDS", "EnvRenderBackend", "MujocoStateReader", "NullRenderBackend", "RenderBackend",
           "TensorDictPixelsBackend"]

#: torchrl.render.backends' names -> where the class lives (imported when the name is first used).
_TORCHRL_NAMES = {
    "EnvRenderBackend": "torchrl_render.backends.env:EnvRenderBackend",
    "MujocoStateReader": "torchrl_render.envs.mujoco_state:MujocoStateReader",
    "NullRenderBackend": "torchrl_render.backends.null:NullBackend",
    "RenderBackend": "torchrl_render.backends.base:RenderBackend",
    "TensorDictPixelsBackend": "torchrl_render.backends.pixels:PixelsBackend",
}


def __getattr__(name: str) -> Any:
    target = _TORCHRL_NAMES.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)

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
