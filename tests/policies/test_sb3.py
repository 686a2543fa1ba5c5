"""stable-baselines3 models, trained here, evaluated through the user guide's 3-line factory: per-episode
returns equal a seeded plain gymnasium loop that calls ``model.predict`` itself."""

from __future__ import annotations

import gymnasium
import pytest

pytest.importorskip("stable_baselines3", reason="needs stable-baselines3 (the dev extra; test-min goes without it)")

from torchrl_render import RenderConfig, render_policy

from helpers.sb3models import MODELS, trained

SEEDS = [0, 1, 2, 3]
NAMES = ["ppo-pendulum", "ppo-cartpole", "dqn-cartpole"]  # the conformance matrix runs the others
STEPS = 40


def plain_loop(name, seeds=SEEDS, max_steps=STEPS):
    """What an SB3 user writes: ``model.predict(obs, deterministic=True)[0]`` into ``env.step``."""
    import stable_baselines3

    algo, env_id, _, _ = MODELS[name]
    model = getattr(stable_baselines3, algo).load(trained(name), device="cpu")
    env, out = gymnasium.make(env_id), []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, n = 0.0, 0
        while True:
            obs, reward, terminated, truncated, _ = env.step(model.predict(obs, deterministic=True)[0])
            total, n = total + reward, n + 1
            if terminated or truncated or n == max_steps:
                break
        out.append((total, n))
    return out


def ours(tmp_path, name, **kw):
    algo, env_id, _, _ = MODELS[name]
    result = render_policy(RenderConfig(policy="helpers.sb3models:make_policy",
                                        policy_kwargs={"path": trained(name), "algo": algo}, env=env_id,
                                        num_trajs=len(SEEDS), max_steps=STEPS, seed=SEEDS[0],
                                        out=tmp_path / "run.jsonl", progress=False, **kw))
    assert result.metadata["engine"]["path"] == "gymnasium"
    return [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.slow
def test_an_sb3_model_equals_a_plain_predict_loop(tmp_path, name, k):
    extra = dict(num_envs=k, policy_batch="per-env", env_batch_mode="serial") if k > 1 else {}
    assert ours(tmp_path, name, **extra) == plain_loop(name)


def test_an_sb3_model_predicts_a_batch(tmp_path):
    """``predict`` takes a ``[K, obs]`` batch as it is, returning ``[K]`` indices: one call per batch step."""
    returns = ours(tmp_path, "dqn-cartpole", num_envs=4, env_batch_mode="serial")
    assert returns == plain_loop("dqn-cartpole")  # an MLP's argmax: the same indices as one env at a time
