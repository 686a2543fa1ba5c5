"""A gymnasium MuJoCo env with a mocap body, as Fetch's gripper target: the mocap body is moved by the env
every step (a weld pulls a free "gripper" body after it), so its pose is not in qpos."""

from __future__ import annotations

import gymnasium
import numpy as np

MOCAP_XML = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 .1" rgba=".3 .3 .3 1"/>
    <body name="target" mocap="true" pos=".5 0 .5">
      <geom type="sphere" size=".04" contype="0" conaffinity="0" rgba="1 0 0 .5"/>
    </body>
    <body name="gripper" pos=".5 0 .5"><freejoint/><geom type="box" size=".05 .05 .05" mass=".1"/></body>
  </worldbody>
  <equality><weld body1="target" body2="gripper"/></equality>
</mujoco>
"""


class MocapEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

    def __init__(self, render_mode: str | None = None):
        import mujoco

        self.model = mujoco.MjModel.from_xml_string(MOCAP_XML)
        self.data = mujoco.MjData(self.model)
        self.render_mode = render_mode
        self.action_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.t = 0

    def _obs(self):
        return self.data.mocap_pos[0].astype(np.float32)

    def reset(self, *, seed=None, options=None):
        import mujoco

        super().reset(seed=seed)
        mujoco.mj_resetData(self.model, self.data)
        mujoco.mj_forward(self.model, self.data)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        import mujoco

        self.t += 1
        self.data.mocap_pos[0] = [0.5 + 0.01 * self.t, 0.005 * self.t, 0.5]  # the target sweeps 0.1 m in 10 steps
        angle = 0.05 * self.t
        self.data.mocap_quat[0] = [np.cos(angle / 2), 0, 0, np.sin(angle / 2)]
        mujoco.mj_step(self.model, self.data)
        return self._obs(), 0.0, False, False, {}


def make_env(render_mode: str | None = None):
    return MocapEnv(render_mode=render_mode)
