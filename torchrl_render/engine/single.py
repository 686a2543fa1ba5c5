"""One torchrl env stepped with the policy, a step record per step; knows nothing of frames.

The engine's path for envs that are torchrl envs of the user's, dm_control tasks and
recurrent TensorDict policies (gymnasium envs take the batched numpy path, ``slot_loop.py``).
Trajectory ``i`` is seeded ``seed + i``, or the env once as torchrl.render does (see :mod:`.seeding`).
Step 0 is the state after reset;
step ``t > 0`` is the state after the ``t``-th action, so a trajectory of ``n`` steps yields
``n + 1`` records (and a video of it has ``n + 1`` frames). A step cut by ``max_steps`` is
marked truncated and done, in its record and in its transition (``("next", "truncated")`` and the
done key set, as torchrl's ``StepCounter`` marks them).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING

from ..contracts import UserEnv
from ..envs.unwrap import underlying_env
from ..errors import PolicyError, RenderError, RolloutError, UserPolicyError
from ..keys import NestedKey
from ..policies import PolicyRunner
from .records import StepRecord
from .seeding import episode_seed, reseed_for_reset, seed_once

if TYPE_CHECKING:
    from tensordict import TensorDictBase

__all__ = ["act", "flag", "rollout"]


def flag(td: TensorDictBase, key: NestedKey) -> bool:
    """Whether any entry of ``td[key]`` is set (False when the key is absent); read in numpy on the CPU
    (1 us, where torch's ``any`` takes 3: three flags a step)."""
    value = td.get(key, None)
    if value is None:
        return False
    return bool(value.numpy().any()) if value.device.type == "cpu" else bool(value.any())


def rollout(env: UserEnv, policy: PolicyRunner, *, trajectories: Iterable[int], max_steps: int | None,
            seed: int | None, done_key: NestedKey = "done", reward_key: NestedKey = "reward",
            seed_mode: str = "per-episode", batch_like: int | None = None,
            batch_rows: dict[int, int] | None = None) -> Iterator[StepRecord]:
    """Rolls ``policy`` out in ``env`` for each trajectory index, one step at a time.

    ``batch_like``: the re-run of episodes that ran in a batch of that many envs with one policy call a batch
    step; each step calls the policy on that many copies of the step and takes the row its episode ran in
    (``batch_rows[index]``), as the first pass's call did.
    """
    raw = underlying_env(env)
    seed_once(env, seed_mode, seed)
    marks = _StepCounterMarks(env, max_steps, done_key)
    advance = _Advance()
    call = act if not batch_like else partial(_act_in_row, batch_like, batch_rows or {})
    for traj in trajectories:
        traj_seed = episode_seed(seed_mode, seed, traj)
        td = marks.reset(_reset(env, raw, traj, traj_seed))
        begin = getattr(policy, "begin_episode", None)
        if begin is not None:
            begin(traj_seed)
        yield StepRecord(traj, 0, td, None, traj_seed, wall=time.perf_counter(), env=env)
        step = 0
        while max_steps is None or step < max_steps:
            step += 1
            td = _step(env, call(policy, td, traj, step), traj, step)
            nxt = td.get("next")
            reward = nxt.get(reward_key, None)
            done, cut = flag(nxt, done_key), step == max_steps
            marks.step(nxt, step, cut and not done)
            record = StepRecord(
                traj, step, nxt, td, traj_seed,
                reward=float(reward.sum()) if reward is not None else 0.0,
                done=done or cut, terminated=flag(nxt, "terminated"),
                truncated=flag(nxt, "truncated") or (cut and not done), wall=time.perf_counter(), env=env)
            yield record
            if record.done:
                break
            td = advance(td)


def _reset(env: UserEnv, raw: UserEnv, traj: int, traj_seed: int | None) -> TensorDictBase:
    try:
        reseed_for_reset(env, raw, traj_seed)
        return env.reset()
    except RenderError:
        raise
    except Exception as exc:
        raise RolloutError(f"the env raised while resetting episode {traj}: {type(exc).__name__}: {exc}",
                           fix="check the env factory and its reset()") from exc


def _step(env: UserEnv, td: TensorDictBase, traj: int, step: int) -> TensorDictBase:
    try:
        return env.step(td)
    except RenderError:
        raise
    except Exception as exc:
        raise RolloutError(f"the env raised at step {step} of episode {traj}: {type(exc).__name__}: {exc}",
                           fix="check the env's step(), or the action the policy produced") from exc


class _Advance:
    """``step_mdp(td, keep_other=True)``: the next step's input, from the step's ``"next"`` entries and the
    root's other entries, without ``"reward"`` and ``"action"``.

    torchrl's function walks every key at every step (19 us for a MuJoCo task's TensorDict); here the keys
    are sorted out at the first step and each later step with the same keys only moves the entries (4 us).
    A TensorDict holding nested TensorDicts (which ``step_mdp`` copies, its keys excluded inside them) or a
    lazy stack takes torchrl's function, as does a step whose keys differ from the first's.
    """

    _EXCLUDED = ("reward", "action")

    def __init__(self) -> None:
        self.seen: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # the root's and next's keys
        self.from_next: list[str] = []
        self.from_root: list[str] = []
        self.flat = False

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        nxt = td.get("next")
        seen = (tuple(td.keys()), tuple(nxt.keys()))
        if seen != self.seen:
            self._plan(td, nxt, seen)
        if not self.flat:
            from torchrl.envs.utils import step_mdp

            return step_mdp(td, keep_other=True)
        out = nxt.select(*self.from_next)
        for key in self.from_root:
            out.set(key, td.get(key))
        return out

    def _plan(self, td: TensorDictBase, nxt: TensorDictBase, seen: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
        from tensordict import TensorDict, is_tensor_collection

        self.seen = seen
        root, following = seen
        self.flat = type(td) is TensorDict and type(nxt) is TensorDict and not any(
            is_tensor_collection(v) for part in (td, nxt) for k, v in part.items() if k != "next")
        self.from_next = [k for k in following if k not in self._EXCLUDED]
        self.from_root = [k for k in root if k != "next" and k not in self._EXCLUDED and k not in following]


class _StepCounterMarks:
    """With ``max_steps``, what torchrl's ``StepCounter`` writes (torchrl.render appends one): ``step_count``
    at every step, and ``("next", "truncated")`` with the done key set at the step cut by ``max_steps``. An env
    without a ``truncated`` entry gets it at every step (False until the cut), so the steps stack."""

    def __init__(self, env: UserEnv, max_steps: int | None, done_key: NestedKey) -> None:
        self.done_key = done_key
        self.truncated = max_steps is not None and "truncated" not in env.full_done_spec.keys()
        self.count = max_steps is not None and "step_count" not in env.full_observation_spec.keys()

    def reset(self, td: TensorDictBase) -> TensorDictBase:
        if self.truncated:
            self._set(td, "truncated", False)
        if self.count:
            self._set(td, "step_count", 0)
        return td

    def step(self, nxt: TensorDictBase, step: int, cut: bool) -> None:
        if self.truncated:
            self._set(nxt, "truncated", False)
        if self.count:
            self._set(nxt, "step_count", step)
        if cut:
            self._set(nxt, "truncated", True)
            self._set(nxt, self.done_key, True)

    def _set(self, td: TensorDictBase, key: NestedKey, value: bool | int) -> None:
        """``value`` shaped as the done entry (bool flags; ``step_count`` int64, as ``StepCounter``'s)."""
        import torch

        like = td.get(self.done_key, None)
        shape = like.shape if like is not None else torch.Size([*td.batch_size, 1])
        dtype = torch.bool if isinstance(value, bool) else torch.int64
        td.set(key, torch.full(shape, value, dtype=dtype, device=td.device))


def _act_in_row(k: int, rows: dict[int, int], policy: PolicyRunner, td: TensorDictBase, traj: int,
                step: int) -> TensorDictBase:
    """:func:`act` on a ``[k]`` batch of copies of ``td`` (contiguous, as a batch of K envs is); what the policy
    wrote in the row of episode ``traj`` goes into ``td``."""
    batch = act(policy, td.expand(k).clone(), traj, step)
    td.update(batch[rows.get(traj, 0)])
    return td


def act(policy: PolicyRunner, td: TensorDictBase, traj: int, step: int) -> TensorDictBase:
    """``policy(td)``; an exception of the user's policy becomes a :class:`PolicyError` naming the step."""
    try:
        out = policy(td)
    except UserPolicyError as exc:  # the user's code raised; a bug of ours keeps its traceback
        raise PolicyError(f"the policy raised at step {step} of episode {traj}: {exc}",
                          fix="check that the policy accepts the env's observation (see --obs-key)") from exc.__cause__
    return out if out is not None else td

