"""Policies and envs for the tests of ``--precision`` and ``--separate``, importable by module name
(``helpers.seq_policies:...``) so that CLI runs and sweep workers build them too."""

from __future__ import annotations

import torch


def pendulum_policy():
    """A damping torque: Pendulum's returns then vary with the start angle, so the sequence has a spread."""
    return lambda obs: torch.clamp(-2.0 * obs[..., 2:3], -2.0, 2.0)


def cartpole_policy():
    """Pushes the way the pole leans: episodes of a few dozen steps, of seed-dependent length."""
    return lambda obs: (obs[..., 2] > 0).long()


def gain_policy(spec):
    """Pendulum's damping torque with the gain its checkpoint holds (``{"gain": g}``): two checkpoints, two policies."""
    gain = float(spec.checkpoint["gain"])
    return lambda obs: torch.clamp(-gain * obs[..., 2:3], -2.0, 2.0)


def push_policy(spec):
    """helpers.select_toys' env with the push its checkpoint holds (``{"push": p}``): each step adds ``p`` to the
    final reward, so a larger push succeeds on more seeds."""
    push = float(spec.checkpoint["push"])
    return lambda obs: torch.full((*obs.shape[:-1], 1), push)


def torchrl_pendulum():
    """Pendulum as a torchrl env (GymEnv): the torchrl path runs it."""
    from torchrl.envs import GymEnv

    return GymEnv("Pendulum-v1")
