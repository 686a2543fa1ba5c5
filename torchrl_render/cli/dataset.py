"""``python -m torchrl_render dataset ID_OR_PATH --out x.mp4|.gif|.html|frames|.jsonl|eval_info.json``.

Reads a Minari dataset (one written with ``--out NAME.minari``, or one made with Minari's ``DataCollector``):
``.json`` (eval_info.json) and ``.jsonl`` give its episodes' numbers with the aggregates and intervals of a run,
from the recorded rewards alone (no env); ``.mp4``, ``.gif``, frames and ``.html`` replay the chosen episodes
(``--episodes 0 3 7``, ``worst:N``, ``best:N``) in the recovered env, checked step by step against the recording
(:mod:`torchrl_render.cli.dataset_replay`). The check of each replayed episode (the largest deviation, or where
it diverged) is printed and kept in ``<out>.metadata.json``. Exit codes as for the main command: 0 done,
2 a user error (one paragraph), 130 Ctrl-C.

Example:
    >>> build_parser().prog
    'torchrl-render dataset'
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..backends.factory import make_backend
from ..config import RenderConfig
from ..contracts import EpisodeMetrics, FrameSource, StepMetrics, UserValue
from ..data import Artifact, FrameBundle, SimState
from ..envs.gl import ensure_headless_gl
from ..envs.mjlog import captured_mujoco_warnings
from ..envs.unwrap import find_simulation
from ..errors import ConfigError, RenderError, WriterError
from ..frames import apply_layout, to_uint8_hwc
from ..metrics import json_ready
from ..storage import check_os_name, check_replaceable, remove, write_json_atomic
from ..writers import WRITERS
from ..writers.group import WriterGroup
from .dataset_replay import (
    DEFAULT_TOLERANCE,
    DatasetEpisodes,
    ReplayCheck,
    choose,
    open_dataset,
    recorded_seed,
    recover_env,
    replay_check,
)
from .parser import artifact_notes, report_artifacts

if TYPE_CHECKING:
    import gymnasium as gym
    from mujoco import MjData, MjModel

__all__ = ["NUMBER_FORMATS", "REPLAY_FORMATS", "build_parser", "main", "render_dataset"]

PROG = "torchrl-render dataset"
#: errors start as the main command's do (one paragraph, the bad-input catalogue's form)
ERROR = "torchrl-render: error:"
#: formats written from the recorded numbers (no env), and formats filmed from a replay in the env
NUMBER_FORMATS = ("json", "jsonl")
REPLAY_FORMATS = ("mp4", "gif", "frames", "html")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{ERROR} {message}. Fix: correct the flag; {PROG} --help lists them.", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The dataset subcommand's flags."""
    p = _Parser(prog=PROG, description="A Minari dataset's episodes: their numbers (eval_info.json, .jsonl), or "
                "a replay of chosen episodes in their env (mp4, gif, frames, html), checked against the recording.",
                epilog="examples:\n  python -m torchrl_render dataset run.minari --out eval_info.json\n"
                       "  MINARI_DATASETS_PATH=datasets python -m torchrl_render dataset mujoco/halfcheetah/expert-v0 "
                       "--episodes worst:2 --out worst.mp4", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", help="a dataset folder, a datasets root holding one (--out NAME.minari), or a dataset "
                                   "id under MINARI_DATASETS_PATH (nothing is downloaded)")
    p.add_argument("--out", required=True, help="eval_info.json, run.jsonl, replay.mp4, .gif, .html or a folder "
                                                "(frames)")
    p.add_argument("--format", default=None, help=f"{', '.join(NUMBER_FORMATS + REPLAY_FORMATS)} (default: from "
                                                   "--out)")
    p.add_argument("--episodes", nargs="+", default=[], metavar="EP",
                   help="episode numbers, worst:N or best:N by return (default: all; the first one for films)")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help=f"largest |replayed - recorded| observation entry that still matches (default "
                        f"{DEFAULT_TOLERANCE:g})")
    p.add_argument("--success-rule", default="any", choices=("any", "final"),
                   help="an episode's success from its infos: any step, or the final one (default any)")
    p.add_argument("--bootstrap-reps", type=int, default=None, help="bootstrap resamples of the intervals "
                                                                    "(default 2000)")
    for flag, kind, text in (("--fps", float, "frames per second (default 30)"),
                             ("--width", int, "frame width (MuJoCo envs)"), ("--height", int, "frame height"),
                             ("--camera", str, "comma-separated camera names"),
                             ("--render-backend", str, "where frames come from (default auto)"),
                             ("--render-quality", str, "default, balanced or fast (MuJoCo envs)")):
        p.add_argument(flag, type=kind, default=None, help=text)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    return p


def main(argv: list[str]) -> int:
    """Runs the subcommand; returns the exit code."""
    args = build_parser().parse_args(argv)
    fields = {k: v for k, v in vars(args).items()
              if k in ("fps", "width", "height", "camera", "render_backend", "render_quality", "bootstrap_reps")
              and v is not None}
    return report_artifacts(lambda: [render_dataset(args.dataset, args.out, format=args.format, episodes=args.episodes,
                                                    tolerance=args.tolerance, success_rule=args.success_rule,
                                                    overwrite=args.overwrite, **fields)], error=ERROR, prog=PROG)


def render_dataset(dataset: str, out: str | Path, *, format: str | None = None, episodes: Sequence[str] = (),
                   tolerance: float = DEFAULT_TOLERANCE, success_rule: str = "any", overwrite: bool = False,
                   **fields: UserValue) -> Artifact:
    """Writes the chosen episodes of a Minari dataset to ``out`` (see the module docstring); returns the artifact.

    Its metadata sidecar ``<out>.metadata.json`` holds the dataset's id and path, the episodes written and,
    for a replay, each episode's check (``replay``: ``max_deviation``, ``diverged_at``, ``reason``)."""
    ensure_headless_gl()  # before anything imports mujoco (no display: EGL or OSMesa)
    data = open_dataset(str(dataset))
    cfg = RenderConfig(policy="(dataset)", env=data.dataset_id, out=Path(out), format=format,
                       overwrite=overwrite, success_rule=success_rule, **fields)
    if cfg.format not in NUMBER_FORMATS + REPLAY_FORMATS:
        raise ConfigError(f"a dataset cannot be written as format {cfg.format!r}",
                          expected=", ".join(NUMBER_FORMATS + REPLAY_FORMATS), got=cfg.format,
                          fix="choose --out eval_info.json, .jsonl, .mp4, .gif, .html or a folder name (frames)")
    chosen = choose(data, list(episodes))
    notes: list[str] = []
    if cfg.format in REPLAY_FORMATS and not episodes and len(chosen) > 1:
        chosen = chosen[:1]
        notes.append(f"filmed episode 0 of {data.total} (--episodes chooses others: numbers, worst:N, best:N)")
    cfg = RenderConfig.from_dict({**cfg.to_dict(), "num_trajs": max(chosen, default=0) + 1})
    sidecar = Path(f"{cfg.out}.metadata.json")
    group = WriterGroup(cfg, cfg.out_path)
    for path in [*group.planned_paths(), sidecar]:
        check_os_name(path)
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise WriterError(f"the output folder {str(folder)!r} " + ("is not writable" if folder.is_dir() else
                              "does not exist"), got=str(path),
                              fix=f"create it first (mkdir -p {shlex.quote(str(folder))}) or choose another --out")
        check_replaceable(path, cfg.overwrite)
    started = time.perf_counter()
    try:
        if cfg.format in NUMBER_FORMATS:
            checks: list[ReplayCheck] = []
            _write_numbers(group, data, chosen, cfg)
        else:
            checks = _replay(group, data, chosen, cfg, tolerance, notes)
        artifacts = group.close()
    except BaseException:
        group.abort()
        raise
    artifact = artifacts[0]
    artifact.info["notes"] = artifact_notes(artifact) + notes
    meta = {"dataset": {"id": data.dataset_id, "path": str(data.path.absolute()), "total_episodes": data.total},
            "episodes": chosen, "format": cfg.format, "wall_s": time.perf_counter() - started,
            "replay": [c.to_dict() for c in checks], "artifacts": [a.to_dict() for a in artifacts],
            "warnings": artifact.info["notes"]}
    try:
        write_json_atomic(sidecar, json_ready(meta), default=str)
    except BaseException:
        for written in artifacts:
            remove(Path(written.path))
        raise
    return artifact


def _write_numbers(group: WriterGroup, data: DatasetEpisodes, chosen: list[int], cfg: RenderConfig) -> None:
    """The recorded episodes' numbers (and, for jsonl, their steps), as a run hands them to its writers."""
    steps = WRITERS.entry(cfg.format_name).needs_steps
    for start in range(0, len(chosen), 64):  # a few episodes at a time: memory stays flat on big datasets
        for episode in data.episodes(chosen[start:start + 64], cfg.success_rule):
            if steps:
                group.on_trajectory(episode)
            group.on_episode(episode.metrics())


def _replay(group: WriterGroup, data: DatasetEpisodes, chosen: list[int], cfg: RenderConfig, tolerance: float,
            notes: list[str]) -> list[ReplayCheck]:
    """Replays each chosen episode twice: once to check it, once (only if it matched) to film it."""
    html = cfg.format == "html"
    with captured_mujoco_warnings(notes):  # MuJoCo's compiler warnings are notes, as in a run
        env = recover_env(data, None if html else "rgb_array")
    backend: FrameSource | None = None
    try:
        sim = find_simulation(env) if html else None
        if html and sim is None:
            raise ConfigError(f"the html replay page draws MuJoCo models, and the env of {data.dataset_id!r} has "
                              "none", got=str(getattr(getattr(env, "spec", None), "id", type(env).__name__)),
                              fix="write --out replay.mp4 or .gif (frames of env.render())")
        backend = None if html else make_backend(cfg, env)
        checks = [_film(group, backend, sim, env, data, index, cfg, tolerance) for index in chosen]
    finally:
        if backend is not None:
            backend.close()
        env.close()
    _report(checks, data, notes)
    return checks


def _film(group: WriterGroup, backend: FrameSource | None, sim: tuple[MjModel, MjData] | None,
          env: gym.Env[object, object], data: DatasetEpisodes, index: int, cfg: RenderConfig,
          tolerance: float) -> ReplayCheck:
    """Checks episode ``index``'s replay and, where it matches, replays it again into ``group``: the MuJoCo states
    (``sim``) for the html page, else ``backend``'s frames."""
    ep = next(iter(data.dataset.iterate_episodes([index])))
    seed = recorded_seed(data.episode_meta([index])[0])
    check = replay_check(env, ep, seed, tolerance)
    if not check.ok:
        return check
    rewards = [0.0, *map(float, ep.rewards)]
    total = [0.0]
    started = time.perf_counter()

    def emit(step: int) -> None:
        total[0] += rewards[step]
        metrics: StepMetrics = {"step": step, "reward": rewards[step], "return": total[0]}
        if sim is not None:  # the html page: the replayed MuJoCo state (mocap bodies' poses too), drawn by the page
            model, state = sim
            pose: SimState = {"model": model, "qpos": state.qpos.copy()}
            if model.nmocap:
                pose["mocap_pos"], pose["mocap_quat"] = state.mocap_pos.copy(), state.mocap_quat.copy()
            group.write(FrameBundle({}, step, index, metrics=metrics, state=pose))
            return
        assert backend is not None  # the other formats film the backend's frames (_replay made it)
        if step == 0:
            backend.begin_episode()
        captured = backend.capture(None) or {}
        frames = apply_layout({name: to_uint8_hwc(f) for name, f in captured.items()}, cfg.camera_layout)
        group.write(FrameBundle(frames, step, index, metrics=metrics))

    second = replay_check(env, ep, seed, tolerance, on_step=emit)
    if not second.ok:
        raise RenderError(f"episode {index} matched its recording once and then diverged at step "
                          f"{second.diverged_at} when replayed again: the env is not deterministic here",
                          fix="check the env's seeding (reset(seed=...) must fix every random draw)")
    terminated, truncated = bool(ep.terminations[-1]), bool(ep.truncations[-1])
    episode: EpisodeMetrics = {
        "episode_ix": index, "seed": seed, "sum_reward": total[0],
        "max_reward": max(rewards[1:]) if check.steps else None, "length": check.steps, "success": None,
        "terminated": terminated, "truncated": truncated, "wall_s": time.perf_counter() - started,
        "num_frames": check.steps + 1}
    group.on_episode(episode)
    return check


def _report(checks: list[ReplayCheck], data: DatasetEpisodes, notes: list[str]) -> None:
    """A note per outcome; an error when no chosen episode could be filmed."""
    good = [c for c in checks if c.ok]
    if good:
        worst = max(c.max_deviation for c in good)
        notes.append(f"replayed episode(s) {', '.join(str(c.index) for c in good)} in the recovered env: every "
                     f"observation matched its recording (largest deviation {worst:.3g})")
    unseeded = [c for c in checks if c.reason is not None]
    diverged = [c for c in checks if c.diverged_at is not None]
    for c in diverged:
        notes.append(f"episode {c.index} diverged from its recording at step {c.diverged_at} (largest deviation "
                     f"{c.max_deviation:.3g}): not filmed (a non-deterministic env, or another simulator version)")
    for c in unseeded:
        notes.append(f"episode {c.index} cannot be replayed: {c.reason}; not filmed")
    if good:
        return
    if unseeded and not diverged and all("seed" in (c.reason or "") for c in unseeded):
        raise ConfigError(f"the dataset {data.dataset_id!r} records no seed for episode(s) "
                          f"{', '.join(str(c.index) for c in unseeded)}, so their env cannot be reset to the state "
                          "they started from, and a replay of their actions would not be the recording",
                          expected="episodes recorded with a reset seed (DataCollector: env.reset(seed=...); "
                                   "--out NAME.minari records them)", got="seed: None",
                          fix="choose seeded episodes with --episodes, or write --out eval_info.json / .jsonl "
                              "from the recorded numbers (no replay needed)")
    raise ConfigError("no chosen episode could be replayed as it was recorded: " + "; ".join(notes),
                      fix="replay with the simulator version the dataset was made with (its requirements), or "
                          "raise --tolerance if the deviations are rounding")
