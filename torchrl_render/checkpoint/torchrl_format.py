"""TorchRL's own checkpoint format (``torchrl.checkpoint.Checkpoint``), read without importing torchrl.

On disk (torchrl 0.14, format ``torchrl.checkpoint`` version 1) a checkpoint is a
folder, or a ZIP archive (``.torchrl``) of the same tree::

    manifest.json                      format, version, and per component: adapter, path, files
    components/0000-<name>/value.json  a "torchrl.json" component (config, metrics, trainer_state...)
    components/0001-<name>/state.json  a "torchrl.state_dict" component: the state dict's schema
    components/0001-<name>/state/      ... and its tensors: meta.json + one raw <key>.memmap each
                                       (or state.tdz: the same in a ZIP; state.tdc: consolidated;
                                       state.pt: torch.save, read with weights_only=True)

"torchrl.dump_load" components (replay buffers) can only be restored by their own
object and are never read. Only JSON and raw tensor bytes are parsed: nothing in
the checkpoint can run code, except a ``state.pt`` when ``trust=True``.

Example:
    >>> import tempfile, torch
    >>> from torchrl.checkpoint import Checkpoint
    >>> path = Checkpoint(policy=torch.nn.Linear(2, 1), metrics={"r": 1.0}).save(tempfile.mkdtemp() + "/ck")
    >>> ckpt = TorchRLCheckpoint(path)
    >>> sorted(ckpt), ckpt.loaded, isinstance(ckpt, dict)
    (['metrics', 'model_state_dict'], ['metrics', 'policy'], True)
    >>> sorted(ckpt["model_state_dict"])
    ['bias', 'weight']
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from ..contracts import Json
from ..errors import CheckpointError
from .safeload import check_zip_records, torch_load

if TYPE_CHECKING:
    import torch

__all__ = ["MANIFEST", "ComponentRecord", "TorchRLCheckpoint", "is_torchrl_archive", "save_unified"]

MANIFEST = "manifest.json"
TORCHRL_FORMAT = ("torchrl.checkpoint", 1)


class ComponentRecord(TypedDict):
    """A component's entry in ``manifest.json``: the adapter that saved it, its folder and its files (torchrl
    writes more, e.g. ``adapter_version``: kept, not read)."""

    adapter: str
    path: str
    files: list[Json]


def is_torchrl_archive(path: Path) -> bool:
    """A ZIP holding ``manifest.json`` at its root (``torch.save`` ZIPs hold ``<name>/data.pkl`` instead)."""
    if not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return MANIFEST in archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


class _Source:
    """Reads members of a TorchRL checkpoint folder or archive by relative POSIX path, never outside it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = path.resolve() if path.is_dir() else None
        self.reads: list[str] = []  # what was read, in order (tests check that nothing unneeded is)

    def read(self, member: str) -> bytes:
        rel = PurePosixPath(member.replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts:
            raise self.error(f"it names a member outside the checkpoint ({member!r})")
        self.reads.append(str(rel))
        try:
            if self.root is not None:
                target = (self.root / rel).resolve()
                if self.root not in target.parents:
                    raise self.error(f"its member {member!r} points outside the checkpoint folder")
                return target.read_bytes()
            with zipfile.ZipFile(self.path) as archive:
                check_zip_records(archive, str(self.path), self.path.stat().st_size, [str(rel)])
                return archive.read(str(rel))
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise self.error(f"its member {member!r} cannot be read ({type(exc).__name__}: {exc})") from exc

    def error(self, why: str) -> CheckpointError:
        return CheckpointError(f"TorchRL checkpoint {str(self.path)!r} is damaged: {why}",
                               expected="a checkpoint written by torchrl.checkpoint.Checkpoint.save",
                               got=why, fix="re-save the checkpoint, or copy it again (it may be incomplete)")


class TorchRLCheckpoint(dict[str, object]):
    """A TorchRL checkpoint as torchrl.render's ``load_checkpoint`` lays it out: a ``dict``.

    Its items are torchrl.render's payload, read when the checkpoint is opened: ``model_state_dict``
    (the ``policy`` component), the ``environment_metadata`` and ``extra`` entries, ``frames`` (from
    ``trainer_state``), ``metrics`` and ``config``. Being a ``dict`` matters: TorchRL's own factories
    read ``spec.checkpoint`` only when ``isinstance(spec.checkpoint, dict)``. Every other component
    (an optimizer, a replay buffer, a second network) is read only when asked for, by name
    (``ckpt["optimizer"]`` or :meth:`component`), and never by iterating; ``loaded`` names the
    components read so far.
    """

    def __init__(self, path: str | Path, *, trust: bool = False) -> None:
        super().__init__()
        self.path = Path(path)
        self.trust = trust
        self.source = _Source(self.path)
        self.manifest, self.components = _read_manifest(self.source)
        self._cache: dict[str, object] = {}
        self._layout()

    def _layout(self) -> None:
        names = [n for n in self.components if self._readable(n)]
        if "policy" in names:
            self["model_state_dict"] = self.component("policy")
        for merged in ("environment_metadata", "extra"):
            value = self.component(merged) if merged in names else None
            if isinstance(value, Mapping):
                self.update({str(k): v for k, v in value.items()})
        state = self.component("trainer_state") if "trainer_state" in names else None
        frames = state.get("frames", state.get("collected_frames")) if isinstance(state, Mapping) else None
        if frames is not None:
            self["frames"] = frames
        for name in ("metrics", "config"):
            if name in names:
                self[name] = self.component(name)

    def _readable(self, name: str) -> bool:
        return self.components[name]["adapter"] in ("torchrl.json", "torchrl.state_dict")

    @property
    def loaded(self) -> list[str]:
        """Names of the components read so far."""
        return sorted(self._cache)

    def component(self, name: str) -> object:
        """The value of component ``name`` (a state dict, or a JSON value), read once."""
        if name not in self._cache:
            if name not in self.components:
                raise CheckpointError(f"the TorchRL checkpoint has no component {name!r}",
                                      expected=f"one of {sorted(self.components)}", got=name,
                                      fix="pass --checkpoint-key with one of the checkpoint's components")
            self._cache[name] = _read_component(self, name, self.components[name])
        return self._cache[name]

    def __missing__(self, key: str) -> object:
        if key in self.components:  # a component that is not part of torchrl.render's layout: read now
            return self.component(key)
        raise KeyError(key)

    def __repr__(self) -> str:
        return f"TorchRLCheckpoint({str(self.path)!r}, components={sorted(self.components)}, loaded={self.loaded})"


def _read_manifest(source: _Source) -> tuple[dict[str, Json], dict[str, ComponentRecord]]:
    """The manifest, and its component table (checked: each record names its adapter, folder and files)."""
    try:
        manifest = json.loads(source.read(MANIFEST))
    except json.JSONDecodeError as exc:
        raise source.error(f"{MANIFEST} is not valid JSON ({exc})") from exc
    found = (manifest.get("format"), manifest.get("format_version")) if isinstance(manifest, dict) else None
    if found != TORCHRL_FORMAT:
        raise CheckpointError(f"checkpoint {str(source.path)!r} has a {MANIFEST} of another format or version",
                              expected=f"format {TORCHRL_FORMAT[0]!r}, version {TORCHRL_FORMAT[1]}",
                              got=f"format {found[0]!r}, version {found[1]!r}" if found else type(manifest).__name__,
                              fix="re-save it with torchrl 0.14 (torchrl.checkpoint.Checkpoint), or load it with "
                                  "the torchrl version that wrote it and save the policy's state dict")
    components = manifest.get("components")
    if not _is_table(components):
        raise source.error(f"{MANIFEST} has no valid component table")
    return manifest, components  # the manifest's own table, its records whole (torchrl's adapter_version too)


def _is_table(table: Json) -> TypeGuard[dict[str, ComponentRecord]]:
    """Whether a manifest's ``components`` is a table whose every record names its adapter, folder and files."""
    return isinstance(table, dict) and all(
        isinstance(r, dict) and isinstance(r.get("adapter"), str) and isinstance(r.get("path"), str)
        and isinstance(r.get("files"), list) for r in table.values())


def _read_component(ckpt: TorchRLCheckpoint, name: str, record: ComponentRecord) -> object:
    adapter, base, files = record["adapter"], record["path"].rstrip("/"), set(record["files"])
    source = ckpt.source
    if adapter == "torchrl.json":
        try:
            return json.loads(source.read(f"{base}/value.json"))
        except json.JSONDecodeError as exc:
            raise source.error(f"component {name!r} holds invalid JSON ({exc})") from exc
    if adapter != "torchrl.state_dict":
        raise CheckpointError(f"the TorchRL checkpoint component {name!r} was saved by the {adapter!r} adapter, "
                              "which only its own object (e.g. a replay buffer) can restore",
                              expected="a state-dict or JSON component, such as 'policy'", got=adapter,
                              fix="pass --checkpoint-key with the component holding the policy's weights")
    if "state.pt" in files:
        data = source.read(f"{base}/state.pt")
        return torch_load(io.BytesIO(data), f"{ckpt.path}:{name}", len(data), ckpt.trust)
    if "state.tdc" in files:
        tensors = _consolidated_tensors(source, source.read(f"{base}/state.tdc"), name)
    elif "state.tdz" in files:
        tensors = _archive_tensors(source, source.read(f"{base}/state.tdz"), name)
    else:
        tensors = _memmap_tensors(source, lambda m: source.read(f"{base}/state/{m}"), name)
    try:
        schema = json.loads(source.read(f"{base}/state.json"))
        return _decode(schema, tensors)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise source.error(f"component {name!r} has an unreadable schema ({type(exc).__name__}: {exc})") from exc


def _archive_tensors(source: _Source, data: bytes, name: str) -> dict[str, torch.Tensor]:
    try:
        inner = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise source.error(f"component {name!r} holds a damaged state.tdz") from exc
    with inner:
        def read(member: str) -> bytes:
            try:
                check_zip_records(inner, f"{source.path}:{name}/state.tdz", len(data), [member])
                return inner.read(member)
            except KeyError as exc:
                raise source.error(f"component {name!r} lacks {member!r} in its state.tdz") from exc
        return _memmap_tensors(source, read, name)


def _memmap_tensors(source: _Source, read: Callable[[str], bytes], name: str) -> dict[str, torch.Tensor]:
    """A tensordict memmap folder: ``meta.json`` (dtype, shape per key) plus one raw ``<key>.memmap`` each."""
    try:
        meta = json.loads(read("meta.json"))
    except json.JSONDecodeError as exc:
        raise source.error(f"component {name!r} has an invalid meta.json ({exc})") from exc
    tensors: dict[str, torch.Tensor] = {}
    for key, info in meta.items():
        if not isinstance(info, dict) or "dtype" not in info:
            continue  # the TensorDict's own shape/device/_type entries
        if info.get("is_nested"):
            raise source.error(f"component {name!r} holds a nested tensor {key!r}, which is not supported")
        tensors[key] = _tensor(source, read(f"{key}.memmap"), info["dtype"], info["shape"], f"{name}.{key}")
    return tensors


def _consolidated_tensors(source: _Source, data: bytes, name: str) -> dict[str, torch.Tensor]:
    """A consolidated TensorDict: raw storage, then its JSON metadata, then the metadata's size (int64)."""
    try:
        size = int.from_bytes(data[-8:], "little")
        meta = json.loads(data[-size - 8:-8])
        leaves = meta["leaves"]
    except (ValueError, KeyError, TypeError) as exc:
        raise source.error(f"component {name!r} holds a damaged state.tdc ({type(exc).__name__})") from exc
    storage = data[: -size - 8]
    return {key: _tensor(source, storage[leaf[2]:leaf[3]], leaf[0], leaf[1], f"{name}.{key}", padded=True)
            for key, leaf in leaves.items()}


def _tensor(source: _Source, data: bytes, dtype_name: str, shape: list[int], where: str,
            padded: bool = False) -> torch.Tensor:
    import math

    import torch

    dtype = getattr(torch, str(dtype_name).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise source.error(f"tensor {where} has an unknown dtype {dtype_name!r}")
    numel = math.prod(shape)
    need = numel * dtype.itemsize
    if len(data) < need or (len(data) != need and not padded):
        raise source.error(f"tensor {where} has {len(data)} bytes, {need} expected (truncated?)")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data[:need]), dtype=dtype).reshape(shape)


def _decode(value: Json, tensors: Mapping[str, torch.Tensor]) -> object:
    """Rebuilds a value from torchrl's state-dict schema (JSON plus tensor references); builds no other object.
    A schema of another shape raises ``TypeError``, ``KeyError`` or ``ValueError`` (the caller names the component)."""
    entry = _object(value)
    kind = _text(entry["kind"])
    if kind == "value":
        return entry["value"]
    if kind == "tensor":
        return tensors[_text(entry["key"])].clone()
    if kind in ("dict", "ordered_dict"):
        out: dict[object, object] = OrderedDict() if kind == "ordered_dict" else {}
        for pair in _list(entry["items"]):
            key, item = _list(pair)
            out[_decode(key, tensors)] = _decode(item, tensors)
        if "metadata" in entry:  # nn.Module state dicts carry per-module versions here
            out._metadata = _decode(entry["metadata"], tensors)  # type: ignore[attr-defined]
        return out
    if kind in _COLLECTIONS:
        return _COLLECTIONS[kind](_decode(item, tensors) for item in _list(entry["items"]))
    return _decode_scalar(kind, entry, tensors)


#: The schema's collections, by kind: built from their decoded items.
_COLLECTIONS: dict[str, Callable[[Iterable[object]], object]] = {"list": list, "tuple": tuple, "set": set,
                                                                  "frozenset": frozenset}


def _object(value: Json) -> dict[str, Json]:
    if not isinstance(value, dict):
        raise TypeError(f"a schema entry is a {type(value).__name__}, where an object was expected")
    return value


def _list(value: Json) -> list[Json]:
    if not isinstance(value, list):
        raise TypeError(f"a schema entry is a {type(value).__name__}, where a list was expected")
    return value


def _text(value: Json) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a schema entry is a {type(value).__name__}, where a string was expected")
    return value


def _ints(value: Json) -> list[int]:
    numbers = _list(value)
    if not all(isinstance(n, int) for n in numbers):
        raise TypeError("a schema entry holds a non-integer, where integers were expected")
    return [n for n in numbers if isinstance(n, int)]


def _number(value: Json) -> float:
    if not isinstance(value, (int, float)):
        raise TypeError(f"a schema entry is a {type(value).__name__}, where a number was expected")
    return value


def _decode_scalar(kind: str, value: dict[str, Json], tensors: Mapping[str, torch.Tensor]) -> object:
    import base64

    import numpy as np
    import torch

    simple: dict[str, Callable[[], object]] = {
        "numpy": lambda: tensors[_text(value["key"])].numpy().astype(np.dtype(_text(value["dtype"])), copy=True),
        "torch_size": lambda: torch.Size(_ints(value["items"])),
        "slice": lambda: slice(*(_decode(i, tensors) for i in _list(value["items"]))),
        "range": lambda: range(*_ints(value["items"])),
        "torch_device": lambda: torch.device(_text(value["value"])),
        "path": lambda: Path(_text(value["value"])),
        "bytes": lambda: base64.b64decode(_text(value["value"])),
        "bytearray": lambda: bytearray(base64.b64decode(_text(value["value"]))),
        "complex": lambda: complex(_number(value["real"]), _number(value["imag"])),
        "numpy_scalar": lambda: np.dtype(_text(value["dtype"])).type(value["value"]),
        "ellipsis": lambda: Ellipsis,
    }
    if kind == "torch_dtype":
        dtype = getattr(torch, str(value["value"]), None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown torch dtype {value['value']!r}")
        return dtype
    if kind not in simple:
        raise ValueError(f"unknown schema kind {kind!r}")
    return simple[kind]()


class _Held:
    """A state-dict holder: what torchrl's ``Checkpoint`` saves with its ``torchrl.state_dict`` adapter."""

    def __init__(self, value: Mapping[str, object]) -> None:
        self.value = dict(value)

    def state_dict(self) -> dict[str, object]:
        return self.value

    def load_state_dict(self, value: Mapping[str, object]) -> None:
        self.value = dict(value)


def save_unified(path: Path, format: str, state: Mapping[str, torch.Tensor], env_metadata: Mapping[str, object] | None,
                 frames: int | None, metrics: Mapping[str, object] | None, config: Mapping[str, object] | None,
                 extra: Mapping[str, object] | None) -> Path:
    """Writes a ``torchrl.checkpoint.Checkpoint`` (``format`` "directory" or "archive") laid out as
    :class:`TorchRLCheckpoint` reads it: ``policy`` (the state dict), ``environment_metadata``,
    ``trainer_state`` (``frames``), ``metrics``, ``config`` and ``extra``."""
    import torch
    from torchrl.checkpoint import Checkpoint

    if format not in ("directory", "archive"):
        raise CheckpointError("unknown checkpoint format",
                              expected="None or 'pt' (a .pt file), 'directory' or 'archive'",
                              got=format, fix="pass format='directory' or format='archive', or leave it out")

    def holds_tensor(value: object) -> bool:
        if isinstance(value, Mapping):
            return any(holds_tensor(v) for v in value.values())
        return isinstance(value, torch.Tensor) or (isinstance(value, (list, tuple)) and any(map(holds_tensor, value)))

    # mappings holding tensors (nested too) need the state-dict adapter
    def component(value: Mapping[str, object]) -> _Held | dict[str, object]:
        return _Held(value) if holds_tensor(value) else dict(value)

    parts: dict[str, _Held | dict[str, object]] = {"policy": _Held(state)}
    for name, value in (("environment_metadata", env_metadata), ("metrics", metrics), ("config", config),
                        ("extra", extra)):
        if value is not None:
            parts[name] = component(value)
    if frames is not None:
        parts["trainer_state"] = {"frames": int(frames)}
    return Path(Checkpoint(format=format, **parts).save(path))
