"""``torch.load`` that runs no code from the file unless trusted: the one reader of pickled checkpoints.

Both :mod:`torchrl_render.checkpoint` (``.pt`` files) and :mod:`torchrl_render.checkpoint.torchrl_format`
(a unified checkpoint's ``state.pt`` component) read through it, so neither imports the other back.

Example:
    >>> import io, torch
    >>> buf = io.BytesIO(); torch.save({"w": torch.ones(1)}, buf); _ = buf.seek(0)
    >>> torch_load(buf, "mem", 0, trust=False)["w"]
    tensor([1.])
"""

from __future__ import annotations

import pickle
import re
from typing import Any

from ..errors import CheckpointError, UnsafeCheckpointError

__all__ = ["CORRUPT_FIX", "needs_unpickling", "torch_load", "weights_only_reason"]

CORRUPT_FIX = "the file may be truncated or corrupt: copy or re-save it"


def torch_load(fh: Any, label: str, size: int, trust: bool, map_location: Any = "cpu") -> Any:
    """``torch.load`` with ``weights_only=True`` (full unpickling when ``trust``), turning its failures into
    :class:`CheckpointError`: :class:`UnsafeCheckpointError` for a file that holds code-bearing objects."""
    import torch

    try:
        # trusted: the user chose to run what the file holds, so it loads as torch.save wrote it
        return torch.load(fh, map_location=map_location, weights_only=not trust)
    except pickle.UnpicklingError as exc:
        reason = weights_only_reason(exc)
        if trust or not needs_unpickling(reason):
            raise CheckpointError(f"checkpoint {label!r} cannot be read: {reason}",
                                  expected="a file written by torch.save or safetensors", got=f"{size} bytes",
                                  fix=CORRUPT_FIX) from exc
        raise UnsafeCheckpointError(
            f"checkpoint {label!r} holds Python objects that only full unpickling can load, and "
            "unpickling runs code stored in the file (a crafted checkpoint can take over your machine)",
            got=reason,
            fix=("re-save it as a plain state dict (torchrl_render.save_render_checkpoint), or, only if you "
                 "trust where the file came from, pass --trust-checkpoint (trust_checkpoint=True)")) from exc
    except Exception as exc:  # torch's reader raises RuntimeError/EOFError/... on damaged input
        text = " ".join(str(exc).split())[:300]
        raise CheckpointError(f"checkpoint {label!r} cannot be read: {type(exc).__name__}"
                              + (f": {text}" if text else " (the file ends early)"),
                              expected="a file written by torch.save or safetensors", got=f"{size} bytes",
                              fix=CORRUPT_FIX) from exc


def needs_unpickling(reason: str) -> bool:
    """Whether torch's weights-only refusal names an object (a global, a class) rather than damaged bytes
    (``Unsupported operand``, a truncated stream)."""
    lowered = reason.lower()
    return any(word in lowered for word in ("global", "blocked", "can only build", "allowlist", "safe_globals"))


def weights_only_reason(exc: Exception) -> str:
    """The one informative line of torch's weights-only error, never its advice to retry with
    ``weights_only=False``: ``Unsupported global: GLOBAL os.system``, ``unsupported GLOBAL posix.system
    (its module posix is blocked)``, ``Unsupported operand 110``..."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for i, line in enumerate(lines):
        blocked = re.search(r"unsupported GLOBAL (\S+) whose module (\S+) is blocked", line)
        if blocked:
            return f"unsupported GLOBAL {blocked[1]} (its module {blocked[2]} is blocked)"
        if "WeightsUnpickler error" in line:
            rest = line.split("WeightsUnpickler error:", 1)[1].strip()
            rest = rest or (lines[i + 1] if i + 1 < len(lines) else "")
            return rest.split(" was not an allowed global")[0][:300]
    advice = ("Weights only load failed", "Re-running", "Please file an issue", "Check the documentation")
    useful = [line for line in lines if not line.startswith(advice)]
    return useful[0][:300] if useful else type(exc).__name__
