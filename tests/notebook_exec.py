"""Execute a notebook as nbmake would, in a fresh kernel reached over unix sockets.

Two test workers starting kernels at once over TCP can both be handed the same free port (picked,
released, then bound by the kernel) and one kernel dies before it answers; a socket file in a
folder of its own cannot collide. The connection file lives in that folder too, so nothing is left
in the system's temporary folder after the kernel stops."""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient


def execute_notebook(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 180) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` with ``cwd`` as the kernel's working folder; the kernel inherits the
    environment at launch. Returns ``nb`` with its outputs."""
    with tempfile.TemporaryDirectory(prefix="kernel-") as d:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=str(Path(d) / "ipc"),
                           connection_file=str(Path(d) / "kernel.json"))
        NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute()
    return nb
