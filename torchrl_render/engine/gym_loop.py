"""The gymnasium path: the env stepped directly, in numpy; K slots in-process or in workers.

Rendered episodes come first, on the run's own env (the render backends were built on it), with
one policy call per step exactly as a one-env run makes; the other episodes are dispatched over
K slots. ``env_batch_mode="auto"`` times a few steps of an env built for that alone (never one of
the run's) and uses worker processes (shared-memory slots, the policy batched here) when there is
more than one core and the env time they save beats what their orders cost (:func:`parallel_wins`;
the choice and the timing go to the metadata).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..config import RenderConfig
from ..contracts import ActFn, Array, BeginFn, EnvSlots, UserEnv
from ..envs import make_raw_env
from ..envs.mujoco_state import mocap_extras
from ..envs.unwrap import describe_env, find_simulation, plain_gymnasium
from ..errors import ConfigError
from ..policies import PolicyRunner
from ..policies.actions import ActionGuard, gym_bounds
from .env_slots import Extras, InProcessSlots, ProcessSlots, cpu_count, obs_layout, step_seconds
from .procs import pickling_start_method, worker_factory
from .records import Episode, StepRecord
from .slot_loop import SlotLoop

if TYPE_CHECKING:  # engine.py imports this module
    from .engine import Engine

__all__ = ["MIN_FREE_CORES", "ORDER_S", "actor", "free_cores", "padded_actor", "parallel_wins", "prepare", "read_qpos",
           "release", "run_gymnasium"]

#: What an order to the env workers costs (hand-off and answer through shared memory; seconds) beyond the env
#: steps, against which ``auto`` weighs the env time that they save: 10-15 us measured on a 2-core VM (a no-op
#: env's batch step, K = 8; a pipe's byte each way cost 60-90 us).
ORDER_S = 1.5e-5

#: ``auto`` uses worker processes only with at least this many cores free (see :func:`free_cores`).
MIN_FREE_CORES = 1.5


def run_gymnasium(engine: Engine) -> Iterator[StepRecord | Episode]:
    """All the run's episodes (see the module docstring)."""
    cfg, raw = engine.cfg, engine.raw
    assert raw is not None  # the engine takes this path only for a plain gymnasium env (engine._refusal)
    plan = engine.plan()
    space = raw.action_space
    common = dict(seed=cfg.seed, max_steps=cfg.max_steps, obs_key=cfg.obs_key, keep=engine.keep,
                  trajectories=cfg.trajectories, reward_fn=engine.reward_fn, action_shape=tuple(space.shape),
                  action_dtype=np.dtype(space.dtype), success_rule=cfg.success_rule)
    rendered = engine.rendered
    extras = _extras(cfg, raw)
    if rendered:
        slots: EnvSlots = InProcessSlots([raw], extras, record_infos=engine.infos)
        act, begin = padded_actor(engine.policy, slots, engine.batch_like, engine.batch_rows, cfg.seed) \
            if engine.batch_like else actor(engine.policy, slots, per_env=True)
        # the last rendered index: a range's own (max() would walk range(sys.maxsize), a run of unknown length's)
        last = rendered[-1] if isinstance(rendered, range) else max(rendered)
        yield from SlotLoop(slots, act, begin, plan, **common).run(rendered, below=last + 1)
    if not plan.more():
        return
    slots, owned = engine.__dict__.pop("_batch", None) or _slots(engine, extras)
    threads = _torch_threads(engine, slots)
    try:
        per_env = cfg.policy_batch == "per-env" or engine.policy.stateful or slots.num == 1
        act, begin = actor(engine.policy, slots, per_env=per_env)
        if not per_env and engine.policy.samples:
            engine.notes.append("stochastic policy with policy_batch='batched': the batch draws from one RNG "
                                "stream (seeded with --seed), so per-episode numbers depend on --num-envs; "
                                "--policy-batch per-env gives each episode its own stream")
        yield from SlotLoop(slots, act, begin, plan, **common).run()
    finally:
        _set_torch_threads(threads)
        if isinstance(slots, ProcessSlots):
            slots.close()
        for env in owned:
            env.close()


def _torch_threads(engine: Engine, slots: EnvSlots) -> int | None:
    """Torch's intra-op threads for the batch: beside env workers, the cores they leave (one on a 2-core
    machine: a tiny policy's second thread spins on the core a worker steps on). Returns the count to put back
    (None: unchanged); the count used goes to the metadata."""
    import torch

    before = torch.get_num_threads()
    want = before
    if isinstance(slots, ProcessSlots):
        want = max(1, min(before, cpu_count() - slots.workers))
    engine.info["torch_threads"] = want
    if want == before:
        return None
    torch.set_num_threads(want)
    return before


def _set_torch_threads(count: int | None) -> None:
    if count is not None:
        import torch

        torch.set_num_threads(count)


def prepare(engine: Engine) -> None:
    """Starts the batch's slots now (worker processes start in the background), so that their start-up
    overlaps the policy's set-up and the rendered episodes; :func:`release` closes what was not used."""
    cfg = engine.cfg
    beyond = cfg.num_trajs is None or cfg.num_trajs > len(engine.rendered)
    if beyond and cfg.num_envs > 1:
        engine._batch = _slots(engine, _extras(cfg, engine.raw))


def release(engine: Engine) -> None:
    """Closes slots that :func:`prepare` started and no run took (a dry run, an error before the batch)."""
    batch = engine.__dict__.pop("_batch", None)
    if batch is not None:
        slots, owned = batch
        if isinstance(slots, ProcessSlots):
            slots.close()
        for env in owned:
            env.close()


def read_qpos(env: UserEnv) -> NDArray[np.float64]:
    """MuJoCo's ``qpos`` of a gymnasium MuJoCo env (a copy), for ``mujoco_qpos_key``."""
    sim = find_simulation(env)
    assert sim is not None  # an extra only of envs that have one (_extras checks)
    return np.array(sim[1].qpos, dtype=np.float64)


def _extras(cfg: RenderConfig, raw: UserEnv) -> Extras:
    """``mujoco_qpos_key``: qpos is stored with every step (before the action under the key, after it
    under ``("next", key)``), for replays from saved rollouts."""
    key = getattr(cfg, "mujoco_qpos_key", None)
    if key is None:
        return {}
    if find_simulation(raw) is None:
        raise ConfigError("the html format, the notebook's 3-D viewer and mujoco_qpos_key need a MuJoCo model, "
                          "and this env has none", expected="a gymnasium MuJoCo env or a dm_control env",
                          got=describe_env(raw), fix="drop --mujoco-qpos-key, or use a MuJoCo env")
    if isinstance(key, tuple) and key[0] == "next":  # the state after the action: stored under the root key too
        key = key[1] if len(key) == 2 else key[1:]
    return {key: (read_qpos(raw).shape, read_qpos), **mocap_extras(key, raw)}  # + mocap poses, if any


def _slots(engine: Engine, extras: Extras) -> tuple[EnvSlots, list[UserEnv]]:
    """K slots: this process's envs (the run's own first) or worker processes."""
    cfg, raw = engine.cfg, engine.raw
    assert raw is not None  # the engine takes this path only for a plain gymnasium env (engine._refusal)
    k, mode, workers = cfg.num_envs, cfg.env_batch_mode, min(cfg.num_envs, cpu_count())
    if mode == "auto":
        mode = "serial"
        free = free_cores()
        if k > 1 and workers > 1 and free >= MIN_FREE_CORES:  # busy cores would leave the workers waiting
            # timed on an env of its own: the run's envs are never stepped for it
            seconds = step_seconds(partial(make_raw_env, cfg, engine.payload, render_mode=engine.render_mode))
            engine.info["step_ms"] = round(seconds * 1e3, 4)
            mode = "parallel" if parallel_wins(seconds, k, workers) else "serial"
        elif k > 1 and workers > 1:
            engine.notes.append(f"--env-batch-mode auto kept the {k} envs in this process: the machine is busy "
                                f"(about {free:.1f} of {cpu_count()} cores free, by the threads running now), so "
                                "worker processes would wait for a core (--env-batch-mode parallel uses them "
                                "anyway)")
        engine.info["free_cores"] = round(free, 2)
    engine.info["batch_mode"] = mode if k > 1 else "serial"
    if mode == "serial" or k == 1:
        owned = [make_raw_env(cfg, engine.payload, render_mode=engine.render_mode) for _ in range(k - 1)]
        return InProcessSlots([raw, *owned], extras, record_infos=engine.infos), owned
    make = partial(make_raw_env, cfg, engine.payload, engine.render_mode)
    method = _start_method(make, engine.notes)
    engine.info["workers"], engine.info["start_method"] = workers - 1, method  # besides this process
    space = raw.action_space
    layout = obs_layout(raw.observation_space)
    assert layout is not None  # the engine runs this loop only for spaces that have one (engine._refusal)
    return ProcessSlots(worker_factory(make, method), k, workers, layout, method=method,
                        extras=extras, action_shape=tuple(space.shape), action_dtype=np.dtype(space.dtype),
                        record_infos=engine.infos), []


def free_cores(loadavg: str = "/proc/loadavg", samples: int = 8, interval: float = 0.002) -> float:
    """Cores not taken by other work now: the threads the kernel counts as runnable (the fourth field of
    ``/proc/loadavg``, this thread among them), averaged over ``samples`` reads ``interval`` seconds apart.

    Where there is no such file, the 1-minute load average, less this process: it lags by a minute, so a
    run that just ended (an earlier evaluation of the same script) still counts in it.

    Example (a file standing for ``/proc/loadavg``: 3 runnable, this thread and two others):
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix="loadavg", delete=False) as fh:
        ...     _ = fh.write("1.90 1.20 0.80 3/412 51234")
        >>> free_cores(fh.name, samples=2, interval=0) == max(0.0, cpu_count() - 2.0)
        True
        >>> os.remove(fh.name)
    """
    try:
        runnable = 0
        for i in range(samples):
            with open(loadavg, encoding="ascii") as fh:
                runnable += int(fh.read().split()[3].split("/")[0])
            if interval and i + 1 < samples:
                time.sleep(interval)
        others = runnable / samples - 1.0
    except (OSError, IndexError, ValueError):
        try:
            others = os.getloadavg()[0] - 1.0
        except OSError:  # pragma: no cover - no load average on this platform
            return float(cpu_count())
    return max(0.0, cpu_count() - max(0.0, others))


def parallel_wins(step_s: float, k: int, parts: int) -> bool:
    """Whether K envs step faster split over ``parts`` processes (this one and ``parts - 1`` workers) than
    one after another here: the env time a batch step saves (``K - ceil(K / parts)`` steps) beats what
    waking the workers costs (they wake at once, while this process steps its own part).

    Example:
        >>> parallel_wins(40e-6, 8, 2), parallel_wins(10e-6, 2, 2), parallel_wins(2e-3, 2, 2)
        (True, False, True)
    """
    saved = step_s * (k - -(-k // parts))
    return saved > ORDER_S * (parts - 1)


def _start_method(make: Callable[[], UserEnv], notes: list[str]) -> str:
    """``fork`` where the platform has it and this process runs a single thread (a fork is ready in
    milliseconds and needs no import; forking a threaded process could deadlock its copy), else a fork
    server's or ``spawn`` (:func:`.procs.pickling_start_method`; the factory must then be picklable; a lambda
    or a local factory is forked all the same)."""
    if "fork" in mp.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    try:
        pickle.dumps(make)
    except (pickle.PicklingError, AttributeError, TypeError):  # lambdas, local factories
        notes.append("env factory is not picklable: env workers are forked instead of spawned")
        return "fork"
    return pickling_start_method()


def padded_actor(policy: PolicyRunner, slots: EnvSlots, k: int, rows: dict[int, int],
                 seed: int | None) -> tuple[ActFn, BeginFn]:
    """``act``/``begin`` for one env acting as every row of a ``[k]`` batch: a re-run of an episode that ran
    in row ``rows[index]`` of a batch of ``k`` with one policy call per batch step gets the same call and
    reads the same row, so the same actions to the bit (a batched matrix product and a single row's differ
    in their last bits; rows do not mix). Episode ``index`` is the one reset with ``seed + index``."""
    import torch

    padded = {key: np.repeat(slots.obs[key][:1], k, axis=0) for key in slots.obs}
    views = {key: torch.from_numpy(padded[key]) for key in slots.layout}
    spec = policy.gym_check.spec
    out = np.zeros((slots.num, *spec.shape), np.dtype(str(spec.dtype).replace("torch.", "")))
    guard = ActionGuard(out, gym_bounds(_gym_env(policy).action_space))
    batch, row = (k,), [0]

    def begin(i: int, episode_seed: int | None) -> None:
        # episode seeds are None exactly when the run's seed is
        row[0] = rows.get(episode_seed - seed, 0) if episode_seed is not None and seed is not None else 0

    def act(active: Array) -> Array:
        for key, copies in padded.items():
            copies[:] = slots.obs[key][0]
        out[0] = policy.act(views, batch).numpy()[row[0]]
        return guard(active)

    return act, begin


def actor(policy: PolicyRunner, slots: EnvSlots, per_env: bool) -> tuple[ActFn, BeginFn]:
    """``act(rows) -> actions [K, ...]`` and ``begin(slot, seed)`` for the policy over ``slots``."""
    import torch

    views = {key: torch.from_numpy(slots.obs[key]) for key in slots.layout}  # share the slots' memory
    spec = policy.gym_check.spec  # the action as the gymnasium env takes it (an index for Discrete)
    out = np.zeros((slots.num, *spec.shape), np.dtype(str(spec.dtype).replace("torch.", "")))
    guard = ActionGuard(out, gym_bounds(_gym_env(policy).action_space))
    if per_env:
        rows = [(policy.for_worker(i), {k: v[i] for k, v in views.items()}) for i in range(slots.num)]

        def begin(i: int, seed: int | None) -> None:
            rows[i][0].begin_episode(seed)

        if slots.num == 1:  # one env: no loop over the rows
            runner, obs = rows[0]

            def act_one(active: Array) -> Array:
                out[0] = runner.act(obs).numpy()
                return guard(active)

            return act_one, begin

        def act(active: Array) -> Array:
            for i in active.tolist():
                runner, obs = rows[i]
                out[i] = runner.act(obs).numpy()
            return guard(active)

        return act, begin

    batch = (slots.num,)
    if policy.samples and policy.cfg.seed is not None:
        policy._rng_state = torch.Generator().manual_seed(policy.cfg.seed).get_state()

    def act_batch(active: Array) -> Array:
        out[:] = policy.act(views, batch).numpy()
        return guard(active)

    return act_batch, (lambda i, seed: None)


def _gym_env(policy: PolicyRunner) -> UserEnv:
    """The gymnasium env under the policy's env (its action space bounds the actions)."""
    raw = plain_gymnasium(policy.env)
    assert raw is not None  # the engine takes this path only for a plain gymnasium env (engine._refusal)
    return raw
