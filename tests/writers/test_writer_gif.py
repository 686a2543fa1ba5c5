"""GifWriter specifics, checked on real files read back with Pillow and FFmpeg."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from torchrl_render.config import RenderConfig
from torchrl_render.data import FrameBundle
from torchrl_render.errors import NoFramesError, WriterError
from torchrl_render.writers.gif import GifWriter

from helpers.mediaprobe import decode_frames, gif_frames

H, W = 32, 48
COLOURS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (10, 20, 30)]


def _bundle(frame: np.ndarray, step: int = 0, traj: int = 0) -> FrameBundle:
    return FrameBundle({"default": frame}, step=step, trajectory_index=traj)


def _solid(colour, h: int = H, w: int = W) -> np.ndarray:
    return np.broadcast_to(np.array(colour, np.uint8), (h, w, 3)).copy()


def _write(path, frames, **kwargs):
    with GifWriter(path, **kwargs) as writer:
        for step, frame in enumerate(frames):
            writer.write(_bundle(frame, step))
    return writer.close()


def test_frames_loop_and_duration(tmp_path):
    out = tmp_path / "run.gif"
    art = _write(out, [_solid(c) for c in COLOURS], fps=20)
    assert gif_frames(out) == art.num_frames == len(COLOURS)
    with Image.open(out) as image:
        assert image.size == (W, H)
        assert image.info["loop"] == 0                   # NETSCAPE 0: loop forever
        for index in range(image.n_frames):
            image.seek(index)
            assert image.info["duration"] == 50
    assert art.info["delay_cs"] == 5 and art.info["fps"] == 20.0
    data = out.read_bytes()
    assert data.startswith(b"GIF89a") and data.endswith(b"\x3b")


@pytest.mark.parametrize("fps, duration_ms", [(30.0, 30), (7.0, 140), (100.0, 20), (1000.0, 20), (0.5, 2000)])
def test_delay_is_whole_centiseconds_at_least_two(tmp_path, fps, duration_ms):
    out = tmp_path / "delay.gif"
    _write(out, [_solid(c) for c in COLOURS[:2]], fps=fps)
    with Image.open(out) as image:
        assert image.info["duration"] == duration_ms


def test_solid_colours_are_exact(tmp_path):
    out = tmp_path / "colours.gif"
    _write(out, [_solid(c) for c in COLOURS])
    with Image.open(out) as image:
        for index, colour in enumerate(COLOURS):
            image.seek(index)
            assert np.array_equal(np.asarray(image.convert("RGB")), _solid(colour))


def test_each_frame_has_its_own_palette_and_ffmpeg_decodes_it(tmp_path):
    out = tmp_path / "gradient.gif"
    y, x = np.mgrid[0:H, 0:W]
    ramp = np.stack([x * 255 // (W - 1), y * 255 // (H - 1), (x + y) * 255 // (W + H - 2)], -1).astype(np.uint8)
    frames = [ramp, 255 - ramp, _solid((200, 30, 40))]
    _write(out, frames)
    decoded = list(decode_frames(out))              # an independent decoder (FFmpeg)
    assert len(decoded) == len(frames)
    for got, want in zip(decoded, frames, strict=True):
        assert np.abs(got.astype(int) - want).mean() < 8


def test_from_config_reads_fps(tmp_path):
    cfg = RenderConfig(policy="p:m", env="e:m", out=tmp_path / "cfg.gif", fps=25)
    writer = GifWriter.from_config(cfg.out, cfg)
    assert writer.fps == 25.0 and writer.delay_cs == 4
    writer.abort()


def test_frame_of_another_size_is_a_writer_error(tmp_path):
    out = tmp_path / "mixed.gif"
    with pytest.raises(WriterError) as info, GifWriter(out) as writer:
        writer.write(_bundle(_solid((1, 2, 3)), step=0, traj=2))
        writer.write(_bundle(_solid((1, 2, 3), 30, 40), step=5, traj=2))
    assert str(info.value).startswith(
        "the frame at trajectory 2, step 5 has a different size than the first frame of this gif. "
        "Expected: 48x32 (width x height), the size of the first frame. Got: 40x30. Fix: ")
    assert list(tmp_path.iterdir()) == []


def test_zero_frames_says_how_to_get_frames(tmp_path):
    writer = GifWriter(tmp_path / "empty.gif")
    with pytest.raises(NoFramesError, match="render_mode='rgb_array'.*--from-pixels.*--render-backend mujoco"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


def test_streams_to_disk_frame_by_frame(tmp_path):
    writer = GifWriter(tmp_path / "stream.gif")
    assert not writer.tmp.exists()                  # opened lazily on the first frame
    sizes = []
    for step, colour in enumerate(COLOURS):
        writer.write(_bundle(_solid(colour), step))
        writer._file.flush()
        sizes.append(writer.tmp.stat().st_size)
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)   # each frame is on disk, not in memory
    writer.close()


def test_missing_folder_fails_at_the_first_frame(tmp_path):
    writer = GifWriter(tmp_path / "missing" / "run.gif")
    with pytest.raises(WriterError, match="cannot create the GIF file .*Fix: check that the folder exists"):
        writer.write(_bundle(_solid((1, 2, 3))))
    writer.abort()
    assert list(tmp_path.iterdir()) == []
