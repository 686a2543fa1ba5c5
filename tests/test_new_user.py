"""What a new user hits (the items that are not a one-paragraph CLI error).

The user errors of that issue are rows of tests/test_bad_inputs.py's catalogue; this file holds
the items whose fix is a note, a working run, a shorter repr, a cleaner folder or a doc.
Each test names the issue item it covers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchrl_render import RenderConfig, render_policy

from helpers.paths import ROOT, TESTS

TINY = {"policy": "helpers.tinyenv:make_policy", "env": "helpers.tinyenv:make_env", "max_steps": 3}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}


# -- 1: a non-strict load says what it left out ------------------------------------------------------------------

def test_non_strict_load_notes_missing_and_unexpected_keys(tmp_path):
    """Item 1: --no-strict-load names the keys it did not load; the weights it did load are used."""
    from helpers.tinyenv import make_policy

    net = make_policy()
    weight = torch.full_like(net[0].weight, 0.25)
    torch.save({"model_state_dict": {"0.weight": weight, "head.weight": torch.ones(2)}}, tmp_path / "p.pt")
    result = render_policy(RenderConfig(**TINY, ckpt=tmp_path / "p.pt", strict_load=False, format="jsonl",
                                        out=tmp_path / "run.jsonl"))
    note = next(w for w in result.warnings if "policy weights" in w)
    assert "partially loaded" in note and "missing keys ['0.bias']" in note
    assert "unexpected keys ['head.weight']" in note
    obs = result.trajectories[0]["observation"][0]
    expected = torch.tanh(obs @ weight.T + make_policy()[0].bias)   # the loaded weight, the factory's bias
    assert torch.allclose(result.trajectories[0]["action"][0], expected.to(result.trajectories[0]["action"].dtype))


# -- 2: several cameras with the single layout -------------------------------------------------------------------

@pytest.mark.slow
def test_several_cameras_with_the_single_layout_are_tiled_with_a_note(tmp_path):
    """Item 2: --camera 0,1 with the default layout shows both cameras (grid) and says so."""
    from helpers.mediaprobe import probe_mp4

    result = render_policy(RenderConfig(policy="helpers.badfactories:zero_action_policy",
                                        env="dm_control/cartpole-balance",
                                        obs_key="position", render_backend="mujoco", camera="0,1", max_steps=2,
                                        width=64, height=64,
                                        render_quality="fast", out=tmp_path / "run.mp4"))
    assert any("camera_layout 'single' shows one camera" in w and "grid" in w for w in result.warnings)
    facts = probe_mp4(result.artifact_path)
    assert (facts["width"], facts["height"]) == (128, 64)
    assert result.metadata["config"]["camera_layout"] == "grid"


# -- 3: random weights and a stochastic flag that does nothing ----------------------------------------------------

def test_no_checkpoint_is_noted(tmp_path):
    """Item 3: without --ckpt the factory's own (often random) weights are evaluated: a note says so."""
    result = render_policy(RenderConfig(**TINY, format="jsonl", out=tmp_path / "run.jsonl"))
    assert any("no checkpoint was given (--ckpt)" in w for w in result.warnings), result.warnings


def test_stochastic_on_a_policy_that_cannot_sample_is_noted(tmp_path):
    """Item 3: --stochastic with a plain tensor policy changes nothing: a note says so."""
    result = render_policy(RenderConfig(**TINY, deterministic=False, format="jsonl", out=tmp_path / "run.jsonl"))
    assert any("--stochastic has no effect" in w for w in result.warnings), result.warnings


def test_stochastic_on_a_probabilistic_actor_is_not_noted(tmp_path):
    """Item 3, the other side: a ProbabilisticActor does sample, so no such note."""
    result = render_policy(RenderConfig(**{**TINY, "policy": "helpers.badfactories:tanh_normal_policy"},
                                        deterministic=False,
                                        format="jsonl", out=tmp_path / "run.jsonl"))
    assert not any("--stochastic has no effect" in w for w in result.warnings), result.warnings


# -- 4: --render-mode reaches a factory that takes it ------------------------------------------------------------

@pytest.mark.slow
def test_render_mode_reaches_a_factory_with_a_render_mode_parameter(tmp_path):
    """Item 4, the working side: a factory with render_mode=None gets --render-mode, and env.render() draws."""
    from helpers.mediaprobe import probe_mp4

    result = render_policy(RenderConfig(policy="helpers.badfactories:zero_action_policy",
                                        env="helpers.badfactories:render_mode_env",
                                        render_mode="rgb_array", render_backend="env", max_steps=2,
                                        out=tmp_path / "run.mp4"))
    assert probe_mp4(result.artifact_path)["frames"] == 3


# -- 7: classic control renders --------------------------------------------------------------------------------

def test_classic_control_renders_a_video(tmp_path, capfd):
    """Item 7: CartPole-v1 renders (pygame is declared and installed); pygame's banner stays out of stdout."""
    from helpers.mediaprobe import decode_frames

    result = render_policy(RenderConfig(policy="helpers.badfactories:cartpole_policy", env="CartPole-v1", max_steps=4,
                                        out=tmp_path / "run.mp4"))
    frames = list(decode_frames(result.artifact_path))
    assert len(frames) == 5 and frames[0].std() > 10           # the reset frame and 4 steps, a drawn cart
    assert "pygame" not in capfd.readouterr().out


# -- 8: output names FFmpeg would read as a protocol ---------------------------------------------------------------

def test_an_output_name_with_a_colon_is_a_file(tmp_path, monkeypatch):
    """Item 8: --out seed0:best.mp4 writes that file (FFmpeg would read 'seed0:' as a protocol)."""
    from helpers.mediaprobe import probe_mp4

    monkeypatch.chdir(tmp_path)
    result = render_policy(RenderConfig(**TINY, from_pixels=True, out="seed0:best.mp4"))
    assert (tmp_path / "seed0:best.mp4").is_file() and probe_mp4(tmp_path / "seed0:best.mp4")["frames"] == 4
    assert result.artifact_path.name == "seed0:best.mp4"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seed0:best.mp4", "seed0:best.mp4.metadata.json"]


# -- 9: split trajectories with fewer rendered episodes -----------------------------------------------------------

def test_split_trajectories_with_fewer_rendered_episodes(tmp_path):
    """Item 9: --split-trajectories --max-episodes-rendered 2 --num-trajs 3: two videos, three episodes measured."""
    from helpers.mediaprobe import probe_mp4

    result = render_policy(RenderConfig(**TINY, from_pixels=True, split_trajectories=True, max_episodes_rendered=2,
                                        num_trajs=3, out=tmp_path / "run.mp4"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.mp4.metadata.json", "run_traj0.mp4", "run_traj1.mp4"]
    assert [probe_mp4(p)["frames"] for p in result.frame_paths] == [4, 4]
    assert len(result.metrics["per_episode"]) == 3


# -- 12: instances where a factory was expected -------------------------------------------------------------------

def test_module_and_env_instances_are_used_as_is(tmp_path):
    """Item 12: policy=<nn.Module>, env=<EnvBase> are used as they are (not called as factories)."""
    from helpers.tinyenv import TinyEnv, make_policy

    policy = make_policy()
    result = render_policy(RenderConfig(policy=policy, env=TinyEnv(), max_steps=2, format="jsonl",
                                        out=tmp_path / "run.jsonl"))
    assert len(result.trajectories[0]) == 2
    assert any("policy was given as an object (Sequential)" in w for w in result.warnings), result.warnings
    assert result.metadata["config"]["policy"].startswith("<Sequential instance")


def test_an_env_instance_with_several_envs_is_refused():
    """Item 12: K > 1 env slots need a factory (each worker builds its own env)."""
    from torchrl_render import ConfigError

    from helpers.tinyenv import TinyEnv

    with pytest.raises(ConfigError, match="an env object cannot be copied into 2 env workers") as exc:
        render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env=TinyEnv(), num_envs=2, num_trajs=2,
                                   format="jsonl"))
    assert "env=lambda: MyEnv()" in str(exc.value) and "\n" not in str(exc.value)


# -- 14: MUJOCO_GL=osmesa without libOSMesa ------------------------------------------------------------------------

def _osmesa_loads() -> bool:
    import ctypes
    import ctypes.util

    for name in ("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so", ctypes.util.find_library("OSMesa")):
        try:
            if name:
                ctypes.CDLL(name)
                return True
        except OSError:
            pass
    return False


@pytest.mark.slow
def test_osmesa_missing_is_named(tmp_path):
    """Item 14: MUJOCO_GL=osmesa on a machine without libOSMesa: the message names OSMesa, even for jsonl.

    Runs in a subprocess (MuJoCo picks its GL backend once, at import). This machine has no libOSMesa
    (tools/test_setup.sh installs libEGL only); where it has one, its absence cannot be simulated for
    PyOpenGL's loader (it asks ldconfig's cache), so the test is skipped there.
    """
    if _osmesa_loads():
        pytest.skip("libOSMesa is installed here; the missing-library path cannot be reached for real")
    env = {**_env(), "MUJOCO_GL": "osmesa"}
    env.pop("PYOPENGL_PLATFORM", None)
    proc = subprocess.run([sys.executable, "-m", "torchrl_render", "--policy", "helpers.tinyenv:make_policy", "--env",
                           "InvertedPendulum-v5", "--max-steps", "2", "--out", str(tmp_path / "run.jsonl")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("torchrl-render: error: MUJOCO_GL=osmesa, but libOSMesa cannot be loaded")
    assert "apt-get install libosmesa6" in proc.stderr and "MUJOCO_GL=egl" in proc.stderr
    assert "gymnasium[mujoco]" not in proc.stderr and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


# -- 16: YAML numbers as camera names ----------------------------------------------------------------------------

def test_yaml_camera_numbers_are_camera_names(tmp_path):
    """Item 16: ``camera: 0`` (YAML reads an int) means what --camera 0 means."""
    (tmp_path / "a.yaml").write_text("policy: a:b\nenv: c:d\ncamera: 0\n")
    (tmp_path / "b.yaml").write_text("policy: a:b\nenv: c:d\ncamera: [0, track]\n")
    assert RenderConfig.from_file(tmp_path / "a.yaml").camera == ["0"]
    assert RenderConfig.from_file(tmp_path / "b.yaml").camera == ["0", "track"]
    assert RenderConfig(policy="a:b", env="c:d", camera=-1).camera == ["-1"]


# -- 17: MuJoCo's warnings and MUJOCO_LOG.TXT --------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "dm_control/cheetah-run"])
def test_mujoco_warnings_go_to_the_notes_and_no_log_file_is_left(tmp_path, env_id):
    """Item 17: no MuJoCo/deprecation warning on stderr, no MUJOCO_LOG.TXT in the working folder."""
    out = tmp_path / "out"
    out.mkdir()
    obs = ["--obs-key", "position"] if env_id.startswith("dm_control") else []
    proc = subprocess.run([sys.executable, "-m", "torchrl_render", "--policy", "helpers.badfactories:zero_policy",
                           "--env",
                           env_id, *obs, "--max-steps", "3", "--width", "64", "--height", "64", "--render-quality",
                           "fast",
                           "--out", str(out / "run.mp4")], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "settotalmass" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["run.mp4", "run.mp4.metadata.json"]
    # the model file's deprecation is not the user's to fix: --debug shows it, the notes do not
    assert not any("settotalmass" in w for w in json.loads((out / "run.mp4.metadata.json").read_text())["warnings"])


def test_mujoco_warning_callback_notes_instead_of_writing_a_log(tmp_path, monkeypatch):
    """Item 17: a mju_warning raised by MuJoCo itself reaches our notes, and MUJOCO_LOG.TXT is not written."""
    import mujoco

    from torchrl_render.envs.mjlog import captured_mujoco_warnings

    monkeypatch.chdir(tmp_path)
    model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><joint/><geom size='.1'/></body></worldbody>"
                                           "</mujoco>")
    data = mujoco.MjData(model)
    data.qpos[0] = float("nan")  # MuJoCo warns (bad qpos) and resets the data
    with captured_mujoco_warnings() as notes:
        mujoco.mj_step(model, data)
    assert any("Nan, Inf or huge value in QPOS" in n for n in notes), notes
    assert list(tmp_path.iterdir()) == []


# -- 18: the notebook report ---------------------------------------------------------------------------------------

def test_linked_video_note_explains_the_cumulative_limit():
    """Item 18: a 3 KiB video linked under a 4 KiB limit says the videos before it used the rest."""
    from torchrl_render.notebook.report import ReportVideo, _linked_note

    note = _linked_note(ReportVideo(2, "run_2.mp4", 3 * 1024, limit_bytes=4 * 1024, budget_left=1024))
    assert "over the" not in note
    assert "the videos embedded before it already use 3 KiB of the 4 KiB embedding limit" in note
    alone = _linked_note(ReportVideo(0, "run_0.mp4", 5 * 1024, limit_bytes=4 * 1024, budget_left=4 * 1024))
    assert "this video is 5 KiB, over the 4 KiB embedding limit" in alone


def test_notebook_title_shortens_paths_and_config_normalises_them(tmp_path):
    """Item 18: the title names files, not long absolute paths; paths are normalised (no 'w4/../w1')."""
    from torchrl_render.notebook.paths import portable_config
    from torchrl_render.notebook.report import _title_source

    long = "/" + "/".join(["a_rather_long_folder_name"] * 6)
    source = _title_source({"policy": f"{long}/policy.py:make", "env": f"{long}/env.py:make"}, {}, "saved", None, None)
    heading = source.splitlines()[0]
    assert heading == "# Policy report: policy.py:make in env.py:make", heading
    (tmp_path / "w1").mkdir()
    (tmp_path / "w4").mkdir()
    cfg = RenderConfig(policy=f"{tmp_path}/w4/../w1/p.py:make", env="c:d",
                       out=tmp_path / "w4" / ".." / "w1" / "r.ipynb")
    data = portable_config(cfg)
    assert data["out"] == str(tmp_path / "w1" / "r.ipynb") and data["policy"] == f"{tmp_path}/w1/p.py:make"


def test_recorded_command_has_no_flag_the_user_did_not_type():
    """Item 18: --quiet turns the progress bar off; the recorded command does not gain --no-progress."""
    from torchrl_render.notebook.report import equivalent_command

    assert equivalent_command({"policy": "m:p", "env": "e:f",
                               "progress": False}) == "torchrl-render --policy m:p --env e:f"


# -- 19: a short repr ----------------------------------------------------------------------------------------------

def test_render_result_repr_is_short(tmp_path):
    """Item 19: print(result) shows paths, a metrics summary and counts, not every trajectory."""
    result = render_policy(RenderConfig(**TINY, from_pixels=True, num_trajs=2, out=tmp_path / "run.mp4"))
    text = repr(result)
    assert len(text) < 600 and text.count("\n") <= 8, text
    assert text.startswith("RenderResult(") and str(tmp_path / "run.mp4") in text
    agg = result.metrics["aggregated"]
    assert f"return={agg['avg_sum_reward']:.3g}" in text and "episodes=2" in text and "trajectories=2" in text
    assert f"warnings={len(result.warnings)}" in text and str(result) == text


# -- 20: the docs say what the code does ---------------------------------------------------------------------------

def test_readme_names_the_default_artifact():
    """Item 20: without ``out`` the artifact is render.mp4 (the README said run.mp4)."""
    text = (ROOT / "README.md").read_text()
    for comment in re.findall(r"artifact_path\s*#\s*(\S+)", text):
        assert comment == "render.mp4" or "out=" in text, comment
    assert RenderConfig(policy="a:b", env="c:d").out == Path("render.mp4")
    assert "artifact_path  # run.mp4" not in text


def test_user_guide_halfcheetah_video_follows_the_cheetah():
    """Item 20: the user guide's HalfCheetah example uses the tracking camera (the default one is static)."""
    text = (ROOT / "docs" / "user_guide.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if 'env="HalfCheetah-v5"' in block and ("out=" in block or "render_policy" in block):
            assert 'camera="track"' in block, block


def test_metrics_semantics_and_the_video_library_choice_are_documented():
    """Item 20: which std and CI, what truncated means at max_steps, and why PyAV rather than imageio."""
    guide = (ROOT / "docs" / "user_guide.md").read_text()
    section = guide.split("### What the metrics mean", 1)[1].split("\n## ", 1)[0]
    assert "std_sum_reward" in section and "truncated" in section and "max_steps" in section
    formats = (ROOT / "docs" / "formats.md").read_text()
    why = formats.split("## Why PyAV, not imageio", 1)[1].split("\n## ", 1)[0]
    for word in ("stream", "faststart", "yuv420p", "imageio"):
        assert word in why, word
