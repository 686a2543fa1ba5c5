"""The torchrl path: one torchrl env (``single.py``) or K of them (``workers.py``), records per step.

Imports torchrl (through ``workers.py``): loaded only when the engine takes this path.

Each episode's step records are gathered into an :class:`Episode` when it ends (its
transitions stacked into one TensorDict): this path keeps a TensorDict per step, which is what
torchrl's own envs produce; the gymnasium path avoids them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..config import RenderConfig
from ..contracts import Array, StepView
from ..envs.mujoco_state import LiveStates
from ..keys import NestedKey
from ..metrics import read_success, step_success
from .plan import EpisodePlan
from .records import Episode, StepRecord
from .single import rollout
from .workers import EpisodeOrderer, vector_rollout

if TYPE_CHECKING:
    from tensordict import TensorDictBase

    from .engine import Engine

__all__ = ["run_torchrl"]

#: Our own entries in a step TensorDict: never handed out in trajectories.
INTERNAL_KEYS = ("success_reported",)


def run_torchrl(engine: Engine) -> Iterator[StepRecord | Episode]:
    cfg = engine.cfg
    plan = engine.plan()
    episodes = iter(plan.next, None)
    if cfg.num_envs == 1:
        records = rollout(engine.env, engine.policy, trajectories=episodes, max_steps=cfg.max_steps, seed=cfg.seed,
                          done_key=cfg.done_key, reward_key=cfg.reward_key, seed_mode=cfg.seed_mode,
                          batch_like=engine.batch_like, batch_rows=engine.batch_rows)
        yield from _gather(engine, plan, records)
        return
    orderer = EpisodeOrderer(cfg.max_steps)
    try:
        records = (r for record in vector_rollout(engine.batched, engine.policy, episodes=episodes,
                                                  max_steps=cfg.max_steps, seed=cfg.seed, rendered=engine.rendered,
                                                  done_key=cfg.done_key, reward_key=cfg.reward_key)
                   for r in orderer.push(record))
        yield from _gather(engine, plan, records)
    finally:
        orderer.close()


class _Gathered:
    """The steps of one episode so far."""

    def __init__(self, record: StepRecord) -> None:
        self.index, self.seed, self.t0, self.slot = record.trajectory, record.seed, record.wall, record.slot
        self.first = record.td
        self.steps: list[TensorDictBase] = []  # each step's transition, stacked into the episode's
        self.rewards: list[float] = []
        self.flags: list[tuple[bool, bool, bool]] = []
        self.total = 0.0
        self.fn_total = 0.0
        self.success: bool | None = None


def _gather(engine: Engine, plan: EpisodePlan, records: Iterator[StepRecord]) -> Iterator[StepRecord | Episode]:
    current: dict[int, _Gathered] = {}
    qpos = None
    keep_steps = bool(engine.keep or engine.cfg.trajectories)  # the episode's stacked transitions are read
    if getattr(engine.cfg, "mujoco_qpos_key", None) is not None:  # qpos with every step
        qpos = LiveStates(engine.cfg, False)
    for record in records:
        yield record
        if record.step == 0:
            current[record.trajectory] = _Gathered(record)
            if qpos is not None:
                qpos.step(record, None, 0.0, False)
            continue
        g = current[record.trajectory]
        g.total += record.reward
        g.rewards.append(record.reward)
        g.flags.append((record.done, record.terminated, record.truncated))
        g.success = step_success(engine.cfg.success_rule, g.success, read_success(record.td))
        # the transition as handed out, for what reads it: a metrics-only run never builds it (its exclude
        # and the episode's stack were a fifth of a MuJoCo step's time)
        step = _strip(engine.cfg, record.transition) if keep_steps or qpos is not None or \
            engine.reward_fn is not None else None
        if qpos is not None:
            qpos.step(record, step, 0.0, False)
        if engine.reward_fn is not None:
            g.fn_total += _reward_fn(engine.reward_fn, step)
        if keep_steps:
            g.steps.append(step)
        if record.done:
            del current[record.trajectory]
            plan.finished(g.index, len(g.rewards), g.total, g.success)
            if plan.keeps(g.index):
                yield _episode(engine, g, record.wall)


def _episode(engine: Engine, g: _Gathered, wall: float) -> Episode:
    import torch

    cfg = engine.cfg
    flags = np.asarray(g.flags, dtype=bool).reshape(-1, 3)
    traj = _without_internal(torch.stack(g.steps)) if g.steps else None
    ep = Episode(g.index, g.seed, np.asarray(g.rewards, np.float64), flags[:, 0], flags[:, 1], flags[:, 2],
                 sum_reward=g.total, success=g.success, wall_s=wall - g.t0, slot=g.slot)
    if engine.reward_fn is not None:
        ep.sum_reward_fn = g.fn_total
    if traj is not None and engine.keep:
        obs = traj.get(cfg.obs_key, None)
        if obs is not None:
            last = traj.get(("next", *_tuple(cfg.obs_key)))[-1:]
            ep.observations = torch.cat([obs, last]).detach().cpu().numpy()
        action = traj.get(cfg.action_key, None)
        ep.actions = action.detach().cpu().numpy() if action is not None else None
        if engine.infos:
            ep.step_infos = _step_infos(cfg, g.first, traj, _own_keys(engine))
    if cfg.trajectories:
        ep.trajectory = traj
    return ep


def _own_keys(engine: Engine) -> tuple[str, ...]:
    """Entries this path writes into the env's TensorDicts itself: ``step_count`` with ``max_steps``, unless the
    env counts its steps (see ``single.py``)."""
    env = getattr(engine, "batched", None) or engine.env
    try:
        counted = "step_count" in env.full_observation_spec.keys()
    except Exception:  # an env without specs: nothing of ours to tell apart
        return ()
    return () if counted else ("step_count",)


def _step_infos(cfg: RenderConfig, first: StepView, traj: TensorDictBase,
                own: tuple[str, ...] = ()) -> list[dict[str, object]]:
    """A torchrl env's step infos: the tensor entries of each step's ``next`` beyond the recorded observation,
    the reward and the flags (what an env's info reader, or the env itself, adds), as ``T + 1`` dicts of arrays
    (the reset's first: the reset TensorDict's entries of those keys, where it has them). ``own``: entries this
    path wrote itself, left out."""
    nxt = traj.get("next")
    skip = {_tuple(k) for k in (cfg.obs_key, cfg.reward_key, cfg.done_key, cfg.pixel_key, "terminated", "truncated",
                                "done", *INTERNAL_KEYS, *own)}
    qpos_key = getattr(cfg, "mujoco_qpos_key", None)
    if qpos_key is not None:
        skip.add(_tuple(qpos_key))
    keys = [k for k in nxt.keys(True, True) if _tuple(k) not in skip and _tuple(k)[0] != "next"
            and hasattr(nxt.get(k), "numpy")]
    values = {k: nxt.get(k).detach().cpu().numpy() for k in keys}
    reset = first if hasattr(first, "get") else {}
    out = [_nested({k: _array(reset.get(k, None)) for k in keys if _array(reset.get(k, None)) is not None})]
    out += [_nested({k: v[t] for k, v in values.items()}) for t in range(len(traj))]
    return out


def _array(value: object) -> Array | None:
    """A tensor's values as a numpy array (None for what is not a tensor)."""
    return value.detach().cpu().numpy() if hasattr(value, "detach") else None


def _nested(flat: Mapping[NestedKey, object]) -> dict[str, object]:
    """``{("a", "b"): x}`` as ``{"a": {"b": x}}``, as an env's nested info dict is."""
    out: dict[str, object] = {}
    for key, value in flat.items():
        path = _tuple(key)
        node = out
        for part in path[:-1]:
            child = node.setdefault(part, {})
            assert isinstance(child, dict)  # a TensorDict's key is never both a leaf and the parent of another
            node = child
        node[path[-1]] = value
    return out


def _tuple(key: NestedKey) -> tuple[str, ...]:
    return key if isinstance(key, tuple) else (key,)


def _strip(cfg: RenderConfig, transition: TensorDictBase) -> TensorDictBase:
    """The transition as handed out: no pixels unless asked."""
    if cfg.keep_pixels:
        return transition
    return transition.exclude(cfg.pixel_key, ("next", *_tuple(cfg.pixel_key)))


def _without_internal(traj: TensorDictBase) -> TensorDictBase:
    """Drops our success bookkeeping: ``success`` stays only where the env reported it."""
    reported = traj.get(("next", "success_reported"), None)
    if reported is not None and not bool(reported.any()):
        traj = traj.exclude("success", ("next", "success"))
    return traj.exclude(*INTERNAL_KEYS, *[("next", k) for k in INTERNAL_KEYS])


def _reward_fn(fn: Callable[[TensorDictBase], object], transition: TensorDictBase | None) -> float:
    import torch

    with torch.no_grad():
        return float(torch.as_tensor(fn(transition), dtype=torch.float64).sum())
