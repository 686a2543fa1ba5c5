"""The public surface: a curated, sorted __all__, a light import, doc examples."""

from __future__ import annotations

import subprocess
import sys

import pytest

import torchrl_render

EXPECTED = [
    "Artifact", "BackendUnavailable", "CheckpointError", "ConfigError", "EnvError", "FrameBundle", "NoFramesError",
    "OutputExistsError", "PolicyError", "RenderConfig", "RenderEnvSpec", "RenderError", "RenderPolicySpec",
    "RenderResult", "ResolveError", "RolloutError", "SweepConfig", "SweepResult", "UnsafeCheckpointError",
    "UnsafeRolloutsError",
    "WriterError", "__version__", "load_checkpoint", "load_rollouts", "render_policy", "save_render_checkpoint",
    "show", "sweep",
]
#: torchrl.render's names that we export too; tests/compat/test_torchrl_compat.py checks them against
#: torchrl.render.__all__ (with the MuJoCo viewer names).
TORCHRL_RENDER_NAMES = [
    "CameraLayout", "EnvBackendName", "ExplorationMode", "MujocoStateReader", "NotebookRenderBackendName",
    "NotebookRolloutMode", "RenderBackendName", "RenderFormat", "TensorDictPolicyAdapter", "add_step_counter",
    "call_with_supported_kwargs", "checkpoint_hash", "collect_render_rollouts", "display_mujoco_wasm_viewer",
    "extract_qpos_trajectory", "import_from_string", "infer_state_dict", "key_to_string", "load_render_policy",
    "make_render_env", "normalize_env", "normalize_policy", "parse_nested_key", "play_mujoco_wasm_trajectory",
    "seed_env", "send_mujoco_wasm_qpos", "write_mujoco_wasm_viewer", "write_render_artifact",
]


def test_all_is_curated_and_sorted():
    assert torchrl_render.__all__ == sorted(torchrl_render.__all__) == sorted(EXPECTED + TORCHRL_RENDER_NAMES)
    for name in torchrl_render.__all__:
        assert hasattr(torchrl_render, name)


def test_torchrl_render_names_are_kept():
    """Users of torchrl.render switch by changing the import: same public names and config fields."""
    import dataclasses

    from torchrl.render import config as theirs
    ours = {f.name for f in dataclasses.fields(torchrl_render.RenderConfig)}
    mujoco_wasm_only = {"notebook_render_backend", "mujoco_model_path", "mujoco_asset_paths", "mujoco_qpos_key",
                        "notebook_viewer_port"}
    assert {f.name for f in dataclasses.fields(theirs.RenderConfig)} - mujoco_wasm_only <= ours
    for cls in ("RenderEnvSpec", "RenderPolicySpec", "FrameBundle", "RenderResult"):
        assert {f.name for f in dataclasses.fields(getattr(theirs, cls))} <= \
            {f.name for f in dataclasses.fields(getattr(torchrl_render, cls))}, cls


@pytest.mark.slow
def test_import_and_help_stay_light():
    code = ("import sys, torchrl_render, torchrl_render.cli as c; c.build_parser().format_help();"
            "heavy = [m for m in ('torch', 'av', 'PIL', 'mujoco', 'dm_control', 'gymnasium', 'torchrl') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_package_never_imports_the_competitor():
    import re
    from pathlib import Path
    root = Path(torchrl_render.__file__).parent
    pattern = re.compile(r"^\s*(from|import)\s+torchrl\.render|import_module\(['\"]torchrl\.render", re.M)
    for path in root.rglob("*.py"):
        assert not pattern.search(path.read_text()), path


#: torchrl.render's modules that keep their path here (a change of import reaches the same names).
KEPT_MODULES = ["artifacts", "backends", "checkpoint", "cli", "config", "mujoco_wasm", "notebook", "video"]


@pytest.mark.parametrize("name", KEPT_MODULES)
def test_torchrl_render_module_paths_hold_their_names(name):
    import importlib

    theirs = importlib.import_module(f"torchrl.render.{name}")
    ours = importlib.import_module(f"torchrl_render.{name}")
    assert [n for n in theirs.__all__ if not hasattr(ours, n)] == []
