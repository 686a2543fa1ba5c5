"""``"module:object"`` / ``"path/file.py:object"`` loading and the factory-call protocol.

The factory protocol (for env and policy factories alike):

* a factory with no parameters is called with none;
* a parameter named ``spec`` (or annotated with the spec class) receives the
  :class:`~torchrl_render.config.RenderEnvSpec` / ``RenderPolicySpec``;
* a parameter named like a key of ``env_kwargs`` / ``policy_kwargs`` receives
  that value, one named like a spec field (``device``, ``seed``, ``render_mode``,
  ``checkpoint``...) receives the field;
* ``**kwargs`` receives the user kwargs not consumed by name;
* a single remaining required positional parameter receives the spec
  (``def make_env(cfg)`` works, as in torchrl.render).

Example:
    >>> resolve("json:dumps", "policy").__name__
    'dumps'
    >>> resolve("json:dump", "policy").__name__
    'dump'
    >>> resolve("json:lods", "policy")
    Traceback (most recent call last):
    ...
    torchrl_render.errors.ResolveError: module 'json' has no attribute 'lods'. Did you mean 'loads'?
    Expected: a public name of 'json'. Got: lods.
    Fix: correct the name after the colon in the policy spec 'json:lods'.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from .contracts import UserFactory, UserValue
from .errors import RenderError, ResolveError, did_you_mean

if TYPE_CHECKING:  # a factory's spec (config's RenderEnvSpec / RenderPolicySpec: config sits beside this module,
    # which may not import it) is read as the dataclass it is: its fields, by name
    from _typeshed import DataclassInstance

_R = TypeVar("_R")

__all__ = ["SHORTHANDS", "call_factory", "import_file", "import_module", "is_path", "receives", "resolve"]


#: Names that stand for one of our factories (``--policy lerobot``): ``{kind: {name: "module:object"}}``.
SHORTHANDS: dict[str, dict[str, str]] = {"policy": {"lerobot": "torchrl_render.policies.lerobot:make_policy"}}


def resolve(spec: str | UserFactory[object] | None, kind: str) -> UserFactory[object]:
    """Returns the callable named by ``spec`` (``kind`` is "env" or "policy", for messages); ``None`` (no spec
    given) is refused like any spec without a colon."""
    if callable(spec) and not isinstance(spec, str):
        return spec
    if isinstance(spec, str) and spec in SHORTHANDS.get(kind, {}):
        spec = SHORTHANDS[kind][spec]
    if not isinstance(spec, str) or ":" not in spec:
        raise ResolveError(f"the {kind} spec {spec!r} has no colon",
                           expected="'module:object' or 'path/file.py:object'",
                           got=repr(spec), fix=f"write it as e.g. 'mypkg.{kind}:make_{kind}'")
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise ResolveError(f"the {kind} spec {spec!r} is incomplete", expected="'module:object'", got=spec,
                           fix="name both the module and the object, e.g. 'mypkg.policy:make'")
    module = import_file(target, kind) if is_path(target) else import_module(target, kind)
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = [n for n in dir(obj) if not n.startswith("_")]
            raise ResolveError(f"module {target!r} has no attribute {part!r}.{did_you_mean(part, public)}",
                               expected=f"a public name of {target!r}", got=part,
                               fix=f"correct the name after the colon in the {kind} spec {spec!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ResolveError(f"{spec!r} is not callable", expected=f"a factory function or class that returns the {kind}",
                           got=f"{type(obj).__name__} object", fix=f"point the {kind} spec at a function")
    return obj


def is_path(target: str) -> bool:
    """Whether a spec's module part names a file (``x.py`` or a path) rather than a dotted module."""
    return target.endswith(".py") or "/" in target or "\\" in target


def import_module(name: str, kind: str) -> ModuleType:
    """Imports a dotted module named in a ``kind`` spec; a failure is one :class:`ResolveError` paragraph."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name) and (exc.name == name or name.startswith(exc.name + ".")):
            raise ResolveError(f"cannot import module {name!r} named in the {kind} spec", got=name,
                               fix=("check the spelling, install the package, or run from the folder that contains "
                                    "it (or pass 'path/to/file.py:object')")) from exc
        raise ResolveError(f"importing {name!r} failed: module {exc.name!r} is not installed",
                           fix=f"pip install the package that provides {exc.name!r}") from exc
    except RenderError:
        raise
    except Exception as exc:
        raise ResolveError(f"importing {name!r} raised {type(exc).__name__}: {exc}",
                           fix=f"fix the error in {name!r}") from exc


def import_file(target: str, kind: str) -> ModuleType:
    """Imports a ``.py`` file named in a ``kind`` spec under a private module name (errors: as import_module)."""
    path = Path(target).expanduser().resolve()
    if not path.is_file():
        raise ResolveError(f"the {kind} file {target!r} does not exist", expected="an existing .py file", got=target,
                           fix="check the path (relative paths start from the current folder)")
    name = "_torchrl_render_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as exc:
        del sys.modules[name]
        raise ResolveError(f"running {target!r} raised {type(exc).__name__}: {exc}",
                           fix=f"fix the error in {target!r}") from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


#: Names of a lone parameter that clearly asks for the spec (any other lone name gets it too, with a warning
#: in the error message if the factory then fails: ``def make_env(env_name)`` did not mean the spec).
SPEC_LIKE = ("spec", "cfg", "config", "conf", "settings", "options", "opts", "args", "params")


def call_factory(factory: UserFactory[_R], spec: DataclassInstance, user_kwargs: Mapping[str, UserValue],
                 kind: str) -> _R:
    """Calls ``factory`` following the protocol above; its own errors are wrapped with its name."""
    args, kwargs, blind = _bind(factory, spec, dict(user_kwargs), kind)
    try:
        return factory(*args, **kwargs)
    except RenderError:
        raise
    except Exception as exc:
        if blind is not None:
            raise _blind_error(factory, spec, kind, blind, exc) from exc
        raise ResolveError(f"the {kind} factory {factory_name(factory)} raised {type(exc).__name__}: {exc}",
                           fix=f"fix the {kind} factory or the {kind}_kwargs passed to it") from exc


def receives(factory: UserFactory[object], spec: DataclassInstance, user_kwargs: Mapping[str, UserValue],
             field: str, kind: str) -> bool:
    """Whether calling ``factory`` hands it the spec field ``field`` (by name or inside the spec)."""
    try:
        args, kwargs, _ = _bind(factory, spec, dict(user_kwargs), kind)
    except ResolveError:
        return True  # the call itself will say what is wrong
    return field in kwargs or any(value is spec for value in [*args, *kwargs.values()])


def _blind_error(factory: UserFactory[object], spec: DataclassInstance, kind: str, name: str,
                 exc: Exception) -> ResolveError:
    """A lone parameter that no field names got the spec, and the factory failed: say so, as for two."""
    fields = ", ".join(sorted(f.name for f in dataclasses.fields(spec)))
    return ResolveError(
        f"the {kind} factory {factory_name(factory)} has one parameter {name!r}, which no spec field or "
        f"{kind}_kwargs key names, so it received the {type(spec).__name__} (a lone parameter gets the spec), and it "
        f"raised {type(exc).__name__}: {exc}",
        expected=f"a parameter named spec (or cfg/config) for the {type(spec).__name__}, or parameters named like its "
                 f"fields ({fields}) or {kind}_kwargs keys", got=f"parameters [{name!r}]",
        fix=f"pass it with --{kind}-kwargs '{{\"{name}\": ...}}', give it a default, or rename it to spec "
            f"and read the fields you need from it")


def _bind(factory: UserFactory[object], spec: DataclassInstance, user: dict[str, UserValue],
          kind: str) -> tuple[list[object], dict[str, object], str | None]:
    """``(args, kwargs, blind)``: ``blind`` names a lone parameter that got the spec without asking for it."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature
        return [spec], {}, None
    fields = {f.name for f in dataclasses.fields(spec)}
    args: list[object] = []
    kwargs: dict[str, object] = {}
    unmatched = []
    spec_given = False
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name == "spec" or p.annotation in (type(spec), type(spec).__name__):
            value, spec_given = spec, True
        elif p.name in user:
            value = user.pop(p.name)
        elif p.name in fields:
            value = getattr(spec, p.name)
        else:
            if p.default is p.empty:
                unmatched.append(p)
            continue
        (args.append(value) if p.kind == p.POSITIONAL_ONLY else kwargs.__setitem__(p.name, value))
    blind = None
    if len(unmatched) == 1 and unmatched[0].kind != unmatched[0].KEYWORD_ONLY and not spec_given:
        p, spec_given = unmatched.pop(), True
        (args.append(spec) if p.kind == p.POSITIONAL_ONLY else kwargs.__setitem__(p.name, spec))
        if not any(word in p.name.lower() for word in SPEC_LIKE):
            blind = p.name
    if unmatched:
        names = ", ".join(p.name for p in unmatched)
        raise ResolveError(f"the {kind} factory {factory_name(factory)} needs argument(s) {names} that nothing "
                           "provides",
                           expected=f"a 'spec' parameter, fields of the spec ({', '.join(sorted(fields))}) or "
                                    f"{kind}_kwargs keys", got=f"parameters {[p.name for p in params]}",
                           fix=f"give them defaults or pass them with "
                               f"--{kind}-kwargs '{{\"{unmatched[0].name}\": ...}}'")
    if user:
        if any(p.kind == p.VAR_KEYWORD for p in params):
            kwargs.update(user)
        elif not spec_given:
            accepted = [p.name for p in params]
            first = next(iter(user))
            raise ResolveError(f"the {kind} factory {factory_name(factory)} does not accept {kind}_kwargs "
                               f"key {first!r}.{did_you_mean(first, accepted)}", expected=f"one of {accepted}",
                               got=sorted(user), fix="rename or drop it, or add **kwargs to the factory")
    return args, kwargs, blind


def factory_name(factory: str | UserFactory[object] | None) -> str:
    """How every message names a factory: ``'module:qualname'``, a file's factory as ``'file.py:qualname'``.

    ``factory`` is the callable, or the spec string it came from (``"pkg.mod:make"``, ``"path/file.py:make"``).
    """
    if isinstance(factory, str):
        path, sep, obj = factory.rpartition(":")
        return repr(f"{Path(path).name}:{obj}" if sep and path.endswith(".py") else factory)
    module = getattr(factory, "__module__", "") or ""
    if module.startswith("_torchrl_render_user_") and factory is not None:  # a file's factory (None: no module)
        module = Path(inspect.getsourcefile(factory) or module).name
    qualname = getattr(factory, "__qualname__", None) or f"<{type(factory).__qualname__} instance>"
    return f"'{module}:{qualname}'"
