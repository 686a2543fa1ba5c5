"""Executing a notebook in a fresh kernel of this interpreter (the report notebook, the sweep report).

nbclient runs the cells in an ipykernel started over IPC sockets in a private folder (only the
kernel spec of this interpreter is looked up: a ``python3`` spec installed elsewhere may point at
another Python). When a kernel's output channel (IOPub) delivers nothing for a cell, nbclient by
default only warns "Timeout waiting for IOPub output" and keeps the cell without its outputs
(nbclient's issue tracker has such intermittent reports from CI machines; here the process had run
nbclient inside playwright's event loop before, see tests/live/test_mujoco_viewer.py). Here that is an
error (``raise_on_iopub_timeout``), and the notebook is executed again, from the start, in a new
kernel (up to :data:`ATTEMPTS` times), so a notebook is never written with a cell silently empty.

Example:
    >>> import nbformat.v4 as v4
    >>> nb = v4.new_notebook(cells=[v4.new_code_cell("print(6 * 7)")])
    >>> execute_notebook(nb, ".", timeout=120).cells[0].outputs[0]["text"]
    '42\\n'
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jupyter_client.manager import AsyncKernelManager
    from nbformat import NotebookNode

__all__ = ["ATTEMPTS", "IOPUB_TIMEOUT_S", "STARTUP_TIMEOUT_S", "execute_notebook", "native_kernel_manager"]

log = logging.getLogger("torchrl_render")

STARTUP_TIMEOUT_S = 120
#: seconds nbclient waits for a cell's outputs once the kernel replied (the outputs are sent before the reply)
IOPUB_TIMEOUT_S = 30
ATTEMPTS = 3


def execute_notebook(nb: NotebookNode, cwd: str | Path, *, timeout: float, startup_timeout: float = STARTUP_TIMEOUT_S,
                     attempts: int = ATTEMPTS, iopub_timeout: float = IOPUB_TIMEOUT_S) -> NotebookNode:
    """Executes ``nb`` in place (outputs replaced) with ``cwd`` as the kernel's folder; returns it.

    Raises nbclient's errors (``CellExecutionError``, ``CellTimeoutError``, ``DeadKernelError``); a
    lost output is retried in a new kernel first.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    for attempt in range(1, attempts + 1):
        sockets = tempfile.mkdtemp(prefix="trr-kernel-")  # short: a unix socket path has at most ~107 bytes
        client = NotebookClient(nb, timeout=timeout, startup_timeout=startup_timeout, kernel_name="python3",
                                iopub_timeout=iopub_timeout, raise_on_iopub_timeout=True,
                                kernel_manager_class=native_kernel_manager(sockets),
                                resources={"metadata": {"path": str(cwd)}})
        try:
            return client.execute()
        except CellTimeoutError as exc:
            if "IOPub" not in str(exc) or attempt == attempts:
                raise
            log.info("a notebook cell's outputs were lost by the kernel (attempt %d of %d): executing the "
                     "notebook again in a new kernel", attempt, attempts)
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
    raise AssertionError("unreachable")  # pragma: no cover


def native_kernel_manager(sockets: str) -> type[AsyncKernelManager]:
    """An AsyncKernelManager that starts this interpreter's ipykernel over IPC sockets in ``sockets``."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class NativeKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _native_only(self) -> KernelSpecManager:
            manager = KernelSpecManager(data_dir=self.data_dir)
            manager.kernel_dirs = []
            return manager

        @default("transport")
        def _ipc(self) -> str:
            return "ipc" if os.name == "posix" else "tcp"

        @default("ip")
        def _ipc_path(self) -> str:
            return os.path.join(sockets, "k") if self.transport == "ipc" else "127.0.0.1"

    return NativeKernelManager
