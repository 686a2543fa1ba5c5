"""Replays from saved rollouts: a MuJoCo model file + the qpos recorded in the rollouts -> any frame format.

No policy and no env factory: evaluate on a headless cluster with ``--mujoco-qpos-key qpos
--save-rollout``, render later on a laptop with :func:`replay_rollouts` (or
``python -m torchrl_render replay``). ``html`` gets the states (poses computed with MuJoCo);
``mp4``, ``gif`` and ``frames`` get frames drawn by the ``mujoco`` backend from the same states. The
mocap bodies' poses, recorded beside qpos for models that have mocap bodies, are used too.

Example:
    >>> import mujoco, tempfile, pathlib, torch
    >>> from tensordict import TensorDict
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> xml = folder / "m.xml"
    >>> _ = xml.write_text('<mujoco><worldbody><body><joint type="slide"/><geom size=".1"/></body>'
    ...                    '</worldbody></mujoco>')
    >>> td = TensorDict({"qpos": torch.zeros(4, 1), "next": {"qpos": torch.ones(4, 1),
    ...                  "reward": torch.ones(4, 1)}}, batch_size=[4])
    >>> [a.num_frames for a in replay_rollouts([td], xml, folder / "r.html")]
    [5]
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from numpy.typing import NDArray

from ..backends.mujoco import MujocoBackend, camera_names
from ..config import RenderConfig, parse_nested_key
from ..contracts import EpisodeMetrics, Frames, Json, StepMetrics, UserValue
from ..data import Artifact, FrameBundle, SimState
from ..envs.mujoco_state import episode_mocap, episode_states, load_model
from ..errors import ConfigError, OutputExistsError, RenderError
from ..frames import apply_layout, to_uint8_hwc
from ..keys import NestedKey
from ..storage import load_rollouts
from ..writers.group import WriterGroup
from .parser import artifact_notes

if TYPE_CHECKING:
    import mujoco
    from tensordict import TensorDictBase

__all__ = ["REPLAY_FORMATS", "recorded_model_path", "replay_rollouts"]

#: formats a replay can write: the states themselves (html) or frames drawn from them
REPLAY_FORMATS = ("html", "mp4", "gif", "frames")

#: saved rollouts: a rollout folder (``--save-rollout``), or the episodes' TensorDicts (None: an episode not kept)
Rollouts: TypeAlias = "str | Path | Sequence[TensorDictBase | None]"


def _rewards(td: TensorDictBase, frames: int) -> NDArray[np.float64]:
    reward = td.get(("next", "reward"), None)
    out = np.zeros(frames)
    if reward is not None:
        values = np.asarray(reward.detach().cpu(), dtype=np.float64).reshape(reward.shape[0], -1).sum(1)
        out[1:1 + len(values)] = values[:frames - 1]
    return out


def _flag(td: TensorDictBase, key: str) -> bool:
    value = td.get(("next", key), None)
    return bool(value[-1].any()) if value is not None and value.shape[0] else False


def _episodes(rollouts: Rollouts, qpos_key: NestedKey,
              trust: bool) -> list[tuple[int, TensorDictBase, NDArray[np.float64]]]:
    tds: Sequence[TensorDictBase | None] = load_rollouts(rollouts, trust=trust) \
        if isinstance(rollouts, (str, Path)) else rollouts
    episodes = []
    for i, td in enumerate(tds):
        if td is None:
            continue
        try:
            episodes.append((i, td, episode_states(td, qpos_key)))
        except KeyError as exc:
            raise RenderError(f"rollout {i} holds no MuJoCo qpos under {qpos_key!r}", expected=str(exc),
                              got=", ".join(sorted(map(str, td.keys(True, True))))[:300],
                              fix="record the rollouts with --mujoco-qpos-key qpos --save-rollout, or pass the "
                                  "key they were recorded under (--mujoco-qpos-key)") from exc
    if not episodes:
        raise RenderError("the rollouts hold no episode with steps", fix="pass a rollout folder of a finished run")
    return episodes


def _replay_config(out: Path, fmt: str | None, model_path: Path, **fields: UserValue) -> RenderConfig:
    cfg = RenderConfig(policy="(replay)", env=f"replay of {model_path.name}", out=out, format=fmt,
                       **{k: v for k, v in fields.items() if v is not None})
    if cfg.format not in REPLAY_FORMATS:
        raise ConfigError(f"a replay from saved rollouts cannot write format {cfg.format!r}",
                          expected=", ".join(REPLAY_FORMATS), got=cfg.format,
                          fix="choose --out replay.html, .mp4, .gif or a folder name (frames)")
    return cfg


def replay_rollouts(rollouts: Rollouts, model_path: str | Path | None, out: str | Path, *,
                    asset_paths: Sequence[str | Path] = (), qpos_key: NestedKey = "qpos",
                    format: str | None = None, trust_rollouts: bool = False,
                    **fields: UserValue) -> list[Artifact]:
    """Rebuilds the episodes of saved rollouts from a MuJoCo model file into ``out``.

    Args:
        rollouts: A rollout folder (``--save-rollout``) or a list of episode TensorDicts.
        model_path: The MuJoCo model (XML or MJB) the rollouts were recorded with; ``None``: the one the run
            recorded (:func:`recorded_model_path`).
        out: The artifact to write (``.html``, ``.mp4``, ``.gif`` or a folder for frames).
        asset_paths: Files or folders with the model's meshes and textures.
        qpos_key: The key the qpos were recorded under (``mujoco_qpos_key`` of the run).
        format: The format (default: from ``out``'s suffix).
        trust_rollouts: Load pickled non-tensor entries of a rollout folder (unpickling runs code from the
            folder: trusted folders only; ``--trust-rollouts``).
        **fields: Further :class:`~torchrl_render.RenderConfig` fields for the writers and the renderer
            (``fps``, ``width``, ``height``, ``camera``, ``render_quality``, ``overwrite``...).

    Returns:
        The artifacts written.
    """

    model_path = Path(model_path) if model_path is not None else recorded_model_path(rollouts)
    model = load_model(model_path, asset_paths)
    episodes = _episodes(rollouts, parse_nested_key(qpos_key, "qpos_key"), trust_rollouts)
    cfg = _replay_config(Path(out), format, model_path, num_trajs=max(i for i, _, _ in episodes) + 1, **fields)
    group = WriterGroup(cfg, cfg.out_path)
    for path in group.planned_paths():
        if path.exists() and not cfg.overwrite:
            raise OutputExistsError(f"{str(path)!r} already exists", got=str(path),
                                    fix="pass --overwrite or choose another --out")
    cameras, note = _cameras(model, cfg)
    drawer = _Drawer(model, cfg, cameras) if cfg.format != "html" else None
    try:
        for index, td, states in episodes:
            _write_episode(group, drawer, model, index, td, states, parse_nested_key(qpos_key, "qpos_key"))
        artifacts = group.close()
        for artifact in artifacts:
            notes = artifact_notes(artifact)
            if drawer is not None:
                artifact.info["cameras"] = cameras
                notes.append(note)
            if notes:
                artifact.info["notes"] = notes
        return artifacts
    except BaseException:
        group.abort()
        raise
    finally:
        if drawer is not None:
            drawer.close()


def recorded_model_path(rollouts: Rollouts) -> Path:
    """The model file a run recorded for its saved rollouts: the rollout folder's ``index.json``, else the
    run's sidecar (named there, or a ``*.metadata.json`` beside the folder that lists it as an artifact).

    Gymnasium MuJoCo envs record their model file; dm_control builds its models from strings, so its
    rollouts need ``--mujoco-model-path``.
    """
    fix = "pass the model file with --mujoco-model-path (model_path=...)"
    if not isinstance(rollouts, (str, Path)):
        raise ConfigError("replaying TensorDicts needs the MuJoCo model file", got="model_path=None", fix=fix)
    folder = Path(rollouts)
    index = _read_json(folder / "index.json") or {}
    listed_sidecar = index.get("metadata")
    listed_sidecar = listed_sidecar if isinstance(listed_sidecar, str) else None  # the run's sidecar, by its path
    sidecars = [Path(listed_sidecar)] if listed_sidecar else []
    sidecars += sorted(folder.absolute().parent.glob("*.metadata.json"))
    found = index.get("mujoco_model_path")
    for sidecar in sidecars if found is None else ():
        meta = _read_json(sidecar) or {}
        if sidecar.name and (str(folder.absolute()) in _artifact_paths(meta.get("artifacts"))
                             or Path(listed_sidecar or "") == sidecar):
            found = _member(meta.get("env_info"), "mujoco_model_path") or \
                _member(meta.get("config"), "mujoco_model_path")
            if found is not None:
                break
    if found is None:
        raise ConfigError(f"no --mujoco-model-path, and the run of {str(folder)!r} recorded no MuJoCo model file "
                          "(gymnasium MuJoCo envs record theirs; dm_control builds its models from strings)",
                          expected="a rollout folder written with --save-rollout by a gymnasium MuJoCo env",
                          got=str(folder), fix=fix)
    if not isinstance(found, str) or not Path(found).is_file():
        raise ConfigError(f"the run of {str(folder)!r} recorded the model file {found!r}, which is not on this "
                          "machine", got=str(found),
                          fix=fix + " (the env's XML, e.g. from gymnasium/envs/mujoco/assets)")
    return Path(found)


def _member(doc: Json, key: str) -> Json:
    """``doc[key]`` of a JSON object; None where ``doc`` is no object or has no ``key``."""
    return doc.get(key) if isinstance(doc, dict) else None


def _artifact_paths(artifacts: Json) -> set[str]:
    """The absolute paths of a sidecar's ``artifacts`` entries."""
    paths = set()
    for artifact in artifacts if isinstance(artifacts, list) else ():
        path = _member(artifact, "path")
        if path is None or isinstance(path, str):
            paths.add(str(Path(path or "").absolute()))
    return paths


def _read_json(path: Path) -> dict[str, Json] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_episode(group: WriterGroup, drawer: _Drawer | None, model: mujoco.MjModel, index: int,
                   td: TensorDictBase, states: NDArray[np.float64], qpos_key: NestedKey = "qpos") -> None:
    started = time.perf_counter()
    rewards = _rewards(td, len(states))
    returns = np.cumsum(rewards)
    mocap = episode_mocap(td, qpos_key) if model.nmocap else {}  # the mocap bodies' recorded poses
    if drawer is not None:
        drawer.begin_episode()
    for step, qpos in enumerate(states):
        metrics: StepMetrics = {"step": step, "reward": float(rewards[step]), "return": float(returns[step])}
        state: SimState = {"model": model, "qpos": qpos}
        if "mocap_pos" in mocap:  # an episode's last pose stands for any step past the recorded ones
            state["mocap_pos"] = mocap["mocap_pos"][min(step, len(mocap["mocap_pos"]) - 1)]
        if "mocap_quat" in mocap:
            state["mocap_quat"] = mocap["mocap_quat"][min(step, len(mocap["mocap_quat"]) - 1)]
        if drawer is None:
            bundle = FrameBundle({}, step, index, metrics=metrics, state=state)
        else:
            bundle = FrameBundle(drawer.frames(state), step, index, metrics=metrics)
        group.write(bundle)
    episode: EpisodeMetrics = {
        "episode_ix": index, "seed": None, "sum_reward": float(returns[-1]),
        "max_reward": float(rewards[1:].max()) if len(states) > 1 else None, "length": len(states) - 1,
        "success": None, "terminated": _flag(td, "terminated"), "truncated": _flag(td, "truncated"),
        "wall_s": time.perf_counter() - started, "num_frames": len(states)}
    group.on_episode(episode)


def _cameras(model: mujoco.MjModel, cfg: RenderConfig) -> tuple[list[str], str]:
    """The cameras a video replay films, and the note that says so. A bare model file has no env to say
    which view is its own, and its camera 0 may be anything (Fetch's is its head camera): without
    ``--camera`` the free camera framed on the model is used, as the html page opens."""
    names = camera_names(model)
    listed = ", ".join(repr(n) if n else f"#{i}" for i, n in enumerate(names)) or "none"
    if list(cfg.camera) == ["default"]:
        return ["-1"], (f"filmed with MuJoCo's free camera framed on the model (as the html page opens); the "
                        f"model's cameras: {listed} (--camera NAME films one of them)")
    return list(cfg.camera), f"filmed with camera {', '.join(map(str, cfg.camera))}; the model's cameras: {listed}"


class _Drawer:
    """Frames of the model at given states, drawn by the ``mujoco`` backend."""

    def __init__(self, model: mujoco.MjModel, cfg: RenderConfig, cameras: list[str]) -> None:
        import mujoco

        self._mujoco, self.model, self.data = mujoco, model, mujoco.MjData(model)
        self.backend = MujocoBackend(model, self.data, cameras, width=cfg.width, height=cfg.height,
                                     render_quality=cfg.render_quality)
        self.layout = cfg.camera_layout

    def begin_episode(self) -> None:
        self.backend.begin_episode()

    def frames(self, state: SimState) -> Frames:
        self.data.qpos[:] = state["qpos"]
        for field in ("mocap_pos", "mocap_quat"):
            if field in state:
                getattr(self.data, field)[:] = np.asarray(state[field]).reshape(getattr(self.data, field).shape)
        self._mujoco.mj_forward(self.model, self.data)
        captured = self.backend.capture(None)
        return apply_layout({name: to_uint8_hwc(f) for name, f in captured.items()}, self.layout)

    def close(self) -> None:
        self.backend.close()
