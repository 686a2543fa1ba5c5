"""The :class:`Engine`: picks the run's path (gymnasium or torchrl) and yields its records in episode order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config import RenderConfig
from ..contracts import EnvSlots, Json, Payload, UserEnv
from ..envs import as_torchrl
from ..envs.unwrap import plain_gymnasium
from ..metrics.precision import PrecisionRule
from ..policies import PolicyRunner
from .env_slots import obs_layout
from .gym_loop import prepare, release, run_gymnasium
from .plan import EpisodePlan
from .records import Episode, StepRecord

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.envs import EnvBase

__all__ = ["Engine"]


@dataclass
class Engine:
    """One run's engine.

    Args:
        cfg: The run's :class:`~torchrl_render.RenderConfig`.
        env: The run's single torchrl env (its specs went to the policy factory).
        policy: The :class:`~torchrl_render.policies.PolicyRunner`.
        payload: The loaded checkpoint, for the factories of further envs.
        render_mode: The render_mode the env was built with.
        rendered: Episode indices that get step records (frames): a range, or a set of chosen episodes.
        keep: Store observations and actions (data writers, trajectories).
        infos: Also keep each step's env infos (``Episode.step_infos``), for a data writer that stores them.
        reward_fn: Optional reward override (``reward_fn(transition) -> reward``).
        notes: The run's warnings.
        info: The engine's facts for the metadata's ``engine`` entry (its path, batch mode, workers...).
        only: Run exactly these episode indices (each reset with ``seed + index``), not ``0..num_trajs-1``.
        batch_like: Rendered episodes call the policy on a batch of this many copies of their observation
            (the re-run of episodes that ran K at a time with one policy call per batch step), taking
            the row of ``batch_rows[index]`` (the slot the episode ran in; elementwise kernels treat rows
            at the batch's end apart, so the row matters to the last bit).
    """

    cfg: RenderConfig
    env: UserEnv
    policy: PolicyRunner
    payload: Payload = None
    render_mode: str | None = None
    rendered: range | frozenset[int] = range(0)
    keep: bool = True
    infos: bool = False
    reward_fn: Callable[[TensorDictBase], object] | None = None
    notes: list[str] = field(default_factory=list)
    info: dict[str, Json] = field(default_factory=dict)
    only: tuple[int, ...] | None = None
    batch_like: int | None = None
    batch_rows: dict[int, int] = field(default_factory=dict)
    #: The torchrl batch of K env workers (``ParallelEnv`` / ``SerialEnv``) the torchrl path steps when K > 1 and
    #: frames are made in the workers; set by the run, which owns and closes it.
    batched: EnvBase | None = field(default=None, init=False, repr=False)
    _plan: EpisodePlan | None = field(default=None, init=False, repr=False)
    #: The batch's slots and the envs they own, started ahead by :meth:`prepare` until the run takes them.
    _batch: tuple[EnvSlots, list[UserEnv]] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.raw = plain_gymnasium(self.env)
        self.why_torchrl = _refusal(self.cfg, self.raw, self.policy)
        self.path = "torchrl" if self.why_torchrl else "gymnasium"
        self.info.update(path=self.path, num_envs=self.cfg.num_envs, policy_batch=self.cfg.policy_batch,
                         success_rule=self.cfg.success_rule)
        if self.why_torchrl:
            self.info["why_torchrl"] = self.why_torchrl
            self.env = as_torchrl(self.env)  # a gymnasium env the torchrl path steps: its GymWrapper
            self.policy.env = self.env

    @property
    def batched_policy(self) -> int | None:
        """K when the run calls the policy once per batch step of K envs (else None): a re-run of its episodes
        calls it on a batch of K too."""
        cfg = self.cfg
        if cfg.num_envs < 2 or cfg.policy_batch != "batched" or self.policy.stateful:
            return None
        if self.path == "torchrl" and self.policy.samples:  # the torchrl path calls it env by env then
            return None
        return cfg.num_envs

    @property
    def frames_in_workers(self) -> bool:
        """Whether frames are made inside torchrl env workers (torchrl path, K > 1)."""
        return self.path == "torchrl" and self.cfg.num_envs > 1

    def plan(self) -> EpisodePlan:
        """The run's episode plan: one per engine, shared by the slots that dispatch episodes and by the
        episode order that decides, once every earlier episode has finished, which are reported."""
        if self._plan is None:
            cfg = self.cfg
            if self.only is not None:  # a re-run of chosen episodes
                self._plan = EpisodePlan(indices=self.only)
            elif cfg.eval_n_timesteps is not None:
                self._plan = EpisodePlan(min_timesteps=cfg.eval_n_timesteps)
            elif getattr(cfg, "precision", None) is not None:  # at most num_trajs, until the half-width is reached
                self._plan = EpisodePlan(num_trajs=cfg.num_trajs, stop=PrecisionRule.from_config(cfg))
            else:
                self._plan = EpisodePlan(num_trajs=cfg.num_trajs)
        return self._plan

    def prepare(self) -> None:
        """Starts what the batch needs (env workers) ahead of the first step; :meth:`close` releases it."""
        if self.path == "gymnasium":
            prepare(self)

    def close(self) -> None:
        """Releases what :meth:`prepare` started and the run did not take; safe twice."""
        if self.path == "gymnasium":
            release(self)

    def episodes(self) -> Iterator[StepRecord | Episode]:
        """Step records of rendered episodes, and every finished episode, in episode order."""
        if self.path == "gymnasium":
            yield from _in_order(run_gymnasium(self), self.plan())
        else:
            from .torchrl_loop import run_torchrl  # imports torchrl (its transforms): only on this path

            yield from _in_order(run_torchrl(self), self.plan())


def _refusal(cfg: RenderConfig, raw: UserEnv, policy: PolicyRunner) -> str | None:
    """Why the gymnasium path cannot run this env and policy (None: it can)."""
    if cfg.seed_mode == "torchrl":
        return "seed_mode='torchrl' (the env is seeded once with set_seed, as torchrl.render does)"
    if raw is None:
        return "the env is a torchrl env (its own transforms and specs run in torchrl)"
    from gymnasium import spaces  # a gymnasium env is running: the import is free here

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
    episode has finished by then, so an ``eval_n_timesteps`` or ``precision`` cut is known. (With K envs an episode
    started past the cut can end before the one that reaches the budget; it is dropped here.)
    """
    waiting: dict[int, Episode] = {}
    expected = plan.first()
    for item in items:
        if isinstance(item, StepRecord):
            yield item
            continue
        waiting[item.index] = item
        while expected in waiting:
            episode = waiting.pop(expected)
            expected = plan.successor(expected)
            if plan.keeps(episode.index):
                yield episode
    for index in sorted(waiting):  # episodes past a cut, whose predecessors were discarded unfinished
        if plan.keeps(index):
            yield waiting.pop(index)
