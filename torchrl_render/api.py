"""``render_policy``: the pipeline, top to bottom.

config -> checkpoint -> env, policy -> backend -> rollout -> FrameBundles ->
writers (streaming) -> artifacts + metadata sidecar -> RenderResult.
Nothing holds the frames of a run: each one goes to the writers as it is made.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

from .backends import BACKENDS
from .backends.factory import make_backend
from .backends.mujoco import free_gymnasium_gl
from .backends.null import NullBackend
from .checkpoint import checkpoint_hash, load_checkpoint
from .config import RenderConfig
from .data import Artifact, RenderResult, frame_paths
from .engine import Engine
from .engine.procs import setup_frozen
from .envs import open_env
from .envs.gl import ensure_headless_gl, gl_notes
from .envs.mjlog import captured_mujoco_warnings
from .envs.unwrap import model_file
from .errors import BackendUnavailable, ConfigError, WriterError
from .live import observers
from .live.viewer import prepare_viewer
from .loggers import check_logger, log_run
from .metrics import aggregate, json_ready, nonfinite_note
from .metrics.precision import sequential_entry
from .policies import build_policy
from .rerun import film_chosen, refuse_batched_env
from .resolve import resolve
from .selection import Selector, needs_two_passes, parse_selectors
from .sidecar import run_metadata
from .sink import Progress, RunContext, Sink, rendered_range
from .storage import check_os_name, check_replaceable, save_rollouts, write_json_atomic
from .writers import WRITERS, needs_frames
from .writers.base import remove
from .writers.group import BackgroundWriters, InlineWriters, KeptFrames, WriterGroup

__all__ = ["render_policy"]

log = logging.getLogger("torchrl_render")

def render_policy(config: RenderConfig | None = None, /, *, command: list[str] | None = None,
                  on_episode: Callable[[dict[str, Any]], None] | None = None, **fields: Any) -> RenderResult:
    """Rolls a policy out, streams its frames to the format writer, returns paths, metrics, rollouts.

    Args:
        config: A :class:`RenderConfig`; or pass its fields as keyword arguments.
        command: The command line to record in the metadata (the CLI passes it).
        on_episode: Called with each episode's metrics dict as soon as the episode ends (sweeps record
            episodes one by one with it); an exception it raises ends the run.

    Example:
        >>> from torchrl_render import RenderConfig, render_policy
        >>> render_policy(RenderConfig(policy="m:p", env="m:e", validate_only=True)).metadata["validate_only"]
        True
    """
    cfg = _config(config, fields)
    if cfg.validate_only:
        return RenderResult(None, [], [], {"config": cfg.to_dict(), "validate_only": True}, [])
    run = Run(cfg, command, on_episode)
    if cfg.dry_run:  # as torchrl.render: the config and the plan, no import, no checkpoint, no env
        return RenderResult(None, [], [], {"dry_run": True, "config": cfg.to_dict(),
                                           "planned_paths": [str(p) for p in run.planned_paths()]}, [])
    check_logger(cfg.logger)  # --logger without its package: refused before anything runs
    result = run.execute()
    log_run(cfg, result)  # --logger: the evaluation also in the user's tracker
    return result


def _config(config: RenderConfig | None, fields: dict[str, Any]) -> RenderConfig:
    if config is None:
        return RenderConfig.from_dict(fields)
    return dataclasses.replace(config, **fields) if fields else config


class Run:
    """One run's state: what it opened, what it noted, what it measured (compat and spool build on it)."""

    def __init__(self, cfg: RenderConfig, command: list[str] | None, on_episode: Any = None) -> None:
        self.command = command
        self.on_episode = on_episode
        self.lingering: list[Any] = []  # the live page of a finished rollout, until its artifacts are written
        self.notes: list[str] = _Notes()
        cfg = _one_layout_per_camera_set(cfg, self.notes)
        self.cfg = cfg = _envs_for_the_episodes(cfg, self.notes)
        self.selectors = _two_pass_selectors(cfg)  # None: the single pass of today (first:N at most)
        self.select_info: dict[str, Any] | None = None
        self.format_frames = needs_frames(cfg)
        self.needs_frames = self.format_frames or cfg.result_frames  # result_frames: torchrl.render's frames
        self.groups = [WriterGroup(cfg, cfg.out)]
        if cfg.save_frames:
            frame_dir = cfg.frame_dir or cfg.out.with_name(cfg.out.stem + "_frames")
            self.groups.append(WriterGroup(dataclasses.replace(cfg, format="frames", out=frame_dir,
                                                               save_frames=False), frame_dir))
        if cfg.notebook_render_backend == "mujoco_wasm" and cfg.format not in ("html", "ipynb"):
            replay = cfg.out.with_name((cfg.out.stem if cfg.out.suffix else cfg.out.name) + "_replay.html")
            self.groups.append(WriterGroup(dataclasses.replace(cfg, format="html", out=replay, save_frames=False),
                                           replay))
        self.needs_state = any(group.needs_state for group in self.groups)  # html, the notebook's 3-D viewer
        self.sidecar = Path(cfg.metadata or f"{cfg.out}.metadata.json")
        folder = Path(cfg.artifact_dir) if cfg.artifact_dir is not None else cfg.out.parent
        stem = cfg.out.stem if cfg.out.suffix else cfg.out.name
        # a notebook's asset folder holds its rollouts (torchrl.render's layout, which its cells read)
        saved = (cfg.save_rollout or cfg.save_tensordicts) and cfg.format != "ipynb"
        self.rollout_dir = folder / f"{stem}_rollouts" if saved else None

    def execute(self) -> RenderResult:
        started = time.perf_counter()
        self._check_outputs()
        if self.cfg.format == "ipynb" and self.cfg.notebook_rollout_mode == "live":
            return self._notebook_only(started)
        _check_devices(self.cfg)
        if self.cfg.viewer is not None:  # --viewer: no display -> an error now; the video stays off screen

            prepare_viewer(self.cfg, self.notes)
        unset = not os.environ.get("MUJOCO_GL")
        gl = ensure_headless_gl()  # before anything imports mujoco, also for data-only runs

        if unset and gl:
            self.notes.append(f"MUJOCO_GL was unset and there is no display: chose MUJOCO_GL={gl}")
        self.notes.extend(gl_notes())
        payload, digest = self._checkpoint()
        with ExitStack() as stack:
            stack.enter_context(captured_mujoco_warnings(self.notes))  # not stderr, no log file
            env = self._env(payload, stack)
            policy = self._policy(env, payload, digest)
            env = policy.adapt_env(env)
            policy.env = env
            for group in self.groups:  # writers that describe the env (minari) read its spaces and spec
                group.bind_env(env)
            engine = self._engine(env, policy, payload, stack)
            stack.callback(engine.close)
            backend = stack.enter_context(self._backend(env, engine))
            if self.cfg.check_setup:
                return self._dry_result(env, backend, digest, gl)
            engine.prepare()  # env workers start now, while the writers open and rendered episodes run
            self.writers = BackgroundWriters(self.groups) if self.cfg.background_encode else InlineWriters(self.groups)
            if self.cfg.result_frames:  # RenderResult.frames, only when asked (memory grows)
                self.writers = KeptFrames(self.writers)
            stack.callback(self._stop_live)  # a failure after the rollout stops the live page
            if self.selectors is None:
                episodes, trajectories = self._roll(engine, backend)
            else:  # evaluate every episode, then film the chosen ones (rerun.py)
                episodes, trajectories, self.select_info = self._roll_chosen(engine, backend)
            artifacts = self._close_writers(episodes)
            self.notes.extend(n for a in artifacts for n in a.info.get("notes", ()))  # e.g. what a page leaves out
            if self.rollout_dir is not None:
                kept, indices = self._saved(episodes, trajectories)
                artifacts.append(save_rollouts(kept, self.rollout_dir, overwrite=self.cfg.overwrite, indices=indices,
                                               info=self._rollout_info(env)))
            lingering, self.lingering = self.lingering, []
        try:  # an artifact never stays without its sidecar
            metrics = {"per_episode": episodes, "aggregated": aggregate(episodes, time.perf_counter() - started,
                                                                        **self._bootstrap())}
            note = nonfinite_note(metrics["aggregated"])
            if note:
                self.notes.append(note)
            self._sequential(metrics)
            meta = self._metadata(env, backend, digest, gl, metrics, artifacts, started)
            meta["engine"] = dict(engine.info)
            if self.select_info is not None:
                meta["render_select"] = self.select_info
            self.write_sidecars(meta)
        except BaseException:
            _remove_artifacts(artifacts)
            for kept in lingering:
                kept.stop(finished=False)
            raise
        for kept in lingering:  # every artifact is written; the page may stay up --live-keep s
            kept.stop(finished=True)
        return RenderResult(artifacts[0].path if artifacts else None, trajectories,
                            frame_paths(artifacts), meta, list(self.notes), getattr(self.writers, "kept", []),
                            artifacts, metrics)

    def _notebook_only(self, started: float) -> RenderResult:
        """A ``live`` notebook, as torchrl.render writes it: no checkpoint loaded, no env or policy built, no
        rollout; its cells do all that when run (the checkpoint is hashed for the metadata)."""
        digest = _checkpoint_digest(self.cfg.ckpt) if self.cfg.ckpt is not None else None
        self.writers = InlineWriters(self.groups)
        for group in self.groups:
            group.open_planned()
        artifacts = self.writers.close()
        metrics = {"per_episode": [], "aggregated": aggregate([], time.perf_counter() - started)}
        meta = self._metadata(None, None, digest, None, metrics, artifacts, started)
        self.write_sidecars(meta)
        return RenderResult(artifacts[0].path if artifacts else None, [], frame_paths(artifacts), meta,
                            list(self.notes), [], artifacts, metrics)

    def write_sidecars(self, meta: dict[str, Any]) -> None:
        """The metadata sidecar, and the metadata kept inside artifacts (jsonl, npz, the notebook's asset folder)."""
        meta = json_ready(meta)  # NaN returns are null in every copy
        _write_json_atomic(self.sidecar, meta)
        for artifact in meta.get("artifacts", []):
            hook = getattr(WRITERS.load(artifact["format"]), "add_metadata", None) if artifact["format"] in \
                WRITERS.names() else None
            if hook is not None:
                hook(Path(artifact["path"]), meta, self.cfg)

    # -- stages ---------------------------------------------------------------------------------

    def planned_paths(self) -> list[Path]:
        """Every path the run will write: the artifacts, the sidecar, the rollout folder."""
        paths = [p for g in self.groups for p in g.planned_paths()] + [self.sidecar]
        return paths + ([self.rollout_dir] if self.rollout_dir is not None else [])

    def _check_outputs(self) -> None:
        paths = self.planned_paths()
        for path in [*paths, Path(f"{self.cfg.out}.partial.json")]:  # names the OS refuses, before anything
            own = path == self.sidecar and self.cfg.metadata
            check_os_name(path, "--metadata" if own else "--out", None if own else Path(self.cfg.out))
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
            folder_expected = path == self.rollout_dir or (
                WRITERS.entry(self.cfg.format).directory and path != self.sidecar)
            if path.is_dir() and not folder_expected:
                raise WriterError(f"{str(path)!r} is a folder, and format {self.cfg.format!r} writes a file there",
                                  got=str(path), fix="choose a file name for --out (e.g. run.mp4)")
            check_replaceable(path, self.cfg.overwrite)

    def _checkpoint(self) -> tuple[Any, str | None]:
        if self.cfg.ckpt is None:
            return None, None

        payload = load_checkpoint(self.cfg.ckpt, self.cfg.policy_device or self.cfg.device,
                                  trust=self.cfg.trust_checkpoint)
        if self.cfg.trust_checkpoint:
            self.notes.append("checkpoint loaded with trust_checkpoint=True (full unpickling allowed)")
        return payload, _checkpoint_digest(self.cfg.ckpt)

    def _policy(self, env: Any, payload: Any, digest: str | None) -> Any:
        """The policy runner (collect_render_rollouts hands in the one load_render_policy built)."""

        return build_policy(self.cfg, env, payload, digest, self.notes)

    def _env(self, payload: Any, stack: ExitStack) -> Any:
        """The run's single env: its specs go to the policy factory, whatever --num-envs is."""

        env = open_env(self.cfg, payload, render_mode=self._render_mode())  # torchrl's wrapper only if needed
        stack.callback(_close_quietly, env)
        if getattr(env, "_torchrl_render_batched", False):  # Isaac Lab's copies are the env slots
            from .envs.isaaclab import slots_config

            self.cfg = slots_config(self.cfg, env, self.needs_frames, self.notes)
        return env

    def _render_mode(self) -> str | None:
        return "rgb_array" if self.needs_frames and self.cfg.render_backend in ("auto", "env") else None

    def _engine(self, env: Any, policy: Any, payload: Any, stack: ExitStack) -> Any:
        cfg = self.cfg
        entry = WRITERS.entry(cfg.format)
        data_format = not entry.needs_frames and entry.needs_steps
        reward_fn = None
        if cfg.reward_fn is not None:
            reward_fn = resolve(cfg.reward_fn, "reward_fn")
        films = (self.needs_frames or self.needs_state or cfg.viewer) and self.selectors is None
        if self.selectors is not None:
            refuse_batched_env(env)
        engine = Engine(cfg, env, policy, payload, self._render_mode(), rendered_range(cfg) if films else range(0),
                        keep=cfg.trajectories or data_format, infos=data_format and entry.needs_infos,
                        reward_fn=reward_fn, notes=self.notes)
        if engine.frames_in_workers and getattr(env, "_torchrl_render_batched", False):  # batched already
            engine.batched = env
        elif engine.frames_in_workers:
            from .engine.workers import close_batched, make_batched_env

            frames = partial(make_backend, cfg) if self.needs_frames and self.selectors is None else None  # in workers
            batched = make_batched_env(cfg, payload, self._render_mode(), frames, self.notes, engine.info)
            stack.callback(_close_quietly, batched, close_batched)
            engine.batched = policy.adapt_env(batched)
        return engine

    def _backend(self, env: Any, engine: Any) -> Any:
        if engine.frames_in_workers and self.selectors is None:  # frames are rendered inside the env workers

            backend = NullBackend()
            backend.name = f"{self.cfg.render_backend} (in env workers)"
            return backend
        name = self.cfg.render_backend if self.needs_frames else "null"
        if not self.needs_frames and self.cfg.render_backend not in ("auto", "null"):
            name = self.cfg.render_backend
        try:
            backend = BACKENDS.load(name).from_config(env, self.cfg)
        except BackendUnavailable as exc:
            if self.format_frames:
                raise

            backend = NullBackend()
            self.notes.append(f"no frames for RenderResult.frames: {exc.what}")
        self.notes.extend(backend.notes)
        if self.needs_frames and self.cfg.render_quality not in backend.render_qualities:
            self.notes.append(f"render_quality={self.cfg.render_quality!r} was not applied: the {backend.name!r} "
                              "backend draws with the env's own settings (--render-backend mujoco applies it "
                              "to MuJoCo envs)")
        return backend

    def _roll(self, engine: Any, backend: Any) -> tuple[list[dict], list[Any]]:
        context = RunContext(self.cfg, self.writers, self.notes, self.needs_frames, self.needs_state,
                             self.format_frames)
        sink = Sink(context, backend, observers(self.cfg, self.needs_frames), self.on_episode)
        try:
            with Progress(self.cfg) as bar, setup_frozen():
                for item in engine.episodes():
                    if sink.consume(item):
                        bar.episode_done(sink.episodes)
                    if sink.stopped():  # --viewer: escape or the window closed ends the run here
                        break
        except BaseException as exc:
            sink.close(finished=False)  # the live page and the viewer end with the run
            self.writers.abort()
            self._write_partial(sink.episodes, exc)
            raise
        self.lingering = sink.close()  # the stream ends; the server stops once the artifacts are written
        return sink.episodes, sink.trajectories

    def _rollout_info(self, env: Any) -> dict[str, Any]:
        """What ``replay`` needs beside saved rollouts: the sidecar and the MuJoCo model file, when known."""
        model = self.cfg.mujoco_model_path or model_file(env)
        return {"metadata": str(self.sidecar.absolute()),
                "mujoco_model_path": str(Path(model).absolute()) if model is not None else None}

    def _roll_chosen(self, engine: Any, backend: Any) -> tuple[list[dict], list[Any], dict[str, Any]]:
        """Both passes of ``--render-select`` (:func:`~torchrl_render.rerun.film_chosen`)."""
        try:
            return film_chosen(self, engine, backend)
        except BaseException as exc:
            self.writers.abort()
            measured = getattr(self, "measured", None)
            self._write_partial(measured.episodes if measured is not None else [], exc)
            raise

    def _close_writers(self, episodes: list[dict[str, Any]]) -> list[Artifact]:
        """The artifacts; none when a selection chose no episode to film (the sidecar still holds the metrics)."""
        if self.select_info is not None and not self.select_info["episodes"]:
            self.writers.abort()
            return []
        return self.writers.close()

    def _saved(self, episodes: list[dict[str, Any]], trajectories: list[Any]) -> tuple[list[Any], Any]:
        """The trajectories ``--save-rollout`` keeps, and their episode indices: with a selection, the filmed
        episodes' (unless ``--save-all-rollouts``), from the first pass, whose numbers are the run's."""
        if self.select_info is None or self.cfg.save_all_rollouts:
            return trajectories, None
        kept = [(e["episode_ix"], t) for e, t in zip(episodes, trajectories) if "render_reason" in e]
        return [t for _, t in kept], [i for i, _ in kept]

    def _sequential(self, metrics: dict[str, Any]) -> None:
        """``--precision``: the ``sequential`` entry (the half-width reached, on which episodes), and a note
        when the cap came first."""
        entry = sequential_entry(self.cfg, metrics["per_episode"])
        if entry is None:
            return
        metrics["sequential"] = entry
        if entry["stopped_on"] == "cap":
            self.notes.append(f"--precision {self.cfg.precision} was not reached within the cap of "
                              f"{entry['n_episodes']} episodes (--num-trajs): the 95% half-width is "
                              f"{entry['halfwidth']:.4g}; raise --num-trajs to go on")

    def _bootstrap(self) -> dict[str, Any]:
        """The intervals' bootstrap settings (``--bootstrap-reps``, seeded with ``--seed``), as the json writer
        uses them: the sidecar's aggregates equal eval_info.json's."""
        return {"reps": self.cfg.bootstrap_reps, "seed": self.cfg.seed}

    def _stop_live(self) -> None:
        """Stops the live page's server of a run that failed after its rollout."""
        lingering, self.lingering = self.lingering, []
        for kept in lingering:
            kept.stop(finished=False)

    def _write_partial(self, episodes: list[dict[str, Any]], exc: BaseException) -> None:
        """Keeps the metrics of the episodes that finished beside the (absent) artifact."""
        if not episodes:
            return
        path = Path(f"{self.cfg.out}.partial.json")
        data = {"error": f"{type(exc).__name__}: {exc}", "config": self.cfg.to_dict(),
                "metrics": {"per_episode": episodes, "aggregated": aggregate(episodes, 0.0, **self._bootstrap())}}
        try:
            _write_json_atomic(path, data)
        except OSError as write_exc:  # the run's own error matters more
            log.warning("could not write %s: %s", path, write_exc)
            return
        exc.add_note(f"the {len(episodes)} finished episode(s) are in {path}")  # the CLI's Ctrl-C line names it

    # -- results --------------------------------------------------------------------------------

    def _dry_result(self, env: Any, backend: Any, digest: str | None, gl: str | None) -> RenderResult:
        meta = {"check_setup": True, "config": self.cfg.to_dict(), "gl": gl, "checkpoint_sha256": digest,
                "render": backend.info(), "planned_paths": [str(p) for g in self.groups for p in g.planned_paths()],
                "warnings": list(self.notes)}
        return RenderResult(None, [], [], meta, list(self.notes))

    def _metadata(self, env: Any, backend: Any, digest: str | None, gl: str | None, metrics: dict[str, Any],
                  artifacts: list[Artifact], started: float) -> dict[str, Any]:
        """The sidecar: torchrl.render's keys and ours (:mod:`.sidecar`)."""

        return run_metadata(self.cfg, env=env, backend=backend, digest=digest, gl=gl, metrics=metrics,
                            artifacts=artifacts, wall=time.perf_counter() - started, argv=self.command,
                            notes=list(self.notes))


class _Notes(list):
    """The run's warnings: each note is kept and logged once, as it happens."""

    def append(self, text: str) -> None:
        if text not in self:
            log.info("%s", text)
            super().append(text)

    def extend(self, texts: Any) -> None:
        for text in texts:
            self.append(text)


def _one_layout_per_camera_set(cfg: RenderConfig, notes: list[str]) -> RenderConfig:
    """Several cameras with the ``single`` layout (the default) would show only the first: tile them."""
    if len(cfg.camera) < 2 or cfg.camera_layout != "single":
        return cfg
    notes.append(f"camera_layout 'single' shows one camera, but {len(cfg.camera)} were asked for "
                 f"({', '.join(cfg.camera)}): tiled them with camera_layout 'grid' (--camera-layout horizontal, "
                 "vertical or separate chooses another layout)")
    return dataclasses.replace(cfg, camera_layout="grid")


def _envs_for_the_episodes(cfg: RenderConfig, notes: list[str]) -> RenderConfig:
    """More envs than episodes: the extra envs would never get one, so as many envs as episodes run."""
    if cfg.num_trajs is None or cfg.num_envs <= cfg.num_trajs:
        return cfg
    notes.append(f"num_envs={cfg.num_envs} is more than num_trajs={cfg.num_trajs}: ran {cfg.num_trajs} env(s), "
                 "one per episode (the others would have had no episode to run)")
    return dataclasses.replace(cfg, num_envs=cfg.num_trajs)


def _two_pass_selectors(cfg: RenderConfig) -> tuple[Selector, ...] | None:
    """The run's selectors when they need its numbers (two passes); ``--max-episodes-rendered N`` among
    them is ``first:N``. None: a single pass."""
    selectors = parse_selectors(cfg.render_select)
    if not needs_two_passes(selectors):
        return None
    if cfg.max_episodes_rendered is not None:
        selectors += (Selector("first", count=cfg.max_episodes_rendered),)
    return selectors


def _remove_artifacts(artifacts: list[Artifact]) -> None:
    """Removes written artifacts (a run that fails after its writers finished leaves none)."""
    for artifact in artifacts:
        remove(Path(artifact.path))


def _check_devices(cfg: RenderConfig) -> None:
    """Refuses a device this machine does not have, before anything is built."""
    wanted = {d for d in (cfg.device, cfg.policy_device, cfg.env_device) if d is not None and d != "cpu"}
    if not wanted:
        return
    import torch

    for device in sorted(wanted):
        kind, _, index = device.partition(":")
        backend = getattr(torch, kind, None)
        available = bool(backend and backend.is_available())
        count = backend.device_count() if available and hasattr(backend, "device_count") else (1 if available else 0)
        if not available or (index and int(index) >= count):
            raise ConfigError(f"device {device!r} is not available on this machine",
                              expected="cpu" + (f" or {kind}:0..{count - 1}" if count else ""), got=device,
                              fix="pass --device cpu (and --policy-device/--env-device cpu)")


def _checkpoint_digest(path: Any) -> str:
    """The checkpoint's SHA-256, through ``torchrl_render.artifacts.checkpoint_hash`` when that module is
    loaded (looked up at call time, as torchrl.render's pipeline does, so a script that imported it and
    replaced the function there sees it used), else :func:`~torchrl_render.checkpoint.checkpoint_hash`, the
    same function. The module is found in ``sys.modules``, not imported: it sits above api (torchrl.render's
    module path, a face over compat, which imports api)."""
    artifacts = sys.modules.get(f"{__package__}.artifacts")
    return (artifacts.checkpoint_hash if artifacts is not None else checkpoint_hash)(path)


def _close_quietly(env: Any, close: Any = None) -> None:
    """Closes ``env`` (with ``close(env)`` when given) and logs what closing raised."""
    try:
        free_gymnasium_gl(env)  # gymnasium leaves its GL objects to the collector otherwise
        close(env) if close is not None else env.close()
    except Exception as exc:  # closing must not hide the run's own error
        log.warning("closing the env raised %s: %s", type(exc).__name__, exc)


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_json_atomic(path, json_ready(data), default=str, allow_nan=False)
