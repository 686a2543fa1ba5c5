"""What the docs test puts on PATH as ``python`` and ``torchrl-render``: the command as written, run shorter.

The docs show real runs (1,000 steps of HalfCheetah at MuJoCo's default look, 11 minutes of training); the docs
test runs every one of them, so these shims cap what only makes a run long, and leave every other flag as the
reader typed it. Nothing happens unless ``TORCHRL_RENDER_DOCS_SHRINK`` is set (the docs test sets it; the docs
never show it), so a shim on PATH elsewhere is the plain interpreter.

``TORCHRL_RENDER_DOCS_SHRINK`` holds ``key=value`` pairs, comma-separated (``CAPS`` below has the keys):

- a run that renders frames (any ``--out`` but a data file): at most ``trajs`` episodes of ``steps`` steps,
  ``size`` x ``size`` pixels at ``--render-quality fast`` unless the command names a size or a look;
- a run that renders nothing (``.json``, ``.jsonl``, ``.npz``): at most ``eval_trajs`` episodes of
  ``eval_steps`` steps (the docs' evaluations of five 1,000-step episodes run as written);
- a sweep: at most ``trajs`` episodes of ``steps`` steps a cell, and a ``--watch-timeout`` (the idle wait
  that ends a watching sweep) of at most ``watch_s`` seconds;
- ``examples/*/train.py``: ``--iters iters``, with an evaluation and a checkpoint every iteration.
"""

from __future__ import annotations

import os
import sys

ENV_VAR = "TORCHRL_RENDER_DOCS_SHRINK"
CAPS = {"trajs": 2, "steps": 40, "size": 96, "eval_trajs": 5, "eval_steps": 1000, "iters": 2, "watch_s": 5}
DATA_SUFFIXES = (".json", ".jsonl", ".npz")
SUBCOMMANDS = ("sweep", "sweep-status", "compare", "replay", "dataset")


def caps(spec: str | None) -> dict[str, int] | None:
    """The caps that ``spec`` (the env var's value) sets over ``CAPS``; None when the var is unset."""
    if spec is None:
        return None
    out = dict(CAPS)
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key, _, value = item.partition("=")
        if key not in CAPS:
            raise SystemExit(f"{ENV_VAR}: unknown key {key!r}; the keys are {sorted(CAPS)}")
        out[key] = int(value)
    return out


def _value(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _cap(args: list[str], flag: str, most: int) -> list[str]:
    """``flag``'s value lowered to ``most`` (added when absent)."""
    given = _value(args, flag)
    if given is None:
        return [*args, flag, str(most)]
    if int(given) <= most:
        return args
    out = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == flag:
            out += [flag, str(most)]
            skip = i + 1 < len(args)
        elif arg.startswith(flag + "="):
            out.append(f"{flag}={most}")
        else:
            out.append(arg)
    return out


def _default(args: list[str], flag: str, value: str) -> list[str]:
    return args if _value(args, flag) is not None else [*args, flag, value]


def shrink_render(args: list[str], cap: dict[str, int]) -> list[str]:
    """The main command's flags (``python -m torchrl_render ...``), capped."""
    if args[:1] and args[0] in SUBCOMMANDS:
        if args[0] == "sweep":
            args = _cap(_cap(args, "--num-trajs", cap["trajs"]), "--max-steps", cap["steps"])
            return _cap(args, "--watch-timeout", cap["watch_s"]) if _value(args, "--watch-timeout") else args
        if args[0] in ("replay", "dataset"):  # films from saved states or a dataset's replay: small and fast
            return _default(_default(_default(args, "--width", str(cap["size"])), "--height", str(cap["size"])),
                            "--render-quality", "fast")
        return args
    if any(a in ("-h", "--help", "--version", "--print-config", "--list-formats", "--list-backends") for a in args):
        return args
    out = _value(args, "--out") or ""
    if out.endswith(DATA_SUFFIXES) and "--save-frames" not in args:
        return _cap(_cap(args, "--num-trajs", cap["eval_trajs"]), "--max-steps", cap["eval_steps"])
    if _value(args, "--eval-n-timesteps") is None:
        args = _cap(args, "--num-trajs", cap["trajs"])
    args = _cap(args, "--max-steps", cap["steps"])
    for flag, value in (("--width", cap["size"]), ("--height", cap["size"]), ("--render-quality", "fast")):
        args = _default(args, flag, str(value))
    return args


def shrink_train(args: list[str], cap: dict[str, int]) -> list[str]:
    """``examples/*/train.py``'s flags: a few iterations, each evaluated once and saved."""
    args = _cap(args, "--iters", cap["iters"])
    for flag, value in (("--eval-every", "1"), ("--eval-episodes", "1"), ("--episode-len", "100")):
        args = _default(args, flag, value)
    return args


def rewrite(argv: list[str], cap: dict[str, int] | None) -> list[str]:
    """The interpreter's arguments as the shim runs them (``argv`` without the program name)."""
    if cap is None:
        return argv
    if argv[:2] == ["-m", "torchrl_render"]:
        return ["-m", "torchrl_render", *shrink_render(argv[2:], cap)]
    if argv[:1] and argv[0].endswith("train.py"):
        return [argv[0], *shrink_train(argv[1:], cap)]
    return argv


def main(kind: str) -> None:
    """Run as ``python`` (``kind="python"``) or as ``torchrl-render``: exec the interpreter, capped."""
    argv = sys.argv[1:] if kind == "python" else ["-m", "torchrl_render", *sys.argv[1:]]
    argv = rewrite(argv, caps(os.environ.get(ENV_VAR)))
    os.execv(sys.executable, [sys.executable, *argv])
