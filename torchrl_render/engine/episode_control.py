"""The transform inside each torchrl env worker: reseeds every episode and renders the rendered ones.

It reads two control entries of the reset TensorDict (``_episode_seed``: the episode's seed, or -1;
``_episode_render``: whether the episode is rendered) and writes the frames of rendered steps under
``_frames`` (zeros otherwise, so the batch keeps one spec). The render backend is built by the
``make_backend`` factory it is given, inside the worker (its MuJoCo/EGL context is made there).
This module imports torchrl at its top: it is loaded only on the engine's torchrl path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch
from torchrl.data import Bounded, Unbounded
from torchrl.envs import Transform

from ..contracts import FrameSource, UserEnv
from ..envs.unwrap import underlying_env
from .seeding import reseed_for_reset

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.data import Composite

__all__ = ["CONTROL_KEYS", "FRAMES_KEY", "RENDER_KEY", "SEED_KEY", "EpisodeControl"]

SEED_KEY = "_episode_seed"
RENDER_KEY = "_episode_render"
FRAMES_KEY = "_frames"
CONTROL_KEYS = (SEED_KEY, RENDER_KEY, FRAMES_KEY)


class EpisodeControl(Transform):
    """Reseeds at reset from ``_episode_seed``; renders when ``_episode_render`` is set.

    Args:
        make_backend: Builds the render backend on the worker's env (uint8 HWC frames), e.g.
            ``functools.partial(torchrl_render.backends.factory.make_backend, cfg)``; ``None``: no frames.
    """

    def __init__(self, make_backend: Callable[[UserEnv], FrameSource] | None) -> None:
        super().__init__(in_keys=[], out_keys=[])
        self.make_backend, self.needs_frames = make_backend, make_backend is not None
        self.backend: FrameSource | None = None
        self.probed = False
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.render_now = False

    def _probe_shapes(self) -> None:
        """Frame shapes for the spec, from one frame of a throwaway backend (also in the parent's
        metadata env, which never renders an episode)."""
        if self.probed or not self.needs_frames:
            return
        self.probed = True
        probe_backend = self._make_backend()
        try:
            probe = probe_backend.capture(self.parent.base_env.reset()) or {}
        finally:
            probe_backend.close()
        self.shapes = {name: np.shape(f) for name, f in probe.items()}

    def _make_backend(self) -> FrameSource:
        assert self.make_backend is not None  # called only when needs_frames
        return self.make_backend(self.parent.base_env)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        if tensordict is not None:
            seed = tensordict.get(SEED_KEY, None)
            if seed is not None and int(seed) >= 0:
                base = self.parent.base_env
                reseed_for_reset(base, underlying_env(base), int(seed))
            flag = tensordict.get(RENDER_KEY, None)
            self.render_now = bool(flag) if flag is not None else False
        return tensordict

    def _frames(self, td: TensorDictBase) -> TensorDictBase:
        captured = None
        if self.render_now:
            assert self.backend is not None  # made by _reset for a rendered episode, before its steps
            captured = self.backend.capture(td)
        for name, shape in self.shapes.items():
            frame = captured[name] if captured else np.zeros(shape, np.uint8)
            td.set((FRAMES_KEY, name), torch.from_numpy(np.ascontiguousarray(frame)))
        return td

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.render_now and self.shapes:
            # made at the first rendered episode: a camera set up at its first frame (as gymnasium's
            # default view is) sees that episode's state, as it does with one env
            if self.backend is None:
                self.backend = self._make_backend()
            self.backend.begin_episode()
        return self._frames(tensordict_reset) if self.shapes else tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._frames(next_tensordict) if self.shapes else next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        self._probe_shapes()
        for name, shape in self.shapes.items():
            observation_spec[(FRAMES_KEY, name)] = Bounded(0, 255, shape=shape, dtype=torch.uint8,
                                                           device=observation_spec.device)
        return observation_spec

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        state_spec[SEED_KEY] = Unbounded(shape=(), dtype=torch.int64, device=state_spec.device)
        state_spec[RENDER_KEY] = Unbounded(shape=(), dtype=torch.bool, device=state_spec.device)
        return state_spec

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None
