"""Render backends built for a caller that must not know them: the engine's torchrl env workers.

``functools.partial(make_backend, cfg)`` is picklable (the config is), so it travels to spawned
env workers; there it builds the configured backend on the worker's env, and the frames it
captures come out as ``uint8`` ``(H, W, 3)`` arrays, the layout the workers put into the step
TensorDict.

Example:
    >>> from functools import partial
    >>> from types import SimpleNamespace
    >>> make = partial(make_backend, SimpleNamespace(render_backend="null"))
    >>> with make(None) as backend:
    ...     backend.capture(None) is None
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contracts import Frames, StepView, UserEnv
from ..frames import to_uint8_hwc
from .base import RenderBackend, backend_class

if TYPE_CHECKING:
    from ..config import RenderConfig


__all__ = ["Uint8Frames", "make_backend"]


class Uint8Frames(RenderBackend):
    """A backend whose captured frames are converted to ``uint8`` ``(H, W, 3)`` arrays: the
    :class:`~torchrl_render.contracts.FrameSource` the engine's torchrl env workers call.

    Args:
        inner: The backend that draws.
    """

    def __init__(self, inner: RenderBackend) -> None:
        super().__init__()
        self.inner, self.name, self.notes = inner, inner.name, inner.notes

    def capture(self, td: StepView | None) -> Frames | None:
        """The inner backend's frames, as uint8 HWC arrays (``None`` when it has none)."""
        frames = self.inner.capture(td)
        return {name: to_uint8_hwc(frame) for name, frame in frames.items()} if frames is not None else None

    def begin_episode(self) -> None:
        """Forwarded to the inner backend."""
        self.inner.begin_episode()

    def close(self) -> None:
        """Closes the inner backend (safe twice)."""
        self.inner.close()


def make_backend(cfg: RenderConfig, env: UserEnv) -> Uint8Frames:
    """The backend ``cfg.render_backend`` names, built on ``env``, giving uint8 HWC frames."""
    return Uint8Frames(backend_class(cfg.render_backend).from_config(env, cfg))
