"""Notebook clients for the tests: this interpreter's ipykernel over IPC sockets, as the ipynb writer runs it.

A lost output is an error here (``raise_on_iopub_timeout``), never a silently empty cell.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def notebook_client(nb, path: Path, timeout: float = 120):
    from nbclient import NotebookClient

    from torchrl_render.notebook.kernel import IOPUB_TIMEOUT_S, native_kernel_manager

    sockets = tempfile.mkdtemp(prefix="trr-test-kernel-")
    return NotebookClient(nb, timeout=timeout, iopub_timeout=IOPUB_TIMEOUT_S, raise_on_iopub_timeout=True,
                          kernel_name="python3", kernel_manager_class=native_kernel_manager(sockets),
                          resources={"metadata": {"path": str(path)}})
