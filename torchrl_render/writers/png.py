"""A folder of PNG files, one per frame: ``traj{trajectory:04d}_step{step:06d}.png``.

The folder is written under a temporary name and renamed into place on close,
like every writer's output. PNGs are saved with ``compress_level=1``: a little
larger, several times faster than Pillow's default.

This module also holds the two errors every frame format raises
(:func:`no_frames_error`, :func:`frame_size_error`), so that their wording is pinned once.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> from torchrl_render.data import FrameBundle
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "frames"
    >>> with PngWriter(out) as w:
    ...     w.write(FrameBundle({"default": np.zeros((4, 6, 3), np.uint8)}, step=7, trajectory_index=2))
    >>> [p.name for p in out.iterdir()], w.close().info
    (['traj0002_step000007.png'], {'files': 1})
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from ..data import FrameBundle
from .base import Writer, frame_size_error, fresh_folder, no_frames_error

__all__ = ["PngWriter", "frame_size_error", "no_frames_error"]


class PngWriter(Writer):
    """Writes each frame as its own PNG file in a folder.

    Args:
        path: Target folder; built under a temporary name and renamed on close.
        compress_level: zlib level 0-9 (1: fast).
    """

    format = "frames"

    def __init__(self, path: str | Path, compress_level: int = 1) -> None:
        super().__init__(path)
        self.compress_level = int(compress_level)
        self._made = False

    def write(self, bundle: FrameBundle) -> None:
        """Saves the bundle's frame as ``traj{T:04d}_step{S:06d}.png``."""
        frame = next(iter(bundle.frames.values()))
        if not self._made:
            self._make_folder()
        name = f"traj{bundle.trajectory_index:04d}_step{bundle.step:06d}.png"
        Image.fromarray(frame).save(self.tmp / name, format="PNG", compress_level=self.compress_level)
        self.num_frames += 1

    def _make_folder(self) -> None:
        fresh_folder(self.tmp, self.path, "the frame folder")
        self._made = True

    def _finish(self) -> dict[str, object]:
        if not self._made:
            raise no_frames_error(self.format, self.path)
        return {"files": self.num_frames}

