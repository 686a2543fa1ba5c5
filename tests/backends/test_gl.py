"""torchrl_render.envs.gl: choosing MUJOCO_GL for headless machines (no real GL needed)."""

from __future__ import annotations

import sys

import pytest

from torchrl_render.envs import gl
from torchrl_render.errors import BackendUnavailable


@pytest.fixture
def clean(monkeypatch):
    """No MUJOCO_GL, PYOPENGL_PLATFORM or display; fresh notes; mujoco not imported; both libraries load."""
    for name in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gl, "_NOTES", [])
    monkeypatch.delitem(sys.modules, "mujoco", raising=False)
    loadable = {"egl": True, "osmesa": True}
    monkeypatch.setattr(gl, "library_loads", lambda backend: loadable[backend])
    return loadable


def test_picks_egl_and_sets_both_variables(clean, monkeypatch):
    import os

    assert gl.ensure_headless_gl() == "egl"
    assert os.environ["MUJOCO_GL"] == "egl" and os.environ["PYOPENGL_PLATFORM"] == "egl"
    assert gl.gl_notes() == []


def test_falls_back_to_osmesa(clean):
    import os

    clean["egl"] = False
    assert gl.ensure_headless_gl() == "osmesa"
    assert os.environ["PYOPENGL_PLATFORM"] == "osmesa"


def test_prefers_the_pyopengl_platform_already_chosen(clean, monkeypatch):
    monkeypatch.setenv("PYOPENGL_PLATFORM", "osmesa")
    assert gl.ensure_headless_gl() == "osmesa"


def test_respects_a_set_mujoco_gl(clean, monkeypatch):
    import os

    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    clean["osmesa"] = False  # not even probed: the user's choice wins
    assert gl.ensure_headless_gl() == "osmesa"
    assert os.environ["MUJOCO_GL"] == "osmesa" and os.environ["PYOPENGL_PLATFORM"] == "osmesa"


def test_empty_mujoco_gl_counts_as_unset(clean, monkeypatch):
    import os

    monkeypatch.setenv("MUJOCO_GL", "")  # mujoco would read "" as glfw, which needs a display
    assert gl.ensure_headless_gl() == "egl"
    assert os.environ["MUJOCO_GL"] == "egl"


@pytest.mark.parametrize("var", ["DISPLAY", "WAYLAND_DISPLAY"])
def test_a_display_leaves_the_default(clean, monkeypatch, var):
    import os

    monkeypatch.setenv(var, ":0")
    assert gl.ensure_headless_gl() is None
    assert "MUJOCO_GL" not in os.environ


def test_no_library_says_how_to_fix(clean):
    clean["egl"] = clean["osmesa"] = False
    with pytest.raises(BackendUnavailable) as err:
        gl.ensure_headless_gl()
    message = str(err.value)
    for part in ("libegl1", "libosmesa6", "MUJOCO_GL", "Expected:", "Got:", "Fix:"):
        assert part in message


def test_invalid_value_is_reported(clean, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "vulkan")
    with pytest.raises(BackendUnavailable, match="MUJOCO_GL.*vulkan.*egl"):
        gl.ensure_headless_gl()


def test_notes_when_mujoco_was_imported_first(clean, monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", object())
    assert gl.ensure_headless_gl() == "egl"
    notes = gl.gl_notes()
    assert len(notes) == 1 and "before importing mujoco" in notes[0]


def test_idempotent(clean, monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", object())
    first = gl.ensure_headless_gl()
    assert gl.ensure_headless_gl() == first == "egl"
    assert len(gl.gl_notes()) == 1
    gl.gl_notes().append("not kept")  # a copy
    assert len(gl.gl_notes()) == 1


def test_real_probe_is_cached_and_boolean():
    assert gl.library_loads("egl") in (True, False)
    assert gl.library_loads.cache_info().currsize >= 1
