"""Turning what a policy factory returns into a TensorDict -> TensorDict step function.

How a policy is called (with the step TensorDict, or with ``td[obs_key]``) is decided by one rule,
:func:`~torchrl_render.policies.adapters.policy_kind`; a policy the rule leaves open is decided at its
first call. A tensor policy's result is written to ``td[action_key]``.

Observations are cast to the policy's floating dtype (gymnasium's float64 reaches
a float32 network) and moved to its device; actions are cast back to the env's
action spec dtype and device. Each adaptation is noted once in the warnings.

The package: this module builds the policy (factory, weights, exploration probe);
:mod:`.runner` calls it (:class:`PolicyRunner`), :mod:`.adapters` decides how it is called
(tensor or TensorDict), :mod:`.actions` checks and casts its actions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checkpoint import find_state_dict, load_into_policy
from ..config import Deferred, RenderConfig, RenderPolicySpec
from ..contracts import Payload, UserEnv, UserPolicy
from ..envs.handle import loaded_class
from ..errors import PolicyError, UserPolicyError
from ..resolve import call_factory, factory_name, resolve
from .actions import non_finite_action
from .adapters import policy_kind
from .runner import PolicyRunner, exploration_type, visible_keys

if TYPE_CHECKING:
    import torch
    from torchrl.data import Composite

__all__ = ["PolicyRunner", "UserPolicyError", "build_policy", "exploration_type", "factory_specs",
           "non_finite_action", "policy_kind", "visible_keys"]


def build_policy(cfg: RenderConfig, env: UserEnv, payload: Payload, digest: str | None,
                 notes: list[str]) -> PolicyRunner:
    """Calls the policy factory, loads the checkpoint's weights, and adapts the result."""
    import torch

    device = cfg.policy_device or cfg.device
    policy: UserPolicy  # the object the factory returned (or the module given instead of a factory)
    if isinstance(cfg.policy, torch.nn.Module):  # an instance, not a factory: calling it would run its forward
        policy = cfg.policy
        notes.append(f"the policy was given as an object ({type(policy).__name__}): used as it is, not called as a "
                     "factory")
    else:
        spec = RenderPolicySpec(ckpt_path=cfg.ckpt_path, checkpoint=payload, checkpoint_hash=digest, device=device,
                                env_specs=Deferred(lambda: factory_specs(env)), policy_kwargs=dict(cfg.policy_kwargs),
                                config=cfg)
        policy = call_factory(resolve(cfg.policy, "policy"), spec, cfg.policy_kwargs, "policy")
    if policy is None or not callable(policy):
        raise PolicyError(f"the policy factory {factory_name(cfg.policy)} returned {type(policy).__name__}, "
                          "which cannot act",
                          expected="a TensorDictModule, an nn.Module or a callable mapping observations to actions",
                          got=type(policy).__name__, fix="return the policy object from the factory")
    _load_weights(cfg, policy, payload, notes)
    if isinstance(policy, torch.nn.Module):
        policy.to(device)
        if cfg.policy_eval:
            policy.eval()
    runner = PolicyRunner(policy, cfg, env, notes)
    _check_exploration(runner, env, notes)
    return runner


def factory_specs(env: UserEnv) -> Composite | None:
    """The single env's specs as the user's env has them: without the success entries that our
    gymnasium info reader adds (they are bookkeeping, not observations)."""
    specs = getattr(env, "specs", None)
    if specs is None or not getattr(env, "_torchrl_render_wrapped", False):
        return specs
    specs = specs.clone()
    observation = specs["output_spec", "full_observation_spec"]
    for key in ("success", "success_reported"):
        if key in observation.keys():
            del observation[key]
    return specs


def _load_weights(cfg: RenderConfig, policy: UserPolicy, payload: Payload, notes: list[str]) -> None:
    import torch

    if cfg.ckpt is None and not isinstance(cfg.policy, torch.nn.Module):  # an object brings its own weights
        notes.append("no checkpoint was given (--ckpt): the policy acts with the weights its factory gave it "
                     "(random ones, unless the factory loads trained weights itself)")
    if payload is None or not cfg.auto_load_policy or not hasattr(policy, "load_state_dict"):
        return
    state_dict, where = find_state_dict(payload, cfg.checkpoint_key, cfg.state_dict_key)
    if state_dict is None:
        notes.append("no state dict found in the checkpoint; the policy keeps the weights its factory gave it "
                     "(pass --state-dict-key to name one)")
        return
    outcome = load_into_policy(policy, state_dict, strict=cfg.strict_load)
    notes.append(f"policy weights {outcome} from checkpoint entry {where!r}")


#: The classes whose modules act differently under torchrl's RANDOM exploration type.
_SAMPLERS = (("tensordict.nn", "ProbabilisticTensorDictModule"),
             *(("torchrl.modules.tensordict_module.exploration", name) for name in
               ("AdditiveGaussianModule", "EGreedyModule", "OrnsteinUhlenbeckProcessModule")))


def _samplers(policy: UserPolicy) -> list[torch.nn.Module]:
    """The sub-modules that act differently under torchrl's RANDOM exploration type (a policy holds one only
    if its module was imported: none is imported for it here)."""
    import torch

    kinds = tuple(cls for cls in (loaded_class(*where) for where in _SAMPLERS) if cls is not None)
    if not kinds or not isinstance(policy, torch.nn.Module):
        return []
    return [m for m in policy.modules() if isinstance(m, kinds)]


def _check_exploration(runner: PolicyRunner, env: UserEnv, notes: list[str]) -> None:
    """Notes a --stochastic that cannot change anything; refuses a mode the policy's distribution lacks."""
    mode = runner.mode
    samplers = _samplers(runner.policy)
    if mode == "random" and not samplers:
        notes.append(f"--stochastic has no effect: the {runner.kind or 'plain'} policy has no probabilistic module "
                     "(such as torchrl's ProbabilisticActor) or exploration module, so it acts the same in every mode")
    dists = sorted({getattr(m.distribution_class, "__name__", str(m.distribution_class)) for m in samplers
                    if hasattr(m, "distribution_class")})
    if mode not in ("mode", "mean") or not dists or not runner.is_td:
        return
    failure = _probe(runner, env, mode)
    if failure is None:
        return
    working = [m for m in ("deterministic", "mode", "mean", "random") if m != mode and _probe(runner, env, m) is None]
    if working:  # the mode is the problem, not the policy or the observation
        raise PolicyError(f"the policy's {'/'.join(dists)} distribution has no {mode!r} (--exploration-mode {mode} "
                          f"raised {failure})", expected=f"an exploration mode it supports: {', '.join(working)}",
                          got=mode, fix=f"pass --exploration-mode {working[0]} (deterministic uses the "
                                        "distribution's deterministic sample, e.g. tanh of the mean for TanhNormal)")


def _probe(runner: PolicyRunner, env: UserEnv, mode: str) -> str | None:
    """Calls the policy once on the env's zero TensorDict under ``mode``; the error text, or ``None``."""
    td = env.fake_tensordict().exclude("next")
    if env.batch_size:
        td = td[(0,) * len(env.batch_size)]
    saved, runner.mode = runner.mode, mode
    try:
        runner(td)
    except Exception as exc:
        cause = exc.__cause__ if isinstance(exc, UserPolicyError) and exc.__cause__ is not None else exc
        return f"{type(cause).__name__}: {' '.join(str(cause).split())}"
    finally:
        runner.mode = saved
    return None
