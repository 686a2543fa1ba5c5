"""Stepping env(s) with the policy. Yields per-step records; knows nothing of frames.

Trajectory ``i`` is seeded ``seed + i``. Step 0 is the state after reset; step
``t > 0`` is the state after the ``t``-th action, so a trajectory of ``n`` steps
yields ``n + 1`` records (and a video of it has ``n + 1`` frames).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import PolicyError, RenderError, RolloutError

__all__ = ["StepRecord", "rollout"]


@dataclass
class StepRecord:
    """One step of one trajectory.

    Args:
        trajectory: Episode index (0-based).
        step: 0 after reset, ``t`` after the ``t``-th action.
        td: The state view: the reset TensorDict at step 0, ``transition["next"]`` after.
        transition: The full transition (observation, action, ``next``); ``None`` at step 0.
        seed: The seed this trajectory was reset with.
        reward: Scalar reward of this step (0.0 at step 0).
        done / terminated / truncated: End flags after this step.
        wall: ``time.perf_counter()`` when the record was made.
        frames: Frames already captured (by an env worker), else ``None``.
        env: The env that made this record (single-env rollouts), for readers of its simulator state.
    """

    trajectory: int
    step: int
    td: Any
    transition: Any | None
    seed: int | None
    reward: float = 0.0
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    wall: float = 0.0
    frames: dict[str, Any] | None = None
    env: Any = None


def _flag(td: Any, key: Any) -> bool:
    value = td.get(key, None)
    return bool(value.any()) if value is not None else False


def rollout(env: Any, policy: Any, *, trajectories: Iterable[int], max_steps: int | None,
            seed: int | None, done_key: Any = "done", reward_key: Any = "reward") -> Iterator[StepRecord]:
    """Rolls ``policy`` out in ``env`` for each trajectory index, one step at a time."""
    from torchrl.envs.utils import step_mdp

    for traj in trajectories:
        traj_seed = None if seed is None else seed + traj
        try:
            if traj_seed is not None:
                env.set_seed(traj_seed)
            td = env.reset()
        except RenderError:
            raise
        except Exception as exc:
            raise RolloutError(f"the env raised while resetting episode {traj}: {type(exc).__name__}: {exc}",
                               fix="check the env factory and its reset()") from exc
        begin = getattr(policy, "begin_episode", None)
        if begin is not None:
            begin(traj_seed)
        yield StepRecord(traj, 0, td, None, traj_seed, wall=time.perf_counter(), env=env)
        step = 0
        while max_steps is None or step < max_steps:
            step += 1
            td = _act(policy, td, traj, step)
            try:
                td = env.step(td)
            except RenderError:
                raise
            except Exception as exc:
                raise RolloutError(f"the env raised at step {step} of episode {traj}: {type(exc).__name__}: {exc}",
                                   fix="check the env's step(), or the action the policy produced") from exc
            nxt = td.get("next")
            reward = nxt.get(reward_key, None)
            record = StepRecord(
                traj, step, nxt, td, traj_seed,
                reward=float(reward.sum()) if reward is not None else 0.0,
                done=_flag(nxt, done_key), terminated=_flag(nxt, "terminated"),
                truncated=_flag(nxt, "truncated"), wall=time.perf_counter(), env=env)
            yield record
            if record.done:
                break
            td = step_mdp(td, keep_other=True)


def _act(policy: Any, td: Any, traj: int, step: int) -> Any:
    from .policies import UserPolicyError

    try:
        out = policy(td)
    except UserPolicyError as exc:  # the user's code raised; a bug of ours keeps its traceback
        raise PolicyError(f"the policy raised at step {step} of episode {traj}: {exc}",
                          fix="check that the policy accepts the env's observation (see --obs-key)") from exc.__cause__
    return out if out is not None else td

