"""``collect_render_rollouts`` then ``write_render_artifact``: torchrl.render's two steps over our one pipeline.

torchrl.render collects every frame into ``RenderResult.frames`` and encodes them afterwards.
We stream: frames go to the writers while the env steps, so memory stays flat. To keep both
promises, :func:`collect_render_rollouts` runs the same pipeline as
:func:`~torchrl_render.render_policy`, with the env and policy it is given, writing into a *spool*: a
hidden temporary folder beside ``config.out`` that the returned result owns. Encoding happens
there, during the rollout. :func:`write_render_artifact` then moves the finished files to the paths
``config`` names (a rename on the same file system: no re-encoding, no frame in memory) and rewrites
the metadata sidecar with the final paths. A result that is never written removes its spool when
it is garbage-collected. A result built by hand with ``frames`` (``FrameBundle`` lists, as
torchrl.render's) is encoded by our writers instead.

Example:
    >>> from torchrl_render import RenderResult
    >>> RenderResult(None, [], [], {}, []).frames
    []
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from ..api import Run
from ..contracts import Payload, UserEnv, UserPolicy
from ..data import RenderResult, frame_paths
from ..errors import NoFramesError, OutputExistsError
from ..metrics import json_ready
from ..policies import PolicyRunner
from ..storage import commit, write_json_atomic
from ..writers.group import WriterGroup
from . import normalize_env

if TYPE_CHECKING:
    from torchrl.envs import EnvBase

    from ..config import RenderConfig

__all__ = ["collect_render_rollouts", "write_render_artifact"]


class _GivenRun(Run):
    """render_policy's run, with the env and the policy made by the caller (who keeps and closes the env)."""

    def __init__(self, cfg: RenderConfig, env: UserEnv, policy: UserPolicy) -> None:
        super().__init__(cfg, None)
        self.given_env, self.given_policy = env, policy

    def write_sidecars(self, meta: Mapping[str, object]) -> None:
        """The spool's sidecar only: the metadata inside the artifacts is added once they are in place."""
        _write_metadata(self.sidecar, meta)

    def _checkpoint(self) -> tuple[Payload, str | None]:
        payload = getattr(self.given_policy, "checkpoint", None)
        digest = getattr(self.given_policy, "checkpoint_digest", None)
        if payload is None and self.cfg.ckpt is not None:
            return super()._checkpoint()
        return payload, digest

    def _env(self, payload: Payload, stack: ExitStack) -> EnvBase:
        return normalize_env(self.given_env, self.cfg)

    def _policy(self, env: UserEnv, payload: Payload, digest: str | None) -> PolicyRunner:
        runner = getattr(self.given_policy, "runner", None)
        if runner is None:  # a module or callable of the caller's: adapted here, as build_policy would
            return PolicyRunner(getattr(self.given_policy, "policy", self.given_policy), self.cfg, env, self.notes)
        self.notes.extend(runner.notes)
        runner.notes = self.notes
        runner.env = env
        return runner


def _spool_config(config: RenderConfig, spool: Path) -> RenderConfig:
    """``config`` with every output inside ``spool`` under the same names."""
    # the frames stay in the result too, as torchrl.render's collect_render_rollouts returns them
    return dataclasses.replace(
        config, out=spool / config.out_path.name, overwrite=True, artifact_dir=None, result_frames=True,
        metadata=spool / Path(config.metadata).name if config.metadata is not None else config.metadata,
        frame_dir=spool / Path(config.frame_dir).name if config.frame_dir is not None else config.frame_dir)


def collect_render_rollouts(env: UserEnv, policy: UserPolicy, config: RenderConfig) -> RenderResult:
    """Rolls ``policy`` out in ``env`` as ``config`` says; the artifacts wait in the result's spool.

    Args:
        env: From :func:`~torchrl_render.make_render_env` (or any env it accepts); the caller closes it.
        policy: From :func:`~torchrl_render.load_render_policy` (or a module / callable).
        config: The :class:`~torchrl_render.RenderConfig`.

    Returns:
        A :class:`~torchrl_render.RenderResult` with trajectories, metrics and metadata; its paths
        point into the spool until :func:`write_render_artifact` moves the files.
    """
    Run(config, None)._check_outputs()  # the final paths: refuse an existing --out before rolling out
    out_dir = config.out_path.parent
    spool = tempfile.TemporaryDirectory(prefix=".torchrl_render_spool-", dir=out_dir if str(out_dir) else ".")
    result = _GivenRun(_spool_config(config, Path(spool.name)), env, policy).execute()
    result._spool = spool  # type: ignore[attr-defined]  # owned by the result: removed with it
    return result


def write_render_artifact(result: RenderResult, config: RenderConfig) -> RenderResult:
    """Puts ``result``'s artifacts at ``config``'s paths; returns ``result`` with the final paths.

    Args:
        result: From :func:`collect_render_rollouts` (files are moved), or a result whose ``frames``
            hold ``FrameBundle`` lists per trajectory (they are encoded).
        config: The :class:`~torchrl_render.RenderConfig` naming the outputs.
    """
    spool = getattr(result, "_spool", None)
    if spool is None:
        return _encode_frames(result, config)
    real, spooled = Run(config, None), Run(_spool_config(config, Path(spool.name)), None)
    pairs = [(s, r) for gs, gr in zip(spooled.groups, real.groups) for s, r in zip(gs.planned_paths(),
                                                                                   gr.planned_paths())]
    if spooled.rollout_dir is not None:
        assert real.rollout_dir is not None  # the spooled config differs from config only in its folders
        pairs.append((spooled.rollout_dir, real.rollout_dir))
    moves = {s: r for s, r in pairs if s.exists()}
    moves.update({p: real.cfg.out_path.parent / p.name for p in Path(spool.name).iterdir()
                  if p not in moves and p != spooled.sidecar})
    for target in [*moves.values(), real.sidecar]:
        if target.exists() and not config.overwrite:
            raise OutputExistsError(f"{str(target)!r} already exists", got=str(target),
                                    fix="pass --overwrite (overwrite=True) or choose another --out")
    for source, target in moves.items():
        _replace(source, target)
    _rewrite_paths(result, {str(s): str(t) for s, t in moves.items()}, config)
    real.write_sidecars(result.metadata)
    spool.cleanup()
    del result._spool  # type: ignore[attr-defined]
    return result


def _write_metadata(path: Path, meta: Mapping[str, object]) -> None:
    """A metadata sidecar as the run writes its own: NaN as null, anything else unknown as its ``str``."""
    write_json_atomic(path, json_ready(meta), default=str, allow_nan=False)


def _replace(source: Path, target: Path) -> None:
    commit(source, target)  # the spooled file or folder replaces the target (storage's one atomic move)


def _rewrite_paths(result: RenderResult, moved: dict[str, str], config: RenderConfig) -> None:
    def final(path: str | Path) -> Path:
        text = str(path)
        for source, target in moved.items():
            if text == source or text.startswith(source + os.sep):
                return Path(target + text[len(source):])
        return Path(text)

    result.artifact_path = final(result.artifact_path) if result.artifact_path is not None else None
    result.frame_paths = [final(p) for p in result.frame_paths]
    for artifact in result.artifacts:
        artifact.path = final(artifact.path)
    result.metadata["artifacts"] = [a.to_dict() for a in result.artifacts]
    result.metadata["config"] = config.to_dict()


def _encode_frames(result: RenderResult, config: RenderConfig) -> RenderResult:
    """A hand-built result: its frame bundles through our writers (the formats that take frames)."""
    bundles = [bundle for trajectory in result.frames for bundle in trajectory if bundle.frames]
    if not bundles:
        raise NoFramesError("the result holds no frames and no spooled artifact, so there is nothing to write",
                            expected="a result from collect_render_rollouts, or one whose frames hold FrameBundles",
                            got=f"{len(result.frames)} trajectories of frames",
                            fix="pass the result of collect_render_rollouts(env, policy, config)")
    Run(config, None)._check_outputs()
    group = WriterGroup(config, config.out_path)
    try:
        for bundle in bundles:
            group.write(bundle)
    except BaseException:
        group.abort()
        raise
    artifacts = group.close()
    result.artifacts, result.frame_paths = artifacts, frame_paths(artifacts)
    result.artifact_path = artifacts[0].path if artifacts else None
    result.metadata["artifacts"] = [a.to_dict() for a in artifacts]
    _write_metadata(Path(config.metadata or f"{config.out}.metadata.json"), result.metadata)
    return result
