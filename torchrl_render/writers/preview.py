"""The animated PNG preview under each video of the report notebook (GitHub's viewer blocks ``<video>``).

Every k-th frame, downscaled to at most :data:`PREVIEW_WIDTH` px, in one shared palette; k doubles
whenever the frame cap is passed, so memory stays flat however long the episode.

Example:
    >>> import numpy as np
    >>> preview = Preview(fps=30.0)
    >>> for step in range(40):
    ...     preview.add(np.full((32, 32, 3), step * 6, np.uint8))
    >>> preview.encode()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
"""

from __future__ import annotations

import io
import math

import numpy as np
from numpy.typing import NDArray
from PIL import Image

__all__ = ["PREVIEW_COLOURS", "PREVIEW_FPS", "PREVIEW_MAX_FRAMES", "PREVIEW_WIDTH", "Preview"]

PREVIEW_WIDTH = 240
PREVIEW_FPS = 10.0
PREVIEW_MAX_FRAMES = 120
PREVIEW_COLOURS = 64


class Preview:
    """Every k-th frame, downscaled, for an animated PNG; k doubles whenever the frame cap is passed.

    The frames share one small palette (taken from a strip of frames spread over the episode),
    which makes the preview about 4x smaller than full colour; at most
    ``PREVIEW_MAX_FRAMES`` small frames are held, so memory stays flat.
    """

    def __init__(self, fps: float) -> None:
        self.fps = fps
        self.stride = max(1, round(fps / PREVIEW_FPS))
        self.seen = 0
        self.frames: list[Image.Image] = []

    def add(self, frame: NDArray[np.uint8]) -> None:
        if self.seen % self.stride == 0:
            image = Image.fromarray(frame)
            factor = math.ceil(image.width / PREVIEW_WIDTH)
            self.frames.append(image.reduce(factor) if factor > 1 else image)
            if len(self.frames) > PREVIEW_MAX_FRAMES:
                self.frames, self.stride = self.frames[::2], self.stride * 2
        self.seen += 1

    def encode(self) -> bytes | None:
        if not self.frames:
            return None
        frames, self.frames = self.frames, []
        picks = frames[:: max(1, len(frames) // 8)][:8]
        strip = Image.new("RGB", (sum(f.width for f in picks), max(f.height for f in picks)))
        x = 0
        for f in picks:
            strip.paste(f, (x, 0))
            x += f.width
        palette = strip.quantize(PREVIEW_COLOURS, method=Image.Quantize.MEDIANCUT)
        first, *rest = [f.quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
        buffer = io.BytesIO()
        first.save(buffer, format="PNG", save_all=bool(rest), append_images=rest,
                   duration=round(1000 * self.stride / self.fps), loop=0)
        return buffer.getvalue()
