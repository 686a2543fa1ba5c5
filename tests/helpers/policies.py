"""Policy factories for real envs in tests: sized from the env's specs, deterministic weights."""

from __future__ import annotations

import torch


def linear_policy(spec):
    """A tanh(Linear) tensor policy sized from ``spec.env_specs`` (any continuous-action env)."""
    specs = spec.env_specs
    obs = specs["output_spec", "full_observation_spec", "observation"]
    act = specs["input_spec", "full_action_spec", "action"]
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(obs.shape[-1], act.shape[-1]), torch.nn.Tanh())
    return net


def dm_linear_policy(spec):
    """For dm_control: the observation dict flattened (torchrl's wrapper keeps entries separate)."""
    from tensordict.nn import TensorDictModule

    specs = spec.env_specs["output_spec", "full_observation_spec"]
    keys = sorted(specs.keys())
    size = sum(int(torch.tensor(specs[k].shape).prod()) for k in keys)
    act = spec.env_specs["input_spec", "full_action_spec", "action"]
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(size, act.shape[-1]), torch.nn.Tanh())

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, *obs):
            return self.net(torch.cat([o.reshape(-1) for o in obs], -1).float())

    return TensorDictModule(Flat(), in_keys=keys, out_keys=["action"])


def make_probabilistic_policy():
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.modules import ProbabilisticActor, TanhNormal
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor())
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(module, in_keys=["loc", "scale"], distribution_class=TanhNormal,
                              return_log_prob=False)
