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
import pickle
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..envs.mjlog import quiet_mujoco_log
from ..errors import RenderError, RolloutError
from .procs import freeze_inherited_heap

__all__ = ["InProcessSlots", "ProcessSlots", "SlotError", "obs_layout", "step_seconds"]


class SlotError(Exception):
    """The env of one slot raised in ``reset`` or ``step``: which slot, and what it raised.

    Args:
        slot: The slot whose env raised.
        error: ``"TypeName: message"`` of the env's exception.
        trace: The last lines of its traceback, when it was raised in a worker process.
    """

    def __init__(self, slot: int, error: str, trace: str = "") -> None:
        super().__init__(error)
        self.slot, self.error, self.trace = slot, error, trace


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
            try:
                obs, info = self.envs[i].reset(seed=seed)
            except RenderError:
                raise
            except Exception as exc:  # the engine names the episode of this slot
                raise SlotError(i, f"{type(exc).__name__}: {exc}") from exc
            self._put(i, obs, self._extra(i))
            self.success[i] = _success(info)
            self.terminated[i] = self.truncated[i] = False
            self.reward[i] = 0.0

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        envs, reward, terminated, truncated, success = self.envs, self.reward, self.terminated, self.truncated, \
            self.success
        for i in rows:
            try:
                obs, r, term, trunc, info = envs[i].step(actions[i])
            except RenderError:
                raise
            except Exception as exc:  # the engine names the episode of this slot
                raise SlotError(i, f"{type(exc).__name__}: {exc}") from exc
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


class _Shared:
    """One block of shared memory carved into the slots' arrays, the same views in the parent and its workers.

    Args:
        entries: ``(name, shape, dtype)`` of each array (``("obs", key)`` for observation entries).
        ctx: The multiprocessing context whose ``RawArray`` holds the block (it travels to spawned workers
            as a process argument, and forked ones inherit it).
    """

    def __init__(self, entries: list[tuple[Any, tuple[int, ...], Any]], ctx: Any) -> None:
        self.entries, offset = [], 0
        for name, shape, dtype in entries:
            dtype = np.dtype(dtype)
            offset = -(-offset // 64) * 64  # each array starts on a cache line
            self.entries.append((name, tuple(shape), dtype.str, offset))
            offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.block = ctx.RawArray("b", max(offset, 1))

    def views(self) -> dict[Any, np.ndarray]:
        """``{name: array}`` over the block (no copy)."""
        flat = np.frombuffer(self.block, np.uint8)
        out = {}
        for name, shape, dtype, offset in self.entries:
            size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            out[name] = flat[offset:offset + size].view(dtype).reshape(shape)
        return out


def _worker(conn: Any, make: Callable[[], Any], slots: list[int], shared: _Shared, layout: list[str],
            extras: dict[Any, Callable[[Any], Any]]) -> None:
    """A worker process: one env per slot in ``slots``, built here and stepped on the parent's orders.

    Observations, rewards, flags, success reports and extras go into the shared arrays; actions, the
    slots to step (``todo``) and reset seeds come from them. The pipe carries one byte each way per
    order (:data:`_STEP`, :data:`_RESET`, :data:`_CLOSE`; :data:`_OK`), and an error's text.

    Ctrl-C is the parent's to handle: a terminal sends SIGINT to the whole process group, so the
    worker ignores it and ends when the parent closes it, or quietly when the parent is gone (its
    end of the pipe closed: EOF or a broken pipe), with no traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    freeze_inherited_heap()
    envs: dict[int, Any] = {}
    try:
        try:
            quiet_mujoco_log()  # MuJoCo's warnings: debug log lines, not stderr nor a MUJOCO_LOG.TXT
            for i in slots:
                envs[i] = make()
        except BaseException as exc:  # the parent raises it with the worker's traceback
            _send_error(conn, exc, None)
            return
        conn.send_bytes(_OK)
        _serve(conn, envs, _Arrays(shared.views(), layout), extras)
    except (EOFError, OSError):  # the parent went away: nobody to answer
        _close_all(list(envs.values()))


def _close_all(envs: list[Any]) -> None:
    """Closes a worker's envs on its way out; an env whose close fails has nobody to tell (the run is over)."""
    for env in envs:
        try:
            env.close()
        except Exception:
            pass


class _Arrays:
    """The shared arrays by role (what :class:`_Buffers` holds, plus the actions)."""

    def __init__(self, views: dict[Any, np.ndarray], layout: list[str]) -> None:
        self.obs = {name[1]: v for name, v in views.items() if isinstance(name, tuple) and name[0] == "obs"}
        self.reward, self.terminated, self.truncated = views["reward"], views["terminated"], views["truncated"]
        self.success, self.actions = views["success"], views["actions"]
        self.todo, self.seed, self.seeded = views["todo"], views["seed"], views["seeded"]
        self.layout = layout
        self.single = "observation" if layout == ["observation"] else None

    def put(self, i: int, obs: Any, env: Any, extras: dict[Any, Callable[[Any], Any]]) -> None:
        if self.single is not None:
            self.obs[self.single][i] = obs
        else:
            for key in self.layout:
                self.obs[key][i] = obs[key]
        for key, fn in extras.items():
            self.obs[key][i] = fn(env)


#: The orders (parent -> worker) and the answer (worker -> parent): one byte each; an error is ``_ERROR``
#: followed by the pickled ``(text, slot)``.
_STEP, _RESET, _CLOSE, _OK, _ERROR = b"s", b"r", b"c", b"k", b"e"


def _send_error(conn: Any, exc: BaseException, slot: int | None) -> None:
    conn.send_bytes(_ERROR + pickle.dumps((f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}", slot)))


def _serve(conn: Any, envs: dict[int, Any], arrays: _Arrays, extras: dict[Any, Callable[[Any], Any]]) -> None:
    """Answers ``reset`` / ``step`` orders until ``close``; an env's error names its slot."""
    put, reward, terminated, truncated, success, actions, todo = arrays.put, arrays.reward, arrays.terminated, \
        arrays.truncated, arrays.success, arrays.actions, arrays.todo
    mine = sorted(envs)
    while True:
        cmd = conn.recv_bytes()
        if cmd == _CLOSE:
            _close_all(list(envs.values()))
            conn.send_bytes(_CLOSE)
            return
        i = None
        try:
            if cmd == _RESET:
                for i in mine:
                    if todo[i]:
                        obs, info = envs[i].reset(seed=int(arrays.seed[i]) if arrays.seeded[i] else None)
                        put(i, obs, envs[i], extras)
                        success[i] = _success(info)
            else:
                for i in mine:
                    if todo[i]:
                        obs, r, term, trunc, info = envs[i].step(actions[i].copy())
                        put(i, obs, envs[i], extras)
                        reward[i], terminated[i], truncated[i] = r, term, trunc
                        success[i] = _success(info) if info else -1
        except BaseException as exc:  # SIGINT is ignored here: this is the env's own error, for the parent
            _send_error(conn, exc, i)
            continue
        conn.send_bytes(_OK)


class ProcessSlots(_Buffers):
    """K gymnasium envs split over ``workers`` parts that step at the same time: this process steps the
    first part itself and each other part lives in a worker process, started at once.

    The slots' arrays (observations, rewards, flags, actions) live in shared memory, as gymnasium's
    ``AsyncVectorEnv(shared_memory=True)`` keeps its observations. A step marks the slots to step, wakes
    the workers (one byte each), steps this process's own slots meanwhile, then reads each worker's
    one-byte answer: the wake-up of a worker overlaps work here, and a core is never left to wait on
    the others while this process sleeps.

    Args:
        make: A picklable (or, with ``method="fork"``, any) callable returning one gymnasium env.
        num: K, the number of slots.
        workers: Parts (this process and ``workers - 1`` worker processes); slot ``i`` is in part
            ``i % workers``, part 0 being this process.
        layout: The observation layout (:func:`obs_layout` of the env's space).
        method: The multiprocessing start method.
        extras: Further per-step entries (see :class:`_Buffers`).
        action_shape, action_dtype: One env's action, as the env takes it.
    """

    kind = "parallel"

    def __init__(self, make: Callable[[], Any], num: int, workers: int,
                 layout: dict[str, tuple[tuple[int, ...], np.dtype]], method: str = "spawn",
                 extras: dict[Any, Any] | None = None, action_shape: tuple[int, ...] = (),
                 action_dtype: Any = np.float32) -> None:
        super().__init__(num, layout, extras)
        ctx = mp.get_context(method)
        entries: list[tuple[Any, tuple[int, ...], Any]] = [(("obs", key), buf.shape, buf.dtype)
                                                           for key, buf in self.obs.items()]
        entries += [("reward", (num,), np.float64), ("terminated", (num,), bool), ("truncated", (num,), bool),
                    ("success", (num,), np.int8), ("actions", (num, *action_shape), action_dtype),
                    ("todo", (num,), bool), ("seed", (num,), np.int64), ("seeded", (num,), bool)]
        shared = _Shared(entries, ctx)
        self._arrays = arrays = _Arrays(shared.views(), list(layout))  # replace _Buffers' own arrays
        self.obs, self.reward, self.terminated, self.truncated = arrays.obs, arrays.reward, arrays.terminated, \
            arrays.truncated
        self.success, self.actions = arrays.success, arrays.actions
        self.todo, self.seed, self.seeded = arrays.todo, arrays.seed, arrays.seeded
        self.success[:] = -1
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        self.local: dict[int, Any] = {}
        self.parts = max(1, min(workers, num))
        self.workers = self.parts - 1  # processes besides this one
        for w in range(1, self.parts):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, make, list(range(w, num, self.parts)), shared,
                                                     list(layout), self.extras), daemon=True,
                               name=f"torchrl_render-env-{w}")
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        try:  # this process's own part, built while the workers start
            for i in range(0, num, self.parts):
                self.local[i] = make()
        except BaseException:
            self.close()
            raise
        self._ready = False

    def _wait_ready(self) -> None:
        if not self._ready:
            for w in range(self.workers):
                self._recv(w, "starting")
            self._ready = True

    def _recv(self, w: int, what: str) -> None:
        """Worker ``w``'s answer; its env's error as a :class:`SlotError` (naming the slot)."""
        try:
            answer = self.conns[w].recv_bytes()
        except EOFError as exc:
            raise RolloutError(f"env worker process {w + 1} died while {what} (exit code "
                               f"{self.procs[w].exitcode})",
                               fix="check the env factory in a single process (--num-envs 1)") from exc
        if answer[:1] != _ERROR:
            return
        text, slot = pickle.loads(answer[1:])
        lines = text.strip().splitlines()
        if slot is not None:
            raise SlotError(slot, lines[0], " | ".join(lines[-3:]))
        raise RolloutError(f"an env worker raised while {what}: {lines[0]}",
                           fix="check the env factory and its reset()/step(); the worker's traceback: "
                               + " | ".join(lines[-3:]))

    def _order(self, cmd: bytes, rows: Sequence[int], what: str) -> None:
        """Marks ``rows`` to do and wakes the workers that hold one, does this process's own rows, then
        reads every answer (so none stays in a pipe) and raises the first error."""
        self._wait_ready()
        todo, parts = self.todo, self.parts
        todo[:] = False
        todo[list(rows)] = True
        busy = sorted({i % parts - 1 for i in rows if i % parts})
        for w in busy:
            self.conns[w].send_bytes(cmd)
        error: Exception | None = None
        try:
            self._here(cmd, [i for i in rows if i % parts == 0])
        except SlotError as exc:
            error = exc
        for w in busy:
            try:
                self._recv(w, what)
            except (SlotError, RolloutError) as exc:
                error = error or exc
        if error is not None:
            raise error

    def _here(self, cmd: bytes, rows: list[int]) -> None:
        """Resets or steps this process's own ``rows``, as a worker does its own."""
        arrays, extras = self._arrays, self.extras
        for i in rows:
            env = self.local[i]
            try:
                if cmd == _RESET:
                    obs, info = env.reset(seed=int(self.seed[i]) if self.seeded[i] else None)
                    self.success[i] = _success(info)
                else:
                    obs, r, term, trunc, info = env.step(self.actions[i].copy())
                    self.reward[i], self.terminated[i], self.truncated[i] = r, term, trunc
                    self.success[i] = _success(info) if info else -1
            except RenderError:
                raise
            except Exception as exc:  # the engine names the episode of this slot
                raise SlotError(i, f"{type(exc).__name__}: {exc}") from exc
            arrays.put(i, obs, env, extras)

    def reset(self, rows: Sequence[int], seeds: Sequence[int | None]) -> None:
        for i, seed in zip(rows, seeds):
            self.seeded[i] = seed is not None
            self.seed[i] = 0 if seed is None else seed
        self._order(_RESET, rows, "resetting")
        for i in rows:
            self.terminated[i] = self.truncated[i] = False
            self.reward[i] = 0.0

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        if actions is not self.actions:
            self.actions[rows] = actions[rows]
        self._order(_STEP, rows, "stepping")

    def env(self, i: int) -> Any:
        return self.local.get(i)  # None: it lives in another process

    def close(self) -> None:
        """Closes every worker (an answer still in a pipe, of a run stopped mid-step, is read past) and this
        process's own envs."""
        conns, self.conns = self.conns, []
        for conn in conns:
            try:
                conn.send_bytes(_CLOSE)
                while conn.poll(5) and conn.recv_bytes() != _CLOSE:
                    pass
            except Exception:
                pass
            conn.close()
        procs, self.procs = self.procs, []
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        local, self.local = self.local, {}
        _close_all(list(local.values()))


def step_seconds(make: Callable[[], Any], steps: int = 20) -> float:
    """The median wall time of one ``env.step`` with sampled actions, on an env that ``make()`` builds for
    this alone and that is closed after: no env of the run is stepped for it (a stateful wrapper, e.g.
    ``NormalizeObservation``, would start its first episode from other statistics)."""
    env = make()
    try:
        env.reset(seed=0)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            times.append(time.perf_counter() - t0)
            if term or trunc:
                env.reset()
    finally:
        env.close()
    return float(np.median(times))


def cpu_count() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
