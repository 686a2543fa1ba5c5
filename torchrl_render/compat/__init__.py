"""torchrl.render's building blocks, under its names and signatures, as faces over our modules.

A script written against ``torchrl.render`` composes these (load, make env, load policy, collect,
write); each one here calls the module that does the work in :func:`~torchrl_render.render_policy`
(:mod:`torchrl_render.resolve`, :mod:`torchrl_render.checkpoint`, :mod:`torchrl_render.envs`,
:mod:`torchrl_render.policies`), so there is no second
implementation. Where we behave differently on purpose (safe loading, our error types and
messages), ``docs/migrating.md`` says so. Nothing heavy is imported until a function is called.

Example:
    >>> parse_nested_key("next.reward"), key_to_string(("next", "reward"))
    (('next', 'reward'), 'next.reward')
    >>> import_from_string("json:dumps").__name__
    'dumps'
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

from .. import config as _config
from ..api import Run
from ..checkpoint import check_payload, checkpoint_hash, infer_state_dict, load_checkpoint
from ..contracts import Payload, UserEnv, UserFactory, UserPolicy
from ..envs import build_env, to_torchrl_env
from ..envs.gl import ensure_headless_gl
from ..errors import ConfigError, ResolveError, did_you_mean
from ..keys import NestedKey
from ..policies import build_policy
from ..resolve import factory_name, import_file, import_module, is_path

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.envs import EnvBase

    from ..config import RenderConfig
    from ..policies import PolicyRunner

__all__ = ["TensorDictPolicyAdapter", "add_step_counter", "call_with_supported_kwargs", "checkpoint_hash",
           "import_from_string", "infer_state_dict", "key_to_string", "load_render_policy", "make_render_env",
           "normalize_env", "normalize_policy", "parse_nested_key", "seed_env"]

key_to_string = _config.key_to_string

#: What a factory returns (:func:`call_with_supported_kwargs` hands it back).
_Made = TypeVar("_Made")


def parse_nested_key(value: object) -> NestedKey:
    """``"a.b"`` -> ``("a", "b")``; a plain name and a tuple pass through (see :func:`.config.parse_nested_key`).

    Example:
        >>> parse_nested_key(["agent", "obs"])
        ('agent', 'obs')
    """
    return _config.parse_nested_key(value)


# -- import strings and factory calls --------------------------------------------------------------


def import_from_string(spec: str) -> object:
    """The object named by ``"module:attr.path"`` or ``"path/file.py:attr"`` (callable or not).

    Example:
        >>> import_from_string("os.path:sep") in ("/", "\\\\")
        True
    """
    target, _, attr = spec.rpartition(":") if isinstance(spec, str) else ("", "", "")
    if not target or not attr:
        raise ConfigError(f"import spec {spec!r} is not 'module:object'", expected="'module.submodule:object'",
                          got=repr(spec), fix="write it as e.g. 'mypkg.policy:make_policy'")
    obj: object = import_file(target, "import") if is_path(target) else import_module(target, "import")
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ResolveError(f"{target!r} has no attribute {part!r}.{did_you_mean(part, dir(obj))}",
                               expected=f"a name defined in {target!r}", got=part,
                               fix=f"correct the name after the colon in {spec!r}")
        obj = getattr(obj, part)
    return obj


def call_with_supported_kwargs(factory: UserFactory[_Made], preferred_arg: object,
                               kwargs: Mapping[str, object]) -> _Made:
    """Calls ``factory`` with the entries of ``kwargs`` it names, or with ``preferred_arg`` (the spec).

    ``*args`` takes the spec alone; ``**kwargs`` takes every entry; otherwise each parameter named
    like an entry gets it, and a single required positional parameter that none names gets the spec.

    Example:
        >>> call_with_supported_kwargs(lambda seed, device="cpu": (seed, device), None, {"seed": 3, "x": 1})
        (3, 'cpu')
        >>> call_with_supported_kwargs(lambda cfg: cfg, "the spec", {"seed": 3})
        'the spec'
    """
    params = list(inspect.signature(factory).parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return factory(preferred_arg)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return factory(**dict(kwargs))
    named = {p.name: kwargs[p.name] for p in params if p.name in kwargs and p.kind != p.POSITIONAL_ONLY}
    missing = [p for p in params if p.default is p.empty and p.name not in named]
    if not missing:
        return factory(**named)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(missing) == 1 and len(positional) == 1 and missing[0] is positional[0]:
        return factory(preferred_arg)
    raise ResolveError(f"cannot call the factory {factory_name(factory)}: nothing provides {[p.name for p in missing]}",
                       expected=f"one spec parameter, or parameters named like {sorted(kwargs)}",
                       got=f"parameters {[p.name for p in params]}",
                       fix="give the parameters defaults, or take a single spec argument")


# -- checkpoints -----------------------------------------------------------------------------------


# -- envs ------------------------------------------------------------------------------------------


def make_render_env(config: RenderConfig, checkpoint: Payload = None) -> EnvBase:
    """The env :func:`~torchrl_render.render_policy` would build for ``config`` (a torchrl env).

    It is built with ``render_mode="rgb_array"`` when the format needs frames; ``max_steps`` is
    enforced by the engine (no ``StepCounter`` is appended: :func:`add_step_counter` adds one).
    """
    check_payload(checkpoint, "make_render_env")
    ensure_headless_gl()
    framed = dataclasses.replace(config, result_frames=True)  # collect_render_rollouts keeps frames, for any format
    return build_env(config, checkpoint, render_mode=Run(framed, None)._render_mode())


def normalize_env(env: UserEnv, config: RenderConfig) -> EnvBase:
    """A torchrl env for ``env``: torchrl envs pass, gymnasium and dm_control envs are wrapped."""
    return to_torchrl_env(env, device=config.env_device or config.device, backend=config.env_backend, source=env)


def add_step_counter(env: UserEnv, max_steps: int) -> UserEnv:
    """``env`` with a torchrl ``StepCounter(max_steps)`` appended, unless it has one (non-torchrl envs pass)."""
    from torchrl.envs import EnvBase, TransformedEnv
    from torchrl.envs.transforms import StepCounter

    if not isinstance(env, EnvBase):
        return env
    transform = env.transform if isinstance(env, TransformedEnv) else None
    if isinstance(transform, StepCounter) or any(isinstance(t, StepCounter) for t in getattr(transform, "transforms",
                                                                                             ())):
        return env
    return env.append_transform(StepCounter(max_steps=max_steps))


def seed_env(env: UserEnv, seed: int | None) -> None:
    """Seeds ``env``: torchrl's ``set_seed``, else ``seed``, else gymnasium's ``reset(seed=...)``.

    The engine seeds every episode itself (episode ``i`` with ``seed + i``), so this matters only
    for envs used outside :func:`collect_render_rollouts`.
    """
    if seed is None:
        return
    for name in ("set_seed", "seed"):
        method = getattr(env, name, None)
        if callable(method):
            method(seed)
            return
    reset = getattr(env, "reset", None)
    if callable(reset) and "seed" in inspect.signature(reset).parameters:
        reset(seed=seed)


# -- policies --------------------------------------------------------------------------------------


class TensorDictPolicyAdapter:
    """A TensorDict -> TensorDict callable around a TensorDict policy or a tensor policy.

    A policy with ``in_keys`` and ``out_keys`` is called with the TensorDict; any other is first
    called with ``td[obs_key]`` (a tensor policy given a TensorDict may compute nonsense without an
    error), and with the TensorDict if that raises. A tensor result is written to ``action_key``, a
    mapping is merged, a TensorDict is returned as is.

    Example:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> adapter = TensorDictPolicyAdapter(lambda obs: obs + 1, "obs", ("agent", "action"))
        >>> adapter(TensorDict({"obs": torch.zeros(1)}, [])).get(("agent", "action"))
        tensor([1.])
    """

    def __init__(self, policy: UserPolicy, obs_key: NestedKey, action_key: NestedKey) -> None:
        self.policy = policy
        self.obs_key = obs_key
        self.action_key = action_key
        self.runner: PolicyRunner | None = None  # our PolicyRunner, when load_render_policy built it
        self.checkpoint: Payload = None
        self.checkpoint_digest: str | None = None

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        from tensordict import TensorDictBase

        if getattr(self.policy, "in_keys", None) is not None and getattr(self.policy, "out_keys", None) is not None:
            output = self.policy(tensordict)
        else:
            try:
                output = self.policy(tensordict.get(self.obs_key))
            except Exception:
                output = self.policy(tensordict)
        if isinstance(output, TensorDictBase):
            return output
        if isinstance(output, Mapping):
            tensordict.update(dict(output))
            return tensordict
        tensordict.set(self.action_key, output)
        return tensordict


def normalize_policy(policy: UserPolicy, config: RenderConfig) -> TensorDictPolicyAdapter:
    """``policy`` as a :class:`TensorDictPolicyAdapter` (one already adapted passes)."""
    if isinstance(policy, TensorDictPolicyAdapter):
        return policy
    return TensorDictPolicyAdapter(policy, config.obs_key, config.action_key)


def load_render_policy(config: RenderConfig, env: UserEnv | None = None, *, checkpoint: Payload = None,
                       checkpoint_digest: str | None = None) -> TensorDictPolicyAdapter:
    """Builds the policy as :func:`~torchrl_render.render_policy` does: factory, weights, device, eval mode.

    Args:
        config: The :class:`~torchrl_render.RenderConfig`.
        env: The env from :func:`make_render_env` (its specs go to the factory); built if ``None``.

    Keyword Args:
        checkpoint: The loaded payload; loaded (safely) from ``config.ckpt`` when ``None``.
        checkpoint_digest: Its SHA-256; computed when ``None``.

    Returns:
        A :class:`TensorDictPolicyAdapter` whose ``runner`` is our policy runner (dtype and device
        casts, action checks), used by :func:`collect_render_rollouts`.
    """
    check_payload(checkpoint, "load_render_policy")
    if checkpoint is None and config.ckpt is not None:
        checkpoint = load_checkpoint(config.ckpt, config.policy_device or config.device,
                                     trust=config.trust_checkpoint)
    if checkpoint_digest is None and config.ckpt is not None:
        checkpoint_digest = checkpoint_hash(config.ckpt)
    if env is None:
        env = make_render_env(config, checkpoint)
    runner = build_policy(config, env, checkpoint, checkpoint_digest, [])
    adapter = TensorDictPolicyAdapter(runner.policy, config.obs_key, config.action_key)
    adapter.runner, adapter.checkpoint, adapter.checkpoint_digest = runner, checkpoint, checkpoint_digest
    return adapter
