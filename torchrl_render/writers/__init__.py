"""The writer table: format name -> lazy writer class. One line per format.

Tests, CLI choices, ``--list-formats`` and the docs' format table all read it.
"""

from __future__ import annotations

from ..registry import Entry, Registry

__all__ = ["WRITERS"]

WRITERS = Registry("format", {
    "mp4": Entry("torchrl_render.writers.mp4:Mp4Writer", suffixes=(".mp4",), extra="av==18.1.0",
                 description="H.264 video (yuv420p, faststart): plays in every browser"),
    "gif": Entry("torchrl_render.writers.gif:GifWriter", suffixes=(".gif",), extra="pillow",
                 description="animated GIF, streamed frame by frame"),
    "frames": Entry("torchrl_render.writers.png:PngWriter", directory=True, extra="pillow",
                    description="a folder of PNG files, one per frame"),
    "npz": Entry("torchrl_render.writers.npz:NpzWriter", suffixes=(".npz",), needs_frames=False,
                 description="numpy arrays per trajectory: observations, actions, rewards, dones (+ frames)"),
    "jsonl": Entry("torchrl_render.writers.jsonl:JsonlWriter", suffixes=(".jsonl",), needs_frames=False,
                   description="streamed event log: metadata, step, episode and summary lines"),
    "json": Entry("torchrl_render.writers.json:JsonWriter", suffixes=(".json",), needs_frames=False,
                  needs_steps=False, description="metrics only (lerobot-eval's eval_info.json layout): per "
                                                 "episode and aggregated"),
    "ipynb": Entry("torchrl_render.writers.ipynb:IpynbWriter", suffixes=(".ipynb",), extra="av==18.1.0 pillow",
                   description="report notebook: config, metrics, return plot, embedded videos, re-run cell"),
    "html": Entry("torchrl_render.writers.html:HtmlWriter", suffixes=(".html", ".htm"), needs_frames=False,
                  needs_state=True, extra="mujoco==3.17.0",
                  description="offline 3-D replay page (three.js): MuJoCo body poses, timeline, follow camera, charts"),
}, group="torchrl_render.writers")
