"""Notebook clients for the tests: this interpreter's ipykernel over IPC sockets, as the ipynb writer runs it.

The default TCP kernel of nbclient lost a cell's outputs once and hung once in the full suite on this
loaded machine; the writer's own kernel manager (IPC sockets in a private folder) is what the product
uses, so the tests use it too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def notebook_client(nb, path: Path, timeout: float = 120):
    from nbclient import NotebookClient

    from torchrl_render.kernel import IOPUB_TIMEOUT_S, native_kernel_manager

    sockets = tempfile.mkdtemp(prefix="trr-test-kernel-")
    return NotebookClient(nb, timeout=timeout, iopub_timeout=IOPUB_TIMEOUT_S, raise_on_iopub_timeout=True,
                          kernel_name="python3", kernel_manager_class=native_kernel_manager(sockets),
                          resources={"metadata": {"path": str(path)}})
