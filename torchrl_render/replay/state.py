"""MuJoCo state: read it from a live env, store it in rollouts, read it back from saved rollouts.

:class:`MujocoStateReader` finds the simulation behind a torchrl env (a gymnasium MuJoCo
env, a dm_control env, or an env whose ``get_state()`` returns ``qpos``) and snapshots
``qpos`` (plus ``qvel``, ``act``, ``ctrl``, ``mocap_pos``, ``mocap_quat``, ``time``).
:func:`extract_qpos_trajectory` reads a ``T x nq`` qpos trajectory out of a rollout
TensorDict; :func:`episode_states` gives all ``T + 1`` states of an episode that was
recorded with ``mujoco_qpos_key`` (the state before each action, and the last one).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"qpos": torch.zeros(2, 3), "next": {"qpos": torch.ones(2, 3)}}, batch_size=[2])
    >>> extract_qpos_trajectory(td, "qpos")
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    >>> episode_states(td, "qpos").tolist()
    [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["MujocoStateReader", "episode_states", "extract_qpos_trajectory", "find_simulation", "store_qpos"]

_STATE_FIELDS = ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "time")


def _inner(env: Any) -> Any:
    """Unwraps TransformedEnv and torchrl's library wrappers (instance storage only, never getattr)."""
    from ..backends.base import underlying_env

    return underlying_env(env)


def _is_mj(obj: Any, name: str) -> bool:
    return type(obj).__name__ == name and type(obj).__module__.startswith("mujoco")


def find_simulation(env: Any) -> tuple[Any, Any] | None:
    """``(MjModel, MjData)`` behind ``env`` (torchrl-wrapped or raw), or ``None``."""
    for candidate in (env, _inner(env)):
        physics = getattr(candidate, "physics", None)
        if physics is not None and hasattr(getattr(physics, "model", None), "ptr"):
            return physics.model.ptr, physics.data.ptr
        unwrapped = getattr(candidate, "unwrapped", candidate)
        model, data = getattr(unwrapped, "model", None), getattr(unwrapped, "data", None)
        if _is_mj(model, "MjModel") and _is_mj(data, "MjData"):
            return model, data
    return None


class MujocoStateReader:
    """Reads MuJoCo state from torchrl-wrapped gymnasium MuJoCo, dm_control and ``get_state()`` envs.

    Same interface as ``torchrl.render.backends.MujocoStateReader``: :meth:`supports` and
    :meth:`capture` (a TensorDict); :meth:`read` is the fast path used during a run
    (numpy arrays, no TensorDict) and :meth:`model` the ``MjModel`` (when there is one).

    Example:
        >>> from types import SimpleNamespace
        >>> env = SimpleNamespace(data=SimpleNamespace(qpos=np.array([0.0, 1.0]), qvel=np.array([0.5, 0.0]),
        ...                                            time=0.25))
        >>> MujocoStateReader().capture(env)["qpos"].tolist()
        [0.0, 1.0]
    """

    def supports(self, env: Any) -> bool:
        """Whether ``env`` exposes a readable MuJoCo state."""
        try:
            self.read(env)
        except (KeyError, NotImplementedError, TypeError):
            return False
        return True

    def model(self, env: Any) -> Any:
        """The ``mujoco.MjModel`` behind ``env``, or ``None``."""
        sim = find_simulation(env)
        return sim[0] if sim is not None else None

    def read(self, env: Any) -> dict[str, np.ndarray]:
        """Copies of the state arrays (``qpos`` always; the others when present and not empty)."""
        sim = find_simulation(env)
        source = sim[1] if sim is not None else None
        if source is None:
            source = self._provided(env)
        if source is None:
            source = vars(env).get("data") if hasattr(env, "__dict__") else None
        if source is None:
            raise TypeError(f"env of type {type(env).__name__} exposes no MuJoCo state (no get_state() or data)")
        state = {}
        for key in _STATE_FIELDS:
            value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
            if value is None:
                continue
            array = np.array(value.detach().cpu().numpy() if hasattr(value, "detach") else value, dtype=np.float64)
            if key == "time" or array.size:
                state[key] = array
        if "qpos" not in state:
            raise KeyError("the MuJoCo state has no 'qpos' entry")
        return state

    def _provided(self, env: Any) -> Mapping[str, Any] | None:
        for candidate in (env, _inner(env)):
            get_state = getattr(type(candidate), "get_state", None)
            if callable(get_state):
                try:
                    state = get_state(candidate)
                except NotImplementedError:
                    continue
                if isinstance(state, Mapping) or hasattr(state, "keys"):
                    return state
        return None

    def capture(self, env: Any) -> Any:
        """A detached snapshot of ``env``'s MuJoCo state as a TensorDict (float64 tensors)."""
        import torch
        from tensordict import TensorDict

        return TensorDict({k: torch.as_tensor(v) for k, v in self.read(env).items()}, batch_size=[])


def _candidates(key: Any) -> list[Any]:
    key = tuple(key.split(".")) if isinstance(key, str) and "." in key else key
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, tuple) and key[0] == "next":
        return [key, key[1] if len(key) == 2 else key[1:]]
    return [key, ("next", *key) if isinstance(key, tuple) else ("next", key)]


def extract_qpos_trajectory(rollout: Any, qpos_key: Any = "qpos") -> list[list[float]]:
    """The ``T x nq`` qpos trajectory stored under ``qpos_key`` (its ``next`` twin also matches).

    Args:
        rollout: A rollout TensorDict (one episode, time first).
        qpos_key: The key (``"qpos"``, ``("next", "qpos")`` or ``"next.qpos"``).

    Returns:
        One list of floats per step.
    """
    for candidate in _candidates(qpos_key):
        value = rollout.get(candidate, None)
        if value is not None:
            break
    else:
        raise KeyError(f"qpos key {qpos_key!r} was not found in the rollout; tried {_candidates(qpos_key)}")
    array = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value, dtype=np.float64)
    if array.ndim == 1:
        array = array[None]
    return [[float(x) for x in row] for row in array.reshape(-1, array.shape[-1])]


def episode_states(rollout: Any, qpos_key: Any = "qpos") -> np.ndarray:
    """All ``T + 1`` qpos of an episode: the states before each action and the state after the last.

    With only one of ``key`` / ``("next", key)`` stored, the ``T`` states found are returned.
    """
    root, nxt = _candidates(qpos_key)
    if isinstance(root, tuple) and root[0] == "next":
        root, nxt = nxt, root
    before, after = rollout.get(root, None), rollout.get(nxt, None)
    if before is None or after is None:
        return np.asarray(extract_qpos_trajectory(rollout, qpos_key))
    before = np.asarray(before.detach().cpu(), dtype=np.float64).reshape(-1, before.shape[-1])
    after = np.asarray(after.detach().cpu(), dtype=np.float64).reshape(-1, after.shape[-1])
    return np.concatenate([before[:1], after])


def store_qpos(transition: Any, qpos_key: Any, before: np.ndarray | None, after: np.ndarray) -> None:
    """Writes the state before the action under the root key and the state after under ``("next", key)``."""
    import torch

    root, nxt = _candidates(qpos_key)
    if isinstance(root, tuple) and root[0] == "next":
        root, nxt = nxt, root
    shape = transition.batch_size
    if before is not None:
        transition.set(root, torch.as_tensor(before).reshape(*shape, -1))
    transition.set(nxt, torch.as_tensor(after).reshape(*shape, -1))
