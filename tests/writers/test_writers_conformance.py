"""The writer contract, checked for every format in the WRITERS table (plugins included).

Adding a format to the table adds it here; nothing lists formats by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from torchrl_render.config import RenderConfig
from torchrl_render.data import Artifact, FrameBundle
from torchrl_render.errors import NoFramesError
from torchrl_render.writers import WRITERS
from torchrl_render.writers.base import Writer

N = 4
H, W = 32, 48
NAMES = WRITERS.names()


class Boom(Exception):
    pass


def _target(folder: Path, name: str) -> Path:
    entry = WRITERS.entry(name)
    return folder / ("out" + entry.suffixes[0] if entry.suffixes and not entry.directory else "out_" + name)


def _writer(folder: Path, name: str) -> Writer:
    path = _target(folder, name)
    cfg = RenderConfig(policy="p:m", env="e:m", out=path, format=name)
    return WRITERS.load(name).from_config(cfg.out, cfg)


def _feed(writer: Writer, n: int = N) -> None:
    rng = np.random.default_rng(n)
    model = _state_model() if WRITERS.entry(writer.format).needs_state else None
    for step in range(n):
        frame = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
        state = None if model is None else {"model": model, "qpos": rng.normal(size=model.nq)}
        writer.write(FrameBundle({"default": frame}, step=step, trajectory_index=0, state=state))


def _state_model():
    """Formats that take MuJoCo states (html) get one with every bundle: a small MuJoCo model's qpos."""
    import mujoco

    return mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><joint type="hinge"/><geom size=".1"/>'
                                          '</body></worldbody></mujoco>')


def _written(art: Artifact) -> list[str]:
    """The names an artifact put in its folder: itself, and the asset folder it names (a notebook's)."""
    return sorted([art.path.name] + ([Path(art.info["assets"]).name] if "assets" in art.info else []))


def _expected_frames(name: str, n: int = N) -> int:
    return n if WRITERS.entry(name).needs_frames or WRITERS.entry(name).needs_state else 0


def _plant_old(path: Path, directory: bool) -> None:
    if directory:
        path.mkdir()
        (path / "old.txt").write_text("old")
    else:
        path.write_text("old")


def _is_old(path: Path, directory: bool) -> bool:
    if directory:
        return path.is_dir() and [p.name for p in path.iterdir()] == ["old.txt"]
    return path.is_file() and path.read_bytes() == b"old"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow
def test_writes_and_returns_artifact(tmp_path, name):
    writer = _writer(tmp_path, name)
    assert isinstance(writer, Writer)
    _feed(writer)
    art = writer.close()
    assert isinstance(art, Artifact)
    assert art.path == writer.path and art.path.exists()
    assert art.format == name == writer.format
    assert art.num_frames == _expected_frames(name)
    assert art.path.is_dir() == WRITERS.entry(name).directory
    assert sorted(p.name for p in tmp_path.iterdir()) == _written(art)   # no temporary left beside it
    assert art.to_dict()["path"] == str(art.path)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow
def test_close_twice_returns_the_same_artifact(tmp_path, name):
    writer = _writer(tmp_path, name)
    _feed(writer)
    first = writer.close()
    assert writer.close() is first
    writer.abort()                                  # after a successful close: a no-op
    assert first.path.exists()


@pytest.mark.parametrize("name", NAMES)
def test_abort_leaves_nothing(tmp_path, name):
    writer = _writer(tmp_path, name)
    _feed(writer, 2)
    writer.abort()
    assert list(tmp_path.iterdir()) == []
    writer.abort()                                  # safe twice
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", NAMES)
def test_abort_before_any_frame_is_safe(tmp_path, name):
    writer = _writer(tmp_path, name)
    writer.abort()
    writer.abort()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", NAMES)
def test_exception_inside_with_leaves_nothing(tmp_path, name):
    with pytest.raises(Boom), _writer(tmp_path, name) as writer:
        _feed(writer, 2)
        raise Boom
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow
def test_existing_target_is_replaced_only_on_success(tmp_path, name):
    directory = WRITERS.entry(name).directory
    writer = _writer(tmp_path, name)
    _plant_old(writer.path, directory)
    _feed(writer)
    assert _is_old(writer.path, directory)          # still the old content while writing
    art = writer.close()
    assert art.path.exists() and not _is_old(art.path, directory)
    assert sorted(p.name for p in tmp_path.iterdir()) == _written(art)


@pytest.mark.parametrize("name", NAMES)
def test_abort_keeps_an_existing_target(tmp_path, name):
    directory = WRITERS.entry(name).directory
    writer = _writer(tmp_path, name)
    _plant_old(writer.path, directory)
    _feed(writer, 2)
    writer.abort()
    assert _is_old(writer.path, directory)
    assert [p.name for p in tmp_path.iterdir()] == [writer.path.name]


@pytest.mark.parametrize("name", [n for n in NAMES if WRITERS.entry(n).needs_frames])
def test_zero_frames_is_a_no_frames_error(tmp_path, name):
    writer = _writer(tmp_path, name)
    with pytest.raises(NoFramesError):
        writer.close()
    assert list(tmp_path.iterdir()) == []
    writer.abort()                                  # the failed close already aborted: safe
