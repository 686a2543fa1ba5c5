"""Headless OpenGL for MuJoCo: pick ``MUJOCO_GL`` before ``mujoco`` is imported.

MuJoCo chooses its OpenGL backend once, when ``mujoco`` is first imported, from
the ``MUJOCO_GL`` environment variable (``glfw`` when it is unset or empty, which
needs a display). :func:`ensure_headless_gl` sets it for machines without a
display: ``egl`` when ``libEGL`` loads, else ``osmesa`` when ``libOSMesa`` loads,
and ``PYOPENGL_PLATFORM`` to the same value (dm_control and ``mujoco.egl`` read
it). A value the user set is always respected.

It returns the backend name (or ``None`` when a display is present and MuJoCo's
default is left alone). When ``mujoco`` was already imported before the variable
could be set, the value is still set (gymnasium's renderer reads it at render
time) but ``mujoco.Renderer`` keeps the backend it chose at import; that is
recorded as a note, readable with :func:`gl_notes`, for the run's warnings.

Pure standard library, cheap after the first call, and idempotent.

Example:
    >>> from torchrl_render.envs.gl import GL_LIBRARIES, ensure_headless_gl, gl_notes
    >>> # first thing, before gymnasium, dm_control or mujoco are imported:
    >>> ensure_headless_gl()  # doctest: +SKIP
    'egl'
    >>> list(GL_LIBRARIES)      # tried in this order when MUJOCO_GL is unset and there is no display
    ['egl', 'osmesa']
    >>> isinstance(gl_notes(), list)
    True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

from ..errors import BackendUnavailable

__all__ = ["GL_LIBRARIES", "KNOWN_MUJOCO_GL", "ensure_headless_gl", "gl_notes", "missing_gl_library"]

#: Headless backends in the order they are tried, with the shared libraries that provide them.
GL_LIBRARIES: dict[str, tuple[str, ...]] = {
    "egl": ("libEGL.so.1", "libEGL.so", "EGL"),
    "osmesa": ("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so", "OSMesa"),
}

#: Every value ``mujoco`` accepts for ``MUJOCO_GL`` (on some platform).
KNOWN_MUJOCO_GL = ("egl", "osmesa", "glfw", "glx", "cgl", "wgl", "enable", "enabled", "on", "true", "1",
                   "disable", "disabled", "off", "false", "0")

_NOTES: list[str] = []


def gl_notes() -> list[str]:
    """Notes from :func:`ensure_headless_gl` (e.g. "mujoco was imported too early"); a copy."""
    return list(_NOTES)


def _note(text: str) -> None:
    if text not in _NOTES:
        _NOTES.append(text)


@functools.cache
def library_loads(backend: str) -> bool:
    """Whether a shared library for ``backend`` can be loaded (cached: the answer does not change)."""
    for name in GL_LIBRARIES[backend]:
        path = name if name.startswith("lib") else ctypes.util.find_library(name)
        if not path:
            continue
        try:
            ctypes.CDLL(path)
        except OSError:
            continue
        return True
    return False


def ensure_headless_gl() -> str | None:
    """Makes MuJoCo render without a display; returns the ``MUJOCO_GL`` in effect.

    * ``MUJOCO_GL`` already set (non-empty): respected and returned.
    * a display (``DISPLAY`` or ``WAYLAND_DISPLAY``): ``None``, MuJoCo's default is kept.
    * otherwise ``"egl"`` if libEGL loads, else ``"osmesa"`` if libOSMesa loads
      (``PYOPENGL_PLATFORM``'s value first when it names one of them); both
      ``MUJOCO_GL`` and ``PYOPENGL_PLATFORM`` are set to it.

    Raises:
        BackendUnavailable: ``MUJOCO_GL`` holds a value MuJoCo rejects, or no
            display and neither library can be loaded.
    """
    current = os.environ.get("MUJOCO_GL", "").strip().lower()
    if current:
        if current not in KNOWN_MUJOCO_GL:
            raise BackendUnavailable(
                "MUJOCO_GL holds a value MuJoCo does not accept", expected="egl, osmesa or glfw",
                got=os.environ["MUJOCO_GL"], fix="set MUJOCO_GL=egl (or osmesa), or unset it to choose automatically")
        if current in GL_LIBRARIES and not os.environ.get("PYOPENGL_PLATFORM"):
            os.environ["PYOPENGL_PLATFORM"] = current
        return current
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    platform = os.environ.get("PYOPENGL_PLATFORM", "").strip().lower()
    order = ([platform] if platform in GL_LIBRARIES else []) + [b for b in GL_LIBRARIES if b != platform]
    choice = next((backend for backend in order if library_loads(backend)), None)
    if choice is None:
        raise BackendUnavailable(
            "no headless OpenGL library for MuJoCo rendering (no display, and neither libEGL nor libOSMesa loads)",
            expected="libEGL (MUJOCO_GL=egl) or libOSMesa (MUJOCO_GL=osmesa), or a display",
            got="DISPLAY and WAYLAND_DISPLAY unset, MUJOCO_GL unset",
            fix="install one (apt-get install libegl1, or apt-get install libosmesa6), "
                "or set MUJOCO_GL to a backend that works on this machine")
    if "mujoco" in sys.modules:
        _note(f"MUJOCO_GL was unset when mujoco was imported, so mujoco.Renderer uses its default (glfw, which "
              f"needs a display); MUJOCO_GL={choice} was set afterwards and cannot change that. Set MUJOCO_GL={choice} "
              "before importing mujoco, gymnasium's MuJoCo envs or dm_control")
    if platform and platform != choice and "OpenGL" in sys.modules:
        _note(f"PyOpenGL was already imported with PYOPENGL_PLATFORM={platform}; MUJOCO_GL={choice} may fail")
    os.environ["MUJOCO_GL"] = choice
    os.environ["PYOPENGL_PLATFORM"] = choice
    return choice


_INSTALL = {"egl": "apt-get install libegl1", "osmesa": "apt-get install libosmesa6"}


def missing_gl_library() -> BackendUnavailable | None:
    """The error to raise when ``MUJOCO_GL`` names a headless backend whose library does not load, else ``None``.

    MuJoCo envs then fail far from the cause (PyOpenGL's ``'NoneType' object has no attribute 'glGetError'``
    inside ``gymnasium.make``), also for formats that need no frames: callers that caught such a
    failure ask this first.
    """
    current = os.environ.get("MUJOCO_GL", "").strip().lower()
    if current not in GL_LIBRARIES or library_loads(current):
        return None
    library = GL_LIBRARIES[current][0].split(".so")[0]
    others = [b for b in GL_LIBRARIES if b != current and library_loads(b)]
    instead = f", or set MUJOCO_GL={others[0]} ({GL_LIBRARIES[others[0]][0]} loads on this machine)" if others else ""
    return BackendUnavailable(
        f"MUJOCO_GL={current}, but {library} cannot be loaded, so MuJoCo cannot start (its envs set up "
        "rendering when they are built, whatever the output format)",
        expected=f"{library} installed for MUJOCO_GL={current}",
        got=f"no loadable {' or '.join(GL_LIBRARIES[current][:3])}",
        fix=f"install it ({_INSTALL[current]}){instead}")
