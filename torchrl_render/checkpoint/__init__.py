"""Checkpoints: safe loading, hashing, state-dict inference, and a render checkpoint writer.

Loading never runs code from the file unless asked to:

* ``.pt`` / ``.pth`` files: ``torch.load(weights_only=True)`` (tensors, numbers,
  strings, containers); a file that needs full unpickling is refused unless
  ``trust_checkpoint=True`` (``--trust-checkpoint``).
* ``.safetensors`` files: read natively (a flat state dict).
* TorchRL's own checkpoints (``torchrl.checkpoint.Checkpoint``, a folder or a
  ``.torchrl`` ZIP archive holding ``manifest.json`` and one sub-folder per
  component): read here, without importing torchrl, component by component
  and only when a component is asked for, so a trainer checkpoint's optimizer,
  replay buffer or collector is never read to render its policy. The payload is
  a :class:`TorchRLCheckpoint` ``dict`` laid out like ``torchrl.render``'s
  (``model_state_dict`` = the ``policy`` component, environment metadata and
  ``extra`` entries at the top level, ``frames``, ``metrics``, ``config``); every
  other component is read only when named (``--checkpoint-key``).

The package: this module (reading, hashing, inference, writing), :mod:`.safeload` (the one
``torch.load`` of pickled data) and :mod:`.torchrl_format` (TorchRL's checkpoint layout).

Example:
    >>> import tempfile, os, torch
    >>> path = os.path.join(tempfile.mkdtemp(), "p.pt")
    >>> _ = save_render_checkpoint(path, torch.nn.Linear(2, 1), env_metadata={"env_name": "X-v0"}, format="pt")
    >>> payload = load_checkpoint(path)
    >>> sorted(payload), len(sha256_file(path))
    (['env_name', 'model_state_dict'], 64)
    >>> sorted(find_state_dict(payload)[0]), sorted(infer_state_dict(payload))
    (['bias', 'weight'], ['bias', 'weight'])
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeGuard

from ..contracts import Payload
from ..errors import CheckpointError, short_name
from ..storage import atomic_path
from .safeload import CORRUPT_FIX as _CORRUPT_FIX
from .safeload import torch_load as _torch_load
from .torchrl_format import MANIFEST, TorchRLCheckpoint, is_torchrl_archive, save_unified

if TYPE_CHECKING:
    import torch
    from torch.serialization import MAP_LOCATION

__all__ = [
    "TorchRLCheckpoint",
    "check_payload",
    "checkpoint_hash",
    "find_state_dict",
    "infer_state_dict",
    "load_checkpoint",
    "load_into_policy",
    "read_checkpoint",
    "save_render_checkpoint",
    "sha256_file",
]

STATE_DICT_KEYS = ("model_state_dict", "policy_state_dict", "state_dict", "policy", "model", "actor")
_REMOTE = ("http://", "https://", "s3://", "gs://", "hf://", "ftp://")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)")


class _HoldsWeights(Protocol):
    """What has weights to save or compare: a ``torch.nn.Module`` (or any object with its ``state_dict()``)."""

    def state_dict(self) -> Mapping[str, torch.Tensor]: ...


class _TakesWeights(_HoldsWeights, Protocol):
    """A policy whose weights a checkpoint's state dict can replace (a ``torch.nn.Module``'s two methods)."""

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor], strict: bool = ...) -> object: ...


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, read in chunks (constant memory).

    For a folder (a TorchRL directory checkpoint): the digest of every file's
    relative path and bytes in sorted order, as ``torchrl.render.checkpoint_hash``.
    """
    path = Path(path)
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if file is not path:
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as fh:
            while block := fh.read(chunk):
                digest.update(block)
    return digest.hexdigest()


def checkpoint_hash(path: str | Path) -> str:
    """SHA-256 of a checkpoint file, or of a TorchRL checkpoint folder (relative paths and bytes, sorted).

    Example:
        >>> import hashlib, tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); _ = open(p, "wb").write(b"abc")
        >>> checkpoint_hash(p) == hashlib.sha256(b"abc").hexdigest()
        True
    """
    return sha256_file(check_checkpoint_path(path))



#: The weights file of a ``save_pretrained`` folder (Hugging Face's layout, which LeRobot and transformers write:
#: ``config.json`` beside it): such a folder as ``--ckpt`` stands for this file.
PRETRAINED_WEIGHTS = "model.safetensors"


def check_checkpoint_path(path: str | Path) -> Path:
    """Refuses remote URLs, missing files and folders that are not checkpoints; a ``save_pretrained`` folder gives
    its ``model.safetensors``."""
    text = _URL.sub(r"\1://", str(path))  # Path("https://x") reads "https:/x": give the URL back its slashes
    if text.lower().startswith(_REMOTE) or "://" in text:
        raise CheckpointError(f"Only local checkpoint paths are read, and checkpoint {text!r} is a URL",
                              expected="a path to a local file", got=text,
                              fix="download it first (e.g. curl -LO), then pass the local path")
    p = Path(path).expanduser()
    try:
        found = p.exists()
    except (OSError, ValueError) as exc:  # a NUL byte, a name longer than the file system takes
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CheckpointError(f"checkpoint {str(p.parent / short_name(p.name))!r} cannot be looked up: {reason}",
                              expected="a path to a local file",
                              got=f"a name of {max(len(os.fsencode(part)) for part in p.parts)} bytes",
                              fix="check the path passed to --ckpt") from exc
    if not found:
        raise CheckpointError(f"checkpoint {text!r} does not exist", expected="an existing local file", got=text,
                              fix="check the path passed to --ckpt")
    if p.is_dir() and not (p / MANIFEST).is_file():
        if (p / PRETRAINED_WEIGHTS).is_file() and (p / "config.json").is_file():
            return p / PRETRAINED_WEIGHTS
        inside = sorted(c.name for c in p.iterdir())[:8]
        raise CheckpointError(f"checkpoint {text!r} is a folder, and not a TorchRL checkpoint folder (no {MANIFEST})",
                              expected="a checkpoint file (.pt, .pth, .safetensors), a TorchRL checkpoint "
                                       "(folder or .torchrl archive with manifest.json) or a save_pretrained folder "
                                       "(config.json and model.safetensors)",
                              got=f"a folder holding {inside}", fix="point --ckpt at the file inside the folder")
    return p


def load_checkpoint(path: str | Path, map_location: MAP_LOCATION = "cpu", *, weights_only: bool | None = None,
                    trust: bool = False) -> Payload:
    """Loads a local checkpoint (torchrl.render's signature); returns its payload.

    Nothing in the file runs unless it is trusted: ``.pt`` files load with ``weights_only=True``
    and one that needs full unpickling is refused (:class:`~torchrl_render.UnsafeCheckpointError`)
    unless ``weights_only=False`` or ``trust=True`` (the same thing; torchrl.render unpickles
    legacy ``.pt`` files by default). TorchRL checkpoint folders and ``.torchrl`` archives load
    component by component, ``.safetensors`` files natively.

    Args:
        path: A local file or TorchRL checkpoint folder (a URL is refused).
        map_location: Where tensors are loaded (``torch.load``'s ``map_location``).

    Keyword Args:
        weights_only: ``False`` allows full unpickling; ``None`` and ``True`` do not.
        trust: Our name for ``weights_only=False`` (``--trust-checkpoint``).

    Example:
        >>> import tempfile, os, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "w.pt"); torch.save({"w": torch.ones(1)}, path)
        >>> load_checkpoint(path)["w"]
        tensor([1.])
    """
    p = check_checkpoint_path(path)
    if p.name == MANIFEST:  # the manifest of a TorchRL checkpoint folder stands for the folder
        p = p.parent
    trust = bool(trust) or weights_only is False
    if p.is_dir() or is_torchrl_archive(p):
        return TorchRLCheckpoint(p, trust=trust)
    if p.suffix == ".safetensors":
        return _load_safetensors(p)
    with open(p, "rb") as fh:
        return _torch_load(fh, str(path), p.stat().st_size, trust, map_location)


def check_payload(checkpoint: object, where: str) -> None:
    """Refuses what is not a loaded checkpoint payload, before a factory gets it as ``spec.checkpoint``.

    ``(payload, sha256)`` (what a ``load_checkpoint`` of torchrl_render 0.1 returned) and a path would
    otherwise reach the factories and the weight loading, which would find no state dict in them and
    quietly keep the factory's random weights.
    """
    digest = (isinstance(checkpoint, tuple) and len(checkpoint) == 2 and isinstance(checkpoint[1], str)
              and re.fullmatch(r"[0-9a-f]{64}", checkpoint[1]) is not None)
    if digest or isinstance(checkpoint, (str, bytes, os.PathLike)):
        got = "(payload, sha256)" if digest else f"{type(checkpoint).__name__} {str(checkpoint)[:120]!r}"
        raise CheckpointError(f"{where}(checkpoint=...) takes the loaded checkpoint payload, and got {got}",
                              expected="what load_checkpoint(path) returns (a mapping such as "
                                       "{'model_state_dict': ...}), or None to load config.ckpt",
                              got=got, fix="pass checkpoint=load_checkpoint(path) (the payload alone; its digest "
                                           "goes to checkpoint_digest=checkpoint_hash(path))")


def read_checkpoint(path: str | Path, *, trust: bool = False,
                    map_location: MAP_LOCATION = "cpu") -> tuple[Payload, str]:
    """``(payload, sha256)`` of a local checkpoint: :func:`load_checkpoint` and its digest."""
    payload = load_checkpoint(path, map_location, trust=trust)
    p = Path(path).expanduser()
    return payload, sha256_file(p.parent if p.name == MANIFEST else p)


def _load_safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        from safetensors.torch import load_file
    except ImportError as exc:
        raise CheckpointError("reading .safetensors checkpoints needs the safetensors package",
                              fix="install it", extra="safetensors") from exc
    try:
        return load_file(str(path))
    except Exception as exc:  # safetensors raises its own SafetensorError (and OSError) on bad bytes
        raise CheckpointError(f"checkpoint {str(path)!r} is not a valid safetensors file: "
                              f"{_safetensors_problem(path) or exc}", fix=_CORRUPT_FIX) from exc


def _safetensors_problem(path: Path) -> str | None:
    """What is wrong with a safetensors file's header, in words that do not change with the library's version
    (it starts with the length of a JSON header as 8 little-endian bytes); None when the header is sound."""
    import json

    data = path.read_bytes()
    if len(data) < 8:
        return f"it has {len(data)} bytes, fewer than the 8 that give the header's length"
    length = int.from_bytes(data[:8], "little")
    if length > len(data) - 8:
        return f"its header claims {length} bytes and the file holds {len(data) - 8} after the length"
    try:
        json.loads(data[8:8 + length])
    except ValueError:
        return "its header is not JSON"
    return None


# -- state dicts -----------------------------------------------------------------------------------------


def _is_state_dict(obj: object) -> TypeGuard[Mapping[str, torch.Tensor]]:
    import torch

    return (isinstance(obj, Mapping) and len(obj) > 0
            and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()))


def find_state_dict(payload: Payload, checkpoint_key: str | None = None,
                    state_dict_key: str | None = None) -> tuple[dict[str, torch.Tensor] | None, str | None]:
    """Finds the policy's state dict in a checkpoint; returns ``(state_dict, where)``.

    ``checkpoint_key`` first selects a sub-entry (for a TorchRL checkpoint, a
    component); ``state_dict_key`` names the state dict exactly; otherwise
    ``model_state_dict``, ``policy_state_dict``, ``state_dict``, ``policy``,
    ``model``, ``actor`` are tried, then the payload itself as a raw state dict
    (never for a TorchRL checkpoint: that would read every component).
    ``(None, None)`` when nothing fits.
    """
    where = ""
    if checkpoint_key is not None:
        payload = _pick(payload, checkpoint_key, "checkpoint_key")
        where = f"{checkpoint_key}."
    if state_dict_key is not None:
        found = _pick(payload, state_dict_key, "state_dict_key")
        if not _is_state_dict(found):
            raise CheckpointError(f"checkpoint entry {where + state_dict_key!r} is not a state dict",
                                  expected="a mapping of parameter names to tensors", got=type(found).__name__,
                                  fix="point --state-dict-key at the entry holding the weights")
        return dict(found), where + state_dict_key
    if hasattr(payload, "state_dict") and callable(payload.state_dict):
        return dict(payload.state_dict()), (where or "") + "<module>.state_dict()"
    if isinstance(payload, Mapping):
        for key in STATE_DICT_KEYS:
            if key in payload and _is_state_dict(payload[key]):
                return dict(payload[key]), where + key
        if not isinstance(payload, TorchRLCheckpoint) and _is_state_dict(payload):
            return dict(payload), where.rstrip(".") or "<root>"
    return None, None



def infer_state_dict(payload: Payload, key: str | None = None) -> Mapping[str, torch.Tensor]:
    """torchrl.render's ``infer_state_dict``: the policy's state dict in a checkpoint payload (``key`` names it
    exactly), as :func:`find_state_dict` finds it; a payload without one raises :class:`CheckpointError`.

    Example:
        >>> import torch
        >>> sorted(infer_state_dict({"policy": torch.nn.Linear(1, 1).state_dict(), "frames": 3}))
        ['bias', 'weight']
    """
    state_dict, _ = find_state_dict(payload, state_dict_key=key)
    if state_dict is None:
        keys = sorted(map(str, payload)) if isinstance(payload, Mapping) else type(payload).__name__
        raise CheckpointError("no state dict found in the checkpoint payload",
                              expected="an entry model_state_dict, policy_state_dict, state_dict, policy, model or "
                                       "actor holding tensors, or a mapping of tensors", got=keys,
                              fix="pass key= (--state-dict-key) naming the entry that holds the weights")
    return state_dict


def _pick(payload: Payload, key: str, flag: str) -> Payload:
    """The payload's entry ``key`` (a TorchRL checkpoint's component of that name), as the user's file holds it."""

    if isinstance(payload, TorchRLCheckpoint) and key not in payload and key in payload.components:
        return payload.component(key)  # a component outside torchrl.render's layout, read when named
    if not isinstance(payload, Mapping) or key not in payload:
        keys = sorted(map(str, payload)) if isinstance(payload, Mapping) else []
        raise CheckpointError(f"the checkpoint has no entry {key!r}",
                              expected=f"one of {keys}" if keys else "a mapping", got=key,
                              fix=f"pass --{flag.replace('_', '-')} with one of the checkpoint's keys")
    return payload[key]


def load_into_policy(policy: _TakesWeights, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> str:
    """Loads ``state_dict`` into ``policy`` unless it already holds those weights.

    Returns ``"loaded"``, ``"already loaded"`` (the factory loaded them itself) or, with
    ``strict=False``, ``"partially loaded (missing keys [...], unexpected keys [...])"``.
    A non-strict load that would load nothing at all is refused.
    """
    import torch

    current = policy.state_dict()
    if current.keys() == state_dict.keys() and all(
            current[k].shape == v.shape and torch.equal(current[k], v.to(current[k].device, current[k].dtype))
            for k, v in state_dict.items()):
        return "already loaded"
    missing = sorted(set(current) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(current))
    shapes = [f"{k}: checkpoint {tuple(v.shape)} vs policy {tuple(current[k].shape)}"
              for k, v in state_dict.items() if k in current and current[k].shape != v.shape]
    if shapes or (strict and (missing or unexpected)):
        raise CheckpointError(
            "the checkpoint's state dict does not fit the policy",
            expected=f"the policy's {len(current)} parameter/buffer names and shapes",
            got=f"missing keys {missing[:10]}, unexpected keys {unexpected[:10]}, shape mismatches {shapes[:5]}",
            fix=("build the policy with the architecture it was trained with (--policy-kwargs), pick the right "
                 "entry (--state-dict-key / --checkpoint-key), or load partially with --no-strict-load"))
    if not strict and missing and len(missing) == len(current):
        raise CheckpointError(
            "no key of the checkpoint's state dict fits the policy, so --no-strict-load would load nothing and "
            "evaluate the factory's own weights",
            expected=f"at least one of the policy's {len(current)} parameter/buffer names",
            got=f"missing keys {_few(missing)}, unexpected keys {_few(unexpected)}",
            fix=("build the policy with the architecture it was trained with (--policy-kwargs), pick the right "
                 "entry (--state-dict-key / --checkpoint-key), or drop --ckpt to evaluate the factory's weights"))
    policy.load_state_dict(state_dict, strict=strict)
    if missing or unexpected:
        return f"partially loaded (missing keys {_few(missing)}, unexpected keys {_few(unexpected)})"
    return "loaded"


def _few(keys: list[str], limit: int = 10) -> str:
    """``['a', 'b']``, or the first ``limit`` keys and how many more."""
    return str(keys[:limit]) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def save_render_checkpoint(path: str | Path | None, model: _HoldsWeights | Mapping[str, torch.Tensor], *,
                           env_metadata: Mapping[str, object] | None = None, frames: int | None = None,
                           metrics: Mapping[str, object] | None = None, config: Mapping[str, object] | None = None,
                           extra: Mapping[str, object] | None = None, format: str | None = None) -> Path | None:
    """Writes a checkpoint that :func:`load_checkpoint` reads back with ``weights_only=True``.

    The weights go under ``model_state_dict``; ``env_metadata`` entries are merged
    at the top level (as torchrl.render does) so that factories can rebuild the env.
    Anything that would need unpickling is refused before the file is written; the
    parent folder is created. ``path`` ``None`` or ``""`` writes nothing (returns ``None``).

    ``format``: ``None`` writes the ``torch.save`` payload with torchrl.render's ``FutureWarning``
    (its default becomes a unified checkpoint in v0.15); ``"pt"`` writes the same file without
    the warning; ``"directory"`` or ``"archive"`` write a unified ``torchrl.checkpoint.Checkpoint``
    (components ``policy``, ``environment_metadata``, ``trainer_state``, ``metrics``, ``config``,
    ``extra``), read back by :func:`load_checkpoint` into the same layout.
    """
    import torch

    if path is None or str(path) == "":
        return None
    if format is None:
        warnings.warn(_LEGACY_DEFAULT, FutureWarning, stacklevel=2)
    state = model.state_dict() if hasattr(model, "state_dict") else dict(model)
    state = {k: v.detach().cpu() for k, v in state.items()}
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    if format not in (None, "pt"):
        return save_unified(path, format, state, env_metadata, frames, metrics, config, extra)
    payload = _legacy_payload(state, env_metadata, frames, metrics, config, extra)
    _check_safe(payload, "payload")
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return path


def _legacy_payload(state: dict[str, torch.Tensor], env_metadata: Mapping[str, object] | None, frames: int | None,
                    metrics: Mapping[str, object] | None, config: Mapping[str, object] | None,
                    extra: Mapping[str, object] | None) -> dict[str, object]:
    """torchrl.render's ``.pt`` layout: the weights, the env metadata merged at the top, then the rest."""
    payload: dict[str, object] = {"model_state_dict": state, **(env_metadata or {})}
    if frames is not None:
        payload["frames"] = int(frames)
    for key, value in (("metrics", metrics), ("config", config)):
        if value is not None:
            payload[key] = dict(value)
    payload.update(extra or {})
    return payload


_LEGACY_DEFAULT = ("save_render_checkpoint(format=None) writes the legacy torch.save payload; as in torchrl.render, "
                   "the default changes to a unified TorchRL checkpoint in v0.15. Pass format='archive' or "
                   "format='directory' to opt in now, or format='pt' to keep the .pt file without this warning.")


def _check_safe(obj: object, where: str) -> None:
    import torch

    if obj is None or isinstance(obj, (bool, int, float, str, bytes, torch.Tensor, torch.dtype, torch.Size)):
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            _check_safe(value, f"{where}[{key!r}]")
        return
    if isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _check_safe(value, f"{where}[{i}]")
        return
    raise CheckpointError(f"{where} is a {type(obj).__name__}, which only full unpickling could load",
                          expected="tensors, numbers, strings, lists, tuples and dicts",
                          got=type(obj).__name__, fix="convert it (e.g. to a dict or a string) before saving")
