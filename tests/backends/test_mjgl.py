"""Drawing MuJoCo frames on a thread of its own (backends/mjgl.py), against real EGL rendering."""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest
import torch

from torchrl_render.backends.mujoco import MujocoBackend

from helpers import real_envs as R  # first: headless GL before mujoco is imported

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("MUJOCO_GL") != "egl", reason="drawing threads need MUJOCO_GL=egl")]


@pytest.fixture(scope="module")
def sim():
    env = R.gym_env("Hopper-v5")
    yield env
    R.close_env(env)


def _drawing_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("torchrl_render-gl")]


def _frames(env, backend, steps: int) -> list[np.ndarray]:
    torch.manual_seed(0)  # the random actions of R.steps
    env.set_seed(0)
    td = env.reset()
    backend.begin_episode()
    out = [backend.capture(td)["default"]]
    for _ in range(steps):
        td = R.steps(env, td, 1)
        out.append(backend.capture(td)["default"])
    return out


@pytest.mark.parametrize("quality", ["default", "fast"])
def test_threaded_frames_equal_inline_frames_bit_for_bit(sim, quality):
    cfg = R.cfg(render_quality=quality)
    with MujocoBackend.from_config(sim, cfg) as threaded:
        assert threaded.info()["draw_thread"] is True
        drawn = _frames(sim, threaded, 6)
    inline = MujocoBackend(*_sim(sim), ["default"], width=R.SIZE, height=R.SIZE, render_quality=quality,
                           gym_renderer=sim._env.unwrapped.mujoco_renderer, threaded=False)
    with inline:
        assert inline.info()["draw_thread"] is False
        reference = _frames(sim, inline, 6)
    assert len({f.tobytes() for f in reference}) > 1  # the frames follow the simulation
    for ours, ref in zip(drawn, reference, strict=True):
        np.testing.assert_array_equal(ours, ref)


def test_submitted_frames_show_the_state_at_submission(sim):
    """The scene is read when submitted: stepping on while the frame draws does not change it."""
    with MujocoBackend.from_config(sim, R.cfg(render_quality="fast")) as backend:
        reference = _frames(sim, backend, 3)
        torch.manual_seed(0)
        sim.set_seed(0)
        td = sim.reset()
        backend.begin_episode()
        futures = [backend.submit(td)]
        for _ in range(3):
            td = R.steps(sim, td, 1)  # the env steps while earlier frames may still be drawing
            futures.append(backend.submit(td))
        for future, ref in zip(futures, reference, strict=True):
            np.testing.assert_array_equal(future.result()["default"], ref)


def test_the_drawing_thread_stops_at_close(sim):
    before = len(_drawing_threads())
    backend = MujocoBackend.from_config(sim, R.cfg(render_quality="fast"))
    assert len(_drawing_threads()) == before + 1
    backend.capture(None)
    backend.close()
    backend.close()  # safe twice
    assert len(_drawing_threads()) == before
    with pytest.raises(RuntimeError, match="after close"):
        backend.capture(None)


def test_a_collection_on_the_drawing_thread_cannot_free_into_our_context(sim):
    """Another renderer's MjrContext finalised on the drawing thread must not delete our GL objects.

    Its GL object ids coincide with ours; the collector hook unbinds our context meanwhile.
    """
    import mujoco

    with MujocoBackend.from_config(sim, R.cfg()) as backend:
        reference = _frames(sim, backend, 2)
        model = _sim(sim)[0]
        other = mujoco.GLContext(R.SIZE, R.SIZE)
        other.make_current()
        garbage = [mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)]
        garbage.append(garbage)  # a cycle: only the collector frees it
        del garbage
        other.free()
        collected = backend._drawer._pool.submit(gc.collect).result()  # the collection runs on the drawing thread
        assert collected > 0
        after = _frames(sim, backend, 2)
    for ours, ref in zip(after, reference, strict=True):
        np.testing.assert_array_equal(ours, ref)


def test_render_policy_leaves_no_drawing_thread(tmp_path):
    from torchrl_render import RenderConfig, render_policy

    before = len(_drawing_threads())
    out = tmp_path / "run.mp4"
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", out=out,
                                        num_trajs=1,
                                        max_steps=5, width=R.SIZE, height=R.SIZE, render_quality="fast"))
    assert result.metadata["render"]["draw_thread"] is True
    assert not any("was not applied" in w for w in result.warnings)  # the mujoco backend draws every look
    assert result.metadata["trajectories"][0]["num_frames"] == 6
    assert len(_drawing_threads()) == before


def _sim(env):
    raw = env._env.unwrapped
    return raw.model, raw.data
