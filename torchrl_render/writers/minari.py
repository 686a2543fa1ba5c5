"""A Minari dataset (``--out run.minari``): the run's episodes as offline-RL data.

The artifact is a Minari datasets root, the folder to set as ``MINARI_DATASETS_PATH``; the dataset lies
inside it under its id (``<root>/<dataset_id>/data``), which says the env and the policy
(``CartPole-v1/make_policy-v0``; ``--minari-dataset-id`` chooses another)::

    MINARI_DATASETS_PATH=run.minari python -c "import minari; print(minari.load_dataset('CartPole-v1/make_policy-v0'))"

Each episode holds what Minari's own ``DataCollector`` records: ``observations`` (``n+1``: the reset's and each
step's, the final one included), ``actions``, ``rewards``, ``terminations`` and ``truncations`` (``n`` each),
the episode's reset ``seed`` (``None`` when the run had none) and the env's step infos (``n+1`` each, the
reset's and each step's: every numeric entry, see :mod:`.minari_infos` for entries a step lacks), ``success``
among them when the env reports success. A step cut by
``--max-steps`` is a truncation, as a time limit is. Each episode's metadata adds ``episode_ix``, ``sum_reward``
(the run's own return, summed step by step in float64) and ``success`` (when the env reported it). The dataset's
metadata holds the env spec (``recover_environment()`` builds the env again from it) and, under
``torchrl_render``, the run's env and policy recipe (``env``, ``env_kwargs``, ``policy``, ``seed``,
``max_steps``), from which ``python -m torchrl_render dataset`` rebuilds an env that has no spec.

Two storage backends, as Minari has: ``hdf5`` (the default; what TorchRL's ``MinariExperienceReplay``
reads) and ``arrow`` (``--minari-backend arrow``; needs ``pyarrow``). Episodes are written as they end, so
memory stays flat; the whole root is built under a hidden temporary name and renamed into place at the
end, so a failed run leaves no dataset behind. Needs ``pip install 'torchrl_render[datasets]'``.

Example:
    >>> import pytest; _ = pytest.importorskip("minari")  # the datasets extra
    >>> import numpy as np, tempfile, pathlib, gymnasium as gym
    >>> from torchrl_render.engine import Episode
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run.minari"
    >>> flags = np.array([False, True])
    >>> with MinariWriter(out, dataset_id="demo/tiny-v0") as w:
    ...     w.bind_env(gym.make("CartPole-v1"))
    ...     w.on_trajectory(Episode(0, 7, np.array([1.0, 1.0]), flags, flags, ~flags, sum_reward=2.0,
    ...                             observations=np.zeros((3, 4), np.float32), actions=np.array([0, 1])))
    >>> info = w.close().info
    >>> info["dataset_id"], info["episodes"], info["steps"], (out / "demo/tiny-v0/data").is_dir()
    ('demo/tiny-v0', 1, 2, True)
"""

from __future__ import annotations

import importlib
import json
import re
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .._version import __version__
from ..contracts import Array, UserEnv
from ..data import FrameBundle
from ..envs.unwrap import is_gymnasium, underlying_env
from ..errors import ConfigError, WriterError
from ..keys import NestedKey
from .base import Writer, fresh_folder
from .minari_infos import InfoColumns, InfoTree

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium.envs.registration import EnvSpec
    from minari.dataset.minari_storage import MinariStorage

    from ..config import RenderConfig
    from ..engine.records import Episode


__all__ = ["BACKEND_PACKAGES", "MinariWriter", "default_dataset_id", "require_minari"]

#: what each Minari storage backend imports, and the pip requirement that brings it
BACKEND_PACKAGES = {"hdf5": ("h5py", "minari[hdf5]"), "arrow": ("pyarrow", "minari[arrow]")}
EXTRA = "torchrl_render[datasets]"
_UNSAFE = re.compile(r"[^-\w]+")


def require_minari(backend: str | None = None) -> ModuleType:
    """``import minari`` (and the backend's package), or a :class:`ConfigError` naming the pip extra."""
    needs = [("minari", "minari[hdf5]")]  # (module, the pip requirement that brings it)
    if backend in BACKEND_PACKAGES:
        needs.append(BACKEND_PACKAGES[backend])
    for name, need in needs:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"Minari datasets need the package {name!r}, which is not installed",
                              expected=f"{name} importable", got="not installed",
                              fix=f"install the datasets extra (pip install '{need}' alone also serves)",
                              extra=EXTRA) from exc
    return importlib.import_module("minari")


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-_") or "run"


def _spec_name(value: object) -> str | None:
    """The last name of a ``module:object`` / ``file.py:object`` spec, a gymnasium id itself, a callable's name."""
    if value is None:
        return None
    if callable(value):
        return getattr(value, "__name__", type(value).__name__)
    text = str(value)
    return text.rpartition(":")[2] if ":" in text else text


def default_dataset_id(env_id: str | None, cfg: RenderConfig | None) -> str:
    """``ENV/POLICY-v0``: the env's gymnasium id (else its factory's name) and the policy's name, with the
    checkpoint's stem when there is one.

    Example:
        >>> from types import SimpleNamespace
        >>> cfg = SimpleNamespace(env="CartPole-v1", policy="pkg.mod:greedy", ckpt="runs/a.pt")
        >>> default_dataset_id("CartPole-v1", cfg)
        'CartPole-v1/greedy-a-v0'
    """
    env = _slug(env_id or _spec_name(getattr(cfg, "env", None)) or "env")
    policy = _slug(_spec_name(getattr(cfg, "policy", None)) or "policy")
    ckpt = getattr(cfg, "ckpt", None)
    if ckpt is not None:
        policy = f"{policy}-{_slug(Path(str(ckpt)).stem)}"
    return f"{env}/{policy}-v0"


def check_dataset_id(dataset_id: str, flag: str = "--minari-dataset-id") -> None:
    """Refuses an id Minari cannot load (its own pattern: ``(namespace/)name-vN``)."""
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except ValueError as exc:
        raise ConfigError(f"{dataset_id!r} is not a Minari dataset id", expected="(namespace/)name-vN, e.g. "
                          "CartPole-v1/ppo-v0 (letters, digits, - and _; / between namespace parts)",
                          got=dataset_id, fix=f"pass another {flag}") from exc


class GymEnvParts(Protocol):
    """What the dataset reads of a gymnasium env: its spaces and its spec."""

    @property
    def observation_space(self) -> gym.Space: ...

    @property
    def action_space(self) -> gym.Space: ...

    @property
    def spec(self) -> EnvSpec | None: ...


class MinariWriter(Writer):
    """Writes the run's episodes as a Minari dataset (see the module docstring).

    Args:
        path: The datasets root to create (``run.minari``); built under a temporary name, renamed on close.
        dataset_id: The dataset's id (default: :func:`default_dataset_id` of the env and ``config``).
        backend: Minari's storage backend, ``hdf5`` or ``arrow``.
        config: The run's config, for the default id and the recipe in the metadata.
    """

    format = "minari"

    def __init__(self, path: str | Path, dataset_id: str | None = None, backend: str = "hdf5",
                 config: RenderConfig | None = None) -> None:
        super().__init__(path)
        self.dataset_id, self.backend, self.config = dataset_id, backend, config
        self._env: GymEnvParts | None = None  # the gymnasium env (its spaces and spec), when the run's env is one
        self._spaces: tuple[gym.Space, gym.Space] | None = None
        self._storage: MinariStorage | None = None
        self._episodes = self._steps = 0
        self._made = False
        self._infos = InfoColumns()

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> MinariWriter:
        """Reads ``minari_dataset_id`` and ``minari_backend``."""
        return cls(path, dataset_id=getattr(cfg, "minari_dataset_id", None),
                   backend=getattr(cfg, "minari_backend", "hdf5"), config=cfg)

    @classmethod
    def check(cls, path: Path, cfg: RenderConfig) -> None:
        """Minari and the backend's package are importable, and an id given is one Minari loads."""
        require_minari(getattr(cfg, "minari_backend", "hdf5"))
        dataset_id = getattr(cfg, "minari_dataset_id", None)
        if dataset_id is not None:
            check_dataset_id(dataset_id)

    def bind_env(self, env: UserEnv) -> None:
        """Keeps the gymnasium env behind the run's env: its spaces and its spec go into the dataset."""
        raw = underlying_env(env)
        self._env = raw if is_gymnasium(raw) else None

    def write(self, bundle: FrameBundle) -> None:
        """A data format: frames are not written."""

    def on_trajectory(self, episode: Episode) -> None:
        """Appends the finished episode to the dataset (the storage is made at the first one)."""
        if episode.observations is None or episode.actions is None:
            raise WriterError("the minari format needs each step's observation and action, and this episode has "
                              f"none stored (episode {episode.index})", got="no stored steps",
                              fix="keep --obs-key at an observation entry of the env (the default: observation)")
        from minari.data_collector.episode_buffer import EpisodeBuffer

        obs_space, act_space = self._spaces_for(episode)
        storage = self._open(obs_space, act_space)
        observations = np.asarray(episode.observations).astype(obs_space.dtype, copy=False) \
            if getattr(obs_space, "dtype", None) is not None else episode.observations
        actions = _fit_actions(np.asarray(episode.actions), act_space)
        seed = None if episode.seed is None or getattr(self.config, "seed_mode", "per-episode") != "per-episode" \
            else int(episode.seed)
        storage.update_episodes([EpisodeBuffer(
            id=self._episodes, seed=seed, observations=observations, actions=actions,
            rewards=np.asarray(episode.rewards, np.float64), terminations=np.asarray(episode.terminated, bool),
            truncations=np.asarray(episode.truncated, bool), infos=self._episode_infos(episode))])
        meta = {"episode_ix": int(episode.index), "sum_reward": float(episode.sum_reward)}
        if episode.success is not None:
            meta["success"] = bool(episode.success)
        storage.update_episode_metadata([meta], [self._episodes])
        self._episodes += 1
        self._steps += episode.length

    def _episode_infos(self, episode: Episode) -> dict[str, object]:
        """The episode's step infos as Minari stores them (the engine's success report among them)."""
        infos = episode.step_infos if episode.step_infos is not None else [{}] * (episode.length + 1)
        return _scalars_as_lists(self._infos.stack(infos, getattr(episode, "step_success", None)))

    def _spaces_for(self, episode: Episode) -> tuple[gym.Space, gym.Space]:
        """The env's spaces; for an env that is not gymnasium (a torchrl env), unbounded boxes of the data's
        shapes and dtypes."""
        if self._spaces is None:
            if self._env is not None:
                self._spaces = (_observed(self._env.observation_space, getattr(self.config, "obs_key", None)),
                                self._env.action_space)
            else:
                from gymnasium import spaces

                obs, act = np.asarray(episode.observations), np.asarray(episode.actions)
                self._spaces = (_box(spaces, obs[0]), _box(spaces, act[0]))
        return self._spaces

    def _open(self, obs_space: gym.Space, act_space: gym.Space) -> MinariStorage:
        if self._storage is not None:
            return self._storage
        from minari.dataset.minari_storage import MinariStorage

        if self.dataset_id is None:
            spec = getattr(self._env, "spec", None)
            self.dataset_id = default_dataset_id(getattr(spec, "id", None), self.config)
        check_dataset_id(self.dataset_id)
        self._make_root()
        data = (self.tmp / self.dataset_id / "data").absolute()  # Minari joins a relative path to itself
        data.mkdir(parents=True)
        spec = getattr(self._env, "spec", None) if self._env is not None else None
        with warnings.catch_warnings():  # Minari warns of an env spec it cannot serialise: recorded as None
            warnings.simplefilter("ignore")
            self._storage = MinariStorage.new(data, observation_space=obs_space, action_space=act_space,
                                              env_spec=spec if _serialisable(spec) else None,
                                              data_format=self.backend, jpeg_encoding=False)
        return self._storage

    def _make_root(self) -> None:
        if self._made:
            return
        fresh_folder(self.tmp, self.path, "the dataset folder")
        self._made = True

    def _finish(self) -> dict[str, object]:
        self._make_root()
        info: dict[str, object] = {"dataset_id": self.dataset_id, "root": str(self.path.absolute()),
                                "minari_datasets_path": str(self.path.absolute()), "backend": self.backend,
                                "episodes": self._episodes, "steps": self._steps}
        if self._storage is None:  # no episode ended (a run without episodes): an empty datasets root
            info["notes"] = [f"no episode was recorded, so {str(self.path)!r} holds no Minari dataset"]
            return info
        import minari

        columns = self._infos
        stored = sorted("/".join(p) for p in columns.layout or {})
        self._storage.update_metadata({
            "dataset_id": self.dataset_id, "minari_version": minari.__version__,
            "algorithm_name": f"torchrl_render {__version__}: {_spec_name(getattr(self.config, 'policy', None))}",
            "description": "Episodes of a policy evaluated with torchrl_render",
            "torchrl_render": {**_recipe(self.config),
                               "infos": {"stored": stored, "filled": columns.filled, "dropped": columns.dropped}}})
        self._storage = None
        info["infos"] = stored
        notes = []
        if columns.filled:
            notes.append("step infos that some steps lacked hold a fill there (NaN, 0 or False), steps per entry: "
                         + ", ".join(f"{k} {n}" for k, n in columns.filled.items()))
        if columns.dropped:
            notes.append("step infos not stored (not numbers, or first seen after the first episode): "
                         + ", ".join(columns.dropped))
        if notes:
            info["notes"] = notes
        return info

    def _release(self) -> None:
        self._storage = None


def _fit_actions(actions: Array, space: gym.Space) -> Array:
    """The actions as the env's action space holds them: a torchrl one-hot of a Discrete space as its index."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete) and actions.ndim == 2 and actions.shape[1] == space.n > 1:
        return (actions.argmax(-1) + space.start).astype(space.dtype)
    # the space of the user's env: one may lack a shape or a dtype (then the actions stay as they are)
    shape: tuple[int, ...] | None = getattr(space, "shape", None)
    if shape is None or getattr(space, "dtype", None) is None:
        return actions
    try:
        return actions.reshape((len(actions), *shape)).astype(space.dtype, copy=False)
    except ValueError as exc:
        raise WriterError("the actions do not fit the env's action space, so Minari cannot store them",
                          expected=f"{space} (one action per step)", got=f"actions of shape {actions.shape[1:]}",
                          fix="keep --action-key at the action the env is stepped with") from exc


def _scalars_as_lists(infos: InfoTree) -> dict[str, object]:
    """Scalar entries' ``(n + 1,)`` arrays as lists of numpy scalars, as ``DataCollector`` hands them over: Minari's
    arrow storage writes a 1-D array's per-step shape as ``""``, which its reader then fails to parse."""
    return {key: _scalars_as_lists(value) if isinstance(value, dict)
            else list(value) if value.ndim == 1 else value for key, value in infos.items()}


def _observed(space: gym.Space, obs_key: NestedKey | None) -> gym.Space:
    """The space of what the engine stores as observations: the env's, or its ``obs_key`` entry for a Dict space."""
    from gymnasium import spaces

    if not isinstance(space, (spaces.Dict, spaces.Tuple)):
        return space
    if isinstance(space, spaces.Dict) and isinstance(obs_key, str) and obs_key in space.spaces:
        return space.spaces[obs_key]
    raise WriterError("the minari format stores one observation array per step, and this env's observation space "
                      f"is a {type(space).__name__} space", expected="a Box or Discrete observation space, or "
                      "--obs-key naming one entry of a Dict space", got=repr(space)[:200],
                      fix="pass --obs-key KEY for the entry to record, or flatten the observation in the env "
                          "(gymnasium.wrappers.FlattenObservation)")


def _box(spaces: ModuleType, sample: Array) -> gym.Space:
    """An unbounded space of ``sample``'s shape and dtype (``spaces``: ``gymnasium.spaces``, imported by the caller)."""
    kind = sample.dtype
    lo: float  # the integer dtype's bounds, or infinities
    hi: float
    if np.issubdtype(kind, np.integer):
        lo, hi = np.iinfo(kind).min, np.iinfo(kind).max
    elif kind == np.bool_:
        return spaces.MultiBinary(sample.shape or (1,))
    else:
        lo, hi = -np.inf, np.inf
    return spaces.Box(lo, hi, shape=sample.shape, dtype=kind)


def _serialisable(spec: EnvSpec | None) -> bool:
    """Whether Minari can store the env spec (``to_json`` refuses kwargs that are not JSON, e.g. callables)."""
    if spec is None:
        return False
    try:
        spec.to_json()
    except Exception:  # gymnasium raises ValueError or TypeError, depending on the value
        return False
    return True


def _recipe(cfg: RenderConfig | None) -> dict[str, object]:
    """How torchrl_render built the env and the policy: its specs as text (a callable by its name)."""
    def text(value: object) -> str | int | float | bool | None:
        return value if value is None or isinstance(value, (str, int, float, bool)) else _spec_name(value)

    out: dict[str, object] = {"version": __version__}
    for name in ("env", "policy", "ckpt", "seed", "max_steps", "seed_mode", "obs_key"):
        out[name] = text(getattr(cfg, name, None)) if not isinstance(getattr(cfg, name, None), Path) \
            else str(getattr(cfg, name))
    kwargs = getattr(cfg, "env_kwargs", None) or {}
    out["env_kwargs"] = json.loads(json.dumps(kwargs, default=str))
    return out
