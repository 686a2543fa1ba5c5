"""The step infos a Minari dataset stores: one array per info entry, ``n + 1`` long (the reset's and each step's).

Minari keeps an episode's infos as the stacked values of each key, and both of its storages need the same
keys, shapes and dtypes at every step (its arrow storage writes them as one column of the episode's table).
Envs do not promise that: MuJoCo's locomotion envs report ``x_position`` at the reset but ``reward_ctrl``
only after a step, ``RecordEpisodeStatistics`` adds ``episode`` at the last step, a goal env reports
``is_success`` from its first step. So the dataset's first episode fixes the entries (every key that
held a number, a bool or a numeric array at one of its steps, with the shape and dtype of its first value),
and every step of every episode is stored against them: where a step's info lacks an entry (or holds it
in another shape), the stored value is a fill, NaN for a float entry, 0 for an integer one and False for
a bool one, and the entry's fills are counted (the dataset's metadata and the run's notes say how
many). Entries that are not numbers (text, objects) and keys that first appear after the first episode
are not stored, and named; so is an entry that one step holds as a value and another as a dict of entries
(its first form is stored). The engine's success report is stored as ``success`` where the env's own
infos have no such key (e.g. it reports ``is_success``).

Example:
    >>> import numpy as np
    >>> columns = InfoColumns()
    >>> out = columns.stack([{"x": 0.0}, {"x": 1.0, "r": np.float32(2)}, {"x": 2.0, "r": np.float32(3), "s": "hi"}])
    >>> out["x"].tolist(), out["r"].tolist(), columns.filled, columns.dropped
    ([0.0, 1.0, 2.0], [nan, 2.0, 3.0], {'r': 1}, ['s'])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import numpy as np

from ..contracts import Array

__all__ = ["InfoColumns", "InfoTree"]

Path = tuple[str, ...]
#: Minari's infos of one episode: a ``(n + 1, ...)`` array per entry, nested as the env's info dicts nest.
InfoTree: TypeAlias = "dict[str, Array | InfoTree]"
#: The dtype of a stored entry: a bool, integer or float one (:func:`_numeric`).
NumericDtype: TypeAlias = "np.dtype[np.generic[bool | int | float]]"


class InfoColumns:
    """The info entries of one dataset (fixed by its first episode) and what did not fit them."""

    def __init__(self) -> None:
        #: ``{path: (shape, dtype)}`` of the stored entries; None until the first episode
        self.layout: dict[Path, tuple[tuple[int, ...], NumericDtype]] | None = None
        self._filled: dict[Path, int] = {}
        self._dropped: set[Path] = set()

    @property
    def filled(self) -> dict[str, int]:
        """``{entry: steps that held a fill}`` (entries named ``a/b`` when nested)."""
        return {"/".join(p): n for p, n in sorted(self._filled.items())}

    @property
    def dropped(self) -> list[str]:
        """The entries not stored: not numbers, or first seen after the first episode."""
        return sorted("/".join(p) for p in self._dropped)

    def stack(self, infos: list[dict[str, object]], success: Array | None = None) -> InfoTree:
        """One episode's ``n + 1`` info dicts as Minari's nested dict of ``(n + 1, ...)`` arrays.

        ``success``: the engine's per-step report (1/0; -1: none), stored as ``success`` unless an info has it.
        """
        flat = [_flatten(info) for info in infos]
        if success is not None and (np.asarray(success) >= 0).any() and not any(("success",) in f for f in flat):
            for f, report in zip(flat, np.asarray(success).tolist()):
                if report >= 0:
                    f[("success",)] = report == 1
        if self.layout is None:
            self.layout = {}
            for f in flat:
                for path, value in f.items():
                    if path not in self.layout and path not in self._dropped:
                        array = _numeric(value)
                        if array is None or _nests(path, self.layout):
                            self._dropped.add(path)
                        else:
                            self.layout[path] = (array.shape, array.dtype)
        for f in flat:
            self._dropped.update(p for p in f if p not in self.layout)
        columns: dict[Path, Array] = {}
        for path, (shape, dtype) in self.layout.items():
            column = np.full((len(flat), *shape), _fill(dtype), dtype)
            for t, f in enumerate(flat):
                array = _numeric(f.get(path))
                if array is not None and array.shape == shape and np.can_cast(array.dtype, dtype, "same_kind"):
                    column[t] = array
                else:
                    self._filled[path] = self._filled.get(path, 0) + 1
            columns[path] = column
        return _nest(columns)


def _flatten(info: Mapping[str, object], prefix: Path = ()) -> dict[Path, object]:
    out: dict[Path, object] = {}
    for key, value in info.items():
        if isinstance(value, dict):
            out.update(_flatten(value, (*prefix, str(key))))
        else:
            out[(*prefix, str(key))] = value
    return out


def _nests(path: Path, layout: Mapping[Path, object]) -> bool:
    """Whether ``path`` is inside a stored entry or holds one (an entry that is a value at one step, a dict at
    another): Minari's nested infos cannot hold both."""
    return any(p[:len(path)] == path or path[:len(p)] == p for p in layout)


def _numeric(value: object) -> Array | None:
    """The value as a bool, integer or float array; None for what is not one (text, objects, None)."""
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        array = np.asarray(value)
    except Exception:  # an object numpy cannot read as an array
        return None
    return array if array.dtype.kind in "biuf" else None


def _fill(dtype: NumericDtype) -> float:
    return np.nan if dtype.kind == "f" else 0


def _nest(columns: dict[Path, Array]) -> InfoTree:
    out: InfoTree = {}
    for path, column in columns.items():
        node = out
        for part in path[:-1]:
            child = node.setdefault(part, {})
            assert isinstance(child, dict)  # no stored entry holds another (stack drops such entries: _nests)
            node = child
        node[path[-1]] = column
    return out
