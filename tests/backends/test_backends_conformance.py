"""Every registered render backend honours the contract on real envs; ``auto`` picks the right one.

Contract (torchrl_render.backends.base): built by ``from_config(env, cfg)``; on an env it
cannot serve it raises ``BackendUnavailable`` (nothing else); otherwise ``capture(td)``
gives ``{camera: frame}`` whose frames normalise to uint8 HxWx3 (or ``None``),
``submit(td).result()`` gives the same, ``info()`` names the backend, and ``close()`` is
safe twice.
"""

from __future__ import annotations

import numpy as np
import pytest

from torchrl_render.backends import AUTO_ORDER, BACKENDS
from torchrl_render.errors import BackendUnavailable
from torchrl_render.frames import to_uint8_hwc

from helpers import real_envs as R  # first: headless GL before mujoco is imported

pytestmark = pytest.mark.slow  # real simulators

FACTORIES = {
    "gym-pixels": lambda: R.gym_env(from_pixels=True),
    "gym-rgb_array": lambda: R.gym_env(render_mode="rgb_array"),
    "gym-mujoco": lambda: R.gym_env(),
    "dm_control": lambda: R.dm_env(),
    "cartpole-no-render": R.gym_cartpole,
    "torchrl-no-render": R.NoRenderEnv,
}

#: Which built-in backend serves which env (plugins are only held to "serves or says it cannot").
SERVES = {
    "pixels": {"gym-pixels"},
    "env": {"gym-pixels", "gym-rgb_array", "dm_control"},
    "mujoco": {"gym-pixels", "gym-rgb_array", "gym-mujoco", "dm_control"},
    "null": set(FACTORIES),
}

@pytest.fixture(scope="module")
def envs():
    made = {name: make() for name, make in FACTORIES.items()}
    yield made
    for env in made.values():
        R.close_env(env)


@pytest.mark.parametrize("backend_name", [n for n in BACKENDS.names() if n != "auto"])
def test_backend_serves_or_says_it_cannot(backend_name, envs):
    cls = BACKENDS.load(backend_name)
    served = set()
    for env_name, env in envs.items():
        try:
            backend = cls.from_config(env, R.cfg(render_quality="fast"))
        except BackendUnavailable as exc:
            assert str(exc).count("Fix:") == 1, f"{backend_name} on {env_name}: {exc}"
            continue
        served.add(env_name)
        try:
            td = R.steps(env, env.reset(), 2)
            frames = backend.capture(td)
            if frames is not None:
                assert frames and all(isinstance(k, str) for k in frames)
                for frame in frames.values():
                    image = to_uint8_hwc(frame)
                    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
            submitted = backend.submit(td).result()  # the future form gives the same frames for the same state
            assert (submitted is None) == (frames is None)
            for name, frame in (frames or {}).items():
                np.testing.assert_array_equal(to_uint8_hwc(submitted[name]), to_uint8_hwc(frame))
            assert backend.info()["render_backend"] == backend_name
        finally:
            backend.close()
            backend.close()
    if backend_name in SERVES:
        assert served == SERVES[backend_name]


@pytest.mark.parametrize(("env_name", "expected"), [
    # a MuJoCo model is rendered by the mujoco backend even when env.render() works: it honours
    # width/height, named cameras and --render-quality
    ("gym-pixels", "pixels"), ("gym-rgb_array", "mujoco"), ("gym-mujoco", "mujoco"), ("dm_control", "mujoco")])
def test_auto_picks_the_first_backend_that_serves(envs, env_name, expected):
    backend = BACKENDS.load("auto").from_config(envs[env_name], R.cfg(render_quality="fast"))
    try:
        assert backend.name == expected
        skipped = AUTO_ORDER[:AUTO_ORDER.index(expected)]
        assert len(backend.notes) >= len(skipped)
        assert all(any(f"skipped {name}" in note for note in backend.notes) for name in skipped)
        frames = backend.capture(envs[env_name].reset())
        assert all(to_uint8_hwc(f).shape[2] == 3 for f in frames.values())
    finally:
        backend.close()


@pytest.mark.parametrize("env_name", ["cartpole-no-render", "torchrl-no-render"])
def test_auto_on_a_non_rendering_env_gives_the_three_fixes(envs, env_name):
    with pytest.raises(BackendUnavailable) as err:
        BACKENDS.load("auto").from_config(envs[env_name], R.cfg())
    message = str(err.value)
    for fix in ("render_mode='rgb_array'", "--from-pixels", "--render-backend mujoco"):
        assert fix in message
    for name in AUTO_ORDER:
        assert f"{name}:" in message
