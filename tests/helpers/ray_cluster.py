"""The Ray cluster the Ray tests share: started once per test process (a fixture of tests/conftest.py)."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import TESTS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """A one-node cluster on loopback, with token authentication (Ray's default for local clusters).

    Its tests carry ``xdist_group("ray")``: ``ray stop`` ends every Ray process of the machine, so the tests that
    start Ray run in one test process, one after the other, and the cluster is started once for all of them.
    """
    ray_bin = str(Path(sys.executable).parent / "ray")
    port = _free_port()
    token = tmp_path_factory.mktemp("ray") / "auth_token"
    token.write_text(secrets.token_hex(32))
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_USAGE_STATS_ENABLED": "0"}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]), "MUJOCO_GL": "egl", **auth}
    subprocess.run([ray_bin, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus",
                    "2", "--include-dashboard=false", "--disable-usage-stats"], check=True, env=env,
                   capture_output=True, timeout=180)
    yield f"127.0.0.1:{port}", auth
    subprocess.run([ray_bin, "stop"], env=env, capture_output=True, timeout=120)
