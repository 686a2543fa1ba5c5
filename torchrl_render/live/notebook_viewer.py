"""torchrl.render's live MuJoCo viewer functions, served by our live server: no npm, no Vite, no node.

torchrl.render writes a Vite project that loads MuJoCo compiled to WebAssembly in the browser,
starts ``npm``/``vite`` to serve it and talks to it with JavaScript injected into the notebook.
Here the same four functions, with the same names and signatures, work without any JavaScript
tool chain and outside notebooks too:

- :func:`write_mujoco_wasm_viewer` compiles the model once (with its assets) into the viewer
  folder: ``model.mjb`` (meshes and textures inside), ``scene.json`` (what the page draws) and
  ``manifest.json``.
- :func:`display_mujoco_wasm_viewer` serves that folder's scene with
  :class:`~torchrl_render.live.server.LiveServer` (loopback, a random token in the URL, the
  port asked for or a free one) and shows the page in an IFrame when it runs in IPython.
- :func:`send_mujoco_wasm_qpos` / :func:`play_mujoco_wasm_trajectory` turn qpos into body poses
  in Python (``mj_kinematics`` on a private ``MjData``) and push them to the page by server-sent
  events; ``wait=True`` returns once the page reports that it drew the pose.

The browser does no physics: ``pause`` is accepted and has nothing to pause. States are sent to a
viewer of this process (found by its port or origin).

Example:
    >>> import pathlib, tempfile, json, urllib.request
    >>> import gymnasium.envs.mujoco as gm
    >>> xml = pathlib.Path(gm.__file__).parent / "assets" / "inverted_pendulum.xml"
    >>> viewer_dir = write_mujoco_wasm_viewer(pathlib.Path(tempfile.mkdtemp()) / "viewer", xml)
    >>> sorted(p.name for p in viewer_dir.iterdir())
    ['manifest.json', 'model.mjb', 'scene.json']
    >>> viewer = display_mujoco_wasm_viewer(viewer_dir, port=0)
    >>> viewer.torchrl_mujoco_wasm_origin == f"http://127.0.0.1:{viewer.torchrl_mujoco_wasm_port}"
    True
    >>> send_mujoco_wasm_qpos([0.1, 0.2], port=viewer.port)   # no page open: sent, nobody waits
    >>> state = json.load(urllib.request.urlopen(viewer.origin + "/state?token=" + viewer.token))
    >>> state["poses"] >= 2, len(state["pose"]["pos"]) == 3 * 3  # the first pose, then ours; 3 bodies
    (True, True)
    >>> viewer.terminate()
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..contracts import Json
from ..envs.mujoco_state import MujocoStateReader, extract_qpos_trajectory, load_model
from ..errors import ConfigError, ViewerError, ViewerTimeout
from ..notebook.display import display_page, page_iframe
from .playback import Qpos, QposTrajectory, TrajectoryPlayer, full_qpos, qpos_vector, waypoints
from .server import LiveHub, LiveServer

__all__ = [
    "MujocoStateReader",
    "MujocoViewer",
    "display_mujoco_wasm_viewer",
    "extract_qpos_trajectory",
    "play_mujoco_wasm_trajectory",
    "send_mujoco_wasm_qpos",
    "write_mujoco_wasm_viewer",
]

log = logging.getLogger("torchrl_render")

DEFAULT_VIEWER_PORT = 5178  # torchrl.render's; RenderConfig.notebook_viewer_port
VIEWER_FORMAT = "torchrl_render.mujoco_viewer"
_VIEWERS: dict[int, MujocoViewer] = {}  # the viewers this process serves, by port
_LOCK = threading.Lock()


def write_mujoco_wasm_viewer(output_dir: str | Path, model_path: str | Path, *,
                             asset_paths: list[str | Path] | None = None, package_manager: str | None = None) -> Path:
    """Writes a viewer folder for ``model_path``: the compiled model, its scene and a manifest.

    Args:
        output_dir: The folder to write (created; an earlier viewer in it is replaced).
        model_path: The MJCF (``.xml``) or ``.mjb`` file.
        asset_paths: Files or folders with the meshes/textures the model names, when they are not
            where the model says (its ``meshdir``/``texturedir`` or beside it).
        package_manager: Accepted for torchrl.render's signature; nothing is installed here.

    Returns:
        ``output_dir`` as a :class:`~pathlib.Path`.
    """
    import mujoco

    from ..replay.scene import export_scene  # imports mujoco

    del package_manager  # no JavaScript tool chain: the page is built into the package
    model = load_model(model_path, asset_paths or ())
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    mujoco.mj_saveModel(model, str(out / "model.mjb"), None)
    (out / "scene.json").write_text(json.dumps(export_scene(model), separators=(",", ":"), allow_nan=False),
                                    encoding="utf-8")
    manifest = {"format": VIEWER_FORMAT, "version": 1, "model": "model.mjb", "scene": "scene.json",
                "source": str(Path(model_path).resolve()), "nq": int(model.nq), "nbody": int(model.nbody)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return out


class MujocoViewer:
    """A served viewer (what :func:`display_mujoco_wasm_viewer` returns).

    It stands where torchrl.render returns its Vite server's ``subprocess.Popen``: it has
    ``torchrl_mujoco_wasm_port``/``torchrl_mujoco_wasm_origin`` and ``poll``/``terminate``/``kill``/
    ``wait``; and ``port``, ``origin``, ``url`` (token included), ``token``, ``set_qpos`` and ``play``.
    In a Jupyter kernel its page is displayed in an iframe when it starts.
    """

    def __init__(self, viewer_dir: Path, host: str, port: int, width: str = "100%", height: int = 720) -> None:
        import mujoco

        model_file, scene_file = _manifest(viewer_dir)
        self.viewer_dir, self.width, self.height = viewer_dir, width, height
        self.model = mujoco.MjModel.from_binary_path(str(model_file))
        self._data = mujoco.MjData(self.model)
        self.hub = LiveHub(run=False)
        self.server = LiveServer(self.hub, host=host, port=port, title=f"MuJoCo viewer: {viewer_dir.name}")
        self.hub.set_scene(json.loads(scene_file.read_text(encoding="utf-8")))
        self._player: TrajectoryPlayer | None = None
        self.returncode: int | None = None
        self.set_qpos(self.model.qpos0)

    port = property(lambda self: self.server.port)
    origin = property(lambda self: self.server.origin)
    url = property(lambda self: self.server.url)
    token = property(lambda self: self.server.token)
    torchrl_mujoco_wasm_port = port
    torchrl_mujoco_wasm_origin = origin

    def poses(self, qpos: Qpos, degrees: bool = False) -> dict[str, list[float]]:
        """The page's pose message for ``qpos`` (a full ``nq`` vector, or one value per hinge/slide joint)."""
        from ..replay.poses import pose_message  # imports mujoco

        return pose_message(self.model, self._data, full_qpos(self.model, qpos, degrees))

    def set_qpos(self, qpos: Qpos, *, degrees: bool = False, wait: bool = False, timeout: float = 5.0,
                 ack: bool = False, label: str = "state sent") -> int:
        """Shows the state ``qpos``; returns the pose's number.

        ``wait``: returns once a page drew it; ``ack``: the pages report drawing it (without waiting).
        """
        if self.returncode is not None:
            raise ViewerError("this viewer has been closed", fix="call display_mujoco_wasm_viewer(viewer_dir) again")
        seq = self.hub.set_pose({"label": label, **self.poses(qpos, degrees),
                                 "ack": bool(wait or ack)})
        if wait and not self.hub.wait_ack(seq, timeout):
            raise ViewerTimeout(f"no page drew the pose within {timeout:g} s", expected="the viewer open in a browser",
                                got=f"{len(self.hub.queues)} page(s) connected",
                                fix=f"open {self.url} (over SSH: ssh -L {self.port}:127.0.0.1:{self.port} "
                                    "<host>), or raise timeout")
        return seq

    def play(self, waypoints: NDArray[np.float64], dt: float, *, loop: bool, interpolate: bool,
             degrees: bool = False) -> TrajectoryPlayer:
        """Plays ``waypoints`` (``T x n``) ``dt`` seconds apart on a background thread (stops the last one)."""
        self.stop()
        self._player = TrajectoryPlayer(self, waypoints, dt, loop=loop, interpolate=interpolate, degrees=degrees)
        return self._player

    def stop(self) -> None:
        """Stops the trajectory playing, if any."""
        player, self._player = self._player, None
        if player is not None:
            player.stop()

    def terminate(self) -> None:
        """Stops serving (idempotent)."""
        self.stop()
        if self.returncode is None:
            self.returncode = 0
            with _LOCK:
                if _VIEWERS.get(self.port) is self:
                    del _VIEWERS[self.port]
            self.server.close()

    kill = close = terminate

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Like ``Popen.wait``: returns once the viewer is terminated (``None`` after ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.05)
        return self.returncode

    def iframe_html(self) -> str:
        """The ``<iframe>`` of the page (what a notebook shows)."""
        return page_iframe(self.url, width=self.width, height=self.height)

    def __repr__(self) -> str:
        state = "serving" if self.returncode is None else "closed"
        return f"MujocoViewer({str(self.viewer_dir)!r}, {state} at {self.origin})"

    def __enter__(self) -> MujocoViewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.terminate()


def display_mujoco_wasm_viewer(viewer_dir: str | Path, *, port: int = DEFAULT_VIEWER_PORT, host: str = "127.0.0.1",
                               install: bool = True, width: str = "100%", height: int = 720,
                               package_manager: str | None = None, startup_timeout: float = 20.0) -> MujocoViewer:
    """Serves a viewer folder and shows it (an IFrame in IPython; its URL in the log otherwise).

    Args:
        viewer_dir: A folder written by :func:`write_mujoco_wasm_viewer`.
        port: The port to serve on; a free one when it is taken (``0``: any free port). The returned
            viewer's ``port`` says which.
        host: The address to bind (loopback by default; anything else is reachable by others).
        install: Accepted for torchrl.render's signature (nothing to install).
        width: The IFrame's width.
        height: The IFrame's height in pixels.
        package_manager: Accepted for torchrl.render's signature (no npm).
        startup_timeout: Accepted for torchrl.render's signature (the server is up when this returns).

    Returns:
        The :class:`MujocoViewer`, serving.
    """
    del install, package_manager, startup_timeout
    viewer = MujocoViewer(Path(viewer_dir), host, port, width, height)
    with _LOCK:
        _VIEWERS[viewer.port] = viewer
    if viewer.port != port and port:
        log.warning("port %d is taken: the viewer serves on port %d", port, viewer.port)
    if display_page(viewer.url, width=width, height=height) is None:
        log.warning("MuJoCo viewer: %s", viewer.url)
    return viewer


def send_mujoco_wasm_qpos(qpos: Qpos, *, port: int = DEFAULT_VIEWER_PORT, viewer_origin: str | None = None,
                          degrees: bool = False, pause: bool = True, wait: bool = False,
                          timeout: float = 5.0) -> dict[str, object] | None:
    """Shows one state in the viewer serving on ``port`` (or ``viewer_origin``) in this process.

    Args:
        qpos: The model's full ``nq`` qpos, or one value per hinge/slide joint (the rest at ``qpos0``).
        port: The viewer's port (``viewer.port``).
        viewer_origin: Its origin (``viewer.origin``); wins over ``port``.
        degrees: Hinge values are in degrees.
        pause: Accepted for torchrl.render's signature (the page runs no physics).
        wait: Return only once the page drew the state.
        timeout: Seconds to wait for that.

    Returns:
        With ``wait``, ``{"type": "torchrl:mujoco_wasm:qposApplied", "ok": True, "seq": n}``; else ``None``.
    """
    del pause
    viewer = _viewer(port, viewer_origin)
    viewer.stop()  # a trajectory playing (looping) ends: this state stays
    seq = viewer.set_qpos(qpos_vector(qpos), degrees=degrees, wait=wait, timeout=timeout)
    return {"type": "torchrl:mujoco_wasm:qposApplied", "ok": True, "seq": seq} if wait else None


def play_mujoco_wasm_trajectory(qpos: QposTrajectory, *, dt: float | None = None, fps: float | None = None,
                                port: int = DEFAULT_VIEWER_PORT, viewer_origin: str | None = None,
                                degrees: bool = False, pause: bool = True, loop: bool = False,
                                interpolate: bool = True, wait: bool = False, timeout: float | None = None,
                                viewer_dir: str | Path | None = None) -> dict[str, object] | None:
    """Plays a qpos trajectory in a viewer of this process, in real time, on a background thread.

    Args:
        qpos: Waypoints, each a qpos vector (e.g. :func:`extract_qpos_trajectory`'s list).
        dt: Seconds between waypoints (default 0.1 when ``fps`` is not given).
        fps: Waypoints a second (instead of ``dt``).
        port: The viewer's port.
        viewer_origin: Its origin; wins over ``port``.
        degrees: Hinge values are in degrees.
        pause: Accepted for torchrl.render's signature (the page runs no physics).
        loop: Play again from the start until another state or trajectory is sent.
        interpolate: Blend between waypoints (at 60 poses a second) instead of holding each.
        wait: Return once the page drew the last waypoint (not with ``loop``).
        timeout: Seconds to wait (default: the trajectory's length plus 5 s, at least 30 s).
        viewer_dir: A viewer folder: its viewer is started if none serves it yet, and the trajectory is
            also written under ``trajectories/`` there.

    Returns:
        With ``wait``: ``{"type": "torchrl:mujoco_wasm:trajectoryComplete", "ok": True, ...}``; with
        ``viewer_dir``: ``{"ok": True, "trajectory_path": ..., "viewer_url": ...}``; else ``None``.
    """
    del pause
    points, step = waypoints(qpos, dt, fps, wait, loop)
    if viewer_dir is not None:
        if wait:
            raise ConfigError("wait=True cannot be combined with viewer_dir", fix="drop one of them")
        viewer = _viewer_for_dir(Path(viewer_dir), port)
        path = Path(viewer_dir) / "trajectories" / f"trajectory_{uuid.uuid4().hex}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"qpos": points.tolist(), "dt": step, "degrees": degrees, "loop": loop}) + "\n",
                        encoding="utf-8")
        viewer.play(points, step, loop=loop, interpolate=interpolate, degrees=degrees)
        return {"ok": True, "trajectory_path": str(path), "viewer_url": viewer.url}
    viewer = _viewer(port, viewer_origin)
    player = viewer.play(points, step, loop=loop, interpolate=interpolate, degrees=degrees)
    if not wait:
        return None
    limit = float(timeout) if timeout is not None else max(30.0, len(points) * step + 5.0)
    if not player.done.wait(limit) or not viewer.hub.wait_ack(player.last_seq, max(0.0, limit - player.elapsed)):
        raise ViewerTimeout(f"the trajectory was not drawn to its end within {limit:g} s",
                            expected="the viewer open in a browser", fix=f"open {viewer.url}, or raise timeout")
    return {"type": "torchrl:mujoco_wasm:trajectoryComplete", "ok": True, "waypoints": len(points),
            "seconds": round(player.elapsed, 3)}


def _viewer(port: int, viewer_origin: str | None) -> MujocoViewer:
    if viewer_origin is not None:
        from urllib.parse import urlsplit

        port = urlsplit(str(viewer_origin)).port or port
    with _LOCK:
        viewer = _VIEWERS.get(int(port))
        serving = sorted(_VIEWERS)
    if viewer is None:
        raise ViewerError(f"no MuJoCo viewer of this process serves on port {port}",
                          expected="a port from display_mujoco_wasm_viewer(...).port",
                          got=f"serving: {serving or 'none'}",
                          fix="call display_mujoco_wasm_viewer(viewer_dir) first and pass port=viewer.port "
                              "(the port moves when the one asked is taken)")
    return viewer


def _viewer_for_dir(viewer_dir: Path, port: int) -> MujocoViewer:
    with _LOCK:
        found = [v for v in _VIEWERS.values() if v.viewer_dir.resolve() == viewer_dir.resolve()]
    return found[0] if found else display_mujoco_wasm_viewer(viewer_dir, port=port)


def _manifest(viewer_dir: Path) -> tuple[Path, Path]:
    """The viewer folder's compiled model and scene files, as its manifest names them."""
    path = viewer_dir / "manifest.json"
    try:
        manifest: Json = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{str(viewer_dir)!r} is not a viewer folder", expected="a folder written by "
                          "write_mujoco_wasm_viewer (with manifest.json)", got=f"{type(exc).__name__}: {exc}",
                          fix="call write_mujoco_wasm_viewer(viewer_dir, model_path) first") from exc
    found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
    if not isinstance(manifest, dict) or found != VIEWER_FORMAT:
        raise ConfigError(f"{str(path)!r} was not written by torchrl_render", expected=VIEWER_FORMAT,
                          got=found, fix="write the folder again with write_mujoco_wasm_viewer")
    model, scene = manifest.get("model"), manifest.get("scene")
    if not isinstance(model, str) or not isinstance(scene, str):
        raise ConfigError(f"{str(path)!r} does not name the viewer's files", expected='"model" and "scene" file names',
                          got=f"model={model!r}, scene={scene!r}", fix="write the folder again with "
                          "write_mujoco_wasm_viewer")
    return viewer_dir / model, viewer_dir / scene

