"""torchrl.render's module path for its live MuJoCo viewer functions: a re-export of
:mod:`torchrl_render.live.notebook_viewer` (served by our live server: no npm, no Vite, no node)."""

from .live.notebook_viewer import (
                                   MujocoStateReader,
                                   MujocoViewer,
                                   display_mujoco_wasm_viewer,
                                   extract_qpos_trajectory,
                                   play_mujoco_wasm_trajectory,
                                   send_mujoco_wasm_qpos,
                                   write_mujoco_wasm_viewer,
)

__all__ = [
                                   "MujocoStateReader",
                                   "MujocoViewer",
                                   "display_mujoco_wasm_viewer",
                                   "extract_qpos_trajectory",
                                   "play_mujoco_wasm_trajectory",
                                   "send_mujoco_wasm_qpos",
                                   "write_mujoco_wasm_viewer",
]
