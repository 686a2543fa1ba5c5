"""Shared test set-up: headless GL before anything imports mujoco; the helpers are the ``helpers`` package."""

from __future__ import annotations

import os

# Under pytest-xdist the workers share the cores: each worker (and what it starts) gets its share of threads for
# torch's OpenMP pool, OpenBLAS and Mesa's llvmpipe, so that two workers' thread pools do not spin on one another's
# cores (a doc block that took 8 s alone took 54 s beside another worker with two threads each).
if os.environ.get("PYTEST_XDIST_WORKER"):
    _share = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "LP_NUM_THREADS"):
        os.environ.setdefault(_var, _share)

from torchrl_render.envs.gl import ensure_headless_gl

ensure_headless_gl()


import pytest


@pytest.fixture(scope="module")
def gym_rgb():
    """InvertedPendulum-v5 with render_mode='rgb_array' (64x64), so env.render() can be compared."""
    from helpers import real_envs as R
    env = R.gym_env(render_mode="rgb_array")
    yield env
    R.close_env(env)


@pytest.fixture(scope="module")
def dm():
    """dm_control cartpole-balance wrapped by torchrl (64x64 renders)."""
    from helpers import real_envs as R
    env = R.dm_env()
    yield env
    R.close_env(env)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The tests of one ``xdist_group`` run in one worker under ``--dist loadgroup`` (``make test``).

    pytest-xdist marks them by appending ``@group`` to each node id, which its scheduler splits off; xdist 3.8 writes
    that suffix to ``Node._nodeid``, which pytest 9.2 no longer reads (it keeps the id in ``Node._id``), so every group
    was silently spread over both workers. Here the suffix goes where pytest reads it; a later xdist that writes it
    itself finds it there and this does nothing.
    """
    if not (os.environ.get("PYTEST_XDIST_WORKER") and getattr(config.option, "loadgroup", False)):
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            from _pytest.nodeid import NodeId  # pytest 9's id type; pytest 8 never gets here

            item._id = NodeId.parse(item.nodeid + suffix)


from helpers.ray_cluster import ray_cluster  # noqa: F401  (a session fixture: the Ray tests' shared cluster)
