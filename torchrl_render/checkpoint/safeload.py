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
from typing import Any

from ..errors import CheckpointError, UnsafeCheckpointError

__all__ = ["CORRUPT_FIX", "torch_load", "weights_only_reason"]

CORRUPT_FIX = "the file may be truncated or corrupt: copy or re-save it"


def torch_load(fh: Any, label: str, size: int, trust: bool, map_location: Any = "cpu") -> Any:
    """``torch.load`` with ``weights_only=True``, turning its failures into :class:`CheckpointError`."""
    import torch

    try:
        return torch.load(fh, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        reason = weights_only_reason(exc)
        if "Unsupported global" not in reason:
            raise CheckpointError(f"checkpoint {label!r} cannot be read: {reason}",
                                  expected="a file written by torch.save or safetensors", got=f"{size} bytes",
                                  fix=CORRUPT_FIX) from exc
        if not trust:
            raise UnsafeCheckpointError(
                f"checkpoint {label!r} holds Python objects that only full unpickling can load, and "
                "unpickling runs code stored in the file (a crafted checkpoint can take over your machine)",
                got=reason,
                fix=("re-save it as a plain state dict (torchrl_render.save_render_checkpoint), or, only if you "
                     "trust where the file came from, pass --trust-checkpoint (trust_checkpoint=True)")) from exc
    except Exception as exc:  # torch's reader raises RuntimeError/EOFError/... on damaged input
        raise CheckpointError(f"checkpoint {label!r} cannot be read: {type(exc).__name__}: {exc}",
                              expected="a file written by torch.save or safetensors", got=f"{size} bytes",
                              fix=CORRUPT_FIX) from exc
    fh.seek(0)
    return torch.load(fh, map_location=map_location, weights_only=False)


def weights_only_reason(exc: Exception) -> str:
    """The one informative line of torch's weights-only error (e.g. ``Unsupported global: GLOBAL os.system``)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if "WeightsUnpickler error" in line:
            rest = line.split("WeightsUnpickler error:", 1)[1].strip()
            rest = rest or (lines[i + 1] if i + 1 < len(lines) else "")
            return rest.split(" was not an allowed global")[0][:300]
    return lines[0][:300] if lines else type(exc).__name__
