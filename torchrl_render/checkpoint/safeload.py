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
import zipfile
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING

from ..contracts import Payload
from ..errors import CheckpointError, UnsafeCheckpointError

if TYPE_CHECKING:
    from torch.serialization import MAP_LOCATION

__all__ = ["CORRUPT_FIX", "check_zip_records", "needs_unpickling", "torch_load", "weights_only_reason"]

CORRUPT_FIX = "the file may be truncated or corrupt: copy or re-save it"


#: a compressed record may inflate this many times its stored size, and to this many bytes, before it is read:
#: tensors compress little (float weights about 1.1:1), while a zip bomb inflates a megabyte to a gigabyte
MAX_RATIO = 100
MAX_INFLATED = 64 << 20


def check_zip_records(archive: zipfile.ZipFile, label: str, size: int, names: Iterable[str] | None = None) -> None:
    """Refuses, before anything is inflated, a zip whose records declare more bytes than such a file can hold:
    a compressed record over :data:`MAX_INFLATED` bytes that inflates over :data:`MAX_RATIO` times, or a stored
    record larger than the file. ``names``: the records to check (default: all)."""
    infos = archive.infolist() if names is None else [archive.getinfo(n) for n in names]
    for info in infos:
        stored = info.compress_type == zipfile.ZIP_STORED
        bomb = (not stored and info.file_size > MAX_INFLATED
                and info.file_size > MAX_RATIO * max(info.compress_size, 1))
        if bomb or (stored and info.file_size > size):
            raise CheckpointError(
                f"checkpoint {label!r} declares a record {info.filename!r} of {_mib(info.file_size)} in a "
                f"{_mib(size)} file" + (f" ({info.file_size // max(info.compress_size, 1)}:1 compressed)"
                                         if not stored else "") + ", which no checkpoint of that size holds; it "
                "was refused before inflating (a zip bomb takes the machine's memory)",
                expected=f"records of at most {MAX_RATIO}x their compressed size (torch.save stores them "
                         "uncompressed)", got=f"{info.file_size} bytes declared",
                fix="re-save the weights with torch.save or save_render_checkpoint; do not load a file whose "
                    "source you do not know")


def _mib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"


def torch_load(fh: IO[bytes], label: str, size: int, trust: bool, map_location: MAP_LOCATION = "cpu") -> Payload:
    """``torch.load`` with ``weights_only=True`` (full unpickling when ``trust``), turning its failures into
    :class:`CheckpointError`: :class:`UnsafeCheckpointError` for a file that holds code-bearing objects."""
    import torch

    if zipfile.is_zipfile(fh):  # torch.save's format since 1.6: look at the records before torch inflates them
        actual = fh.seek(0, 2)  # the bytes really there, whatever size the caller quoted
        fh.seek(0)
        with zipfile.ZipFile(fh) as archive:
            check_zip_records(archive, label, actual)
    fh.seek(0)
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
        # torch's first sentence: what follows it differs between releases (2.7 adds four about miniz)
        text = " ".join(str(exc).split()).split(". ")[0][:300]
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
