"""K gymnasium envs as numpy slots: in this process, or in worker processes.

Both kinds share one shape: ``obs[key]`` is a ``[K, ...]`` array, ``reward`` ``[K]`` float64,
``terminated`` / ``truncated`` ``[K]`` bool and ``success`` ``[K]`` int8 (-1: not reported);
``reset(rows, seeds)`` and ``step(rows, actions)`` fill the given rows only, so a slot without an
episode is never stepped. Episode seeds go to ``env.reset(seed=...)`` itself.

Example:
    >>> import gymnasium, numpy as np
    >>> slots = InProcessSlots([gymnasium.make("Pendulum-v1") for _ in range(2)])
    >>> slots.reset([0, 1], [3, 3])
    >>> bool((slots.obs["observation"][0] == slots.obs["observation"][1]).all())
    True
    >>> slots.step([1], np.zeros((2, 1), np.float32)); slots.close()
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import RolloutError

__all__ = ["InProcessSlots", "ProcessSlots", "obs_layout", "step_seconds"]


def obs_layout(space: Any) -> dict[str, tuple[tuple[int, ...], np.dtype]] | None:
    """``{key: (shape, dtype)}`` of a Box or a flat Dict of Boxes, with torchrl's key names; else None."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return {"observation": (tuple(space.shape), np.dtype(space.dtype))}
    if isinstance(space, spaces.Dict) and all(isinstance(s, spaces.Box) for s in space.spaces.values()):
        return {str(k): (tuple(s.shape), np.dtype(s.dtype)) for k, s in space.spaces.items()}
    return None


def _success(info: dict[str, Any]) -> int:
    value = info.get("is_success", info.get("success"))
    return -1 if value is None else int(bool(np.any(np.asarray(value))))


class _Buffers:
    """The per-slot arrays the engine reads after each call."""

    def __init__(self, num: int, layout: dict[str, tuple[tuple[int, ...], np.dtype]],
                 extras: dict[Any, tuple[tuple[int, ...], Callable[[Any], np.ndarray]]] | None = None) -> None:
        self.num, self.layout = num, layout
        self.obs = {k: np.zeros((num, *shape), dtype) for k, (shape, dtype) in layout.items()}
        #: Further per-step entries read from each env after reset and step (e.g. MuJoCo's qpos).
        self.extras = {key: fn for key, (_, fn) in (extras or {}).items()}
        for key, (shape, _) in (extras or {}).items():
            self.obs[key] = np.zeros((num, *shape), np.float64)
        self.reward = np.zeros(num, np.float64)
        self.terminated = np.zeros(num, bool)
        self.truncated = np.zeros(num, bool)
        self.success = np.full(num, -1, np.int8)
        self.single = next(iter(self.obs)) if len(layout) == 1 and "observation" in layout else None

    def _put(self, i: int, obs: Any, extra: dict[Any, Any] | None = None) -> None:
        if self.single is not None:
            self.obs[self.single][i] = obs
        else:
            for key in self.layout:
                self.obs[key][i] = obs[key]
        for key, value in (extra or {}).items():
            self.obs[key][i] = value


class InProcessSlots(_Buffers):
    """K gymnasium envs stepped one after another in this process (like ``SyncVectorEnv``).

    Args:
        envs: The gymnasium envs (all with the same observation space).
    """

    kind = "serial"

    def __init__(self, envs: Sequence[Any], extras: dict[Any, Any] | None = None) -> None:
        layout = obs_layout(envs[0].observation_space)
        if layout is None:
            raise ValueError("InProcessSlots needs a Box or flat Dict observation space")
        super().__init__(len(envs), layout, extras)
        self.envs = list(envs)

    def _extra(self, i: int) -> dict[Any, Any] | None:
        return {key: fn(self.envs[i]) for key, fn in self.extras.items()} if self.extras else None

    def reset(self, rows: Sequence[int], seeds: Sequence[int | None]) -> None:
        for i, seed in zip(rows, seeds):
            obs, info = self.envs[i].reset(seed=seed)
            self._put(i, obs, self._extra(i))
            self.success[i] = _success(info)
            self.terminated[i] = self.truncated[i] = False
            self.reward[i] = 0.0

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        envs, reward, terminated, truncated, success = self.envs, self.reward, self.terminated, self.truncated, \
            self.success
        for i in rows:
            obs, r, term, trunc, info = envs[i].step(actions[i])
            self._put(i, obs, self._extra(i) if self.extras else None)
            reward[i] = r
            terminated[i] = term
            truncated[i] = trunc
            success[i] = _success(info) if info else -1

    def env(self, i: int) -> Any:
        return self.envs[i]

    def close(self) -> None:
        envs, self.envs = self.envs, []
        for env in envs:
            env.close()


def _worker(conn: Any, make: Callable[[], Any], count: int, extras: dict[Any, Callable[[Any], Any]]) -> None:
    """A worker process: ``count`` envs built here, stepped on the parent's orders."""
    try:
        from ..mjlog import quiet_mujoco_log

        quiet_mujoco_log()  # MuJoCo's warnings: debug log lines, not stderr nor a MUJOCO_LOG.TXT
        envs = [make() for _ in range(count)]
        conn.send(("ok", None))
    except BaseException as exc:  # the parent raises it with the worker's traceback
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
        return
    while True:
        cmd, arg = conn.recv()
        try:
            if cmd == "reset":
                out = []
                for j, seed in arg:
                    obs, info = envs[j].reset(seed=seed)
                    out.append((obs, _success(info), {k: fn(envs[j]) for k, fn in extras.items()}))
            elif cmd == "step":
                out = []
                for j, action in arg:
                    obs, r, term, trunc, info = envs[j].step(action)
                    out.append((obs, float(r), bool(term), bool(trunc), _success(info) if info else -1,
                                {k: fn(envs[j]) for k, fn in extras.items()}))
            else:
                for env in envs:
                    env.close()
                conn.send(("ok", None))
                return
            conn.send(("ok", out))
        except BaseException as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


class ProcessSlots(_Buffers):
    """K gymnasium envs in ``workers`` processes (each holds K/workers of them), started at once.

    Args:
        make: A picklable (or, with ``method="fork"``, any) callable returning one gymnasium env.
        num: K, the number of slots.
        workers: Worker processes; slot ``i`` lives in worker ``i % workers``.
        layout: The observation layout (:func:`obs_layout` of the env's space).
        method: The multiprocessing start method.
    """

    kind = "parallel"

    def __init__(self, make: Callable[[], Any], num: int, workers: int,
                 layout: dict[str, tuple[tuple[int, ...], np.dtype]], method: str = "spawn",
                 extras: dict[Any, Any] | None = None) -> None:
        super().__init__(num, layout, extras)
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        ctx = mp.get_context(method)
        self.workers = max(1, min(workers, num))
        for w in range(self.workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, make, len(range(w, num, self.workers)), self.extras),
                               daemon=True,
                               name=f"torchrl_render-env-{w}")
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        self._ready = False

    def _wait_ready(self) -> None:
        if not self._ready:
            for w in range(self.workers):
                self._recv(w, "starting")
            self._ready = True

    def _recv(self, w: int, what: str) -> Any:
        try:
            status, payload = self.conns[w].recv()
        except EOFError as exc:
            raise RolloutError(f"env worker process {w} died while {what} (exit code {self.procs[w].exitcode})",
                               fix="check the env factory in a single process (--num-envs 1)") from exc
        if status == "error":
            raise RolloutError(f"an env worker raised while {what}: {payload.strip().splitlines()[0]}",
                               fix="check the env factory and its reset()/step(); the worker's traceback: "
                                   + " | ".join(payload.strip().splitlines()[-3:]))
        return payload

    def _scatter(self, cmd: str, rows: Sequence[int], values: Sequence[Any]) -> list[list[tuple[int, Any]]]:
        self._wait_ready()
        orders: list[list[tuple[int, Any]]] = [[] for _ in range(self.workers)]
        for i, value in zip(rows, values):
            orders[i % self.workers].append((i, value))
        for w, order in enumerate(orders):
            if order:
                self.conns[w].send((cmd, [(i // self.workers, v) for i, v in order]))
        return orders

    def reset(self, rows: Sequence[int], seeds: Sequence[int | None]) -> None:
        orders = self._scatter("reset", rows, seeds)
        for w, order in enumerate(orders):
            if order:
                for (i, _), (obs, success, extra) in zip(order, self._recv(w, "resetting")):
                    self._put(i, obs, extra)
                    self.success[i] = success
                    self.terminated[i] = self.truncated[i] = False
                    self.reward[i] = 0.0

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        orders = self._scatter("step", rows, [actions[i] for i in rows])
        for w, order in enumerate(orders):
            if order:
                for (i, _), (obs, r, term, trunc, success, extra) in zip(order, self._recv(w, "stepping")):
                    self._put(i, obs, extra)
                    self.reward[i], self.terminated[i], self.truncated[i], self.success[i] = r, term, trunc, success

    def env(self, i: int) -> Any:
        return None  # lives in another process

    def close(self) -> None:
        conns, self.conns = self.conns, []
        for conn in conns:
            try:
                conn.send(("close", None))
                conn.recv()
            except (OSError, EOFError, BrokenPipeError):
                pass
            conn.close()
        procs, self.procs = self.procs, []
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def step_seconds(env: Any, steps: int = 20) -> float:
    """The median wall time of one ``env.step`` with sampled actions (the env is reset first;
    the engine resets it again, seeded, before any episode)."""
    env.reset(seed=0)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        times.append(time.perf_counter() - t0)
        if term or trunc:
            env.reset()
    return float(np.median(times))


def cpu_count() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
