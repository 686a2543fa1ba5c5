"""A gymnasium env on its way through a run, wrapped in torchrl only when something asks for torchrl.

The engine steps a gymnasium env in numpy, and the policy of most runs is a plain module: neither
needs torchrl, whose import (with tensordict's) costs more than a second. :class:`GymnasiumEnv` holds
the user's env and answers what the run asks of it without torchrl (the raw env, its spaces, its
batch size); anything torchrl's ``EnvBase`` has and the handle does not (its specs, ``rollout``,
``fake_tensordict``) builds torchrl's ``GymWrapper`` around the same env object, once, and is read
from it. Both views step the same simulator: stepping the raw env is what the wrapper would do.

Example:
    >>> import gymnasium
    >>> from torchrl_render.envs import to_torchrl_env
    >>> env = GymnasiumEnv(gymnasium.make("Pendulum-v1"), to_torchrl_env)
    >>> env.raw.spec.id, env.batch_size, env.wrapped
    ('Pendulum-v1', torch.Size([]), False)
    >>> env.action_spec.shape, env.wrapped       # a torchrl attribute: the wrapper is built now
    (torch.Size([1]), True)
    >>> env.close()
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..contracts import UserEnv

if TYPE_CHECKING:
    import torch
    from gymnasium import Space
    from torchrl.envs import EnvBase

__all__ = ["GymnasiumEnv", "loaded_class"]


def loaded_class(module: str, name: str) -> type | None:
    """``module.name`` if ``module`` is imported already, else None: an object cannot be an instance of a
    class whose module nobody imported, so an isinstance check needs no import of its own. (A caller that reads
    the attributes of what the class matches names it: ``batched: type[BatchedEnvBase] | None = loaded_class(...)``.)
    """
    mod = sys.modules.get(module)
    found = getattr(mod, name, None) if mod is not None else None
    return found if isinstance(found, type) else None


#: torchrl ``EnvBase`` names that a gymnasium env may have too, with another meaning: torchrl's win.
_TORCHRL_NAMES = frozenset({"reset", "step", "rollout", "set_seed", "seed", "device", "specs", "to", "state_dict",
                            "fake_tensordict", "rand_step", "rand_action"})


def _torchrl_name(name: str) -> bool:
    return name in _TORCHRL_NAMES or name.endswith(("_spec", "_specs", "_keys", "_key"))


class GymnasiumEnv:
    """The run's gymnasium env; torchrl's ``GymWrapper`` of it on demand.

    Args:
        raw: The gymnasium env the factory returned.
        wrap: ``wrap(raw) -> EnvBase``: builds the torchrl env (called at most once).
    """

    _torchrl_render_wrapped = True  # the engine may step ``raw`` directly (no transforms of the user's)
    # set through __dict__ in __init__ (never through __getattr__'s forwarding)
    _env: UserEnv
    _wrap: Callable[[UserEnv], EnvBase]
    _torchrl: EnvBase | None

    def __init__(self, raw: UserEnv, wrap: Callable[[UserEnv], EnvBase]) -> None:
        self.__dict__.update(_env=raw, _wrap=wrap, _torchrl=None)

    @property
    def raw(self) -> UserEnv:
        """The gymnasium env itself."""
        return self._env

    @property
    def wrapped(self) -> bool:
        """Whether the torchrl wrapper has been built."""
        return self._torchrl is not None

    @property
    def torchrl(self) -> EnvBase:
        """torchrl's ``GymWrapper`` around :attr:`raw` (built at the first call)."""
        if self._torchrl is None:
            self.__dict__["_torchrl"] = self._wrap(self._env)
        return self._torchrl

    @property
    def batch_size(self) -> torch.Size:
        import torch

        return torch.Size([])

    @property
    def observation_space(self) -> Space:
        return self._env.observation_space

    @property
    def action_space(self) -> Space:
        return self._env.action_space

    def close(self) -> None:
        """Closes the env (through the wrapper, when there is one: it closes the same env)."""
        if self._torchrl is not None:
            self._torchrl.close()
        else:
            self._env.close()

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):  # private probes (ours, copy's, pickle's) never build torchrl
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        if not _torchrl_name(name) and hasattr(self._env, name):
            return getattr(self._env, name)  # GymWrapper forwards what it lacks to the env it wraps
        return getattr(self.torchrl, name)

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self._env!r}{', torchrl-wrapped' if self.wrapped else ''})"
