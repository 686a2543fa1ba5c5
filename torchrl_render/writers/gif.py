"""Animated GIF, streamed: each frame is encoded and written as it arrives.

Pillow's ``save(save_all=True, append_images=...)`` needs every frame at once,
so the file is assembled here block by block: the GIF89a header, logical screen
and NETSCAPE loop extension with the first frame; per frame a graphics control
extension (its delay) and the image with its own 256-colour palette (Pillow's
fast octree quantizer; Pillow's GIF encoder does the LZW); the trailer on close.
The frame size comes from the first frame; every later frame must match it.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> from PIL import Image
    >>> from torchrl_render.data import FrameBundle
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run.gif"
    >>> with GifWriter(out, fps=20) as w:
    ...     for step in range(3):
    ...         w.write(FrameBundle({"default": np.full((8, 10, 3), 40 * step, np.uint8)}, step, 0))
    >>> with Image.open(out) as im:
    ...     im.n_frames, im.info["loop"], im.info["duration"]
    (3, 0, 50)
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import IO, TYPE_CHECKING

from PIL import GifImagePlugin, Image

from ..data import FrameBundle
from ..errors import WriterError
from .base import Writer, close_quietly, no_frames_error

if TYPE_CHECKING:
    from ..config import RenderConfig


__all__ = ["GifWriter"]

log = logging.getLogger(__name__)

TRAILER = b"\x3b"
QUANTIZE = Image.Quantize.FASTOCTREE  # ~70x faster than MEDIANCUT at 480x480, slightly coarser
DISPOSE_NONE = 1  # "do not dispose": every frame is a full frame anyway


class GifWriter(Writer):
    """Streams frames into an animated ``.gif`` that loops forever.

    Args:
        path: Target file; written under a temporary name and renamed on close.
        fps: Frames per second; GIF delays are whole centiseconds (at least 2),
            so the played rate is ``100 / round(100 / fps)``.
    """

    format = "gif"
    #: camera_layout="separate": one file per trajectory and camera (torchrl.render's <stem>_traj_000_<camera>)
    stream_per_file = True

    def __init__(self, path: str | Path, fps: float = 30.0) -> None:
        super().__init__(path)
        self._file: IO[bytes] | None = None
        self.fps = float(fps)
        self.delay_cs = max(2, round(100 / self.fps))

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> GifWriter:
        """Reads ``fps``."""
        return cls(path, fps=cfg.fps)

    def write(self, bundle: FrameBundle) -> None:
        """Quantizes the bundle's frame and appends it to the file."""
        frame = self._first_frame(bundle, self._open)
        image = Image.fromarray(frame).quantize(256, method=QUANTIZE)
        blocks = GifImagePlugin.getdata(image, duration=self.delay_cs * 10, disposal=DISPOSE_NONE,
                                        include_color_table=True)
        assert self._file is not None  # the first frame opened it (_first_frame calls _open)
        self._file.write(b"".join(blocks))
        self.num_frames += 1

    def _open(self, height: int, width: int) -> None:
        if max(height, width) > 0xFFFF:
            raise WriterError("the frame is too large for a GIF", expected="at most 65535 pixels a side",
                              got=f"{width}x{height}", fix="render smaller frames, or write an mp4")
        self.frame_shape = (height, width)
        try:
            self._file = open(self.tmp, "wb")
        except OSError as exc:
            raise WriterError(f"cannot create the GIF file {str(self.path)!r}", got=str(exc),
                              fix="check that the folder exists and is writable") from exc
        self._file.write(_header(width, height))

    def _finish(self) -> dict[str, object]:
        if self._file is None:
            raise no_frames_error(self.format, self.path)
        file, self._file = self._file, None
        with file:
            file.write(TRAILER)
        height, width = self.frame_shape or (0, 0)
        return {"width": width, "height": height, "fps": 100 / self.delay_cs, "delay_cs": self.delay_cs,
                "loop": 0}

    def _release(self) -> None:
        file, self._file = self._file, None
        close_quietly(file, "gif")


def _header(width: int, height: int) -> bytes:
    """GIF89a signature, logical screen (no global colour table) and an endless loop."""
    screen = struct.pack("<HHBBB", width, height, 0x70, 0, 0)  # 8-bit colour resolution, no global table
    loop = b"\x21\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", 0) + b"\x00"  # loop count 0: forever
    return b"GIF89a" + screen + loop
