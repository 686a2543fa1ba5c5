"""A report notebook (``.ipynb``): config, metrics, a return plot, each episode's video, a re-run cell.

Each rendered episode streams into its own H.264 mp4 (:class:`Mp4Writer`) in a private
work folder beside the target while the run goes; a small animated-PNG preview of it is
kept (every k-th frame, at most 240 px wide: GitHub's viewer blocks ``<video>`` but shows
images). At the end the notebook is built (:func:`torchrl_render.notebook.report.build_report`):
videos are embedded as base64 until their total would pass the embedding limit; later ones
are linked as ``<stem>_ep<i>.mp4`` beside the notebook, and their cell says so. The notebook
is then executed with nbclient in an ipykernel of this interpreter (so that it opens with
its outputs) unless ``execute_notebook`` is off, validated, and written.

Rollout modes (``notebook_rollout_mode``): ``saved`` (the run's episodes are embedded; the
re-run cell is left for the reader), ``live`` (nothing is rolled out and the notebook is not
executed, as in torchrl.render: its own cells roll the policy out when run, with
``collect_rollouts_in_notebook()``, and write ``<stem>_live.mp4``), ``both`` (saved, then the
live cells, executed). Files beside the notebook (linked mp4s, the live mp4 and its metadata)
are moved into place by rename, only when the notebook is complete, and listed in the artifact
info; so is the asset folder (torchrl.render's ``<stem>/``: ``config.json``, the saved rollouts as
``rollouts/traj_000.pt``..., and the run's ``metadata.json``, which the pipeline adds).

Example:
    >>> import numpy as np, tempfile, pathlib, nbformat
    >>> from torchrl_render.data import FrameBundle
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report.ipynb"
    >>> with IpynbWriter(out, execute=False) as w:
    ...     for step in range(3):
    ...         w.write(FrameBundle({"default": np.zeros((16, 16, 3), np.uint8)}, step, 0))
    >>> [c.id for c in nbformat.read(out, as_version=4).cells][:3]
    ['title', 'metrics', 'config']
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import callable_name
from ..contracts import EpisodeMetrics
from ..data import FrameBundle, RunMetrics
from ..errors import ConfigError, OutputExistsError, WriterError
from ..live.notebook_viewer import write_mujoco_wasm_viewer
from ..metrics import aggregate, bootstrap_options
from ..notebook import EMBED_LIMIT_BYTES, display_width
from ..notebook.kernel import execute_notebook
from ..notebook.paths import MUJOCO_VIEWER_DIR, asset_folder, portable_config, relative, search_path
from ..notebook.report import ReportVideo, build_report, equivalent_command
from ..storage import atomic_path
from .base import Writer, commit, fresh_folder, no_frames_error, remove
from .html import HtmlWriter
from .mp4 import PRESET, Mp4Writer
from .preview import Preview

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from ..config import RenderConfig
    from ..engine.records import Episode


__all__ = ["IpynbWriter"]

log = logging.getLogger(__name__)

CELL_TIMEOUT_S = 3600
STARTUP_TIMEOUT_S = 120
MODES = ("saved", "live", "both")
_NEEDED_TO_EXECUTE = ("nbclient", "ipykernel", "matplotlib")


class IpynbWriter(Writer):
    """Writes the report notebook (see the module docstring).

    Args:
        path: Target ``.ipynb``; written under a temporary name and renamed on close.
        config: The run's ``RenderConfig.to_dict()`` (paths absolute, for the re-run cells).
        mode: ``saved``, ``live`` or ``both``.
        execute: Run the notebook with nbclient so that it opens with outputs.
        embed_limit_bytes: Most mp4 bytes embedded in the notebook; later videos are linked.
        fps, codec, crf, preset: Passed to the per-episode :class:`Mp4Writer`.
        preview: Add an animated PNG preview under each video (for GitHub).
        overwrite: Replace existing files beside the notebook (linked and live mp4s, the asset folder).
        command: The command line shown in the title cell.
        search_path: Folders the notebook's kernel adds to ``sys.path`` (to import the factories).
        timeout: Seconds one cell may run when executed.
        assets: The asset folder (default ``<stem>/`` beside the notebook).
    """

    format = "ipynb"

    def __init__(self, path: str | Path, *, config: Mapping[str, object] | None = None, mode: str = "saved",
                 execute: bool = True, embed_limit_bytes: int | None = EMBED_LIMIT_BYTES, fps: float = 30.0,
                 codec: str | None = None, crf: int = 23, preset: str = PRESET, preview: bool = True,
                 overwrite: bool = False,
                 command: str | None = None, search_path: list[str] | None = None,
                 timeout: float = CELL_TIMEOUT_S, assets: str | Path | None = None) -> None:
        super().__init__(path)
        if mode not in MODES:
            raise ConfigError("notebook_rollout_mode is not known", expected=", ".join(MODES), got=mode,
                              fix="pass --notebook-rollout-mode saved, live or both")
        self.config: Mapping[str, object] = config or {}
        self.mode, self.execute, self.limit = mode, bool(execute) and mode != "live", embed_limit_bytes
        self.fps, self.codec, self.crf, self.preview = float(fps), codec, int(crf), bool(preview)
        self.frames_wanted = mode != "live"  # False for --render-backend null (from_config)
        self.preset = preset
        self.overwrite, self.command, self.timeout = overwrite, command, timeout
        self.search_path = list(search_path) if search_path is not None else [os.getcwd()]
        self.stem = self.path.stem
        self.assets = Path(assets) if assets is not None else self.path.with_suffix("")
        self._saved_rollouts = 0
        self._work: Path | None = None
        self._open: dict[int, tuple[Mp4Writer, Preview | None]] = {}  # the preview only with self.preview
        self._done: dict[int, tuple[Path, int, dict[str, object], bytes | None]] = {}
        self._episodes: list[EpisodeMetrics] = []
        self._viewers: dict[int, HtmlWriter] = {}  # the 3-D viewer per episode, when states arrive
        self._viewer_pages: dict[int, Path] = {}
        self._viewer_facts: dict[str, object] = {}

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> IpynbWriter:
        """Reads the notebook fields and the video options, after :meth:`check`."""
        cls.check(path, cfg)
        limit_mb = getattr(cfg, "notebook_embed_limit_mb", None)
        writer = cls(path, config=portable_config(cfg), mode=cfg.notebook_rollout_mode,
                     execute=bool(getattr(cfg, "execute_notebook", True)),
                     embed_limit_bytes=EMBED_LIMIT_BYTES if limit_mb is None else int(limit_mb * 2**20),
                     fps=cfg.fps, codec=cfg.video_codec, crf=cfg.video_crf, preset=cfg.video_preset,
                     preview=bool(getattr(cfg, "notebook_preview", True)), overwrite=cfg.overwrite,
                     command=equivalent_command(cfg.to_dict()), search_path=search_path(),
                     assets=asset_folder(path, cfg))
        writer.frames_wanted = cls.wants_frames(cfg)
        if cls.wants_state(cfg):  # facts for the episodes' 3-D viewers
            writer._viewer_facts = HtmlWriter.facts_from_config(cfg)
        return writer

    @classmethod
    def wants_state(cls, cfg: RenderConfig, default: bool = False) -> bool:
        """MuJoCo states for the 3-D viewer (``mujoco_wasm``; ``auto``: when the env has a model)."""
        backend = getattr(cfg, "notebook_render_backend", "static")
        return backend in ("auto", "mujoco_wasm") and cfg.notebook_rollout_mode != "live"

    @classmethod
    def check(cls, path: Path, cfg: RenderConfig) -> None:
        """Refuses what would only fail at the end: missing nbclient/ipykernel/matplotlib (when executing),
        live cells that cannot import a lambda factory, and files beside the notebook that exist."""
        if getattr(cfg, "execute_notebook", True):
            _check_can_execute()
        if cfg.notebook_rollout_mode != "saved":
            _check_importable_factories(cfg)
        if cfg.overwrite:
            return
        limit = cfg.max_episodes_rendered
        total = cfg.num_trajs if cfg.num_trajs is not None else limit  # --eval-n-timesteps: not known ahead
        if total is None:
            return  # which episodes get files beside the notebook is not known ahead: none is checked here
        rendered = range(total if limit is None else min(limit, total))
        for side in cls(path, mode=cfg.notebook_rollout_mode, execute=False).side_paths(rendered):
            if side.exists():
                raise OutputExistsError(f"{str(side)!r} already exists (the report may write it beside the "
                                        "notebook)", got=str(side),
                                        fix="pass --overwrite (overwrite=True) or choose another --out")

    @classmethod
    def wants_frames(cls, cfg: RenderConfig, default: bool = True) -> bool:
        """Frames are needed unless the notebook rolls out by itself (``live``) or none were asked for
        (``--render-backend null``: the notebook shows the metrics, and the 3-D replay of MuJoCo envs)."""
        return cfg.notebook_rollout_mode != "live" and cfg.render_backend != "null"

    def side_paths(self, episodes: Iterable[int]) -> list[Path]:
        """Files this report may write beside the notebook (and its asset folder)."""
        folder = self.path.parent
        paths = [self.assets]
        paths += [folder / f"{self.stem}_ep{i}.mp4" for i in episodes] if self.mode != "live" else []
        if self.mode != "saved":
            paths += [folder / self.live_out, folder / f"{self.live_out}.metadata.json"]
        return paths

    @property
    def live_out(self) -> str:
        """The mp4 the live / re-run cell writes, relative to the notebook."""
        return f"{self.stem}_live.mp4"

    # -- streaming ------------------------------------------------------------------------------

    def write(self, bundle: FrameBundle) -> None:
        """Appends the frame to its episode's mp4 (ignored in ``live`` mode)."""
        if self.mode == "live":
            return
        if bundle.state is not None:
            self._viewer_state(bundle)
            return
        traj = bundle.trajectory_index
        if traj not in self._open:
            if traj in self._done:
                raise WriterError(f"frames arrived for episode {traj} after it ended",
                                  expected="each episode's frames before its end", got=f"step {bundle.step}")
            video = Mp4Writer(self._workdir() / f"{self.stem}_ep{traj}.mp4", fps=self.fps, codec=self.codec,
                              crf=self.crf, preset=self.preset)
            self._open[traj] = (video, Preview(self.fps) if self.preview else None)
        video, preview = self._open[traj]
        video.write(bundle)
        if preview is not None:
            preview.add(next(iter(bundle.frames.values())))
        self.num_frames += 1

    def on_trajectory(self, episode: Episode) -> None:
        """Saves the episode's TensorDict as ``rollouts/traj_<i>.pt`` in the asset folder (torchrl.render's
        layout, which its notebook cells and its users read back with ``torch.load``)."""
        if self.mode == "live" or getattr(episode, "trajectory", None) is None:
            return
        import torch

        folder = self._asset_work() / "rollouts"
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(episode.trajectory, folder / f"traj_{episode.index:03d}.pt")
        self._saved_rollouts += 1

    @classmethod
    def add_metadata(cls, path: Path, metadata: Mapping[str, object], cfg: RenderConfig) -> None:
        """Writes the run's metadata as ``metadata.json`` in the asset folder (where torchrl.render's is)."""
        import json

        folder = asset_folder(path, cfg)
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(folder / "metadata.json") as tmp:
            tmp.write_text(json.dumps(metadata, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")

    def on_episode(self, metrics: EpisodeMetrics) -> None:
        """Keeps the metrics and finishes the episode's mp4."""
        self._episodes.append(metrics)
        self._close_video(metrics["episode_ix"])
        self._close_viewer(metrics)

    def on_metrics(self, per_episode: list[EpisodeMetrics]) -> None:
        """The report's table and aggregates cover every episode of the run, not only the filmed ones."""
        self._episodes = list(per_episode)

    # -- the 3-D viewer of each episode (an html replay, embedded in a sandboxed iframe) ----------
    def _viewer_state(self, bundle: FrameBundle) -> None:
        traj = bundle.trajectory_index
        if traj not in self._viewers:
            self._viewers[traj] = HtmlWriter(self._workdir() / f"{self.stem}_ep{traj}.html", fps=self.fps,
                                             title=f"{self.stem} episode {traj}", facts=self._viewer_facts)
        self._viewers[traj].write(bundle)

    def _close_viewer(self, metrics: EpisodeMetrics) -> None:
        viewer = self._viewers.pop(metrics["episode_ix"], None)
        if viewer is not None:
            viewer.on_episode(metrics)
            self._viewer_pages[metrics["episode_ix"]] = viewer.close().path

    def _workdir(self) -> Path:
        if self._work is None:
            work = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}.d")
            fresh_folder(work, self.path, "a work folder beside")
            self._work = work
        return self._work

    def _close_video(self, traj: int) -> None:
        entry = self._open.pop(traj, None)
        if entry is None:
            return
        video, preview = entry
        art = video.close()
        self._done[traj] = (art.path, art.path.stat().st_size, art.info,
                            preview.encode() if preview is not None else None)

    # -- the end --------------------------------------------------------------------------------

    def _finish(self) -> dict[str, object]:
        if self.frames_wanted and self.num_frames == 0:
            raise no_frames_error(self.format, self.path)
        for traj in list(self._open):
            self._close_video(traj)
        videos, linked = self._report_videos()
        import nbformat

        nb = build_report(config=self.config, metrics=self._metrics(), videos=videos, mode=self.mode,
                          command=self.command, live_out=self.live_out, search_path=self.search_path,
                          assets=(relative(self.assets, self.path.parent), str(self.assets.absolute())))
        self._write_assets()
        if self.execute:
            self._run(nb)
        nbformat.validate(nb)
        with open(self.tmp, "w", encoding="utf-8") as file:
            nbformat.write(nb, file)
        side = self._place_side_files(linked)
        remove(self._workdir())
        self._work = None
        return {"mode": self.mode, "executed": self.execute, "cells": [c.id for c in nb.cells],
                "videos": [{"episode": v.episode, "embedded": v.data is not None, "bytes": v.size,
                            "path": None if v.data is not None else str(self.path.parent / v.name)}
                           for v in videos],
                "embed_limit_bytes": self.limit, "side_files": [str(p) for p in side if p != self.assets],
                "assets": str(self.assets), "saved_rollouts": self._saved_rollouts,
                "bytes": self.tmp.stat().st_size}

    def _metrics(self) -> RunMetrics:
        wall = sum(float(e.get("wall_s") or 0.0) for e in self._episodes)
        aggregated = aggregate(self._episodes, wall, **bootstrap_options(self.config))
        return {"per_episode": self._episodes, "aggregated": aggregated}

    def _report_videos(self) -> tuple[list[ReportVideo], list[Path]]:
        """Embeds the videos in episode order while they fit the limit; links the rest."""
        budget = self.limit
        by_episode = {e["episode_ix"]: e for e in self._episodes}
        videos, linked = [], []
        for traj in sorted(set(self._done) | set(self._viewer_pages)):
            if traj not in self._done:  # a 3-D replay without a video (no frames were rendered)
                page = self._viewer_pages[traj]
                videos.append(ReportVideo(traj, "", 0, None, None, by_episode.get(traj), self.limit,
                                          viewer=page.read_text(encoding="utf-8")))
                continue
            path, size, info, preview = self._done[traj]
            fits = budget is None or size <= budget
            if fits and budget is not None:
                budget -= size
            if not fits:
                linked.append(path)
            viewer_page = self._viewer_pages.get(traj)
            videos.append(ReportVideo(traj, path.name, size, path.read_bytes() if fits else None, preview,
                                      by_episode.get(traj), self.limit, display_width(info),
                                      viewer=viewer_page.read_text(encoding="utf-8") if viewer_page is not None
                                      else None,
                                      budget_left=None if fits else budget))
        return videos, linked

    def _run(self, nb: NotebookNode) -> None:
        """Executes ``nb`` in place with nbclient, in a fresh kernel of this interpreter."""
        from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

        cwd = self._workdir() / "kernel"
        cwd.mkdir(exist_ok=True)
        try:
            execute_notebook(nb, cwd, timeout=self.timeout, startup_timeout=STARTUP_TIMEOUT_S)
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
            failed = next((c.id for c in nb.cells if any(o.get("output_type") == "error" for o in c.get("outputs",
                                                                                                        []))),
                          None)
            what = f"{exc.ename}: {exc.evalue}" if isinstance(exc,
                                                              CellExecutionError) else f"{type(exc).__name__}: {exc}"
            raise WriterError(f"executing the report notebook failed in cell {failed or '?'!r}: {what}",
                              fix="check that the env and policy factories import in a fresh Python kernel, "
                                  "or pass --no-execute to write the notebook without running it") from exc

    def _asset_work(self) -> Path:
        """Where the asset folder is built: at its place relative to the kernel's working folder, so that the
        notebook's asset cell finds it when the notebook is executed."""
        inside = Path(relative(self.assets, self.path.parent))
        return self._workdir() / ("assets" if inside.is_absolute() else Path("kernel") / inside)

    def _write_assets(self) -> None:
        """The asset folder's ``config.json`` (its rollouts came with the episodes) and, for the MuJoCo viewer
        with a model file, torchrl.render's ``mujoco_wasm/`` viewer folder (what its notebook cells serve)."""
        import json

        folder = self._asset_work()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(self.config, indent=2, sort_keys=True) + "\n",
                                            encoding="utf-8")
        model = self.config.get("mujoco_model_path")  # to_dict() gives paths as text
        if isinstance(model, str) and model and self.config.get("notebook_render_backend") == "mujoco_wasm":
            assets = self.config.get("mujoco_asset_paths")
            write_mujoco_wasm_viewer(folder / MUJOCO_VIEWER_DIR, model,
                                     asset_paths=[str(p) for p in assets]
                                     if isinstance(assets, (list, tuple)) and assets else None)

    def _place_side_files(self, linked: list[Path]) -> list[Path]:
        """Renames the asset folder, the linked mp4s and what the live cells wrote to beside the notebook."""
        kernel = (self._work / "kernel") if self._work is not None else None
        sources = [(self._asset_work(), self.assets)] + [(p, self.path.parent / p.name) for p in linked]
        if kernel is not None and kernel.is_dir():
            sources += [(p, self.path.parent / p.name) for p in sorted(kernel.iterdir())
                        if p.is_file() and not p.name.startswith(".")]
        for _, target in sources:
            if target.exists() and not self.overwrite:
                raise OutputExistsError(f"{str(target)!r} already exists", got=str(target),
                                        fix="pass --overwrite (overwrite=True) or choose another --out")
        for source, target in sources:
            target.parent.mkdir(parents=True, exist_ok=True)
            commit(source, target)
        return [target for _, target in sources]

    def _release(self) -> None:
        for video, _ in self._open.values():
            video.abort()
        self._open.clear()
        for viewer in self._viewers.values():
            viewer.abort()
        self._viewers.clear()
        work, self._work = self._work, None
        if work is not None:
            remove(work)


def _check_can_execute() -> None:
    missing = [name for name in _NEEDED_TO_EXECUTE if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"executing the report notebook needs {', '.join(missing)}, which is not installed",
                          expected="nbclient, ipykernel and matplotlib importable", got=f"missing {missing}",
                          fix="install them, or pass --no-execute to write the notebook without running it",
                          extra=" ".join(missing))


def _check_importable_factories(cfg: RenderConfig) -> None:
    for name in ("env", "policy"):
        spec = getattr(cfg, name)
        if not isinstance(spec, str) and "<" in callable_name(spec):
            raise ConfigError(f"notebook_rollout_mode={cfg.notebook_rollout_mode!r} needs an importable {name} factory",
                              expected=f"a {name} spec such as 'mypkg.{name}:make' (the notebook's kernel imports it)",
                              got=callable_name(spec),
                              fix=f"pass the {name} as a 'module:object' string, or use notebook_rollout_mode='saved'")
