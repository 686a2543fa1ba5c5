"""The live side of a run: the MuJoCo state behind each step record.

:class:`LiveStates` is what the sink calls per record: it reads the env's state with a
:class:`~torchrl_render.replay.state.MujocoStateReader` (built once per env), stores ``qpos``
into the transition under ``mujoco_qpos_key`` (the state before the action under the key,
the state after under ``("next", key)``), and, for rendered episodes of a format that takes
states (``html``; ``ipynb`` with the 3-D viewer), returns a state
:class:`~torchrl_render.data.FrameBundle` for the writers.

Example:
    >>> import gymnasium as gym
    >>> from types import SimpleNamespace
    >>> env = gym.make("InvertedPendulum-v5")
    >>> _ = env.reset(seed=0)
    >>> live = LiveStates(SimpleNamespace(format="html", mujoco_qpos_key=None, notebook_render_backend="auto"), True)
    >>> record = SimpleNamespace(env=env, trajectory=0, step=0, reward=0.0, wall=0.0)
    >>> bundle = live.step(record, None, 0.0, rendered=True)
    >>> bundle.state["model"].nq, bundle.state["qpos"].shape
    (2, (2,))
"""

from __future__ import annotations

from typing import Any

from ..data import FrameBundle
from ..errors import ConfigError
from .state import MujocoStateReader, store_qpos

__all__ = ["LiveStates"]


class LiveStates:
    """Per-record MuJoCo state for the writers and the rollouts (see the module docstring).

    Args:
        cfg: The run's config (``format``, ``mujoco_qpos_key``, ``notebook_render_backend``).
        wanted: Whether the format's writer takes states for this config.
    """

    def __init__(self, cfg: Any, wanted: bool) -> None:
        self.cfg, self.wanted = cfg, bool(wanted)
        self.qpos_key = getattr(cfg, "mujoco_qpos_key", None)
        # html must have a MuJoCo model; the notebook's "auto" viewer quietly stays off without one
        self.required = cfg.format == "html" or getattr(cfg, "notebook_render_backend", None) == "mujoco_wasm"
        self.counts_frames = int(cfg.format == "html")  # html's frames are states; other formats count pixels
        self._readers: dict[int, tuple[MujocoStateReader, Any]] = {}
        self._prev: Any = None

    def step(self, record: Any, transition: Any, ret: float, rendered: bool) -> FrameBundle | None:
        """Stores qpos into ``transition`` (steps > 0) and returns the state bundle, if one is wanted."""
        to_writers = self.wanted and rendered
        if not (to_writers or self.qpos_key is not None):
            return None
        found = self._read(record, needed=self.qpos_key is not None or self.required)
        if found is None:
            self.wanted = False
            return None
        model, state = found
        if self.qpos_key is not None:
            if transition is not None:
                store_qpos(transition, self.qpos_key, self._prev, state["qpos"])
            self._prev = state["qpos"]
        if not to_writers or model is None:  # a get_state() env without a model: qpos only, nothing to draw
            return None
        metrics = {"step": record.step, "reward": record.reward, "return": ret}
        return FrameBundle({}, record.step, record.trajectory, record.wall, metrics=metrics,
                           state={**state, "model": model})

    def _model_file(self, reader: MujocoStateReader, env: Any) -> Any:
        """An env without a MuJoCo model but with a ``get_state()``, and ``--mujoco-model-path``: the model file
        draws its qpos (as torchrl.render's viewer draws a rollout's qpos with the model it is given)."""
        path = getattr(self.cfg, "mujoco_model_path", None)
        if path is None or not reader.supports(env):
            return None
        from .scene import load_model

        model = load_model(path, getattr(self.cfg, "mujoco_asset_paths", ()) or ())
        nq = reader.read(env)["qpos"].size
        if nq != model.nq:
            raise ConfigError(f"the env's get_state() gives {nq} qpos, and the model {str(path)!r} has nq={model.nq}",
                              expected=f"{model.nq} qpos per state (the model's joints)", got=nq,
                              fix="pass the model file of this env with --mujoco-model-path")
        return model

    def _state_only(self, reader: MujocoStateReader, env: Any, needed: bool) -> bool:
        """An env without a MuJoCo model: its ``get_state()`` qpos are recorded (as torchrl.render's
        ``MujocoStateReader`` does) when only ``mujoco_qpos_key`` needs them; drawing needs the model."""
        if self.qpos_key is not None and not self.required and reader.supports(env):
            return True
        if not needed:
            return False
        if self.required:
            raise ConfigError(
                "the html format, the notebook's 3-D viewer and mujoco_qpos_key need a MuJoCo model, "
                "and this env has none",
                expected="a gymnasium MuJoCo env or a dm_control env (a mujoco.MjModel behind the env)",
                got=type(env).__name__,
                fix="use a video format (--out run.mp4), or --notebook-render-backend static for a notebook")
        raise ConfigError("mujoco_qpos_key records the env's MuJoCo state, and this env exposes none",
                          expected="a gymnasium MuJoCo or dm_control env, or an env whose get_state() returns "
                                   "a mapping with 'qpos'", got=type(env).__name__,
                          fix="drop --mujoco-qpos-key, or give the env a get_state() returning qpos")

    def _read(self, record: Any, needed: bool) -> tuple[Any, dict[str, Any]] | None:
        env = record.env
        if env is None:
            if not needed:
                return None
            raise ConfigError(
                "the html format, the notebook's 3-D viewer and mujoco_qpos_key read the MuJoCo state of the "
                "env, and this run's records carry no env (with --num-envs > 1 the envs live in worker processes)",
                expected="--num-envs 1", got=f"num_envs={getattr(self.cfg, 'num_envs', '?')}",
                fix="run with --num-envs 1 (or --notebook-render-backend static for a notebook)")
        entry = self._readers.get(id(env))
        if entry is None:
            reader = MujocoStateReader()
            model = reader.model(env) or self._model_file(reader, env)
            if model is None and not self._state_only(reader, env, needed):
                return None
            entry = self._readers[id(env)] = (reader, model)
        reader, model = entry
        return model, reader.read(env)
