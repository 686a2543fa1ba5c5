"""Shared test set-up: headless GL before anything imports mujoco, and test helpers on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from torchrl_render.gl import ensure_headless_gl  # noqa: E402 - must run before anything imports mujoco

ensure_headless_gl()
