"""The render-backend contract and ``auto``.

A backend is built from the env and the config (``from_config`` picks only the
options it needs); ``capture(td)`` returns ``{camera: frame}`` for the state the
step TensorDict describes, or ``None`` when it has nothing for this step;
``submit(td)`` is the same as a future, for backends that draw in the background.
``close()`` is safe twice and after a failed ``__init__``. A backend that cannot
serve an env raises :class:`BackendUnavailable` (from ``__init__``), whose
message says what to change; only that error lets ``auto`` try the next one.

Example:
    >>> from torchrl_render.backends.null import NullBackend
    >>> with NullBackend.from_config(env=None, cfg=None) as backend:
    ...     backend.capture(None) is None
    True
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

from ..errors import BackendUnavailable

__all__ = ["AutoBackend", "RenderBackend"]

log = logging.getLogger("torchrl_render")


class RenderBackend(ABC):
    """Base class of render backends."""

    name: str = "base"
    #: The ``render_quality`` looks it can draw; others are noted as not applied.
    render_qualities: tuple[str, ...] = ("default",)

    def __init__(self) -> None:
        #: Notes for the metadata's ``warnings`` (fallbacks taken, settings changed).
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, env: Any, cfg: Any) -> RenderBackend:
        """Builds the backend for ``env`` with the options it needs from ``cfg``."""
        return cls()

    @abstractmethod
    def capture(self, td: Any) -> dict[str, Any] | None:
        """Frames for the step that ``td`` describes (reset or ``next`` view)."""

    def submit(self, td: Any) -> Any:
        """Starts the frames for ``td``; a :class:`~concurrent.futures.Future` of what ``capture`` returns.

        The state is read now; the pixels may still be drawing when this returns (the
        ``mujoco`` backend draws on its own thread), so the caller can step on meanwhile.
        This default captures at once.
        """
        from concurrent.futures import Future

        future: Future = Future()
        future.set_result(self.capture(td))
        return future

    def begin_episode(self) -> None:
        """Called before the first frame of every episode (a camera may be set up from that state)."""

    def info(self) -> dict[str, Any]:
        """Facts for the metadata sidecar (GL backend, cameras, size...)."""
        return {"render_backend": self.name}

    def close(self) -> None:
        """Releases resources; safe to call twice."""

    def __enter__(self) -> RenderBackend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AutoBackend:
    """``auto``: the first backend of ``AUTO_ORDER`` that can serve the env."""

    @classmethod
    def from_config(cls, env: Any, cfg: Any) -> RenderBackend:
        from . import AUTO_ORDER, BACKENDS

        reasons = []
        for name in AUTO_ORDER:
            try:
                backend = BACKENDS.load(name).from_config(env, cfg)
            except BackendUnavailable as exc:
                reasons.append((name, exc))
                continue
            for skipped, exc in reasons:
                backend.notes.append(f"render backend auto skipped {skipped}: {exc.what}")
            log.info("render backend auto chose %r", name)
            return backend
        raise BackendUnavailable(
            "no render backend can produce frames for this env",
            got=" | ".join(f"{name}: {exc}" for name, exc in reasons),
            fix=("make the env render: pass render_mode='rgb_array' to gymnasium (--render-mode rgb_array), "
                 "ask for pixel observations (--from-pixels), or render MuJoCo cameras directly "
                 "(--render-backend mujoco); or pick a data-only format (npz, jsonl)"))
