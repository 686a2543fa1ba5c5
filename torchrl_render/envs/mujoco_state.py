"""MuJoCo state: read it from a live env, store it in rollouts, read it back from saved rollouts.

:class:`MujocoStateReader` finds the simulation behind a torchrl env (a gymnasium MuJoCo
env, a dm_control env, or an env whose ``get_state()`` returns ``qpos``) and snapshots
``qpos`` (plus ``qvel``, ``act``, ``ctrl``, ``mocap_pos``, ``mocap_quat``, ``time``).
:func:`extract_qpos_trajectory` reads a ``T x nq`` qpos trajectory out of a rollout
TensorDict; :func:`episode_states` gives all ``T + 1`` states of an episode that was
recorded with ``mujoco_qpos_key`` (the state before each action, and the last one).
:func:`load_model` loads an ``MjModel`` from a file. :class:`LiveStates` is the live side of a
run: the MuJoCo state behind each step record, stored into the rollouts and handed to the
writers that draw states.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"qpos": torch.zeros(2, 3), "next": {"qpos": torch.ones(2, 3)}}, batch_size=[2])
    >>> extract_qpos_trajectory(td, "qpos")
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    >>> episode_states(td, "qpos").tolist()
    [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

from ..contracts import MujocoState, StepMetrics, UserEnv
from ..data import FrameBundle
from ..errors import ConfigError
from ..keys import NestedKey
from .unwrap import SIMULATION_PLACES, describe_env, find_simulation, underlying_env

if TYPE_CHECKING:
    from mujoco import MjModel
    from tensordict import TensorDict, TensorDictBase

    from ..config import RenderConfig

__all__ = ["MOCAP_FIELDS", "LiveStates", "MujocoState", "MujocoStateReader", "StateRecord", "episode_mocap",
           "episode_states", "extract_qpos_trajectory", "find_simulation", "load_model", "mocap_extras", "mocap_keys",
           "model_asset_files", "read_mocap_pos", "read_mocap_quat", "store_qpos"]

#: A field of the MuJoCo state that :class:`MujocoStateReader` reads; the mocap bodies' poses among them.
StateField: TypeAlias = Literal["qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "time"]
MocapField: TypeAlias = Literal["mocap_pos", "mocap_quat"]

_STATE_FIELDS: tuple[StateField, ...] = ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "time")


#: An engine's per-step extra of a MuJoCo env (:func:`mocap_extras`): the shape of one step's value, and how
#: to read it from the slot's env.
StateExtra: TypeAlias = tuple[tuple[int, ...], Callable[[UserEnv], NDArray[np.float64]]]


class MujocoStateReader:
    """Reads MuJoCo state from torchrl-wrapped gymnasium MuJoCo, dm_control and ``get_state()`` envs.

    Same interface as ``torchrl.render.backends.MujocoStateReader``: :meth:`supports` and
    :meth:`capture` (a TensorDict); :meth:`read` is the fast path used during a run
    (numpy arrays, no TensorDict) and :meth:`model` the ``MjModel`` (when there is one).

    Example:
        >>> from types import SimpleNamespace
        >>> env = SimpleNamespace(data=SimpleNamespace(qpos=np.array([0.0, 1.0]), qvel=np.array([0.5, 0.0]),
        ...                                            time=0.25))
        >>> MujocoStateReader().capture(env)["qpos"].tolist()
        [0.0, 1.0]
    """

    def supports(self, env: UserEnv) -> bool:
        """Whether ``env`` exposes a readable MuJoCo state."""
        try:
            self.read(env)
        except (KeyError, NotImplementedError, TypeError):
            return False
        return True

    def model(self, env: UserEnv) -> MjModel | None:
        """The ``mujoco.MjModel`` behind ``env``, or ``None``."""
        sim = find_simulation(env)
        return sim[0] if sim is not None else None

    def read(self, env: UserEnv) -> MujocoState:
        """Copies of the state arrays (``qpos`` always; the others when present and not empty)."""
        sim = find_simulation(env)
        # MjData, the get_state() mapping, or an object holding the arrays as attributes
        source: object = sim[1] if sim is not None else None
        if source is None:
            source = self._provided(env)
        if source is None:
            source = vars(env).get("data") if hasattr(env, "__dict__") else None
        if source is None:
            raise TypeError(f"env of type {type(env).__name__} exposes no MuJoCo state (no get_state() or data)")
        arrays: dict[StateField, NDArray[np.float64]] = {}
        for key in _STATE_FIELDS:
            value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
            if value is None:
                continue
            array = np.array(value.detach().cpu().numpy() if hasattr(value, "detach") else value, dtype=np.float64)
            if key == "time" or array.size:
                arrays[key] = array
        if "qpos" not in arrays:
            raise KeyError("the MuJoCo state has no 'qpos' entry")
        state: MujocoState = {"qpos": arrays.pop("qpos")}
        for key, array in arrays.items():
            state[key] = array
        return state

    def _provided(self, env: UserEnv) -> object | None:
        """What the env's own ``get_state()`` returns (a mapping, or an object with ``keys()`` such as a
        TensorDict), or None when it has none."""
        for candidate in (env, underlying_env(env)):
            get_state = getattr(type(candidate), "get_state", None)
            if callable(get_state):
                try:
                    state = get_state(candidate)
                except NotImplementedError:
                    continue
                if isinstance(state, Mapping) or hasattr(state, "keys"):
                    return state
        return None

    def capture(self, env: UserEnv) -> TensorDict:
        """A detached snapshot of ``env``'s MuJoCo state as a TensorDict (float64 tensors)."""
        import torch
        from tensordict import TensorDict

        return TensorDict({k: torch.as_tensor(v) for k, v in self.read(env).items()}, batch_size=[])


def _candidates(key: NestedKey) -> list[NestedKey]:
    key = tuple(key.split(".")) if isinstance(key, str) and "." in key else key
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, tuple) and key[0] == "next":
        return [key, key[1] if len(key) == 2 else key[1:]]
    return [key, ("next", *key) if isinstance(key, tuple) else ("next", key)]


def extract_qpos_trajectory(rollout: TensorDictBase, qpos_key: NestedKey = "qpos") -> list[list[float]]:
    """The ``T x nq`` qpos trajectory stored under ``qpos_key`` (its ``next`` twin also matches).

    Args:
        rollout: A rollout TensorDict (one episode, time first).
        qpos_key: The key (``"qpos"``, ``("next", "qpos")`` or ``"next.qpos"``).

    Returns:
        One list of floats per step.
    """
    for candidate in _candidates(qpos_key):
        value = rollout.get(candidate, None)
        if value is not None:
            break
    else:
        raise KeyError(f"qpos key {qpos_key!r} was not found in the rollout; tried {_candidates(qpos_key)}")
    array = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value, dtype=np.float64)
    if array.ndim == 1:
        array = array[None]
    return [[float(x) for x in row] for row in array.reshape(-1, array.shape[-1])]


def episode_states(rollout: TensorDictBase, qpos_key: NestedKey = "qpos") -> NDArray[np.float64]:
    """All ``T + 1`` qpos of an episode: the states before each action and the state after the last.

    With only one of ``key`` / ``("next", key)`` stored, the ``T`` states found are returned.
    """
    root, nxt = _candidates(qpos_key)
    if isinstance(root, tuple) and root[0] == "next":
        root, nxt = nxt, root
    before, after = rollout.get(root, None), rollout.get(nxt, None)
    if before is None or after is None:
        return np.asarray(extract_qpos_trajectory(rollout, qpos_key))
    before = np.asarray(before.detach().cpu(), dtype=np.float64).reshape(-1, before.shape[-1])
    after = np.asarray(after.detach().cpu(), dtype=np.float64).reshape(-1, after.shape[-1])
    return np.concatenate([before[:1], after])


def store_qpos(transition: TensorDictBase, qpos_key: NestedKey, before: NDArray[np.float64] | None,
               after: NDArray[np.float64]) -> None:
    """Writes the state before the action under the root key and the state after under ``("next", key)``."""
    import torch

    root, nxt = _candidates(qpos_key)
    if isinstance(root, tuple) and root[0] == "next":
        root, nxt = nxt, root
    shape = transition.batch_size
    if before is not None:
        transition.set(root, torch.as_tensor(before).reshape(*shape, -1))
    transition.set(nxt, torch.as_tensor(after).reshape(*shape, -1))


_FILE_ATTRS = {"mesh": ("file",), "skin": ("file",), "hfield": ("file",),
               "texture": ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")}


def model_asset_files(model_path: str | Path) -> list[tuple[str, str]]:
    """``(written, looked_for)`` of every asset file an MJCF model names (its ``<include>`` files too):
    ``written`` as in the ``file`` attribute, ``looked_for`` with the compiler's ``meshdir`` /
    ``texturedir`` / ``assetdir`` in front, as MuJoCo resolves it from the model's folder."""
    import xml.etree.ElementTree as ET

    found: list[tuple[str, str]] = []
    dirs = {"mesh": "", "texture": ""}

    def walk(path: Path, depth: int) -> None:
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError):
            return
        for el in root.iter():
            if el.tag == "compiler":
                asset = el.get("assetdir")
                dirs["mesh"] = el.get("meshdir", asset if asset is not None else dirs["mesh"])
                dirs["texture"] = el.get("texturedir", asset if asset is not None else dirs["texture"])
            elif el.tag == "include" and (included := el.get("file")) and depth < 8:
                walk(Path(model_path).parent / included, depth + 1)
            for attr in _FILE_ATTRS.get(el.tag, ()):
                written = el.get(attr)
                if written:
                    base = dirs["texture"] if el.tag == "texture" else dirs["mesh"]
                    looked = written if Path(written).is_absolute() or not base else f"{base.rstrip('/')}/{written}"
                    found.append((written, looked))

    walk(Path(model_path), 0)
    return found


def _search(folders: Sequence[Path], written: str, looked: str) -> Path | None:
    """The file of a model's asset reference in the given folders: the longest match of the path as MuJoCo
    looks for it (``meshdir/file``), then as written, then its name alone, anywhere below a folder."""
    wanted = [Path(looked).parts, Path(written).parts, Path(written).parts[-1:]]
    for parts in wanted:
        for folder in folders:
            direct = folder.joinpath(*parts)
            if direct.is_file():
                return direct
        for folder in folders:
            for candidate in sorted(folder.rglob(parts[-1])):
                if candidate.is_file() and candidate.parts[-len(parts):] == tuple(parts):
                    return candidate
    return None


#: the mocap bodies' poses, recorded beside qpos when the model has mocap bodies
MOCAP_FIELDS: tuple[MocapField, ...] = ("mocap_pos", "mocap_quat")


def mocap_keys(qpos_key: NestedKey) -> dict[MocapField, NestedKey]:
    """The keys the mocap poses are stored under: siblings of the qpos key (``"qpos"`` -> ``"mocap_pos"``,
    ``("obs", "qpos")`` -> ``("obs", "mocap_pos")``), before the action; their ``("next", ...)`` after."""
    root, _ = _candidates(qpos_key)
    if isinstance(root, tuple) and root[0] == "next":
        root = root[1] if len(root) == 2 else root[1:]
    if isinstance(root, tuple):
        return {f: (*root[:-1], f) for f in MOCAP_FIELDS}
    return {f: f for f in MOCAP_FIELDS}


def read_mocap_pos(env: UserEnv) -> NDArray[np.float64]:
    """The mocap bodies' positions of ``env``'s simulation (a flat copy)."""
    sim = find_simulation(env)
    assert sim is not None  # an extra only of envs that have one (mocap_extras)
    return np.array(sim[1].mocap_pos, dtype=np.float64).reshape(-1)


def read_mocap_quat(env: UserEnv) -> NDArray[np.float64]:
    """The mocap bodies' orientations of ``env``'s simulation (a flat copy, w first)."""
    sim = find_simulation(env)
    assert sim is not None  # an extra only of envs that have one (mocap_extras)
    return np.array(sim[1].mocap_quat, dtype=np.float64).reshape(-1)


def mocap_extras(qpos_key: NestedKey | None, env: UserEnv) -> dict[NestedKey, StateExtra]:
    """The engine's per-step extras for the mocap poses (none when the model has no mocap body)."""
    sim = find_simulation(env)
    if qpos_key is None or sim is None or not sim[0].nmocap:
        return {}
    keys = mocap_keys(qpos_key)
    return {keys["mocap_pos"]: ((3 * sim[0].nmocap,), read_mocap_pos),
            keys["mocap_quat"]: ((4 * sim[0].nmocap,), read_mocap_quat)}


def episode_mocap(rollout: TensorDictBase, qpos_key: NestedKey = "qpos") -> dict[MocapField, NDArray[np.float64]]:
    """The ``T + 1`` mocap poses of an episode (``mocap_pos``, ``mocap_quat``), as :func:`episode_states`;
    empty when the rollout holds none (a model without mocap bodies, or an older rollout)."""
    out: dict[MocapField, NDArray[np.float64]] = {}
    for field, key in mocap_keys(qpos_key).items():
        try:
            out[field] = episode_states(rollout, key)
        except KeyError:
            continue
    return out


def load_model(model_path: str | Path, asset_paths: Sequence[str | Path] = ()) -> MjModel:
    """A ``mujoco.MjModel`` from an XML or MJB file; ``asset_paths`` (files or folders) feed its assets.

    For an XML model, each file the model names (meshes, textures, height fields, skins) that is not
    beside the model is searched for in the folders given, at any depth (a parent folder of the meshes
    works); a file found nowhere is named, with the folders searched.
    """
    import mujoco

    path = Path(model_path)
    if not path.is_file():
        raise ConfigError(f"the MuJoCo model file {str(path)!r} does not exist", expected="an .xml or .mjb file",
                          got=str(path), fix="pass --mujoco-model-path with the model the rollouts were recorded with")
    assets: dict[str, bytes] = {}
    folders: list[Path] = []
    for item in map(Path, asset_paths):
        if not item.exists():
            raise ConfigError(f"the MuJoCo asset path {str(item)!r} does not exist", expected="a file or a folder",
                              got=str(item), fix="correct --mujoco-asset-paths")
        if item.is_file():
            assets[item.name] = item.read_bytes()
        else:
            folders.append(item)
    if path.suffix.lower() == ".mjb":
        for folder in folders:
            for f in (p for p in folder.rglob("*") if p.is_file()):
                assets.setdefault(f.name, f.read_bytes())
    else:
        _xml_assets(path, folders, assets)
    try:
        if path.suffix.lower() == ".mjb":
            return mujoco.MjModel.from_binary_path(str(path), assets)
        return mujoco.MjModel.from_xml_path(str(path), assets)
    except ValueError as exc:
        raise ConfigError(f"MuJoCo cannot load {str(path)!r}: {exc}", expected="a valid MJCF/MJB model",
                          fix="check the file; pass its meshes/textures with --mujoco-asset-paths") from exc


def _xml_assets(path: Path, folders: Sequence[Path], assets: dict[str, bytes]) -> None:
    """Fills ``assets`` with the model's files found in ``folders`` (MuJoCo keys them by file name)."""
    chosen: dict[str, Path] = {}
    for written, looked in model_asset_files(path):
        name = Path(written).name
        if name in assets and name not in chosen:
            continue  # given as a file
        found = _search(folders, written, looked) if folders else None
        if found is None:
            if (path.parent / looked).is_file() or Path(looked).is_file():
                continue  # MuJoCo finds it beside the model
            searched = ", ".join(repr(str(f)) for f in folders) or "none (no --mujoco-asset-paths)"
            raise ConfigError(f"the model {str(path)!r} names the file {written!r}, found neither beside the model "
                              f"({str(path.parent / looked)!r}) nor in the asset folders",
                              expected=f"{looked!r} (or {Path(written).name!r}) below a folder of --mujoco-asset-paths",
                              got=f"folders searched: {searched}",
                              fix="pass the folder that holds the model's meshes/textures (or a parent of it) "
                                  "with --mujoco-asset-paths")
        if name in chosen and chosen[name].resolve() != found.resolve():
            raise ConfigError(f"the model names two different files called {name!r} ({str(chosen[name])!r} and "
                              f"{str(found)!r}), and MuJoCo keys the assets it is given by file name",
                              got=written, fix="load the model from its own folder (its files beside it), or "
                                               "give the files distinct names")
        chosen[name] = found
        assets[name] = found.read_bytes()


class StateRecord(Protocol):
    """What :class:`LiveStates` reads of a step record (the engine's ``StepRecord``)."""

    @property
    def env(self) -> UserEnv: ...

    @property
    def trajectory(self) -> int: ...

    @property
    def step(self) -> int: ...

    @property
    def reward(self) -> float: ...

    @property
    def wall(self) -> float: ...


class LiveStates:
    """Per-record MuJoCo state for the writers and the rollouts.

    The sink (or the torchrl loop) calls :meth:`step` per record: it reads the env's state with a
    :class:`MujocoStateReader` (built once per env), stores ``qpos`` into the transition under
    ``mujoco_qpos_key`` (the state before the action under the key, the state after under
    ``("next", key)``; with mocap bodies their poses too, under :func:`mocap_keys`), and, for
    rendered episodes of a format that takes states (``html``; ``ipynb`` with the 3-D viewer), returns
    a state :class:`~torchrl_render.data.FrameBundle` for the writers.

    Args:
        cfg: The run's config (``format``, ``mujoco_qpos_key``, ``notebook_render_backend``).
        wanted: Whether the format's writer takes states for this config.

    Example:
        >>> import gymnasium as gym
        >>> from types import SimpleNamespace
        >>> env = gym.make("InvertedPendulum-v5")
        >>> _ = env.reset(seed=0)
        >>> cfg = SimpleNamespace(format="html", mujoco_qpos_key=None, notebook_render_backend="auto")
        >>> live = LiveStates(cfg, True)
        >>> record = SimpleNamespace(env=env, trajectory=0, step=0, reward=0.0, wall=0.0)
        >>> bundle = live.step(record, None, 0.0, rendered=True)
        >>> bundle.state["model"].nq, bundle.state["qpos"].shape
        (2, (2,))
    """

    def __init__(self, cfg: RenderConfig, wanted: bool) -> None:
        self.cfg, self.wanted = cfg, bool(wanted)
        self.qpos_key: NestedKey | None = getattr(cfg, "mujoco_qpos_key", None)
        # html must have a MuJoCo model; the notebook's "auto" viewer quietly stays off without one
        self.required = cfg.format == "html" or getattr(cfg, "notebook_render_backend", None) == "mujoco_wasm"
        self.counts_frames = int(cfg.format == "html")  # html's frames are states; other formats count pixels
        self._readers: dict[int, tuple[MujocoStateReader, MjModel | None]] = {}
        self._prev: dict[StateField, NDArray[np.float64]] | None = None

    def step(self, record: StateRecord, transition: TensorDictBase | None, ret: float,
             rendered: bool) -> FrameBundle | None:
        """Stores qpos into ``transition`` (steps > 0) and returns the state bundle, if one is wanted."""
        to_writers = self.wanted and rendered
        if not (to_writers or self.qpos_key is not None):
            return None
        found = self._read(record, needed=self.qpos_key is not None or self.required)
        if found is None:
            self.wanted = False
            return None
        model, state = found
        if self.qpos_key is not None:
            keys: dict[StateField, NestedKey] = {"qpos": self.qpos_key,
                                                 **{f: k for f, k in mocap_keys(self.qpos_key).items() if f in state}}
            prev = self._prev or {}
            if transition is not None:
                for field, key in keys.items():
                    store_qpos(transition, key, prev.get(field), state[field])
            self._prev = {field: state[field] for field in keys}
        if not to_writers or model is None:  # a get_state() env without a model: qpos only, nothing to draw
            return None
        metrics: StepMetrics = {"step": record.step, "reward": record.reward, "return": ret}
        return FrameBundle({}, record.step, record.trajectory, record.wall, metrics=metrics,
                           state={**state, "model": model})

    def _model_file(self, reader: MujocoStateReader, env: UserEnv) -> MjModel | None:
        """An env without a MuJoCo model but with a ``get_state()``, and ``--mujoco-model-path``: the model file
        draws its qpos (as torchrl.render's viewer draws a rollout's qpos with the model it is given)."""
        path = getattr(self.cfg, "mujoco_model_path", None)
        if path is None or not reader.supports(env):
            return None
        model = load_model(path, getattr(self.cfg, "mujoco_asset_paths", ()) or ())
        nq = reader.read(env)["qpos"].size
        if nq != model.nq:
            raise ConfigError(f"the env's get_state() gives {nq} qpos, and the model {str(path)!r} has nq={model.nq}",
                              expected=f"{model.nq} qpos per state (the model's joints)", got=nq,
                              fix="pass the model file of this env with --mujoco-model-path")
        return model

    def _state_only(self, reader: MujocoStateReader, env: UserEnv, needed: bool) -> bool:
        """An env without a MuJoCo model: its ``get_state()`` qpos are recorded (as torchrl.render's
        ``MujocoStateReader`` does) when only ``mujoco_qpos_key`` needs them; drawing needs the model."""
        if self.qpos_key is not None and not self.required and reader.supports(env):
            return True
        if not needed:
            return False
        if self.required:
            raise ConfigError(
                "the html format, the notebook's 3-D viewer and mujoco_qpos_key need a MuJoCo model, "
                "and this env has none",
                expected="a gymnasium MuJoCo env or a dm_control env (a mujoco.MjModel behind the env; looked "
                         "for at " + "; ".join(SIMULATION_PLACES) + ")",
                got=describe_env(env),
                fix="use a video format (--out run.mp4), or --notebook-render-backend static for a notebook")
        raise ConfigError("mujoco_qpos_key records the env's MuJoCo state, and this env exposes none",
                          expected="a gymnasium MuJoCo or dm_control env, or an env whose get_state() returns "
                                   "a mapping with 'qpos' (looked for at " + "; ".join(SIMULATION_PLACES) + ")",
                          got=describe_env(env),
                          fix="drop --mujoco-qpos-key, or give the env a get_state() returning qpos")

    def _read(self, record: StateRecord, needed: bool) -> tuple[MjModel | None, MujocoState] | None:
        env = record.env
        if env is None:
            if not needed:
                return None
            raise ConfigError(
                "the html format, the notebook's 3-D viewer and mujoco_qpos_key read the MuJoCo state of the "
                "env, and this run's records carry no env (with --num-envs > 1 the envs live in worker processes)",
                expected="--num-envs 1", got=f"num_envs={getattr(self.cfg, 'num_envs', '?')}",
                fix="run with --num-envs 1 (or --notebook-render-backend static for a notebook)")
        entry = self._readers.get(id(env))
        if entry is None:
            reader = MujocoStateReader()
            model = reader.model(env) or self._model_file(reader, env)
            if model is None and not self._state_only(reader, env, needed):
                return None
            entry = self._readers[id(env)] = (reader, model)
        reader, model = entry
        return model, reader.read(env)
