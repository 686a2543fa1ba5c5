"""K gymnasium envs as numpy slots: in this process, or in worker processes.

Both kinds share one shape: ``obs[key]`` is a ``[K, ...]`` array, ``reward`` ``[K]`` float64,
``terminated`` / ``truncated`` ``[K]`` bool and ``success`` ``[K]`` int8 (-1: not reported);
``reset(rows, seeds)`` and ``step(rows, actions)`` fill the given rows only, so a slot without an
episode is never stepped. Episode seeds go to ``env.reset(seed=...)`` itself. With ``record_infos``, each
slot also keeps the info dicts of its episode so far (the reset's, then each step's), which
``take_infos(i)`` hands over once (from a worker process, in one message an episode).

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
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import TypeAlias

import numpy as np
from numpy.typing import DTypeLike, NDArray

from ..contracts import Array, UserEnv
from ..envs.mjlog import quiet_mujoco_log
from ..errors import RenderError, RolloutError
from ..keys import NestedKey
from .procs import freeze_inherited_heap

__all__ = ["Extras", "InProcessSlots", "Layout", "ProcessSlots", "Readers", "SlotError", "obs_layout", "step_seconds"]

#: One env's observation entries, ``{key: (shape, dtype)}`` with torchrl's key names (:func:`obs_layout`).
Layout: TypeAlias = "dict[str, tuple[tuple[int, ...], np.dtype[np.generic[object]]]]"

#: Further per-step entries read from each env after its reset and each step (MuJoCo's qpos, mocap poses), by
#: their TensorDict key (which may be nested): ``{key: read(env)}``, a float64 array each.
Readers: TypeAlias = "dict[NestedKey, Callable[[UserEnv], NDArray[np.float64]]]"

#: :data:`Readers` with the shape of what each reads: ``{key: (shape, read(env))}``.
Extras: TypeAlias = "dict[NestedKey, tuple[tuple[int, ...], Callable[[UserEnv], NDArray[np.float64]]]]"

#: An env's observation as the slots take it: an array (a Box space), or a dict of arrays (a Dict of Boxes).
Observation: TypeAlias = "Array | Mapping[str, Array]"

#: An env's info dict, as ``reset`` and ``step`` returned it.
Info: TypeAlias = "dict[str, object]"

#: The name of one array in the shared block: ``"reward"``, ``"todo"``... or ``("obs", key)`` for an observation
#: entry.
SharedName: TypeAlias = "str | tuple[str, NestedKey]"


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


def obs_layout(space: object) -> Layout | None:
    """``{key: (shape, dtype)}`` of a Box or a flat Dict of Boxes, with torchrl's key names; else None."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return {"observation": (tuple(space.shape), np.dtype(space.dtype))}
    if isinstance(space, spaces.Dict):
        boxes = [(str(k), s) for k, s in space.spaces.items() if isinstance(s, spaces.Box)]
        if len(boxes) == len(space.spaces):
            return {k: (tuple(s.shape), np.dtype(s.dtype)) for k, s in boxes}
    return None


def _success(info: Mapping[str, object]) -> int:
    value = info.get("is_success", info.get("success"))
    return -1 if value is None else int(bool(np.any(np.asarray(value))))


class _Buffers:
    """The per-slot arrays the engine reads after each call."""

    def __init__(self, num: int, layout: Layout, extras: Extras | None = None, record_infos: bool = False) -> None:
        self.num, self.layout = num, layout
        #: Each slot's info dicts since its reset (the reset's first), kept only when a data writer stores them.
        self.infos: dict[int, list[Info]] | None = {} if record_infos else None
        self.obs: dict[NestedKey, Array] = {k: np.zeros((num, *shape), dtype) for k, (shape, dtype) in layout.items()}
        #: Further per-step entries read from each env after reset and step (e.g. MuJoCo's qpos).
        self.extras: Readers = {key: fn for key, (_, fn) in (extras or {}).items()}
        for key, (shape, _) in (extras or {}).items():
            self.obs[key] = np.zeros((num, *shape), np.float64)
        self.reward = np.zeros(num, np.float64)
        self.terminated = np.zeros(num, bool)
        self.truncated = np.zeros(num, bool)
        self.success = np.full(num, -1, np.int8)
        self.single = len(layout) == 1 and "observation" in layout  # a Box space's (or a Dict's of one such entry)

    def _put(self, i: int, obs: Observation, extra: dict[NestedKey, NDArray[np.float64]] | None = None) -> None:
        # per step: a Box space's array is stored at once; a Dict space's entries one by one (a Dict whose only
        # entry is named "observation" too: its obs is a mapping)
        if self.single and (isinstance(obs, np.ndarray) or not isinstance(obs, Mapping)):
            self.obs["observation"][i] = obs
        else:
            for key in self.layout:
                self.obs[key][i] = obs[key]
        for name, value in (extra or {}).items():
            self.obs[name][i] = value

    def _log(self, i: int, info: Info, reset: bool) -> None:
        """Keeps slot ``i``'s info dict (the first of its episode at a reset)."""
        assert self.infos is not None  # the callers log only with record_infos
        if reset:
            self.infos[i] = [info]
        else:
            self.infos[i].append(info)

    def take_infos(self, i: int) -> list[Info]:
        """Slot ``i``'s info dicts since its last reset (``n + 1`` after ``n`` steps), handed over once."""
        if self.infos is None:
            raise ValueError("the slots were made without record_infos")
        return self.infos.pop(i, [])


class InProcessSlots(_Buffers):
    """K gymnasium envs stepped one after another in this process (like ``SyncVectorEnv``).

    Args:
        envs: The gymnasium envs (all with the same observation space).

    Example (a Dict space whose one entry is named ``observation``: its dicts are read as a Dict space's):
        >>> import gymnasium
        >>> from gymnasium.wrappers import TransformObservation
        >>> env = gymnasium.make("Pendulum-v1")
        >>> space = gymnasium.spaces.Dict(observation=env.observation_space)
        >>> env = TransformObservation(env, lambda o: {"observation": o}, space)
        >>> slots = InProcessSlots([env])
        >>> slots.reset([0], [3]); slots.obs["observation"].shape
        (1, 3)
        >>> slots.close()
    """

    kind = "serial"

    def __init__(self, envs: Sequence[UserEnv], extras: Extras | None = None, record_infos: bool = False) -> None:
        layout = obs_layout(envs[0].observation_space)
        if layout is None:
            raise ValueError("InProcessSlots needs a Box or flat Dict observation space")
        super().__init__(len(envs), layout, extras, record_infos)
        self.envs = list(envs)

    def _extra(self, i: int) -> dict[NestedKey, NDArray[np.float64]] | None:
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
            if self.infos is not None:
                self._log(i, info, True)
            self.terminated[i] = self.truncated[i] = False
            self.reward[i] = 0.0

    def step(self, rows: Sequence[int], actions: Array) -> None:
        envs, reward, terminated, truncated, success = self.envs, self.reward, self.terminated, self.truncated, \
            self.success
        log = self._log if self.infos is not None else None
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
            if log is not None:
                log(i, info, False)

    def env(self, i: int) -> UserEnv:
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

    def __init__(self, entries: list[tuple[SharedName, tuple[int, ...], DTypeLike]], ctx: BaseContext) -> None:
        self.entries: list[tuple[SharedName, tuple[int, ...], str, int]] = []
        offset = 0
        for name, shape, dtype_like in entries:
            dtype = np.dtype(dtype_like)
            offset = -(-offset // 64) * 64  # each array starts on a cache line
            self.entries.append((name, tuple(shape), dtype.str, offset))
            offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.block = ctx.RawArray("b", max(offset, 1))

    def views(self) -> dict[SharedName, Array]:
        """``{name: array}`` over the block (no copy)."""
        flat = np.frombuffer(self.block, np.uint8)
        out: dict[SharedName, Array] = {}
        for name, shape, dtype, offset in self.entries:
            size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            out[name] = flat[offset:offset + size].view(dtype).reshape(shape)
        return out


def _worker(conn: Connection[bytes, bytes], make: Callable[[], UserEnv], slots: list[int], shared: _Shared,
            layout: list[str], extras: Readers, w: int = 0, record_infos: bool = False) -> None:
    """Worker process ``w``: one env per slot in ``slots``, built here and stepped on the parent's orders.

    Observations, rewards, flags, success reports and extras go into the shared arrays; actions, the
    slots to step (``todo``) and reset seeds come from them, and so do the orders themselves
    (:class:`_Handoff`): the pipe carries only the start-up answer, an error's text and wake-ups.

    Ctrl-C is the parent's to handle: a terminal sends SIGINT to the whole process group, so the
    worker ignores it and ends when the parent closes it, or quietly when the parent is gone (its
    end of the pipe closed: EOF or a broken pipe), with no traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    freeze_inherited_heap()
    envs: dict[int, UserEnv] = {}
    try:
        try:
            quiet_mujoco_log()  # MuJoCo's warnings: debug log lines, not stderr nor a MUJOCO_LOG.TXT
            for i in slots:
                envs[i] = make()
        except BaseException as exc:  # the parent raises it with the worker's traceback
            _send_error(conn, exc, None)
            return
        conn.send_bytes(_OK)
        views = shared.views()
        _serve(conn, envs, _Arrays(views, layout), extras, _Handoff(views, w, conn, "worker"), record_infos)
    except (EOFError, OSError):  # the parent went away: nobody to answer
        _close_all(list(envs.values()))


def _close_all(envs: list[UserEnv]) -> None:
    """Closes a worker's envs on its way out; an env whose close fails has nobody to tell (the run is over)."""
    for env in envs:
        try:
            env.close()
        except Exception:
            pass


class _Arrays:
    """The shared arrays by role (what :class:`_Buffers` holds, plus the actions)."""

    def __init__(self, views: dict[SharedName, Array], layout: list[str]) -> None:
        self.obs = {name[1]: v for name, v in views.items() if isinstance(name, tuple) and name[0] == "obs"}
        self.reward, self.terminated, self.truncated = views["reward"], views["terminated"], views["truncated"]
        self.success, self.actions = views["success"], views["actions"]
        self.todo, self.seed, self.seeded = views["todo"], views["seed"], views["seeded"]
        self.layout = layout
        self.single = layout == ["observation"]  # a Box space's (or a Dict's of one such entry)

    def put(self, i: int, obs: Observation, env: UserEnv, extras: Readers) -> None:
        # per step: as _Buffers._put
        if self.single and (isinstance(obs, np.ndarray) or not isinstance(obs, Mapping)):
            self.obs["observation"][i] = obs
        else:
            for key in self.layout:
                self.obs[key][i] = obs[key]
        for name, fn in extras.items():
            self.obs[name][i] = fn(env)


#: The orders (parent -> worker, in the shared ``cmd``), the start-up answer and a wake-up (one byte on the
#: pipe); an error is ``_ERROR`` followed by the pickled ``(text, slot)``, on the pipe, and the answer to
#: ``_INFOS`` (the info dicts of the slots to do) is ``_DATA`` followed by the pickled ``{slot: [info, ...]}``.
_STEP, _RESET, _CLOSE, _INFOS, _OK, _ERROR, _DATA = b"s", b"r", b"c", b"i", b"k", b"e", b"d"
_CODES = {_STEP: 1, _RESET: 2, _CLOSE: 3, _INFOS: 4}
_COMMANDS = {code: cmd for cmd, code in _CODES.items()}

#: How long a side polls the shared flags for the other before it blocks on the pipe. Longer than a batch step
#: usually takes (a policy call, a few MuJoCo steps), so a busy run never sleeps; short enough that a paused run
#: (a slow writer, a breakpoint) costs nothing. A blocked side re-checks the flags every ``_BLOCK_S`` anyway.
_SPIN_S = 2e-3
_BLOCK_S = 0.05


class _Handoff:
    """The orders between the parent and worker ``w`` through shared memory: polled, no syscall a step.

    The parent writes ``cmd[w]`` then bumps ``order[w]``; the worker, polling ``order[w]``, does the order and
    sets ``answer[w]`` to it. Each side polls for ``_SPIN_S`` (the pattern of EnvPool's and Sample Factory's
    workers), then marks itself asleep and blocks on the pipe, where the other side sends one byte once it
    sees the mark. Between marking and blocking it checks the flag again, after a lock round trip that orders
    the two (a full barrier), and it blocks with a timeout, so a missed wake-up costs at most ``_BLOCK_S``.
    An error's text travels on the pipe before its answer (``failed[w]`` set), so neither side reads the pipe
    in the common case.
    """

    def __init__(self, views: dict[SharedName, Array], w: int, conn: Connection[bytes, bytes], side: str) -> None:
        self.order, self.answer, self.cmd = views["order"], views["answer"], views["cmd"]
        self.failed = views["failed"]
        # what this side marks when it blocks, and what it reads to know whether the other side blocked
        mine, theirs = (views["worker_asleep"], views["parent_asleep"]) if side == "worker" else \
            (views["parent_asleep"], views["worker_asleep"])
        self.mine, self.theirs, self.w, self.conn = mine, theirs, w, conn
        self.errors: list[bytes] = []  # error texts (and data answers) read off the pipe while waiting
        self.fence = threading.Lock()

    def _wake(self) -> None:
        if self.theirs[self.w]:
            self.conn.send_bytes(_OK)

    def _wait(self, flag: Array, value: int) -> None:
        """Until ``flag[w] == value``: polled, then blocked on the pipe (bytes read there are kept if errors)."""
        w, clock = self.w, time.perf_counter
        if flag[w] == value:
            return
        deadline = clock() + _SPIN_S
        while clock() < deadline:
            if flag[w] == value:
                return
        mine, conn = self.mine, self.conn
        while True:
            mine[w] = 1
            with self.fence:  # the mark is visible before the flag is read again
                pass
            if flag[w] == value:
                mine[w] = 0
                return
            if conn.poll(_BLOCK_S):
                data = conn.recv_bytes()  # EOFError: the other side is gone
                if data[:1] in (_ERROR, _DATA):
                    self.errors.append(data)
            mine[w] = 0
            if flag[w] == value:
                return

    # -- the parent's side --
    def send(self, cmd: bytes) -> None:
        self.cmd[self.w] = _CODES[cmd]
        self.order[self.w] += 1
        with self.fence:  # the order is visible before the worker's mark is read
            pass
        self._wake()

    def receive(self) -> bytes | None:
        """Waits for the answer to the last order: None, or the error text the worker sent with it."""
        self._wait(self.answer, int(self.order[self.w]))
        if not self.failed[self.w]:
            return None
        self.failed[self.w] = 0
        return self._message(_ERROR)

    def _message(self, kind: bytes) -> bytes:
        """The first message of ``kind`` read off the pipe (kept while waiting, or read now)."""
        while True:
            for n, data in enumerate(self.errors):
                if data[:1] == kind:
                    return self.errors.pop(n)
            data = self.conn.recv_bytes()
            if data[:1] in (_ERROR, _DATA):
                self.errors.append(data)

    def data(self) -> dict[int, list[Info]]:
        """The data the worker sent with its answer to the last order (sent before the answer, so it is there): the
        only data a worker sends is its slots' info dicts (``_INFOS``)."""
        return pickle.loads(self._message(_DATA)[1:])

    # -- the worker's side --
    def next_order(self, last: int) -> tuple[int, bytes]:
        """Waits for the order after ``last``: ``(its number, the command)``."""
        self._wait(self.order, last + 1)
        return last + 1, _COMMANDS[int(self.cmd[self.w])]

    def done(self, number: int) -> None:
        self.answer[self.w] = number
        with self.fence:
            pass
        self._wake()


def _send_error(conn: Connection[bytes, bytes], exc: BaseException, slot: int | None) -> None:
    conn.send_bytes(_ERROR + pickle.dumps((f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}", slot)))


def _serve(conn: Connection[bytes, bytes], envs: dict[int, UserEnv], arrays: _Arrays, extras: Readers,
           handoff: _Handoff, record_infos: bool = False) -> None:
    """Answers ``reset`` / ``step`` / ``infos`` orders until ``close``; an env's error names its slot."""
    put, reward, terminated, truncated, success, actions, todo = arrays.put, arrays.reward, arrays.terminated, \
        arrays.truncated, arrays.success, arrays.actions, arrays.todo
    mine = sorted(envs)
    infos: dict[int, list[Info]] = {}  # each slot's info dicts since its reset, with record_infos
    number = 0
    while True:
        number, cmd = handoff.next_order(number)
        if cmd == _CLOSE:
            _close_all(list(envs.values()))
            handoff.done(int(handoff.order[handoff.w]))  # a close that came as a step was read: answered too
            return
        i = None
        try:
            if cmd == _RESET:
                for i in mine:
                    if todo[i]:
                        obs, info = envs[i].reset(seed=int(arrays.seed[i]) if arrays.seeded[i] else None)
                        put(i, obs, envs[i], extras)
                        success[i] = _success(info)
                        if record_infos:
                            infos[i] = [info]
            elif cmd == _INFOS:
                i = None
                conn.send_bytes(_DATA + _pickled_infos({j: infos.pop(j, []) for j in mine if todo[j]}))
            else:
                for i in mine:
                    if todo[i]:
                        obs, r, term, trunc, info = envs[i].step(actions[i].copy())
                        put(i, obs, envs[i], extras)
                        reward[i], terminated[i], truncated[i] = r, term, trunc
                        success[i] = _success(info) if info else -1
                        if record_infos:
                            infos[i].append(info)
        except BaseException as exc:  # SIGINT is ignored here: this is the env's own error, for the parent
            handoff.failed[handoff.w] = 1
            _send_error(conn, exc, i)
        handoff.done(number)


def _pickled_infos(infos: dict[int, list[Info]]) -> bytes:
    """The info dicts for the pipe; an entry that does not pickle (an env handle, a lambda) is left out of them
    (a data writer stores arrays and numbers only)."""
    try:
        return pickle.dumps(infos)
    except Exception:
        def plain(info: Info) -> Info:
            out: Info = {}
            for key, value in info.items():
                if isinstance(value, dict):
                    out[key] = plain(value)
                    continue
                try:
                    pickle.dumps(value)
                except Exception:
                    continue
                out[key] = value
            return out

        return pickle.dumps({slot: [plain(info) for info in log] for slot, log in infos.items()})


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
        record_infos: Keep each slot's info dicts (see :meth:`take_infos`).
    """

    kind = "parallel"

    def __init__(self, make: Callable[[], UserEnv], num: int, workers: int, layout: Layout, method: str = "spawn",
                 extras: Extras | None = None, action_shape: tuple[int, ...] = (),
                 action_dtype: DTypeLike = np.float32, record_infos: bool = False) -> None:
        super().__init__(num, layout, extras, record_infos)
        ctx = mp.get_context(method)
        entries: list[tuple[SharedName, tuple[int, ...], DTypeLike]] = [(("obs", key), buf.shape, buf.dtype)
                                                                         for key, buf in self.obs.items()]
        entries += [("reward", (num,), np.float64), ("terminated", (num,), bool), ("truncated", (num,), bool),
                    ("success", (num,), np.int8), ("actions", (num, *action_shape), action_dtype),
                    ("todo", (num,), bool), ("seed", (num,), np.int64), ("seeded", (num,), bool)]
        parts = max(1, min(workers, num))
        flags = max(parts - 1, 1)  # the hand-off's flags, one each per worker (:class:`_Handoff`)
        entries += [(name, (flags,), np.int64) for name in ("order", "answer")]
        entries += [(name, (flags,), np.uint8) for name in ("cmd", "failed", "worker_asleep", "parent_asleep")]
        shared = _Shared(entries, ctx)
        views = shared.views()
        self._arrays = arrays = _Arrays(views, list(layout))  # replace _Buffers' own arrays
        self.obs, self.reward, self.terminated, self.truncated = arrays.obs, arrays.reward, arrays.terminated, \
            arrays.truncated
        self.success, self.actions = arrays.success, arrays.actions
        self.todo, self.seed, self.seeded = arrays.todo, arrays.seed, arrays.seeded
        self.success[:] = -1
        self.conns: list[Connection[bytes, bytes]] = []
        self.procs: list[BaseProcess] = []
        self.handoffs: list[_Handoff] = []
        self.started: list[bool] = []  # whether each worker said it built its envs (its start-up answer read)
        self.local: dict[int, UserEnv] = {}
        self.parts = parts
        self.workers = self.parts - 1  # processes besides this one
        for w in range(1, self.parts):
            parent, child = ctx.Pipe()
            # typeshed types get_context(str) as BaseContext, which lacks Process; every context it returns has it
            proc = ctx.Process(  # type: ignore[attr-defined]
                target=_worker, args=(child, make, list(range(w, num, self.parts)), shared, list(layout), self.extras,
                                      w - 1, record_infos), daemon=True, name=f"torchrl_render-env-{w}")
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
            self.handoffs.append(_Handoff(views, w - 1, parent, "parent"))
            self.started.append(False)
        try:  # this process's own part, built while the workers start
            for i in range(0, num, self.parts):
                self.local[i] = make()
        except BaseException:
            self.close()
            raise

    def _wait_ready(self) -> None:
        for w, started in enumerate(self.started):
            if not started:
                self._recv(w, "starting")
                self.started[w] = True

    def _recv(self, w: int, what: str) -> None:
        """Worker ``w``'s start-up answer on the pipe; its error as a :class:`RolloutError`."""
        try:
            answer = self.conns[w].recv_bytes()
        except EOFError as exc:
            raise self._died(w, what) from exc
        if answer[:1] == _ERROR:
            self._raise(answer, what)

    def _died(self, w: int, what: str) -> RolloutError:
        self.procs[w].join(timeout=1)
        return RolloutError(f"env worker process {w + 1} died while {what} (exit code {self.procs[w].exitcode})",
                            fix="check the env factory in a single process (--num-envs 1)")

    @staticmethod
    def _raise(answer: bytes, what: str) -> None:
        """An error text from a worker: a :class:`SlotError` naming the slot, else a :class:`RolloutError`."""
        text, slot = pickle.loads(answer[1:])
        lines = text.strip().splitlines()
        if slot is not None:
            raise SlotError(slot, lines[0], " | ".join(lines[-3:]))
        raise RolloutError(f"an env worker raised while {what}: {lines[0]}",
                           fix="check the env factory and its reset()/step(); the worker's traceback: "
                               + " | ".join(lines[-3:]))

    def _answer(self, w: int, what: str) -> None:
        """Worker ``w``'s answer to the last order (see :class:`_Handoff`); its env's error, raised."""
        try:
            error = self.handoffs[w].receive()
        except (EOFError, OSError) as exc:
            raise self._died(w, what) from exc
        if error is not None:
            self._raise(error, what)

    def _order(self, cmd: bytes, rows: Sequence[int], what: str) -> None:
        """Marks ``rows`` to do and wakes the workers that hold one, does this process's own rows, then
        waits for every answer (so none is left behind) and raises the first error."""
        self._wait_ready()
        todo, parts = self.todo, self.parts
        todo[:] = False
        todo[list(rows)] = True
        busy = sorted({i % parts - 1 for i in rows if i % parts})
        for w in busy:
            try:
                self.handoffs[w].send(cmd)
            except OSError as exc:  # its end of the pipe is closed: it died
                raise self._died(w, what) from exc
        error: Exception | None = None
        try:
            self._here(cmd, [i for i in rows if i % parts == 0])
        except SlotError as exc:
            error = exc
        for w in busy:
            try:
                self._answer(w, what)
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
                if self.infos is not None:
                    self._log(i, info, cmd == _RESET)
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

    def step(self, rows: Sequence[int], actions: Array) -> None:
        if actions is not self.actions:
            self.actions[rows] = actions[rows]
        self._order(_STEP, rows, "stepping")

    def take_infos(self, i: int) -> list[Info]:
        """Slot ``i``'s info dicts since its last reset; from a worker process, one order and one message."""
        if self.infos is None or i % self.parts == 0:
            return super().take_infos(i)
        w = i % self.parts - 1
        self._wait_ready()
        self.todo[:] = False
        self.todo[i] = True
        try:
            self.handoffs[w].send(_INFOS)
            self._answer(w, "sending its infos")
            return self.handoffs[w].data().get(i, [])
        except (EOFError, OSError) as exc:
            raise self._died(w, "sending its infos") from exc

    def env(self, i: int) -> UserEnv:
        return self.local.get(i)  # None: it lives in another process

    def close(self) -> None:
        """Closes every worker (one stopped mid-step, by an error or Ctrl-C here, finishes that step first)
        and this process's own envs."""
        conns, self.conns = self.conns, []
        handoffs, self.handoffs = self.handoffs, []
        procs, self.procs = self.procs, []
        closing = []
        for w, handoff in enumerate(handoffs):
            try:
                if not self.started[w] and not (conns[w].poll(5) and conns[w].recv_bytes()[:1] == _OK):
                    continue  # it failed to start (its error is read past), or is stuck building its envs
                handoff.send(_CLOSE)
                closing.append((handoff, procs[w]))
            except (EOFError, OSError):  # it is gone already
                pass
        deadline = time.monotonic() + 5
        for handoff, proc in closing:
            while handoff.answer[handoff.w] != handoff.order[handoff.w] and proc.is_alive() \
                    and time.monotonic() < deadline:
                time.sleep(0.001)
        for conn in conns:
            conn.close()
        for proc in procs:
            proc.join(timeout=max(0.1, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=1)
        local, self.local = self.local, {}
        _close_all(list(local.values()))


def step_seconds(make: Callable[[], UserEnv], steps: int = 20) -> float:
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
