"""A Minari dataset's episodes: found on disk, chosen, measured, and replayed in their env to be filmed.

Nothing is downloaded: a dataset is a folder (the one that holds ``data/``, its ``data`` folder, or a datasets
root such as ``--out run.minari`` that holds one dataset), or an id looked up under ``MINARI_DATASETS_PATH``
(default ``~/.minari/datasets``). The numbers (``eval_info.json``, ``.jsonl``) come from the recorded rewards
and flags alone; the films (mp4, gif, frames, html) come from a replay: the env is recovered (the dataset's env
spec, else the recipe torchrl_render recorded), reset with the episode's seed, and stepped with the recorded
actions, each observation checked against the recorded one. An episode whose replay departs from its recording
(no seed, a non-deterministic env, another simulator version) is named and never filmed as if it were it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, SupportsIndex, SupportsInt, TypeAlias, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contracts import Array, Json
from ..engine import Episode
from ..errors import ConfigError, RenderError
from ..writers.minari import require_minari

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium.envs.registration import EnvSpec
    from minari import EpisodeData, MinariDataset

__all__ = ["DatasetEpisodes", "ReplayCheck", "choose", "open_dataset", "recorded_seed", "recover_env",
           "replay_check"]

#: the replayed observation may differ from the recorded one by this much (absolute, per entry) and still match
DEFAULT_TOLERANCE = 1e-6

#: A recorded entry of an episode (observations, actions): an array over the steps (a list for a Text space), or a
#: Dict / Tuple space's dict / tuple of them.
Recorded: TypeAlias = "Array | list[str] | dict[str, Recorded] | tuple[Recorded, ...]"


@dataclass
class ReplayCheck:
    """How one episode's replay compared with its recording."""

    index: int
    steps: int
    max_deviation: float
    diverged_at: int | None = None  # the first step whose observation departs (0: the reset's)
    reason: str | None = None  # why it could not be replayed at all (no seed...)

    @property
    def ok(self) -> bool:
        return self.diverged_at is None and self.reason is None

    def to_dict(self) -> dict[str, object]:
        return {"episode": self.index, "steps": self.steps, "max_deviation": self.max_deviation,
                "diverged_at": self.diverged_at, "reason": self.reason, "matches": self.ok}


@dataclass
class DatasetEpisodes:
    """An open dataset and what the command reads of it."""

    dataset: MinariDataset
    path: Path
    dataset_id: str
    metadata: dict[str, Json] = field(default_factory=dict)  # the dataset's metadata.json

    @property
    def total(self) -> int:
        return int(self.dataset.total_episodes)

    def episode_meta(self, indices: list[int]) -> list[dict[str, object]]:
        """The chosen episodes' metadata as Minari stored it (``seed``, and ``success`` where we recorded it)."""
        return list(self.dataset.storage.get_episode_metadata(indices))

    def returns(self) -> NDArray[np.float64]:
        """Each episode's return, summed step by step in float64 (as a run sums its returns)."""
        return np.array([_sequential_sum(ep.rewards) for ep in self.dataset.iterate_episodes()], np.float64)

    def episodes(self, indices: list[int], success_rule: str = "any") -> list[Episode]:
        """The chosen episodes as the engine hands them to writers (recorded arrays, seed, success)."""
        out: list[Episode] = []
        for ep, meta in zip(self.dataset.iterate_episodes(indices), self.episode_meta(indices), strict=True):
            rewards = np.asarray(ep.rewards, np.float64).reshape(-1)
            term = np.asarray(ep.terminations, bool).reshape(-1)
            trunc = np.asarray(ep.truncations, bool).reshape(-1)
            obs = ep.observations if isinstance(ep.observations, np.ndarray) else None
            out.append(Episode(int(ep.id), recorded_seed(meta), rewards, term | trunc, term, trunc,
                               sum_reward=_sequential_sum(rewards), success=_success(meta, ep.infos, success_rule),
                               observations=obs, actions=np.asarray(ep.actions) if obs is not None else None))
        return out


def recorded_seed(meta: Mapping[str, object]) -> int | None:
    """An episode's reset seed from its Minari metadata (Minari stores it as an int; whatever ``int()`` takes is
    taken, as before); None where it has none."""
    seed = meta.get("seed")
    if seed is None:
        return None
    if not isinstance(seed, (str, bytes, bytearray, SupportsInt, SupportsIndex)):
        raise TypeError(f"the episode's recorded seed is a {type(seed).__name__}, where an integer was expected")
    return int(seed)


def _sequential_sum(values: ArrayLike) -> float:
    """The sum in float64 in step order (numpy's ``sum`` adds pairwise and may differ in the last bits)."""
    flat = np.asarray(values, np.float64).reshape(-1)
    return float(np.cumsum(flat)[-1]) if flat.size else 0.0


def _success(meta: Mapping[str, object], infos: object, rule: str) -> bool | None:
    """The episode's success: the one torchrl_render recorded, else the env's ``is_success``/``success`` infos
    (true at some step, or the last step's with ``rule="final"``)."""
    if meta.get("success") is not None:
        return bool(meta["success"])
    for key in ("is_success", "success"):
        values = infos.get(key) if isinstance(infos, dict) else None
        if values is not None and np.size(values):
            # (cast: numpy types any(axis) as a scalar or an array; over axis 1 of a 2-d array it is a 1-d array)
            flags = cast(NDArray[np.bool_], np.asarray(values).reshape(len(values), -1).any(1))
            return bool(flags[-1]) if rule == "final" else bool(flags.any())
    return None


def _datasets_root() -> Path:
    return Path(os.environ.get("MINARI_DATASETS_PATH") or Path.home() / ".minari" / "datasets")


def _data_folder(path: Path) -> tuple[Path, str | None] | None:
    """The ``data`` folder of a dataset given as a folder, and the id found inside a datasets root."""
    if (path / "metadata.json").is_file() and path.name == "data":
        return path, None
    if (path / "data" / "metadata.json").is_file():
        return path / "data", None
    found = sorted(p.parent for p in path.glob("**/data/metadata.json"))
    if len(found) == 1:
        return found[0], found[0].parent.relative_to(path).as_posix()
    if len(found) > 1:
        ids = ", ".join(p.parent.relative_to(path).as_posix() for p in found)
        raise ConfigError(f"{str(path)!r} holds {len(found)} Minari datasets, and one is to be read",
                          expected="one dataset's folder", got=ids,
                          fix=f"pass one of them: {str(path / found[0].parent.relative_to(path))!r}, or its id "
                              f"with MINARI_DATASETS_PATH={str(path)!r}")
    return None


def open_dataset(spec: str) -> DatasetEpisodes:
    """The dataset ``spec`` names (a folder, or an id under ``MINARI_DATASETS_PATH``); never downloads."""
    minari = require_minari()
    path = Path(spec).expanduser()
    located = _data_folder(path) if path.is_dir() else None
    if located is None:
        root = _datasets_root()
        by_id = root / spec / "data"
        if path.exists() or spec.endswith(".minari") or (os.sep in spec and not by_id.parent.exists()
                                                        and not _looks_like_id(spec)):
            raise ConfigError(f"{spec!r} is not a Minari dataset" + ("" if path.exists() else " (nothing is there)"),
                              expected="a dataset folder (holding data/metadata.json), a datasets root such as "
                                       "--out run.minari, or a dataset id", got=spec,
                              fix="pass the folder a run wrote with --out NAME.minari, or a local dataset's id")
        if not (by_id / "metadata.json").is_file():
            raise ConfigError(f"the Minari dataset {spec!r} is not on this machine (looked in {str(root)!r}), and "
                              "nothing is downloaded here", expected=f"{by_id!s} holding metadata.json",
                              got="no such folder",
                              fix="point MINARI_DATASETS_PATH at the folder that holds a local copy "
                                  "(MINARI_DATASETS_PATH=/path/to/datasets), or pass the dataset's folder itself; "
                                  "fetch it elsewhere with `minari download ID` and copy it over")
        located = (by_id, spec)
    data, dataset_id = located
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dataset = minari.MinariDataset(data)
    except Exception as exc:  # Minari raises ValueError, KeyError, OSError... for a broken dataset
        raise ConfigError(f"Minari cannot read the dataset at {str(data)!r}: {type(exc).__name__}: {exc}",
                          got=str(data), fix="pass a complete dataset written by Minari or --out NAME.minari") \
            from exc
    meta = dataset.storage.metadata
    return DatasetEpisodes(dataset, data, dataset_id or str(meta.get("dataset_id")), meta)


def _looks_like_id(spec: str) -> bool:
    from minari.dataset.minari_dataset import DATASET_ID_RE

    return DATASET_ID_RE.fullmatch(spec) is not None


def choose(data: DatasetEpisodes, picks: list[str]) -> list[int]:
    """Episode indices from ``--episodes``: numbers, ``worst:N`` / ``best:N`` (by return); default: all."""
    total = data.total
    if not picks:
        return list(range(total))
    chosen: list[int] = []
    returns = None
    for pick in picks:
        kind, _, count = pick.partition(":")
        if kind in ("worst", "best") and count.isdigit() and int(count) > 0:
            returns = data.returns() if returns is None else returns
            order = np.argsort(returns, kind="stable")
            chosen += [int(i) for i in (order if kind == "worst" else order[::-1])[:int(count)]]
        elif pick.lstrip("-").isdigit() and 0 <= int(pick) < total:
            chosen.append(int(pick))
        else:
            raise ConfigError(f"--episodes {pick!r} is not an episode of this dataset",
                              expected=f"episode numbers 0..{total - 1}, worst:N or best:N", got=pick,
                              fix="pass e.g. --episodes 0 3 7 or --episodes worst:3")
    return sorted(set(chosen))


def recover_env(data: DatasetEpisodes, render_mode: str | None) -> gym.Env[object, object]:
    """The env the dataset was recorded in: its env spec (``recover_environment``), else the gymnasium env of
    the recipe torchrl_render recorded (``metadata["torchrl_render"]["env"]``)."""
    kwargs = {"render_mode": render_mode} if render_mode else {}
    recipe = data.metadata.get("torchrl_render")
    recipe = recipe if isinstance(recipe, dict) else {}  # the run's env, where torchrl_render wrote the dataset
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if data.dataset.env_spec is not None:
                _quiet_pygame(data.dataset.env_spec, render_mode)
                return data.dataset.recover_environment(**kwargs)
            if recipe.get("env"):
                return _recipe_env(recipe, render_mode)
    except RenderError:
        raise
    except Exception as exc:  # gymnasium's errors for an env not registered here, a missing package...
        raise ConfigError(f"the env of the dataset {data.dataset_id!r} cannot be built here: "
                          f"{type(exc).__name__}: {exc}", got=str(exc)[:300],
                          fix="install the env's package (the dataset's requirements), at the version it was "
                              "recorded with") from exc
    raise ConfigError(f"the dataset {data.dataset_id!r} records no env spec, so its env cannot be recovered to "
                      "replay its actions", expected="a dataset made with an env spec (DataCollector of a gym.make "
                      "env, or --out NAME.minari)", got="env_spec: None",
                      fix="film it with the env itself: make the dataset again from a registered env "
                          "(gymnasium.make), or write --out eval_info.json/.jsonl (no env needed)")


def _quiet_pygame(spec: EnvSpec, render_mode: str | None) -> None:
    """A pygame-drawn env (classic control) renders off screen, as a run's does: no display warnings, no banner."""
    from ..envs import _PYGAME_ENVS, _check_pygame  # the run's own set-up of pygame, shared

    if render_mode is not None and str(spec.entry_point).startswith(_PYGAME_ENVS):
        _check_pygame(spec.id)


def _recipe_env(recipe: dict[str, Json], render_mode: str | None) -> gym.Env[object, object]:
    from ..config import RenderConfig
    from ..envs import make_raw_env
    from ..envs.unwrap import is_gymnasium, underlying_env

    kwargs = recipe.get("env_kwargs")
    cfg = RenderConfig(policy="(dataset)", env=recipe["env"], env_kwargs=kwargs if isinstance(kwargs, dict) else {},
                       render_mode=render_mode)
    env = underlying_env(make_raw_env(cfg, None, render_mode=render_mode))
    if not is_gymnasium(env):
        raise ConfigError(f"the env the dataset recorded ({recipe['env']!r}) is not a gymnasium env, and a replay "
                          "steps gymnasium envs", got=type(env).__name__,
                          fix="write --out eval_info.json or .jsonl from the recorded numbers (no env needed)")
    return env


def replay_check(env: gym.Env[object, object], ep: EpisodeData, seed: int | None, tolerance: float,
                 on_step: Callable[[int], None] | None = None) -> ReplayCheck:
    """Resets ``env`` with ``seed``, steps the recorded actions, compares every observation (each entry of a Dict
    or Tuple one) and every reward with the recorded ones; ``on_step(step)`` is called after the reset (0) and each
    step, while the replay still matches."""
    steps = len(ep.rewards)
    if seed is None:
        return ReplayCheck(int(ep.id), steps, float("nan"), reason="the episode has no recorded seed")
    obs, _ = env.reset(seed=int(seed))
    worst = 0.0
    for t in range(steps + 1):
        deviation = 0.0
        if t:
            obs, reward = env.step(_at(ep.actions, t - 1))[:2]
            deviation = _deviation(reward, ep.rewards[t - 1])
        deviation = max(deviation, _deviation(obs, _at(ep.observations, t)))
        worst = max(worst, deviation)
        if not deviation <= tolerance:
            return ReplayCheck(int(ep.id), steps, worst, diverged_at=t)
        if on_step is not None:
            on_step(t)
    return ReplayCheck(int(ep.id), steps, worst)


def _at(value: Recorded, t: int) -> object:
    """Step ``t`` of a recorded entry: an array, or a Dict / Tuple space's dict / tuple of them."""
    if isinstance(value, dict):
        return {k: _at(v, t) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_at(v, t) for v in value)
    return value[t]


def _deviation(got: object, want: object) -> float:
    """The largest ``|got - want|`` entry (a NaN where both are NaN matches; another shape, or values that are not
    numbers and differ: infinite)."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return float("inf")
        return max((_deviation(got[k], w) for k, w in want.items()), default=0.0)
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return float("inf")
        return max((_deviation(g, w) for g, w in zip(got, want, strict=True)), default=0.0)
    try:
        a, b = np.asarray(got, np.float64), np.asarray(want, np.float64)
    except (TypeError, ValueError):  # text and the like: equal or not
        return 0.0 if np.array_equal(np.asarray(got), np.asarray(want)) else float("inf")
    if a.shape != b.shape:
        return float("inf")
    diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
    return float(np.max(diff, initial=0.0)) if not np.isnan(diff).any() else float("inf")
