"""Files on disk: saved rollouts (``save_rollouts``, ``load_rollouts``) and the one atomic-write helper.

Every artifact, sidecar and checkpoint is written through :func:`atomic_path` (or its parts,
:func:`temp_path` and :func:`commit`, for writers whose output stays open for a whole run): a hidden
temporary name beside the target, flushed to disk and renamed into place.

Rollouts are TensorDict memmaps.

Layout of a rollout folder (``<out stem>_rollouts/`` beside the artifact)::

    run_rollouts/
      index.json      {"torchrl_render_rollouts": 1, "metadata": ..., "mujoco_model_path": ..., "count": N,
                       "trajectories": [...]}
      traj0000/       TensorDict.memmap of trajectory 0 (meta.json + one .memmap file per tensor)
      traj0001/       ...

``metadata`` (the run's sidecar) and ``mujoco_model_path`` (the model file of a gymnasium MuJoCo env, or
``--mujoco-model-path``; ``null`` when unknown) are written by runs. Each entry of
``index.json["trajectories"]`` has ``index``, ``folder`` (``null`` for a
trajectory without steps), ``batch_size`` and ``keys`` (dotted). The folder is
written under a hidden temporary name and renamed into place, like every artifact.
``load_rollouts`` needs tensordict only; each trajectory comes back memory-mapped
(``td.clone()`` copies it into RAM).

Example:
    >>> import tempfile, pathlib, torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"action": torch.zeros(3, 1), "next": {"reward": torch.ones(3, 1)}}, batch_size=[3])
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "run_rollouts"
    >>> save_rollouts([td], folder).info["count"]
    1
    >>> back = load_rollouts(folder)
    >>> bool((back[0] == td).all()), back[0].batch_size
    (True, torch.Size([3]))
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from .contracts import Json, JsonDumpOptions
from .data import Artifact
from .errors import OutputExistsError, RenderError, UnsafeRolloutsError, WriterError, short_name

if TYPE_CHECKING:
    from tensordict import TensorDictBase

__all__ = ["atomic_path", "check_os_name", "check_replaceable", "commit", "load_rollouts", "remove", "save_rollouts",
           "temp_path", "write_json_atomic"]

INDEX = "index.json"
VERSION = 1


class _IndexEntry(TypedDict):
    """One trajectory in ``index.json``: its episode index, its memmap folder (None: no steps), its batch size
    and its keys (dotted)."""

    index: int
    folder: str | None
    batch_size: list[int]
    keys: list[str]


def temp_path(path: Path) -> Path:
    """A hidden name beside ``path`` (same folder, same suffix) for atomic writes."""
    return path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")


#: bytes a derived name adds to a planned one: the hidden temporary ``.{name}.tmp-{pid}`` (and the ``.old-``
#: side name of a replaced folder), with a pid of up to 7 digits (Linux's pid_max)
DERIVED_NAME_BYTES = len(".") + len(".tmp-") + 7


def check_os_name(path: Path, flag: str = "--out", made_from: Path | None = None) -> None:
    """Refuses, before any step, a path the OS would refuse to create: a NUL byte, a component longer than the
    file system takes (255 bytes on most), counting the temporary name written beside it, or a path over
    PATH_MAX. ``made_from``: the user's path this one is derived from (``<out>.metadata.json`` from ``--out``),
    so that the message gives the limit for the name the user chose. Raises :class:`WriterError`."""
    text = str(path)
    if "\0" in text:
        raise WriterError(f"the path {text!r} holds a NUL byte, which no file name can hold", got=repr(text),
                          fix=f"remove the NUL (\\x00) from {flag}")
    parent = Path("/")
    for folder in path.absolute().parents:  # the nearest folder that exists answers for the file system
        try:
            if folder.is_dir():
                parent = folder
                break
        except OSError:  # a component too long to look up: checked below
            continue
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX")
        path_max = os.pathconf(parent, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or the file system does not say
        name_max, path_max = 255, 4096
    for i, part in enumerate(path.parts):
        own = len(os.fsencode(part))
        size = own + (DERIVED_NAME_BYTES if i == len(path.parts) - 1 else 0)
        if size > name_max:
            short = short_name(part)
            with_temp = f" ({size} with the temporary name written beside it)" if size != own else ""
            limit = name_max - (size - own)
            # the user's path this last component is derived from, when its name differs from theirs
            last = i == len(path.parts) - 1
            derived = made_from if made_from is not None and last and made_from.name != part else None
            if derived is not None:
                limit -= own - len(os.fsencode(derived.name))
                what = f"the name {short!r} that {flag} makes ({str(path)[len(str(made_from)):]!r} added)"
            else:
                what = f"the name {short!r} in {flag}"
            raise WriterError(f"{what} is {own} bytes long{with_temp}, and this file system takes names of at most "
                              f"{name_max} bytes",
                              expected=f"a name of at most {limit} bytes" + ("" if derived is None else f" for {flag}"),
                              got=f"{len(os.fsencode(derived.name)) if derived is not None else own} bytes",
                              fix=f"choose a shorter name for {flag}")
    if len(os.fsencode(str(path.absolute()))) + DERIVED_NAME_BYTES >= path_max:
        raise WriterError(f"the path in {flag} is longer than this system's PATH_MAX ({path_max} bytes)",
                          got=f"{len(os.fsencode(str(path.absolute())))} bytes", fix=f"choose a shorter {flag}")


def check_replaceable(path: Path, overwrite: bool) -> None:
    """Refuses to replace what is not a regular file, a folder or a symlink to one: a FIFO,
    a device node (``/dev/full``), a socket, ``/proc/self/fd/1``. A dangling symlink counts as existing."""
    if not (path.exists() or path.is_symlink()):
        return
    if not overwrite:
        raise OutputExistsError(f"{str(path)!r} already exists" + (" (a symlink to nothing)" if not path.exists()
                                                                    else ""),
                                got=str(path), fix="pass --overwrite (overwrite=True) or choose another --out")
    if not path.exists():
        return  # a dangling symlink: the link is replaced by the new file
    mode = path.stat().st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return  # a folder is replaced whole where one is written; where a file goes the caller says so
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    target = f" ({str(path.resolve())!r})" if path.is_symlink() or path.resolve() != path.absolute() else ""
    raise WriterError(f"{str(path)!r}{target} is {kind}, and --overwrite only replaces regular files",
                      expected="a regular file, a symlink to one, or a new name", got=kind,
                      fix="choose another --out: a file name in a folder (a run writes its artifact beside it "
                          "first, then renames it into place)")


def remove(path: Path) -> None:
    """Removes a file or a folder if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def commit(tmp: Path, path: Path) -> None:
    """Moves ``tmp`` into place: one atomic rename for files; folders swap via a side name.

    A file's bytes are flushed to disk (fsync) before the rename, every time: after a crash or a power
    loss, ``path`` holds the old content or the new, never a file that is empty or cut short.
    """
    if not tmp.is_dir():
        _sync(tmp)
    if not tmp.is_dir() or not path.exists():
        os.replace(tmp, path)
        return
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    os.replace(path, old)
    os.replace(tmp, path)
    remove(old)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDWR if os.name == "nt" else os.O_RDONLY)  # Windows flushes write handles only
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """The one way files are written atomically: yields a hidden name beside ``path`` to write (a file
    or a folder); on success it replaces ``path`` (:func:`commit`), on an error it is removed and
    ``path`` is left as it was.

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.json"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_text("{}")
        >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
        ('{}', ['a.json'])
    """
    path = Path(path)
    tmp = temp_path(path)
    remove(tmp)
    try:
        yield tmp
        commit(tmp, path)
    finally:
        remove(tmp)


def write_json_atomic(path: str | Path, data: object, **dump: Unpack[JsonDumpOptions]) -> None:
    """``json.dump(data, **dump)`` to ``path`` through :func:`atomic_path` (``indent=2`` unless given)."""
    dump.setdefault("indent", 2)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, **dump), encoding="utf-8")


def save_rollouts(trajectories: Sequence[TensorDictBase | None], path: str | Path, overwrite: bool = False,
                  indices: Sequence[int] | None = None, info: Mapping[str, object] | None = None) -> Artifact:
    """Writes each trajectory TensorDict as a memmap subfolder of ``path``, plus ``index.json``.

    Args:
        trajectories: One TensorDict (or ``None``, for an episode without steps) per trajectory.
        path: The folder to create.
        overwrite: Replace an existing folder (only once the new one is complete).
        indices: The episode index of each trajectory (default ``0, 1, ...``), for a run that keeps
            some episodes only (``--render-select``): folders and the index are named by them.
        info: More JSON-ready keys for ``index.json`` (a run records ``metadata``, its sidecar's path, and
            ``mujoco_model_path``, where ``replay`` finds the model).

    Returns:
        An :class:`Artifact` of format ``"tensordict"`` (info: ``count``, ``steps``, ``bytes``).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputExistsError(f"{str(path)!r} already exists", got=str(path),
                                fix="pass --overwrite (overwrite=True) or choose another --out")
    tmp = temp_path(path)
    remove(tmp)
    try:
        tmp.mkdir()
        numbers = range(len(trajectories)) if indices is None else indices
        entries = [_save_one(td, i, tmp) for i, td in zip(numbers, trajectories, strict=True)]
        index = {"torchrl_render_rollouts": VERSION, **(info or {}), "count": len(entries), "trajectories": entries}
        (tmp / INDEX).write_text(json.dumps(index, indent=1), encoding="utf-8")
        size = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        commit(tmp, path)
    except OSError as exc:
        raise WriterError(f"cannot write the rollouts to {str(path)!r}", got=str(exc),
                          fix="check that the folder is writable and has free space") from exc
    finally:
        remove(tmp)
    steps = sum(e["batch_size"][0] for e in entries if e["folder"] and e["batch_size"])
    return Artifact(path, "tensordict", 0, {"count": len(entries), "steps": steps, "bytes": size})


def _save_one(td: TensorDictBase | None, index: int, folder: Path) -> _IndexEntry:
    if td is None:
        return {"index": index, "folder": None, "batch_size": [0], "keys": []}
    name = f"traj{index:04d}"
    td.memmap(folder / name, num_threads=0)
    keys = sorted(".".join(k) if isinstance(k, tuple) else k for k in td.keys(True, True))
    return {"index": index, "folder": name, "batch_size": list(td.batch_size), "keys": keys}


def load_rollouts(path: str | Path, *, trust: bool = False) -> list[TensorDictBase | None]:
    """Reads a folder written by :func:`save_rollouts` (or ``--save-rollout``) back as TensorDicts.

    A rollouts folder is data from someone else as often as a checkpoint is, so nothing in it runs: a
    non-tensor entry that tensordict stored pickled is refused unless ``trust=True`` (``--trust-rollouts``),
    and every trajectory folder ``index.json`` names must lie inside ``path`` (no ``..``, no absolute path,
    no symlink out of it), as must every file in it.

    Args:
        path: The rollout folder (the one holding ``index.json``).

    Keyword Args:
        trust: Allow pickled non-tensor entries (unpickling runs code stored in the folder).

    Returns:
        One memory-mapped :class:`tensordict.TensorDict` per trajectory, in trajectory
        order (``None`` where a trajectory had no steps).
    """
    from tensordict import TensorDict

    path = Path(path)
    index_file = path / INDEX
    if not index_file.is_file():
        raise RenderError(f"{str(path)!r} is not a rollout folder", expected=f"a folder holding {INDEX}",
                          got=str(path) if path.exists() else f"{path} (does not exist)",
                          fix="pass the <out>_rollouts folder written with --save-rollout")
    try:
        index: Json = json.loads(index_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RenderError(f"{str(index_file)!r} is not readable JSON", got=str(exc),
                          fix="pass a rollout folder written with --save-rollout, complete") from exc
    version = index.get("torchrl_render_rollouts") if isinstance(index, dict) else None
    if version != VERSION or not isinstance(index, dict):  # (not a dict: no version)
        raise RenderError(f"{str(index_file)!r} has an unknown layout version", expected=VERSION, got=version,
                          fix="read it with the torchrl_render version that wrote it")
    folders = [_trajectory_folder(path, entry, trust) for entry in _entries(index, index_file)]
    return [None if f is None else TensorDict.load_memmap(f, allow_pickle=trust) for f in folders]


#: the files tensordict writes for a non-tensor entry it could not store as JSON: pickles
_PICKLE_NAMES = ("other.pickle", "pickle.pkl")


def _entries(index: dict[str, Json], index_file: Path) -> list[dict[str, Json]]:
    entries = index.get("trajectories")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "folder" in e for e in entries):
        raise RenderError(f"{str(index_file)!r} has no valid list of trajectories",
                          expected='"trajectories": [{"index": 0, "folder": "traj0000", ...}, ...]',
                          got=repr(entries)[:200], fix="pass a rollout folder written with --save-rollout")
    return [e for e in entries if isinstance(e, dict)]  # all of them (checked above)


def _trajectory_folder(root: Path, entry: dict[str, Json], trust: bool) -> Path | None:
    """The folder of one index entry, checked: inside ``root``, and pickle-free unless trusted."""
    name = entry["folder"]
    if name is None:
        return None
    base = root.resolve()
    outside = RenderError(
        f"the rollouts' index names the trajectory folder {name!r}, which is not inside {str(root)!r}",
        expected="the name of a subfolder of the rollout folder (traj0000, ...)", got=repr(name)[:200],
        fix="pass a rollout folder written with --save-rollout; a crafted index.json can point anywhere, so "
            "trajectory folders outside it are never read")
    if not isinstance(name, str) or not name or Path(name).is_absolute() or len(Path(name).parts) != 1 \
            or name in (".", ".."):
        raise outside
    folder = root / name
    if not folder.resolve().is_relative_to(base) or folder.resolve() == base:
        raise outside
    for item in folder.rglob("*"):
        if not item.resolve().is_relative_to(base):
            raise RenderError(f"{str(item)!r} in the rollouts links to {str(item.resolve())!r}, outside the "
                              "rollout folder", got=str(item.resolve()),
                              fix="pass a rollout folder written with --save-rollout (it holds no symlinks)")
        if item.name in _PICKLE_NAMES and not trust:
            raise UnsafeRolloutsError(
                f"the rollouts hold a pickled non-tensor entry ({str(item.relative_to(root))!r}), and unpickling "
                "runs code stored in the file (a crafted rollouts folder can take over your machine)",
                got=str(item),
                fix="only if you trust where the folder came from, pass --trust-rollouts "
                    "(load_rollouts(path, trust=True))")
    return folder
