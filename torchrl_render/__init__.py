"""torchrl_render: see and measure trained PyTorch policies.

Roll a policy out in its environment, stream rendered frames into browser-playable
videos (and other formats), and get per-episode metrics and the rollouts as
TensorDicts, from one command or one function call.

Example:
    >>> import torchrl_render
    >>> cfg = torchrl_render.RenderConfig(ckpt="policy.pt", policy="mypkg.policy:make",
    ...                                   env="HalfCheetah-v5", out="run.mp4")
    >>> cfg.format
    'mp4'
"""

from __future__ import annotations

from .api import render_policy
from .checkpoint import load_checkpoint, save_render_checkpoint
from .config import RenderConfig, RenderEnvSpec, RenderPolicySpec
from .data import Artifact, FrameBundle, RenderResult
from .errors import (BackendUnavailable, CheckpointError, ConfigError, EnvError, NoFramesError, OutputExistsError,
                     PolicyError, RenderError, ResolveError, RolloutError, UnsafeCheckpointError, WriterError)
from .notebook import show
from .storage import load_rollouts
from .sweep import SweepConfig, SweepResult, sweep

__version__ = "0.1.0"

__all__ = [
    "Artifact",
    "BackendUnavailable",
    "CheckpointError",
    "ConfigError",
    "EnvError",
    "FrameBundle",
    "NoFramesError",
    "OutputExistsError",
    "PolicyError",
    "RenderConfig",
    "RenderEnvSpec",
    "RenderError",
    "RenderPolicySpec",
    "RenderResult",
    "ResolveError",
    "RolloutError",
    "SweepConfig",
    "SweepResult",
    "UnsafeCheckpointError",
    "WriterError",
    "__version__",
    "load_checkpoint",
    "load_rollouts",
    "render_policy",
    "save_render_checkpoint",
    "show",
    "sweep",
]
