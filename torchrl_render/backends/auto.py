"""``--render-backend auto``: the first backend of ``AUTO_ORDER`` that can serve the env.

A backend that cannot serve an env raises :class:`~torchrl_render.errors.BackendUnavailable` from its
constructor; ``auto`` then tries the next one and notes why it skipped each.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..contracts import UserEnv
from ..errors import BackendUnavailable
from ..registry import AUTO_ORDER
from .base import RenderBackend, backend_class

if TYPE_CHECKING:
    from ..config import RenderConfig


__all__ = ["AutoBackend"]

log = logging.getLogger("torchrl_render")


class AutoBackend:
    """``auto``: the first backend of ``AUTO_ORDER`` that can serve the env."""

    @classmethod
    def from_config(cls, env: UserEnv, cfg: RenderConfig) -> RenderBackend:
        reasons = []
        for name in AUTO_ORDER:
            try:
                backend = backend_class(name).from_config(env, cfg)
            except BackendUnavailable as exc:
                reasons.append((name, exc))
                continue
            for skipped, reason in reasons:
                backend.notes.append(f"render backend auto skipped {skipped}: {reason.what}")
            log.info("render backend auto chose %r", name)
            return backend
        raise BackendUnavailable(
            "no render backend can produce frames for this env",
            got=" | ".join(f"{name}: {exc}" for name, exc in reasons),
            fix=("make the env render: pass render_mode='rgb_array' to gymnasium (--render-mode rgb_array), "
                 "ask for pixel observations (--from-pixels), or render MuJoCo cameras directly "
                 "(--render-backend mujoco); or pick a data-only format (npz, jsonl)"))
