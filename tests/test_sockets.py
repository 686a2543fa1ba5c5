"""Nothing listens beyond loopback unless the user asks: every feature that opens a socket, watched.

Each test starts the feature for real and, while it runs (a gated env holds the run at its first
step, so its servers and workers are certainly up), lists with psutil every listening TCP socket and
every bound UDP socket of the whole process tree: this process and its descendants, and for Ray
also every process naming the Ray session (gcs_server, raylet, agents, workers). Each must be on a
loopback address, except the one address the user asked for (``--live-host 0.0.0.0``, a viewer's
``host=``), which must then be exactly what was asked. The local Ray instance must also refuse a
request that carries no token, or a wrong one, and answer one with the token.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import nbformat.v4 as v4
import pytest

from torchrl_render import RenderConfig
from torchrl_render.live.notebook_viewer import (
    display_mujoco_wasm_viewer,
    play_mujoco_wasm_trajectory,
    send_mujoco_wasm_qpos,
    write_mujoco_wasm_viewer,
)
from torchrl_render.notebook.kernel import execute_notebook
from torchrl_render.sweep.store import read_records

from helpers import sweep_envs as sweepenv
from helpers.live import run_in_thread
from helpers.paths import TESTS
from helpers.sockets import (
    GATE_ENV,
    beyond_loopback,
    is_loopback,
    listening,
    ray_session_processes,
    tree,
    wait_ready,
)

pytestmark = pytest.mark.slow


def test_loopback_covers_mapped_and_v6_addresses():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.0.2.2")
    assert not is_loopback("::ffff:192.0.2.2")


def test_loopback_setting_is_restored_after_the_instance_starts(monkeypatch):
    from ray._private import ray_constants

    from torchrl_render.sweep.ray_exec import _loopback_only

    env_var = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    for before in (None, "1"):
        if before is None:
            monkeypatch.delenv(env_var, raising=False)
        else:
            monkeypatch.setenv(env_var, before)
        flag = ray_constants.ENABLE_RAY_CLUSTER
        with _loopback_only():
            assert ray_constants.ENABLE_RAY_CLUSTER is False and os.environ[env_var] == "0"
        assert ray_constants.ENABLE_RAY_CLUSTER is flag and os.environ.get(env_var) == before


def _live_cfg(tmp_path: Path, **kw) -> RenderConfig:
    return RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.sockets:make_gated_env", num_trajs=1,
                        max_steps=20, out=str(tmp_path / "live.jsonl"), format="jsonl", live=0, progress=False,
                        **kw)


@pytest.mark.parametrize("host", [None, "0.0.0.0"])
def test_live_page_listens_where_asked(tmp_path, monkeypatch, host):
    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv(GATE_ENV, str(gate))
    cfg = _live_cfg(tmp_path, **({} if host is None else {"live_host": host}))
    with run_in_thread(cfg) as (url, box, thread):
        wait_ready(gate, thread.is_alive)
        seen = listening(tree())
        (gate / "go").touch()
    assert "error" not in box, box
    port = urlsplit(url).port
    server = [s for s in seen if s.port == port]
    if host is None:
        assert [s.ip for s in server] == ["127.0.0.1"], seen
        assert beyond_loopback(seen) == []
    else:
        assert [s.ip for s in server] == [host], seen  # what the user asked, and only that
        assert beyond_loopback(seen, asked={(host, port)}) == []


@pytest.mark.parametrize("host", [None, "0.0.0.0"])
def test_notebook_viewer_listens_where_asked(tmp_path, host):
    import gymnasium.envs.mujoco as gymnasium_mujoco
    import numpy as np

    viewer_dir = write_mujoco_wasm_viewer(tmp_path / "cheetah", Path(gymnasium_mujoco.__file__).parent / "assets"
                                          / "half_cheetah.xml")
    with display_mujoco_wasm_viewer(viewer_dir, port=0, **({} if host is None else {"host": host})) as viewer:
        nq = viewer.model.nq
        send_mujoco_wasm_qpos(np.zeros(nq), port=viewer.port)
        play_mujoco_wasm_trajectory(np.zeros((3, nq)), dt=0.01, port=viewer.port)
        seen = listening(tree())
    server = [s for s in seen if s.port == viewer.port]
    if host is None:
        assert [s.ip for s in server] == ["127.0.0.1"], seen
        assert beyond_loopback(seen) == []
    else:
        assert [s.ip for s in server] == [host], seen
        assert beyond_loopback(seen, asked={(host, viewer.port)}) == []


def test_notebook_execution_opens_no_network_socket(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    cell = (f"import os, pathlib, time\ngate = pathlib.Path({str(gate)!r})\n"
            "(gate / f'ready-{os.getpid()}').touch()\n"
            "while not (gate / 'go').exists():\n    time.sleep(0.01)\nprint('released')")
    nb = v4.new_notebook(cells=[v4.new_code_cell(cell)])
    box = {}

    def target():
        try:
            box["nb"] = execute_notebook(nb, tmp_path, timeout=120)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        kernel = wait_ready(gate, thread.is_alive)
        procs = tree()
        seen = listening(procs)
    finally:
        (gate / "go").touch()
        thread.join(120)
    assert "error" not in box, box
    assert kernel in procs  # the kernel was watched: it is this process's child
    assert box["nb"].cells[0].outputs[0]["text"].strip() == "released"
    assert beyond_loopback(seen) == [], seen


def _ray_session(procs) -> str:
    for proc in procs.values():
        for arg in proc.cmdline():
            if arg.startswith(("--session-name=", "--session_name=")):
                return arg.split("=", 1)[1]
    raise AssertionError(f"no Ray process names its session: {[p.name() for p in procs.values()]}")


GCS_PROBE = """
import sys
from ray._raylet import GcsClient
try:
    nodes = GcsClient(address=sys.argv[1]).get_all_node_info(timeout=10)
    print("answered", len(nodes))
except Exception as exc:
    print("refused", type(exc).__name__, exc)
"""


def _gcs_request(address: str, env: dict) -> str:
    """A request to the GCS from a new process, with what auth settings ``env`` gives it."""
    run = subprocess.run([sys.executable, "-c", GCS_PROBE, address], env=env, capture_output=True, text=True,
                         timeout=120)
    return run.stdout.strip()


@pytest.mark.xdist_group("ray")
def test_local_ray_sweep_is_loopback_only_and_asks_for_a_token(tmp_path, ray_cluster):
    """Beside a running ``ray start`` cluster whose token it has (which ``ray.init(address=None)`` would join), a
    sweep without ``--ray-address`` starts its own local instance: loopback only, token authentication."""
    import secrets

    sweepenv.write_checkpoints(tmp_path, steps=(10,))
    gate = tmp_path / "gate"
    gate.mkdir()
    cluster, auth = ray_cluster
    token = Path(auth["RAY_AUTH_TOKEN_PATH"])
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}  # Ray's default: token on
    env = {**base, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]), "MUJOCO_GL": "egl",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_TOKEN_PATH": str(token), GATE_ENV: str(gate)}
    driver = subprocess.Popen([sys.executable, "-m", "torchrl_render", "sweep", "--ckpt", f"{tmp_path}/ckpt_*.pt",
                               "--env", "g=helpers.sockets:make_gated_env", "--policy", "helpers.tinyenv:make_policy",
                               "--num-trajs", "2", "--max-steps", "10", "--max-episodes-rendered", "0", "--no-report",
                               "--executor", "ray", "--ray-num-cpus", "1", "--debug", "--out", str(tmp_path / "sw")],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        worker = wait_ready(gate, lambda: driver.poll() is None)
        procs = tree(driver.pid)
        procs.update(ray_session_processes(_ray_session(procs)))
        seen = listening(procs)
        names = {p.name() for p in procs.values() if p.is_running()}
        gcs = next(s for s in seen if s.process == "gcs_server")
        address = f"127.0.0.1:{gcs.port}"
        without = _gcs_request(address, {**base, "RAY_AUTH_MODE": "disabled"})
        wrong = _gcs_request(address, {**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
        right = _gcs_request(address, {**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)})
    finally:
        (gate / "go").touch()
        out, err = driver.communicate(timeout=300)
    assert driver.returncode == 0 and out.strip().endswith("eval_info.json"), err
    # its own instance, not the running cluster, ran the cells
    assert "local Ray instance: GCS at 127.0.0.1:" in err and f"GCS at {cluster}" not in err, err
    assert address != cluster and "Found multiple active Ray instances" not in err
    assert sum(r["kind"] == "episode" for r in read_records(tmp_path / "sw")) == 2
    # every part was watched: the GCS, the raylet, the agents and the worker running the cell
    assert {"gcs_server", "raylet", "ray::RuntimeEnvAgent"} <= names, names
    assert worker in procs and worker != driver.pid
    assert {s.process for s in seen} >= {"gcs_server", "raylet", "ray::RuntimeEnvAgent"}
    assert any(s.pid == worker for s in seen) and any(s.pid == driver.pid for s in seen), seen
    assert beyond_loopback(seen) == [], seen
    # token authentication: refused without the token or with a wrong one; answered with it
    assert without.startswith("refused AuthenticationError") and "token is missing or incorrect" in without, without
    assert wrong.startswith("refused AuthenticationError"), wrong
    assert right == "answered 1", right
    assert "reachable from this machine only; token authentication on" in err, err
