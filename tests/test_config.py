"""RenderConfig: validation messages, inference, serialisation, files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchrl_render import ConfigError, RenderConfig
from torchrl_render.backends import BACKENDS
from torchrl_render.writers import WRITERS

BASE = {"policy": "pkg.policy:make", "env": "pkg.env:make"}


def cfg(**kw):
    return RenderConfig(**{**BASE, **kw})


def test_torchrl_render_positional_order_is_kept():
    c = RenderConfig("policy.pt", "p:make", "e:make")
    assert (str(c.ckpt), c.policy, c.env) == ("policy.pt", "p:make", "e:make")


@pytest.mark.parametrize("name", WRITERS.names())
def test_format_inferred_from_every_registered_suffix(name):
    entry = WRITERS.entry(name)
    out = "run" + entry.suffixes[0] if entry.suffixes else "run_folder"
    assert cfg(out=out).format == name


def test_default_format_and_out():
    c = cfg()
    assert c.format == "mp4" and c.out == Path("render.mp4")
    assert cfg(format="gif").out == Path("render.gif")


def test_suffix_contradicting_format_is_refused():
    with pytest.raises(ConfigError) as exc:
        cfg(out="run.gif", format="mp4")
    msg = str(exc.value)
    assert "'.gif' says gif, but format is 'mp4'" in msg and "Fix:" in msg


def test_unknown_format_did_you_mean():
    with pytest.raises(ConfigError, match=r"unknown format 'mp5'\. Did you mean 'mp4'\?"):
        cfg(format="mp5")


def test_unknown_backend_lists_choices():
    with pytest.raises(ConfigError) as exc:
        cfg(render_backend="mujuco")
    assert "Did you mean 'mujoco'?" in str(exc.value)
    for name in BACKENDS.names():
        assert name in str(exc.value)


def test_nested_keys_parsed():
    c = cfg(obs_key="agent.obs", action_key=("agent", "action"), reward_key="reward")
    assert c.obs_key == ("agent", "obs") and c.action_key == ("agent", "action") and c.reward_key == "reward"


@pytest.mark.parametrize("field,value,fragment", [
    ("max_steps", 0, "max_steps must be at least 1"),
    ("max_steps", -3, "max_steps must be at least 1"),
    ("num_trajs", 0, "num_trajs must be at least 1"),
    ("fps", 0, "fps must be a positive number"),
    ("fps", -1.5, "fps must be a positive number"),
    ("fps", float("nan"), "fps must be a positive number"),
    ("width", 0, "width must be at least 1"),
    ("height", 100000, "height is too large"),
    ("num_trajs", "3", "num_trajs has the wrong type"),
    ("num_trajs", True, "num_trajs has the wrong type"),
    ("overwrite", "yes", "overwrite has the wrong type"),
    ("camera_layout", "diagonal", "camera_layout must be one of single, grid"),
    ("render_quality", "fsat", "Did you mean 'fast'?"),
    ("video_preset", "veryfst", "Did you mean 'veryfast'?"),
    ("exploration_mode", "greedy", "exploration_mode must be one of"),
    ("device", "gpu", "device is not a device"),
    ("video_crf", 60, "video_crf is out of range"),
    ("obs_key", "", "obs_key is not a TensorDict key"),
])
def test_bad_values_name_field_expected_and_got(field, value, fragment):
    with pytest.raises(ConfigError) as exc:
        cfg(**{field: value})
    msg = str(exc.value)
    assert fragment in msg and "Got:" in msg


def test_missing_policy_or_env():
    with pytest.raises(ConfigError, match="no policy was given.*--policy"):
        RenderConfig(env="e:m")
    with pytest.raises(ConfigError, match="no env was given.*--env"):
        RenderConfig(policy="p:m")


def test_notebook_mode_needs_ipynb():
    with pytest.raises(ConfigError, match="needs format='ipynb'"):
        cfg(notebook_rollout_mode="live")


def test_kwargs_inline_json_and_errors(tmp_path):
    assert cfg(env_kwargs='{"a": 1}').env_kwargs == {"a": 1}
    with pytest.raises(ConfigError, match="env_kwargs is not valid JSON"):
        cfg(env_kwargs="{a: 1}")
    with pytest.raises(ConfigError, match="must be inline JSON or a file"):
        cfg(policy_kwargs="a=1")


def test_to_dict_round_trip_and_json():
    c = cfg(obs_key="a.b", camera="front,side", out="x.gif", max_steps=5)
    data = json.loads(c.to_json())
    again = RenderConfig.from_dict(data)
    assert again == c
    assert data["obs_key"] == "a.b" and data["camera"] == ["front", "side"]


def test_callable_factories_serialise_by_name():
    def make():
        pass
    data = RenderConfig(policy=make, env=make).to_dict()
    assert data["policy"].endswith(":test_callable_factories_serialise_by_name.<locals>.make")


@pytest.mark.parametrize("suffix,text", [
    (".json", '{"policy": "a:b", "env": "c:d", "num_trajs": 2}'),
    (".yaml", "policy: a:b\nenv: c:d\nnum_trajs: 2\n"),
    (".toml", 'policy = "a:b"\nenv = "c:d"\nnum_trajs = 2\n'),
])
def test_from_file_each_format(tmp_path, suffix, text):
    path = tmp_path / f"cfg{suffix}"
    path.write_text(text)
    c = RenderConfig.from_file(path, max_steps=3)
    assert (c.policy, c.env, c.num_trajs, c.max_steps) == ("a:b", "c:d", 2, 3)


@pytest.mark.parametrize("suffix,text,kind", [
    (".json", '{"policy": ', "JSON"), (".yaml", "policy: [a\n", "YAML"), (".toml", "policy = \n", "TOML")])
def test_invalid_config_files(tmp_path, suffix, text, kind):
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"is not valid {kind}"):
        RenderConfig.from_file(path)


def test_unknown_key_in_file_did_you_mean(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"policy": "a:b", "env": "c:d", "num_traj": 2}')
    with pytest.raises(ConfigError, match=r"unknown config key 'num_traj'\. Did you mean 'num_trajs'\?"):
        RenderConfig.from_file(path)


def test_missing_config_file():
    with pytest.raises(ConfigError, match="does not exist"):
        RenderConfig.from_file("nope.yaml")
