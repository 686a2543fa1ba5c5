"""PngWriter specifics: one PNG per frame in a folder, read back with Pillow."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from torchrl_render.config import RenderConfig
from torchrl_render.data import FrameBundle
from torchrl_render.errors import NoFramesError, WriterError
from torchrl_render.writers import WRITERS
from torchrl_render.writers.png import PngWriter

H, W = 32, 48


def _frames(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (H, W, 3), dtype=np.uint8) for _ in range(n)]


def test_names_count_and_exact_pixels(tmp_path):
    out = tmp_path / "frames"
    frames = _frames(5)
    steps = [(0, 0), (0, 1), (0, 2), (1, 0), (12, 345678)]
    with PngWriter(out) as writer:
        for (traj, step), frame in zip(steps, frames, strict=True):
            writer.write(FrameBundle({"default": frame}, step=step, trajectory_index=traj))
    art = writer.close()
    assert art.path == out and art.format == "frames" and art.num_frames == 5
    assert art.info == {"files": 5}
    names = sorted(p.name for p in out.iterdir())
    assert names == ["traj0000_step000000.png", "traj0000_step000001.png", "traj0000_step000002.png",
                     "traj0001_step000000.png", "traj0012_step345678.png"]
    for (traj, step), frame in zip(steps, frames, strict=True):
        with Image.open(out / f"traj{traj:04d}_step{step:06d}.png") as image:
            assert image.mode == "RGB"
            assert np.array_equal(np.asarray(image), frame)


def test_folder_is_made_on_the_first_frame(tmp_path):
    writer = PngWriter(tmp_path / "lazy")
    assert not writer.tmp.exists()
    writer.write(FrameBundle({"default": _frames(1)[0]}, step=0, trajectory_index=0))
    assert writer.tmp.is_dir() and not writer.path.exists()
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_sizes_may_differ_between_files(tmp_path):
    out = tmp_path / "frames"
    with PngWriter(out) as writer:
        writer.write(FrameBundle({"default": np.zeros((4, 6, 3), np.uint8)}, step=0, trajectory_index=0))
        writer.write(FrameBundle({"default": np.zeros((8, 2, 3), np.uint8)}, step=1, trajectory_index=0))
    assert len(list(out.iterdir())) == 2


def test_existing_folder_is_replaced_whole(tmp_path):
    out = tmp_path / "frames"
    out.mkdir()
    (out / "old.png").write_bytes(b"old")
    cfg = RenderConfig(policy="p:m", env="e:m", out=out)
    assert cfg.format == "frames"
    with WRITERS.load(cfg.format).from_config(out, cfg) as writer:
        writer.write(FrameBundle({"default": _frames(1)[0]}, step=0, trajectory_index=0))
        assert (out / "old.png").read_bytes() == b"old"
    assert sorted(p.name for p in out.iterdir()) == ["traj0000_step000000.png"]


def test_zero_frames_says_how_to_get_frames(tmp_path):
    writer = PngWriter(tmp_path / "frames")
    with pytest.raises(NoFramesError, match="render_mode='rgb_array'.*--from-pixels.*--render-backend mujoco"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


def test_missing_parent_folder_fails_at_the_first_frame(tmp_path):
    writer = PngWriter(tmp_path / "missing" / "frames")
    with pytest.raises(WriterError, match="cannot create the frame folder .*Fix: check that its parent folder"):
        writer.write(FrameBundle({"default": _frames(1)[0]}, step=0, trajectory_index=0))
    writer.abort()
    assert list(tmp_path.iterdir()) == []
