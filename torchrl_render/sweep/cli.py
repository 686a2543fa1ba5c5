"""``python -m torchrl_render sweep ...`` and ``... sweep-status FOLDER``.

The sweep's flags are generated from the SweepConfig fields and, for the cells' shared
config, from the RenderConfig fields (the same machinery as the main command,
:func:`torchrl_render.cli.add_config_fields`). A user error prints one paragraph and exits
with 2; Ctrl-C stops scheduling, keeps what finished and exits with 130 (``--resume`` goes
on); a sweep in which some cells failed exits with 3 after finishing the others.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from ..cli import PROG, Parser, add_config_fields, configure_logging, default_text, fields_from_args
from ..config import RenderConfig, load_mapping
from ..contracts import UserValue
from ..errors import ConfigError, RenderError
from .driver import DRIVER, DriverInfo, SweepFailedError, SweepTerminated, WatchInfo, sweep
from .grid import BASE_OWNED, SweepConfig
from .html import success_text
from .report import Progress, derive, level_text
from .separate import Separation
from .store import MANIFEST, read_records

__all__ = ["SweepStatus", "build_sweep_parser", "status_main", "sweep_main"]

EXIT_FAILED_CELLS = 3
_EXAMPLE = ("examples:\n  python -m torchrl_render sweep --ckpt 'runs/ckpt_*.pt' --env HalfCheetah-v5 --env Hopper-v5 "
            "\\\n      --policy m:make --num-trajs 20 --max-episodes-rendered 2 --out sweeps/run1\n"
            "  python -m torchrl_render sweep --config sweep.yaml --resume\n"
            "  python -m torchrl_render sweep-status sweeps/run1")


def build_sweep_parser() -> argparse.ArgumentParser:
    """The ``sweep`` parser: SweepConfig fields, then the RenderConfig fields every cell shares."""
    parser = Parser(prog=f"{PROG} sweep", description="Evaluate many checkpoints on many tasks, resumably.",
                     epilog=_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_argument_group("actions")
    actions.add_argument("--config", metavar="FILE", help="JSON/YAML/TOML file of sweep and RenderConfig fields; "
                         "flags override it.")
    actions.add_argument("--print-config", action="store_true", help="Print the resolved sweep config and exit.")
    actions.add_argument("--debug", action="store_true", help="Show tracebacks and debug logs.")
    actions.add_argument("--quiet", action="store_true", help="Print only errors and the eval_info.json path.")
    add_config_fields(parser.add_argument_group("sweep (SweepConfig fields)"), SweepConfig, skip=("base",))
    add_config_fields(parser.add_argument_group("every cell (RenderConfig fields)"), RenderConfig, skip=BASE_OWNED)
    return parser


class SweepStatus(Progress):
    """``sweep-status``: the report's progress, whether a driver runs (and watches), the rate and the failures."""

    running: bool
    driver_pid: int | None
    watching: bool
    watch: WatchInfo | None
    episodes_per_s: float | None
    time_left_s: float | None
    last_episode_s_ago: float | None
    failures: dict[str, str]


def sweep_config_from_args(args: argparse.Namespace) -> SweepConfig:
    # the user's sweep and RenderConfig fields (the file's, then the flags'), checked by SweepConfig
    data: dict[str, UserValue] = load_mapping(args.config) if args.config else {}
    data.update(fields_from_args(args, SweepConfig, skip=("base",)))
    data.update(fields_from_args(args, RenderConfig, skip=BASE_OWNED))
    return SweepConfig.from_dict(data)


def sweep_main(argv: list[str]) -> int:
    """``sweep``: runs the grid; returns the exit code."""
    args = build_sweep_parser().parse_args(argv)
    configure_logging(args.debug, args.quiet)
    prog = PROG
    echo = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    cfg: SweepConfig | None = None
    try:
        cfg = sweep_config_from_args(args)
        if args.print_config:
            print(json.dumps(cfg.to_dict(), indent=2))
            return 0
        result = sweep(cfg, command=[PROG, "sweep", *argv], echo=echo)
    except SweepFailedError as exc:  # the grid ran and every cell failed: the failed-cells exit code
        print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        if cfg is not None:  # always: sweep(cfg) raised it
            print(cfg.out_dir / "eval_info.json")
        return EXIT_FAILED_CELLS
    except RenderError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        where = f" in {cfg.out_dir / 'episodes.jsonl'}" if cfg is not None else ""
        how = "stopped by SIGTERM" if isinstance(exc, SweepTerminated) else "interrupted"
        print(f"{prog}: {how}; the finished episodes are kept{where}: run the same command with --resume "
              "to go on", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(exc, SweepTerminated) else 130
    overall = result.eval_info["overall"]
    echo(f"{result.cells_done}/{result.cells} cells done ({result.cells_failed} failed), {result.episodes} episodes "
         f"({result.episodes_run} run now)")
    for entry in result.eval_info["per_checkpoint"]:  # the learning curve: each checkpoint's own numbers
        for task, cell in entry["per_task"].items():
            if cell.get("n_episodes"):
                echo(f"  step {entry['step']} {Path(entry['checkpoint']).name} x {task}: {level_text(cell)}")
    echo(f"pooled over every checkpoint: mean return {_fmt_stat(overall['avg_sum_reward'])}, "
         f"{success_text(overall['pc_success'])}" + (f" ({overall['note']})" if overall.get("note") else ""))
    for separation in result.eval_info.get("separations", []):
        echo(separation_text(separation))
    for path in result.report_paths:
        echo(f"report: {path}")
    print(result.out / "eval_info.json")
    return EXIT_FAILED_CELLS if result.cells_failed else 0


def separation_text(entry: Separation) -> str:
    """One ``--separate`` result: which checkpoint is better on a task, after how many pairs, the anytime-valid
    p-value, and the fixed-N probability of improvement beside it."""
    a, b = Path(entry["checkpoint_a"]).name, Path(entry["checkpoint_b"]).name
    lo, hi = entry["interval"]
    verdict = (f"{Path(entry['better_checkpoint']).name} is better" if entry["better_checkpoint"] else
               "not separated" + (" within the cap (--num-trajs)" if entry["stopped_on"] == "cap" else " yet"))
    fixed = entry.get("fixed_n")
    ci = fixed["probability_of_improvement_ci95"] if fixed else None
    beside = (f"; fixed-N: P({b} > {a}) = {fixed['probability_of_improvement']:.2f}"
              + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")) if fixed else ""
    return (f"separate {a} vs {b} on {entry['task']}: {verdict}: mean {entry['metric']} difference A - B in "
            f"[{_fmt_stat(lo)}, {_fmt_stat(hi)}] after {entry['n_pairs']} pairs, anytime-valid p = "
            f"{entry['p_value']:.3g}{beside}")


def _fmt_stat(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def status_main(argv: list[str]) -> int:
    """``sweep-status FOLDER``: cells and episodes done, failures, rate, time left."""
    parser = Parser(prog=f"{PROG} sweep-status", description="Progress of a sweep (running or not).")
    parser.add_argument("folder", help="The sweep's --out folder.")
    parser.add_argument("--json", action="store_true", help="Print the status as JSON.")
    args = parser.parse_args(argv)
    try:
        status = sweep_status(Path(args.folder))
    except RenderError as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps(status, indent=2) if args.json else status_text(status))
    return 0


def sweep_status(folder: Path) -> SweepStatus:
    """The progress of the sweep in ``folder``, from its files alone."""
    if not (folder / MANIFEST).is_file():
        raise ConfigError(f"{str(folder)!r} is not a sweep folder (no {MANIFEST})", got=str(folder),
                          fix="pass the --out folder of a sweep")
    info = derive(folder)
    progress = info["progress"]
    driver = _driver(folder)
    times = [r["time"] for r in read_records(folder) if r["kind"] == "episode" and "time" in r]
    rate = None
    if driver is not None:
        recent = [t for t in times if t >= driver["started"]]
        elapsed = time.time() - driver["started"]
        rate = len(recent) / elapsed if recent and elapsed > 0 else None
    left = progress["episodes_total"] - progress["episodes"]
    return {**progress, "running": driver is not None, "driver_pid": driver["pid"] if driver else None,
            "watching": bool(driver and driver.get("watch")), "watch": driver.get("watch") if driver else None,
            "episodes_per_s": rate, "time_left_s": left / rate if rate else None,
            "last_episode_s_ago": time.time() - max(times) if times else None, "failures": info["failures"]}


def _driver(folder: Path) -> DriverInfo | None:
    """The running driver, if ``driver.json`` names a live process on this host (or another host)."""
    path = folder / DRIVER
    if not path.is_file():
        return None
    data: DriverInfo = json.loads(path.read_text(encoding="utf-8"))  # as the driver wrote it
    if data.get("host") == socket.gethostname():
        try:
            os.kill(int(data["pid"]), 0)
        except (ProcessLookupError, PermissionError, ValueError):
            return None  # it died without cleaning up (SIGKILL): --resume goes on
    return data


def status_text(s: SweepStatus) -> str:
    state = f"running (driver pid {s['driver_pid']})" if s["running"] else "not running"
    lines = [f"{state}: {s['done']}/{s['cells']} cells done, {s['failed']} failed, {s['pending']} pending; "
             f"{s['episodes']}/{s['episodes_total']} episodes"]
    watch = s.get("watch")
    if s.get("watching") and watch:
        lines.append(_watch_line(watch))
    if s["episodes_per_s"]:
        lines.append(f"rate {s['episodes_per_s']:.2f} episodes/s, about {s['time_left_s']:.0f} s left")
    if s["last_episode_s_ago"] is not None:
        lines.append(f"last episode recorded {s['last_episode_s_ago']:.0f} s ago")
    lines += [f"failed: {cell}: {error}" for cell, error in s["failures"].items()]
    return "\n".join(lines)


def _watch_line(watch: WatchInfo) -> str:
    """``watching 'runs/*.pt': last saw step_3000.pt (step 3000) 4 s ago``."""
    globs = ", ".join(repr(g) for globs in watch["patterns"].values() for g in globs)
    last_seen, last_seen_time = watch.get("last_seen"), watch.get("last_seen_time")
    if last_seen is None or last_seen_time is None:  # the driver sets both at once
        seen = "no new checkpoint yet"
    else:
        seen = (f"last saw {Path(last_seen).name} (step {watch['last_step']}) "
                f"{time.time() - last_seen_time:.0f} s ago")
    until = f"; ends {watch['timeout_s']:g} s after the last new one" if watch.get("timeout_s") else ""
    return f"watching {globs}: {seen}{until}"


def flags_markdown() -> str:
    """The table of the sweep's own flags, for docs/sweeps.md (a test keeps the doc equal to this)."""

    fields = {f.name: f for f in __import__("dataclasses").fields(SweepConfig)}
    group = next(g for g in build_sweep_parser()._action_groups if (g.title or "").startswith("sweep"))
    lines = ["| flag | default | choices | meaning |", "|---|---|---|---|"]
    for action in group._group_actions:
        if action.help == argparse.SUPPRESS:
            continue
        flags = ", ".join(f"`{o}`" for o in action.option_strings)
        if isinstance(action, argparse._StoreTrueAction):
            negative = next((o.option_strings[0] for o in group._group_actions
                             if o.dest == action.dest and isinstance(o, argparse._StoreFalseAction)), None)
            flags += f" / `{negative}`" if negative else ""
        choices = ", ".join(map(str, action.choices)) if action.choices else ""
        lines.append(f"| {flags} | {default_text(fields[action.dest])} | {choices} | {action.help or ''} |")
    return "\n".join(lines)
