"""Mp4Writer specifics, checked on real files decoded back with PyAV (FFmpeg)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from torchrl_render.config import RenderConfig
from torchrl_render.data import FrameBundle
from torchrl_render.errors import NoFramesError, WriterError
from torchrl_render.writers.mp4 import Mp4Writer

from helpers.mediaprobe import decode_frames, has_faststart, probe_mp4, x264_subme

pytestmark = pytest.mark.slow

H, W = 32, 48


def _bundle(frame: np.ndarray, step: int = 0, traj: int = 0) -> FrameBundle:
    return FrameBundle({"default": frame}, step=step, trajectory_index=traj)


def _noise(n: int, h: int = H, w: int = W, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


def _write(path, frames, **kwargs):
    with Mp4Writer(path, **kwargs) as writer:
        for step, frame in enumerate(frames):
            writer.write(_bundle(frame, step))
    return writer.close()


def test_h264_yuv420p_and_every_frame_decodes(tmp_path):
    out = tmp_path / "run.mp4"
    art = _write(out, _noise(7))
    probe = probe_mp4(out)
    assert (probe["codec"], probe["pix_fmt"], probe["width"], probe["height"]) == ("h264", "yuv420p", W, H)
    assert probe["frames"] == art.num_frames == 7
    assert art.format == "mp4" and art.path == out
    assert art.info == {"codec": "h264", "pix_fmt": "yuv420p", "width": W, "height": H, "fps": 30.0}


def test_odd_size_is_padded_to_even_not_resampled(tmp_path):
    out = tmp_path / "odd.mp4"
    white = np.full((33, 47, 3), 255, np.uint8)
    art = _write(out, [white] * 3)
    probe = probe_mp4(out)
    assert (probe["height"], probe["width"]) == (34, 48)
    assert (art.info["height"], art.info["width"]) == (34, 48)
    first = next(decode_frames(out))
    assert first[:33, :47].mean() > 230            # the picture keeps its pixels (no rescale)
    assert first[33:, :].mean() < 60               # the padding row and column are black
    assert first[:, 47:].mean() < 60


@pytest.mark.parametrize("fps, rate", [(29.97, Fraction(2997, 100)), (30000 / 1001, Fraction(30000, 1001)),
                                       (30.0, Fraction(30)), (12.5, Fraction(25, 2))])
def test_fps_round_trip(tmp_path, fps, rate):
    out = tmp_path / "rate.mp4"
    art = _write(out, _noise(4), fps=fps)
    probe = probe_mp4(out)
    assert probe["rate"] == rate
    assert probe["fps"] == pytest.approx(fps, abs=1e-6)
    assert probe["frames"] == 4
    assert art.info["fps"] == fps


def test_solid_red_decodes_red(tmp_path):
    out = tmp_path / "red.mp4"
    red = np.zeros((H, W, 3), np.uint8)
    red[..., 0] = 255
    _write(out, [red] * 3)
    for frame in decode_frames(out):
        r, g, b = frame.reshape(-1, 3).mean(axis=0)
        assert r > 235 and g < 20 and b < 20


def test_faststart_puts_moov_before_mdat(tmp_path):
    out = tmp_path / "fast.mp4"
    _write(out, _noise(5))
    assert has_faststart(out)


def test_crf_from_config_changes_quality(tmp_path):
    frames = _noise(4)
    sizes = {}
    for crf in (10, 45):
        cfg = RenderConfig(policy="p:m", env="e:m", out=tmp_path / f"crf{crf}.mp4", video_crf=crf, fps=24)
        writer = Mp4Writer.from_config(cfg.out, cfg)
        assert (writer.crf, writer.fps, writer.codec) == (crf, 24.0, "libx264")
        with writer:
            for step, frame in enumerate(frames):
                writer.write(_bundle(frame, step))
        sizes[crf] = cfg.out.stat().st_size
    assert sizes[45] < sizes[10]


@pytest.mark.parametrize(("preset", "subme"), [("ultrafast", 0), ("veryfast", 2), ("slow", 8)])
def test_video_preset_reaches_x264(tmp_path, preset, subme):
    cfg = RenderConfig(policy="p:m", env="e:m", out=tmp_path / f"{preset}.mp4", video_preset=preset)
    with Mp4Writer.from_config(cfg.out, cfg) as writer:
        for step, frame in enumerate(_noise(3)):
            writer.write(_bundle(frame, step))
    assert x264_subme(cfg.out) == subme
    assert probe_mp4(cfg.out)["frames"] == 3


def test_frame_of_another_size_is_a_writer_error(tmp_path):
    out = tmp_path / "mixed.mp4"
    with pytest.raises(WriterError) as info, Mp4Writer(out) as writer:
        writer.write(_bundle(np.zeros((H, W, 3), np.uint8), step=0, traj=1))
        writer.write(_bundle(np.zeros((30, 40, 3), np.uint8), step=1, traj=1))
    assert str(info.value) == (
        "the frame at trajectory 1, step 1 has a different size than the first frame of this mp4. "
        "Expected: 48x32 (width x height), the size of the first frame. Got: 40x30. "
        "Fix: render every step at one size (set --width/--height), or use --split-trajectories "
        "or --camera-layout separate so that each size gets its own file.")
    assert list(tmp_path.iterdir()) == []


def test_zero_frames_says_how_to_get_frames(tmp_path):
    out = tmp_path / "empty.mp4"
    writer = Mp4Writer(out)
    with pytest.raises(NoFramesError) as info:
        writer.close()
    message = str(info.value)
    assert "render_mode='rgb_array'" in message
    assert "--from-pixels" in message
    assert "--render-backend mujoco" in message
    assert list(tmp_path.iterdir()) == []


def test_unknown_codec_is_a_writer_error(tmp_path):
    with pytest.raises(WriterError, match="video codec 'nope' has no encoder"):
        Mp4Writer(tmp_path / "x.mp4", codec="nope")


def test_nothing_is_opened_before_the_first_frame(tmp_path):
    writer = Mp4Writer(tmp_path / "lazy.mp4")
    assert not writer.tmp.exists()
    writer.write(_bundle(_noise(1)[0]))
    assert writer.tmp.exists() and not writer.path.exists()
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_fails_at_the_first_frame(tmp_path):
    writer = Mp4Writer(tmp_path / "missing" / "run.mp4")
    with pytest.raises(WriterError, match="cannot create the video file .*Fix: check that the folder exists"):
        writer.write(_bundle(_noise(1)[0]))
    writer.abort()
    assert list(tmp_path.iterdir()) == []




def _scribble(fill: int) -> None:
    """C calls that leave ``fill`` behind in this thread's stack and in freed heap blocks: what another
    caller (Python's allocator, a GIL wait, a garbage collection) may leave where the encoder runs next."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    sizes = (400, 800, 1600, 2000, 3072, 4096, 6000, 8192) * 20
    blocks = [libc.malloc(size) for size in sizes]
    for block, size in zip(blocks, sizes):
        ctypes.memset(block, fill, size)
    for block in blocks:
        libc.free(block)


@pytest.mark.parametrize("size", [(48, 48), (32, 32), (96, 96)])
@pytest.mark.parametrize("content", ["moving-disc", "noise"])
def test_the_same_frames_encode_to_the_same_video_whatever_ran_before(tmp_path, size, content):
    """x264's macroblock-tree rate control read an uninitialised value (valgrind), so the bits depended on
    what earlier calls had left in memory: the same frames made other videos on the background writer
    thread (the once-flaky frame comparison of the env-worker render test, 48x48)."""
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w]
    frames = _noise(21, h, w) if content == "noise" else [
        np.where(((xx - 8 - t) ** 2 + (yy - h // 2) ** 2 < 64)[..., None], (30, 60, 150), 200).astype(np.uint8)
        for t in range(21)]
    decoded = []
    for fill in (None, 0xFF, 0x80):
        with Mp4Writer(tmp_path / f"{fill}.mp4") as writer:
            for step, frame in enumerate(frames):
                if fill is not None:
                    _scribble(fill)
                writer.write(_bundle(frame, step))
        decoded.append(list(decode_frames(tmp_path / f"{fill}.mp4")))
    assert [len(d) for d in decoded] == [21] * 3
    assert all(np.array_equal(a, b) for other in decoded[1:] for a, b in zip(decoded[0], other))
