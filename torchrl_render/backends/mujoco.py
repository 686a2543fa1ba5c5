"""``mujoco``: renders MuJoCo cameras itself, at ``width`` x ``height``.

Serves gymnasium MuJoCo envs (``env.unwrapped.model`` / ``.data``, no ``render_mode``
needed) and dm_control envs (``physics.model.ptr`` / ``physics.data.ptr``) with
:class:`mujoco.Renderer`. Importing this module does not import ``mujoco``:
:func:`torchrl_render.envs.gl.ensure_headless_gl` runs first, in :meth:`MujocoBackend.from_config`.

Cameras (``cfg.camera``):

* ``"default"``: the env's own view. For gymnasium, the camera its ``render()`` uses,
  set up as gymnasium does (a free camera looking at the median geom position from
  ``model.stat.extent`` away, then ``default_camera_config`` applied, or the
  ``camera_id``/``camera_name`` the env was made with), so the frames equal
  ``env.render()``'s. For dm_control, camera 0 when the model has cameras, else the
  free camera.
* a camera name of the model, an integer index, or ``"-1"`` (MuJoCo's default free camera).

``render_quality`` (:data:`QUALITY`): ``"default"`` keeps MuJoCo's look exactly;
``"balanced"`` keeps its lighting, shadows and reflections with a 1024x1024 shadow map
(MuJoCo's default is 4096) and no multisampling (about 3.7x faster with software OpenGL);
``"fast"`` also turns shadows and reflections off (about 9.3x faster; ``config.RENDER_QUALITY_SPEEDUP``).

The frame shows ``data`` as the env left it after its step, like ``env.render()``;
the renderer never writes to ``data``, so it cannot change the simulation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from ..contracts import Frames, StepView, UserEnv
from ..envs.gl import ensure_headless_gl, gl_notes
from ..envs.mujoco_state import MujocoStateReader  # torchrl.render's torchrl.render.backends.mujoco name
from ..envs.unwrap import SIMULATION_PLACES, describe_env, find_simulation, underlying_env
from ..errors import BackendUnavailable, ConfigError
from .base import RenderBackend, log
from .mjgl import Canvas, InlineDrawer, ThreadedDrawer, make_drawer

if TYPE_CHECKING:
    from concurrent.futures import Future

    import mujoco
    from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

    from ..config import RenderConfig


__all__ = ["QUALITY", "MujocoBackend", "MujocoStateReader", "camera_names", "free_gymnasium_gl",
           "grow_offscreen_buffer", "resolve_camera_id"]

#: Per ``render_quality``: scene flags (``mjtRndFlag`` names) turned off, and ``model.vis.quality``
#: values for the renderer's GL context (it copies them at creation; the model is given back unchanged).
QUALITY: dict[str, tuple[tuple[str, ...], dict[str, int]]] = {
    "default": ((), {}),
    "balanced": ((), {"offsamples": 0, "shadowsize": 1024}),
    "fast": (("mjRND_SHADOW", "mjRND_REFLECTION"), {"offsamples": 0}),
}


def camera_names(model: mujoco.MjModel) -> list[str]:
    """The model's camera names in id order (``""`` for unnamed ones); works on any MjModel-like object."""
    names = bytes(model.names)
    out = []
    for adr in list(model.name_camadr)[: int(model.ncam)]:
        end = names.find(b"\0", int(adr))
        out.append(names[int(adr): end if end >= 0 else None].decode())
    return out


def resolve_camera_id(model: mujoco.MjModel, camera: str | int) -> int:
    """The camera id of ``camera`` (a name, an index or ``"-1"`` for the free camera).

    Raises:
        ConfigError: the model has no such camera; the message lists its cameras.
    """
    names = camera_names(model)
    if isinstance(camera, str) and camera in names:
        return names.index(camera)
    try:
        index = int(camera)
    except (TypeError, ValueError):
        index = None
    if index is not None and -1 <= index < len(names):
        return index
    listed = ", ".join(repr(n) if n else f"{i} (unnamed)" for i, n in enumerate(names))
    expected = (f"'default', -1 (free camera), an index below {len(names)}, or one of the model's cameras: {listed}"
                if names else "'default' or -1 (free camera): this model defines no cameras (cameras: none)")
    raise ConfigError(f"the model has no camera {camera!r}", expected=expected, got=camera,
                      fix="pass one of the listed cameras with --camera")


def grow_offscreen_buffer(model: mujoco.MjModel, width: int, height: int) -> str | None:
    """Raises the model's offscreen buffer to at least ``width`` x ``height``; a note when it changed it."""
    glob = model.vis.global_
    old = (int(glob.offwidth), int(glob.offheight))
    if old[0] >= width and old[1] >= height:
        return None
    glob.offwidth, glob.offheight = max(old[0], width), max(old[1], height)
    return (f"the model's offscreen buffer ({old[0]}x{old[1]}) was smaller than {width}x{height}; "
            f"it was raised to {glob.offwidth}x{glob.offheight} (a visual-only change)")


def _find_simulation(raw: UserEnv) -> tuple[mujoco.MjModel, mujoco.MjData, str, MujocoRenderer | None]:
    """``(model, data, kind, gymnasium_renderer)`` of the raw env, or ``BackendUnavailable``."""
    physics = getattr(raw, "physics", None)
    if physics is not None and hasattr(physics, "model") and hasattr(physics.model, "ptr"):
        return physics.model.ptr, physics.data.ptr, "dm_control", None
    unwrapped = getattr(raw, "unwrapped", raw)
    model, data = getattr(unwrapped, "model", None), getattr(unwrapped, "data", None)
    if _is_mj(model, "MjModel") and _is_mj(data, "MjData"):
        return model, data, "gymnasium", getattr(unwrapped, "mujoco_renderer", None)
    found = find_simulation(raw)  # a dm_control task inside a gymnasium env
    if found is not None:
        return found[0], found[1], "dm_control", None
    raise BackendUnavailable(
        "the mujoco backend needs a MuJoCo simulation",
        expected="a MuJoCo simulation at " + "; ".join(SIMULATION_PLACES),
        got=describe_env(raw),
        fix="use --render-backend env with render_mode='rgb_array', or --from-pixels, for non-MuJoCo envs")


def _is_mj(obj: object, cls_name: str) -> bool:
    return type(obj).__name__ == cls_name and type(obj).__module__.startswith("mujoco")


class MujocoBackend(RenderBackend):
    """Renders ``cameras`` of ``(model, data)``: scenes on the calling thread, pixels on a drawing thread.

    Args:
        model: The ``mujoco.MjModel``.
        data: The ``mujoco.MjData`` the env steps.
        cameras: Camera names (see the module docstring).
        width: Frame width in pixels.
        height: Frame height in pixels.
        render_quality: ``"default"`` (MuJoCo's look), ``"balanced"`` or ``"fast"`` (see :data:`QUALITY`).
        gym_renderer: gymnasium's ``MujocoRenderer`` of the env (for ``"default"``), if any.
        threaded: Draw on a thread of its own (see :mod:`torchrl_render.backends.mjgl`); ``None``:
            wherever the GL platform allows it (EGL).
    """

    name = "mujoco"
    render_qualities = tuple(QUALITY)
    _drawer: InlineDrawer | ThreadedDrawer | None = None  # class defaults: close() works whatever __init__ reached
    _views: Sequence[tuple[str, mujoco.MjvCamera, Callable[[], None]]] = ()  # (camera name, MjvCamera, prepare) each
    _gym_renderer: MujocoRenderer | None = None

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, cameras: list[str], width: int = 480,
                 height: int = 480, render_quality: str = "default", gym_renderer: MujocoRenderer | None = None,
                 threaded: bool | None = None) -> None:
        self._drawer = None
        self._gym_renderer = None
        self._views = []
        super().__init__()
        self.gl = _ensure_gl(self.notes)
        try:
            import mujoco  # after ensure_headless_gl, on purpose
        except ImportError as exc:
            raise BackendUnavailable(f"the mujoco backend needs the mujoco package ({exc})",
                                     fix="install it, or use --render-backend env / pixels",
                                     extra="mujoco==3.17.0") from exc
        self._mujoco = mujoco
        self.gl = _context_name(mujoco).rpartition(".")[2] if hasattr(mujoco, "GLContext") else self.gl
        self.model, self.data = model, data
        self.width, self.height, self.render_quality = int(width), int(height), render_quality
        self.cameras = list(cameras) or ["default"]
        self._option = mujoco.MjvOption()
        for flag, value in (getattr(gym_renderer, "_vopt", None) or {}).items():
            self._option.flags[flag] = value
        self._gym_renderer = gym_renderer
        self._views = [(name, *self._view(name, gym_renderer)) for name in self.cameras]
        max_geom = int(getattr(gym_renderer, "max_geom", None) or 10000)
        # two scene buffers: one is filled from the simulation while the drawing thread draws the other
        self._scenes = [[self._new_scene(max_geom) for _ in self._views] for _ in range(2)]
        self._in_flight: list[Future[Frames] | None] = [None, None]
        self._turn = 0
        self._drawer = self._make_drawer(threaded)
        self.draw_thread = self._drawer.threaded

    @classmethod
    def from_config(cls, env: UserEnv, cfg: RenderConfig) -> MujocoBackend:
        model, data, _kind, gym_renderer = _find_simulation(underlying_env(env))
        return cls(model, data, list(getattr(cfg, "camera", None) or ["default"]),
                   width=getattr(cfg, "width", 480), height=getattr(cfg, "height", 480),
                   render_quality=getattr(cfg, "render_quality", "default"), gym_renderer=gym_renderer)

    def _new_scene(self, max_geom: int) -> mujoco.MjvScene:
        mujoco = self._mujoco
        scene = mujoco.MjvScene(self.model, maxgeom=max_geom)
        for flag in QUALITY[self.render_quality][0]:
            scene.flags[getattr(mujoco.mjtRndFlag, flag)] = 0
        return scene

    def _make_drawer(self, threaded: bool | None) -> InlineDrawer | ThreadedDrawer:
        mujoco, model = self._mujoco, self.model
        glob, quality = model.vis.global_, model.vis.quality
        settings = QUALITY[self.render_quality][1]
        saved = (glob.offwidth, glob.offheight, {name: getattr(quality, name) for name in settings})
        note = grow_offscreen_buffer(model, self.width, self.height)
        if note:
            self.notes.append(note + " for this renderer only")
        for name, value in settings.items():
            setattr(quality, name, value)
        try:  # the MjrContext copies these at creation; the model is given back unchanged
            return make_drawer(mujoco, lambda: Canvas(mujoco, model, self.width, self.height),
                               self._hand_back_context, threaded)
        except _gl_errors(mujoco) as exc:  # a GL context that cannot be made means "cannot serve"
            raise _no_context(mujoco, exc) from exc
        finally:
            glob.offwidth, glob.offheight = saved[:2]
            for name, value in saved[2].items():
                setattr(quality, name, value)

    def begin_episode(self) -> None:
        """Sets cameras that gymnasium sets up at their first frame up again, from this episode's first state.

        Each episode's view then depends on that episode alone, not on which episode an env
        (or an env worker) rendered first: videos are the same for any number of envs.
        """
        for _name, _cam, prepare in self._views:
            reset = getattr(prepare, "reset", None)
            if reset is not None:
                reset()

    def _view(self, name: str, gym_renderer: MujocoRenderer | None) -> tuple[mujoco.MjvCamera, Callable[[], None]]:
        """``(MjvCamera, prepare)``; ``prepare()`` runs before each frame of that camera."""
        mujoco = self._mujoco
        cam = mujoco.MjvCamera()
        if name == "default" and gym_renderer is not None:
            return cam, _gymnasium_default(mujoco, self.model, self.data, gym_renderer, cam)
        if name == "default":
            cam_id = 0 if self.model.ncam > 0 else -1
        else:
            cam_id = resolve_camera_id(self.model, name)
        if cam_id == -1:
            cam.type = mujoco.mjtCamera.mjCAMERA_FREE
            mujoco.mjv_defaultFreeCamera(self.model, cam)
        else:
            cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        cam.fixedcamid = cam_id
        return cam, (lambda: None)

    def submit(self, td: StepView | None) -> Future[Frames]:  # the drawer's (mjgl): a frame per camera, never None
        """Fills a scene buffer from ``data`` now and draws it (on the drawing thread when there is one)."""
        drawer = self._drawer
        if drawer is None:
            raise RuntimeError("capture() after close()")
        turn, self._turn = self._turn, self._turn ^ 1
        earlier = self._in_flight[turn]
        if earlier is not None:
            earlier.exception()  # waits until this buffer's last frame is drawn; its owner sees any error
        mujoco, scenes = self._mujoco, self._scenes[turn]
        for (_name, cam, prepare), scene in zip(self._views, scenes, strict=True):
            prepare()
            mujoco.mjv_updateScene(self.model, self.data, self._option, None, cam, mujoco.mjtCatBit.mjCAT_ALL,
                                   scene)
        future = self._in_flight[turn] = drawer.submit(scenes, self.cameras)
        return future

    def capture(self, td: StepView | None) -> Frames:
        return self.submit(td).result()

    def _hand_back_context(self) -> None:
        """Makes the env's own gymnasium renderer's GL context current again.

        gymnasium's offscreen viewer makes its context current only when it is
        created (or when it has several), so a context left current by us would
        receive its drawing (and its wrong GL object ids): pixel observations and
        ``env.render()`` would break. dm_control makes its context current itself.
        """
        viewer = getattr(self._gym_renderer, "viewer", None)
        if viewer is not None and callable(getattr(viewer, "make_context_current", None)):
            viewer.make_context_current()

    def info(self) -> dict[str, object]:
        return {"render_backend": self.name, "gl": self.gl, "cameras": list(self.cameras),
                "width": self.width, "height": self.height, "render_quality": self.render_quality,
                "draw_thread": self.draw_thread}

    def close(self) -> None:
        drawer, self._drawer = self._drawer, None
        self._views = []
        if drawer is not None:
            drawer.close()

    def __del__(self) -> None:  # an unclosed backend frees its GL objects in its own context, not the current one
        try:  # never raise from a finaliser; no module global either (at interpreter exit they are None)
            self.close()
        except Exception:
            pass


def _gl_errors(mujoco: ModuleType) -> tuple[type[Exception], ...]:
    """What a failed GL context creation raises (anything else is a bug and surfaces)."""
    errors: list[type[Exception]] = [RuntimeError, ImportError, OSError, mujoco.FatalError]
    try:
        from OpenGL.error import Error as OpenGLError
        errors.append(OpenGLError)
    except ImportError:
        pass
    return tuple(errors)


def free_gymnasium_gl(env: UserEnv) -> None:
    """Frees the GL objects of a gymnasium MuJoCo env's own viewers, each in its own context.

    gymnasium's ``env.close()`` destroys its viewers' GL contexts but leaves their
    ``MjrContext`` to the garbage collector, which later deletes its GL objects in
    whatever context is *current* then (another env's, or this backend's): GL object
    ids coincide between contexts, so that renderer's frames break. Call this when
    closing a gymnasium MuJoCo env while other MuJoCo renderers live on in the process
    (before ``env.close()`` is best; after it, with EGL, it still defuses the later free).
    Does nothing for other envs; safe to call twice.
    """
    raw = underlying_env(env)
    renderer = getattr(getattr(raw, "unwrapped", raw), "mujoco_renderer", None)
    for viewer in list((getattr(renderer, "_viewers", None) or {}).values()):
        con = getattr(viewer, "con", None)
        make_current = getattr(viewer, "make_context_current", None)
        if con is None or make_current is None:
            continue
        try:
            make_current()
        except Exception as exc:
            log.debug("free_gymnasium_gl: cannot make a viewer's context current (%s); skipped", exc)
            continue
        con.free()  # mjr_freeContext zeroes what it freed: the collector's later free is a no-op


def _ensure_gl(notes: list[str]) -> str | None:
    gl = ensure_headless_gl()
    notes.extend(n for n in gl_notes() if n not in notes)
    return gl or os.environ.get("MUJOCO_GL") or "glfw"


def _no_context(mujoco: ModuleType, exc: Exception) -> BackendUnavailable:
    context, wanted = _context_name(mujoco), os.environ.get("MUJOCO_GL")
    what = f"MuJoCo could not create an OpenGL context ({type(exc).__name__}: {exc})"
    if wanted and not context.endswith("." + wanted.lower()):
        what += (f"; mujoco was imported before MUJOCO_GL={wanted} was set, "
                 f"so it kept {context.rpartition('.')[2] or 'no backend'}")
    return BackendUnavailable(
        what, expected="a working headless OpenGL (MUJOCO_GL=egl or osmesa) or a display",
        got=f"MUJOCO_GL={wanted!r}, mujoco's GL context {context!r}",
        fix="set MUJOCO_GL=egl (or osmesa) before importing mujoco, gymnasium or dm_control, e.g. call "
            "torchrl_render.envs.gl.ensure_headless_gl() first (apt-get install libegl1 or libosmesa6 if missing)")


def _context_name(mujoco: ModuleType) -> str:
    context = getattr(mujoco, "GLContext", None)
    return getattr(context, "__module__", None) or "none"


def _gymnasium_default(mujoco: ModuleType, model: mujoco.MjModel, data: mujoco.MjData, gym_renderer: MujocoRenderer,
                       cam: mujoco.MjvCamera) -> Callable[[], None]:
    """Sets ``cam`` up the way gymnasium's ``MujocoRenderer`` does, lazily at the first frame.

    gymnasium builds its camera on the first ``render()``: free, looking at the median
    geom position from ``model.stat.extent`` away, then ``default_cam_config``; each
    render then sets the type from ``camera_id`` (-1: free, else that fixed camera).
    If the env has already rendered, its camera is copied instead.
    """
    camera_id = getattr(gym_renderer, "camera_id", None)
    ready: list[bool] = []  # [True] once the camera is set up

    def prepare() -> None:
        if not ready:
            ready.append(True)
            viewer = (getattr(gym_renderer, "_viewers", None) or {}).get("rgb_array")
            if viewer is not None and getattr(viewer, "cam", None) is not None:
                _copy_camera(viewer.cam, cam)
            else:
                _init_like_gymnasium(mujoco, model, data, gym_renderer, cam)
        if camera_id is not None:
            cam.type = mujoco.mjtCamera.mjCAMERA_FREE if camera_id == -1 else mujoco.mjtCamera.mjCAMERA_FIXED
            cam.fixedcamid = camera_id

    prepare.reset = ready.clear  # type: ignore[attr-defined]
    return prepare


def _init_like_gymnasium(mujoco: ModuleType, model: mujoco.MjModel, data: mujoco.MjData,
                         gym_renderer: MujocoRenderer, cam: mujoco.MjvCamera) -> None:
    import numpy as np

    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.fixedcamid = -1
    for i in range(3):
        cam.lookat[i] = np.median(data.geom_xpos[:, i])
    cam.distance = model.stat.extent
    for key, value in (getattr(gym_renderer, "default_cam_config", None) or {}).items():
        if isinstance(value, np.ndarray):
            getattr(cam, key)[:] = value
        else:
            setattr(cam, key, value)


def _copy_camera(src: mujoco.MjvCamera, dst: mujoco.MjvCamera) -> None:
    for key in ("type", "fixedcamid", "trackbodyid", "distance", "azimuth", "elevation", "orthographic"):
        setattr(dst, key, getattr(src, key))
    dst.lookat[:] = src.lookat
