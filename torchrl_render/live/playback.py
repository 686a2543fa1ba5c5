"""Playing qpos in the live viewer: full qpos vectors from what users send, waypoints, a real-time player.

:class:`TrajectoryPlayer` sends a trajectory's states to a viewer (anything with
``set_qpos(qpos, degrees=, ack=, label=)``, i.e. :class:`torchrl_render.live.notebook_viewer.MujocoViewer`)
at their times, on a daemon thread; with ``interpolate`` it blends between waypoints at
:data:`PLAY_HZ` states a second (in qpos space; ``mj_kinematics`` normalises the quaternions of
free and ball joints).

Example:
    >>> points, dt = waypoints([[0.0, 1.0], [1.0, 2.0]], dt=None, fps=20.0, wait=False, loop=False)
    >>> points.shape, dt
    ((2, 2), 0.05)
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contracts import Array
from ..errors import ConfigError, ViewerError

if TYPE_CHECKING:
    import mujoco
    import torch

__all__ = ["PLAY_HZ", "Qpos", "QposTrajectory", "QposViewer", "TrajectoryPlayer", "full_qpos", "qpos_vector",
           "waypoints"]

#: A qpos vector as users send it: a list of numbers, a numpy array or a tensor.
Qpos: TypeAlias = "ArrayLike | torch.Tensor"
#: A qpos trajectory as users send it: a ``T x n`` array or tensor, or a sequence of qpos vectors (one vector alone
#: is a one-waypoint trajectory).
QposTrajectory: TypeAlias = "Array | torch.Tensor | Sequence[Qpos]"

PLAY_HZ = 60.0  # states a second while an interpolated trajectory plays


class QposViewer(Protocol):
    """What a trajectory is played on (:class:`torchrl_render.live.notebook_viewer.MujocoViewer`): shows a full
    qpos and returns the pose's number."""

    def set_qpos(self, qpos: NDArray[np.float64], *, degrees: bool, ack: bool, label: str) -> int: ...


class TrajectoryPlayer(threading.Thread):
    """Sends a trajectory's poses at their times (blended at :data:`PLAY_HZ` with ``interpolate``)."""

    def __init__(self, viewer: QposViewer, waypoints: NDArray[np.float64], dt: float, *, loop: bool, interpolate: bool,
                 degrees: bool) -> None:
        super().__init__(name="torchrl_render-viewer-play", daemon=True)
        self.viewer, self.waypoints, self.dt = viewer, waypoints, dt
        self.loop, self.interpolate, self.degrees = loop, interpolate, degrees
        self.done, self._stop_event = threading.Event(), threading.Event()
        self.last_seq, self.elapsed = 0, 0.0
        self.start()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=2)

    def run(self) -> None:
        last, start = len(self.waypoints) - 1, time.monotonic()
        try:
            while not self._stop_event.is_set():
                k = (time.monotonic() - start) / self.dt
                if k >= last and self.loop and last:
                    start += last * self.dt  # from the first waypoint again
                    continue
                if k >= last:
                    self.elapsed = time.monotonic() - start
                    self.last_seq = self._show(self.waypoints[-1], last, ack=True)
                    return
                i = int(k)
                qpos = self.waypoints[i]
                if self.interpolate:
                    qpos = qpos + (k - i) * (self.waypoints[i + 1] - qpos)
                self._show(qpos, i, ack=False)
                self._stop_event.wait(max(1.0 / PLAY_HZ if self.interpolate else (i + 1 - k) * self.dt, 0.001))
        except ViewerError:  # the viewer was closed while playing
            pass
        finally:
            self.done.set()

    def _show(self, qpos: NDArray[np.float64], step: int, ack: bool) -> int:
        label = f"trajectory: waypoint {step + 1} of {len(self.waypoints)}"
        return self.viewer.set_qpos(qpos, degrees=self.degrees, ack=ack, label=label)


def full_qpos(model: mujoco.MjModel, qpos: Qpos, degrees: bool = False) -> NDArray[np.float64]:
    """A full ``nq`` qpos from ``qpos``: already full, or one value per hinge/slide joint over ``qpos0``.

    Example:
        >>> import mujoco
        >>> m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><joint type="hinge"/>'
        ...     '<geom size=".1"/></body></worldbody></mujoco>')
        >>> full_qpos(m, [90.0], degrees=True).round(4).tolist()
        [1.5708]
    """
    import mujoco

    values = qpos_vector(qpos)
    kinds = [int(k) for k in model.jnt_type]
    hinge, slide = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
    scalar = [j for j in range(model.njnt) if kinds[j] in (hinge, slide)]
    if values.size == model.nq:
        full = values.copy()
    elif values.size == len(scalar):
        full = np.array(model.qpos0, dtype=np.float64)
        full[[model.jnt_qposadr[j] for j in scalar]] = values
    else:
        raise ConfigError("the qpos vector does not fit the viewer's model",
                          expected=f"{model.nq} values (nq) or {len(scalar)} (one per hinge/slide joint)",
                          got=f"{values.size} values", fix="send the env's data.qpos for this model")
    if degrees:
        hinges = [model.jnt_qposadr[j] for j in scalar if kinds[j] == hinge]
        full[hinges] = np.deg2rad(full[hinges])
    return full


def qpos_vector(qpos: Qpos) -> NDArray[np.float64]:
    if hasattr(qpos, "detach"):
        qpos = qpos.detach().cpu().numpy()
    try:
        values = np.asarray(qpos, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ConfigError("qpos must be a vector of numbers", got=type(qpos).__name__,
                          fix="pass a list, numpy array or tensor of floats") from exc
    if values.size == 0 or not np.isfinite(values).all():
        raise ConfigError("qpos must hold at least one value, all finite", got=values.tolist()[:8],
                          fix="check the state you send (NaN or inf in it?)")
    return values


def waypoints(qpos: QposTrajectory, dt: float | None, fps: float | None, wait: bool,
              loop: bool) -> tuple[NDArray[np.float64], float]:
    """The ``T x n`` waypoints of a trajectory and the seconds between them (torchrl.render's checks)."""
    if dt is not None and fps is not None:
        raise ConfigError("pass either dt or fps, not both", got=f"dt={dt}, fps={fps}", fix="drop one of them")
    for name, value in (("dt", dt), ("fps", fps)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ConfigError(f"{name} must be a positive number", got=value, fix="pass e.g. dt=0.05 or fps=20")
    if wait and loop:
        raise ConfigError("wait=True needs a trajectory that ends", expected="loop=False with wait=True",
                          fix="drop wait or loop")
    rows = [qpos_vector(row) for row in (qpos if not isinstance(qpos, np.ndarray) or qpos.ndim > 1 else [qpos])]
    if not rows:
        raise ConfigError("the qpos trajectory is empty", expected="at least one waypoint",
                          fix="check the rollout (extract_qpos_trajectory gives one waypoint a step)")
    if len({row.size for row in rows}) != 1:
        raise ConfigError("the qpos waypoints differ in length", got=sorted({row.size for row in rows}),
                          fix="send waypoints of one model")
    return np.stack(rows), float(1.0 / fps if fps is not None else (dt if dt is not None else 0.1))
