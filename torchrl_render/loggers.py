"""``--logger tensorboard|wandb|mlflow|csv``: a run's (or a sweep cell's) evaluation in the trackers users use.

Through TorchRL's own loggers (``torchrl.record.loggers``: TensorboardLogger, WandbLogger,
MLFlowLogger, CSVLogger), imported only when ``--logger`` is given (a run without it imports
neither torchrl nor tensordict). Each evaluation logs ``eval/avg_sum_reward``,
``eval/pc_success``, ``eval/avg_max_reward``, ``eval/avg_length``, the 95% interval of the
mean return (``eval/ci95_sum_reward_low`` / ``_high``) and, when the env reports success, the 95% Wilson
interval of the success rate (``eval/ci95_success_low`` / ``_high``) at the checkpoint's training step
(``eval/<task>/...`` when a sweep has several tasks), the rendered videos through the logger's
``log_video``, and the run's config as hparams. W&B runs offline when no credentials are set
(a note says so). MLflow logs to a local store in the log folder, no server: ``mlflow.db`` (SQLite:
MLflow 3 refuses its old file store) and the videos under ``mlartifacts/``; ``mlflow ui
--backend-store-uri sqlite:///DIR/mlflow.db`` shows it. The packages are the optional extra
``torchrl_render[loggers]``.

Example:
    >>> sorted(scalars({"avg_sum_reward": 2.5, "pc_success": None, "avg_max_reward": 1.0, "avg_length": 10.0,
    ...                 "ci95_sum_reward": [2.0, 3.0]}, task="pend"))  # pc_success None: the env has no success
    ['eval/pend/avg_length', 'eval/pend/avg_max_reward', 'eval/pend/avg_sum_reward', 'eval/pend/ci95_sum_reward_high',
     'eval/pend/ci95_sum_reward_low']
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from .checkpoint.step import checkpoint_step
from .config import RenderConfig
from .data import RenderResult
from .errors import ConfigError

if TYPE_CHECKING:
    import torch
    from torchrl.record.loggers import Logger

__all__ = ["LOGGERS", "LOGGERS_EXTRA", "EvalLogger", "check_logger", "hparams", "log_run", "open_logger", "scalars"]

log = logging.getLogger("torchrl_render")
LOGGERS_EXTRA = "torchrl_render[loggers]"
#: ``--logger`` kind -> (TorchRL's logger class in torchrl.record.loggers, the modules its tracker needs).
#: MLflow: sqlalchemy and alembic for its SQLite store, omegaconf because TorchRL's MLFlowLogger.log_hparams
#: imports it.
LOGGERS = {"tensorboard": ("TensorboardLogger", ("tensorboard",)), "wandb": ("WandbLogger", ("wandb",)),
           "mlflow": ("MLFlowLogger", ("mlflow", "sqlalchemy", "alembic", "omegaconf")), "csv": ("CSVLogger", ())}
_SCALARS = ("avg_sum_reward", "pc_success", "avg_max_reward", "avg_length")
_MAX_VIDEO_FRAMES = 600  # a logged video is decoded whole into memory: its first 600 frames at most


def scalars(aggregated: Mapping[str, object], task: str | None) -> dict[str, float]:
    """The ``eval/...`` scalars of one evaluation (a cell's or a run's aggregates); None and NaN left out."""
    prefix = "eval/" if task is None else f"eval/{re.sub(r'[^A-Za-z0-9_.-]+', '_', task)}/"
    out: dict[str, float] = {}
    for k in _SCALARS:
        value = aggregated.get(k)
        if _finite(value):
            out[f"{prefix}{k}"] = float(value)
    for interval in ("ci95_sum_reward", "ci95_success"):  # the mean return's; the success rate's (Wilson's)
        ci = aggregated.get(interval)  # [low, high], or None
        if isinstance(ci, (list, tuple)) and ci and all(_finite(v) for v in ci):
            out[f"{prefix}{interval}_low"], out[f"{prefix}{interval}_high"] = float(ci[0]), float(ci[1])
    return out


def _finite(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is a finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def hparams(config: Mapping[str, object]) -> dict[str, bool | int | float | str]:
    """A config as hparams: nested keys flattened with ``.``, values kept as bool/int/float/str."""
    out: dict[str, bool | int | float | str] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            out.update({f"{key}.{k}": v for k, v in hparams(value).items()})
        elif isinstance(value, (bool, int, float, str)):
            out[key] = value
        elif value is not None and not callable(value):
            out[key] = str(value)
    return out


class EvalLogger:
    """One TorchRL logger for a run or a sweep: scalars at a step, videos, hparams once.

    Args:
        kind: ``tensorboard``, ``wandb``, ``mlflow`` or ``csv``.
        log_dir: Where the logs go (W&B's and MLflow's local folders too).
        exp_name: The experiment's (run's) name.
        project: The W&B project (the MLflow experiment's name for MLflow).
        fps: The videos' frame rate.
    """

    def __init__(self, kind: str, log_dir: str | Path, exp_name: str, project: str | None = None,
                 fps: float = 30.0) -> None:
        self.kind, self.fps = kind, fps
        self.notes: list[str] = []
        self.logger: Logger | None = None  # TorchRL's logger; None once closed (and should _make raise)
        self.logger = _make(kind, str(log_dir), exp_name, project, fps, self.notes)
        # TorchRL's MLFlowLogger encodes its videos with torchcodec
        self.videos = kind != "mlflow" or importlib.util.find_spec("torchcodec") is not None
        if not self.videos:
            self.notes.append("MLflow: the videos are not logged: TorchRL's MLFlowLogger writes them with "
                              "torchcodec, which is not installed (pip install torchcodec)")

    @property
    def _open(self) -> Logger:
        """TorchRL's logger, which :meth:`close` let go."""
        if self.logger is None:
            raise ValueError(f"the {self.kind} logger is closed")
        return self.logger

    def log_eval(self, aggregated: Mapping[str, object], step: int | None, task: str | None = None,
                 have: Collection[str] = ()) -> None:
        """The aggregates' scalars at ``step``, but those named in ``have`` (the logger holds them already)."""
        for name, value in scalars(aggregated, task).items():
            if name not in have:
                self._open.log_scalar(name, value, step=step)

    def on_disk(self, step: int | None) -> set[str] | None:
        """The scalar names this logger's files hold at ``step`` already, read back from the folder it writes to:
        CSV's ``scalars/*.csv`` and TensorBoard's events files, which a resumed session appends to (or writes beside,
        for the same run). None where they cannot be read (W&B, MLflow: a resumed session logs into a run of its
        own) or the step is unknown."""
        if step is None or self.kind not in ("csv", "tensorboard"):
            return None
        folder = Path(self._open.experiment.log_dir)
        if self.kind == "csv":  # one file a scalar, one "step,value" line a point
            return {path.relative_to(folder / "scalars").with_suffix("").as_posix()
                    for path in (folder / "scalars").rglob("*.csv")
                    if any(line.split(",", 1)[0] == str(step) for line in path.read_text().splitlines())}
        self._open.experiment.flush()  # this session's own file too
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

        names: set[str] = set()
        for path in sorted(folder.glob("events.out.tfevents.*")):
            for event in EventFileLoader(str(path)).Load():
                if event.step == step and event.HasField("summary"):
                    names.update(value.tag for value in event.summary.value)
        return names

    def log_videos(self, paths: Sequence[str | Path], step: int | None, task: str | None = None) -> None:
        """Each rendered mp4/gif through the logger's ``log_video``, as a ``(1, T, 3, H, W)`` uint8 tensor."""
        if not self.videos:
            return
        for i, path in enumerate(p for p in paths if str(p).lower().endswith((".mp4", ".gif", ".webm"))):
            video = read_video(Path(path))
            if video is None:
                continue
            name = "eval/video" if task is None else f"eval/{re.sub(r'[^A-Za-z0-9_.-]+', '_', task)}/video"
            if self.kind == "mlflow":  # TorchRL names its temporary file after the video: a '/' is a missing folder
                name = name.replace("/", "_")
            kwargs = {"fps": max(1, round(self.fps))} if self.kind in ("tensorboard", "wandb") else {}
            self._open.log_video(name if i == 0 else f"{name}_{i}", video, step=step, **kwargs)

    def log_hparams(self, config: Mapping[str, object]) -> None:
        self._open.log_hparams(hparams(config))

    def confirm(self) -> bool:
        """Puts what was logged on disk; whether it is there now (TensorBoard: flushed; CSV and MLflow write at
        once). W&B's service process writes its offline file on its own clock, with no call that waits for it
        before the run finishes: False, and what was logged is on disk once :meth:`close` returns."""
        if self.kind == "tensorboard":
            self._open.experiment.flush()
        return self.kind != "wandb"

    def close(self) -> None:
        logger, self.logger = self.logger, None
        if logger is None:
            return
        if self.kind == "tensorboard":
            logger.experiment.close()
        elif self.kind == "wandb":
            logger.experiment.finish()
            _wandb_flushed()
        elif self.kind == "mlflow":
            import mlflow

            mlflow.end_run()


def _wandb_flushed() -> None:
    """Waits until W&B has written the finished run to disk.

    ``Run.finish()`` returns once it has told W&B's service process that the run is over. The service
    writes the run file (``run-*.wandb``) after that, so a ``wandb sync`` or a reader started right after
    could find it empty. ``wandb.teardown()`` waits for the service to stop. It also finishes every run of
    this process, so it is called only when no other run is active, such as the user's own training
    run; the next ``wandb.init`` starts a new service.
    """
    import wandb

    if wandb.setup().most_recent_active_run is None:
        wandb.teardown()


def check_logger(kind: str | None) -> None:
    """Refuses a ``--logger`` whose package is missing (before anything runs: the error names the extra)."""
    if not kind:
        return
    if kind not in LOGGERS:
        raise ConfigError(f"logger must be one of {', '.join(LOGGERS)}", got=kind, fix="pass --logger tensorboard")
    missing = [m for m in LOGGERS[kind][1] if importlib.util.find_spec(m) is None]
    if missing:
        names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        raise ConfigError(f"--logger {kind} needs the {names} package{'s' if len(missing) > 1 else ''}, "
                          f"which {'are' if len(missing) > 1 else 'is'} not installed",
                          expected=f"{names} importable", got=f"no module named {missing[0]!r}",
                          fix="install the loggers extra", extra=f"'{LOGGERS_EXTRA}'")


def _make(kind: str, log_dir: str, exp_name: str, project: str | None, fps: float, notes: list[str]) -> Logger:
    check_logger(kind)
    cls_name = LOGGERS[kind][0]
    from torchrl.record import loggers

    cls = getattr(loggers, cls_name)
    os.makedirs(log_dir, exist_ok=True)
    if kind == "tensorboard":
        return cls(exp_name=exp_name, log_dir=log_dir)
    if kind == "csv":  # mp4 videos through torchcodec where it is installed, else tensors saved with torch.save
        video = "mp4" if importlib.util.find_spec("torchcodec") is not None else "pt"
        return cls(exp_name=exp_name, log_dir=log_dir, video_format=video, video_fps=max(1, round(fps)))
    if kind == "wandb":
        offline = not _wandb_credentials()
        if offline:
            notes.append(f"W&B: no credentials (WANDB_API_KEY, ~/.netrc, wandb login): the run is logged offline "
                         f"under {log_dir}/wandb; upload it later with `wandb sync`")
        # An evaluation inside a training script that logs to W&B itself: reinit="create_new" starts a run of our
        # own beside the user's (wandb.init would otherwise finish theirs). The mode goes to wandb.init too:
        # TorchRL's logger says offline through the WANDB_MODE variable, which W&B reads only when its service
        # starts (not when the user's run started it already), and leaves set, which would send the user's
        # later runs offline; it is put back as it was.
        mode = os.environ.get("WANDB_MODE")
        try:
            return cls(exp_name=exp_name, offline=offline, save_dir=log_dir, project=project or "torchrl_render",
                       video_fps=max(1, round(fps)), log_env_packages=False, reinit="create_new",
                       **({"mode": "offline"} if offline else {}))
        finally:
            if mode is None:
                os.environ.pop("WANDB_MODE", None)
            else:
                os.environ["WANDB_MODE"] = mode
    return _mlflow(cls, Path(log_dir).resolve(), exp_name, project)


def _mlflow(cls: type[Logger], log_dir: Path, exp_name: str, project: str | None) -> Logger:
    """TorchRL's MLFlowLogger on a local store: SQLite in ``log_dir/mlflow.db``, artifacts in ``log_dir/mlartifacts``.

    TorchRL's logger names the MLflow *experiment* after its ``exp_name``: that is ``--logger-project``
    (default ``torchrl_render``), and our experiment name becomes the run's name, as W&B's run is named.
    """
    import mlflow

    logging.getLogger("alembic").setLevel(logging.WARNING)  # MLflow's first start migrates the new database, loudly
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
    logger = cls(exp_name=project or "torchrl_render", tracking_uri=f"sqlite:///{log_dir / 'mlflow.db'}",
                 artifact_location=(log_dir / "mlartifacts").as_uri())
    mlflow.set_tag("mlflow.runName", exp_name)  # the run TorchRL's logger started is the active one
    return logger


def _wandb_credentials() -> bool:
    """Whether W&B could log online: an API key in the environment or ~/.netrc (what ``wandb login`` writes)."""
    if os.environ.get("WANDB_MODE") in ("offline", "disabled", "dryrun"):
        return False
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    return netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="replace")


def read_video(path: Path) -> torch.Tensor | None:
    """A video file as a ``(1, T, 3, H, W)`` uint8 tensor (its first frames), or None if it has none."""
    import av
    import numpy as np
    import torch

    frames = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            frames.append(frame.to_ndarray(format="rgb24"))
            if len(frames) >= _MAX_VIDEO_FRAMES:
                break
    if not frames:
        return None
    return torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2).unsqueeze(0).contiguous()


def open_logger(cfg: RenderConfig, exp_name: str, log_dir: str | Path) -> EvalLogger | None:
    """The logger a config asks for (``cfg.logger``), or None; logs the config as hparams once."""
    if not getattr(cfg, "logger", None):
        return None
    return _open_logger(cfg, exp_name, log_dir)


def _open_logger(cfg: RenderConfig, exp_name: str, log_dir: str | Path) -> EvalLogger:
    """:func:`open_logger` of a config that asks for one."""
    assert cfg.logger is not None  # the callers checked
    logger = EvalLogger(cfg.logger, cfg.logger_dir or log_dir, cfg.exp_name or exp_name, cfg.logger_project,
                        fps=getattr(cfg, "fps", None) or 30.0)
    logger.log_hparams(cfg.to_dict())
    return logger


def log_run(cfg: RenderConfig, result: RenderResult) -> None:
    """``render_policy(..., logger=KIND)``: the run's aggregates and videos at its checkpoint's training step."""
    if not getattr(cfg, "logger", None):
        return
    out = Path(result.artifact_path or cfg.out_path)
    step = checkpoint_step(cfg.ckpt) if cfg.ckpt is not None else None
    logger = _open_logger(cfg, exp_name=out.stem if out.suffix else out.name, log_dir=out.parent / "logs")
    try:
        logger.log_eval(result.metrics["aggregated"], step)
        logger.log_videos([a.path for a in result.artifacts if a.path is not None], step)
    finally:
        logger.close()
    for note in logger.notes:
        log.warning("%s", note)
        result.warnings.append(note)
