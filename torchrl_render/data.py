"""Plain data carriers: what flows between the pipeline's stages.

Example:
    >>> import numpy as np
    >>> bundle = FrameBundle({"default": np.zeros((2, 2, 3), np.uint8)}, step=0, trajectory_index=0)
    >>> bundle.shape
    (2, 2, 3)
"""

from __future__ import annotations

import html
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from .contracts import EpisodeMetrics, MujocoState, StepMetrics
from .metrics import Aggregated
from .metrics.precision import SequentialEntry

if TYPE_CHECKING:
    from mujoco import MjModel
    from tensordict import TensorDictBase

__all__ = ["Artifact", "DisplayFunctions", "FrameBundle", "MimeTypes", "RenderResult", "RunMetrics", "SimState",
           "frame_paths", "register_display"]

#: What Jupyter hands ``_repr_mimebundle_`` as ``include`` / ``exclude``: mime types, or None for all.
MimeTypes: TypeAlias = "Collection[str] | None"



class SimState(MujocoState):
    """A MuJoCo state to draw (``FrameBundle.state``): the model, and the state's arrays (``qpos`` always; the
    others where the env has them: :class:`~torchrl_render.contracts.MujocoState`)."""

    model: MjModel



class DisplayFunctions(TypedDict, total=False):
    """How artifacts and results show themselves in Jupyter (:func:`register_display`'s keyword arguments)."""

    artifact_html: Callable[[Artifact], str]
    artifact_mimebundle: Callable[[Artifact, MimeTypes, MimeTypes], dict[str, str]]
    result_html: Callable[[RenderResult], str]
    result_mimebundle: Callable[[RenderResult, MimeTypes, MimeTypes], dict[str, str]]


def _plain_html(obj: object) -> str:
    """A result's HTML before :mod:`torchrl_render.notebook` is there: its repr (never the case once the
    package is imported, which imports the notebook display)."""
    return f"<pre>{html.escape(repr(obj))}</pre>"


def _plain_mimebundle(obj: object, include: MimeTypes = None, exclude: MimeTypes = None) -> dict[str, str]:
    """A result's mime bundle before :mod:`torchrl_render.notebook` is there: its repr, as HTML and text."""
    return {"text/html": _plain_html(obj), "text/plain": repr(obj)}


#: How artifacts and results show themselves in Jupyter, by name: :mod:`torchrl_render.notebook` registers
#: its functions when it is imported (:func:`register_display`), so this module needs nothing above it.
_DISPLAY: DisplayFunctions = {"artifact_html": _plain_html, "artifact_mimebundle": _plain_mimebundle,
                              "result_html": _plain_html, "result_mimebundle": _plain_mimebundle}


def register_display(**functions: Unpack[DisplayFunctions]) -> None:
    """Sets the Jupyter display of artifacts and results (``artifact_html``, ``artifact_mimebundle``,
    ``result_html``, ``result_mimebundle``); the notebook package calls it as it is imported.

    Example:
        >>> import torchrl_render.notebook as notebook
        >>> _DISPLAY["result_html"] is notebook.result_html
        True
    """
    unknown = set(functions) - set(_DISPLAY)
    if unknown:
        raise TypeError(f"register_display() takes {sorted(_DISPLAY)}, not {sorted(unknown)}")
    _DISPLAY.update(functions)


class RunMetrics(TypedDict, total=False):
    """``RenderResult.metrics`` (and the sidecar's ``metrics``): the per-episode rows, their aggregates
    (:func:`torchrl_render.metrics.aggregate`) and, with ``--precision``, the ``sequential`` entry. A run
    always fills the first two; a result built by hand may have none."""

    per_episode: list[EpisodeMetrics]
    aggregated: Aggregated
    sequential: SequentialEntry


@dataclass
class FrameBundle:
    """One rendered step: one or more named camera frames, already uint8 HxWx3.

    Frames are normalised once, when the bundle is built
    (:func:`torchrl_render.frames.to_uint8_hwc`); writers trust them.

    Args:
        frames: Camera name -> ``uint8`` array of shape ``(H, W, 3)``.
        step: Step index within the trajectory (0 is the frame after reset).
        trajectory_index: Trajectory (episode) index.
        timestamp: Seconds since the run started, if known.
        metadata: Backend-specific notes.
        metrics: Running numbers at this step (``step``, ``reward``, ``return``, ``success``).
        state: Simulator state for formats that draw it themselves (``html``): ``qpos`` and the
            ``mujoco.MjModel`` under ``"model"``; ``frames`` is then empty.
    """

    frames: dict[str, NDArray[np.uint8]]
    step: int
    trajectory_index: int
    timestamp: float | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    metrics: StepMetrics = field(default_factory=lambda: StepMetrics())
    state: SimState | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the first frame."""
        return tuple(next(iter(self.frames.values())).shape)


@dataclass
class Artifact:
    """A file or folder that a writer finished.

    Args:
        path: Where it was written (after the atomic rename).
        format: The registry name of the writer.
        num_frames: Frames written (0 for data-only formats).
        info: Writer-specific facts (codec, pix_fmt, size, per-file paths...).
    """

    path: Path
    format: str
    num_frames: int = 0
    info: dict[str, object] = field(default_factory=dict)

    def _repr_html_(self) -> str:
        """Jupyter: plays a video/GIF artifact inline (see :mod:`torchrl_render.notebook`)."""
        return _DISPLAY["artifact_html"](self)

    def _repr_mimebundle_(self, include: MimeTypes = None, exclude: MimeTypes = None) -> dict[str, str]:
        """Jupyter: HTML plus a plain-text summary."""
        return _DISPLAY["artifact_mimebundle"](self, include, exclude)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {"path": str(self.path), "format": self.format,
                "num_frames": self.num_frames, **self.info}


@dataclass
class RenderResult:
    """What :func:`torchrl_render.render_policy` returns.

    Field names follow ``torchrl.render.RenderResult``; ``frames`` stays empty (unless ``result_frames`` asks
    for it) because frames are streamed to the writers and never held.

    Args:
        artifact_path: Main artifact, if one was written.
        trajectories: One TensorDict per trajectory (no pixels unless asked).
        frame_paths: Files written by the writers (videos, PNGs).
        metadata: The JSON sidecar's content.
        warnings: Non-fatal fallbacks and notes, also in the sidecar.
        frames: ``[]``, kept for drop-in compatibility; with ``result_frames``, each trajectory's frame bundles.
        artifacts: Every artifact written, main one first.
        metrics: ``{"per_episode": [...], "aggregated": {...}}``.
    """

    artifact_path: Path | None
    trajectories: list[TensorDictBase | None]
    frame_paths: list[Path]
    metadata: dict[str, object]
    warnings: list[str]
    frames: list[list[FrameBundle]] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    metrics: RunMetrics = field(default_factory=lambda: RunMetrics())

    def __repr__(self) -> str:
        """A few lines: the paths, the metrics summary and counts (not every trajectory and all metadata).

        Example:
            >>> RenderResult(None, [], [], {}, ["a note"])
            RenderResult(
                artifact_path=None,
                trajectories=0, warnings=1)
        """
        agg: Mapping[str, object] = (self.metrics or {}).get("aggregated") or {}
        lines = [f"artifact_path={str(self.artifact_path) if self.artifact_path is not None else None!r}"]
        others = [str(a.path) for a in self.artifacts[1:]] or [str(p) for p in self.frame_paths[1:]]
        if others:
            more = f", ... ({len(others) - 3} more)" if len(others) > 3 else ""
            shown = ", ".join(repr(p) for p in others[:3]) + more
            lines.append(f"other_paths=[{shown}]")
        if agg.get("n_episodes"):
            summary = f"episodes={agg['n_episodes']}, return={agg['avg_sum_reward']:.3g}"
            if agg.get("std_sum_reward") is not None:
                summary += f" +- {agg['std_sum_reward']:.3g} (std)"
            if agg.get("avg_length") is not None:
                summary += f", length={agg['avg_length']:.3g}"
            if agg.get("pc_success") is not None:
                summary += f", success={agg['pc_success']:.3g}%"
            lines.append(summary)
        lines.append(f"trajectories={len(self.trajectories)}, warnings={len(self.warnings)}")
        return "RenderResult(\n    " + ",\n    ".join(lines) + ")"

    def _repr_html_(self) -> str:
        """Jupyter: the video(s) and the metrics table (see :mod:`torchrl_render.notebook`)."""
        return _DISPLAY["result_html"](self)

    def _repr_mimebundle_(self, include: MimeTypes = None, exclude: MimeTypes = None) -> dict[str, str]:
        """Jupyter: HTML plus a plain-text summary."""
        return _DISPLAY["result_mimebundle"](self, include, exclude)


def frame_paths(artifacts: list[Artifact]) -> list[Path]:
    """``RenderResult.frame_paths``: each artifact's file, and a PNG folder's PNG files (torchrl.render lists
    every frame file there).

    Example:
        >>> frame_paths([Artifact(Path("run.mp4"), "mp4")])
        [PosixPath('run.mp4')]
    """
    paths: list[Path] = []
    for artifact in artifacts:
        folder = artifact.path.is_dir() and artifact.format == "frames"
        paths.extend(sorted(artifact.path.rglob("*.png")) if folder else [artifact.path])
    return paths
