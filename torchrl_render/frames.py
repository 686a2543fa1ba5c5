"""Frame normalisation (once, at the boundary) and camera layouts. Pure functions.

Example:
    >>> import numpy as np
    >>> to_uint8_hwc(np.ones((3, 4, 5), np.float32)).shape   # CHW float in [0, 1]
    (4, 5, 3)
    >>> sorted(apply_layout({"a": np.zeros((2, 2, 3), np.uint8),
    ...                      "b": np.zeros((2, 2, 3), np.uint8)}, "horizontal"))
    ['horizontal']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .contracts import Array, StepMetrics
from .errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = ["LAYOUTS", "FrameInput", "apply_layout", "draw_overlay", "overlay_lines", "to_uint8_hwc"]

LAYOUTS = ("single", "grid", "horizontal", "vertical", "separate")

#: An image as renderers and users hand it over: a numpy array (or anything ``np.asarray`` reads) or a torch
#: tensor; HWC or CHW, grey, RGB or RGBA, uint8 or float (:func:`to_uint8_hwc` makes it uint8 HWC RGB).
FrameInput: TypeAlias = "ArrayLike | torch.Tensor"


def to_uint8_hwc(frame: FrameInput) -> NDArray[np.uint8]:
    """Returns ``frame`` as a C-contiguous ``uint8`` array of shape ``(H, W, 3)``.

    Accepts numpy arrays and torch tensors, HWC or CHW, with 1, 3 or 4 channels
    (grey is repeated, alpha dropped), or a 2-D grey image. Floats are taken as
    ``[0, 1]`` when their maximum is at most 1, else as ``[0, 255]``.
    Arrays that are already ``uint8`` HxWx3 and contiguous are returned as is.
    """
    arr = _as_numpy(frame)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3:
        raise ConfigError("a frame must be an image", expected="an array of shape (H, W, C) or (C, H, W)",
                          got=f"shape {tuple(arr.shape)}",
                          fix="render one image per step (drop batch dimensions)")
    if _channels_first(arr.shape):
        arr = np.moveaxis(arr, 0, -1)
    channels = arr.shape[-1]
    if channels not in (1, 3, 4):
        raise ConfigError("a frame has an unsupported number of channels",
                          expected="1 (grey), 3 (RGB) or 4 (RGBA)", got=f"shape {tuple(arr.shape)}",
                          fix="return RGB images from the renderer")
    if channels == 4:
        arr = arr[..., :3]
    elif channels == 1:
        arr = np.repeat(arr, 3, axis=-1)
    if arr.dtype != np.uint8:
        arr = _to_uint8(arr)
    return np.ascontiguousarray(arr)


def _channels_first(shape: tuple[int, ...]) -> bool:
    """CHW: 1 or 3 leading channels and a last axis that is not 3 (torchrl.render's rule, so (3, H, 4) is
    CHW, not a 3-row RGBA image), or 4 leading channels before a last axis that is no channel count."""
    return (shape[0] in (1, 3) and shape[-1] != 3) or (shape[0] == 4 and shape[-1] not in (1, 3, 4))


def _as_numpy(frame: FrameInput) -> Array:
    if isinstance(frame, np.ndarray):
        return frame
    detach = getattr(frame, "detach", None)
    if detach is not None:  # torch.Tensor, without importing torch here
        return detach().cpu().numpy()
    return np.asarray(frame)


def _to_uint8(arr: Array) -> NDArray[np.uint8]:
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8) * 255
    if np.issubdtype(arr.dtype, np.floating):
        arr = np.nan_to_num(arr, nan=0.0, posinf=255.0, neginf=0.0)
        if arr.size and float(arr.max()) <= 1.0:
            arr = arr * 255.0
        return np.clip(np.rint(arr), 0, 255).astype(np.uint8)
    return np.clip(arr, 0, 255).astype(np.uint8)


def apply_layout(frames: dict[str, NDArray[np.uint8]], layout: str) -> dict[str, NDArray[np.uint8]]:
    """Combines per-camera frames into what the writers receive.

    ``single`` keeps the first camera; ``separate`` keeps every camera under its
    own name (writers then write one stream each); ``horizontal``, ``vertical``
    and ``grid`` tile the cameras into one image keyed by the layout's name.
    Frames of different sizes are padded with black to a common size.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown camera layout {layout!r}", expected=", ".join(LAYOUTS), got=layout)
    if layout == "separate" or (len(frames) == 1 and layout != "single"):
        return frames
    images = list(frames.values())
    if layout == "single":
        return {next(iter(frames)): images[0]}
    h = max(im.shape[0] for im in images)
    w = max(im.shape[1] for im in images)
    images = [_pad(im, h, w) for im in images]
    if layout == "horizontal":
        return {layout: np.concatenate(images, axis=1)}
    if layout == "vertical":
        return {layout: np.concatenate(images, axis=0)}
    cols = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    images += [np.zeros_like(images[0])] * (rows * cols - len(images))
    grid = [np.concatenate(images[r * cols:(r + 1) * cols], axis=1) for r in range(rows)]
    return {layout: np.concatenate(grid, axis=0)}


def _pad(image: NDArray[np.uint8], h: int, w: int) -> NDArray[np.uint8]:
    if image.shape[:2] == (h, w):
        return image
    out = np.zeros((h, w, 3), np.uint8)
    out[: image.shape[0], : image.shape[1]] = image
    return out


# A 3x5 pixel font: enough for step/reward/return/success read-outs, legible from 64x64 up
# (scaled by an integer factor on larger frames). Pure numpy: no font files, no Pillow.
_GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001001001",
    "8": "111101111101111", "9": "111101111001111", "-": "000000111000000", ".": "000000000000010",
    " ": "000000000000000", "t": "010111010010011", "r": "000101110100100", "R": "110101110101101",
    "S": "011100010001110", "+": "000010111010000", "e": "000111111100011", "i": "010000010010010",
    "n": "000110101101101", "f": "011100110100100", "a": "000011101101011", "N": "101111111111101",
}


def overlay_lines(metrics: StepMetrics) -> list[str]:
    """The text drawn by :func:`draw_overlay`: step, reward, return, success (when known).

    Example:
        >>> overlay_lines({"step": 12, "reward": 0.5, "return": 3.25, "success": True})
        ['t12', 'r0.50', 'R3.2', 'S1']
    """
    lines = [f"t{int(metrics.get('step', 0))}"]
    if "reward" in metrics:
        lines.append(f"r{metrics['reward']:.2f}")
    if "return" in metrics:
        lines.append(f"R{metrics['return']:.1f}")
    if metrics.get("success") is not None:
        lines.append(f"S{int(bool(metrics['success']))}")
    return lines


def draw_overlay(frame: NDArray[np.uint8], metrics: StepMetrics) -> NDArray[np.uint8]:
    """Returns a copy of ``frame`` (uint8 HxWx3) with the metrics drawn in its top-left corner.

    White 3x5-pixel glyphs, scaled by ``max(1, H // 120)``, on a darkened box: readable at
    64x64 and at 480x480. Text that does not fit is clipped, never wrapped.
    """
    out = frame.copy()
    scale = max(1, frame.shape[0] // 120)
    lines = overlay_lines(metrics)
    cell_w, cell_h = 4 * scale, 6 * scale
    box_h = min(frame.shape[0], cell_h * len(lines) + scale)
    box_w = min(frame.shape[1], cell_w * max(map(len, lines)) + scale)
    out[:box_h, :box_w] //= 3
    for row, text in enumerate(lines):
        for col, char in enumerate(text):
            _blit(out, _GLYPHS.get(char, _GLYPHS[" "]), scale + row * cell_h, scale + col * cell_w, scale)
    return out


def _blit(out: NDArray[np.uint8], glyph: str, top: int, left: int, scale: int) -> None:
    bitmap = np.array([c == "1" for c in glyph], bool).reshape(5, 3)
    bitmap = np.kron(bitmap, np.ones((scale, scale), bool))
    h = max(0, min(bitmap.shape[0], out.shape[0] - top))
    w = max(0, min(bitmap.shape[1], out.shape[1] - left))
    region = out[top:top + h, left:left + w]
    region[bitmap[:h, :w]] = 255
