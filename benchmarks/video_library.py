#!/usr/bin/env python
"""Why mp4 goes through PyAV directly, not imageio: the measured reasons (docs/formats.md quotes them).

    python benchmarks/video_library.py             # 300 frames of 480x480, about a minute on 2 cores

The same frames (a moving gradient, as compressible as a rendered scene) are written three ways, each in
a fresh process so that peak memory is its own:

* ``ours``: torchrl_render's ``Mp4Writer`` (PyAV, libx264 veryfast crf 23, yuv420p, +faststart), one
  frame at a time as they are made;
* ``imageio_v3``: ``imageio.v3.imwrite(path, frames, plugin="pyav", codec="libx264")``, the one-call API
  users reach for: it takes the whole clip as one array;
* ``imageio_stream``: imageio's pyav plugin frame by frame (``imopen(..., "w", plugin="pyav")``,
  ``init_video_stream``, ``write_frame``).

Printed per way: wall seconds, peak RSS (MB) of the writing process, the file's pix_fmt, whether its
``moov`` atom comes first (faststart: playback starts before the download ends), and its size.
imageio is not a dependency of torchrl_render: ``pip install imageio`` to run this.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N, SIZE = 300, 480


def frames():
    import numpy as np

    y, x = np.mgrid[0:SIZE, 0:SIZE]
    for i in range(N):
        img = np.empty((SIZE, SIZE, 3), np.uint8)
        img[..., 0] = (x + 3 * i) % 256
        img[..., 1] = (y + 2 * i) % 256
        img[..., 2] = ((x + y) // 2 + i) % 256
        yield img


def write(way: str, path: Path) -> None:
    if way == "ours":
        from torchrl_render.data import FrameBundle
        from torchrl_render.writers.mp4 import Mp4Writer

        with Mp4Writer(path, fps=30) as writer:
            for step, frame in enumerate(frames()):
                writer.write(FrameBundle({"default": frame}, step, 0))
    elif way == "imageio_v3":
        import imageio.v3 as iio
        import numpy as np

        iio.imwrite(path, np.stack(list(frames())), plugin="pyav", codec="libx264", fps=30)
    else:
        import imageio.v3 as iio

        with iio.imopen(path, "w", plugin="pyav") as file:
            file.init_video_stream("libx264", fps=30)
            for frame in frames():
                file.write_frame(frame)


def child(way: str, path: str) -> None:
    import av

    started = time.perf_counter()
    write(way, Path(path))
    wall = time.perf_counter() - started
    with av.open(path) as container:
        pix_fmt = container.streams.video[0].codec_context.pix_fmt
    data = Path(path).read_bytes()
    print(json.dumps({"way": way, "wall_s": round(wall, 2),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "pix_fmt": pix_fmt, "faststart": 0 <= data.find(b"moov") < data.find(b"mdat"),
                      "size_kb": round(len(data) / 1024)}))


def main() -> None:
    if len(sys.argv) == 3:
        child(sys.argv[1], sys.argv[2])
        return
    folder = Path(tempfile.mkdtemp())
    for way in ("ours", "imageio_v3", "imageio_stream"):
        proc = subprocess.run([sys.executable, __file__, way, str(folder / f"{way}.mp4")], capture_output=True,
                              text=True)
        print(proc.stdout.strip() or f'{{"way": "{way}", "error": {json.dumps(proc.stderr.strip()[-300:])}}}')


if __name__ == "__main__":
    main()
