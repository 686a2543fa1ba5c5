"""Test helper: read an html replay back in Python (its JSON data and decoded pose chunks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from torchrl_render.replay.poses import decode_chunk


def read_data(path: str | Path) -> dict:
    text = Path(path).read_text(encoding="utf-8")
    out = {}
    for name in ("head", "scene", "episodes"):
        found = re.search(rf'<script type="application/json" id="replay-{name}">(.*?)</script>', text, re.S)
        out[name] = json.loads(found.group(1))
    return out


def episode_arrays(path: str | Path) -> dict[int, dict[str, np.ndarray]]:
    """episode_ix -> {"xpos", "xquat", "reward", "return"}, all frames."""
    data = read_data(path)
    nbody = data["head"]["nbody"]
    out = {}
    for ep in data["episodes"]:
        parts = [decode_chunk(c, nbody) for c in ep["chunks"]]
        out[ep["episode_ix"]] = {k: np.concatenate([p[i] for p in parts])
                                 for i, k in enumerate(("xpos", "xquat", "reward", "return"))}
    return out
