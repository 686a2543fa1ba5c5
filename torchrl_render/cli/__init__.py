"""The command line, generated from the RenderConfig fields and the registries.

Modules: this one (``main``, the parser, the subcommand table, the markdown reference of docs/cli.md),
:mod:`.replay` (``python -m torchrl_render replay``) and :mod:`.rebuild` (saved rollouts -> any format).

Every config field is a flag (``num_trajs`` -> ``--num-trajs``; booleans get a
``--no-...`` twin or their named opposite, e.g. ``--stochastic``); choices come
from the field metadata and the registries, never from a hand-copied list.
A user error prints one paragraph and exits with code 2 (``main`` raises ``SystemExit(2)``, as argparse
and torchrl.render's ``main`` do; it returns 0 on success); ``--debug`` adds the traceback. Ctrl-C exits
with 130. On success the artifact path is printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import TextIO

from .._version import __version__
from ..api import render_policy
from ..backends import BACKENDS
from ..config import RenderConfig, load_mapping
from ..contracts import EpisodeMetrics
from ..data import RenderResult
from ..errors import RenderError
from ..metrics import Aggregated
from ..metrics.precision import SequentialEntry
from ..registry import Registry
from ..writers import WRITERS
from .parser import PROG, Parser

__all__ = ["add_config_fields", "build_parser", "config_from_args", "fields_from_args", "main"]

#: Subcommands, as lazy "module:function" strings; each function takes the remaining argv and returns
#: the exit code. A first argument that is not one of these is the plain render/evaluate command.
SUBCOMMANDS: dict[str, str] = {
    "sweep": "torchrl_render.sweep.cli:sweep_main",
    "sweep-status": "torchrl_render.sweep.cli:status_main",
    "replay": "torchrl_render.cli.replay:main",  # saved rollouts -> html/mp4/gif/frames
    "compare": "torchrl_render.cli.compare:main",  # two eval_info.json: P(B > A), the IQM difference
    "dataset": "torchrl_render.cli.dataset:main",  # a Minari dataset: its numbers, or replayed episodes filmed
}
#: What each subcommand does, for ``--help`` and docs/cli.md (one line each; a test keeps the keys equal).
SUBCOMMAND_HELP: dict[str, str] = {
    "sweep": "evaluate many checkpoints on many tasks, resumably, locally or on Ray (docs/sweeps.md)",
    "sweep-status": "the progress of a sweep, read from its --out folder (running or not)",
    "replay": "saved rollouts (--save-rollout) -> html, mp4, gif or frames, from the MuJoCo model alone",
    "compare": "two eval_info.json: the probability that B beats A, the IQM difference, with intervals",
    "dataset": "a Minari dataset -> eval_info.json or jsonl (its numbers), or replayed episodes as mp4, gif, html",
}
#: The exit code when stdout is a pipe its reader closed (128 + SIGPIPE, as a shell reports ``cat`` killed by it).
PIPE_CLOSED = 141
#: Above this many episodes the CLI prints a summary instead of a line per episode (--verbose: all lines).
TABLE_MAX = 30
_EXAMPLE = ("example:\n  python -m torchrl_render --ckpt policy.pt --policy mypkg.policy:make "
            "--env mypkg.env:make --out run.mp4\n\nsubcommands (python -m torchrl_render SUBCOMMAND --help):\n"
            + "\n".join(f"  {name:<13} {text}" for name, text in SUBCOMMAND_HELP.items()))


def _registry_choices(name: str) -> list[str]:
    if name == "formats":
        return WRITERS.names()
    return BACKENDS.names()


def _arg_type(type_text: object) -> type:
    """The argparse type of a field's annotation (``Field.type``: its text here, under postponed annotations)."""
    head = str(type_text).split("|")[0].strip()
    return {"int": int, "float": float}.get(head, str)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser (every RenderConfig field plus the CLI-only actions)."""
    parser = Parser(prog=PROG, description="Render and evaluate a trained policy.",
                                     epilog=_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli = parser.add_argument_group("actions")
    cli.add_argument("--version", action="version", version=f"{PROG} {__version__}",
                     help="Print the version and exit (also after a subcommand: sweep --version).")
    cli.add_argument("--config", metavar="FILE", help="JSON/YAML/TOML file of config fields; flags override it.")
    cli.add_argument("--print-config", action="store_true", help="Print the resolved config as JSON and exit.")
    cli.add_argument("--list-formats", action="store_true", help="List the artifact formats and exit.")
    cli.add_argument("--list-backends", action="store_true", help="List the render backends and exit.")
    cli.add_argument("--debug", action="store_true", help="Show tracebacks and debug logs.")
    cli.add_argument("--quiet", action="store_true", help="Print only errors and the artifact path.")
    cli.add_argument("--verbose", action="store_true", help=f"Print a line per episode however many there are "
                     f"(above {TABLE_MAX} episodes the summary shows a few and the spread).")
    add_config_fields(parser.add_argument_group("config (RenderConfig fields)"), RenderConfig)
    return parser


def _help(meta: Mapping[str, object]) -> str | None:
    """A field's help for argparse, which formats help strings with ``%``: a literal ``95%`` is ``95%%``."""
    text = meta.get("help")
    if not isinstance(text, str):
        return None
    return text.replace("%", "%%") if text else text


def add_config_fields(group: argparse._ArgumentGroup, cls: type, skip: tuple[str, ...] = ()) -> None:
    """One flag per field of the dataclass ``cls`` (help, choices, negatives from the field metadata).

    A field whose metadata says ``multiple=True`` takes several values and may be repeated
    (``--ckpt a.pt b.pt --ckpt c.pt``). Used for RenderConfig here and for SweepConfig by ``sweep``.
    """
    for f in dataclasses.fields(cls):
        if f.name not in skip:
            _add_field(group, f)


def fields_from_args(args: argparse.Namespace, cls: type, skip: tuple[str, ...] = ()) -> dict[str, object]:
    """The fields of ``cls`` that were given as flags (those left at ``None`` were not), as argparse parsed
    them (the config checks them)."""
    names = [f.name for f in dataclasses.fields(cls) if f.name not in skip]
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def _add_field(group: argparse._ArgumentGroup, f: dataclasses.Field) -> None:
    meta = f.metadata
    flag = "--" + meta.get("flag", f.name).replace("_", "-")
    if str(f.type) in ("bool", "bool | None"):
        negative = "--" + meta.get("negative", "no-" + meta.get("flag", f.name)).replace("_", "-")
        group.add_argument(flag, dest=f.name, action="store_true", default=None, help=_help(meta))
        group.add_argument(negative, dest=f.name, action="store_false", default=None, help=argparse.SUPPRESS)
        return
    if meta.get("multiple"):
        group.add_argument(flag, dest=f.name, action="extend", nargs="+", default=None, metavar=meta.get("metavar"),
                           help=_help(meta))
        return
    if "nargs" in meta:  # a fixed number of values (--return-bounds LO HI)
        group.add_argument(flag, dest=f.name, type=float, nargs=meta["nargs"], default=None,
                           metavar=meta.get("metavar"), help=_help(meta))
        return
    if "optional_value" in meta:  # a flag whose value may be left out (--live alone means --live 8765)
        group.add_argument(flag, dest=f.name, type=_arg_type(f.type), default=None, nargs="?",
                           const=meta["optional_value"], metavar=meta.get("metavar", f.name.upper()),
                           choices=meta.get("choices"), help=_help(meta))  # choices: --viewer's kinds
        return
    choices = meta.get("choices")
    if isinstance(choices, str):
        choices = _registry_choices(choices)
    group.add_argument(flag, dest=f.name, type=_arg_type(f.type), default=None, choices=choices,
                       metavar=None if choices else meta.get("metavar", f.name.upper()), help=_help(meta))


def markdown_reference() -> str:
    """docs/cli.md, generated from the parser (a test keeps the file equal to this)."""
    lines = ["# CLI reference", "",
             "Generated from `torchrl_render.cli.build_parser()`: every `RenderConfig` field is a flag.",
             "Regenerate with `python -c 'import torchrl_render.cli as c; print(c.markdown_reference(), end=\"\")' "
             "> docs/cli.md`.", "",
             "```", "python -m torchrl_render [flags]      # or: torchrl-render [flags]", "```", "",
             "Exit codes: 0 success, 2 user error (one paragraph on stderr, `--debug` adds the traceback), "
             "130 interrupted (Ctrl-C); nothing is left at `--out` unless the run succeeded.", ""]
    for group in build_parser()._action_groups:
        lines += _group_table(group, f"## {group.title}", {f.name: f for f in dataclasses.fields(RenderConfig)})
    return "\n".join(lines + _subcommands_reference())


def _group_table(group: argparse._ArgumentGroup, title: str, fields: dict[str, dataclasses.Field]) -> list[str]:
    """A markdown table of one argument group (nothing when all its flags are hidden)."""
    actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS]
    if not actions:
        return []
    lines = [title, "", "| flag | default | choices | meaning |", "|---|---|---|---|"]
    for a in actions:
        flags = ", ".join(f"`{o}`" for o in a.option_strings) or f"`{a.dest.upper()}`"  # a positional argument
        negative = _negative_flag(a, group)
        if negative:
            flags += f" / `{negative}`"
        field_ = fields.get(a.dest)
        default = default_text(field_) if field_ is not None else ""
        if field_ is None and a.option_strings and a.default is not None and a.default is not False \
                and a.default not in ([], argparse.SUPPRESS):
            default = f"`{a.default}`"
        choices = ", ".join(map(str, a.choices)) if a.choices else ""
        meaning = (a.help or "").replace("%(default)s", str(a.default)).replace("%%", "%")
        lines.append(f"| {flags} | {default} | {choices} | {meaning} |")
    return lines + [""]


def _subcommands_reference() -> list[str]:
    """docs/cli.md's subcommand section: what each does, and the flags of those documented here."""
    from . import compare, replay

    lines = ["## Subcommands", "", "`python -m torchrl_render SUBCOMMAND ...`; each takes `--help` and `--version`.",
             "", "| subcommand | what it does |", "|---|---|"]
    lines += [f"| `{name}` | {text} |" for name, text in SUBCOMMAND_HELP.items()]
    lines += ["", "`sweep` and `sweep-status` take the flags listed in [sweeps.md](sweeps.md#the-grid).", ""]
    for name, parser in (("replay", replay.build_parser()), ("compare", compare.build_parser())):
        positionals = " ".join(a.dest.upper() for a in parser._actions if not a.option_strings)
        lines += [f"### {name}", "", f"{parser.description}", "", "```",
                  f"python -m torchrl_render {name} {positionals} [flags]", "```", ""]  # usage would follow $COLUMNS
        for group in parser._action_groups:
            lines += _group_table(group, f"#### {name}: {group.title}", {})
    return lines


def _negative_flag(action: argparse.Action, group: argparse._ArgumentGroup) -> str | None:
    if not isinstance(action, argparse._StoreTrueAction) or action.dest in ("print_config", "list_formats"):
        return None
    for other in group._group_actions:
        if other.dest == action.dest and isinstance(other, argparse._StoreFalseAction):
            return other.option_strings[0]
    return None


def default_text(f: dataclasses.Field) -> str:
    """A config field's default as the markdown reference shows it (empty when it has none)."""
    if f.default is not dataclasses.MISSING:
        return f"`{f.default}`" if f.default is not None else ""
    if f.default_factory is not dataclasses.MISSING:
        return f"`{f.default_factory()}`"
    return ""


def config_from_args(args: argparse.Namespace) -> RenderConfig:
    """Merges ``--config FILE`` (if any) with the flags given; flags win.

    As torchrl.render's CLI does, an ``ipynb`` report saves its rollouts (``save_rollout``) unless
    ``--save-rollout``/``--no-save-rollout`` says otherwise or the notebook rolls out by itself (``live``).
    A command returns no :class:`RenderResult` to anyone, so it builds the episodes' TensorDicts
    (``trajectories``) only when they are saved, unless ``--trajectories`` asks for them.
    """
    data: dict[str, object] = dict(load_mapping(args.config)) if args.config else {}
    data.update(fields_from_args(args, RenderConfig))
    cfg = RenderConfig.from_dict(data)
    if cfg.format == "ipynb" and data.get("save_rollout") is None:
        cfg = dataclasses.replace(cfg, save_rollout=cfg.notebook_rollout_mode != "live")
    if data.get("trajectories") is None and not (cfg.save_rollout or cfg.save_tensordicts):
        cfg = dataclasses.replace(cfg, trajectories=False)
    return cfg


def _print_registry(kind: str) -> None:
    reg = _registry(kind)
    for name in reg.names():
        entry = reg.entry(name)
        suffix = ",".join(entry.suffixes) or ("folder" if entry.directory else "-")
        print(f"{name:<8} {suffix:<8} {entry.description}")


def _registry(kind: str) -> Registry:
    if kind == "formats":
        return WRITERS
    return BACKENDS


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m torchrl_render`` and ``torchrl-render``; returns the exit code.

    Output into a pipe that closed early (``--print-config | head``) ends the command quietly, as ``cat``
    does: exit code 141 (a SIGPIPE's), no traceback.
    """
    try:
        code = _dispatch(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # a closed pipe shows here, not at exit where nothing can catch it
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere
        os.close(devnull)
        return PIPE_CLOSED


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        if argv[1:] == ["--version"]:  # every subcommand, from the one version string
            print(f"{PROG} {argv[0]} {__version__}")
            return 0
        import importlib

        module, _, func = SUBCOMMANDS[argv[0]].partition(":")
        code = getattr(importlib.import_module(module), func)(argv[1:])
        if code:
            raise SystemExit(code)
        return 0
    args = build_parser().parse_args(argv)
    configure_logging(args.debug, args.quiet)
    try:
        if args.list_formats or args.list_backends:
            _print_registry("formats" if args.list_formats else "backends")
            return 0
        cfg = config_from_args(args)
        if args.quiet and cfg.progress is None:
            cfg.progress = False
        if args.print_config or cfg.dry_run:  # torchrl.render prints the config for --dry-run too
            print(cfg.to_json())
            if args.print_config:
                return 0

        result = render_policy(cfg, command=[PROG, *argv])
    except RenderError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)  # one paragraph, always
        raise SystemExit(2) from None
    except KeyboardInterrupt as exc:
        kept = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))  # where the finished episodes are
        print(f"{PROG}: interrupted; nothing was written at the output path{kept}", file=sys.stderr)
        raise SystemExit(130) from None
    _report(result, cfg, args.quiet, args.verbose)
    return 0


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (never a stale stream)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def configure_logging(debug: bool, quiet: bool) -> None:
    """Our logger only (third-party INFO logs stay quiet); notes already reach the summary."""
    logger = logging.getLogger("torchrl_render")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    logger.propagate = False


def _report(result: RenderResult, cfg: RenderConfig, quiet: bool, verbose: bool = False) -> None:
    if cfg.validate_only:
        print("configuration is valid")
        return
    if cfg.dry_run or cfg.check_setup:
        what = "everything resolved" if cfg.check_setup else "nothing was imported or built"
        planned = result.metadata["planned_paths"]  # the paths the run would write
        print(f"{'check setup' if cfg.check_setup else 'dry run'}: {what}; would write "
              + (", ".join(map(str, planned)) if isinstance(planned, list) else str(planned)))
        return
    if not quiet:
        agg = result.metrics.get("aggregated")
        lines = _episode_lines(result.metrics.get("per_episode", []), verbose)
        lines += [_mean_line(agg)] if agg is not None and agg.get("n_episodes") else []
        seq = result.metrics.get("sequential")
        lines += [_sequential_line(seq)] if seq else []
        lines += [f"note: {note}" for note in result.warnings]
        if lines:
            print("\n".join(lines), file=sys.stderr)
    for artifact in result.artifacts:  # the files and folders written (a PNG folder once, not each frame)
        print(artifact.path)


def _episode_line(ep: EpisodeMetrics) -> str:
    return (f"episode {ep['episode_ix']:>3}  seed {ep['seed']}  return {ep['sum_reward']:10.2f}  "
            f"length {ep['length']:>5}  frames {ep['num_frames']}")


def _episode_lines(episodes: Sequence[EpisodeMetrics], verbose: bool) -> list[str]:
    """A line per episode, or for many episodes the first and last few and where they all are."""
    if verbose or len(episodes) <= TABLE_MAX:
        return [_episode_line(ep) for ep in episodes]
    head, tail = episodes[:3], episodes[-2:]
    return [*map(_episode_line, head), f"... {len(episodes) - 5} more episodes (--verbose prints a line for each; "
            "the metadata sidecar holds them all under metrics.per_episode)", *map(_episode_line, tail)]


def _sequential_line(seq: SequentialEntry) -> str:
    """``--precision``'s outcome (the metrics' ``sequential`` entry): the half-width reached against the target, on
    how many episodes, and why."""
    n = seq["n_episodes"]
    lo, hi = seq["interval"] or (float("nan"), float("nan"))  # None before an episode
    name = "mean return" if seq["metric"] == "return" else "success rate"
    why = "precision reached" if seq["stopped_on"] == "precision" else f"stopped on {seq['stopped_on']}"
    return (f"{name} {seq['mean']:.4g} in [{lo:.4g}, {hi:.4g}] (95% confidence sequence, half-width "
            f"{seq['halfwidth']:.3g}, target {seq['target']:g}) over episodes 0..{n - 1}: {why}; "
            f"method {seq['method']}")


def _mean_line(agg: Aggregated) -> str:
    """The mean return over the run (the metrics' ``aggregated`` entry), and its spread over many episodes."""
    n, spread = agg["n_episodes"], ""
    if agg["avg_sum_reward"] is None:  # every return was NaN or infinite
        return f"no finite return over {n} episode(s) in {agg['eval_s']:.1f}s"
    if n > TABLE_MAX:
        spread = (f"; min {agg['min_sum_reward']:.2f}, median {agg['median_sum_reward']:.2f}, "
                  f"max {agg['max_sum_reward']:.2f}")
        ci = agg.get("ci95_sum_reward")
        spread += f"; 95% CI of the mean [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        iqm = agg.get("iqm_sum_reward_ci95")
        if iqm:
            spread += f"; IQM {agg.get('iqm_sum_reward'):.2f} [{iqm[0]:.2f}, {iqm[1]:.2f}]"
        spread += f"; success {agg['pc_success']:.1f}%" if agg.get("pc_success") is not None else ""
    return (f"mean return {agg['avg_sum_reward']:.2f} +- {agg['std_sum_reward']:.2f} over {n} episode(s) in "
            f"{agg['eval_s']:.1f}s{spread}")
