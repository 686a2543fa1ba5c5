"""Drawing MuJoCo scenes with OpenGL, on the calling thread or on a thread of its own.

A MuJoCo frame has two halves: ``mjv_updateScene`` copies the simulation into an
``MjvScene`` (cheap; it must see ``data`` as the env left it, so it runs where the env
steps), and ``mjr_render`` + ``mjr_readPixels`` turn the scene into pixels (all the GL
time, during which MuJoCo releases the GIL). :class:`ThreadedDrawer` does the second
half on its own thread: while a frame is drawn, the env steps, the policy acts and the
encoder encodes. The backend fills one of two scene buffers while the other is drawn.

A GL context is current on one thread at a time. The drawer makes its context current
on its drawing thread only, so the env's own contexts on the main thread (gymnasium's
viewers, dm_control's) are never displaced. One hazard remains: a garbage collection
that happens to run on the drawing thread may finalise *another* renderer's
``MjrContext``, which deletes its GL objects in whatever context is current there
(ours; GL object ids coincide between contexts). A ``gc.callbacks`` hook unbinds our
context for the length of such a collection. Unbinding is known here for EGL, the
headless default; on other platforms (osmesa, glfw) :class:`InlineDrawer` draws on the
calling thread, with the collector paused meanwhile, as before.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from types import ModuleType
from typing import TYPE_CHECKING

from ..contracts import Frames

if TYPE_CHECKING:
    import mujoco

__all__ = ["Canvas", "InlineDrawer", "ThreadedDrawer", "make_drawer"]


class Canvas:
    """A GL context and an ``MjrContext`` of ``width`` x ``height``; use it from one thread only.

    The ``MjrContext`` copies the model's offscreen-buffer size and multisampling at
    creation: set those on the model before making the canvas.
    """

    def __init__(self, mujoco: ModuleType, model: mujoco.MjModel, width: int, height: int) -> None:
        import numpy as np

        self._mujoco = mujoco
        self.gl_context = mujoco.GLContext(width, height)
        try:
            self.gl_context.make_current()
            self.context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self.context)
        except BaseException:
            self.gl_context.free()
            raise
        self.rect = mujoco.MjrRect(0, 0, width, height)
        self._pixels = np.empty((height, width, 3), np.uint8)

    def draw(self, scenes: Sequence[mujoco.MjvScene], names: Sequence[str]) -> Frames:
        """``{name: H x W x 3 uint8 frame}``, one per scene, top row first."""
        mujoco = self._mujoco
        self.gl_context.make_current()
        frames: Frames = {}
        for name, scene in zip(names, scenes, strict=True):
            mujoco.mjr_render(self.rect, scene, self.context)
            mujoco.mjr_readPixels(self._pixels, None, self.rect, self.context)
            frames[name] = self._pixels[::-1].copy()  # GL's rows start at the bottom
        return frames

    def close(self) -> None:
        """Frees the GL objects (in this canvas's own context) and the context."""
        self.gl_context.make_current()
        self.context.free()
        self.gl_context.free()


class InlineDrawer:
    """Draws on the calling thread; ``after()`` runs after each draw (it hands the env's context back)."""

    threaded = False

    def __init__(self, make_canvas: Callable[[], Canvas], after: Callable[[], None]) -> None:
        self._after = after
        self.canvas: Canvas | None = None
        try:
            self.canvas = make_canvas()
        finally:
            after()

    def submit(self, scenes: Sequence[mujoco.MjvScene], names: Sequence[str]) -> Future[Frames]:
        future: Future[Frames] = Future()
        collecting = gc.isenabled()
        gc.disable()  # a finaliser run now could free another MjrContext into our current GL context
        try:
            assert self.canvas is not None, "drawer used after close"
            future.set_result(self.canvas.draw(scenes, names))
        finally:
            if collecting:
                gc.enable()
            self._after()
        return future

    def close(self) -> None:
        canvas, self.canvas = self.canvas, None
        if canvas is not None:
            try:
                canvas.close()
            finally:
                self._after()


class ThreadedDrawer:
    """Draws on a thread of its own; ``submit`` returns at once with a :class:`~concurrent.futures.Future`.

    Args:
        make_canvas: Builds the :class:`Canvas`; called on the drawing thread.
        unbind: Makes no context current on the calling thread (used by the collector hook).
    """

    threaded = True

    def __init__(self, make_canvas: Callable[[], Canvas], unbind: Callable[[], None]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._unbind = unbind
        self._thread: int | None = None
        self._unbound = False
        self.canvas: Canvas | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchrl_render-gl")
        try:
            self._pool.submit(self._open, make_canvas).result()
        except BaseException:
            self._pool.shutdown(wait=True)
            raise

    def _open(self, make_canvas: Callable[[], Canvas]) -> None:
        self._thread = threading.get_ident()
        self.canvas = make_canvas()  # its context is now current on this thread: guard it from here on
        gc.callbacks.append(self._collector_hook)

    def _collector_hook(self, phase: str, info: dict[str, int]) -> None:
        """Unbinds our context while a collection runs on the drawing thread; binds it again after."""
        if threading.get_ident() != self._thread or self.canvas is None:
            return
        if phase == "start":
            self._unbind()
            self._unbound = True
        elif self._unbound:
            self._unbound = False
            self.canvas.gl_context.make_current()

    def submit(self, scenes: Sequence[mujoco.MjvScene], names: Sequence[str]) -> Future[Frames]:
        if self.canvas is None:
            raise RuntimeError("submit() after close()")
        return self._pool.submit(self.canvas.draw, scenes, names)

    def _close_canvas(self) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._collector_hook)
        canvas, self.canvas = self.canvas, None
        if canvas is not None:
            canvas.close()

    def close(self) -> None:
        """Frees the canvas on its thread and stops the thread; safe twice, and from a finaliser on that thread."""
        if self.canvas is None:
            self._pool.shutdown(wait=False)
            return
        if threading.get_ident() == self._thread:  # a finaliser running on the drawing thread itself
            self._close_canvas()
            self._pool.shutdown(wait=False)
            return
        try:
            self._pool.submit(self._close_canvas).result()
        finally:
            self._pool.shutdown(wait=True)


def make_drawer(mujoco: ModuleType, make_canvas: Callable[[], Canvas], hand_back: Callable[[], None],
                threaded: bool | None = None) -> InlineDrawer | ThreadedDrawer:
    """A :class:`ThreadedDrawer` where the platform allows it (or ``threaded=True``), else an :class:`InlineDrawer`.

    Raises:
        ValueError: ``threaded=True`` on a platform whose contexts cannot be unbound here.
    """
    unbind = _unbinder(mujoco)
    if threaded is None:
        threaded = unbind is not None
    if not threaded:
        return InlineDrawer(make_canvas, hand_back)
    if unbind is None:
        raise ValueError("drawing on a thread needs MUJOCO_GL=egl (its contexts can be unbound from a thread)")
    return ThreadedDrawer(make_canvas, unbind)


def _unbinder(mujoco: ModuleType) -> Callable[[], None] | None:
    module = getattr(getattr(mujoco, "GLContext", None), "__module__", "") or ""
    if module.rpartition(".")[2] != "egl":
        return None
    from mujoco import egl

    def unbind() -> None:
        api = egl.EGL
        api.eglMakeCurrent(egl.EGL_DISPLAY, api.EGL_NO_SURFACE, api.EGL_NO_SURFACE, api.EGL_NO_CONTEXT)

    return unbind
