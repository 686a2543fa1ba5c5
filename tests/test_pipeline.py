"""render_policy end to end on TinyEnv: streaming, seeds, metrics, sidecar, atomic outputs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

import pytest
import torch

from torchrl_render import (
    NoFramesError,
    OutputExistsError,
    PolicyError,
    RenderConfig,
    RolloutError,
    WriterError,
    render_policy,
    save_render_checkpoint,
)
from torchrl_render.writers import WRITERS

from helpers.mediaprobe import probe_mp4
from helpers.policies import make_probabilistic_policy
from helpers.tinyenv import TinyEnv


def run(tmp_path, **kw):
    kw.setdefault("out", tmp_path / "run.mp4")
    kw.setdefault("policy", "helpers.tinyenv:make_policy")
    kw.setdefault("env", "helpers.tinyenv:make_env")
    kw.setdefault("from_pixels", True)
    return render_policy(RenderConfig(**kw))


def test_mp4_frame_count_is_sum_of_steps_plus_one(tmp_path):
    result = run(tmp_path, num_trajs=3, seed=10)
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    assert lengths == [5 + (10 + i) % 3 for i in range(3)]           # TinyEnv: length depends on the seed
    info = probe_mp4(result.artifact_path)
    assert (info["codec"], info["pix_fmt"], info["frames"]) == ("h264", "yuv420p", sum(n + 1 for n in lengths))
    assert result.frames == [] and result.artifact_path == tmp_path / "run.mp4"


def test_max_steps_truncates(tmp_path):
    result = run(tmp_path, max_steps=2, num_trajs=2)
    assert [e["length"] for e in result.metrics["per_episode"]] == [2, 2]
    assert all(e["truncated"] and not e["terminated"] for e in result.metrics["per_episode"])
    assert probe_mp4(result.artifact_path)["frames"] == 6


def test_seeds_recorded_and_reproducible(tmp_path):
    a = run(tmp_path, out=tmp_path / "a.mp4", num_trajs=2, seed=3)
    b = run(tmp_path, out=tmp_path / "b.mp4", num_trajs=2, seed=3)
    assert [e["seed"] for e in a.metrics["per_episode"]] == [3, 4]
    assert a.metrics["per_episode"][0]["sum_reward"] == b.metrics["per_episode"][0]["sum_reward"]
    for ta, tb in zip(a.trajectories, b.trajectories):
        assert torch.equal(ta["next", "observation"], tb["next", "observation"])


def test_trajectories_are_tensordicts_without_pixels_unless_asked(tmp_path):
    result = run(tmp_path, num_trajs=2)
    td = result.trajectories[0]
    assert td.batch_size == torch.Size([result.metrics["per_episode"][0]["length"]])
    assert "pixels" not in td.keys() and ("next", "pixels") not in td.keys(True)
    assert ("next", "reward") in td.keys(True) and "action" in td.keys()
    kept = run(tmp_path, out=tmp_path / "k.mp4", keep_pixels=True)
    assert ("next", "pixels") in kept.trajectories[0].keys(True)


def test_returns_match_the_rollout_rewards(tmp_path):
    result = run(tmp_path, num_trajs=2)
    for td, ep in zip(result.trajectories, result.metrics["per_episode"]):
        assert ep["sum_reward"] == pytest.approx(float(td["next", "reward"].sum()))


def test_sidecar_contents(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh())
    ckpt = save_render_checkpoint(tmp_path / "p.pt", net, format="pt")
    result = run(tmp_path, ckpt=ckpt, num_trajs=2)
    meta = json.loads((tmp_path / "run.mp4.metadata.json").read_text())
    assert meta["checkpoint"]["sha256"] == hashlib.sha256(ckpt.read_bytes()).hexdigest()
    assert meta["config"]["num_trajs"] == 2 and meta["versions"]["torch"] == importlib.metadata.version("torch")
    assert [t["seed"] for t in meta["trajectories"]] == [0, 1]
    assert [t["num_frames"] for t in meta["trajectories"]] == [t["num_steps"] + 1 for t in meta["trajectories"]]
    assert meta["metrics"]["aggregated"]["n_episodes"] == 2
    assert any("policy weights loaded from checkpoint entry 'model_state_dict'" in w for w in meta["warnings"])
    assert meta == result.metadata | {} and "gl_backend" in meta


def test_checkpoint_weights_reach_the_policy(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Tanh())
    torch.nn.init.constant_(net[0].weight, 0.0)
    torch.nn.init.constant_(net[0].bias, 0.5)
    ckpt = save_render_checkpoint(tmp_path / "p.pt", net, format="pt")
    result = run(tmp_path, ckpt=ckpt, format="frames", out=tmp_path / "f")
    actions = result.trajectories[0]["action"]
    assert torch.allclose(actions, torch.full_like(actions, torch.tanh(torch.tensor(0.5)).item()))


def test_float64_observations_reach_a_float32_policy(tmp_path):
    result = run(tmp_path, env=lambda: TinyEnv(pixels=True, obs_dtype=torch.float64))
    assert any("cast from torch.float64 to the policy's torch.float32" in w for w in result.warnings)


def test_existing_output_refused_before_rollout(tmp_path):
    (tmp_path / "run.mp4").write_bytes(b"old")
    calls = []

    def env():
        calls.append(1)
        return TinyEnv(pixels=True)
    with pytest.raises(OutputExistsError, match="already exists.*--overwrite"):
        run(tmp_path, env=env)
    assert calls == [] and (tmp_path / "run.mp4").read_bytes() == b"old"
    run(tmp_path, env=env, overwrite=True)
    assert probe_mp4(tmp_path / "run.mp4")["frames"] > 0


def test_missing_output_folder(tmp_path):
    with pytest.raises(WriterError, match="does not exist.*mkdir -p"):
        run(tmp_path, out=tmp_path / "nope" / "run.mp4")


def test_env_failure_mid_run_leaves_nothing(tmp_path):
    with pytest.raises(RolloutError, match="step 3 of episode 0: RuntimeError: TinyEnv exploded"):
        run(tmp_path, env=lambda: TinyEnv(pixels=True, fail_at=3))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_failure_in_a_later_episode_keeps_finished_metrics(tmp_path):
    class FailSecond(TinyEnv):
        def _reset(self, td=None, **kw):
            self.fail_at = 2 if self._seed == 1 else None
            return super()._reset(td, **kw)
    with pytest.raises(RolloutError, match="step 2 of episode 1"):
        run(tmp_path, env=lambda: FailSecond(pixels=True), num_trajs=3)
    partial = json.loads((tmp_path / "run.mp4.partial.json").read_text())
    assert [e["episode_ix"] for e in partial["metrics"]["per_episode"]] == [0]
    assert "TinyEnv exploded" in partial["error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.mp4.partial.json"]


def test_max_episodes_rendered(tmp_path):
    result = run(tmp_path, num_trajs=3, max_episodes_rendered=1, max_steps=4)
    assert [e["num_frames"] for e in result.metrics["per_episode"]] == [5, 0, 0]
    assert probe_mp4(result.artifact_path)["frames"] == 5


def test_no_frames_for_a_video_format(tmp_path):
    with pytest.raises(NoFramesError) as exc:
        run(tmp_path, from_pixels=False, render_backend="null")
    assert "--render-mode rgb_array" in str(exc.value) and "--from-pixels" in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_policy_missing_observation_key(tmp_path):
    with pytest.raises(PolicyError, match="no observation key 'obs'.*observation"):
        run(tmp_path, obs_key="obs")
    assert list(tmp_path.iterdir()) == []


def test_policy_with_wrong_action_shape(tmp_path):
    with pytest.raises(PolicyError, match=r"wrong shape.*shape \(1,\).*shape \(3,\)"):
        run(tmp_path, policy=lambda: (lambda obs: obs))


def test_nan_action_refused(tmp_path):
    with pytest.raises(PolicyError, match="NaN or infinite action"):
        run(tmp_path, policy=lambda: (lambda obs: obs[:1] * float("nan")))


def test_tensordict_policy_is_used_as_is(tmp_path):
    from tensordict.nn import TensorDictModule
    module = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
    result = run(tmp_path, policy=lambda: module, format="frames", out=tmp_path / "f")
    assert any("tensordict policy" in w for w in result.warnings)


@pytest.mark.parametrize("fmt", [n for n in WRITERS.names() if WRITERS.entry(n).needs_frames])
@pytest.mark.slow
def test_every_frame_format_end_to_end(tmp_path, fmt):
    entry = WRITERS.entry(fmt)
    out = tmp_path / ("run" + (entry.suffixes[0] if entry.suffixes else ""))
    result = run(tmp_path, out=out, num_trajs=2, max_steps=3)
    assert result.artifact_path == out and out.exists()
    assert result.artifacts[0].num_frames == 8


def test_split_trajectories_writes_one_file_each(tmp_path):
    result = run(tmp_path, num_trajs=2, max_steps=3, split_trajectories=True)
    assert [p.name for p in result.frame_paths] == ["run_traj0.mp4", "run_traj1.mp4"]
    assert [probe_mp4(p)["frames"] for p in result.frame_paths] == [4, 4]


def test_save_frames_beside_the_video(tmp_path):
    result = run(tmp_path, max_steps=3, save_frames=True)
    assert len(list((tmp_path / "run_frames").glob("*.png"))) == 4
    assert len(result.artifacts) == 2


def test_check_setup_builds_everything_and_writes_nothing(tmp_path):
    result = run(tmp_path, check_setup=True)
    assert result.metadata["check_setup"] and list(tmp_path.iterdir()) == []
    assert result.metadata["render"]["render_backend"] == "pixels"


def test_dry_run_builds_nothing_and_writes_nothing(tmp_path):
    result = render_policy(RenderConfig(policy="no_such_mod:p", env="no_such_mod:e", ckpt=tmp_path / "none.pt",
                                        out=tmp_path / "run.mp4", dry_run=True))
    assert result.metadata["dry_run"] and list(tmp_path.iterdir()) == []
    assert result.metadata["planned_paths"] == [str(tmp_path / "run.mp4"), str(tmp_path / "run.mp4.metadata.json")]


def test_validate_only_imports_nothing(tmp_path):
    result = render_policy(RenderConfig(policy="no_such_mod:p", env="no_such_mod:e", validate_only=True))
    assert result.metadata["validate_only"] is True


def test_exploration_mode_is_passed_to_torchrl(tmp_path):
    with pytest.raises(PolicyError, match="TanhNormal has not analytical mode"):
        run(tmp_path, policy=make_probabilistic_policy, format="jsonl", out=tmp_path / "m.jsonl",
            exploration_mode="mode")


@pytest.mark.parametrize("mode", [None, "deterministic", "mean"])
@pytest.mark.slow
def test_deterministic_by_default_and_exploration_modes(tmp_path, mode):
    kw = dict(policy=make_probabilistic_policy, format="jsonl", num_trajs=2)
    a = run(tmp_path, out=tmp_path / "a.jsonl", exploration_mode=mode, **kw)
    b = run(tmp_path, out=tmp_path / "b.jsonl", exploration_mode=mode, **kw)
    for ta, tb in zip(a.trajectories, b.trajectories):
        assert torch.equal(ta["action"], tb["action"])          # no sampling: reproducible
    s = run(tmp_path, out=tmp_path / "s.jsonl", deterministic=False, **kw)
    s2 = run(tmp_path, out=tmp_path / "s2.jsonl", exploration_mode="random", **kw)
    s3 = run(tmp_path, out=tmp_path / "s3.jsonl", exploration_mode="random", seed=100, **kw)
    # sampling is seeded per episode: reproducible for a seed, different across seeds and from the mode
    assert torch.equal(s.trajectories[0]["action"], s2.trajectories[0]["action"])
    assert not torch.equal(s.trajectories[0]["action"][:1], s3.trajectories[0]["action"][:1])
    assert not torch.equal(s.trajectories[0]["action"][:1], a.trajectories[0]["action"][:1])


def test_a_look_the_backend_cannot_draw_is_noted(tmp_path):
    result = run(tmp_path, render_quality="balanced")  # tinyenv's frames come from the pixels backend
    assert result.metadata["render"]["render_backend"] == "pixels"
    assert any("render_quality='balanced' was not applied: the 'pixels' backend" in w for w in result.warnings)
    quiet = run(tmp_path, out=tmp_path / "default.mp4")
    assert not any("was not applied" in w for w in quiet.warnings)
