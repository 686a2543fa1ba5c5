"""A real X server (Xvfb) on a display number it picks itself, for the tests and doc blocks that open windows."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def xvfb() -> Iterator[str | None]:
    """Starts ``Xvfb`` (800x600x24, no TCP); yields ``":N"``, or None when Xvfb is not installed or did not start.

    Xvfb takes the first free display number itself and writes it to a pipe (``-displayfd``), so test workers
    running side by side never race for the same number as a look at ``/tmp/.X*-lock`` followed by a start would.
    """
    if shutil.which("Xvfb") is None:
        yield None
        return
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write,))
    os.close(write)
    number, deadline = b"", time.monotonic() + 20
    try:
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([read], [], [], 0.1)
            chunk = os.read(read, 16) if ready else b""
            if ready and not chunk:  # the pipe closed: Xvfb ended without a display
                break
            number += chunk
    finally:
        os.close(read)
    try:
        yield f":{int(number)}" if number.strip().isdigit() else None
    finally:
        proc.terminate()
        proc.wait(10)
