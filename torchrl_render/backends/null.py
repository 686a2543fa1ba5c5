"""``null``: no frames, for data-only runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contracts import StepView, UserEnv
from .base import RenderBackend

if TYPE_CHECKING:
    from ..config import RenderConfig


__all__ = ["NullBackend", "NullRenderBackend"]


class NullBackend(RenderBackend):
    """Captures nothing; lets npz/jsonl runs skip rendering entirely."""

    name = "null"

    @classmethod
    def from_config(cls, env: UserEnv, cfg: RenderConfig) -> NullBackend:
        return cls()

    def capture(self, td: StepView | None) -> None:
        return None


#: torchrl.render's name for it (``torchrl.render.backends.null.NullRenderBackend``), with our contract.
NullRenderBackend = NullBackend
