"""``pixels``: frames are the env's pixel observations (``from_pixels=True`` envs).

Costs nothing extra: the env already rendered the image for its observation.
The entry is returned as the env produced it (HWC or CHW, uint8 or float); the
pipeline normalises it once (:func:`torchrl_render.frames.to_uint8_hwc`).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from torchrl.data import Composite, Unbounded
    >>> class Env:  # anything with an observation spec holding "pixels"
    ...     observation_spec = Composite(pixels=Unbounded((1, 4, 5, 3), dtype=torch.uint8))
    >>> cfg = type("Cfg", (), {"pixel_key": "pixels", "camera": ["default"]})()
    >>> with PixelsBackend.from_config(Env(), cfg) as backend:
    ...     frames = backend.capture(TensorDict(pixels=torch.zeros(1, 4, 5, 3, dtype=torch.uint8)))
    >>> {name: tuple(frame.shape) for name, frame in frames.items()}
    {'default': (4, 5, 3)}
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..contracts import StepView, UserEnv
from ..envs.unwrap import plain_gymnasium, space_keys
from ..errors import BackendUnavailable
from ..keys import NestedKey
from .base import DrawnFrames, RenderBackend

if TYPE_CHECKING:
    import torch
    from torchrl.data import Composite

    from ..config import RenderConfig


__all__ = ["PixelsBackend", "TensorDictPixelsBackend"]

log = logging.getLogger("torchrl_render")


def _spec_keys(env: UserEnv) -> set[NestedKey] | None:
    """Every (nested) key of the env's observation spec, or ``None`` when it has none."""
    raw = plain_gymnasium(env)
    if raw is not None:  # the keys torchrl's GymWrapper would give, read from the space without torchrl
        return space_keys(raw.observation_space)
    keys: set[NestedKey] = set()
    found = False
    for attr in ("full_observation_spec", "observation_spec"):
        spec = getattr(env, attr, None)
        if spec is None or not hasattr(spec, "keys"):
            continue
        found = True
        keys.update(spec.keys(True, True) if _takes_nested(spec) else spec.keys())
    return keys if found else None


def _takes_nested(spec: Composite) -> bool:
    try:
        spec.keys(True, True)
    except TypeError:
        return False
    return True


def _same_key(a: NestedKey, b: NestedKey) -> bool:
    def norm(k: NestedKey) -> tuple[str, ...]:
        return k if isinstance(k, tuple) else (k,)

    return norm(a) == norm(b)


class PixelsBackend(RenderBackend):
    """Reads ``pixel_key`` from each step's TensorDict.

    Args:
        pixel_key: The (nested) key of the pixel observation.
        camera: The name the frames are given (the config's single camera, ``"default"`` usually).
    """

    name = "pixels"

    def __init__(self, pixel_key: NestedKey = "pixels", camera: str = "default") -> None:
        super().__init__()
        self.pixel_key = pixel_key
        self.camera = camera
        self._missing_noted = False

    @classmethod
    def from_config(cls, env: UserEnv, cfg: RenderConfig) -> PixelsBackend:
        pixel_key = getattr(cfg, "pixel_key", "pixels")
        cameras = list(getattr(cfg, "camera", None) or ["default"])
        keys = _spec_keys(env)
        if keys is None or not any(_same_key(pixel_key, k) for k in keys):
            shown = sorted(".".join(k) if isinstance(k, tuple) else str(k) for k in (keys or ()))
            raise BackendUnavailable(
                f"the env has no pixel observation {_show(pixel_key)!r}",
                expected=f"{_show(pixel_key)!r} in the env's observation spec",
                got=(f"observation keys {shown}" if keys is not None
                     else f"{type(env).__name__} without an observation spec"),
                fix="pass --from-pixels / from_pixels=True to the env factory, or point --pixel-key at the env's "
                    "image entry, or use --render-backend env / mujoco")
        if len(cameras) > 1:
            raise BackendUnavailable(
                "the pixels backend has a single view (the pixel observation) but several cameras were asked for",
                expected="one camera", got=cameras,
                fix="use --render-backend mujoco for several named cameras, or ask for one camera")
        return cls(pixel_key=pixel_key, camera=cameras[0])

    def capture(self, td: StepView | None) -> DrawnFrames | None:
        frame: torch.Tensor | None = td.get(self.pixel_key, None) if td is not None else None
        if frame is None:
            if not self._missing_noted:
                self._missing_noted = True
                self.notes.append(f"pixels backend: a step had no {_show(self.pixel_key)!r} entry; "
                                  "its frame was skipped")
                log.warning("pixels backend: a step had no %r entry; its frame was skipped", _show(self.pixel_key))
            return None
        while getattr(frame, "ndim", 0) > 3 and frame.shape[0] == 1:
            frame = frame[0]
        return {self.camera: frame}

    def info(self) -> dict[str, object]:
        return {"render_backend": self.name, "pixel_key": _show(self.pixel_key), "cameras": [self.camera]}


def _show(key: NestedKey) -> str:
    return ".".join(key) if isinstance(key, tuple) else str(key)


#: torchrl.render's name for it (``torchrl.render.backends.pixels.TensorDictPixelsBackend``), with our contract.
TensorDictPixelsBackend = PixelsBackend
