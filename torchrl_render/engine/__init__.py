"""The evaluation engine: episodes from 1 or K env slots, seeded as their ecosystem means it.

Two paths, chosen per run (recorded in the metadata's ``engine``):

* ``gymnasium``: an env that the factory returned as a gymnasium env is stepped directly, in
  numpy, as a plain gymnasium loop would (``env.reset(seed=seed + i)``, float64 rewards summed
  step by step); K slots live in this process (``serial``) or in worker processes
  (``parallel``), and the policy is called once per batch step (``policy_batch="batched"``) or
  once per env (``"per-env"``). Rendered episodes run first, one after another, in this process.
* ``torchrl``: torchrl envs of the user's (their transforms run in torchrl), dm_control tasks and
  recurrent TensorDict policies go through torchrl (``SerialEnv`` / ``ParallelEnv`` for K > 1).

Either way the engine yields :class:`StepRecord` s for the steps of rendered episodes and one
:class:`Episode` per finished episode, in episode order. It knows nothing of frames or files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .plan import EpisodePlan
from .records import Episode, StepRecord

__all__ = ["Engine", "Episode", "EpisodePlan", "StepRecord"]

#: Above this many seconds per env step, ``auto`` steps K envs in worker processes.
PARALLEL_STEP_S = 5e-4


@dataclass
class Engine:
    """One run's engine.

    Args:
        cfg: The run's :class:`~torchrl_render.RenderConfig`.
        env: The run's single torchrl env (its specs went to the policy factory).
        policy: The :class:`~torchrl_render.policies.PolicyRunner`.
        payload: The loaded checkpoint, for the factories of further envs.
        render_mode: The render_mode the env was built with.
        rendered: Episode indices that get step records (frames).
        keep: Store observations and actions (data writers, trajectories).
        reward_fn: Optional reward override (``reward_fn(transition) -> reward``).
        notes: The run's warnings.
    """

    cfg: Any
    env: Any
    policy: Any
    payload: Any = None
    render_mode: str | None = None
    rendered: range = range(0)
    keep: bool = True
    reward_fn: Any = None
    notes: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    _plan: EpisodePlan | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from ..envs import plain_gymnasium

        self.raw = plain_gymnasium(self.env)
        self.why_torchrl = _refusal(self.cfg, self.raw, self.policy)
        self.path = "torchrl" if self.why_torchrl else "gymnasium"
        self.info.update(path=self.path, num_envs=self.cfg.num_envs, policy_batch=self.cfg.policy_batch,
                         success_rule=self.cfg.success_rule)
        if self.why_torchrl:
            self.info["why_torchrl"] = self.why_torchrl

    @property
    def frames_in_workers(self) -> bool:
        """Whether frames are made inside torchrl env workers (torchrl path, K > 1)."""
        return self.path == "torchrl" and self.cfg.num_envs > 1

    def plan(self) -> EpisodePlan:
        """The run's episode plan: one per engine, shared by the slots that dispatch episodes and by the
        episode order that decides, once every earlier episode has finished, which are reported."""
        if self._plan is None:
            cfg = self.cfg
            self._plan = EpisodePlan(min_timesteps=cfg.eval_n_timesteps) if cfg.eval_n_timesteps is not None \
                else EpisodePlan(num_trajs=cfg.num_trajs)
        return self._plan

    def prepare(self) -> None:
        """Starts what the batch needs (env workers) ahead of the first step; :meth:`close` releases it."""
        if self.path == "gymnasium":
            from .gym_path import prepare

            prepare(self)

    def close(self) -> None:
        """Releases what :meth:`prepare` started and the run did not take; safe twice."""
        if self.path == "gymnasium":
            from .gym_path import release

            release(self)

    def episodes(self) -> Iterator[StepRecord | Episode]:
        """Step records of rendered episodes, and every finished episode, in episode order."""
        if self.path == "gymnasium":
            from .gym_path import run_gymnasium

            yield from _in_order(run_gymnasium(self), self.plan())
        else:
            from .torchrl_path import run_torchrl

            yield from _in_order(run_torchrl(self), self.plan())


def _refusal(cfg: Any, raw: Any, policy: Any) -> str | None:
    """Why the gymnasium path cannot run this env and policy (None: it can)."""
    if cfg.seed_mode == "torchrl":
        return "seed_mode='torchrl' (the env is seeded once with set_seed, as torchrl.render does)"
    if raw is None:
        return "the env is a torchrl env (its own transforms and specs run in torchrl)"
    from gymnasium import spaces

    from .slots import obs_layout

    if obs_layout(raw.observation_space) is None:
        return f"observation space {type(raw.observation_space).__name__} is not a Box or a flat Dict of Boxes"
    space = raw.action_space
    if not isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)) or \
            (isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim != 1):
        return f"action space {space} is not a Box, Discrete, 1-D MultiDiscrete or MultiBinary"
    if policy.recurrent:
        return "recurrent TensorDict policy (its state is carried by torchrl's primers)"
    if cfg.reward_key != "reward" or cfg.done_key != "done":
        return "custom reward_key/done_key (TensorDict keys of torchrl's step)"
    return None


def _in_order(items: Iterator[StepRecord | Episode], plan: EpisodePlan) -> Iterator[StepRecord | Episode]:
    """Episodes in index order (an episode waits for the ones before it); records pass at once.

    An episode is reported only if the plan keeps it, asked when it leaves in order: every earlier
    episode has finished by then, so an ``eval_n_timesteps`` cut is known. (With K envs an episode
    started past the cut can end before the one that reaches the budget; it is dropped here.)
    """
    waiting: dict[int, Episode] = {}
    expected = 0
    for item in items:
        if isinstance(item, StepRecord):
            yield item
            continue
        waiting[item.index] = item
        while expected in waiting:
            episode = waiting.pop(expected)
            expected += 1
            if plan.keeps(episode.index):
                yield episode
    for index in sorted(waiting):  # episodes past a cut, whose predecessors were discarded unfinished
        if plan.keeps(index):
            yield waiting.pop(index)
