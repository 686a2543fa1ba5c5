"""What the viewer's two windows share: the keys they understand, the ``--live`` fix text, and macOS's
``mjpython`` check. :mod:`.viewer` (the run's side) and :mod:`.windows` (the windows) both import it,
so neither imports the other at module top."""

from __future__ import annotations

import sys
from types import ModuleType

from ..errors import NoDisplayError

__all__ = ["KEY_ESCAPE", "KEY_RIGHT", "KEY_SPACE", "LIVE_FIX", "mjpython_error"]

#: GLFW's key codes (MuJoCo's viewer hands them to its key callback); pygame's keys map onto them.
KEY_SPACE, KEY_RIGHT, KEY_ESCAPE = 32, 262, 256
LIVE_FIX = ("watch it in the browser instead: --live 8765 serves a live page on 127.0.0.1 (over SSH: "
             "ssh -L 8765:127.0.0.1:8765 <host>, then open the printed URL); or drop --viewer")


def mjpython_error(viewer_module: ModuleType) -> NoDisplayError | None:
    """macOS: MuJoCo's viewer opens only under ``mjpython`` (``launch_passive``'s own condition), else None."""
    if sys.platform != "darwin" or getattr(viewer_module, "_MJPYTHON", None) is not None:
        return None
    return NoDisplayError("--viewer mujoco on macOS needs MuJoCo's launcher: mujoco.viewer opens its window only "
                          "from a script run with mjpython", expected="mjpython -m torchrl_render ...",
                          got=sys.executable, fix="run the same command with mjpython (installed with the mujoco "
                          "package) instead of python, or use --viewer window, or " + LIVE_FIX)
