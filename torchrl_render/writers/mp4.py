"""H.264 MP4 through PyAV, in-process: the fast, browser-safe format.

yuv420p and even dimensions (odd sizes are padded with black at the right and
bottom, never resampled), ``+faststart`` so the ``moov`` atom comes first and a
browser starts playing before the download ends. The frame size comes from the
first frame; the encoder is opened only then.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> from torchrl_render.data import FrameBundle
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run.mp4"
    >>> with Mp4Writer(out, fps=10) as w:
    ...     for step in range(3):
    ...         w.write(FrameBundle({"default": np.zeros((33, 47, 3), np.uint8)}, step, 0))
    >>> art = w.close()
    >>> art.num_frames, art.info["codec"], art.info["width"], art.info["height"]
    (3, 'h264', 48, 34)
"""

from __future__ import annotations

import logging
import os
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import av
import numpy as np
from numpy.typing import NDArray

from ..data import FrameBundle
from ..errors import WriterError
from .base import Writer, no_frames_error

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.video.stream import VideoStream

    from ..config import RenderConfig


__all__ = ["Mp4Writer"]

log = logging.getLogger(__name__)

DEFAULT_CODEC = "libx264"
PIX_FMT = "yuv420p"
PRESET = "veryfast"
#: x264's macroblock-tree rate control reads an uninitialised value of x264's own (valgrind: "use of
#: uninitialised value", from a stack allocation in its lookahead, x264 core 165, on small frames such
#: as 48x48): the bits it wrote then depended on what earlier calls had left in the encoding thread's
#: memory, and the same frames encoded to other videos from run to run on the background writer thread.
#: Without it the encoding is a function of the frames (valgrind reports nothing); at the same size the
#: quality is the same on our renders (HalfCheetah, 480x480, 201 frames: 755 KB / 35.76 dB with it at
#: crf 23, 766 KB / 35.81 dB without it at crf 25), so crf 23 now gives about a fifth larger files of
#: about 1 dB more PSNR. See docs/formats.md.
X264_DETERMINISTIC = {"libx264": {"mbtree": "0"}}


class Mp4Writer(Writer):
    """Streams frames into an H.264 ``.mp4`` (yuv420p, faststart).

    Args:
        path: Target file; written under a temporary name and renamed on close.
        fps: Frames per second; non-integer rates such as 29.97 are kept exactly.
        codec: FFmpeg encoder name (default ``libx264``).
        crf: Constant rate factor for x264/x265 (0-51, lower is better).
        preset: x264/x265 speed preset (``veryfast`` by default: about 90 frames/s at 480x640 on one
            core here; ``superfast`` uses about a third less CPU for a file about half again as large).
    """

    format = "mp4"
    #: camera_layout="separate": one file per trajectory and camera (torchrl.render's <stem>_traj_000_<camera>)
    stream_per_file = True

    def __init__(self, path: str | Path, fps: float = 30.0, codec: str | None = None, crf: int = 23,
                 preset: str = PRESET) -> None:
        super().__init__(path)
        self._container: OutputContainer | None = None
        self._stream: VideoStream | None = None
        self._pad: NDArray[np.uint8] | None = None
        self.codec = codec or DEFAULT_CODEC
        self.crf = int(crf)
        self.preset = preset
        self.fps = float(fps)
        self.rate = Fraction(self.fps).limit_denominator(1001)
        self._canonical = _check_codec(self.codec)

    @classmethod
    def from_config(cls, path: Path, cfg: RenderConfig) -> Mp4Writer:
        """Reads ``fps``, ``video_codec``, ``video_crf`` and ``video_preset``."""
        return cls(path, fps=cfg.fps, codec=cfg.video_codec, crf=cfg.video_crf,
                   preset=getattr(cfg, "video_preset", PRESET))

    def write(self, bundle: FrameBundle) -> None:
        """Encodes the bundle's frame (uint8 HxWx3)."""
        frame = self._first_frame(bundle, self._open)
        if self._pad is not None:
            self._pad[: frame.shape[0], : frame.shape[1]] = frame
            frame = self._pad
        video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
        video_frame.pts = self.num_frames
        assert self._stream is not None and self._container is not None  # the first frame opened them (_open)
        for packet in self._stream.encode(video_frame):
            self._container.mux(packet)
        self.num_frames += 1

    def _open(self, height: int, width: int) -> None:
        self.frame_shape = (height, width)
        even_h, even_w = height + height % 2, width + width % 2
        if (even_h, even_w) != (height, width):
            self._pad = np.zeros((even_h, even_w, 3), np.uint8)  # black border stays black
        # an explicit file: URL, so that FFmpeg never reads a name such as "seed0:best.mp4" as a protocol
        container = self._container = av.open(f"file:{os.path.abspath(self.tmp)}", "w", format="mp4",
                                              container_options={"movflags": "+faststart"})
        stream = container.add_stream(self.codec, rate=self.rate)
        stream.width, stream.height, stream.pix_fmt = even_w, even_h, PIX_FMT
        if self.codec.startswith(("libx264", "libx265")):
            stream.options = {"crf": str(self.crf), "preset": self.preset, **X264_DETERMINISTIC.get(self.codec, {})}
        stream.codec_context.time_base = 1 / self.rate
        # one encoder thread: encoding already runs beside the renderer, whose own threads use the cores
        # (measured: 7% less encode CPU per frame, same file size)
        stream.codec_context.thread_count = 1
        self._stream = stream
        try:
            container.start_encoding()  # creates the file now, not at the first packet (~10 frames on)
        except OSError as exc:
            raise WriterError(f"cannot create the video file {str(self.path)!r}", got=str(exc),
                              fix="check that the folder exists and is writable") from exc

    def _finish(self) -> dict[str, object]:
        if self._container is None:
            raise no_frames_error(self.format, self.path)
        container, stream = self._container, self._stream
        self._container = self._stream = None
        assert stream is not None  # opened with the container (_open)
        width, height = stream.width, stream.height
        try:
            for packet in stream.encode(None):
                container.mux(packet)
        finally:
            container.close()
        return {"codec": self._canonical, "pix_fmt": PIX_FMT, "width": width, "height": height,
                "fps": self.fps}

    def _release(self) -> None:
        container, self._container, self._stream = self._container, None, None
        if container is not None:
            try:
                container.close()
            except Exception:  # the partial file is deleted next; its close may fail halfway
                log.debug("closing an aborted mp4 failed", exc_info=True)


def _check_codec(name: str) -> str:
    """The codec's canonical name (``libx264`` -> ``h264``); a WriterError if it has no encoder."""
    try:
        return av.Codec(name, "w").canonical_name
    except (av.codec.codec.UnknownCodecError, ValueError) as exc:
        raise WriterError(f"video codec {name!r} has no encoder in this PyAV build",
                          expected="an FFmpeg encoder name such as libx264", got=name,
                          fix="drop --video-codec to use libx264") from exc

