"""Claims of the docs that a block cannot show: figures with one source, keys that appear only sometimes."""

from __future__ import annotations

import re

import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.config import RENDER_QUALITY_SPEEDUP

from helpers.paths import ROOT

TEXTS = {name: (ROOT / name).read_text(encoding="utf-8") for name in
         ("README.md", "docs/user_guide.md", "docs/troubleshooting.md", "docs/cli.md", "docs/formats.md")}


def test_render_quality_speed_ups_are_quoted_from_one_source():
    """--help, the README, troubleshooting and the user guide's table give RENDER_QUALITY_SPEEDUP's figures."""
    balanced, fast = RENDER_QUALITY_SPEEDUP["balanced"], RENDER_QUALITY_SPEEDUP["fast"]
    for name in ("README.md", "docs/troubleshooting.md", "docs/cli.md"):
        text = " ".join(TEXTS[name].split())
        assert f"about {balanced}x" in text and f"about {fast}x" in text, name
    rows = dict(re.findall(r"^\s*\| `(balanced|fast)` \|.*\| ([\d.]+) \|$", TEXTS["docs/user_guide.md"], re.M))
    assert rows == {"balanced": str(balanced), "fast": str(fast)}
    for name, text in TEXTS.items():  # no other figure for the presets anywhere
        assert not re.search(r"(~|about )(3|9|10)x\b", text), name


@pytest.mark.slow
def test_success_interval_and_reward_fn_spread_are_documented_as_conditional(tmp_path):
    """ci95_success needs an env that reports success, std_sum_reward_fn a --reward-fn; the docs say so."""
    result = render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                        num_trajs=2, max_steps=3, out=tmp_path / "run.json"))
    aggregated = result.metrics["aggregated"]
    assert "ci95_success" not in aggregated and "std_sum_reward_fn" not in aggregated
    assert "avg_sum_reward" in aggregated and "std_sum_reward" in aggregated
    guide = " ".join(TEXTS["docs/user_guide.md"].split())
    assert "`ci95_success` when some episode reports success" in guide
    assert "`avg_sum_reward_fn` and `std_sum_reward_fn` with `--reward-fn`" in guide
    assert "`ci95_success` (Wilson; only when some episode reports success)" in " ".join(
        TEXTS["docs/formats.md"].split())


@pytest.mark.slow
def test_html_with_several_gymnasium_envs_works_as_formats_md_says(tmp_path):
    """formats.md: html with --num-envs > 1 replays gymnasium envs (only a torchrl env of yours is refused)."""
    result = render_policy(RenderConfig(ckpt=ROOT / "examples/inverted_pendulum/policy.pt",
                                        policy=str(ROOT / "examples/inverted_pendulum/policy.py:make_policy"),
                                        env="InvertedPendulum-v5", num_trajs=2, num_envs=2, max_steps=5,
                                        out=tmp_path / "replay.html"))
    assert result.artifact_path.stat().st_size > 100_000 and len(result.metrics["per_episode"]) == 2
    text = " ".join(TEXTS["docs/formats.md"].split())
    assert "With `--num-envs > 1`: gymnasium envs (stepped in this process) replay as with one env." in text
