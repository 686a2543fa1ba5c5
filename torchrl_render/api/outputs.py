"""What one run writes, decided before anything runs: the writer groups, the sidecar, the rollout folder.

:class:`RunOutputs` plans the paths from the config, refuses the ones that cannot be written (before a checkpoint
is loaded or an env is built), writes the sidecars at the end and, when the run fails, the metrics of its finished
episodes (``<out>.partial.json``). A failed run leaves no artifact: :func:`remove_artifacts`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from ..config import RenderConfig
from ..contracts import EpisodeMetrics
from ..data import Artifact, RunMetrics
from ..errors import WriterError
from ..metrics import aggregate, json_ready
from ..storage import check_os_name, check_replaceable, write_json_atomic
from ..writers import WRITERS
from ..writers.base import remove
from ..writers.group import WriterGroup

__all__ = ["RunOutputs", "remove_artifacts", "write_json"]

log = logging.getLogger("torchrl_render")


class RunOutputs:
    """The paths of one run: the format's writers (``groups``: the artifact, then ``--save-frames``'s folder and
    the replay page of ``--notebook-render-backend mujoco_wasm``), the ``sidecar`` and the ``rollout_dir``."""

    def __init__(self, cfg: RenderConfig) -> None:
        self.cfg = cfg
        out = cfg.out_path
        self.groups = [WriterGroup(cfg, out)]
        if cfg.save_frames:
            frame_dir = Path(cfg.frame_dir) if cfg.frame_dir is not None else out.with_name(out.stem + "_frames")
            self.groups.append(WriterGroup(dataclasses.replace(cfg, format="frames", out=frame_dir,
                                                               save_frames=False), frame_dir))
        if cfg.notebook_render_backend == "mujoco_wasm" and cfg.format not in ("html", "ipynb"):
            replay = out.with_name((out.stem if out.suffix else out.name) + "_replay.html")
            self.groups.append(WriterGroup(dataclasses.replace(cfg, format="html", out=replay, save_frames=False),
                                           replay))
        self.sidecar = Path(cfg.metadata or f"{out}.metadata.json")
        folder = Path(cfg.artifact_dir) if cfg.artifact_dir is not None else out.parent
        stem = out.stem if out.suffix else out.name
        # a notebook's asset folder holds its rollouts (torchrl.render's layout, which its cells read)
        saved = (cfg.save_rollout or cfg.save_tensordicts) and cfg.format != "ipynb"
        self.rollout_dir: Path | None = folder / f"{stem}_rollouts" if saved else None

    @property
    def partial(self) -> Path:
        """Where a failed run keeps its finished episodes' metrics."""
        return Path(f"{self.cfg.out}.partial.json")

    def planned_paths(self) -> list[Path]:
        """Every path the run will write: the artifacts, the sidecar, the rollout folder."""
        paths = [p for g in self.groups for p in g.planned_paths()] + [self.sidecar]
        return paths + ([self.rollout_dir] if self.rollout_dir is not None else [])

    def check(self) -> None:
        """Refuses, before anything runs, a path the OS or the writer refuses, a missing or read-only folder,
        a folder where a file goes, and an existing output without ``--overwrite``."""
        cfg = self.cfg
        paths = self.planned_paths()
        for path in [*paths, self.partial]:  # names the OS refuses, before anything
            own = path == self.sidecar and cfg.metadata
            check_os_name(path, "--metadata" if own else "--out", None if own else cfg.out_path)
        for group in self.groups:
            for path in group.planned_paths():  # writer-specific preconditions, before any rollout
                group.cls.check(path, group.cfg)
        for path in paths:
            parent = path.parent if str(path.parent) else Path(".")
            if not parent.is_dir():
                raise WriterError(f"the output folder {str(parent)!r} does not exist", got=str(path),
                                  fix=f"create it first (mkdir -p {shlex.quote(str(parent))}) or choose another "
                                      "--out")
            if not os.access(parent, os.W_OK):
                raise WriterError(f"the output folder {str(parent)!r} is not writable", got=str(path),
                                  fix="choose a folder you can write to")
            folder_expected = path == self.rollout_dir or (WRITERS.entry(cfg.format_name).directory
                                                           and path != self.sidecar)
            if path.is_dir() and not folder_expected:
                raise WriterError(f"{str(path)!r} is a folder, and format {cfg.format!r} writes a file there",
                                  got=str(path), fix="choose a file name for --out (e.g. run.mp4)")
            check_replaceable(path, cfg.overwrite)

    def write_sidecars(self, meta: Mapping[str, object], cfg: RenderConfig) -> None:
        """The metadata sidecar, and the metadata kept inside artifacts (jsonl, npz, the notebook's asset folder).
        ``cfg``: the run's config as it ran (Isaac Lab's env may have changed it since the paths were planned)."""
        ready = json_ready(dict(meta))  # NaN returns are null in every copy
        write_json(self.sidecar, ready)
        for fmt, path in _artifact_entries(ready):
            hook = getattr(WRITERS.load(fmt), "add_metadata", None) if fmt in WRITERS.names() else None
            if hook is not None:
                hook(Path(path), ready, cfg)

    def write_partial(self, episodes: list[EpisodeMetrics], exc: BaseException, cfg: RenderConfig) -> None:
        """Keeps the metrics of the episodes that finished beside the (absent) artifact; the error says where.
        ``cfg``: the run's config as it ran."""
        if not episodes:
            return
        metrics: RunMetrics = {"per_episode": episodes,
                               "aggregated": aggregate(episodes, 0.0, reps=cfg.bootstrap_reps, seed=cfg.seed)}
        data = {"error": f"{type(exc).__name__}: {exc}", "config": cfg.to_dict(), "metrics": metrics}
        try:
            write_json(self.partial, data)
        except OSError as write_exc:  # the run's own error matters more
            log.warning("could not write %s: %s", self.partial, write_exc)
            return
        exc.add_note(f"the {len(episodes)} finished episode(s) are in {self.partial}")  # the CLI's Ctrl-C line


def _artifact_entries(meta: Mapping[str, object]) -> list[tuple[str, str]]:
    """``(format, path)`` of each of the sidecar's ``artifacts`` (:meth:`~torchrl_render.data.Artifact.to_dict`)."""
    entries = meta.get("artifacts", [])
    return [(entry["format"], entry["path"]) for entry in (entries if isinstance(entries, list) else [])
            if isinstance(entry, dict)]


def remove_artifacts(artifacts: list[Artifact]) -> None:
    """Removes written artifacts (a run that fails after its writers finished leaves none)."""
    for artifact in artifacts:
        remove(Path(artifact.path))


def write_json(path: Path, data: Mapping[str, object]) -> None:
    """A sidecar or partial file: strict JSON (no NaN), written atomically."""
    write_json_atomic(path, json_ready(dict(data)), default=str, allow_nan=False)
