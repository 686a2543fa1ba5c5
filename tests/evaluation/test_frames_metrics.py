"""Pure functions: frame normalisation, camera layouts, metrics aggregation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from torchrl_render import ConfigError
from torchrl_render.frames import LAYOUTS, apply_layout, to_uint8_hwc
from torchrl_render.metrics import EpisodeMetrics, aggregate

from helpers.statsref import t975


@pytest.mark.parametrize("frame,expected_pixel", [
    (np.full((4, 6, 3), 7, np.uint8), [7, 7, 7]),
    (np.full((3, 4, 6), 0.5, np.float32), [128, 128, 128]),            # CHW, [0, 1]
    (np.full((4, 6, 3), 200.0, np.float64), [200, 200, 200]),          # floats in [0, 255]
    (np.full((4, 6), 9, np.uint8), [9, 9, 9]),                         # grey 2-D
    (np.full((4, 6, 4), 50, np.uint8), [50, 50, 50]),                  # RGBA
    (np.full((4, 6, 1), 300, np.int64), [255, 255, 255]),              # clipped
    (torch.full((3, 4, 6), 1.0), [255, 255, 255]),                     # torch CHW
    (np.full((4, 6, 3), np.nan, np.float32), [0, 0, 0]),
])
def test_to_uint8_hwc(frame, expected_pixel):
    out = to_uint8_hwc(frame)
    assert out.shape == (4, 6, 3) and out.dtype == np.uint8 and out.flags.c_contiguous
    assert out[0, 0].tolist() == expected_pixel


def test_uint8_hwc_is_not_copied():
    frame = np.zeros((4, 6, 3), np.uint8)
    assert to_uint8_hwc(frame) is frame


@pytest.mark.parametrize("bad", [np.zeros((2, 3, 4, 5)), np.zeros((5, 6, 7))])
def test_bad_frames(bad):
    with pytest.raises(ConfigError):
        to_uint8_hwc(bad)


def test_layouts():
    a = np.full((4, 6, 3), 1, np.uint8)
    b = np.full((2, 3, 3), 2, np.uint8)
    c = np.full((4, 6, 3), 3, np.uint8)
    frames = {"a": a, "b": b, "c": c}
    assert set(apply_layout(frames, "single")) == {"a"}
    assert set(apply_layout(frames, "separate")) == {"a", "b", "c"}
    assert apply_layout(frames, "horizontal")["horizontal"].shape == (4, 18, 3)
    assert apply_layout(frames, "vertical")["vertical"].shape == (12, 6, 3)
    grid = apply_layout(frames, "grid")["grid"]
    assert grid.shape == (8, 12, 3) and grid[4:, 6:].max() == 0 and grid[0, 6, 0] == 2 and grid[3, 7, 0] == 0
    assert set(LAYOUTS) == {"single", "grid", "horizontal", "vertical", "separate"}


def test_aggregates_against_a_hand_computation():
    returns, lengths = [1.0, 2.0, 6.0], [10, 20, 30]
    eps = []
    for i, (r, n) in enumerate(zip(returns, lengths)):
        ep = EpisodeMetrics(episode_ix=i, seed=i)
        for _ in range(n - 1):
            ep.add(0.0)
        ep.add(r, success=(i == 2))
        eps.append(ep.to_dict())
    agg = aggregate(eps, eval_s=6.0)
    assert agg["n_episodes"] == 3 and agg["avg_sum_reward"] == pytest.approx(3.0)
    assert agg["std_sum_reward"] == pytest.approx(math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 3))
    sample_sd = math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 2)
    half = t975(2) * sample_sd / math.sqrt(3)                      # Student t, 2 dof (4.3027)
    assert agg["ci95_sum_reward"] == pytest.approx([3 - half, 3 + half])
    assert (agg["min_sum_reward"], agg["median_sum_reward"], agg["max_sum_reward"]) == (1.0, 2.0, 6.0)
    assert agg["avg_max_reward"] == pytest.approx(3.0) and agg["pc_success"] == pytest.approx(100 / 3)
    assert agg["avg_length"] == 20 and agg["eval_ep_s"] == 2.0
    assert (agg["return_mean"], agg["len_min"], agg["len_max"]) == (agg["avg_sum_reward"], 10, 30)


def test_success_unknown_is_none():
    ep = EpisodeMetrics(0, 0)
    ep.add(1.0)
    assert aggregate([ep.to_dict()], 1.0)["pc_success"] is None
