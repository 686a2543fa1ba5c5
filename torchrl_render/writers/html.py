"""``html``: one offline HTML file that replays the episodes in 3-D (three.js, no network).

The writer gets MuJoCo states, not pixels (registry: ``needs_frames=False``,
``needs_state=True``): each :class:`~torchrl_render.data.FrameBundle` carries
``state = {"model": MjModel (first frame at least), "qpos": ..., "mocap_pos": ..., "mocap_quat": ...}``.
The scene is exported from the model once; per frame the body poses are computed with
MuJoCo (:mod:`torchrl_render.replay.poses`) and appended, chunk by chunk, to a temporary
file, so memory stays flat in the episode length. ``close()`` assembles the page
(``replay/page.html``, the vendored three.js, the page's scripts, the data) under a
temporary name and renames it into place. The artifact's ``info["replay"]`` (and so the
metadata's artifact entry) counts what the page draws of the model (meshes, skins, height
fields, textures, flex) and names what it does not; ``info["notes"]`` says it in one line.

Example:
    >>> import mujoco, tempfile, pathlib
    >>> from torchrl_render.data import FrameBundle
    >>> model = mujoco.MjModel.from_xml_string(
    ...     '<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>')
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "replay.html"
    >>> with HtmlWriter(out) as w:
    ...     for step in range(3):
    ...         w.write(FrameBundle({}, step, 0, state={"model": model, "qpos": model.qpos0}))
    >>> w.close().num_frames, "window.replay" in out.read_text()
    (3, True)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..checkpoint import sha256_file
from ..contracts import EpisodeMetrics
from ..data import FrameBundle
from ..errors import WriterError
from ..replay.page import PageEpisode, assemble_page
from .base import Writer, no_frames_error

if TYPE_CHECKING:
    import mujoco

    from ..config import RenderConfig
    from ..replay.poses import PoseEncoder
    from ..replay.scene import Scene


__all__ = ["HtmlWriter"]


class HtmlWriter(Writer):
    """Writes the 3-D replay page (see the module docstring and ``docs/formats.md``).

    Args:
        path: Target ``.html`` file.
        fps: Playback frames per second at speed 1x.
        title: Page title.
        facts: Run-level facts shown on the page (``checkpoint_sha256``, ``env``...).
    """

    format = "html"

    def __init__(self, path: str | Path, fps: float = 30.0, title: str | None = None,
                 facts: dict[str, object] | None = None) -> None:
        super().__init__(path)
        self.fps, self.title, self.facts = float(fps), title or Path(path).stem, dict(facts or {})
        self._chunks_path = self.tmp.with_name(self.tmp.name + ".poses")
        self._chunks: IO[str] | None = None
        self._scene: Scene | None = None
        self._encoder: PoseEncoder | None = None
        self._episodes: list[PageEpisode] = []  # one per episode: facts, frame count, chunk count
        self._current: PageEpisode | None = None

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> HtmlWriter:
        """Reads ``fps`` and the checkpoint's sha256 (hashed here from ``cfg.ckpt``)."""
        return cls(path, fps=cfg.fps, facts=cls.facts_from_config(cfg))

    @staticmethod
    def facts_from_config(cfg: RenderConfig) -> dict[str, object]:
        """The run-level facts the page shows: ``checkpoint_sha256`` and ``env``."""
        facts: dict[str, object] = {"checkpoint_sha256": None, "env": _describe(getattr(cfg, "env", None))}
        ckpt = getattr(cfg, "ckpt", None)
        if ckpt is not None and Path(ckpt).is_file():
            facts["checkpoint_sha256"] = sha256_file(ckpt)
        return facts

    def write(self, bundle: FrameBundle) -> None:
        """Adds the poses of ``bundle.state`` as the next frame of its trajectory."""
        state = bundle.state
        if state is None or "qpos" not in state:
            raise WriterError("the html format needs MuJoCo states, and a frame came without one",
                              expected="FrameBundle.state with 'qpos' (and the MjModel on the first frame)",
                              got=f"trajectory {bundle.trajectory_index}, step {bundle.step}: no state",
                              fix="use --out with .html only for MuJoCo envs (gymnasium MuJoCo, dm_control)")
        encoder = self._encoder if self._encoder is not None else self._start(state.get("model"))
        if self._current is None or self._current["episode_ix"] != bundle.trajectory_index:
            self._end_episode()
            self._current = {"episode_ix": bundle.trajectory_index, "frames": 0, "chunks": 0}
        metrics = bundle.metrics or {}
        chunk = encoder.add(state["qpos"], state.get("mocap_pos"), state.get("mocap_quat"),
                                  metrics.get("reward", 0.0), metrics.get("return", 0.0))
        self._current["frames"] += 1
        self.num_frames += 1
        if chunk is not None:
            self._put(chunk)

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        """Keeps the episode's facts (seed, return, length, success) for the page."""
        if self._current is not None and self._current["episode_ix"] == metrics.get("episode_ix"):
            facts = self._current["metrics"] = {k: metrics.get(k) for k in
                                                ("seed", "sum_reward", "length", "success", "terminated",
                                                 "truncated")}
            for key in ("render_reason", "rerun"):  # --render-select: why it is shown; a re-run that differed
                value = metrics.get(key)
                if value is not None:
                    facts[key] = value
            self._end_episode()

    def _start(self, model: mujoco.MjModel | None) -> PoseEncoder:
        """Exports the scene of ``model`` and starts the pose encoder (the first state); returns the encoder."""
        if model is None:
            raise WriterError("the first MuJoCo state of the html format came without its model",
                              expected="state['model'] = the mujoco.MjModel", got="no model",
                              fix="build the bundles with torchrl_render.replay (MujocoStateReader)")
        from ..replay.poses import PoseEncoder
        from ..replay.scene import export_scene

        self._scene = export_scene(model)
        self._encoder = PoseEncoder(model)
        self._chunks = open(self._chunks_path, "w", encoding="ascii")
        return self._encoder

    def _put(self, chunk: str) -> None:
        # only with an episode open (write, _end_episode), so after _start opened the chunks file
        assert self._chunks is not None and self._current is not None
        self._chunks.write(chunk + "\n")
        self._current["chunks"] += 1

    def _end_episode(self) -> None:
        if self._current is None:
            return
        assert self._encoder is not None  # an episode is open only after the first state started the encoder
        chunk = self._encoder.flush()
        if chunk is not None:
            self._put(chunk)
        self._episodes.append(self._current)
        self._current = None

    def _finish(self) -> dict[str, object]:
        if self._encoder is None:
            raise no_frames_error(self.format, self.path)
        self._end_episode()
        scene = self._scene
        assert self._chunks is not None and scene is not None  # _start set them with the encoder
        self._chunks.close()
        head = {"title": self.title, "fps": self.fps, "facts": self.facts, "nbody": len(scene["bodies"])}
        with open(self._chunks_path, encoding="ascii") as chunks, open(self.tmp, "w", encoding="utf-8") as out:
            assemble_page(out, head, scene, self._episodes, chunks)
        self._release()
        drawn = scene["drawn"]
        info: dict[str, object] = {"size": os.path.getsize(self.tmp), "episodes": len(self._episodes),
                                   "replay": drawn}
        # the note names what the model shows and the page does not (not a skybox, nor unused textures)
        shown = [line for line in drawn["not_drawn"] if not line.startswith("skybox")
                 and "no material uses it" not in line and "no visible geom or skin uses it" not in line]
        if shown:
            info["notes"] = ["the 3-D replay does not draw: " + "; ".join(shown)]
        return info

    def _release(self) -> None:
        if self._chunks is not None:
            self._chunks.close()
        self._chunks_path.unlink(missing_ok=True)


def _describe(env: object) -> str | None:
    """The env spec as the page shows it (``path/to/policy.py:make_env`` -> ``policy.py:make_env``)."""
    if env is None:
        return None
    if isinstance(env, str):
        file, sep, obj = env.rpartition(":")
        return f"{Path(file).name}:{obj}" if sep and ("/" in file or "\\" in file) else env
    return getattr(env, "__qualname__", None) or type(env).__name__
