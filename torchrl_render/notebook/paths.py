"""Where a report notebook's files are, and the config it carries, with paths its cells can use.

Example:
    >>> from pathlib import Path
    >>> from types import SimpleNamespace
    >>> asset_folder(Path("out/report.ipynb"), SimpleNamespace(artifact_dir=None))
    PosixPath('out/report')
    >>> relative(Path("/a/b/c"), Path("/a")), relative(Path("/x"), Path("/a"))
    ('b/c', '/x')
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..contracts import Json

if TYPE_CHECKING:
    from ..config import RenderConfig

__all__ = ["asset_folder", "portable_config", "relative", "search_path"]

MUJOCO_VIEWER_DIR = "mujoco_wasm"  # the live viewer's folder in the asset folder, as torchrl.render names it



def portable_config(cfg: RenderConfig) -> dict[str, Json]:
    """``cfg.to_dict()`` with paths and file specs made absolute, so the notebook's cells find them."""
    data = cfg.to_dict()
    for name in ("ckpt", "out", "frame_dir", "artifact_dir", "metadata"):
        path = data.get(name)
        if isinstance(path, str) and path:  # to_dict() gives paths as text
            data[name] = os.path.abspath(path)  # normalised too: no "w4/../w1" in the notebook
    for name in ("env", "policy"):
        spec = data.get(name)
        if isinstance(spec, str) and ":" in spec:
            target, _, attr = spec.rpartition(":")
            if target.endswith(".py"):
                data[name] = f"{os.path.abspath(target)}:{attr}"
    return data


def asset_folder(path: Path, cfg: RenderConfig) -> Path:
    """The notebook's asset folder: ``artifact_dir`` when given, else ``<stem>/`` beside it (torchrl.render's)."""
    artifact_dir = getattr(cfg, "artifact_dir", None)
    return Path(artifact_dir) if artifact_dir is not None else Path(path).with_suffix("")


def relative(folder: Path, base: Path) -> str:
    """``folder`` relative to ``base`` when inside it, else absolute."""
    try:
        return str(folder.absolute().relative_to(base.absolute()))
    except ValueError:
        return str(folder.absolute())


def search_path() -> list[str]:
    """The working directory and the sys.path folders that are not part of the Python installation."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    out: list[str] = []
    for entry in [os.getcwd(), *sys.path]:
        folder = Path(entry or os.getcwd()).resolve()
        if str(folder) not in out and folder.is_dir() and not any(folder.is_relative_to(p) for p in prefixes):
            out.append(str(folder))
    return out
