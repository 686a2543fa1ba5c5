"""Test helper: read written media back with real decoders (PyAV / FFmpeg, Pillow).

Import it from any test (``tests/`` is on ``sys.path`` through ``conftest.py``)::

    from helpers.mediaprobe import probe_mp4, gif_frames
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np
from PIL import Image

__all__ = ["decode_frames", "gif_frames", "has_faststart", "probe_mp4"]


def probe_mp4(path: str | Path) -> dict[str, Any]:
    """Facts about the first video stream of ``path``, counting frames by decoding them all.

    Returns:
        ``codec`` (e.g. ``"h264"``), ``pix_fmt``, ``width``, ``height``, ``frames`` (decoded),
        ``fps`` (float) and ``rate`` (the exact :class:`fractions.Fraction`).
    """
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        ctx = stream.codec_context
        frames = sum(1 for _ in container.decode(stream))
        rate = stream.average_rate
        return {"codec": ctx.name, "pix_fmt": ctx.pix_fmt, "width": ctx.width, "height": ctx.height,
                "frames": frames, "fps": float(rate) if rate else None, "rate": rate}


def decode_frames(path: str | Path) -> Iterator[np.ndarray]:
    """Every frame of a video or GIF as uint8 RGB ``(H, W, 3)``, decoded by FFmpeg."""
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            yield frame.to_ndarray(format="rgb24")


def gif_frames(path: str | Path) -> int:
    """Number of frames Pillow finds in a GIF."""
    with Image.open(path) as image:
        return image.n_frames


def has_faststart(path: str | Path) -> bool:
    """Whether the ``moov`` atom comes before ``mdat`` (playback can start while downloading)."""
    data = Path(path).read_bytes()
    moov, mdat = data.find(b"moov"), data.find(b"mdat")
    return 0 <= moov < mdat


DATA_MP4 = re.compile(r"data:video/mp4;base64,([A-Za-z0-9+/=]+)")


def decode_embedded(html_text):
    """The frames of every base64 mp4 in ``html_text``, decoded by PyAV."""
    counts = []
    for match in DATA_MP4.finditer(html_text):
        with av.open(io.BytesIO(base64.b64decode(match.group(1)))) as container:
            counts.append(sum(1 for _ in container.decode(video=0)))
    return counts


def x264_subme(path) -> int:
    """The ``subme`` setting x264 records in the stream's SEI text (0 ultrafast, 2 veryfast, 8 slow)."""
    data = path.read_bytes()
    assert b"x264 - core" in data
    start = data.index(b"subme=") + len(b"subme=")
    return int(data[start:data.index(b" ", start)])
