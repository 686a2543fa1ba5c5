"""The training step of a checkpoint: its metadata first, then a number in its file name.

TorchRL's ``save_render_checkpoint`` stores it as ``frames`` (and TorchRL's unified checkpoints'
trainer state as ``frames`` / ``collected_frames``); ours and training loops as ``step`` and its
synonyms. Without one, the last number of the file name (``step_1000.pt``, ``ckpt-2000.pt``,
``3000.pt``); a ``save_pretrained`` folder's ``model.safetensors``, whose name never says it, takes the number of
the folder that holds the checkpoint (LeRobot's ``checkpoints/005000/pretrained_model/model.safetensors``). The
sweeps' x axis and the loggers' step.

Example:
    >>> checkpoint_step("runs/none/ckpt-2000.pt"), checkpoint_step("3000.pt"), checkpoint_step("last.pt")
    (2000, 3000, None)
    >>> step_from_name("act/checkpoints/005000/pretrained_model/model.safetensors")
    5000
    >>> step_from_payload({"model_state_dict": {}, "frames": 4096})
    4096
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import RenderError

__all__ = ["STEP_KEYS", "checkpoint_step", "step_from_name", "step_from_payload"]

#: Checkpoint entries holding the training step, in the order they are looked up.
STEP_KEYS = ("step", "global_step", "train_step", "train_steps", "training_step", "iteration", "epoch", "frames",
             "collected_frames")
_CACHE: dict[tuple[str, str], int | None] = {}


def step_from_payload(payload: object) -> int | None:
    """The first integer entry of :data:`STEP_KEYS` in a loaded checkpoint, else None."""
    if isinstance(payload, Mapping):
        for key in STEP_KEYS:
            value = payload.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def step_from_name(path: str | Path) -> int | None:
    """The last number of the file name (without its suffix), else None; for a ``save_pretrained`` folder's
    ``model.safetensors``, of the folder's name, or its parent's when the folder is LeRobot's ``pretrained_model``."""
    p = Path(path)
    name = p.stem
    if p.name == "model.safetensors":
        folder = p.parent.parent if p.parent.name == "pretrained_model" else p.parent
        name = folder.name
    numbers = re.findall(r"\d+", name)
    return int(numbers[-1]) if numbers else None


def checkpoint_step(path: str | Path, digest: str = "") -> int | None:
    """The step of the checkpoint at ``path`` (cached per path and ``digest``, its content's hash)."""
    from . import load_checkpoint

    key = (str(path), digest)
    if key not in _CACHE:
        step = None
        if Path(path).is_file():
            try:
                step = step_from_payload(load_checkpoint(path))
            except RenderError:
                step = None  # its cell fails with the checkpoint's own error; the file name may still say
        _CACHE[key] = step if step is not None else step_from_name(path)
    return _CACHE[key]
