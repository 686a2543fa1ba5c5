"""Tiny stable-baselines3 models trained here (a few hundred steps, seconds), saved as SB3 saves them,
and the factory a user writes to evaluate one.

:func:`trained` trains each model once per test process and returns the path of its ``.zip``.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

#: name -> (algorithm, env id, training steps, algorithm kwargs)
MODELS = {
    "ppo-pendulum": ("PPO", "Pendulum-v1", 256, dict(n_steps=128, batch_size=64, n_epochs=2)),
    "ppo-cartpole": ("PPO", "CartPole-v1", 256, dict(n_steps=128, batch_size=64, n_epochs=2)),
    "dqn-cartpole": ("DQN", "CartPole-v1", 300, dict(learning_starts=100, train_freq=4, buffer_size=1000)),
    "ppo-invpendulum": ("PPO", "InvertedPendulum-v5", 256, dict(n_steps=128, batch_size=64, n_epochs=2)),
    "ppo-toy-multidiscrete": ("PPO", "gymtoys:multidiscrete", 256, dict(n_steps=128, batch_size=64, n_epochs=2)),
}


@functools.cache
def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="sb3models-"))


@functools.cache
def trained(name: str) -> str:
    """The saved model ``name`` (trained on first use; ``policy_kwargs`` keep it small)."""
    import stable_baselines3

    algo, env_id, steps, kwargs = MODELS[name]
    if env_id.startswith("gymtoys:"):  # a gymnasium env of the tests', not registered
        from helpers import gymtoys

        env_id = gymtoys.make(env_id.partition(":")[2])
    model = getattr(stable_baselines3, algo)("MlpPolicy", env_id, seed=0, device="cpu",
                                             policy_kwargs=dict(net_arch=[16]), **kwargs)
    model.learn(total_timesteps=steps)
    path = _folder() / f"{name}.zip"
    model.save(path)
    return str(path)


def make_policy(path: str, algo: str = "PPO"):
    """The factory of the user guide's "Coming from SB3" (``algo`` picks the class)."""
    import stable_baselines3

    model = getattr(stable_baselines3, algo).load(path, device="cpu")
    return lambda obs: model.predict(obs.numpy(), deterministic=True)[0]
