"""The grid of a sweep: :class:`SweepConfig`, validated once, and its cells (checkpoint x task).

A sweep is checkpoints (paths and globs, optionally grouped into named training runs) times
tasks (env specs, optionally named and grouped), with every :class:`~torchrl_render.RenderConfig`
field as the shared ``base`` of its cells. Cell (checkpoint, task) is one ``render_policy`` run:
its episode ``i`` is seeded ``seed + i`` as a single run would be.

Example:
    >>> cfg = SweepConfig(ckpt=["examples/*/policy.pt"], env=["pend=InvertedPendulum-v5"],
    ...                   base={"policy": "examples/inverted_pendulum/policy.py:make_policy", "num_trajs": 3})
    >>> cfg.tasks, cfg.groups
    ({'pend': 'InvertedPendulum-v5'}, {'all': ['pend']})
    >>> SweepConfig(ckpt=["a.pt"], env=["E"], base={"policy": "m:p"}, executor="slurm")
    Traceback (most recent call last):
    ...
    torchrl_render.errors.ConfigError: executor must be one of local, ray. Expected: local, ray. Got: slurm.
    Fix: pass --executor local (the default) or --executor ray.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from ..checkpoint import sha256_file
from ..checkpoint.step import checkpoint_step
from ..config import RenderConfig, _f, load_mapping, parse_return_bounds
from ..contracts import UserValue
from ..envs import import_namespace
from ..errors import ConfigError, did_you_mean
from ..metrics.robust import check_baselines
from ..writers import WRITERS

__all__ = ["BASE_OWNED", "Cell", "CellDict", "SweepConfig", "checkpoint_step", "expand_cells", "load_baselines"]

EXECUTORS = ("local", "ray")
SEPARATE_METRICS = ("return", "success")
#: RenderConfig fields a sweep sets itself for each cell (not part of the shared base).
BASE_OWNED = ("ckpt", "env", "out", "overwrite", "metadata", "frame_dir", "artifact_dir", "dry_run", "validate_only",
              "check_setup", "progress")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class SweepConfig:
    """A sweep: checkpoints x tasks, where and how to run it; ``base`` holds the RenderConfig fields.

    Args:
        ckpt: Checkpoint paths or globs (run ``"default"``), sorted by training step.
        env: Tasks: env specs as ``--env`` takes them, optionally named ``NAME=SPEC``.
        run: Named training runs (e.g. training seeds): ``{name: [paths or globs]}``; CLI ``NAME=GLOB``.
        group: Task groups: ``{group: [task names]}``; CLI ``GROUP=TASK,TASK``; default one group ``all``.
        out: The sweep's folder (manifest.json, episodes.jsonl, eval_info.json, report, cells/).
        executor: ``local`` (worker processes on this machine) or ``ray``.
        workers: Local worker processes (default: the CPUs this process may use, at most one per block).
        block_size: Episodes per work unit (default: a whole cell); smaller blocks spread a cell over workers.
        resume: Go on with the sweep in ``out``: run only the episodes not yet in episodes.jsonl.
        max_attempts: Runs of a block whose worker died before it counts as failed.
        report: Write report.html (rewritten as cells finish) and an executed report.ipynb at the end;
            ``eval_info.json`` is always written.
        ray_address: Ray cluster to join (``auto``, ``HOST:PORT``); default a local Ray instance.
        ray_num_cpus: CPUs each Ray task declares.
        ray_num_gpus: GPUs each Ray task declares.
        score_baselines: JSON/YAML/TOML file of per-task baselines, ``{task: {"random": R, "reference": S}}``:
            the across-task estimates are on normalised scores ``(return - R) / (S - R)``; read once, kept in
            the manifest (``baselines``).
        watch: Evaluate the checkpoints already there, then each new one the globs match as training writes
            it (:mod:`.watch`), appending to the same folder.
        watch_timeout: With ``watch``: end after waiting this many seconds, with no cell left to run, without
            a new checkpoint (or one still being written).
        watch_settle: With ``watch``: seconds a checkpoint's size and modification time must stay unchanged
            before it is loaded (:data:`WATCH_SETTLE_S` by default).
        separate: Two checkpoints ``[A, B]`` to tell apart on every task (:mod:`.separate`): sampled on the
            same seeds until the paired difference's confidence sequence excludes 0, or ``num_trajs``.
        separate_metric: What ``separate`` compares: ``return`` or ``success``.
        base: RenderConfig fields shared by every cell (``policy``, ``num_trajs``, ``format``...), as the user gave
            them: ``RenderConfig.from_dict`` checks them when each cell's config is built (every task's once here).

    Example:
        >>> cfg = SweepConfig.from_dict({"ckpt": ["runs/s0/*.pt"], "env": ["HalfCheetah-v5", "Hopper-v5"],
        ...                              "policy": "mypkg.policy:make", "num_trajs": 20})
        >>> cfg.base, list(cfg.tasks), cfg.run
        ({'policy': 'mypkg.policy:make', 'num_trajs': 20}, ['HalfCheetah-v5', 'Hopper-v5'],
         {'default': ['runs/s0/*.pt']})
    """

    ckpt: list[str] = _f([], help="Checkpoint paths or globs (repeatable); training step from the checkpoint's "
                         "step entry, else the number in its file name.", multiple=True, metavar="CKPT")
    env: list[str] = _f([], help="Tasks: env specs, optionally NAME=SPEC (repeatable).", multiple=True,
                        metavar="TASK")
    run: dict[str, list[str]] = _f({}, help="A named training run: NAME=GLOB (repeatable).", multiple=True,
                                   metavar="NAME=GLOB")
    group: dict[str, list[str]] = _f({}, help="A task group: GROUP=TASK,TASK (repeatable; default: one group "
                                     "'all').", multiple=True, metavar="GROUP=TASKS")
    out: str | Path = _f("sweep", help="The sweep's folder.")
    executor: str = _f("local", help="Where cells run.", choices=EXECUTORS)
    workers: int | None = _f(None, help="Local worker processes (default: one per CPU, at most one per block).")
    block_size: int | None = _f(None, help="Episodes per work unit (default: a whole cell).")
    resume: bool = _f(False, help="Go on with the sweep in --out: run only the episodes not yet recorded.")
    max_attempts: int = _f(3, help="Runs of a block whose worker died before the block counts as failed.")
    report: bool = _f(True, help="Write report.html and an executed report.ipynb at the end.", negative="no-report")
    ray_address: str | None = _f(None, help="Ray cluster to join (auto, HOST:PORT); default: a local instance.")
    ray_num_cpus: float = _f(1.0, help="CPUs each Ray task declares.")
    ray_num_gpus: float = _f(0.0, help="GPUs each Ray task declares.")
    score_baselines: str | None = _f(None, help="JSON/YAML file {task: {random: R, reference: S}}: normalise each "
                                     "task's returns to (return-R)/(S-R) for the estimates across tasks (default: "
                                     "raw returns, with a note).", metavar="FILE")
    watch: bool = _f(False, help="Evaluate the checkpoints there, then each new one the globs match as training "
                     "writes it (taken once complete), until --watch-timeout or Ctrl-C.")
    watch_timeout: float | None = _f(None, help="With --watch: end the sweep once it has waited this many seconds, "
                                     "every cell done, without a new checkpoint (default: watch until Ctrl-C).",
                                     metavar="S")
    watch_settle: float = _f(3.0, help="With --watch: seconds a checkpoint must stay unchanged (size and "
                             "modification time) before it is loaded; raise it for a slow writer or a network "
                             "filesystem.", metavar="S")
    separate: list[str] = _f([], help="Two of the sweep's checkpoints (paths or file names), A B: on each task run "
                             "both on the same seeds, in lockstep blocks of --block-size episodes (default 10), until "
                             "the confidence sequence (level 0.95) of their mean difference excludes 0 or "
                             "--num-trajs; the report says which is better, with an anytime-valid p-value "
                             "(docs/sequential.md).",
                             multiple=True, metavar="CKPT")
    separate_metric: str = _f("return", help="What --separate compares: the return, or the success (an env that "
                              "reports it).", choices=("return", "success"))
    base: dict[str, UserValue] = _f({}, help="RenderConfig fields shared by every cell (the CLI: their own flags).")

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.ckpt = _str_list("ckpt", self.ckpt)
        self.run = _named_lists("run", self.run, split=False)
        self.group = _named_lists("group", self.group, split=True)
        if self.ckpt:
            self.run = {"default": self.ckpt, **self.run} if "default" not in self.run else self.run
        self.tasks = _tasks(self.env)
        self.groups = _groups(self.group, self.tasks)
        _validate(self)
        self.baselines = load_baselines(self.score_baselines, self.tasks)
        self.base = _base(self.base)
        _check_precision(self)
        for spec in self.tasks.values():  # every cell's RenderConfig is valid before anything runs
            self.render_config(spec, None)
        _check_gymnasium_ids(self.tasks)

    @property
    def out_dir(self) -> Path:
        """``out`` as a Path (the field takes a str too; ``__post_init__`` made it one)."""
        return Path(self.out)

    @classmethod
    def from_dict(cls, data: Mapping[str, UserValue], **overrides: UserValue) -> SweepConfig:
        """Sweep keys go to the sweep, RenderConfig keys to ``base``; unknown keys get a did-you-mean. The values are
        the user's, checked by ``__post_init__``."""
        merged = {**data, **overrides}
        mine = {f.name for f in dataclasses.fields(cls)}
        theirs = {f.name for f in dataclasses.fields(RenderConfig)} - set(BASE_OWNED)
        base = dict(merged.pop("base", None) or {})
        for key in list(merged):
            if key in mine:
                continue
            if key not in theirs:
                raise ConfigError(f"unknown sweep config key {key!r}.{did_you_mean(key, sorted(mine | theirs))}",
                                  expected="a SweepConfig or RenderConfig field", got=key,
                                  fix="remove it or correct its name (python -m torchrl_render sweep --help)")
            base[key] = merged.pop(key)
        return cls(**merged, base=base)

    @classmethod
    def from_file(cls, path: str | Path, **overrides: UserValue) -> SweepConfig:
        """Loads a JSON, YAML or TOML file; ``overrides`` win over the file."""
        return cls.from_dict(load_mapping(path), **overrides)

    def to_dict(self) -> dict[str, object]:
        """JSON-serializable; ``SweepConfig.from_dict(cfg.to_dict())`` gives an equal grid."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["out"] = str(self.out)
        data["run"] = {k: list(v) for k, v in self.run.items() if not (k == "default" and v == self.ckpt)}
        return data

    def render_config(self, spec: str, ckpt: str | None, **fields: object) -> RenderConfig:
        """The RenderConfig of one cell (or of a block of its episodes, through ``fields``)."""

        data: dict[str, object] = {**self.base, "env": spec, "ckpt": ckpt, "progress": False, **fields}
        fmt = data.get("format") or "mp4"
        name = fmt if isinstance(fmt, str) else repr(fmt)  # the user's value: entry() refuses one that is no text
        if data.get("max_episodes_rendered") == 0 and WRITERS.entry(name).needs_frames:
            data["format"] = "json"  # nothing to film: the cell's metrics alone
        return RenderConfig.from_dict(data)


class CellDict(TypedDict):
    """A :class:`Cell` as a dict (:meth:`Cell.to_dict`): in the manifest, and in each work unit a worker runs."""

    id: str
    run: str
    ckpt: str
    sha256: str
    step: int | None
    task: str
    spec: str
    group: str
    num_trajs: int
    seed: int | None


@dataclass
class Cell:
    """One (checkpoint, task) pair of the grid: what a worker needs to run it, and its names."""

    id: str
    run: str
    ckpt: str
    sha256: str
    step: int | None
    task: str
    spec: str
    group: str
    num_trajs: int
    seed: int | None

    def to_dict(self) -> CellDict:
        return {"id": self.id, "run": self.run, "ckpt": self.ckpt, "sha256": self.sha256, "step": self.step,
                "task": self.task, "spec": self.spec, "group": self.group, "num_trajs": self.num_trajs,
                "seed": self.seed}


def expand_cells(cfg: SweepConfig) -> list[Cell]:
    """The grid: every checkpoint of every run times every task, checkpoints in training-step order."""

    cells = []
    for run, patterns in cfg.run.items():
        digests = {path: sha256_file(path) for path in expand_paths(run, patterns, allow_none=cfg.watch)}
        steps = {path: checkpoint_step(path, digest) for path, digest in digests.items()}
        for path in sorted(digests, key=lambda p: (steps[p] is None, steps[p] or 0, p)):
            cells += checkpoint_cells(cfg, run, path, digests[path], steps[path])
    return cells


def checkpoint_cells(cfg: SweepConfig, run: str, path: str, digest: str, step: int | None) -> list[Cell]:
    """The cells of one checkpoint of ``run``: one per task."""
    cells = []
    for task, spec in cfg.tasks.items():
        group = next((g for g, names in cfg.groups.items() if task in names), "all")
        cells.append(Cell(cell_id(run, path, digest, task), run, path, digest, step, task, _absolute_spec(spec),
                          group, int(cfg.base.get("num_trajs", 1)), cfg.base.get("seed", 0)))
    return cells


def expand_paths(run: str, patterns: list[str], allow_none: bool = False) -> list[str]:
    """The absolute paths of the files the patterns match; each must match one unless ``allow_none`` (watching)."""
    found: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern))) if glob.has_magic(pattern) else [pattern]
        matches = [m for m in matches if Path(m).is_file()]
        if not matches and not allow_none:
            raise ConfigError(f"checkpoint pattern {pattern!r} (run {run!r}) matches no file",
                              expected="an existing checkpoint path or a glob that matches one", got=pattern,
                              fix="check the path (quote a glob so that the shell leaves it to the sweep)")
        found += [str(Path(m).resolve()) for m in matches if str(Path(m).resolve()) not in found]
    return found


def cell_id(run: str, path: str, digest: str, task: str) -> str:
    """A short readable cell id: the run (unless ``default``), the checkpoint's stem, a short hash of what makes
    the cell unique (run, path, content, task), the task's short name.

    Example:
        >>> cell_id("default", "/w/runs/step_1000.pt", "ab" * 32, "/w/proj/envs.py:make_corridor_env")
        'step_1000-ee2444__make_corridor_env'
    """
    unique = hashlib.sha256(f"{run}\0{path}\0{digest}\0{task}".encode()).hexdigest()[:6]
    prefix = "" if run == "default" else f"{_SAFE.sub('_', run)[:24]}__"
    return f"{prefix}{_SAFE.sub('_', Path(path).stem)[:40]}-{unique}__{task_label(task)}"


def task_label(task: str) -> str:
    """A task's short name: ``path/envs.py:make_env`` -> ``make_env``, ``dm_control/cheetah-run`` -> ``cheetah-run``,
    a name as it is; file-name safe, 40 characters at most."""
    name = task.rpartition(":")[2] if ":" in task else task.rpartition("/")[2]
    return _SAFE.sub("_", name).strip("_")[:40] or "task"


def _str_list(name: str, value: object) -> list[str]:
    if isinstance(value, (str, Path)):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, Path)) for v in value):
        raise ConfigError(f"{name} must be a list of strings", expected="['a', 'b'] (or repeat the flag)",
                          got=repr(value), fix=f"pass e.g. --{name} VALUE --{name} VALUE")
    return [str(v) for v in value]


def _named_lists(name: str, value: object, split: bool) -> dict[str, list[str]]:
    """``{"a": ["x"]}`` as given, or CLI strings ``["a=x,y", "a=z"]`` merged into it."""
    if isinstance(value, Mapping):
        return {str(k): _str_list(f"{name}[{k!r}]", v) for k, v in value.items()}
    out: dict[str, list[str]] = {}
    for item in _str_list(name, value):
        key, sep, rest = item.partition("=")
        if not sep or not key.strip() or not rest.strip():
            raise ConfigError(f"{name} entry {item!r} is not NAME=VALUE", expected=f"e.g. --{name} seed0=runs/s0/*.pt",
                              got=item, fix=f"write --{name} as NAME=VALUE")
        values = [v.strip() for v in rest.split(",") if v.strip()] if split else [rest.strip()]
        out.setdefault(key.strip(), []).extend(values)
    return out


def _tasks(env: object) -> dict[str, str]:
    items: list[tuple[str, object]]
    if isinstance(env, Mapping):
        items = [(str(k), v) for k, v in env.items()]
    else:
        items = []
        for spec in _str_list("env", env):
            name, sep, rest = spec.partition("=")
            simple = sep and re.fullmatch(r"[A-Za-z0-9_.-]+", name) and rest
            items.append((name, rest) if simple else (spec, spec))
    tasks: dict[str, str] = {}
    for name, given in items:
        if not isinstance(given, str) or not given:
            raise ConfigError(f"task {name!r} has no env spec", expected="a gymnasium id or 'module:object'",
                              got=repr(given), fix="pass --env NAME=SPEC or --env SPEC")
        if name in tasks:
            raise ConfigError(f"task {name!r} is given twice", got=name, fix="give each task once (or a new NAME=)")
        tasks[name] = given
    return tasks


def _groups(group: dict[str, list[str]], tasks: dict[str, str]) -> dict[str, list[str]]:
    if not group:
        return {"all": list(tasks)}
    for name, members in group.items():
        for task in members:
            if task not in tasks:
                raise ConfigError(f"group {name!r} names the unknown task {task!r}.{did_you_mean(task, list(tasks))}",
                                  expected=f"one of the tasks: {', '.join(tasks)}", got=task,
                                  fix="name tasks with --env NAME=SPEC and list those names in --group")
    owner: dict[str, str] = {}
    for name, members in group.items():
        for task in members:
            if task in owner and owner[task] != name:  # a cell has one group: its means and IQMs would disagree
                raise ConfigError(f"task {task!r} is in two groups, {owner[task]!r} and {name!r}",
                                  expected="each task in one group at most", got=f"{owner[task]}={task} and "
                                  f"{name}={task}", fix="list each task in one --group (a group of all tasks is the "
                                  "sweep's overall level already)")
            if task in owner:
                raise ConfigError(f"group {name!r} lists task {task!r} twice", expected="each task once",
                                  got=",".join(members), fix=f"list {task!r} once in --group {name}=...")
            owner[task] = name
    return {**group, **({"ungrouped": rest} if (rest := [t for t in tasks if not any(t in m for m in
                                                                                      group.values())]) else {})}


def load_baselines(path: str | None, tasks: Mapping[str, str]) -> dict[str, dict[str, float]] | None:
    """The per-task baselines in the file ``path`` (None without a file), checked against the sweep's tasks
    (:func:`torchrl_render.metrics.robust.check_baselines`; a task may be named by its env spec too)."""
    if path is None:
        return None
    return check_baselines(load_mapping(path), tasks, str(path))


def _check_gymnasium_ids(tasks: Mapping[str, str]) -> None:
    """Every task given as a gymnasium id is registered (checked before anything runs, as the globs are).

    Factories (``module:object``) are resolved by each cell; dm_control ids by the cell too.
    """
    ids = {name: spec for name, spec in tasks.items() if ":" not in spec and not spec.startswith("dm_control/")}
    if not ids:
        return
    import gymnasium

    for name, spec in ids.items():
        import_namespace(spec)
        if spec not in gymnasium.registry:
            label = "" if name == spec else f" (task {name!r})"
            raise ConfigError(f"{spec!r}{label} is neither 'module:object' nor a registered gymnasium id."
                              f"{did_you_mean(spec, gymnasium.registry)}",
                              expected="'mypkg.env:make_env', 'path/env.py:make_env', a gymnasium id such as "
                                       "'HalfCheetah-v5', or 'dm_control/cheetah-run'", got=spec,
                              fix="correct the id (or add the colon and factory name); nothing has run")


def _validate(cfg: SweepConfig) -> None:
    if not any(cfg.run.values()):
        raise ConfigError("the sweep has no checkpoints", expected="--ckpt PATH_OR_GLOB (or --run NAME=GLOB)",
                          got="nothing", fix="pass e.g. --ckpt 'runs/ckpt_*.pt'")
    if not cfg.tasks:
        raise ConfigError("the sweep has no tasks", expected="--env SPEC (repeatable)", got="nothing",
                          fix="pass e.g. --env HalfCheetah-v5 --env Hopper-v5")
    if cfg.executor not in EXECUTORS:
        raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}", expected=", ".join(EXECUTORS),
                          got=cfg.executor, fix="pass --executor local (the default) or --executor ray")
    for name in ("workers", "block_size", "max_attempts"):
        value = getattr(cfg, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{name} must be a positive integer", expected="an integer >= 1", got=repr(value),
                              fix=f"pass e.g. --{name.replace('_', '-')} 2")
    for name in ("ray_num_cpus", "ray_num_gpus"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"{name} must be a number >= 0", expected="e.g. 1 or 0.5", got=repr(value),
                              fix=f"pass e.g. --{name.replace('_', '-')} 1")
        setattr(cfg, name, float(value))
    for name, least in (("watch_timeout", 0.0), ("watch_settle", 0.0)):
        value = getattr(cfg, name)
        if value is None and name == "watch_timeout":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= least:
            raise ConfigError(f"{name} must be a number of seconds >= 0", expected="e.g. 15", got=repr(value),
                              fix=f"pass e.g. --{name.replace('_', '-')} 15")
        setattr(cfg, name, float(value))


def _check_precision(cfg: SweepConfig) -> None:
    """``--precision`` decides on a cell's episodes in seed order, so a cell runs as one unit (no blocks);
    ``--separate`` takes two checkpoints, and a watched sweep's checkpoints are not known ahead."""
    cfg.separate = _str_list("separate", cfg.separate)
    if cfg.separate and len(cfg.separate) != 2:
        raise ConfigError("--separate takes two checkpoints, A and B", expected="--separate A.pt B.pt",
                          got=" ".join(cfg.separate) or "nothing", fix="pass exactly two of the sweep's checkpoints")
    if cfg.separate and cfg.watch:
        raise ConfigError("--separate compares two checkpoints known at the start, and --watch adds checkpoints as "
                          "training writes them", got="--separate with --watch",
                          fix="run --separate on a sweep without --watch (e.g. once training has written both)")
    if cfg.separate_metric not in SEPARATE_METRICS:
        raise ConfigError(f"separate_metric must be one of {', '.join(SEPARATE_METRICS)}.",
                          expected=", ".join(SEPARATE_METRICS), got=cfg.separate_metric,
                          fix="pass --separate-metric return or --separate-metric success")
    if cfg.base.get("return_bounds") is not None:  # a config file's "0 500": the cells, the rule and --separate
        cfg.base["return_bounds"] = parse_return_bounds(cfg.base["return_bounds"])  # read [LO, HI]
    cap = cfg.base.get("num_trajs")
    if cfg.base.get("precision") is None or cfg.block_size is None or (cap is not None and cfg.block_size >= cap):
        return
    raise ConfigError("--precision stops each cell on its episodes in seed order, so a cell runs as one unit, and "
                      f"--block-size {cfg.block_size} splits it", expected="no --block-size with --precision",
                      got=f"--block-size {cfg.block_size}, --num-trajs {cap}",
                      fix="drop --block-size (the cells still run in parallel, one per worker), or drop --precision")


def _base(base: object) -> dict[str, UserValue]:
    if not isinstance(base, Mapping):
        raise ConfigError("base must be a mapping of RenderConfig fields", got=type(base).__name__,
                          fix="pass base={'policy': 'mypkg.policy:make', ...}")
    owned = sorted(set(base) & set(BASE_OWNED))
    if owned:
        raise ConfigError(f"the sweep sets {', '.join(owned)} itself for each cell", expected="other RenderConfig "
                          "fields in base", got=", ".join(owned),
                          fix="give checkpoints with ckpt/run, tasks with env, the folder with out")
    data = dict(base)
    for key in ("policy",) if isinstance(data.get("policy"), str) else ():
        data[key] = _absolute_spec(data[key])
    return data


def _absolute_spec(spec: str) -> str:
    """``path/file.py:obj`` with an absolute path (workers may start elsewhere); other specs as given."""
    path, sep, obj = spec.rpartition(":")
    if sep and path.endswith(".py") and Path(path).is_file():
        return f"{Path(path).resolve()}:{obj}"
    return spec
