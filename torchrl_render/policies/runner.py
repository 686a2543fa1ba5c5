"""Calling the user's policy on step TensorDicts or observations: :class:`PolicyRunner`.

The runner decides once how the policy is called (:mod:`.adapters`), casts observations to the
policy's dtype and device and actions back to the env's (:mod:`.actions` checks them), and keeps
one RNG stream per episode for stochastic policies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

from ..config import RenderConfig
from ..contracts import UserEnv, UserPolicy
from ..envs import as_torchrl
from ..envs.unwrap import plain_gymnasium
from ..errors import PolicyError, RenderError, UserPolicyError
from ..keys import NestedKey, key_to_string
from .actions import ActionChecker, gym_action_layout
from .adapters import PolicyKind, both_failed, policy_kind

if TYPE_CHECKING:
    import torch
    from tensordict import TensorDict, TensorDictBase
    from torchrl.data import TensorSpec
    from torchrl.envs import TransformedEnv
    from torchrl.envs.transforms import Transform
    from torchrl.envs.utils import ExplorationType


__all__ = ["MODES", "PolicyRunner", "exploration_mode", "exploration_type", "visible_keys"]

#: The gymnasium path's observation entries as tensors, by torchrl's key names (``engine.gym_loop.actor``).
Observation: TypeAlias = "Mapping[str, torch.Tensor]"

#: ``fast(obs) -> action``: :meth:`PolicyRunner.act`'s decided path for one batch shape (None: take the full path).
FastAct: TypeAlias = "Callable[[Observation], torch.Tensor | None]"


#: The exploration modes, by torchrl's ``ExplorationType`` member names (lower case).
MODES = ("deterministic", "mode", "mean", "random")


def exploration_mode(cfg: RenderConfig) -> str:
    """The run's exploration mode: ``exploration_mode``, else ``deterministic`` / ``random`` by ``deterministic``."""
    return cfg.exploration_mode or ("deterministic" if cfg.deterministic else "random")


def exploration_type(cfg: RenderConfig) -> ExplorationType:
    """The torchrl ``ExplorationType`` for ``exploration_mode`` / ``deterministic``."""
    from torchrl.envs.utils import ExplorationType

    return getattr(ExplorationType, exploration_mode(cfg).upper())


def _exploration_context(mode: str) -> AbstractContextManager[object]:
    """tensordict's ``set_exploration_type`` for ``mode``; nothing when tensordict is not imported: then
    no module of the policy can read the exploration type (tensordict's modules import it)."""
    interaction = sys.modules.get("tensordict.nn")
    if interaction is None:
        return contextlib.nullcontext()
    return interaction.set_interaction_type(getattr(interaction.InteractionType, mode.upper()))


def _tensordict(obs: Observation, batch: tuple[int, ...]) -> TensorDict:
    from tensordict import TensorDict

    return TensorDict(obs, batch_size=batch)


def _is_tensor_collection(obj: object) -> TypeGuard[TensorDictBase]:
    """tensordict's ``is_tensor_collection``, False when tensordict is not imported (then nothing is one). True
    for a TensorDict, and for a tensorclass instance, which answers the ``TensorDictBase`` methods the runner
    calls (``get``, ``keys``, ``set``)."""
    check = sys.modules.get("tensordict")
    return check is not None and bool(check.is_tensor_collection(obj))


def _entry(obs: Observation, key: NestedKey) -> torch.Tensor | None:
    """``obs[key]``, None when it is missing (the gymnasium path's entries are top-level names: a nested key
    is never one of them)."""
    return obs.get(key) if isinstance(key, str) else None


def visible_keys(td: TensorDictBase) -> list[str]:
    """The keys of a step TensorDict as the user knows them: without our success bookkeeping."""
    reported = td.get("success_reported", None)
    hidden = {"success_reported"} | ({"success"} if reported is not None and not bool(reported.any()) else set())
    return [key_to_string(k) for k in td.keys(True, True) if key_to_string(k) not in hidden]


@dataclass
class PolicyRunner:
    """Calls the policy on a step TensorDict and writes a checked action into it."""

    policy: UserPolicy
    cfg: RenderConfig
    env: UserEnv
    notes: list[str]
    _noted: set[str] = field(default_factory=set)
    _copies: dict[int, PolicyRunner] = field(default_factory=dict)
    _rng_state: torch.Tensor | None = None
    _fast_for: dict[tuple[int, ...], FastAct] = field(default_factory=dict, repr=False)  # batch -> fast(obs)
    # (the policy's in_keys or None,)
    _declared: tuple[list[NestedKey] | None] | None = field(default=None, repr=False)
    # (in_key, dtype) cast at each call
    _cast_keys: list[tuple[NestedKey, torch.dtype]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import torch

        #: "tensordict", "tensor", or None until the first call decides (see the module docstring).
        self.kind: PolicyKind | None = policy_kind(self.policy)
        params = list(self.policy.parameters()) if isinstance(self.policy, torch.nn.Module) else []
        floats = [p for p in params if p.is_floating_point()]
        self.dtype = floats[0].dtype if floats else None
        self.device = torch.device(floats[0].device if floats else (self.cfg.policy_device or self.cfg.device))
        self._action_spec: TensorSpec | None = None
        self._check_td: ActionChecker | None = None
        self._gym_check: ActionChecker | None = None
        #: One of :data:`MODES`; torchrl's ``ExplorationType`` is :attr:`exploration`.
        self.mode = exploration_mode(self.cfg)
        if self.kind is not None:
            self._note_kind()

    @property
    def action_spec(self) -> TensorSpec:
        """The torchrl action spec of one env (built at the first use: a gymnasium run may never need it)."""
        if self._action_spec is None:
            env = self.env
            spec = env.full_action_spec[self.cfg.action_key] if self.cfg.action_key in \
                env.full_action_spec.keys(True) else env.action_spec
            if env.batch_size:  # a batched env: the spec of one env
                spec = spec[(0,) * len(env.batch_size)]
            self._action_spec = spec
        return self._action_spec

    @property
    def _check(self) -> ActionChecker:
        """The checker of actions written into step TensorDicts (the torchrl spec's encoding)."""
        if self._check_td is None:
            self._check_td = ActionChecker(self.action_spec, self.note)
        return self._check_td

    @property
    def exploration(self) -> ExplorationType:
        """torchrl's ``ExplorationType`` of :attr:`mode`."""
        from torchrl.envs.utils import ExplorationType

        return getattr(ExplorationType, self.mode.upper())

    @exploration.setter
    def exploration(self, value: ExplorationType) -> None:
        self.mode = str(getattr(value, "name", value)).lower()

    @property
    def is_td(self) -> bool:
        """Whether the policy is called with the step TensorDict."""
        return self.kind == "tensordict"

    def _note_kind(self, why: str = "") -> None:
        self.note(f"policy adapted as a {self.kind} policy"
                  + (f" ({key_to_string(self.cfg.obs_key)} -> {key_to_string(self.cfg.action_key)})"
                     if not self.is_td else "") + why)

    @property
    def stateful(self) -> bool:
        """A policy object with a ``reset()`` method keeps state between steps (reset per episode)."""
        return callable(getattr(self.policy, "reset", None))

    @property
    def samples(self) -> bool:
        """Whether actions are sampled (torchrl's RANDOM exploration type)."""
        return self.mode == "random"

    def begin_episode(self, seed: int | None = None) -> None:
        """Called at every episode start: resets a stateful policy; seeds a sampling policy's RNG.

        A sampling policy draws from its own torch RNG stream seeded with the episode's seed, so
        stochastic evaluations are reproducible and the same for any number of envs.
        """
        if self.stateful:
            self.policy.reset()
        if self.samples and seed is not None:
            import torch

            self._rng_state = torch.Generator().manual_seed(seed).get_state()

    def for_worker(self, index: int) -> PolicyRunner:
        """The runner for env worker ``index``: its own RNG stream and its own copy of a stateful policy."""
        if index == 0 or not (self.stateful or self.samples):
            return self
        if index not in self._copies:
            import copy

            policy = copy.deepcopy(self.policy) if self.stateful else self.policy
            self._copies[index] = dataclasses.replace(self, policy=policy, _noted=self._noted, _copies={},
                                                      _fast_for={})
        return self._copies[index]

    def adapt_env(self, env: UserEnv) -> UserEnv | TransformedEnv:
        """Adds ``is_init`` tracking and zero-state primers for recurrent torchrl policies."""
        primers = self._primers()
        if primers is None:
            return env
        from torchrl.envs import Compose, InitTracker, TransformedEnv

        self.note("recurrent policy: the env gained InitTracker and zero-state primers (state reset per episode)")
        return TransformedEnv(as_torchrl(env), Compose(InitTracker(), primers))

    def note(self, text: str) -> None:
        if text not in self._noted:
            self._noted.add(text)
            self.notes.append(text)

    @property
    def recurrent(self) -> bool:
        """A TensorDict policy with recurrent-state primers (LSTM/GRU modules)."""
        return self._primers() is not None

    def _primers(self) -> Transform | None:
        """torchrl's primers of the policy's recurrent sub-modules; None for a policy without any (torchrl
        looks for them among a module's children, so a TensorDict callable that is no module has none)."""
        import torch

        if not (self.is_td and isinstance(self.policy, torch.nn.Module)):
            return None
        from torchrl.modules.utils import get_primers_from_module

        return get_primers_from_module(self.policy, warn=False)

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        """Acts on a step TensorDict (unbatched, or batched over ``td.batch_size``); writes the action."""
        import torch

        # what torch.no_grad() does, without building its context object at every step
        grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            with _exploration_context(self.mode):
                if self._rng_state is None:
                    action = self._dispatch(td.get(self.cfg.obs_key, None), lambda: td, lambda: visible_keys(td))
                else:
                    with self._own_rng():
                        action = self._dispatch(td.get(self.cfg.obs_key, None), lambda: td,
                                                lambda: visible_keys(td))
        finally:
            torch._C._set_grad_enabled(grad)
        checked = self._check(action, tuple(td.batch_size))
        if td.get(self.cfg.action_key, None) is not checked:  # a module wrote it, and it needed nothing
            td.set(self.cfg.action_key, checked)
        return td

    def act(self, obs: Observation, batch: tuple[int, ...] = ()) -> torch.Tensor:
        """The checked action for observation tensors (``batch`` leading dims), without a step TensorDict
        for tensor policies: the engine's hot path.

        The first call of a tensor policy decides, for what its observation and action look like, the
        observation's cast, the action's checks and conversions (and notes them); later calls that
        look the same take :meth:`_fast`, which runs only what was decided.
        """
        fast = self._fast_for.get(batch)
        if fast is not None and self._rng_state is None:
            quick = fast(obs)
            if quick is not None:
                return quick
        import torch

        with torch.no_grad(), _exploration_context(self.mode), self._own_rng():
            if self.kind == "tensor":  # the common case, without the dispatch's closures
                tensor = _entry(obs, self.cfg.obs_key)
                action = self._action_of(self._user(self._to_policy(tensor))) if tensor is not None else \
                    self._call_tensor(None, lambda: [key_to_string(k) for k in obs])
            else:
                action = self._dispatch(_entry(obs, self.cfg.obs_key), lambda: _tensordict(obs, batch),
                                        lambda: [key_to_string(k) for k in obs])
        checked = (self._gym_check or self.gym_check)(action, batch, finite=False)
        if fast is None and self.kind == "tensor" and isinstance(action, torch.Tensor) and \
                (seen := _entry(obs, self.cfg.obs_key)) is not None:
            self._fast_for[batch] = self._fast(seen, action, batch)
        return checked

    def _fast(self, seen: torch.Tensor, action: torch.Tensor, batch: tuple[int, ...]) -> FastAct:
        """``fast(obs) -> action`` for a tensor policy whose observation has ``seen``'s dtype and device and
        whose action ``action``'s shape, dtype and device: the cast and the action's plan, decided now, are
        all it runs (plus the policy). ``None`` from it: this call looks otherwise, take the full path."""
        import torch

        key, policy, device = self.cfg.obs_key, self.policy, self.device
        if not isinstance(key, str):  # never: act() saw this key's entry, and a nested key is none of them
            return lambda obs: None
        in_dtype, in_device, dtype = seen.dtype, seen.device, self._cast_dtype(seen) or seen.dtype
        cast = dtype != in_dtype or device != in_device
        shape, out_dtype, out_device = action.shape, action.dtype, action.device
        plan = (self._gym_check or self.gym_check).plan_of(action, batch, finite=False)
        tensor_type, mode = torch.Tensor, self.mode
        # what torch.no_grad() does on entry and exit, without building a context manager each step
        grad_enabled, set_grad = torch.is_grad_enabled, torch._C._set_grad_enabled

        def fast(obs: Observation) -> torch.Tensor | None:
            tensor = obs.get(key)  # the hot path: a plain lookup (the key is a name, checked above)
            if tensor is None or tensor.dtype != in_dtype or tensor.device != in_device:
                return None
            if cast:
                tensor = tensor.to(device, dtype)
            explore = "tensordict.nn" in sys.modules  # then a module of the policy may read the exploration type
            grad = grad_enabled()
            set_grad(False)
            try:
                if explore:
                    with _exploration_context(mode):
                        out = policy(tensor)
                else:
                    out = policy(tensor)
            except RenderError:
                raise
            except Exception as exc:
                raise UserPolicyError(f"{type(exc).__name__}: {exc}") from exc
            finally:
                set_grad(grad)
            if type(out) is not tensor_type or out.shape != shape or out.dtype != out_dtype or \
                    out.device != out_device:
                return self._full(out, batch)
            if out.requires_grad:  # a parameter, or a view of one: no_grad does not detach those
                out = out.detach()
            return out if plan is None else plan(out)

        return fast

    def _full(self, out: object, batch: tuple[int, ...]) -> torch.Tensor:
        """What :meth:`act` gives for the policy's output ``out``, taking none of the fast path's decisions."""
        return (self._gym_check or self.gym_check)(self._action_of(out), batch, finite=False)

    @property
    def gym_check(self) -> ActionChecker:
        """The checker of :meth:`act`: actions in the gymnasium env's own encoding (an index for
        ``Discrete``, where torchrl's spec is one-hot), for the engine's gymnasium path."""
        if self._gym_check is None:
            raw = plain_gymnasium(self.env)
            native = gym_action_layout(raw.action_space) if raw is not None else None
            self._gym_check = self._check if native is None else ActionChecker(native[0], self.note, native[1])
        return self._gym_check

    def _dispatch(self, obs: torch.Tensor | None, make_td: Callable[[], TensorDictBase],
                  keys: Callable[[], list[str]]) -> object:
        """The policy's action for the observation ``obs`` (``None``: missing) or the TensorDict ``make_td()``."""
        if self.kind == "tensordict":
            return self._call_td(make_td())
        if self.kind == "tensor":
            return self._call_tensor(obs, keys)
        return self._first_call(obs, make_td, keys)

    def _first_call(self, obs: torch.Tensor | None, make_td: Callable[[], TensorDictBase],
                    keys: Callable[[], list[str]]) -> object:
        """Rule 3: the observation first, the TensorDict if that call raises or the observation is missing;
        the call that works decides the run."""
        first: Exception | None = None
        if obs is not None:
            try:
                out = self._user(self._to_policy(obs))
            except UserPolicyError as exc:
                first = exc
            else:
                self.kind = "tensor"
                self._note_kind()
                return self._action_of(out)
        try:
            action = self._call_td(make_td())
        except (PolicyError, UserPolicyError) as second:
            first = first or self._missing_observation(keys)
            raise both_failed(first, second) from first.__cause__
        self.kind = "tensordict"
        self._note_kind(" (called with the observation it raised, with the TensorDict it worked: "
                        "annotate its parameter as a TensorDict to skip the first try)" if first else
                        f" (the env has no {key_to_string(self.cfg.obs_key)!r} for it)")
        return action

    @contextmanager
    def _own_rng(self) -> Iterator[None]:
        """Runs the call on this runner's RNG stream (when it has one), leaving the global one as it was."""
        if self._rng_state is None:
            yield
            return
        import torch

        outer = torch.get_rng_state()
        torch.set_rng_state(self._rng_state)
        try:
            yield
        finally:
            self._rng_state = torch.get_rng_state()
            torch.set_rng_state(outer)

    def _call_tensor(self, obs: torch.Tensor | None, keys: Callable[[], list[str]]) -> object:
        if obs is None:
            raise self._missing_observation(keys)
        return self._action_of(self._user(self._to_policy(obs)))

    def _missing_observation(self, keys: Callable[[], list[str]]) -> PolicyError:
        return PolicyError(f"the step TensorDict has no observation key {key_to_string(self.cfg.obs_key)!r}",
                           expected=f"one of {keys()}", got=key_to_string(self.cfg.obs_key),
                           fix="pass --obs-key with the right name")

    def _action_of(self, out: object) -> object:
        """The action in what a tensor policy returned: a tensor, or a mapping holding the action key."""
        import torch

        if isinstance(out, torch.Tensor):
            return out
        from collections.abc import Mapping

        if isinstance(out, Mapping) or _is_tensor_collection(out):
            key = self.cfg.action_key
            value = out
            for part in (key if isinstance(key, tuple) else (key,)):
                value = value.get(part, None) if isinstance(value, Mapping) or _is_tensor_collection(value) else None
            if value is None:
                keys = [key_to_string(k) for k in (out.keys(True, True) if _is_tensor_collection(out) else out)]
                raise PolicyError(f"the policy returned a mapping without the action key {key_to_string(key)!r}",
                                  expected=f"a tensor, or a mapping holding {key_to_string(key)!r}",
                                  got=f"keys {keys}",
                                  fix="return the action tensor, or pass --action-key with the key it uses")
            return value
        import numpy as np

        if isinstance(out, tuple) and out and not all(isinstance(v, (int, float, bool, np.number)) for v in out):
            kinds = ", ".join(type(v).__name__ for v in out)
            raise PolicyError(f"the policy returned a tuple ({kinds}), not an action",
                              expected="one action tensor per step",
                              got=f"a {type(out).__name__} of {len(out)} items",
                              fix="make the factory return a callable that selects the action, e.g. "
                                  "`lambda obs: actor(obs)[0]` for an actor that returns (action, log_prob), "
                                  "`lambda obs: model.predict(obs, deterministic=True)[0]` for a "
                                  "stable-baselines3 model")
        return out  # a tensor, a numpy array, a number or a list: the action checker converts it

    def _call_td(self, td: TensorDictBase) -> object:
        keys = self._in_keys
        if keys is not None:  # a module that declares what it reads: cast just that, in place, for the call
            out = self._call_cast_in_place(td, keys)
            inp = td
        else:  # any other policy may read every entry: each is checked and cast, into a copy
            inp = td.apply(self._to_policy) if self._needs_cast(td) else td
            out = self._user(inp)
        out = inp if out is None else out
        if not _is_tensor_collection(out):  # the action itself, or a mapping holding it
            return self._action_of(out)
        action = out.get(self.cfg.action_key, None)
        if action is None:
            raise PolicyError(f"the policy output has no action key {key_to_string(self.cfg.action_key)!r}",
                              expected=f"the policy to write {key_to_string(self.cfg.action_key)!r}",
                              got=f"keys {visible_keys(out)}",
                              fix="pass --action-key with the key the policy writes")
        if out is not td:  # observations were cast: carry what the policy wrote (recurrent state too)
            written = set(getattr(self.policy, "out_keys", ()) or ())
            for key in out.keys(True, True):
                if key in written or key not in td.keys(True, True):
                    td.set(key, out.get(key).to(td.device) if td.device is not None else out.get(key))
        return action

    def _call_cast_in_place(self, td: TensorDictBase, keys: list[NestedKey]) -> object:
        """Calls a module that reads only ``keys`` with those that need it cast to its dtype and device,
        swapped into ``td`` for the call and swapped back after: what it writes lands in ``td`` directly,
        and ``td`` keeps the env's own observations. Which keys need a cast is decided at the first call
        (the env's specs fix the dtypes; a key the module also writes is left to it), so a step pays for
        the swaps only."""
        if self._cast_keys is None:  # (key, dtype): noted once, here
            written = set(getattr(self.policy, "out_keys", ()) or ())
            self._cast_keys = [(k, self._to_policy(v).dtype) for k in keys if k not in written
                               and (v := td.get(k, None)) is not None and self._needs(v)]
        device = self.device
        originals: list[tuple[NestedKey, torch.Tensor]] = []
        for key, dtype in self._cast_keys:
            value = td.get(key, None)
            if value is not None:
                originals.append((key, value))
                td.set(key, value.to(device, dtype))
        try:
            return self._user(td)
        finally:
            for key, value in originals:
                td.set(key, value)

    @property
    def _in_keys(self) -> list[NestedKey] | None:
        """The policy's declared ``in_keys`` when it is a TensorDict module (which reads only those)."""
        if self._declared is None:
            nn = sys.modules.get("tensordict.nn")
            base = getattr(nn, "TensorDictModuleBase", None)
            keys = getattr(self.policy, "in_keys", None) if base is not None and isinstance(self.policy, base) \
                else None
            self._declared = (list(keys),) if keys is not None else (None,)
        return self._declared[0]

    def _user(self, arg: torch.Tensor | TensorDictBase) -> object:
        """Calls the user's policy; only its own exceptions become :class:`UserPolicyError`."""
        try:
            return self.policy(arg)
        except RenderError:
            raise
        except Exception as exc:
            raise UserPolicyError(f"{type(exc).__name__}: {exc}") from exc

    def _needs_cast(self, td: TensorDictBase) -> bool:
        return any(self._needs(v) for v in td.values(True, True))

    def _needs(self, tensor: torch.Tensor) -> bool:
        return self._cast_dtype(tensor) is not None or tensor.device != self.device

    def _cast_dtype(self, tensor: torch.Tensor) -> torch.dtype | None:
        if self.dtype is not None and tensor.is_floating_point() and tensor.dtype != self.dtype:
            return self.dtype
        return None

    def _to_policy(self, tensor: torch.Tensor) -> torch.Tensor:
        dtype = self._cast_dtype(tensor)
        if dtype is not None:
            self.note(f"observations cast from {tensor.dtype} to the policy's {dtype}")
        if tensor.device != self.device:
            self.note(f"observations moved from {tensor.device} to the policy's {self.device}")
        return tensor.to(self.device, dtype or tensor.dtype)
