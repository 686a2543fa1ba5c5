"""The stages of one run, each a function of what it needs: the config as the run uses it, the checkpoint's
digest, the engine (with torchrl's env workers where frames are made in them) and the render backend.

:class:`~torchrl_render.api.run.Run` calls them in order; each takes the earlier stages' results and gives its
own, so what flows between them is in the signatures.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from ..backends.base import RenderBackend, backend_class
from ..backends.factory import make_backend
from ..backends.mujoco import free_gymnasium_gl
from ..backends.null import NullBackend
from ..checkpoint import checkpoint_hash
from ..config import RenderConfig
from ..contracts import Payload, UserEnv
from ..engine import Engine
from ..errors import BackendUnavailable, ConfigError
from ..policies import PolicyRunner
from ..rerun import refuse_batched_env
from ..resolve import resolve
from ..selection import Selector, needs_two_passes, parse_selectors
from ..sink import rendered_range
from ..writers import WRITERS

__all__ = ["Needs", "build_engine", "check_devices", "checkpoint_digest", "choose_backend", "close_quietly",
           "envs_for_the_episodes", "one_layout_per_camera_set", "two_pass_selectors"]

log = logging.getLogger("torchrl_render")


@dataclasses.dataclass(frozen=True)
class Needs:
    """What the run's outputs need of the rollout: frames for the format (``format_frames``) or for
    ``RenderResult.frames`` too (``frames``), MuJoCo states (``state``: the 3-D page), a window (``viewer``), and
    the render_mode the env is built with for them."""

    format_frames: bool
    frames: bool
    state: bool
    viewer: bool
    render_mode: str | None


# -- the config as the run uses it -----------------------------------------------------------------------------

def one_layout_per_camera_set(cfg: RenderConfig, notes: list[str]) -> RenderConfig:
    """Several cameras with the ``single`` layout (the default) would show only the first: tile them."""
    if len(cfg.camera) < 2 or cfg.camera_layout != "single":
        return cfg
    notes.append(f"camera_layout 'single' shows one camera, but {len(cfg.camera)} were asked for "
                 f"({', '.join(cfg.camera)}): tiled them with camera_layout 'grid' (--camera-layout horizontal, "
                 "vertical or separate chooses another layout)")
    return dataclasses.replace(cfg, camera_layout="grid")


def envs_for_the_episodes(cfg: RenderConfig, notes: list[str]) -> RenderConfig:
    """More envs than episodes: the extra envs would never get one, so as many envs as episodes run."""
    if cfg.num_trajs is None or cfg.num_envs <= cfg.num_trajs:
        return cfg
    notes.append(f"num_envs={cfg.num_envs} is more than num_trajs={cfg.num_trajs}: ran {cfg.num_trajs} env(s), "
                 "one per episode (the others would have had no episode to run)")
    return dataclasses.replace(cfg, num_envs=cfg.num_trajs)


def two_pass_selectors(cfg: RenderConfig) -> tuple[Selector, ...] | None:
    """The run's selectors when they need its numbers (two passes); ``--max-episodes-rendered N`` among
    them is ``first:N``. None: a single pass."""
    selectors = parse_selectors(cfg.render_select)
    if not needs_two_passes(selectors):
        return None
    if cfg.max_episodes_rendered is not None:
        selectors += (Selector("first", count=cfg.max_episodes_rendered),)
    return selectors


def check_devices(cfg: RenderConfig) -> None:
    """Refuses a device this machine does not have, before anything is built."""
    wanted = {d for d in (cfg.device, cfg.policy_device, cfg.env_device) if d is not None and d != "cpu"}
    if not wanted:
        return
    import torch

    for device in sorted(wanted):
        kind, _, index = device.partition(":")
        backend = getattr(torch, kind, None)
        available = backend is not None and bool(backend.is_available())
        count = backend.device_count() if backend is not None and available and hasattr(backend, "device_count") \
            else (1 if available else 0)
        if not available or (index and int(index) >= count):
            raise ConfigError(f"device {device!r} is not available on this machine",
                              expected="cpu" + (f" or {kind}:0..{count - 1}" if count else ""), got=device,
                              fix="pass --device cpu (and --policy-device/--env-device cpu)")


# -- the checkpoint --------------------------------------------------------------------------------------------

def checkpoint_digest(path: str | Path) -> str:
    """The checkpoint's SHA-256, through ``torchrl_render.artifacts.checkpoint_hash`` when that module is
    loaded (looked up at call time, as torchrl.render's pipeline does, so a script that imported it and
    replaced the function there sees it used), else :func:`~torchrl_render.checkpoint.checkpoint_hash`, the
    same function. The module is found in ``sys.modules``, not imported: it sits above api (torchrl.render's
    module path, a face over compat, which imports api)."""
    artifacts = sys.modules.get(f"{__name__.split('.')[0]}.artifacts")
    hash_of: Callable[[str | Path], str] = artifacts.checkpoint_hash if artifacts is not None else checkpoint_hash
    return hash_of(path)


# -- the engine and the backend --------------------------------------------------------------------------------

def build_engine(cfg: RenderConfig, env: UserEnv, policy: PolicyRunner, payload: Payload, needs: Needs,
                 selectors: tuple[Selector, ...] | None, notes: list[str], stack: ExitStack) -> Engine:
    """The run's engine; with torchrl env workers (torchrl path, K > 1), those too, closed by ``stack``, with the
    backend injected into them when frames are made there (a two-pass selection films in this process)."""
    entry = WRITERS.entry(cfg.format_name)
    data_format = not entry.needs_frames and entry.needs_steps
    reward_fn = resolve(cfg.reward_fn, "reward_fn") if cfg.reward_fn is not None else None
    films = (needs.frames or needs.state or needs.viewer) and selectors is None
    if selectors is not None:
        refuse_batched_env(env)
    engine = Engine(cfg, env, policy, payload, needs.render_mode, rendered_range(cfg) if films else range(0),
                    keep=cfg.trajectories or data_format, infos=data_format and entry.needs_infos,
                    reward_fn=reward_fn, notes=notes)
    if engine.frames_in_workers and getattr(env, "_torchrl_render_batched", False):  # batched already
        engine.batched = env
    elif engine.frames_in_workers:
        from ..engine.workers import close_batched, make_batched_env

        frames = partial(make_backend, cfg) if needs.frames and selectors is None else None  # in the workers
        batched = make_batched_env(cfg, payload, needs.render_mode, frames, notes, engine.info)
        stack.callback(close_quietly, batched, close_batched)
        engine.batched = policy.adapt_env(batched)
    return engine


def choose_backend(cfg: RenderConfig, env: UserEnv, engine: Engine, needs: Needs,
                   selectors: tuple[Selector, ...] | None, notes: list[str]) -> RenderBackend:
    """The backend that draws this process's frames: none where the env workers draw them; ``null`` when no
    frames are needed (unless one is named); a backend that cannot start is an error only when the format
    needs its frames (``RenderResult.frames`` alone goes without, with a note)."""
    if engine.frames_in_workers and selectors is None:  # frames are rendered inside the env workers
        backend: RenderBackend = NullBackend()
        backend.name = f"{cfg.render_backend} (in env workers)"
        return backend
    name = cfg.render_backend if needs.frames else "null"
    if not needs.frames and cfg.render_backend not in ("auto", "null"):
        name = cfg.render_backend
    try:
        backend = backend_class(name).from_config(env, cfg)
    except BackendUnavailable as exc:
        if needs.format_frames:
            raise
        backend = NullBackend()
        notes.append(f"no frames for RenderResult.frames: {exc.what}")
    notes.extend(backend.notes)
    if needs.frames and cfg.render_quality not in backend.render_qualities:
        notes.append(f"render_quality={cfg.render_quality!r} was not applied: the {backend.name!r} "
                     "backend draws with the env's own settings (--render-backend mujoco applies it "
                     "to MuJoCo envs)")
    return backend


def close_quietly(env: UserEnv, close: Callable[[UserEnv], None] | None = None) -> None:
    """Closes ``env`` (the user's, or the batch of its copies the engine's workers step; with ``close(env)`` when
    given) and logs what closing raised."""
    try:
        free_gymnasium_gl(env)  # gymnasium leaves its GL objects to the collector otherwise
        close(env) if close is not None else env.close()
    except Exception as exc:  # closing must not hide the run's own error
        log.warning("closing the env raised %s: %s", type(exc).__name__, exc)
