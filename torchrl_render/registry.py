"""Registries: tables of lazy ``"module:Class"`` strings.

A plugin module is imported only when its name is used, so ``import
torchrl_render`` stays light (no av, PIL or mujoco). Third parties add entries
through the entry-point groups ``torchrl_render.writers`` and
``torchrl_render.backends`` (``name = "pkg.module:Class"``).

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
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from .errors import ConfigError, did_you_mean

__all__ = ["Entry", "Registry"]


@dataclass(frozen=True)
class Entry:
    """One registry row.

    Args:
        target: ``"module:Class"`` imported on first use.
        suffixes: File suffixes that select this entry (writers).
        needs_frames: Whether the writer consumes rendered frames.
        needs_steps: Whether a data writer reads each episode's stored steps (observations, actions).
        needs_state: Whether the writer consumes simulator states (``FrameBundle.state``).
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

    def load(self, name: str) -> Any:
        """Imports and returns the object behind ``name``."""
        entry = self.entry(name)
        module_name, _, attr = entry.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"{self.kind} {name!r} needs a package that is not installed ({exc})",
                fix="install the missing package", extra=entry.extra) from exc
        return getattr(module, attr)

    def for_suffix(self, path: str | Path) -> str | None:
        """The name whose suffix matches ``path`` (case-insensitive), if any."""
        self._plugins()
        suffix = Path(path).suffix.lower()
        for name, entry in self.table.items():
            if suffix and suffix in entry.suffixes:
                return name
        return None
