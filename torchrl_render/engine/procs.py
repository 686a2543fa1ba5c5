"""How env worker processes start when they cannot be forked from this process: a fork server.

A spawned worker is a new interpreter that imports torch, tensordict and torchrl again before it builds its
env: seconds each, over ten for K = 4 on a busy two-core machine. With ``forkserver`` (POSIX) one server
process imports them once, and every worker after that is a fork of it, ready in a fraction of a second;
the first run pays one import instead of K, each later run in the same process (a notebook, a sweep's
cells) almost none. The factory must be picklable, as for ``spawn``.

The server keeps what it started with, so two things are seen to:

- the environment: a worker gets this process's ``os.environ`` of the moment it starts (:class:`InThisEnviron`),
  as a spawned one would;
- OpenGL's choice, made at import time from ``MUJOCO_GL``, ``PYOPENGL_PLATFORM`` and the display variables
  (torchrl imports PyOpenGL and MuJoCo): once those differ from the server's, workers are spawned instead.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import os
from collections.abc import Callable, Iterator
from typing import Generic, ParamSpec, TypeVar

PRELOAD = ["torch", "tensordict", "torchrl.envs"]
GL_VARS = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_EGL_DEVICE_ID")

_server_gl: tuple[str | None, ...] | None = None  # the GL variables the fork server was started with

_P = ParamSpec("_P")
_R = TypeVar("_R")


def pickling_start_method() -> str:
    """``"forkserver"`` where it can serve this run, else ``"spawn"``: for workers that get a pickled factory."""
    global _server_gl
    if "forkserver" not in mp.get_all_start_methods():
        return "spawn"
    gl = tuple(os.environ.get(name) for name in GL_VARS)
    if _server_gl is None:
        mp.set_forkserver_preload(PRELOAD)  # taken when the server starts, at the first worker's start
        _server_gl = gl
    return "forkserver" if gl == _server_gl else "spawn"


class InThisEnviron(Generic[_P, _R]):
    """``make`` run in a worker with the environment this process had when the object was made.

    Example:
        >>> os.environ["TORCHRL_RENDER_DOCTEST"] = "1"
        >>> from functools import partial
        >>> make = InThisEnviron(partial(os.environ.get, "TORCHRL_RENDER_DOCTEST"))
        >>> del os.environ["TORCHRL_RENDER_DOCTEST"]
        >>> make()  # as a worker process calls it: the variable is back
        '1'
        >>> del os.environ["TORCHRL_RENDER_DOCTEST"]
    """

    def __init__(self, make: Callable[_P, _R]) -> None:
        self.make, self.environ = make, dict(os.environ)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        return self.make(*args, **kwargs)


def worker_factory(make: Callable[_P, _R], method: str) -> Callable[_P, _R]:
    """``make`` as the workers of ``method`` should get it (a fork server's with this process's environment)."""
    return InThisEnviron(make) if method == "forkserver" else make


def freeze_inherited_heap() -> None:
    """Leaves the objects a worker process started with out of its garbage collections.

    A forked worker shares its parent's heap, page by page, until it writes to one. A full collection walks
    every object, so it writes to (and copies) them all: half a second or more a worker when the parent is a
    big process (a notebook, a test runner), paid at each full collection and again at close, where torchrl's
    workers call ``gc.collect()``. Frozen, what the worker inherited is never walked; what it makes itself
    still is. A no-op in effect for a spawned worker, which inherited nothing.
    """
    gc.freeze()


@contextlib.contextmanager
def setup_frozen() -> Iterator[None]:
    """Leaves what is alive as a rollout starts (the imports, the env, the policy) out of the garbage
    collector's full collections until it ends, then gives it back.

    A rollout keeps all of that to the end, and a torchrl env's makes TensorDicts every step, so full
    collections come: each walks the whole heap (torch, tensordict and torchrl hold about a million objects),
    0.2 s each on a 2-core machine. Frozen, they walk only what the rollout made. Left alone when something
    froze objects already (the user, a worker process).
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
