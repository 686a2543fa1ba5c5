#!/usr/bin/env python
"""torchrl_render against torchrl.render, in one process tree, on the same factories and checkpoint.

    python benchmarks/run.py --quick            # under 3 minutes: 2 x 20 steps, one round, small memory sweep
    python benchmarks/run.py --full             # 2 x 200 steps, three interleaved rounds, 500/2,000/5,000 frames
    python benchmarks/run.py --full --json OUT.json --update-docs

Run ``bash benchmarks/setup.sh`` first (Debian's ffmpeg and torchcodec==0.13.0, which torchrl.render's
mp4 writer needs); ``make bench`` / ``make bench-quick`` do both.

What runs, and how it is measured:

* A fork server (one child of this script) imports the heavy modules once (torch, tensordict, torchrl,
  torchrl.render, gymnasium, mujoco, av, torchcodec, torchrl_render); every configuration then runs in its
  own process forked from it, so each starts from the same memory and no run pays the imports
  (about 10 s per fresh interpreter on this machine). Env workers (``num_envs=2``) are spawned by torchrl
  as a user's would be, and their start-up is part of that run's wall time.
* ``wall_s``: the ``render_policy`` call alone (config to closed artifact), ``time.perf_counter``.
  ``cpu_s``: user + system CPU of that process, all its threads, and of its waited-for children (env
  workers). ``peak_rss_mb``: the ``ru_maxrss`` of the process that ran ``render_policy``;
  ``tree_rss_mb``: the peak of the summed RSS of that process and its descendants, polled every 0.1 s by
  this script (shared pages count once per process).
* Stages measured alone in the same run, on the same env, policy and renderer: env step, policy,
  MuJoCo render (default and fast), H.264 encode (``Mp4Writer``), each as wall and CPU seconds per frame
  (``time.process_time``: every thread of the process, so llvmpipe's and x264's threads are included).
  The bound is ``max(longest stage's wall, total CPU seconds / cores)`` per frame, times the frames.
* Comparisons are interleaved (each round alternates the two tools, every other round in reverse order;
  jsonl and two-env runs in round 1 only), every ratio is taken between runs of the same round and a
  target is judged on the median over the rounds; the load average is recorded for each run, and a
  busy-loop probe next to the stages tells how many cores were free.
* Memory sweep: peak RSS at 500, 2,000 and 5,000 rendered frames (480x480). To fit the full mode in
  15 minutes both tools render there with the fast look (no shadows, reflections or multisampling):
  torchrl_render with ``render_quality="fast"``, torchrl.render through ``make_env_fast_look`` below,
  a thin env-factory adapter that gives gymnasium's renderer the same settings. What is held in memory
  (frames of 480x480x3 bytes) does not depend on the look.

The rows, the targets and the verdicts go to stdout as tables and to a JSON file
(``benchmarks/results/bench-<mode>-<time>.json`` unless ``--json`` says otherwise).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLE = ROOT / "examples" / "half_cheetah"
CKPT = str(EXAMPLE / "policy.pt")
POLICY = f"{EXAMPLE / 'policy.py'}:make_policy"
ENV = f"{EXAMPLE / 'policy.py'}:make_env"
ENV_FAST_LOOK = f"{Path(__file__).resolve()}:make_env_fast_look"
RESULTS = HERE / "results"

PRELOAD = ["numpy", "torch", "tensordict", "torchrl", "torchrl.envs", "torchrl.render", "torchrl.envs.libs.gym",
           "gymnasium", "mujoco", "gymnasium.envs.mujoco.half_cheetah_v5", "av", "psutil", "torchrl_render",
           "torchrl_render.api", "torchrl_render.envs", "torchrl_render.policies", "torchrl_render.vector",
           "torchrl_render.backends.mujoco", "torchrl_render.writers.mp4", "torchrl_render.writers.jsonl"]
OPTIONAL_PRELOAD = ["torchcodec", "torchcodec.encoders"]

MODES = {
    # steps per trajectory (2 trajectories), rounds, stage frames, memory sweep (rendered frames)
    "quick": {"trajs": 2, "steps": 20, "rounds": 1, "stage_frames": 20, "memory": [100, 300]},
    "full": {"trajs": 2, "steps": 200, "rounds": 3, "stage_frames": 60, "memory": [500, 2000, 5000]},
}

TARGETS = {
    "default_mp4_vs_torchrl": ("default quality, mp4: frames/s at least torchrl.render's", ">=", 1.0),
    "default_mp4_vs_bound": ("default quality, mp4: wall time within 1.15x of the stage bound", "<=", 1.15),
    "fast_mp4_vs_torchrl": ("fast preset, mp4: at least 6x torchrl.render's frames/s", ">=", 6.0),
    "jsonl_vs_torchrl": ("jsonl: at least 4x torchrl.render's wall-time speed", ">=", 4.0),
    "rss_growth_mb": ("peak RSS grows at most 50 MB from the smallest to the largest sweep point", "<=", 50.0),
    "rss_vs_torchrl": ("peak RSS at the largest sweep point at most 1/4 of torchrl.render's", "<=", 0.25),
}


# ----------------------------------------------------------------------------------------------
# The env-factory adapter (imported by torchrl.render from this file, in the memory sweep only)
# ----------------------------------------------------------------------------------------------

def make_env_fast_look(spec: Any = None) -> Any:
    """The example's ``make_env``, with gymnasium's renderer set up like ``render_quality="fast"``.

    Same env, same camera, same 480x480 frames; shadows and reflections off and no multisampling,
    exactly the settings torchrl_render's fast preset uses. Only for torchrl.render, which has no preset.
    """
    import importlib.util

    import mujoco

    module_spec = importlib.util.spec_from_file_location("_bench_half_cheetah_policy", EXAMPLE / "policy.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    env = module.make_env(spec)
    raw = env.unwrapped
    quality = raw.model.vis.quality
    saved, quality.offsamples = quality.offsamples, 0
    try:  # the viewer (and its MjrContext, which copies offsamples) is made now, not at the first render()
        viewer = raw.mujoco_renderer._get_viewer(raw.render_mode)
    finally:
        quality.offsamples = saved
    for flag in ("mjRND_SHADOW", "mjRND_REFLECTION"):
        viewer.scn.flags[getattr(mujoco.mjtRndFlag, flag)] = 0
    return env


# ----------------------------------------------------------------------------------------------
# Jobs: each runs in its own process forked from the preloaded server
# ----------------------------------------------------------------------------------------------

def _cpu_now() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _measure(fn: Any) -> dict[str, Any]:
    """Runs ``fn()`` and returns its result with wall, CPU and memory figures."""
    base_rss = _rss_mb()
    load0 = os.getloadavg()[0]
    cpu0, t0 = _cpu_now(), time.perf_counter()
    out = fn()
    wall, cpu = time.perf_counter() - t0, _cpu_now() - cpu0
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    out.update(wall_s=wall, cpu_s=cpu, peak_rss_mb=me.ru_maxrss / 1024, children_peak_rss_mb=kids.ru_maxrss / 1024,
               base_rss_mb=base_rss, load_1min=[load0, os.getloadavg()[0]])
    return out


def _job_ours(spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    from torchrl_render import RenderConfig, render_policy

    profile = _Profile() if spec.get("profile") else None
    cfg = RenderConfig(ckpt=CKPT, policy=POLICY, env=ENV, num_trajs=spec["trajs"], max_steps=spec["steps"],
                       out=tmp / f"run.{spec['format']}", render_quality=spec.get("quality", "default"),
                       num_envs=spec.get("envs", 1), progress=False, seed=0)

    def run() -> dict[str, Any]:
        result = render_policy(cfg)
        episodes = result.metrics["per_episode"]
        return {"frames": sum(e["num_frames"] for e in episodes), "steps": sum(e["length"] for e in episodes),
                "returns": [round(e["sum_reward"], 3) for e in episodes],
                "artifact_bytes": sum(Path(a.path).stat().st_size for a in result.artifacts if Path(a.path).is_file())}

    if profile is not None:
        with profile:
            out = _measure(run)
        out["profile"] = profile.report(out["wall_s"], out["frames"], out["steps"])
        return out
    return _measure(run)


def _job_torchrl(spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    from torchrl.render import RenderConfig, render_policy

    cfg = RenderConfig(ckpt=CKPT, policy=POLICY, env=ENV_FAST_LOOK if spec.get("quality") == "fast" else ENV,
                       num_trajs=spec["trajs"], max_steps=spec["steps"], format=spec["format"],
                       out=tmp / f"run.{spec['format']}", render_mode="rgb_array", seed=0)

    def run() -> dict[str, Any]:
        result = render_policy(cfg)
        trajs = result.metadata["trajectories"]
        out = Path(cfg.out)
        return {"frames": sum(t["num_frames"] for t in trajs), "steps": sum(t["num_steps"] for t in trajs),
                "returns": [round(t["return"], 3) for t in trajs],
                "artifact_bytes": out.stat().st_size if out.is_file() else 0}

    return _measure(run)


class _Clock:
    """Accumulates wall and process CPU (all threads) of timed sections, by name."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.count: dict[str, int] = {}

    def time(self, name: str, fn: Any, *args: Any) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn(*args)
        self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - t0
        self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0
        self.count[name] = self.count.get(name, 0) + 1
        return out

    def add(self, name: str, wall: float, cpu: float, count: int) -> None:
        self.wall[name], self.cpu[name], self.count[name] = wall, cpu, count

    def per_call(self) -> dict[str, dict[str, float]]:
        return {k: {"wall_s": self.wall[k] / self.count[k], "cpu_s": self.cpu[k] / self.count[k],
                    "calls": self.count[k]} for k in self.wall}


def _job_stages(spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Each stage of our pipeline timed alone: env step, policy, render (default, fast), encode."""

    from torchrl.envs.utils import step_mdp

    from torchrl_render import RenderConfig
    from torchrl_render.backends.mujoco import MujocoBackend, _find_simulation
    from torchrl_render.checkpoint import read_checkpoint
    from torchrl_render.data import FrameBundle
    from torchrl_render.envs import build_env
    from torchrl_render.envs.gl import ensure_headless_gl
    from torchrl_render.envs.unwrap import underlying_env
    from torchrl_render.policies import build_policy
    from torchrl_render.writers.mp4 import Mp4Writer

    ensure_headless_gl()
    n = spec["frames"]
    cfg = RenderConfig(ckpt=CKPT, policy=POLICY, env=ENV, out=tmp / "stage.mp4", seed=0)
    clock, t_setup = _Clock(), time.perf_counter()
    payload, digest = read_checkpoint(cfg.ckpt)
    env = build_env(cfg, payload, render_mode="rgb_array")
    policy = build_policy(cfg, env, payload, digest, [])
    env = policy.adapt_env(env)
    policy.env = env
    setup_s = time.perf_counter() - t_setup
    frames_by_quality = {}
    for quality in ("default", "fast"):
        # the render alone: drawn on the calling thread, without the pipeline's drawing thread
        model, data, _kind, gym_renderer = _find_simulation(underlying_env(env))
        backend = MujocoBackend(model, data, ["default"], width=cfg.width, height=cfg.height,
                                render_quality=quality, gym_renderer=gym_renderer, threaded=False)
        env.set_seed(0)
        td = env.reset()
        backend.capture(td)  # the first frame sets the camera up; not a steady-state cost
        frames = []
        for _ in range(n):
            td = clock.time("policy", policy, td)
            td = clock.time("env_step", lambda t: step_mdp(env.step(t), keep_other=True), td)
            frames.append(clock.time(f"render_{quality}", backend.capture, td)["default"])
            if bool(td.get("done").any()):
                td = env.reset()
        backend.close()
        frames_by_quality[quality] = frames
    for quality, frames in frames_by_quality.items():
        writer = Mp4Writer(tmp / f"stage_{quality}.mp4", fps=cfg.fps, codec=cfg.video_codec, crf=cfg.video_crf)
        writer.write(FrameBundle({"default": frames[0]}, 0, 0))  # opens the encoder; not per-frame work
        c0, t0 = time.process_time(), time.perf_counter()
        for i, frame in enumerate(frames):
            writer.write(FrameBundle({"default": frame}, i + 1, 0))
        writer.close()  # the flush of the frames still in x264's lookahead belongs to their cost
        clock.add(f"encode_{quality}", time.perf_counter() - t0, time.process_time() - c0, len(frames))
    env.close()
    return {"frames": n, "setup_s": setup_s, "stages": clock.per_call(), "load_1min": os.getloadavg()[0]}


class _Profile:
    """In-pipeline timers for a one-env torchrl_render run (``--profile``): where the wall time goes.

    Wraps, for the duration of the run: the policy call and env.step (main thread), the MuJoCo
    scene update and submission (main thread), the wait for a submitted frame to be drawn (main
    thread), the drawing thread's ``Canvas.draw`` and the writer thread's ``Mp4Writer.write`` (wall and
    that thread's CPU; llvmpipe's own threads are not in it), and the time the main thread waits on the
    bounded writer queue (back-pressure).
    """

    def __init__(self) -> None:
        self.clock = _Clock()
        self.patches: list[tuple[Any, str, Any]] = []
        self.lock = threading.Lock()

    def _wrap(self, owner: Any, name: str, label: str, thread_cpu: bool = False) -> None:
        original = getattr(owner, name)
        clock, lock = self.clock, self.lock

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            c0 = time.thread_time() if thread_cpu else 0.0
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                wall = time.perf_counter() - t0
                cpu = time.thread_time() - c0 if thread_cpu else 0.0
                with lock:
                    clock.wall[label] = clock.wall.get(label, 0.0) + wall
                    clock.cpu[label] = clock.cpu.get(label, 0.0) + cpu
                    clock.count[label] = clock.count.get(label, 0) + 1

        self.patches.append((owner, name, original))
        setattr(owner, name, wrapper)

    def __enter__(self) -> _Profile:
        from torchrl.envs import EnvBase

        import torchrl_render.rollout as rollout_mod
        from torchrl_render.backends.mjgl import Canvas
        from torchrl_render.backends.mujoco import MujocoBackend
        from torchrl_render.sink import Sink
        from torchrl_render.writers.group import BackgroundWriters
        from torchrl_render.writers.mp4 import Mp4Writer

        self._wrap(rollout_mod, "_act", "policy (main thread)")
        self._wrap(EnvBase, "step", "env.step (main thread)")
        self._wrap(MujocoBackend, "submit", "scene update + submit (main thread)")
        self._wrap(Sink, "_drawn", "wait for the drawn frame (main thread)")
        self._wrap(Canvas, "draw", "draw (drawing thread)", thread_cpu=True)
        self._wrap(BackgroundWriters, "_put", "queue put incl. back-pressure wait (main thread)")
        self._wrap(Mp4Writer, "write", "encode (writer thread)", thread_cpu=True)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in reversed(self.patches):
            setattr(owner, name, original)

    def report(self, wall: float, frames: int, steps: int) -> dict[str, Any]:
        main = [k for k in self.clock.wall if k.endswith("(main thread)")]
        rows = {k: {"total_s": self.clock.wall[k], "per_frame_s": self.clock.wall[k] / max(frames, 1),
                    "calls": self.clock.count[k], "thread_cpu_s": self.clock.cpu[k] or None} for k in self.clock.wall}
        other = wall - sum(self.clock.wall[k] for k in main)
        rows["rest of the main thread (records, metrics, set-up, close)"] = {
            "total_s": other, "per_frame_s": other / max(frames, 1), "calls": None, "thread_cpu_s": None}
        return {"wall_s": wall, "frames": frames, "steps": steps, "rows": rows}


JOBS = {"ours": _job_ours, "torchrl": _job_torchrl, "stages": _job_stages}


def _child_main(spec: dict[str, Any], conn: Any) -> None:
    """Entry point of a forked job process: runs one job, sends its result dict back."""
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    # MuJoCo's and FFmpeg's C-level messages go to a file, shown only when the job fails
    stderr_log = tempfile.TemporaryFile(mode="w+b")
    os.dup2(stderr_log.fileno(), 2)
    try:
        with tempfile.TemporaryDirectory(prefix="trr_bench_") as tmp:
            result = JOBS[spec["kind"]](spec, Path(tmp))
    except BaseException as exc:
        stderr_log.seek(0)
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
                  "stderr_tail": stderr_log.read()[-4000:].decode("utf-8", "replace")}
    conn.send(result)
    conn.close()


# ----------------------------------------------------------------------------------------------
# The parent: fork server, RSS polling, rounds, tables, targets
# ----------------------------------------------------------------------------------------------

class _TreePoller(threading.Thread):
    """Polls the summed RSS of a process and its descendants; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval, self.peak = pid, interval, 0
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self.done.is_set():
            total = 0
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self.done.wait(self.interval)


class Runner:
    """Starts job processes from one preloaded fork server and collects their results."""

    def __init__(self, timeout: float) -> None:
        import multiprocessing as mp

        self.ctx = mp.get_context("forkserver")
        preload = list(PRELOAD)
        import importlib.util

        preload += [name for name in OPTIONAL_PRELOAD if importlib.util.find_spec(name.split(".")[0]) is not None]
        self.ctx.set_forkserver_preload(preload)
        self.timeout = timeout

    def warm(self) -> float:
        t0 = time.perf_counter()
        self.run({"kind": "noop"})
        return time.perf_counter() - t0

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        if spec["kind"] == "noop":
            proc = self.ctx.Process(target=_noop)
            proc.start()
            proc.join()
            return {}
        receive, send = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(target=_child_main, args=(spec, send), daemon=False)
        t0 = time.perf_counter()
        proc.start()
        send.close()
        poller = _TreePoller(proc.pid)
        poller.start()
        result: dict[str, Any]
        try:
            if receive.poll(self.timeout):
                result = receive.recv()
            else:
                result = {"error": f"timed out after {self.timeout:.0f} s"}
                _kill_tree(proc.pid)
        except EOFError:
            result = {"error": f"the job process died (exit code {proc.exitcode})"}
        proc.join(30)
        poller.done.set()
        poller.join()
        result["tree_rss_mb"] = poller.peak / 2**20 if poller.peak else None
        result["process_s"] = time.perf_counter() - t0
        result["spec"] = spec
        return result


def _noop() -> None:
    pass


def _kill_tree(pid: int) -> None:
    """Kills a job process that ran out of time, and the env workers it started (by pid)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass


def _available_cores(cores: int, seconds: float = 1.0) -> float:
    """How many cores this script can get right now: ``cores`` busy loops for ``seconds``, CPU over wall.

    Other work on the machine (other users' tests) shows as less than ``cores``; the stage bound uses the
    nominal count, as the target says, and this figure explains a ratio that load has pushed up.
    """
    import subprocess

    code = f"import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < {seconds}: pass"
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-S", "-c", code]) for _ in range(cores)]
    cpu = 0.0
    for proc in procs:
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        cpu += usage.ru_utime + usage.ru_stime
    return cpu / max(time.perf_counter() - t0, 1e-9)


def _label(spec: dict[str, Any]) -> str:
    if spec["kind"] == "torchrl":
        look = " (fast look, adapter)" if spec.get("quality") == "fast" else ""
        return f"torchrl.render {spec['format']}{look}"
    if spec["kind"] == "ours":
        quality = f" {spec.get('quality', 'default')}" if spec["format"] == "mp4" else ""
        envs = spec.get("envs", 1)
        return f"torchrl_render {spec['format']}{quality}, {envs} env{'s' if envs > 1 else ''}"
    return spec["kind"]


def _round_specs(mode: dict[str, Any], index: int, profile: bool, full: bool) -> list[dict[str, Any]]:
    """One round: the stages next to our default run, then the two tools alternating.

    Every round has the pairs the speed targets need (our default and fast mp4 against torchrl.render's
    mp4) and the stages for the bound; odd rounds run in the reverse order, so neither tool always runs
    first. Round 1 also has the jsonl pair (a ratio of tens, which the load cannot turn), the two-env
    runs (their worker start-up is the same every time; the quick mode runs only the fast one) and, in
    the full mode, torchrl.render with the fast look.
    """
    base = {"trajs": mode["trajs"], "steps": mode["steps"]}
    specs = [
        {"kind": "stages", "frames": mode["stage_frames"]},
        {"kind": "ours", "format": "mp4", "quality": "default", "envs": 1, "profile": profile, **base},
        {"kind": "torchrl", "format": "mp4", **base},
        {"kind": "ours", "format": "mp4", "quality": "fast", "envs": 1, "profile": profile, **base},
    ]
    if index == 0:
        specs += [{"kind": "torchrl", "format": "jsonl", **base}, {"kind": "ours", "format": "jsonl", "envs": 1,
                                                                   **base}]
        if full:
            specs.append({"kind": "ours", "format": "mp4", "quality": "default", "envs": 2, **base})
        specs.append({"kind": "ours", "format": "mp4", "quality": "fast", "envs": 2, **base})
        if full:
            specs.append({"kind": "torchrl", "format": "mp4", "quality": "fast", **base})
    return list(reversed(specs)) if index % 2 == 1 else specs


def _find(rows: list[dict[str, Any]], **want: Any) -> dict[str, Any] | None:
    for row in rows:
        spec = row["spec"]
        if all(spec.get(k, {"envs": 1, "quality": "default"}.get(k)) == v for k, v in want.items()) \
                and "error" not in row:
            return row
    return None


def _fps(row: dict[str, Any] | None) -> float | None:
    return row["frames"] / row["wall_s"] if row and row.get("frames") and row["wall_s"] > 0 else None


def _bound(stages: dict[str, Any], quality: str, frames: int, steps: int, cores: int) -> dict[str, Any]:
    """``max(longest stage's wall, total CPU / cores)`` per frame, and for ``frames`` frames."""
    s = stages["stages"]
    per_step = steps / max(frames, 1)  # env step and policy run once per step, render and encode once per frame
    parts = {"env_step": (s["env_step"], per_step), "policy": (s["policy"], per_step),
             "render": (s[f"render_{quality}"], 1.0), "encode": (s[f"encode_{quality}"], 1.0)}
    walls = {k: v["wall_s"] * w for k, (v, w) in parts.items()}
    cpus = {k: v["cpu_s"] * w for k, (v, w) in parts.items()}
    longest = max(walls, key=walls.get)
    per_frame = max(walls[longest], sum(cpus.values()) / cores)
    return {"per_frame_s": per_frame, "total_s": per_frame * frames, "longest_stage": longest,
            "longest_wall_s": walls[longest], "cpu_per_core_s": sum(cpus.values()) / cores,
            "limited_by": longest if walls[longest] >= sum(cpus.values()) / cores else "total CPU / cores"}


def _round_ratios(rows: list[dict[str, Any]], stages: dict[str, Any] | None, cores: int) -> dict[str, Any]:
    theirs_mp4, theirs_jsonl = _find(rows, kind="torchrl", format="mp4", quality="default"), \
        _find(rows, kind="torchrl", format="jsonl")
    out: dict[str, Any] = {}
    for quality in ("default", "fast"):
        for envs in (1, 2):
            ours = _find(rows, kind="ours", format="mp4", quality=quality, envs=envs)
            key = f"mp4_{quality}_{envs}env"
            if ours is None:
                continue
            entry: dict[str, Any] = {}
            if theirs_mp4 is not None and _fps(theirs_mp4):
                entry["fps_vs_torchrl"] = _fps(ours) / _fps(theirs_mp4)
            if stages is not None and "error" not in stages:
                bound = _bound(stages, quality, ours["frames"], ours["steps"], cores)
                entry["bound"] = bound
                entry["wall_vs_bound"] = ours["wall_s"] / bound["total_s"]
                entry["cpu_vs_stages"] = ours["cpu_s"] / (bound["cpu_per_core_s"] * cores * ours["frames"])
                free = stages.get("available_cores")
                if free:
                    loaded = _bound(stages, quality, ours["frames"], ours["steps"], max(free, 1e-3))
                    entry["wall_vs_bound_free_cores"] = ours["wall_s"] / loaded["total_s"]
            out[key] = entry
    ours_jsonl = _find(rows, kind="ours", format="jsonl")
    if ours_jsonl and theirs_jsonl:
        out["jsonl_1env"] = {"speed_vs_torchrl": theirs_jsonl["wall_s"] / ours_jsonl["wall_s"]}
    return out


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


def _targets(rounds: list[dict[str, Any]], memory: dict[str, Any]) -> dict[str, Any]:
    def collect(key: str, field: str) -> list[float]:
        return [r["ratios"].get(key, {}).get(field) for r in rounds]

    fast = [max(v for v in (a, b) if v is not None) if (a is not None or b is not None) else None
            for a, b in zip(collect("mp4_fast_1env", "fps_vs_torchrl"), collect("mp4_fast_2env", "fps_vs_torchrl"))]
    values = {
        "default_mp4_vs_torchrl": collect("mp4_default_1env", "fps_vs_torchrl"),
        "default_mp4_vs_bound": collect("mp4_default_1env", "wall_vs_bound"),
        "fast_mp4_vs_torchrl": fast,
        "jsonl_vs_torchrl": collect("jsonl_1env", "speed_vs_torchrl"),
        "rss_growth_mb": [memory.get("ours_growth_mb")],
        "rss_vs_torchrl": [memory.get("ours_vs_torchrl_at_largest")],
    }
    out = {}
    for key, (text, op, limit) in TARGETS.items():
        per_round = values[key]
        value = _median(per_round)
        met = None if value is None else (value >= limit if op == ">=" else value <= limit)
        out[key] = {"target": text, "limit": f"{op} {limit:g}", "value": value, "per_round": per_round, "met": met}
    return out


def _memory_sweep(runner: Runner, points: list[int], log: Any) -> dict[str, Any]:
    import psutil

    rows = []
    for frames in points:
        trajs = max(1, math.ceil(frames / 1000))  # HalfCheetah-v5 episodes end at 1,000 steps
        steps = frames // trajs - 1  # a trajectory of n steps renders n + 1 frames
        base = {"trajs": trajs, "steps": steps, "format": "mp4", "quality": "fast", "memory_point": frames}
        for spec in ({"kind": "ours", "envs": 1, **base}, {"kind": "torchrl", **base}):
            # torchrl.render peaks at about 4.6 copies of its frames (measured: 15.9 GB at 5,000 frames);
            # on a shared machine, skip rather than push others into the OOM killer
            need_gb = 4.7 * frames * 480 * 480 * 3 / 2**30 + 1.0
            free_gb = psutil.virtual_memory().available / 2**30
            if spec["kind"] == "torchrl" and need_gb + 2.0 > free_gb:
                row = {"error": f"skipped: needs about {need_gb:.1f} GiB, {free_gb:.1f} GiB available", "spec": spec}
            else:
                row = runner.run(spec)
            rows.append(row)
            log(_row_line(row))
    ours = {r["spec"]["memory_point"]: r for r in rows if r["spec"]["kind"] == "ours" and "error" not in r}
    theirs = {r["spec"]["memory_point"]: r for r in rows if r["spec"]["kind"] == "torchrl" and "error" not in r}
    out: dict[str, Any] = {"rows": rows, "points": points}
    lo, hi = min(points), max(points)
    if lo in ours and hi in ours:
        out["ours_growth_mb"] = ours[hi]["peak_rss_mb"] - ours[lo]["peak_rss_mb"]
    if hi in ours and hi in theirs:
        out["ours_vs_torchrl_at_largest"] = ours[hi]["peak_rss_mb"] / theirs[hi]["peak_rss_mb"]
    return out


def _row_line(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"  {_label(row['spec']):<44} ERROR {row['error']}"
    fps = _fps(row)
    return (f"  {_label(row['spec']):<44} {row['frames']:>5} frames {row['wall_s']:7.2f} s "
            f"{(f'{fps:6.1f} fr/s' if fps else '      -     ')} cpu {row['cpu_s']:6.1f} s "
            f"rss {row['peak_rss_mb']:6.0f} MB (tree {row.get('tree_rss_mb') or 0:6.0f}) "
            f"load {row['load_1min'][0]:.1f}")


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _markdown(result: dict[str, Any]) -> str:
    rounds, lines = result["rounds"], []
    lines.append(f"Mode `{result['mode']}`: {result['settings']['trajs']} x {result['settings']['steps']} steps, "
                 f"HalfCheetah-v5, 480x480, {result['settings']['rounds']} round(s); {result['machine']['cores']} "
                 f"cores; load average {result['load_start'][0]:.1f} at the start, "
                 f"{result['load_end'][0]:.1f} at the end.")
    lines.append("")
    lines.append("| run | round | frames | wall s | frames/s | CPU s | peak RSS MB | tree RSS MB | x torchrl.render "
                 "| x bound | x bound, free cores | CPU / stages' CPU |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, rnd in enumerate(rounds, 1):
        for row in rnd["rows"]:
            if "error" in row:
                lines.append(f"| {_label(row['spec'])} | {i} | error: {row['error'][:60]} | | | | | | | | | |")
                continue
            spec, ratio = row["spec"], {}
            if spec["kind"] == "ours" and spec["format"] == "mp4":
                ratio = rnd["ratios"].get(f"mp4_{spec.get('quality', 'default')}_{spec.get('envs', 1)}env", {})
                vs, bound = ratio.get("fps_vs_torchrl"), ratio.get("wall_vs_bound")
            elif spec["kind"] == "ours" and spec["format"] == "jsonl":
                vs, bound = rnd["ratios"].get("jsonl_1env", {}).get("speed_vs_torchrl"), None
            else:
                vs, bound = None, None
            free, cpu = ratio.get("wall_vs_bound_free_cores"), ratio.get("cpu_vs_stages")
            fps = _fps(row)
            lines.append(f"| {_label(spec)} | {i} | {row['frames']} | {row['wall_s']:.1f} | {_fmt(fps, 1)} | "
                         f"{row['cpu_s']:.1f} | {row['peak_rss_mb']:.0f} | {_fmt(row.get('tree_rss_mb'), 0)} | "
                         f"{_fmt(vs)} | {_fmt(bound)} | {_fmt(free)} | {_fmt(cpu)} |")
    lines.append("")
    lines.append("x torchrl.render: frames/s over torchrl.render mp4's in the same round (jsonl: its wall time over "
                 "ours). x bound: our wall time over the stage bound of the same round, with the nominal cores; "
                 "free cores: the same bound with the cores a busy-loop probe got at that moment (other work on "
                 "the machine). CPU / stages' CPU: our run's CPU seconds over the sum of the stages' CPU seconds "
                 "for as many frames (the pipeline's own CPU overhead).")
    stage_rows = [(i, rnd["stages"]) for i, rnd in enumerate(rounds, 1) if "stages" in rnd.get("stages", {})]
    if stage_rows:
        lines.append("")
        lines.append("Stages measured alone (per frame; CPU counts every thread):")
        lines.append("")
        lines.append("| round | stage | wall ms | CPU ms |")
        lines.append("|---|---|---|---|")
        for i, stages in stage_rows:
            if stages.get("available_cores"):
                lines.append(f"| {i} | (cores free for us, probe) | {stages['available_cores']:.2f} | |")
            for name, value in stages["stages"].items():
                lines.append(f"| {i} | {name} | {value['wall_s'] * 1e3:.2f} | {value['cpu_s'] * 1e3:.2f} |")
        for i, rnd in enumerate(rounds, 1):
            for key in ("mp4_default_1env", "mp4_fast_1env"):
                bound = rnd["ratios"].get(key, {}).get("bound")
                if bound:
                    lines.append("")
                    lines.append(f"Round {i}, {key.split('_')[1]}: bound {bound['per_frame_s'] * 1e3:.1f} ms/frame "
                                 f"(longest stage {bound['longest_stage']} {bound['longest_wall_s'] * 1e3:.1f} ms, "
                                 f"CPU / cores {bound['cpu_per_core_s'] * 1e3:.1f} ms; "
                                 f"limited by {bound['limited_by']}).")
    memory = result.get("memory", {})
    if memory.get("rows"):
        lines.append("")
        lines.append("Memory sweep (fast look on both, 480x480, mp4, one env):")
        lines.append("")
        lines.append("| rendered frames | torchrl_render peak RSS MB | torchrl.render peak RSS MB | ratio |")
        lines.append("|---|---|---|---|")
        for point in memory["points"]:
            pick = {r["spec"]["kind"]: r for r in memory["rows"] if r["spec"]["memory_point"] == point}
            ours, theirs = pick.get("ours", {}), pick.get("torchrl", {})
            a, b = ours.get("peak_rss_mb"), theirs.get("peak_rss_mb")
            lines.append(f"| {point} | {_fmt(a, 0)} | {_fmt(b, 0) if b else theirs.get('error', '-')} | "
                         f"{_fmt(a / b) if a and b else '-'} |")
    lines.append("")
    if result["mode"] == "quick":
        lines.append("Quick mode: short runs, so fixed costs (renderer and encoder set-up, env-worker start-up) weigh "
                     "far more than in the full mode, and the memory sweep stops at a few hundred frames; the "
                     "verdicts below are indicative only. The targets are judged on `--full`.")
        lines.append("")
    lines.append("| target | limit | value (median of rounds) | met |")
    lines.append("|---|---|---|---|")
    for target in result["targets"].values():
        met = {True: "yes", False: "**no**", None: "n/a"}[target["met"]]
        lines.append(f"| {target['target']} | {target['limit']} | {_fmt(target['value'])} | {met} |")
    return "\n".join(lines)


def _profile_markdown(result: dict[str, Any]) -> str:
    lines = []
    for rnd in result["rounds"]:
        for row in rnd["rows"]:
            prof = row.get("profile")
            if not prof:
                continue
            lines.append("")
            lines.append(f"In-pipeline profile, {_label(row['spec'])}: {prof['frames']} frames "
                         f"in {prof['wall_s']:.1f} s")
            lines.append("")
            lines.append("| where | total s | ms / frame | that thread's CPU s |")
            lines.append("|---|---|---|---|")
            for name, value in prof["rows"].items():
                lines.append(f"| {name} | {value['total_s']:.2f} | {value['per_frame_s'] * 1e3:.2f} | "
                             f"{_fmt(value['thread_cpu_s'])} |")
    return "\n".join(lines)


def _versions() -> dict[str, str | None]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("torchrl_render", "torch", "torchrl", "tensordict", "gymnasium", "mujoco", "av", "torchcodec"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _update_docs(path: Path, table: str, command: str, when: str | None = None) -> None:
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    if start not in text or end not in text:
        text += f"\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    stamp = when or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    block = f"{start}\nLatest run ({stamp}), `{command}`:\n\n{table}\n{end}"
    path.write_text(head + block + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_const", const="quick", dest="mode", help="under 3 minutes (default)")
    group.add_argument("--full", action="store_const", const="full", dest="mode",
                       help="2 x 200 steps, 3 rounds, memory at 500/2,000/5,000 frames")
    parser.add_argument("--json", type=Path, help="where to write the JSON (default benchmarks/results/...)")
    parser.add_argument("--rounds", type=int, help="override the number of interleaved rounds")
    parser.add_argument("--steps", type=int, help="override the steps per trajectory")
    parser.add_argument("--memory", help="override the memory sweep points, e.g. 500,2000,5000 ('' to skip)")
    parser.add_argument("--profile", action="store_true", help="in-pipeline timers on our one-env mp4 runs")
    parser.add_argument("--update-docs", action="store_true", help="write the tables into docs/benchmarks.md")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one run may take")
    parser.add_argument("--from-json", type=Path, help="print (and with --update-docs, write) the tables of an "
                                                       "earlier run's JSON instead of running")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        result = json.loads(args.from_json.read_text(encoding="utf-8"))
        table = _markdown(result)
        profile = _profile_markdown(result)
        print(table + ("\n" + profile if profile else ""))
        if args.update_docs:
            _update_docs(ROOT / "docs" / "benchmarks.md", table, result["command"], result.get("finished"))
            print("docs/benchmarks.md updated")
        return 0
    mode_name = args.mode or "quick"
    mode = dict(MODES[mode_name])
    for name in ("rounds", "steps"):
        if getattr(args, name) is not None:
            mode[name] = getattr(args, name)
    if args.memory is not None:
        mode["memory"] = [int(x) for x in args.memory.split(",") if x.strip()]
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    sys.path.insert(0, str(ROOT))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    started = time.perf_counter()
    command = " ".join(["python", "benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])])

    def log(text: str) -> None:
        print(text, flush=True)

    try:
        import torchcodec  # noqa: F401
    except Exception:
        log("warning: torchcodec is not importable, torchrl.render cannot write mp4; run bash benchmarks/setup.sh")

    result: dict[str, Any] = {
        "benchmark": "torchrl_render vs torchrl.render", "mode": mode_name, "settings": mode, "command": command,
        "machine": {"cores": cores, "platform": platform.platform(),
                    "memory_gb": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
                    "MUJOCO_GL": os.environ["MUJOCO_GL"]},
        "versions": _versions(), "load_start": os.getloadavg(), "rounds": [],
    }
    log(f"{command}  (load average {result['load_start'][0]:.2f}, {cores} cores)")
    runner = Runner(args.timeout)
    result["fork_server_start_s"] = runner.warm()
    log(f"fork server ready in {result['fork_server_start_s']:.1f} s (modules imported once)")
    for index in range(mode["rounds"]):
        log(f"round {index + 1}/{mode['rounds']}")
        rows, stages = [], {"error": "not run"}
        for spec in _round_specs(mode, index, profile=args.profile, full=mode_name == "full"):
            if spec["kind"] != "stages":
                rows.append(runner.run(spec))
                log(_row_line(rows[-1]))
                continue
            stages = runner.run(spec)
            stages["available_cores"] = _available_cores(cores)
            if "error" in stages:
                log(f"  stages: ERROR {stages['error']}")
            else:
                log("  stages alone (ms/frame wall / CPU): " + ", ".join(
                    f"{k} {v['wall_s'] * 1e3:.1f}/{v['cpu_s'] * 1e3:.1f}" for k, v in stages["stages"].items())
                    + f"; cores free for us now: {stages['available_cores']:.2f} of {cores}")
        result["rounds"].append({"stages": stages, "rows": rows, "ratios": _round_ratios(rows, stages, cores)})
    if mode["memory"]:
        log(f"memory sweep at {mode['memory']} rendered frames")
        result["memory"] = _memory_sweep(runner, mode["memory"], log)
    else:
        result["memory"] = {}
    result["targets"] = _targets(result["rounds"], result["memory"])
    result["load_end"] = os.getloadavg()
    result["total_s"] = time.perf_counter() - started
    result["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = _markdown(result)
    profile = _profile_markdown(result) if args.profile else ""
    log("")
    log(table + ("\n" + profile if profile else ""))
    out = args.json or RESULTS / f"bench-{mode_name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    log(f"\nJSON: {out}  (total {result['total_s']:.0f} s)")
    if args.update_docs:
        _update_docs(ROOT / "docs" / "benchmarks.md", table, command)
        log("docs/benchmarks.md updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
