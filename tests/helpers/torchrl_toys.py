"""Envs and policies for the tests of engine, importable by module name (``helpers.torchrl_toys:...``)
so that CLI subprocesses and env worker processes can build them too."""

from __future__ import annotations


def make_lstm_policy():
    import torch
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.modules import LSTMModule
    torch.manual_seed(0)
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="observation", out_key="embed")
    head = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Tanh()),
                            in_keys=["embed"], out_keys=["action"])
    return TensorDictSequential(lstm, head)


def torchrl_pendulum(spec):
    """A torchrl env of the user's (GymEnv), so the torchrl path runs it."""
    from torchrl.envs import GymEnv
    return GymEnv("InvertedPendulum-v5", render_mode=spec.render_mode, width=48, height=48)
