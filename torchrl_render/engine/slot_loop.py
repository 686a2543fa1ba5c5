"""The batched loop over numpy slots: one policy call per batch step, bookkeeping per batch.

Per step the loop does a fixed number of numpy operations over the active rows (returns,
lengths, flags, stored steps), whatever K is; Python work per row is the env's own
``step`` call and, for an episode that ends, its assembly. Steps are stored into ``[K, T]``
arrays allocated once (grown by doubling when an episode outlives them); an episode's
arrays and TensorDict are cut from them when it ends. A rendered episode also yields a
:class:`StepRecord` per step, for the frames.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike, NDArray

from ..contracts import ActFn, Array, BeginFn, EnvSlots
from ..errors import PolicyError, RenderError, RolloutError, UserPolicyError
from ..keys import NestedKey
from .env_slots import SlotError
from .plan import EpisodePlan
from .records import Episode, StepRecord

if TYPE_CHECKING:
    import torch
    from tensordict import TensorDict, TensorDictBase

__all__ = ["SlotLoop"]

_NONE = np.zeros(0, np.int64)


class SlotLoop:
    """Runs the plan's episodes on ``slots``.

    Args:
        slots: :class:`~torchrl_render.engine.env_slots.InProcessSlots` or ``ProcessSlots``.
        act: ``act(rows) -> actions [K, ...]`` (one batched policy call, or one per row).
        begin: ``begin(slot, seed)`` at every episode start (stateful policies, RNG streams).
        plan: The :class:`EpisodePlan` (shared between phases).
        seed: Base seed (episode ``i`` is reset with ``seed + i``), or None.
        max_steps: Cut an episode after this many steps (marked truncated).
        obs_key: The observation entry handed to data writers as ``observations``.
        keep: Store observations and actions (for trajectories and data writers).
        trajectories: Build each episode's TensorDict.
        reward_fn: ``reward_fn(transition TensorDict [n]) -> [n]`` summed into ``sum_reward_fn``.
        action_dtype: The env's action dtype (numpy).
        success_rule: ``"any"`` (success at some step) or ``"final"`` (the last step's report).
    """

    def __init__(self, slots: EnvSlots, act: ActFn, begin: BeginFn,
                 plan: EpisodePlan, *, seed: int | None, max_steps: int | None, obs_key: NestedKey, keep: bool,
                 trajectories: bool, reward_fn: Callable[[TensorDictBase], object] | None = None,
                 action_shape: tuple[int, ...] = (),
                 action_dtype: DTypeLike = np.float32, success_rule: str = "any") -> None:
        self.slots, self.act, self.begin, self.plan = slots, act, begin, plan
        self.final_success = success_rule == "final"
        self.seed, self.max_steps, self.obs_key = seed, max_steps, obs_key
        self.keep, self.trajectories, self.reward_fn = keep or trajectories, trajectories, reward_fn
        k = slots.num
        self.episode = np.full(k, -1, np.int64)
        self.t = np.zeros(k, np.int64)
        self.ret = np.zeros(k, np.float64)
        self.fn_ret = np.zeros(k, np.float64)
        self.succ = np.full(k, -1, np.int8)
        self.t0 = np.zeros(k, np.float64)
        cap = max_steps + 1 if max_steps is not None else 1001
        self.rew = np.zeros((k, cap), np.float64)
        self.term = np.zeros((k, cap), bool)
        self.trunc = np.zeros((k, cap), bool)
        self.obs = {key: np.zeros((k, cap, *buf.shape[1:]), buf.dtype) for key, buf in slots.obs.items()} \
            if self.keep else {}
        self.actions = np.zeros((k, cap, *action_shape), action_dtype) if self.keep else None
        # the env's success report at the reset and after each step (-1: none), for data writers' step infos
        self.step_succ = np.full((k, cap), -1, np.int8) if self.keep else None

    # -- the loop -------------------------------------------------------------------------------

    def run(self, rendered: range | frozenset[int] = range(0),
            below: int | None = None) -> Iterator[StepRecord | Episode]:
        """Yields finished episodes (completion order) and the step records of ``rendered`` episodes."""
        starts = self._assign(range(self.slots.num), below)
        yield from self._start(starts, rendered)
        rows = np.flatnonzero(self.episode >= 0)
        while rows.size:
            actions = self._act(rows)
            before = {k: v[rows].copy() for k, v in self.slots.obs.items()} if self.reward_fn else None
            self._step(rows, actions)
            ended = self._book_one(int(rows[0]), actions) if len(rows) == 1 and before is None else \
                self._book(rows, actions, before)
            if rendered:
                yield from self._records(rows, rendered)
            if ended.size:
                freed = ended.tolist()
                for i in ended.tolist():
                    if self.episode[i] < 0:  # discarded by an episode that ended on this same step
                        continue
                    episode, discard = self._finish(i)
                    if episode is not None:
                        yield episode
                    for index in discard:  # started past the cut: never stepped again
                        freed += np.flatnonzero(self.episode == index).tolist()
                        self.episode[self.episode == index] = -1
                starts = self._assign(sorted(set(freed)), below)
                yield from self._start(starts, rendered)
                rows = np.flatnonzero(self.episode >= 0)

    def _where(self, rows: NDArray[np.int64], step: int) -> str:
        episodes = [int(self.episode[i]) for i in np.asarray(rows).tolist()]
        if len(episodes) == 1:
            return f"at step {int(self.t[rows[0]]) + step} of episode {episodes[0]}"
        return f"at a step of episodes {episodes}"

    def _act(self, rows: NDArray[np.int64]) -> Array:
        try:
            return self.act(rows)
        except UserPolicyError as exc:  # the user's code raised; a bug of ours keeps its traceback
            raise PolicyError(f"the policy raised {self._where(rows, 1)}: {exc}",
                              fix="check that the policy accepts the env's observation (see --obs-key)") \
                from exc.__cause__

    def _step(self, rows: NDArray[np.int64], actions: Array) -> None:
        fix = "check the env's step(), or the action the policy produced"
        try:
            self.slots.step(rows.tolist(), actions)
        except RenderError:
            raise
        except SlotError as exc:  # the slot whose env raised: its episode and step, as with one env
            raise RolloutError(f"the env raised {self._where(np.array([exc.slot]), 1)}: {exc.error}",
                               fix=_with_trace(fix, exc)) from exc.__cause__
        except Exception as exc:
            raise RolloutError(f"the env raised {self._where(rows, 1)}: {type(exc).__name__}: {exc}", fix=fix) from exc

    def _reset(self, rows: list[int], seeds: list[int | None]) -> None:
        fix = "check the env factory and its reset()"
        try:
            self.slots.reset(rows, seeds)
        except RenderError:
            raise
        except SlotError as exc:
            raise RolloutError(f"the env raised while resetting episode {int(self.episode[exc.slot])}: {exc.error}",
                               fix=_with_trace(fix, exc)) from exc.__cause__
        except Exception as exc:
            episodes = [int(self.episode[i]) for i in rows]
            raise RolloutError(f"the env raised while resetting episode{'s' if len(rows) > 1 else ''} "
                               f"{episodes if len(rows) > 1 else episodes[0]}: {type(exc).__name__}: {exc}",
                               fix=fix) from exc

    def _book(self, rows: NDArray[np.int64], actions: Array,
              before: dict[NestedKey, Array] | None) -> NDArray[np.int64]:
        """The per-step bookkeeping, vectorised over the active rows; returns the rows that ended."""
        if len(rows) == 1 and self.reward_fn is None:
            return self._book_one(int(rows[0]), actions)
        s = self.slots
        self.t[rows] += 1
        t = self.t[rows]
        if t.max() >= self.rew.shape[1]:
            self._grow()
        reward = s.reward[rows]
        self.ret[rows] += reward
        self.rew[rows, t - 1] = reward
        term, trunc = s.terminated[rows], s.truncated[rows]
        self.term[rows, t - 1] = term
        self.trunc[rows, t - 1] = trunc
        if self.keep:
            assert self.actions is not None and self.step_succ is not None  # allocated when keep
            for key, store in self.obs.items():
                store[rows, t] = s.obs[key][rows]
            self.actions[rows, t - 1] = actions[rows]
            self.step_succ[rows, t] = s.success[rows]
        self.succ[rows] = s.success[rows] if self.final_success else np.maximum(self.succ[rows], s.success[rows])
        if self.reward_fn is not None:
            assert before is not None  # run() copies the observations before the step when there is a reward_fn
            self.fn_ret[rows] += self._reward_fn(self.reward_fn, rows, actions, before)
        ended = term | trunc
        if self.max_steps is not None:
            ended |= t >= self.max_steps
        return rows[ended]

    def _book_one(self, i: int, actions: Array) -> NDArray[np.int64]:
        """:meth:`_book` for a single active slot (one env): scalar stores, no fancy indexing."""
        s = self.slots
        t = int(self.t[i]) + 1
        self.t[i] = t
        if t >= self.rew.shape[1]:
            self._grow()
        reward, term, trunc = s.reward[i], s.terminated[i], s.truncated[i]
        self.ret[i] += reward
        self.rew[i, t - 1] = reward
        self.term[i, t - 1] = term
        self.trunc[i, t - 1] = trunc
        if self.keep:
            assert self.actions is not None and self.step_succ is not None  # allocated when keep
            for key, store in self.obs.items():
                store[i, t] = s.obs[key][i]
            self.actions[i, t - 1] = actions[i]
            self.step_succ[i, t] = s.success[i]
        if self.final_success or s.success[i] > self.succ[i]:  # -1: not reported at this step
            self.succ[i] = s.success[i]
        ended = term or trunc or (self.max_steps is not None and t >= self.max_steps)
        return np.array([i]) if ended else _NONE

    def _reward_fn(self, reward_fn: Callable[[TensorDictBase], object], rows: NDArray[np.int64], actions: Array,
                   before: dict[NestedKey, Array]) -> NDArray[np.float64]:
        import torch
        from tensordict import TensorDict

        n = len(rows)
        nxt = {k: torch.from_numpy(v[rows].copy()) for k, v in self.slots.obs.items()}
        nxt["reward"] = torch.from_numpy(self.slots.reward[rows].copy()).unsqueeze(-1)
        td = TensorDict({**{k: torch.from_numpy(v) for k, v in before.items()},
                         "action": torch.from_numpy(np.ascontiguousarray(actions[rows])), "next": nxt},
                        batch_size=[n])
        with torch.no_grad():
            out = reward_fn(td)
        return np.asarray(torch.as_tensor(out, dtype=torch.float64).reshape(n, -1).sum(-1))

    def _grow(self) -> None:
        def grow(a: Array) -> Array:
            return np.concatenate([a, np.zeros_like(a)], axis=1)

        self.rew, self.term, self.trunc = grow(self.rew), grow(self.term), grow(self.trunc)
        self.obs = {k: grow(v) for k, v in self.obs.items()}
        if self.actions is not None:
            self.actions = grow(self.actions)
            self.step_succ = np.concatenate([self.step_succ, np.full_like(self.step_succ, -1)], axis=1)

    def _assign(self, slots: Iterable[int], below: int | None) -> list[int]:
        started = []
        for i in slots:
            index = self.plan.next(below)
            self.episode[i] = -1 if index is None else index
            if index is not None:
                started.append(i)
        return started

    def _start(self, rows: list[int], rendered: range | frozenset[int]) -> Iterator[StepRecord]:
        if not rows:
            return
        seeds = [None if self.seed is None else self.seed + int(self.episode[i]) for i in rows]
        self._reset(rows, seeds)
        now = time.perf_counter()
        for i, seed in zip(rows, seeds):
            self.begin(i, seed)
        idx = np.asarray(rows)
        self.t[idx], self.ret[idx], self.fn_ret[idx], self.succ[idx], self.t0[idx] = 0, 0.0, 0.0, -1, now
        for key, store in self.obs.items():
            store[idx, 0] = self.slots.obs[key][idx]
        if self.keep:
            assert self.step_succ is not None  # allocated when keep
            self.step_succ[idx, 0] = self.slots.success[idx]
        if rendered:
            yield from self._records(idx, rendered)

    # -- episodes -------------------------------------------------------------------------------

    def _finish(self, i: int) -> tuple[Episode | None, list[int]]:
        """The episode that ended in slot ``i`` (None if the plan drops it), and the episodes to discard."""
        index, n = int(self.episode[i]), int(self.t[i])
        self.episode[i] = -1
        succ = int(self.succ[i])
        discard = self.plan.finished(index, n, float(self.ret[i]), None if succ < 0 else bool(succ))
        if not self.plan.keeps(index):
            return None, discard
        rewards, term, trunc = self.rew[i, :n].copy(), self.term[i, :n].copy(), self.trunc[i, :n].copy()
        if n and not (term[-1] or trunc[-1]):  # cut by max_steps: a time limit truncates it
            trunc[-1] = True
        ep = Episode(index, None if self.seed is None else self.seed + index, rewards, term | trunc, term, trunc,
                     sum_reward=float(self.ret[i]), success=None if succ < 0 else bool(succ),
                     wall_s=time.perf_counter() - float(self.t0[i]), slot=i)
        if self.reward_fn is not None:
            ep.sum_reward_fn = float(self.fn_ret[i])
        if self.keep:
            assert self.actions is not None and self.step_succ is not None  # allocated when keep
            obs: dict[NestedKey, Array] = {k: v[i, :n + 1].copy() for k, v in self.obs.items()}
            ep.observations = obs.get(self.obs_key)
            ep.actions = self.actions[i, :n].copy()
            ep.step_success = self.step_succ[i, :n + 1].copy()
            if self.slots.infos is not None:
                ep.step_infos = self.slots.take_infos(i)
            if self.trajectories:
                ep.trajectory = _trajectory(obs, ep.actions, ep)
        return ep, discard

    def _records(self, rows: NDArray[np.int64], rendered: range | frozenset[int]) -> Iterator[StepRecord]:
        for i in np.asarray(rows).tolist():
            index = int(self.episode[i])
            if index < 0 or index not in rendered:
                continue
            step = int(self.t[i])
            td = _state_td(self.slots, i)
            seed = None if self.seed is None else self.seed + index
            term, trunc = bool(self.slots.terminated[i]), bool(self.slots.truncated[i])
            cut = self.max_steps is not None and step >= self.max_steps
            yield StepRecord(index, step, td, None, seed, reward=float(self.slots.reward[i]) if step else 0.0,
                             done=(term or trunc or cut) if step else False, terminated=term and step > 0,
                             truncated=(trunc or (cut and not term)) and step > 0, wall=time.perf_counter(),
                             env=self.slots.env(i))


def _with_trace(fix: str, exc: SlotError) -> str:
    """The fix, and the last lines of the traceback of an env that raised in a worker process."""
    return f"{fix}; the worker's traceback: {exc.trace}" if exc.trace else fix


def _state_td(slots: EnvSlots, i: int) -> dict[NestedKey, torch.Tensor]:
    """Slot ``i``'s observation entries as tensors: the state view render backends read (a dict, so that a
    rendered gymnasium run needs no tensordict)."""
    import torch

    return {k: torch.from_numpy(v[i].copy()) for k, v in slots.obs.items()}


def _trajectory(obs: dict[NestedKey, Array], actions: Array, ep: Episode) -> TensorDict:
    """The episode as torchrl lays a rollout out: ``[T]`` transitions with a ``next`` entry."""
    import torch
    from tensordict import TensorDict

    n = ep.length
    col = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).reshape(n, 1))  # noqa: E731
    zeros = torch.zeros(n, 1, dtype=torch.bool)
    nxt = TensorDict(reward=col(ep.rewards), done=col(ep.dones), terminated=col(ep.terminated),
                     truncated=col(ep.truncated), batch_size=[n])
    root = TensorDict(action=torch.from_numpy(actions), done=zeros, terminated=zeros.clone(),
                      truncated=zeros.clone(), batch_size=[n])
    for key, values in obs.items():  # a key may be nested (a tuple), e.g. mujoco_qpos_key
        root.set(key, torch.from_numpy(values[:-1]))
        nxt.set(key, torch.from_numpy(values[1:]))
    root.set("next", nxt)
    return root
