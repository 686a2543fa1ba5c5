"""The metadata sidecar's content: our keys, and every key of torchrl.render's, so code that reads theirs reads ours.

torchrl.render's sidecar (and the ``metadata`` of its jsonl and npz artifacts) holds the run's
config, ``command`` (one string), the torch/torchrl/python versions, ``platform``, ``working_dir``,
``checkpoint`` (``path``, ``sha256``), ``policy`` and ``env`` (the specs), ``seed``, ``device``,
``keys`` (``obs``, ``action``, ``done``, ``reward``, ``pixels``), ``asset_dir``, ``format``,
``num_trajs``, ``max_steps``, ``fps``, ``render_backend``, ``env_backend``, ``trajectories``
(``index``, ``num_steps``, ``return``, ``num_frames``, ``cameras``) and ``warnings``. Ours adds
``argv`` (the command as a list), ``versions``, ``gl_backend``, ``env_info`` (what the env is),
``render`` (the backend's facts), ``metrics``, ``artifacts``, ``timing``, ``engine`` and, per
trajectory, ``seed``.

Example:
    >>> from torchrl_render import RenderConfig
    >>> meta = torchrl_fields(RenderConfig(policy="m:p", env="E-v0", seed=3), episodes=[], cameras=["default"])
    >>> meta["env"], meta["seed"], meta["keys"]["obs"], meta["num_trajs"], meta["requested_num_trajs"]
    ('E-v0', 3, 'observation', 0, 1)
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from .config import RenderConfig
from .contracts import EpisodeMetrics, Json, UserEnv
from .data import Artifact, RunMetrics
from .envs import describe_env
from .keys import key_to_string
from .notebook.paths import MUJOCO_VIEWER_DIR, asset_folder, relative

if TYPE_CHECKING:
    from .backends.base import RenderBackend

__all__ = ["VERSIONED", "MujocoViewerEntry", "TorchrlFields", "TrajectoryEntry", "asset_dir", "command_text",
           "run_metadata", "torchrl_fields", "trajectory_entries", "versions"]

VERSIONED = ("torchrl_render", "torch", "torchrl", "tensordict", "gymnasium", "mujoco", "dm_control", "av", "numpy",
             "pillow")


#: One episode in the sidecar's ``trajectories`` (torchrl.render's keys, and the seed). A functional TypedDict,
#: since ``return`` is a keyword.
TrajectoryEntry = TypedDict("TrajectoryEntry", {"index": int, "seed": int | None, "num_steps": int, "return": float,
                                                 "num_frames": int, "cameras": list[str]})


class MujocoViewerEntry(TypedDict):
    """torchrl.render's ``mujoco_wasm`` entry: the notebook's live MuJoCo viewer."""

    viewer_dir: str
    model_path: str
    qpos_key: str | None
    viewer_port: int


class TorchrlFields(TypedDict):
    """The keys of torchrl.render's sidecar (:func:`torchrl_fields`)."""

    config: dict[str, Json]
    command: str
    torchrl_version: str | None
    torch_version: str | None
    python_version: str
    platform: str
    working_dir: str
    checkpoint: dict[str, str | None]
    policy: Json
    env: Json
    seed: int | None
    device: str
    keys: dict[str, str]
    asset_dir: str
    asset_dir_absolute: str
    format: str | None
    num_trajs: int
    requested_num_trajs: int | None
    max_steps: int | None
    fps: float
    render_backend: str
    env_backend: str
    notebook_rollout_mode: str
    trajectories: list[TrajectoryEntry]
    mujoco_wasm: NotRequired[MujocoViewerEntry]


def versions() -> dict[str, str | None]:
    """The installed versions of the packages a run depends on (``None``: not installed)."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in VERSIONED:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = None
    return out


def command_text(argv: list[str] | None) -> str:
    """The command as one string (torchrl.render's ``command``): the CLI's argv, else this process's."""
    return shlex.join(argv) if argv is not None else " ".join(sys.argv)


def asset_dir(cfg: RenderConfig) -> Path:
    """torchrl.render's ``asset_dir``: the notebook's asset folder, else where side artifacts go."""
    if cfg.format == "ipynb":
        return asset_folder(cfg.out_path, cfg)
    return Path(cfg.artifact_dir) if cfg.artifact_dir is not None else cfg.out_path.parent


def trajectory_entries(episodes: list[EpisodeMetrics], cameras: list[str]) -> list[TrajectoryEntry]:
    """One entry per episode: torchrl.render's keys (``cameras``: those of a rendered episode) and the seed."""
    return [{"index": e["episode_ix"], "seed": e["seed"], "num_steps": e["length"], "return": e["sum_reward"],
             "num_frames": e["num_frames"], "cameras": sorted(cameras) if e["num_frames"] else []}
            for e in episodes]


def torchrl_fields(cfg: RenderConfig, *, episodes: list[EpisodeMetrics], cameras: list[str],
                   digest: str | None = None, argv: list[str] | None = None) -> TorchrlFields:
    """The keys of torchrl.render's sidecar, for this run (``argv`` is the CLI's, when it ran one)."""

    config = cfg.to_dict()
    folder = asset_dir(cfg)
    shown = folder if cfg.format != "ipynb" else relative(folder, cfg.out_path.parent)
    fields: TorchrlFields = {
        "config": config, "command": command_text(argv), "torchrl_version": _version("torchrl"),
        "torch_version": _version("torch"), "python_version": sys.version.split()[0],
        "platform": platform.platform(), "working_dir": os.getcwd(),
        "checkpoint": {"path": str(cfg.ckpt) if cfg.ckpt is not None else None, "sha256": digest},
        "policy": config["policy"], "env": config["env"], "seed": cfg.seed, "device": str(cfg.device),
        "keys": {"obs": key_to_string(cfg.obs_key), "action": key_to_string(cfg.action_key),
                 "done": key_to_string(cfg.done_key), "reward": key_to_string(cfg.reward_key),
                 "pixels": key_to_string(cfg.pixel_key)},
        "asset_dir": str(shown), "asset_dir_absolute": str(folder.absolute()),
        "format": cfg.format, "num_trajs": len(episodes), "requested_num_trajs": cfg.num_trajs,
        "max_steps": cfg.max_steps, "fps": cfg.fps, "render_backend": cfg.render_backend,
        "env_backend": cfg.env_backend, "notebook_rollout_mode": cfg.notebook_rollout_mode,
        "trajectories": trajectory_entries(episodes, cameras),
    }
    viewer = _mujoco_viewer(cfg)
    if viewer is not None:
        fields["mujoco_wasm"] = viewer
    return fields


def _mujoco_viewer(cfg: RenderConfig) -> MujocoViewerEntry | None:
    """torchrl.render's ``mujoco_wasm`` entry of a notebook with the MuJoCo viewer and a model file."""
    if cfg.format != "ipynb" or cfg.notebook_render_backend != "mujoco_wasm" or cfg.mujoco_model_path is None:
        return None

    key = cfg.mujoco_qpos_key
    return {"viewer_dir": MUJOCO_VIEWER_DIR, "model_path": str(cfg.mujoco_model_path),
            "qpos_key": key_to_string(key) if key is not None else None, "viewer_port": cfg.notebook_viewer_port}


def run_metadata(cfg: RenderConfig, *, env: UserEnv | None, backend: RenderBackend | None, digest: str | None,
                 gl: str | None, metrics: RunMetrics, artifacts: list[Artifact], wall: float, argv: list[str] | None,
                 notes: list[str]) -> dict[str, object]:
    """A run's whole sidecar: :func:`torchrl_fields` and ours (``env`` / ``backend`` ``None``: nothing was built)."""

    frames = sum(e["num_frames"] for e in metrics["per_episode"])
    meta = torchrl_fields(cfg, episodes=metrics["per_episode"], cameras=cfg.camera, digest=digest, argv=argv)
    meta["keys"].update({k: key_to_string(getattr(cfg, k)) for k in ("obs_key", "action_key", "reward_key")})
    return {"torchrl_render_metadata": 1, **meta, "argv": argv, "versions": versions(), "gl_backend": gl,
            "env_info": describe_env(env) if env is not None else None,
            "render": backend.info() if backend is not None else None, "metrics": metrics,
            "artifacts": [a.to_dict() for a in artifacts],
            "timing": {"wall_s": wall, "frames": frames, "frames_per_s": frames / wall if wall > 0 else None},
            "warnings": notes}


def _version(name: str) -> str | None:
    try:
        return importlib_metadata.version(name)
    except importlib_metadata.PackageNotFoundError:
        return None
