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
from typing import TYPE_CHECKING

from ..registry import AUTO_ORDER, BACKENDS

if TYPE_CHECKING:  # what __getattr__ gives at run time, named for the type checker
    from ..envs.mujoco_state import MujocoStateReader
    from .base import RenderBackend
    from .env import EnvRenderBackend
    from .null import NullBackend as NullRenderBackend
    from .pixels import PixelsBackend as TensorDictPixelsBackend

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


def __getattr__(name: str) -> type:
    target = _TORCHRL_NAMES.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
