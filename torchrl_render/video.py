"""``torchrl.render.video``'s frame helpers, as faces over :mod:`torchrl_render.frames` (the one normalisation)
and our writers (the encoders).

The pipeline streams frames into the writers; these functions are what scripts call on frames of
their own: :func:`normalize_frame`, :func:`normalize_frame_output`, :func:`compose_frame_grid`,
:func:`encode_video` (H.264 mp4 through PyAV, where torchrl.render uses torchcodec),
:func:`encode_gif` and :func:`write_png`.

Example:
    >>> import numpy as np
    >>> compose_frame_grid([np.zeros((2, 2, 3), np.uint8)] * 3).shape
    (4, 4, 3)
    >>> sorted(normalize_frame_output([np.zeros((2, 2)), None, np.ones((2, 2, 4))]))
    ['camera_0', 'camera_2']
    >>> normalize_frame(np.zeros((3, 4, 4), np.uint8)).shape   # channels first
    (4, 4, 3)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from .data import FrameBundle
from .errors import ConfigError, NoFramesError
from .frames import FrameInput, apply_layout, to_uint8_hwc

if TYPE_CHECKING:
    from .writers.base import Writer

__all__ = ["compose_frame_grid", "encode_gif", "encode_video", "normalize_frame", "normalize_frame_output",
           "write_png"]

#: A renderer's output, as :func:`normalize_frame_output` takes it: frames by camera name, a list of frames, one
#: frame, or None (a None frame is no frame).
FrameOutput: TypeAlias = ("Mapping[object, FrameInput | None] | list[FrameInput | None] "
                          "| tuple[FrameInput | None, ...] | FrameInput | None")


def normalize_frame(frame: FrameInput) -> NDArray[np.uint8]:
    """One image (array or tensor; HWC or CHW; grey, RGB or RGBA; uint8 or float) as ``uint8`` ``H x W x 3``."""
    return to_uint8_hwc(frame)


def normalize_frame_output(output: FrameOutput) -> dict[str, NDArray[np.uint8]]:
    """A renderer's output as ``{camera: uint8 HxWx3}``: a mapping keeps its names, a list or tuple
    is ``camera_<i>``, one image is ``default``; ``None`` entries are dropped."""
    if output is None:
        return {}
    if isinstance(output, Mapping):
        return {str(name): to_uint8_hwc(frame) for name, frame in output.items() if frame is not None}
    if isinstance(output, (list, tuple)):
        return {f"camera_{i}": to_uint8_hwc(frame) for i, frame in enumerate(output) if frame is not None}
    return {"default": to_uint8_hwc(output)}


def compose_frame_grid(frames: Sequence[FrameInput],
                       layout: Literal["single", "grid", "horizontal", "vertical"] = "grid") -> NDArray[np.uint8]:
    """One image of ``frames``: ``grid`` (and ``single``, as in torchrl.render) tiles them nearly square,
    ``horizontal`` in a row, ``vertical`` in a column; smaller frames are padded with black."""
    if not len(frames):
        raise ConfigError("there are no frames to compose", expected="at least one frame", got="[]",
                          fix="pass one frame or more")
    named = {str(i): to_uint8_hwc(frame) for i, frame in enumerate(frames)}
    tiled = apply_layout(named, "grid" if layout == "single" else layout)
    return next(iter(tiled.values()))


def encode_video(frames: Sequence[FrameInput], path: str | Path, fps: float, *, video_codec: str | None = None) -> Path:
    """Encodes ``frames`` as a browser-playable mp4 at ``path`` (H.264 unless ``video_codec``); returns ``path``.

    Example:
        >>> import numpy as np, tempfile, os
        >>> out = os.path.join(tempfile.mkdtemp(), "v.mp4")
        >>> encode_video([np.zeros((8, 8, 3), np.uint8)] * 2, out, fps=10).name
        'v.mp4'
    """
    from .writers.mp4 import Mp4Writer

    return _encode(Mp4Writer(path, fps=fps, codec=video_codec), frames, "video")


def encode_gif(frames: Sequence[FrameInput], path: str | Path, fps: float) -> Path:
    """Encodes ``frames`` as an animated GIF that loops; returns ``path``."""
    from .writers.gif import GifWriter

    return _encode(GifWriter(path, fps=fps), frames, "GIF")


def write_png(frame: FrameInput, path: str | Path) -> Path:
    """Writes one frame as a PNG file; returns ``path``."""
    from PIL import Image

    path = Path(path)
    Image.fromarray(to_uint8_hwc(frame)).save(path, format="PNG")
    return path


def _encode(writer: Writer, frames: Iterable[FrameInput], what: str) -> Path:
    with writer:
        for step, frame in enumerate(frames):
            writer.write(FrameBundle({"default": to_uint8_hwc(frame)}, step, 0))
        if writer.num_frames == 0:
            raise NoFramesError(f"there are no frames to encode as a {what}", expected="at least one frame",
                                got="[]", fix="pass one frame or more")
    return writer.path
