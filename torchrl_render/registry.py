"""Registries: tables of lazy ``"module:Class"`` strings, and the two plugin tables.

A plugin module is imported only when its name is used, so ``import
torchrl_render`` stays light (no av, PIL or mujoco). Third parties add entries
through the entry-point groups ``torchrl_render.writers`` and
``torchrl_render.backends`` (``name = "pkg.module:Class"``).

:data:`WRITERS` (formats) and :data:`BACKENDS` (render backends) are pure data, kept here so that
the config can read them without importing the writers or the backends (``torchrl_render.writers``
and ``torchrl_render.backends`` re-export them). :func:`needs_frames` is the one rule for "does
this run's format need frames".

Example:
    >>> reg = Registry("thing", {"json": Entry("json:JSONDecoder", suffixes=(".json",))})
    >>> reg.names()
    ['json']
    >>> reg.load("json").__name__
    'JSONDecoder'
    >>> reg.for_suffix("out.JSON")
    'json'
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol, runtime_checkable

from .errors import ConfigError, did_you_mean

__all__ = ["AUTO_ORDER", "BACKENDS", "WRITERS", "Entry", "FormatChoice", "Registry", "needs_frames"]


class FormatChoice(Protocol):
    """What :func:`needs_frames` reads of a ``RenderConfig`` (config sits above this module, and calls it)."""

    @property
    def format_name(self) -> str: ...

    save_frames: bool


@runtime_checkable
class _FramesRule(Protocol):
    """A writer class as :func:`needs_frames` calls it: ``Writer.wants_frames`` (a classmethod, which takes the
    run's ``RenderConfig``)."""

    @classmethod
    def wants_frames(cls, cfg: FormatChoice, default: bool) -> bool: ...


@dataclass(frozen=True)
class Entry:
    """One registry row.

    Args:
        target: ``"module:Class"`` imported on first use.
        suffixes: File suffixes that select this entry (writers).
        needs_frames: Whether the writer consumes rendered frames.
        needs_steps: Whether a data writer reads each episode's stored steps (observations, actions).
        needs_state: Whether the writer consumes simulator states (``FrameBundle.state``).
        needs_infos: Whether a data writer stores each step's env infos (``Episode.step_infos``).
        directory: Whether the artifact is a folder rather than a file.
        extra: Package to ``pip install`` if the import fails.
        description: One line for ``--list-formats`` / ``--list-backends``.
    """

    target: str
    suffixes: tuple[str, ...] = ()
    needs_frames: bool = True
    needs_steps: bool = True
    directory: bool = False
    extra: str | None = None
    description: str = ""
    needs_state: bool = False
    needs_infos: bool = False


@dataclass
class Registry:
    """A name -> :class:`Entry` table with lazy loading and did-you-mean."""

    kind: str
    table: dict[str, Entry]
    group: str | None = None
    _loaded_entry_points: bool = field(default=False, repr=False)

    def _plugins(self) -> None:
        if self._loaded_entry_points or self.group is None:
            return
        self._loaded_entry_points = True
        for ep in entry_points(group=self.group):
            self.table.setdefault(ep.name, Entry(ep.value, description=f"plugin {ep.value}"))

    def names(self) -> list[str]:
        """The registered names, in table order."""
        self._plugins()
        return list(self.table)

    def entry(self, name: str) -> Entry:
        """The entry for ``name``; a :class:`ConfigError` with a did-you-mean otherwise."""
        self._plugins()
        if not isinstance(name, str) or name not in self.table:
            name = name if isinstance(name, str) else repr(name)
            raise ConfigError(
                f"unknown {self.kind} {name!r}.{did_you_mean(name, self.table)}",
                expected=f"{self.kind} must be one of {', '.join(self.table)}", got=name,
                fix=f"pick one of the listed {self.kind}s")
        return self.table[name]

    def load(self, name: str) -> object:
        """Imports and returns the object behind ``name`` (a class of the table's kind: the caller, above this
        module, names that kind, and narrows)."""
        entry = self.entry(name)
        module_name, _, attr = entry.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"{self.kind} {name!r} needs a package that is not installed ({exc})",
                fix="install the missing package", extra=entry.extra) from exc
        loaded: object = getattr(module, attr)
        return loaded

    def for_suffix(self, path: str | os.PathLike[str]) -> str | None:
        """The name whose suffix matches ``path`` (case-insensitive), if any."""
        self._plugins()
        suffix = Path(path).suffix.lower()
        for name, entry in self.table.items():
            if suffix and suffix in entry.suffixes:
                return name
        return None


#: The writer table: format name -> lazy writer class. One line per format. Tests, CLI choices,
#: ``--list-formats`` and the docs' format table all read it.
WRITERS = Registry("format", {
    "mp4": Entry("torchrl_render.writers.mp4:Mp4Writer", suffixes=(".mp4",), extra="av==18.1.0",
                 description="H.264 video (yuv420p, faststart): plays in every browser"),
    "gif": Entry("torchrl_render.writers.gif:GifWriter", suffixes=(".gif",), extra="pillow",
                 description="animated GIF, streamed frame by frame"),
    "frames": Entry("torchrl_render.writers.png:PngWriter", directory=True, extra="pillow",
                    description="a folder of PNG files, one per frame"),
    "npz": Entry("torchrl_render.writers.npz:NpzWriter", suffixes=(".npz",), needs_frames=False,
                 description="numpy arrays per trajectory: observations, actions, rewards, dones (+ frames)"),
    "jsonl": Entry("torchrl_render.writers.jsonl:JsonlWriter", suffixes=(".jsonl",), needs_frames=False,
                   description="streamed event log: metadata, step, episode and summary lines"),
    "json": Entry("torchrl_render.writers.json:JsonWriter", suffixes=(".json",), needs_frames=False,
                  needs_steps=False, description="metrics only (lerobot-eval's eval_info.json layout): per "
                                                 "episode and aggregated"),
    "ipynb": Entry("torchrl_render.writers.ipynb:IpynbWriter", suffixes=(".ipynb",), extra="av==18.1.0 pillow",
                   description="report notebook: config, metrics, return plot, embedded videos, re-run cell"),
    "html": Entry("torchrl_render.writers.html:HtmlWriter", suffixes=(".html", ".htm"), needs_frames=False,
                  needs_state=True, extra="mujoco==3.17.0",
                  description="offline 3-D replay page (three.js): MuJoCo body poses, timeline, follow camera, charts"),
    "minari": Entry("torchrl_render.writers.minari:MinariWriter", suffixes=(".minari",), needs_frames=False,
                    directory=True, needs_infos=True, extra="torchrl_render[datasets]",
                    description="Minari dataset (offline RL): observations, actions, rewards, flags, infos, seeds, "
                                "env spec"),
}, group="torchrl_render.writers")


#: The render-backend table: name -> lazy backend class, in ``auto``'s order.
BACKENDS = Registry("render backend", {
    "auto": Entry("torchrl_render.backends.auto:AutoBackend",
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


def needs_frames(cfg: FormatChoice) -> bool:
    """Whether the run of ``cfg`` renders frames for its files: the format's writer decides for the config
    (:meth:`~torchrl_render.writers.base.Writer.wants_frames`, the table's ``needs_frames`` by default),
    and ``save_frames`` always wants them. Loads the writer class by name (no static import upwards, so its
    rule is typed here by a Protocol: this module cannot name the Writer class)."""
    fmt = cfg.format_name
    writer = WRITERS.load(fmt)
    if not isinstance(writer, _FramesRule):
        raise ConfigError(f"format {fmt!r} ({WRITERS.entry(fmt).target}) is not a writer: it has no wants_frames",
                          expected="a torchrl_render.writers.base.Writer subclass", got=repr(writer),
                          fix=f"register a Writer subclass under {fmt!r}")
    return bool(writer.wants_frames(cfg, WRITERS.entry(fmt).needs_frames)) or bool(cfg.save_frames)
