"""Which episodes run: exactly ``num_trajs``, whole episodes until ``min_timesteps`` steps, or at most
``num_trajs`` until a ``stop`` rule says enough.

Episodes are dispatched in index order (a freed slot takes the next index), so the episodes
reported never depend on the number of envs. With ``min_timesteps`` (imitation's
``eval_n_timesteps``) the reported episodes are ``0..n-1`` for the smallest ``n`` whose lengths sum
to at least ``min_timesteps``; episodes started past ``n`` are discarded, and their slots stop.
A ``stop`` rule (``--precision``: :class:`~torchrl_render.metrics.precision.PrecisionRule`) cuts the same
way: it is handed episodes ``0, 1, ...`` in that order, each once every one before it has finished, and
the reported episodes are ``0..n-1`` for the first ``n`` at which it says stop (at most ``num_trajs``).

Example:
    >>> plan = EpisodePlan(min_timesteps=10)
    >>> [plan.next(), plan.next()]
    [0, 1]
    >>> plan.finished(1, 6), plan.finished(0, 5), plan.next(), plan.keeps(1)
    ([], [], None, True)

    A stop rule has ``add(index, sum_reward, success) -> bool`` (here: stop once two returns sum to 10):

    >>> class Enough:
    ...     total = 0.0
    ...     def add(self, index, sum_reward, success):
    ...         self.total += sum_reward
    ...         return self.total >= 10
    >>> plan = EpisodePlan(num_trajs=100, stop=Enough())
    >>> [plan.next() for _ in range(3)], plan.finished(2, 9, 9.0), plan.finished(0, 4, 4.0)
    ([0, 1, 2], [], [])
    >>> plan.finished(1, 6, 6.0), plan.keeps(1), plan.keeps(2), plan.next()
    ([], True, False, None)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..metrics.precision import PrecisionRule

__all__ = ["EpisodePlan"]


class EpisodePlan:
    """Dispatches episode indices (see the module docstring); ``indices``: exactly these episodes, in
    increasing order (the re-run of chosen episodes, each seeded as in the run that chose them).

    Example:
        >>> plan = EpisodePlan(indices=[7, 2])
        >>> [plan.next(), plan.next(), plan.next()], plan.keeps(7), plan.keeps(3), plan.successor(2)
        ([2, 7, None], True, False, 7)
    """

    def __init__(self, num_trajs: int | None = None, min_timesteps: int | None = None,
                 indices: Iterable[int] | None = None, stop: PrecisionRule | None = None) -> None:
        self.order = sorted(set(indices)) if indices is not None else None
        if self.order is not None:
            num_trajs = len(self.order)
        if (num_trajs is None) == (min_timesteps is None):
            raise ValueError("exactly one of num_trajs and min_timesteps")
        if stop is not None and (num_trajs is None or self.order is not None):
            raise ValueError("a stop rule takes num_trajs (its cap)")
        self.num_trajs, self.min_timesteps, self.stop = num_trajs, min_timesteps, stop
        self.issued = 0
        self.lengths: dict[int, int] = {}
        self.values: dict[int, tuple[float | None, bool | None]] = {}  # what the stop rule reads, until it reads it
        self.prefix, self.total = 0, 0
        self.cutoff: int | None = num_trajs
        self.decided = min_timesteps is None and stop is None  # whether the cut is final

    def next(self, below: int | None = None) -> int | None:
        """The next episode to start (``None``: no more; ``below`` caps the index, for a first phase)."""
        if self.order is not None:
            if self.issued >= len(self.order) or (below is not None and self.order[self.issued] >= below):
                return None
            self.issued += 1
            return self.order[self.issued - 1]
        limit = self.cutoff if below is None else min(below, self.cutoff if self.cutoff is not None else below)
        if limit is not None and self.issued >= limit:
            return None
        self.issued += 1
        return self.issued - 1

    def first(self) -> int:
        """The first episode index the plan reports."""
        return self.order[0] if self.order else 0

    def successor(self, index: int) -> int:
        """The episode reported after ``index``."""
        if self.order is None:
            return index + 1
        position = self.order.index(index) + 1
        return self.order[position] if position < len(self.order) else index + 1

    def more(self) -> bool:
        """Whether :meth:`next` would issue another episode."""
        return self.cutoff is None or self.issued < self.cutoff

    def finished(self, index: int, length: int, sum_reward: float | None = None,
                 success: bool | None = None) -> list[int]:
        """Notes a finished episode (its length, return and success); returns the started episodes that are no
        longer needed. The cut is decided on the prefix ``0..n-1`` only, whatever finished after it."""
        self.lengths[index] = length
        if self.decided:
            return []
        if self.stop is not None:
            self.values[index] = (sum_reward, success)
        while self.prefix in self.lengths and not self.decided:
            i = self.prefix
            self.total += self.lengths[i]
            self.prefix += 1
            if self.stop is not None:
                assert self.num_trajs is not None  # __init__ refuses a stop rule without num_trajs
                self.decided = self.stop.add(i, *self.values.pop(i)) or self.prefix >= self.num_trajs
            else:
                assert self.min_timesteps is not None  # undecided without a stop rule: min_timesteps was given
                self.decided = self.total >= self.min_timesteps
            if self.decided:
                self.cutoff = self.prefix
                return [j for j in range(self.cutoff, self.issued) if j not in self.lengths]
        return []

    def keeps(self, index: int) -> bool:
        """Whether a finished episode is reported (final once every episode before it has finished)."""
        if self.order is not None:
            return index in self.order
        return index >= 0 and (self.cutoff is None or index < self.cutoff)
