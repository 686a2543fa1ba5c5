"""``torchrl.render.video``'s frame helpers, as faces over :mod:`torchrl_render.frames` (the one normalisation).

Encoding lives in the writers (:mod:`torchrl_render.writers`), which stream; these two pure
functions are what scripts call on frames of their own.

Example:
    >>> import numpy as np
    >>> compose_frame_grid([np.zeros((2, 2, 3), np.uint8)] * 3).shape
    (4, 4, 3)
    >>> sorted(normalize_frame_output([np.zeros((2, 2)), None, np.ones((2, 2, 4))]))
    ['camera_0', 'camera_2']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from .errors import ConfigError
from .frames import apply_layout, to_uint8_hwc

__all__ = ["compose_frame_grid", "normalize_frame_output"]


def normalize_frame_output(output: Any) -> dict[str, np.ndarray]:
    """A renderer's output as ``{camera: uint8 HxWx3}``: a mapping keeps its names, a list or tuple
    is ``camera_<i>``, one image is ``default``; ``None`` entries are dropped."""
    if output is None:
        return {}
    if isinstance(output, Mapping):
        return {str(name): to_uint8_hwc(frame) for name, frame in output.items() if frame is not None}
    if isinstance(output, (list, tuple)):
        return {f"camera_{i}": to_uint8_hwc(frame) for i, frame in enumerate(output) if frame is not None}
    return {"default": to_uint8_hwc(output)}


def compose_frame_grid(frames: Sequence[np.ndarray],
                       layout: Literal["single", "grid", "horizontal", "vertical"] = "grid") -> np.ndarray:
    """One image of ``frames``: ``grid`` (and ``single``, as in torchrl.render) tiles them nearly square,
    ``horizontal`` in a row, ``vertical`` in a column; smaller frames are padded with black."""
    if not len(frames):
        raise ConfigError("there are no frames to compose", expected="at least one frame", got="[]",
                          fix="pass one frame or more")
    named = {str(i): to_uint8_hwc(frame) for i, frame in enumerate(frames)}
    tiled = apply_layout(named, "grid" if layout == "single" else layout)
    return next(iter(tiled.values()))
