"""The render-backend contract.

A backend is built from the env and the config (``from_config`` picks only the
options it needs); ``capture(td)`` returns ``{camera: frame}`` for the state the
step TensorDict describes, or ``None`` when it has nothing for this step;
``submit(td)`` is the same as a future, for backends that draw in the background.
``close()`` is safe twice and after a failed ``__init__``. A backend that cannot
serve an env raises :class:`BackendUnavailable` (from ``__init__``), whose
message says what to change; only that error lets ``auto`` (:mod:`.auto`) try the next one.

Example:
    >>> from torchrl_render.backends.null import NullBackend
    >>> with NullBackend.from_config(env=None, cfg=None) as backend:
    ...     backend.capture(None) is None
    True
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from ..contracts import Array, StepView, UserEnv
from ..errors import ConfigError
from ..registry import BACKENDS

if TYPE_CHECKING:
    import torch

    from ..config import RenderConfig


__all__ = ["BackendMaker", "DrawnFrames", "PendingFrames", "RenderBackend", "backend_class"]

log = logging.getLogger("torchrl_render")

#: A step's frames as a backend drew them, by camera name: numpy arrays or tensors, HWC or CHW, uint8 or float
#: (:func:`torchrl_render.frames.to_uint8_hwc` makes the uint8 HWC :data:`~torchrl_render.contracts.Frames` of
#: them; ``backends.factory.Uint8Frames`` does it for the engine's workers). A ``Mapping``, read-only, so that a
#: backend's narrower frames (the ``mujoco`` backend's numpy ``Frames``) are drawn frames too.
DrawnFrames: TypeAlias = "Mapping[str, Array | torch.Tensor]"


class PendingFrames(Protocol):
    """What :meth:`RenderBackend.submit` hands back: a :class:`~concurrent.futures.Future` as its caller uses it
    (waits for the frames). Read-only, so that a backend's future of narrower frames is one too (a ``Future``
    itself is invariant: it can also be given a result)."""

    def result(self, timeout: float | None = None) -> DrawnFrames | None: ...


class RenderBackend(ABC):
    """Base class of render backends."""

    name: str = "base"
    #: The ``render_quality`` looks it can draw; others are noted as not applied.
    render_qualities: tuple[str, ...] = ("default",)

    def __init__(self) -> None:
        #: Notes for the metadata's ``warnings`` (fallbacks taken, settings changed).
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, env: UserEnv, cfg: RenderConfig) -> RenderBackend:
        """Builds the backend for ``env`` with the options it needs from ``cfg``."""
        return cls()

    @abstractmethod
    def capture(self, td: StepView | None) -> DrawnFrames | None:
        """Frames for the step that ``td`` describes (reset or ``next`` view; None: the backend reads the
        simulation itself)."""

    def submit(self, td: StepView | None) -> PendingFrames:
        """Starts the frames for ``td``; a :class:`~concurrent.futures.Future` of what ``capture`` returns.

        The state is read now; the pixels may still be drawing when this returns (the
        ``mujoco`` backend draws on its own thread), so the caller can step on meanwhile.
        This default captures at once.
        """
        from concurrent.futures import Future

        future: Future[DrawnFrames | None] = Future()
        future.set_result(self.capture(td))
        return future

    def begin_episode(self) -> None:
        """Called before the first frame of every episode (a camera may be set up from that state)."""

    def info(self) -> dict[str, object]:
        """Facts for the metadata sidecar (GL backend, cameras, size...)."""
        return {"render_backend": self.name}

    def close(self) -> None:
        """Releases resources; safe to call twice."""

    def __enter__(self) -> RenderBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class BackendMaker(Protocol):
    """What a render backend's registry entry names (a :class:`RenderBackend` subclass, or ``auto``'s chooser): a
    class whose ``from_config(env, cfg)`` builds the backend."""

    def from_config(self, env: UserEnv, cfg: RenderConfig) -> RenderBackend: ...


def backend_class(name: str) -> BackendMaker:
    """The class registered as render backend ``name`` (a plugin's too), checked to build backends."""
    cls = BACKENDS.load(name)
    if not isinstance(cls, BackendMaker):
        raise ConfigError(f"render backend {name!r} ({BACKENDS.entry(name).target}) has no from_config",
                          expected="a RenderBackend subclass (from_config(env, cfg) builds it)", got=repr(cls),
                          fix=f"register a RenderBackend subclass under {name!r}")
    return cls
