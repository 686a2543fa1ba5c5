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

from ._version import __version__
from .api import render_policy
from .checkpoint import load_checkpoint, save_render_checkpoint
from .compat import (
                     TensorDictPolicyAdapter,
                     add_step_counter,
                     call_with_supported_kwargs,
                     checkpoint_hash,
                     import_from_string,
                     infer_state_dict,
                     key_to_string,
                     load_render_policy,
                     make_render_env,
                     normalize_env,
                     normalize_policy,
                     parse_nested_key,
                     seed_env,
)
from .compat.spool import collect_render_rollouts, write_render_artifact
from .config import (
                     CameraLayout,
                     EnvBackendName,
                     ExplorationMode,
                     NotebookRenderBackendName,
                     NotebookRolloutMode,
                     RenderBackendName,
                     RenderConfig,
                     RenderEnvSpec,
                     RenderFormat,
                     RenderPolicySpec,
)
from .data import Artifact, FrameBundle, RenderResult
from .errors import (
                     BackendUnavailable,
                     CheckpointError,
                     ConfigError,
                     EnvError,
                     NoFramesError,
                     OutputExistsError,
                     PolicyError,
                     RenderError,
                     ResolveError,
                     RolloutError,
                     UnsafeCheckpointError,
                     UnsafeRolloutsError,
                     WriterError,
)
from .live.notebook_viewer import (
                     MujocoStateReader,
                     display_mujoco_wasm_viewer,
                     extract_qpos_trajectory,
                     play_mujoco_wasm_trajectory,
                     send_mujoco_wasm_qpos,
                     write_mujoco_wasm_viewer,
)
from .notebook import show
from .storage import load_rollouts
from .sweep import SweepConfig, SweepResult, sweep

__all__ = [
    "Artifact",
    "BackendUnavailable",
    "CameraLayout",
    "CheckpointError",
    "ConfigError",
    "EnvBackendName",
    "EnvError",
    "ExplorationMode",
    "FrameBundle",
    "MujocoStateReader",
    "NoFramesError",
    "NotebookRenderBackendName",
    "NotebookRolloutMode",
    "OutputExistsError",
    "PolicyError",
    "RenderBackendName",
    "RenderConfig",
    "RenderEnvSpec",
    "RenderError",
    "RenderFormat",
    "RenderPolicySpec",
    "RenderResult",
    "ResolveError",
    "RolloutError",
    "SweepConfig",
    "SweepResult",
    "TensorDictPolicyAdapter",
    "UnsafeCheckpointError",
    "UnsafeRolloutsError",
    "WriterError",
    "__version__",
    "add_step_counter",
    "call_with_supported_kwargs",
    "checkpoint_hash",
    "collect_render_rollouts",
    "display_mujoco_wasm_viewer",
    "extract_qpos_trajectory",
    "import_from_string",
    "infer_state_dict",
    "key_to_string",
    "load_checkpoint",
    "load_render_policy",
    "load_rollouts",
    "make_render_env",
    "normalize_env",
    "normalize_policy",
    "parse_nested_key",
    "play_mujoco_wasm_trajectory",
    "render_policy",
    "save_render_checkpoint",
    "seed_env",
    "send_mujoco_wasm_qpos",
    "show",
    "sweep",
    "write_mujoco_wasm_viewer",
    "write_render_artifact",
]
