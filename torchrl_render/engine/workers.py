"""K torchrl envs at once (``ParallelEnv`` workers or ``SerialEnv``): the engine's path for torchrl
envs of the user's, dm_control tasks and recurrent TensorDict policies.

Each of the ``num_trajs`` episodes runs to its own end on one of K envs; a worker whose
episode ends takes the next episode, so exactly ``num_trajs`` episodes are counted and short
episodes are not over-represented. Episode ``i`` is seeded ``seed + i`` whatever K is. With
``policy_batch="batched"`` the policy is called once per batch step on the ``[K]`` TensorDict
(recurrent state is per row); with ``"per-env"`` on one env's TensorDict at a time, so a
deterministic policy gives bit-identical per-episode numbers for any K.

Frames are rendered inside the workers (their MuJoCo/EGL contexts are made
there) by :class:`EpisodeControl`, a transform that also reseeds each episode
from the reset TensorDict. Records come out interleaved across episodes;
:class:`EpisodeOrderer` puts them back in episode order, spilling the frames of
episodes that are ahead to disk so memory stays flat.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from io import BufferedRandom
from typing import TYPE_CHECKING, ParamSpec, TypedDict, TypeVar

import torch
from tensordict import TensorDict
from torchrl.envs import ParallelEnv, SerialEnv, TransformedEnv
from torchrl.envs.utils import step_mdp

from ..config import RenderConfig
from ..contracts import Frames, FrameSource, Json, Payload, UserEnv
from ..envs import build_env
from ..envs.gl import ensure_headless_gl
from ..envs.mjlog import quiet_mujoco_log
from ..errors import RenderError, RolloutError
from ..keys import NestedKey
from ..policies import PolicyRunner
from .episode_control import CONTROL_KEYS, FRAMES_KEY, RENDER_KEY, SEED_KEY, EpisodeControl
from .procs import freeze_inherited_heap, pickling_start_method, worker_factory
from .records import StepRecord
from .single import act, flag

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.envs import EnvBase

__all__ = ["EpisodeOrderer", "close_batched", "vector_rollout"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _WorkerReport(TypedDict):
    """What a ``ParallelEnv`` worker whose env raised leaves for the parent (``reports/<slot>.json``)."""

    slot: int
    what: str
    error: str
    trace: str


def _make_worker_env(cfg: RenderConfig, payload: Payload, render_mode: str | None,
                     make_backend: Callable[[UserEnv], FrameSource] | None, slot: int | None = None,
                     reports: str | None = None) -> TransformedEnv:
    """Runs in each worker: the user's env plus the episode-control transform."""
    if make_backend is not None:
        ensure_headless_gl()
    if multiprocessing.parent_process() is not None:  # a worker process keeps MuJoCo's warnings off stderr
        quiet_mujoco_log()
        # Ctrl-C reaches the whole process group: the parent stops the run and closes the workers, which
        # would otherwise each print a KeyboardInterrupt (and then broken pipe) traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        freeze_inherited_heap()  # torchrl's worker runs gc.collect() as it closes
    env = build_env(cfg, payload, render_mode=render_mode)
    if slot is not None:
        _name_the_slot(env, slot, reports)
    return TransformedEnv(env, EpisodeControl(make_backend))


def _name_the_slot(env: UserEnv, slot: int, reports: str | None = None) -> None:
    """An exception from this env's step carries ``env_slot``, so the run names the episode it was in.

    In a ``ParallelEnv`` worker process (``reports``: the run's report folder) the exception cannot travel:
    torchrl's parent only sees the worker die. The worker writes what raised to ``reports/<slot>.json`` and
    exits at once (no traceback on the terminal), and the parent reads it to name the episode, as it does for
    an env in its own process."""
    def named(call: Callable[_P, _R], what: str) -> Callable[_P, _R]:
        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return call(*args, **kwargs)
            except Exception as exc:
                if reports is not None and multiprocessing.parent_process() is not None:
                    _report_and_exit(reports, slot, what, exc)
                setattr(exc, "env_slot", slot)  # noqa: B010  # ours, on any exception type: _env_error reads it
                raise
        return run

    env._step = named(env._step, "step")
    if reports is not None:
        env._reset = named(env._reset, "reset")


def _report_and_exit(reports: str, slot: int, what: str, exc: Exception) -> None:
    """Writes the worker's error for the parent (see :func:`_name_the_slot`), then ends the worker process."""
    import json
    import traceback

    lines = traceback.format_exc().strip().splitlines()
    report: _WorkerReport = {"slot": slot, "what": what, "error": f"{type(exc).__name__}: {exc}",
                             "trace": " | ".join(lines[-3:])}
    path = os.path.join(reports, f"{slot}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(report, f)
    os.replace(path + ".tmp", path)
    os._exit(1)


def _worker_report(env: EnvBase) -> _WorkerReport | None:
    """The error a ``ParallelEnv`` worker of ``env`` reported before it ended (the first, by slot), or None."""
    import json

    while isinstance(env, TransformedEnv):
        env = env.base_env
    reports = getattr(env, "_torchrl_render_reports", None)
    if reports is None:
        return None
    for _ in range(50):  # the worker writes, then exits: torchrl may see it gone a moment before the file lands
        names = sorted((n for n in os.listdir(reports) if n.endswith(".json")), key=lambda n: int(n[:-5]))
        if names:
            env._torchrl_render_worker_failed = True
            with open(os.path.join(reports, names[0])) as f:
                report: _WorkerReport = json.load(f)  # what _report_and_exit wrote
                return report
        time.sleep(0.01)
    return None


def close_batched(env: EnvBase) -> None:
    """Closes a batched env of :func:`make_batched_env` and removes its workers' report folder. A worker that
    reported its error ended on purpose, and torchrl's close then raises about it: the run has said so."""
    import shutil

    reports = getattr(env, "_torchrl_render_reports", None)
    try:
        env.close()
    except Exception:
        if not getattr(env, "_torchrl_render_worker_failed", False):
            raise
    finally:
        if reports is not None:
            shutil.rmtree(reports, ignore_errors=True)


def make_batched_env(cfg: RenderConfig, payload: Payload, render_mode: str | None,
                     make_backend: Callable[[UserEnv], FrameSource] | None, notes: list[str],
                     info: dict[str, Json] | None = None) -> SerialEnv | ParallelEnv:
    """``ParallelEnv`` (workers from a fork server, :mod:`.procs`) or ``SerialEnv`` of ``cfg.num_envs`` worker envs.

    ``make_backend`` (picklable, e.g. ``partial(backends.factory.make_backend, cfg)``) builds the render
    backend inside each worker; ``None`` when the run needs no frames. ``info`` (the run's engine facts) gets
    the workers' ``start_method``.
    """
    make = partial(_make_worker_env, cfg, payload, render_mode, make_backend)
    if cfg.env_batch_mode == "serial":
        return SerialEnv(cfg.num_envs, [partial(make, slot=i) for i in range(cfg.num_envs)])
    try:
        pickle.dumps(make)
        method = pickling_start_method()
    except (pickle.PicklingError, AttributeError, TypeError):  # lambdas, local factories: not for spawned workers
        method = "fork"
        notes.append("env or policy factory is not picklable: env workers are forked instead of spawned")
    if info is not None:
        info["start_method"] = method
    reports = tempfile.mkdtemp(prefix="torchrl_render_workers_")  # where a worker's error lands (_name_the_slot)
    try:
        env = ParallelEnv(cfg.num_envs, [worker_factory(partial(make, slot=i, reports=reports), method)
                                         for i in range(cfg.num_envs)], mp_start_method=method)
    except BaseException:
        import shutil

        shutil.rmtree(reports, ignore_errors=True)
        raise
    env._torchrl_render_reports = reports
    return env


def vector_rollout(env: EnvBase, policy: PolicyRunner, *, episodes: Iterator[int], max_steps: int | None,
                   seed: int | None, rendered: range | frozenset[int], done_key: NestedKey = "done",
                   reward_key: NestedKey = "reward") -> Iterator[StepRecord]:
    """Dispatches the ``episodes`` (indices, in order) over the batched env; yields records as they happen."""
    k = env.batch_size[0]
    queue = episodes
    episode = [-1] * k
    steps = [0] * k
    mask = torch.ones(k, dtype=torch.bool)
    td = env.reset(_control(env, mask, episode, queue, seed, rendered))
    _begin(policy, mask, episode, seed)
    yield from _records(td, episode, seed, mask)
    per_env = policy.cfg.policy_batch == "per-env" or policy.stateful or policy.samples
    while any(e >= 0 for e in episode):
        if per_env:
            for i in range(k):
                if episode[i] >= 0:
                    _merge_row(td, i, act(policy.for_worker(i), td[i].clone(), episode[i], steps[i] + 1))
                else:
                    _merge_row(td, i, td[i].clone().set(policy.cfg.action_key, policy.action_spec.zero()))
        else:  # one call for the batch; rows without an episode get a zero action (they are not stepped on)
            td = act(policy, td, min(e for e in episode if e >= 0), max(steps) + 1)
        td.set("_step", torch.tensor([e >= 0 for e in episode]))  # a slot without an episode is not stepped
        try:
            td = env.step(td)
        except Exception as exc:
            raise _env_error(env, exc, episode, steps, seed) from exc
        ended = torch.zeros(k, dtype=torch.bool)
        for i in range(k):
            if episode[i] < 0:
                continue
            steps[i] += 1
            record = _record(td, i, episode[i], steps[i], seed, reward_key, done_key, max_steps)
            yield record
            ended[i] = record.done
        nxt = _step_mdp(td)
        if ended.any():
            steps = [0 if ended[i] else s for i, s in enumerate(steps)]
            control = _control(env, ended, episode, queue, seed, rendered)
            try:
                reset_td = env.reset(control)
            except Exception as exc:
                raise _env_error(env, exc, episode, None, seed) from exc
            _begin(policy, ended, episode, seed)
            for key in reset_td.keys(True, True):
                if key in nxt.keys(True, True):
                    nxt.get(key)[ended] = reset_td.get(key)[ended]
            yield from _records(reset_td, episode, seed, ended)
        td = nxt


def _env_error(env: EnvBase, exc: Exception, episode: list[int], steps: list[int] | None,
               seed: int | None) -> Exception:
    """What the run says when the batched env raised (``steps`` None: while resetting): the episode, its step,
    the env and its seed, from the exception (an env in this process names its slot) or from the report a
    worker process left; our own errors pass through."""
    slot, error, trace = getattr(exc, "env_slot", None), f"{type(exc).__name__}: {exc}", None
    if slot is None and not isinstance(exc, RenderError):
        report = _worker_report(env)
        if report is not None:
            slot, error, trace = report["slot"], report["error"], report["trace"]
    if isinstance(exc, RenderError) and trace is None:
        return exc
    fix = "check the env's step(), or the action the policy produced" if steps is not None else \
        "check the env factory and its reset()"
    if slot is None or episode[slot] < 0:
        running = [e for e in episode if e >= 0]
        return RolloutError(f"an env worker raised while {'stepping' if steps is not None else 'resetting'} "
                            f"episodes {running}: {error}", fix=fix)
    ep = episode[slot]
    where = f"at step {steps[slot] + 1} of episode {ep}" if steps is not None else f"while resetting episode {ep}"
    fix += f" (episode {ep} ran in env {slot}, seeded {_seed(seed, ep)})"
    return RolloutError(f"the env raised {where}: {error}",
                        fix=fix + (f"; the worker's traceback: {trace}" if trace else ""))


def _merge_row(td: TensorDictBase, i: int, row: TensorDictBase) -> None:
    """Writes what the policy produced for env ``i`` (action, recurrent state...) into the batch."""
    for key in row.keys(True, True):
        value = row.get(key)
        if key not in td.keys(True, True):
            td.set(key, torch.zeros((td.shape[0], *value.shape), dtype=value.dtype, device=value.device))
        td.get(key)[i] = value


def _begin(policy: PolicyRunner, mask: torch.Tensor, episode: list[int], seed: int | None) -> None:
    for i in range(len(episode)):
        if mask[i] and episode[i] >= 0:
            policy.for_worker(i).begin_episode(_seed(seed, episode[i]))


def _control(env: EnvBase, mask: torch.Tensor, episode: list[int], queue: Iterator[int], seed: int | None,
             rendered: range | frozenset[int]) -> TensorDict:
    """Assigns the next episodes to the masked workers; builds the reset TensorDict."""
    k = len(episode)
    seeds = torch.full((k,), -1, dtype=torch.int64)
    render = torch.zeros(k, dtype=torch.bool)
    for i in range(k):
        if mask[i]:
            episode[i] = next(queue, -1)
            if episode[i] >= 0:
                seeds[i] = (seed or 0) + episode[i] if seed is not None else -1
                render[i] = episode[i] in rendered
    reset = mask.reshape(k, *([1] * (len(env.full_done_spec["done"].shape) - 1)))
    reset = reset.expand(env.full_done_spec["done"].shape).clone()
    return TensorDict({SEED_KEY: seeds, RENDER_KEY: render, "_reset": reset}, batch_size=[k])


def _records(td: TensorDictBase, episode: list[int], seed: int | None, mask: torch.Tensor) -> Iterator[StepRecord]:
    for i in range(len(episode)):
        if mask[i] and episode[i] >= 0:
            row = td[i]
            yield StepRecord(episode[i], 0, _clean(row), None, _seed(seed, episode[i]), wall=time.perf_counter(),
                             frames=_frames_of(row), slot=i)


def _record(td: TensorDictBase, i: int, ep: int, step: int, seed: int | None, reward_key: NestedKey,
            done_key: NestedKey, max_steps: int | None) -> StepRecord:
    row = td[i]
    nxt = row.get("next")
    reward = nxt.get(reward_key, None)
    done, cut = flag(nxt, done_key), step == max_steps
    return StepRecord(ep, step, _clean(nxt), _clean(row), _seed(seed, ep),
                      reward=float(reward.sum()) if reward is not None else 0.0,
                      done=done or cut, terminated=flag(nxt, "terminated"),
                      truncated=flag(nxt, "truncated") or (cut and not done), wall=time.perf_counter(),
                      frames=_frames_of(nxt))


def _seed(seed: int | None, ep: int) -> int | None:
    return None if seed is None else seed + ep


def _clean(td: TensorDictBase) -> TensorDictBase:
    """A private copy without the control and frame entries (batched buffers are reused)."""
    return td.exclude(*CONTROL_KEYS, ("next", FRAMES_KEY), ("next", SEED_KEY), ("next", RENDER_KEY)).clone()


def _frames_of(td: TensorDictBase) -> Frames | None:
    frames = td.get(FRAMES_KEY, None)
    if frames is None:
        return None
    return {name: frames.get(name).numpy().copy() for name in frames.keys()}


def _step_mdp(td: TensorDictBase) -> TensorDictBase:
    return step_mdp(td, keep_other=True)


class EpisodeOrderer:
    """Re-emits records in episode order; frames of episodes that are ahead wait on disk."""

    def __init__(self, max_steps: int | None, first: int = 0) -> None:
        self.max_steps = max_steps
        self.next = first
        self.waiting: dict[int, list[StepRecord]] = {}
        self.spill: dict[int, BufferedRandom] = {}  # the spilled frames of each episode ahead
        self.complete: set[int] = set()
        self.dir = tempfile.TemporaryDirectory(prefix="torchrl_render_spill_")

    def push(self, record: StepRecord) -> Iterator[StepRecord]:
        """Feeds one record; yields whatever can now go out in order."""
        if record.trajectory != self.next:
            self._hold(record)
            return
        yield record
        if self._ends(record):
            self.next += 1
            yield from self._release()

    def _ends(self, record: StepRecord) -> bool:
        return record.step > 0 and (record.done or record.step == self.max_steps)

    def _hold(self, record: StepRecord) -> None:
        if record.frames is not None:
            fh = self.spill.get(record.trajectory)
            if fh is None:
                fh = self.spill[record.trajectory] = open(os.path.join(self.dir.name, f"{record.trajectory}.npy"),
                                                          "w+b")
            pickle.dump(record.frames, fh, protocol=pickle.HIGHEST_PROTOCOL)
            record.frames = {}
        self.waiting.setdefault(record.trajectory, []).append(record)
        if self._ends(record):
            self.complete.add(record.trajectory)

    def _release(self) -> Iterator[StepRecord]:
        while self.next in self.waiting:
            ep = self.next
            records = self.waiting.pop(ep)
            fh = self.spill.pop(ep, None)
            if fh is not None:
                fh.seek(0)
            for record in records:
                if record.frames == {} and fh is not None:
                    record.frames = pickle.load(fh)
                yield record
            if fh is not None:
                fh.close()
                os.unlink(fh.name)
            if ep not in self.complete:
                return  # the episode goes on live
            self.complete.discard(ep)
            self.next += 1

    def close(self) -> None:
        for fh in self.spill.values():
            fh.close()
        self.spill.clear()
        self.dir.cleanup()
