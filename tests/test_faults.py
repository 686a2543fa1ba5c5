"""Faults mid-run: the env raising at step k, Ctrl-C, a full disk; and writing under a temporary name.

The guarantee each time: the message names what failed and where, the target path
holds nothing (no artifact, no temporary file, no sidecar), and the metrics of the
episodes that finished are kept in ``<out>.partial.json``.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchrl_render.writers import WRITERS

from helpers.clicode import exit_code
from helpers.paths import TESTS

# the tiny env has no MuJoCo model, so formats that take MuJoCo states (html) get these checks in
# tests/writers/test_writer_html.py, on a MuJoCo env
# minari needs its extra (pip install 'torchrl_render[datasets]'), which the lower-bound venv has not
FORMATS = [pytest.param(name, marks=pytest.mark.skipif(name == "minari" and importlib.util.find_spec("minari") is None,
                                                       reason="minari is not installed"))
           for name in WRITERS.names() if not WRITERS.entry(name).needs_state]
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def out_for(folder: Path, fmt: str) -> Path:
    entry = WRITERS.entry(fmt)
    return folder / ("run" + (entry.suffixes[0] if entry.suffixes else ""))


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def cli(argv: list[str], capsys) -> tuple[int, str]:
    code = exit_code([str(a) for a in argv])
    return code, capsys.readouterr().err


def tiny(out: Path, *extra: str) -> list[str]:
    return ["--policy", "helpers.tinyenv:make_policy", "--from-pixels", "--out", str(out), "--quiet", *extra]


def partial(out: Path) -> dict:
    return json.loads(Path(f"{out}.partial.json").read_text())


# -- the env raises at step k ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_env_raising_in_a_later_episode(tmp_path, capsys, fmt):
    out = out_for(tmp_path, fmt)
    code, err = cli(tiny(out, "--env", "helpers.badfactories:failing_env", "--env-kwargs",
                         '{"fail_at": 3, "episode": 2}',
                         "--num-trajs", "4"), capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "the env raised at step 3 of episode 2: RuntimeError: TinyEnv exploded at t=3" in err
    assert names(tmp_path) == [f"{out.name}.partial.json"]
    data = partial(out)
    assert [e["episode_ix"] for e in data["metrics"]["per_episode"]] == [0, 1]
    assert data["metrics"]["aggregated"]["n_episodes"] == 2 and "TinyEnv exploded" in data["error"]
    assert data["config"]["num_trajs"] == 4


def test_env_raising_in_the_first_episode_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "run.mp4"
    code, err = cli(tiny(out, "--env", "helpers.badfactories:failing_env", "--env-kwargs",
                         '{"fail_at": 2, "episode": 0}'),
                    capsys)
    assert code == 2 and "step 2 of episode 0" in err
    assert names(tmp_path) == []  # no episode finished: no partial metrics either


def test_env_raising_with_several_writers(tmp_path, capsys):
    """Split trajectories, two cameras' worth of files and --save-frames: every writer aborts."""
    out = tmp_path / "run.gif"
    code, err = cli(tiny(out, "--env", "helpers.badfactories:failing_env", "--env-kwargs",
                         '{"fail_at": 2, "episode": 1}',
                         "--num-trajs", "3", "--split-trajectories", "--save-frames"), capsys)
    assert code == 2 and "step 2 of episode 1" in err
    assert names(tmp_path) == ["run.gif.partial.json"]


def test_policy_raising_in_a_later_episode_keeps_partial_metrics(tmp_path, capsys):
    out = tmp_path / "run.mp4"
    code, err = cli(tiny(out, "--env", "helpers.badfactories:failing_env", "--env-kwargs",
                         '{"fail_at": 9, "episode": 9}',
                         "--policy", "helpers.badfactories:nan_after_first_episode", "--num-trajs", "3"), capsys)
    assert code == 2 and "NaN or infinite action" in err
    assert names(tmp_path) == ["run.mp4.partial.json"] and len(partial(out)["metrics"]["per_episode"]) == 1


# -- Ctrl-C ------------------------------------------------------------------------------------------------------


def test_keyboard_interrupt_in_process_exits_130(tmp_path, capsys):
    out = tmp_path / "run.mp4"
    code, err = cli(tiny(out, "--env", "helpers.badfactories:interrupting_env", "--num-trajs", "3"), capsys)
    assert code == 130 and "interrupted; nothing was written at the output path" in err and "Traceback" not in err
    assert names(tmp_path) == ["run.mp4.partial.json"]
    assert "KeyboardInterrupt" in partial(out)["error"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_sigint_mid_run_in_a_real_process(tmp_path):
    """``python -m torchrl_render`` gets SIGINT once an episode has finished: 130, no artifact, partial metrics."""
    out, marker = tmp_path / "run.mp4", tmp_path / "done"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    argv = [sys.executable, "-m", "torchrl_render", *tiny(out, "--env", "helpers.badfactories:slow_env", "--env-kwargs",
                                                          json.dumps({"delay": 0.05, "marker": str(marker)}),
                                                          "--num-trajs", "200")]
    # The child must not inherit an ignored SIGINT: a non-interactive shell starts background jobs with
    # SIGINT ignored (POSIX), a test run launched that way passes SIG_IGN on, and Python then leaves
    # SIGINT ignored, so the Ctrl-C below was lost (the flaky failure: exit 0 after the whole run).
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            preexec_fn=_default_sigint)
    try:
        deadline = time.monotonic() + 240
        while not Path(f"{marker}.1").exists():  # episode 1 ended in the env, so episode 0 is recorded
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never finished an episode"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted; nothing was written at the output path" in stderr and "Traceback" not in stderr
    assert stdout == "" and not out.exists() and not Path(f"{out}.metadata.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left
    episodes = partial(out)["metrics"]["per_episode"]
    assert 1 <= len(episodes) < 200 and [e["episode_ix"] for e in episodes] == list(range(len(episodes)))


# -- a full disk -------------------------------------------------------------------------------------------------


class _FullDiskContainer:
    """A PyAV output container whose muxing fails as on a full disk."""

    def __init__(self, real) -> None:
        self._real = real

    def mux(self, packet):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._real, name)


class _FullDiskFile:
    """A file whose writes fail once ``budget`` bytes are written."""

    def __init__(self, real, budget: int) -> None:
        self._real, self._budget = real, budget

    def write(self, data):
        self._budget -= len(data)
        if self._budget < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._real.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._real.close()

    def __getattr__(self, name):
        return getattr(self._real, name)


def fill_disk(fmt: str, monkeypatch) -> None:
    """Makes ``fmt``'s writer hit ENOSPC after a few frames (at the lowest level each writer writes through)."""
    if fmt in ("mp4", "ipynb"):  # the notebook streams each episode through an Mp4Writer
        import av
        real_av_open = av.open
        monkeypatch.setattr(av, "open", lambda *a, **k: _FullDiskContainer(real_av_open(*a, **k)))
    elif fmt in ("gif", "jsonl", "json"):
        import importlib
        module = importlib.import_module(f"torchrl_render.writers.{fmt}")
        monkeypatch.setattr(module, "open", lambda *a, **k: _FullDiskFile(open(*a, **k), budget=3000), raising=False)
    elif fmt == "npz":
        import zipfile
        real_zip_open = zipfile.ZipFile.open
        monkeypatch.setattr(zipfile.ZipFile, "open",
                            lambda self, *a, **k: _FullDiskFile(real_zip_open(self, *a, **k), budget=600))
    elif fmt == "frames":
        from PIL import Image
        real_save, calls = Image.Image.save, []

        def save(self, *a, **k):
            calls.append(1)
            if len(calls) > 12:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_save(self, *a, **k)
        monkeypatch.setattr(Image.Image, "save", save)
    elif fmt == "minari":  # Minari writes each episode into its HDF5 file: the third one finds the disk full
        from minari.dataset._storages import hdf5_storage
        real_add, calls = hdf5_storage._add_episode_to_group, []

        def add(*a, **k):
            calls.append(1)
            if len(calls) > 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_add(*a, **k)
        monkeypatch.setattr(hdf5_storage, "_add_episode_to_group", add)
    else:
        pytest.skip(f"no disk-full injector for format {fmt!r}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_disk_full_mid_run(tmp_path, capsys, monkeypatch, fmt):
    out = out_for(tmp_path, fmt)
    fill_disk(fmt, monkeypatch)
    code, err = cli(tiny(out, "--env", "helpers.tinyenv:make_env", "--num-trajs", "6"), capsys)
    assert code == 2 and err.startswith("torchrl-render: error: ") and err.count("\n") == 1
    assert "No space left on device" in err and out.name in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert not Path(f"{out}.metadata.json").exists()


def test_disk_full_is_never_half_written(tmp_path, monkeypatch):
    """Whatever the exception type, a failing writer leaves nothing at the target and keeps partial metrics."""
    from torchrl_render import RenderConfig, render_policy
    fill_disk("frames", monkeypatch)
    out = tmp_path / "frames"
    with pytest.raises(Exception, match="No space left on device"):
        render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                   from_pixels=True, out=out,
                                   num_trajs=6))
    assert names(tmp_path) == ["frames.partial.json"]
    assert len(partial(out)["metrics"]["per_episode"]) >= 1


# -- every writer writes under a temporary name ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.slow
def test_writers_use_a_temporary_name_until_the_end(tmp_path, capsys, fmt):
    """A policy looks at the output folder at every step: only hidden temporary names show before the end."""
    out = out_for(tmp_path, fmt)
    code, err = cli(tiny(out, "--env", "helpers.tinyenv:make_env", "--num-trajs", "2", "--policy",
                         "helpers.badfactories:watching_policy", "--policy-kwargs",
                         json.dumps({"folder": str(tmp_path)})),
                    capsys)
    from helpers import badfactories
    seen = badfactories.WATCHED.pop(str(tmp_path))
    assert code == 0, err
    assert seen and all(name.startswith(".") for listing in seen for name in listing), seen
    assert out.name in names(tmp_path) and f"{out.name}.metadata.json" in names(tmp_path)


# -- surfacing, not swallowing: every fallback lands in the metadata's warnings (and the log, once) ---------------


def _pendulum(tmp_path, **kw):
    from torchrl_render import RenderConfig, render_policy
    kw = {"policy": "helpers.badfactories:pendulum_policy", "env": "InvertedPendulum-v5", "out": tmp_path / "run.mp4",
          "max_steps": 3, "width": 64, "height": 64, **kw}
    return render_policy(RenderConfig(**kw))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def pendulum_run(tmp_path):
    """A gymnasium float64 env run; the torchrl_render log is recorded on its own logger (whatever propagates)."""
    logger, records = logging.getLogger("torchrl_render"), _Records()
    level = logger.level
    logger.addHandler(records)
    logger.setLevel(logging.DEBUG)
    try:
        result = _pendulum(tmp_path)
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
    return result, json.loads((tmp_path / "run.mp4.metadata.json").read_text()), records.messages


@pytest.mark.slow
def test_fallbacks_of_a_gymnasium_float64_env_are_in_the_metadata(pendulum_run):
    result, meta, _ = pendulum_run
    warnings = meta["warnings"]
    assert warnings == result.warnings
    assert "observations cast from torch.float64 to the policy's torch.float32" in warnings
    assert "policy adapted as a tensor policy (observation -> action)" in warnings
    from torchrl_render.backends import AUTO_ORDER
    chosen = meta["render"]["render_backend"]
    assert chosen in AUTO_ORDER and chosen != "pixels" and meta["gl_backend"]
    for skipped in AUTO_ORDER[:AUTO_ORDER.index(chosen)]:  # every backend auto passed over says why
        assert any(w.startswith(f"render backend auto skipped {skipped}: ") for w in warnings), (skipped, warnings)
    assert any("the env has no pixel observation" in w for w in warnings)


@pytest.mark.slow
def test_every_warning_is_logged_once(pendulum_run):
    _, meta, logged = pendulum_run
    for warning in meta["warnings"]:
        assert sum(warning in m for m in logged) == 1, (warning, logged)


def test_the_gl_backend_chosen_is_a_warning(tmp_path, monkeypatch):
    from torchrl_render import RenderConfig, render_policy
    for name in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    result = render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                        from_pixels=True,
                                        out=tmp_path / "run.gif", max_steps=2))
    chosen = result.metadata["gl_backend"]
    assert chosen in ("egl", "osmesa")
    assert any(f"MUJOCO_GL={chosen}" in w and "chose" in w for w in result.warnings), result.warnings
