"""torchrl.render's ``Literal`` types, with our choices (a superset of theirs). No heavy import.

Each type lists every value that :class:`~torchrl_render.RenderConfig` accepts for its field, so a
type checker accepts code written against ``torchrl.render`` (whose choices are all here) and ours.
A test keeps each one equal to the registry or the config's choices.

Example:
    >>> from typing import get_args
    >>> "html" in get_args(RenderFormat), "isaaclab" in get_args(EnvBackendName)
    (True, True)
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CameraLayout", "EnvBackendName", "ExplorationMode", "NotebookRenderBackendName", "NotebookRolloutMode",
           "RenderBackendName", "RenderFormat"]

#: Artifact formats (``torchrl_render.writers.WRITERS``): torchrl.render's six plus ``json`` and ``html``.
RenderFormat = Literal["ipynb", "mp4", "gif", "frames", "npz", "jsonl", "json", "html"]
#: How several cameras are combined.
CameraLayout = Literal["single", "grid", "horizontal", "vertical", "separate"]
#: Where frames come from (``torchrl_render.backends.BACKENDS``): torchrl.render's four plus ``mujoco``.
RenderBackendName = Literal["auto", "pixels", "env", "mujoco", "null"]
#: The notebook's viewer (``mujoco-wasm`` is an alias of ``mujoco_wasm``).
NotebookRenderBackendName = Literal["auto", "static", "mujoco_wasm", "mujoco-wasm"]
#: When a notebook's rollouts are collected.
NotebookRolloutMode = Literal["saved", "live", "both"]
#: How the env factory's result is wrapped.
EnvBackendName = Literal["auto", "torchrl", "gym", "gymnasium", "mujoco", "dm_control", "isaaclab"]
#: torchrl's exploration types.
ExplorationMode = Literal["deterministic", "mode", "mean", "random"]
