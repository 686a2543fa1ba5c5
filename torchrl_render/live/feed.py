"""``--live``: what the Sink hands the live page while a run goes on.

:class:`LiveFeed` owns a :class:`~torchrl_render.live.server.LiveServer`. Per rendered step the
Sink calls :meth:`LiveFeed.step` (MuJoCo envs: the bodies' poses, computed with ``mj_kinematics``
on a private ``MjData`` from the env's ``qpos``; the env's own data is only read), per finished
frame :meth:`LiveFeed.frame` (other envs: the frame itself, by reference; it is PNG-encoded by the
server thread only when a page asks for it) and per finished episode :meth:`LiveFeed.episode` (the
metrics so far). Updates are sent at most :data:`LIVE_FPS` times a second and only while a page is
connected: what the page misses is dropped, never the writers' frames.

Example:
    >>> import gymnasium as gym, json, urllib.request
    >>> from types import SimpleNamespace
    >>> feed = LiveFeed(SimpleNamespace(live=0, live_host="127.0.0.1", live_keep=0.0, env="pendulum"))
    >>> env = gym.make("InvertedPendulum-v5"); _ = env.reset(seed=0)
    >>> feed.hub.subscribe() is not None   # a connected page
    True
    >>> feed.on_step(SimpleNamespace(env=env, trajectory=0, step=0, reward=1.0), {"return": 1.0})
    >>> state = json.load(urllib.request.urlopen(feed.server.origin + "/state?token=" + feed.server.token))
    >>> state["poses"], len(state["pose"]["pos"]) == 3 * env.unwrapped.model.nbody
    (1, True)
    >>> feed.stop(finished=False)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

import numpy as np
from numpy.typing import NDArray

from ..contracts import EpisodeMetrics, StepMetrics, UserEnv
from ..envs.unwrap import find_simulation
from ..notebook.display import display_page
from .server import LiveHub, LiveServer

if TYPE_CHECKING:
    import mujoco

    from ..config import RenderConfig
    from ..engine.records import StepRecord

__all__ = ["LIVE_FPS", "LiveFeed", "RunningMetrics", "running_metrics", "ssh_hint"]

log = logging.getLogger("torchrl_render")
LIVE_FPS = 30.0  # updates a second at most: the page draws at the screen's rate; the run is not slowed


def ssh_hint(server: LiveServer) -> str:
    """Over SSH (``$SSH_CONNECTION`` set) and on loopback: the ``ssh -L`` command that reaches the page.

    Example:
        >>> import os; from types import SimpleNamespace
        >>> os.environ["SSH_CONNECTION"] = "10.0.0.5 50000 10.0.0.9 22"
        >>> ssh_hint(SimpleNamespace(host="127.0.0.1", port=8765))
        ' (over SSH, first run on your machine: ssh -L 8765:127.0.0.1:8765 10.0.0.9)'
        >>> del os.environ["SSH_CONNECTION"]
    """
    import os

    parts = os.environ.get("SSH_CONNECTION", "").split()
    if len(parts) != 4 or server.host not in ("127.0.0.1", "localhost", "::1"):
        return ""
    return f" (over SSH, first run on your machine: ssh -L {server.port}:127.0.0.1:{server.port} {parts[2]})"


class RunningMetrics(TypedDict):
    """A run's numbers so far, as the live page shows them (``None``: not known yet)."""

    episodes_done: int
    mean_return: float | None
    success_rate: float | None


def running_metrics(episodes: Sequence[EpisodeMetrics]) -> RunningMetrics:
    """Episodes done, mean return and success rate (over episodes that report success) so far."""
    known = [bool(e["success"]) for e in episodes if e.get("success") is not None]
    mean = sum(float(e["sum_reward"]) for e in episodes) / len(episodes) if episodes else None
    return {"episodes_done": len(episodes), "mean_return": mean,
            "success_rate": sum(known) / len(known) if known else None}


class LiveFeed:
    """The live page of one run (see the module docstring).

    Args:
        cfg: The run's config (``live``: the port, ``live_host``, ``live_keep``; ``env`` for the title).
    """

    def __init__(self, cfg: RenderConfig) -> None:
        self.cfg, self.hub = cfg, LiveHub()
        title = cfg.env if isinstance(cfg.env, str) else type(cfg.env).__name__
        self.server = LiveServer(self.hub, host=cfg.live_host, port=int(cfg.live or 0), title=str(title))
        self._inline = display_page(self.server.url)  # in Jupyter: the page in the cell's output
        if self._inline is None:
            log.warning("live view of the run: %s%s", self.server.url, ssh_hint(self.server))
        self._sims: dict[int, tuple[mujoco.MjModel, mujoco.MjData] | None] = {}
        self._data: mujoco.MjData | None = None  # a private MjData of the model shown, for the poses
        self._model: mujoco.MjModel | None = None
        self._last = 0.0
        self._interval = 1.0 / LIVE_FPS

    def _due(self) -> bool:
        now = time.perf_counter()
        if not self.hub.watched or now - self._last < self._interval:
            return False
        self._last = now
        return True

    current_frames = False  # poses go out at the step; frames, when the env has no model, at on_frame

    def on_step(self, record: StepRecord, metrics: StepMetrics) -> None:
        """A rendered step: the bodies' poses for MuJoCo envs (nothing otherwise; frames come by :meth:`on_frame`)."""
        if record.env is None or not self._due():
            return
        sim = self._simulation(record.env)
        if sim is None:
            self._last = 0.0  # no poses from this env: let its frame through
            return
        from ..replay.poses import pose_message  # imports mujoco

        model, data = sim
        if model is not self._model:
            self._use_model(model)
        self.hub.set_pose({"episode": record.trajectory, "step": record.step, "return": metrics.get("return"),
                           **pose_message(model, self._data, data.qpos, data.mocap_pos, data.mocap_quat)})

    def _simulation(self, env: UserEnv) -> tuple[mujoco.MjModel, mujoco.MjData] | None:
        key = id(env)
        if key not in self._sims:
            self._sims[key] = find_simulation(env)
        return self._sims[key]

    def _use_model(self, model: mujoco.MjModel) -> None:
        import mujoco

        from ..replay.scene import export_scene  # imports mujoco

        self._model, self._data = model, mujoco.MjData(model)
        self.hub.set_scene(export_scene(model))

    def on_frame(self, frame: NDArray[np.uint8], record: StepRecord, metrics: StepMetrics) -> None:
        """A finished frame (uint8 HxWx3) of an env without a MuJoCo model, kept by reference."""
        if self._model is not None or (record.env is not None and self._simulation(record.env) is not None):
            return
        if self._due():
            self.hub.set_frame(frame, {"episode": record.trajectory, "step": record.step,
                                       "return": metrics.get("return")})

    def on_episode(self, episodes: list[EpisodeMetrics]) -> None:
        """An episode ended: the metrics so far (always sent, whatever the rate)."""
        self.hub.set_metrics(running_metrics(episodes))

    def stopped_because(self, finished: int) -> str | None:
        """The page never ends a run."""
        return None

    def close(self, finished: bool = True) -> LiveFeed | None:
        """The run is over. After a failed run the server stops now; after a finished one the stream ends
        and the feed is returned, still serving, so the last state stays visible while the artifacts are
        written (the caller then calls :meth:`stop`)."""
        if not finished:
            self.stop(finished=False)
            return None
        self.hub.end()
        return self

    def stop(self, finished: bool = True) -> None:
        """Ends the page's stream; after a finished run, first keeps serving ``live_keep`` seconds."""
        if not self.hub.ended:
            self.hub.end()
        if self.hub.watched:
            time.sleep(0.2)  # the pages' last requests (a frame) finish before the socket closes
        keep = float(getattr(self.cfg, "live_keep", 0) or 0)
        if finished and keep > 0:
            log.warning("the run has ended; the live view stays up %.0f s: %s", keep, self.server.url)
            time.sleep(keep)
        self.server.close()
        if self._inline is not None:  # a saved notebook keeps a line, not an iframe of a server that is gone
            from IPython.display import HTML

            done = self.hub.metrics.get("episodes_done", 0)
            self._inline.update(HTML(f"<p><i>The live view ended with the run ({done} episode(s) done).</i></p>"))
