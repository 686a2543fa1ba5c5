"""A real X server (Xvfb) on a free display number, for the tests and doc blocks that open windows."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def xvfb(numbers: range) -> Iterator[str | None]:
    """Starts ``Xvfb :N`` (800x600x24, no TCP) on the first free N of ``numbers``; yields ``":N"``, or None when
    Xvfb is not installed or did not start. Callers pick disjoint ranges, so that modules never share one."""
    if shutil.which("Xvfb") is None:
        yield None
        return
    number = next(n for n in numbers if not Path(f"/tmp/.X{n}-lock").exists()
                  and not Path(f"/tmp/.X11-unix/X{n}").exists())
    proc = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = Path(f"/tmp/.X11-unix/X{number}")
    deadline = time.monotonic() + 20
    while not socket.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f":{number}" if socket.exists() else None
    finally:
        proc.terminate()
        proc.wait(10)
