"""``render_policy`` and :class:`Run`: one run, top to bottom.

config -> outputs planned and checked (:mod:`.outputs`) -> checkpoint -> env, policy -> engine, backend
(:mod:`.stages`) -> rollout -> FrameBundles -> writers (streaming) -> artifacts + metadata sidecar -> RenderResult.
Nothing holds the frames of a run: each one goes to the writers as it is made.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..backends.base import RenderBackend
from ..checkpoint import load_checkpoint
from ..config import RenderConfig
from ..contracts import EpisodeMetrics, Payload, UserEnv, UserValue
from ..data import Artifact, RenderResult, RunMetrics, frame_paths
from ..engine import Engine
from ..engine.procs import setup_frozen
from ..envs import GymnasiumEnv, open_env
from ..envs.gl import ensure_headless_gl, gl_notes
from ..envs.mjlog import captured_mujoco_warnings
from ..envs.unwrap import model_file
from ..live import observers
from ..live.viewer import prepare_viewer
from ..loggers import check_logger, log_run
from ..metrics import aggregate, nonfinite_note
from ..metrics.precision import sequential_entry
from ..policies import PolicyRunner, build_policy
from ..rerun import film_chosen
from ..selection import Selector, SelectSummary
from ..sidecar import run_metadata
from ..sink import Lingering, Progress, RunContext, Sink
from ..storage import save_rollouts
from ..writers import needs_frames
from ..writers.group import BackgroundWriters, InlineWriters, KeptFrames, WriterGroup
from .outputs import RunOutputs, remove_artifacts
from .stages import (
    Needs,
    build_engine,
    check_devices,
    checkpoint_digest,
    choose_backend,
    close_quietly,
    envs_for_the_episodes,
    one_layout_per_camera_set,
    two_pass_selectors,
)

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.envs import EnvBase

__all__ = ["Run", "render_policy"]

log = logging.getLogger("torchrl_render")


def render_policy(config: RenderConfig | None = None, /, *, command: list[str] | None = None,
                  on_episode: Callable[[EpisodeMetrics], None] | None = None, **fields: UserValue) -> RenderResult:
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


def _config(config: RenderConfig | None, fields: dict[str, UserValue]) -> RenderConfig:
    if config is None:
        return RenderConfig.from_dict(fields)
    return dataclasses.replace(config, **fields) if fields else config


class Run:
    """One run's state: what it opened, what it noted, what it measured.

    :meth:`execute` calls the stages in order. ``_checkpoint``, ``_env``, ``_policy`` and ``write_sidecars`` are
    the hooks torchrl.render's two-step pipeline (``compat.spool``) overrides, to run on an env and a policy
    its caller made; ``rerun.film_chosen`` reads the run's writers, notes and needs.
    """

    def __init__(self, cfg: RenderConfig, command: list[str] | None,
                 on_episode: Callable[[EpisodeMetrics], None] | None = None) -> None:
        self.command = command
        self.on_episode = on_episode
        self.lingering: list[Lingering] = []  # the live page of a finished rollout, until its artifacts are written
        self.notes: list[str] = _Notes()
        cfg = one_layout_per_camera_set(cfg, self.notes)
        self.cfg = cfg = envs_for_the_episodes(cfg, self.notes)
        self.selectors: tuple[Selector, ...] | None = two_pass_selectors(cfg)  # None: a single pass
        self.select_info: SelectSummary | None = None
        self.measured: Sink | None = None  # a two-pass selection's first pass (rerun.film_chosen sets it)
        self.format_frames = needs_frames(cfg)
        self.needs_frames = self.format_frames or cfg.result_frames  # result_frames: torchrl.render's frames
        self.outputs = RunOutputs(cfg)
        self.needs_state = any(group.needs_state for group in self.groups)  # html, the notebook's 3-D viewer
        self.writers: BackgroundWriters | KeptFrames

    # what compat's two-step pipeline and rerun read of the run's outputs
    @property
    def groups(self) -> list[WriterGroup]:
        return self.outputs.groups

    @property
    def sidecar(self) -> Path:
        return self.outputs.sidecar

    @property
    def rollout_dir(self) -> Path | None:
        return self.outputs.rollout_dir

    @property
    def needs(self) -> Needs:
        return Needs(format_frames=self.format_frames, frames=self.needs_frames, state=self.needs_state,
                     viewer=self.cfg.viewer is not None, render_mode=self._render_mode())

    def execute(self) -> RenderResult:
        started = time.perf_counter()
        self._check_outputs()
        if self.cfg.format == "ipynb" and self.cfg.notebook_rollout_mode == "live":
            return self._notebook_only(started)
        check_devices(self.cfg)
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
            engine = build_engine(self.cfg, env, policy, payload, self.needs, self.selectors, self.notes, stack)
            stack.callback(engine.close)
            backend = stack.enter_context(choose_backend(self.cfg, env, engine, self.needs, self.selectors,
                                                         self.notes))
            if self.cfg.check_setup:
                return self._dry_result(backend, digest, gl)
            engine.prepare()  # env workers start now, while the writers open and rendered episodes run
            self.writers = BackgroundWriters(self.groups) if self.cfg.background_encode else InlineWriters(self.groups)
            if self.cfg.result_frames:  # RenderResult.frames, only when asked (memory grows)
                self.writers = KeptFrames(self.writers)
            stack.callback(self._stop_live)  # a failure after the rollout stops the live page
            if self.selectors is None:
                episodes, trajectories = self._roll(engine, backend)
            else:  # evaluate every episode, then film the chosen ones (rerun.py)
                episodes, trajectories, self.select_info = self._roll_chosen(engine, backend)
            artifacts = self._close_writers()
            for artifact in artifacts:  # e.g. what a page leaves out
                notes = artifact.info.get("notes", ())
                if isinstance(notes, Iterable):  # a list of lines (a plugin writer's any iterable of them)
                    self.notes.extend(notes)
            if self.rollout_dir is not None:
                kept, indices = self._saved(episodes, trajectories)
                artifacts.append(save_rollouts(kept, self.rollout_dir, overwrite=self.cfg.overwrite, indices=indices,
                                               info=self._rollout_info(env)))
            lingering, self.lingering = self.lingering, []
        try:  # an artifact never stays without its sidecar
            aggregated = aggregate(episodes, time.perf_counter() - started, reps=self.cfg.bootstrap_reps,
                                   seed=self.cfg.seed)
            note = nonfinite_note(aggregated)
            if note:
                self.notes.append(note)
            metrics: RunMetrics = {"per_episode": episodes, "aggregated": aggregated}
            self._sequential(metrics)
            meta = self._metadata(env, backend, digest, gl, metrics, artifacts, started)
            meta["engine"] = dict(engine.info)
            if self.select_info is not None:
                meta["render_select"] = self.select_info
            self.write_sidecars(meta)
        except BaseException:
            remove_artifacts(artifacts)
            for held in lingering:
                held.stop(finished=False)
            raise
        for held in lingering:  # every artifact is written; the page may stay up --live-keep s
            held.stop(finished=True)
        kept_frames = self.writers.kept if isinstance(self.writers, KeptFrames) else []
        return RenderResult(artifacts[0].path if artifacts else None, trajectories,
                            frame_paths(artifacts), meta, list(self.notes), kept_frames, artifacts, metrics)

    def _notebook_only(self, started: float) -> RenderResult:
        """A ``live`` notebook, as torchrl.render writes it: no checkpoint loaded, no env or policy built, no
        rollout; its cells do all that when run (the checkpoint is hashed for the metadata)."""
        digest = checkpoint_digest(self.cfg.ckpt) if self.cfg.ckpt is not None else None
        self.writers = InlineWriters(self.groups)
        for group in self.groups:
            group.open_planned()
        artifacts = self.writers.close()
        metrics: RunMetrics = {"per_episode": [], "aggregated": aggregate([], time.perf_counter() - started)}
        meta = self._metadata(None, None, digest, None, metrics, artifacts, started)
        self.write_sidecars(meta)
        return RenderResult(artifacts[0].path if artifacts else None, [], frame_paths(artifacts), meta,
                            list(self.notes), [], artifacts, metrics)

    def write_sidecars(self, meta: Mapping[str, object]) -> None:
        """The metadata sidecar, and the metadata kept inside artifacts (jsonl, npz, the notebook's asset folder)."""
        self.outputs.write_sidecars(meta, self.cfg)

    def planned_paths(self) -> list[Path]:
        """Every path the run will write: the artifacts, the sidecar, the rollout folder."""
        return self.outputs.planned_paths()

    def _check_outputs(self) -> None:
        self.outputs.check()

    # -- the stages' hooks ----------------------------------------------------------------------------

    def _checkpoint(self) -> tuple[Payload, str | None]:
        if self.cfg.ckpt is None:
            return None, None
        payload = load_checkpoint(self.cfg.ckpt, self.cfg.policy_device or self.cfg.device,
                                  trust=self.cfg.trust_checkpoint)
        if self.cfg.trust_checkpoint:
            self.notes.append("checkpoint loaded with trust_checkpoint=True (full unpickling allowed)")
        return payload, checkpoint_digest(self.cfg.ckpt)

    def _policy(self, env: UserEnv, payload: Payload, digest: str | None) -> PolicyRunner:
        """The policy runner (collect_render_rollouts hands in the one load_render_policy built)."""
        return build_policy(self.cfg, env, payload, digest, self.notes)

    def _env(self, payload: Payload, stack: ExitStack) -> GymnasiumEnv | EnvBase:
        """The run's single env: its specs go to the policy factory, whatever --num-envs is."""
        env = open_env(self.cfg, payload, render_mode=self._render_mode())  # torchrl's wrapper only if needed
        stack.callback(close_quietly, env)
        if getattr(env, "_torchrl_render_batched", False):  # Isaac Lab's copies are the env slots
            from ..envs.isaaclab import IsaacLabAdapter, slots_config

            # the adapter says it is a batch, or a torchrl wrapper of it (a TransformedEnv forwards the attribute,
            # and the batch_size and set_seed that slots_config reads, to its base env): no isinstance check here
            self.cfg = slots_config(self.cfg, cast(IsaacLabAdapter, env), self.needs_frames, self.notes)
        return env

    def _render_mode(self) -> str | None:
        return "rgb_array" if self.needs_frames and self.cfg.render_backend in ("auto", "env") else None

    # -- the rollout ----------------------------------------------------------------------------------

    def _roll(self, engine: Engine, backend: RenderBackend
              ) -> tuple[list[EpisodeMetrics], list[TensorDictBase | None]]:
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
            self.outputs.write_partial(sink.episodes, exc, self.cfg)
            raise
        self.lingering = sink.close()  # the stream ends; the server stops once the artifacts are written
        return sink.episodes, sink.trajectories

    def _rollout_info(self, env: UserEnv) -> dict[str, str | None]:
        """What ``replay`` needs beside saved rollouts: the sidecar and the MuJoCo model file, when known."""
        model = self.cfg.mujoco_model_path or model_file(env)
        return {"metadata": str(self.sidecar.absolute()),
                "mujoco_model_path": str(Path(model).absolute()) if model is not None else None}

    def _roll_chosen(self, engine: Engine, backend: RenderBackend
                     ) -> tuple[list[EpisodeMetrics], list[TensorDictBase | None], SelectSummary]:
        """Both passes of ``--render-select`` (:func:`~torchrl_render.rerun.film_chosen`)."""
        try:
            return film_chosen(self, engine, backend)
        except BaseException as exc:
            self.writers.abort()
            measured = self.measured
            self.outputs.write_partial(measured.episodes if measured is not None else [], exc, self.cfg)
            raise

    def _close_writers(self) -> list[Artifact]:
        """The artifacts; none when a selection chose no episode to film (the sidecar still holds the metrics)."""
        if self.select_info is not None and not self.select_info["episodes"]:
            self.writers.abort()
            return []
        return self.writers.close()

    def _saved(self, episodes: list[EpisodeMetrics], trajectories: list[TensorDictBase | None]
               ) -> tuple[list[TensorDictBase | None], list[int] | None]:
        """The trajectories ``--save-rollout`` keeps, and their episode indices: with a selection, the filmed
        episodes' (unless ``--save-all-rollouts``), from the first pass, whose numbers are the run's."""
        if self.select_info is None or self.cfg.save_all_rollouts:
            return trajectories, None
        kept = [(e["episode_ix"], t) for e, t in zip(episodes, trajectories) if "render_reason" in e]
        return [t for _, t in kept], [i for i, _ in kept]

    def _sequential(self, metrics: RunMetrics) -> None:
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

    def _stop_live(self) -> None:
        """Stops the live page's server of a run that failed after its rollout."""
        lingering, self.lingering = self.lingering, []
        for kept in lingering:
            kept.stop(finished=False)

    # -- results --------------------------------------------------------------------------------------

    def _dry_result(self, backend: RenderBackend, digest: str | None, gl: str | None) -> RenderResult:
        meta: dict[str, object] = {
            "check_setup": True, "config": self.cfg.to_dict(), "gl": gl, "checkpoint_sha256": digest,
            "render": backend.info(), "planned_paths": [str(p) for g in self.groups for p in g.planned_paths()],
            "warnings": list(self.notes)}
        return RenderResult(None, [], [], meta, list(self.notes))

    def _metadata(self, env: UserEnv | None, backend: RenderBackend | None, digest: str | None, gl: str | None,
                  metrics: RunMetrics, artifacts: list[Artifact], started: float) -> dict[str, object]:
        """The sidecar: torchrl.render's keys and ours (:mod:`torchrl_render.sidecar`)."""
        return run_metadata(self.cfg, env=env, backend=backend, digest=digest, gl=gl, metrics=metrics,
                            artifacts=artifacts, wall=time.perf_counter() - started, argv=self.command,
                            notes=list(self.notes))


class _Notes(list[str]):
    """The run's warnings: each note is kept and logged once, as it happens."""

    def append(self, text: str) -> None:
        if text not in self:
            log.info("%s", text)
            super().append(text)

    def extend(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.append(text)
