"""Shared pieces of the replay tests: models, states, and MuJoCo's own body positions for them."""

from __future__ import annotations

import numpy as np

#: a free-floating body made of meshes (a tetrahedron and a box mesh) plus a hinge child, over a checker floor
MESH_XML = """
<mujoco>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1=".1 .2 .3" rgb2=".2 .3 .4" width="64" height="64"/>
    <material name="floor" texture="grid" texrepeat="4 4" texuniform="true"/>
    <mesh name="tet" vertex="0 0 0  .3 0 0  0 .3 0  0 0 .3"/>
    <mesh name="cube" vertex="-.1 -.1 -.1  .1 -.1 -.1  -.1 .1 -.1  .1 .1 -.1
                              -.1 -.1 .1  .1 -.1 .1  -.1 .1 .1  .1 .1 .1"/>
  </asset>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <geom type="plane" size="3 3 .1" material="floor"/>
    <body name="floater" pos="0 0 1">
      <freejoint/>
      <geom type="mesh" mesh="tet" rgba=".9 .3 .2 1"/>
      <geom type="mesh" mesh="cube" pos=".4 0 0" rgba=".2 .8 .3 1"/>
      <body name="arm" pos="0 0 .4">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <geom type="ellipsoid" size=".05 .1 .15" pos=".3 0 0"/>
        <geom type="cylinder" size=".05 .1" pos="0 .2 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def mesh_model():
    import mujoco

    return mujoco.MjModel.from_xml_string(MESH_XML)


def random_states(model, n: int, seed: int = 0) -> np.ndarray:
    """``n`` qpos drawn around qpos0 (free joints get unit quaternions)."""
    import mujoco

    rng = np.random.default_rng(seed)
    states = np.tile(model.qpos0, (n, 1)) + rng.normal(0, 0.5, (n, model.nq))
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            a = model.jnt_qposadr[j] + 3
            states[:, a:a + 4] /= np.linalg.norm(states[:, a:a + 4], axis=1, keepdims=True)
    return states


def mujoco_xpos(model, qpos) -> np.ndarray:
    """MuJoCo's body positions for the state ``qpos``, through mj_forward on a fresh MjData."""
    import mujoco

    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    return data.xpos.copy()


def failing_pendulum(fail_at: int = 3, episode: int = 2):
    """InvertedPendulum-v5 whose episode seeded ``episode`` (the default seed 0) raises at step ``fail_at``."""
    import gymnasium

    class Failing(gymnasium.Wrapper):
        seed, t = None, 0

        def reset(self, **kw):
            if kw.get("seed") is not None:
                self.seed = kw["seed"]
            self.t = 0
            return self.env.reset(**kw)

        def step(self, action):
            self.t += 1
            if self.seed == episode and self.t == fail_at:
                raise RuntimeError(f"pendulum exploded at t={self.t}")
            return self.env.step(action)

    return Failing(gymnasium.make("InvertedPendulum-v5"))


def watching_pendulum_policy(folder: str):
    """A policy for InvertedPendulum that lists ``folder`` at every step (see tests/helpers/badfactories.py)."""
    import os

    import torch

    seen = WATCHED.setdefault(folder, [])

    def act(observation):
        seen.append(sorted(os.listdir(folder)))
        return torch.zeros(1)
    return act


WATCHED: dict[str, list] = {}


def dm_replay(folder, task: str, steps: int):
    """A replay page of the dm_control ``task`` (``"dog-walk"``) under a linear policy, with qpos kept: the page's
    path, the run's result, the task's MjModel and the episode's states."""
    from dm_control import suite

    from torchrl_render import RenderConfig, render_policy
    from torchrl_render.envs.mujoco_state import episode_states

    out = folder / f"{task}.html"
    result = render_policy(RenderConfig(policy="helpers.policies:dm_linear_policy", env=f"dm_control/{task}",
                                        max_steps=steps, out=str(out), mujoco_qpos_key="qpos"))
    domain, _, name = task.partition("-")
    return out, result, suite.load(domain, name).physics.model.ptr, episode_states(result.trajectories[0], "qpos")
