"""A sweep with --render-select: the blocks only measure; each complete cell films its chosen episodes
(a failure gallery per checkpoint), each re-run checked against the recorded numbers; the report shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchrl_render import SweepConfig, sweep
from torchrl_render.sweep.store import read_records

from helpers import sweep_envs as sweepenv
from helpers.mediaprobe import probe_mp4


@pytest.mark.slow
def test_each_cell_films_its_worst_episodes_and_the_report_shows_them(tmp_path):
    ckpts = sweepenv.write_checkpoints(tmp_path, steps=(10, 30))
    result = sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["tiny=helpers.tinyenv:make_env"], out=tmp_path / "sw",
                               workers=1, block_size=3, report=True,
                               base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 5, "seed": 3, "max_steps": 4,
                                     "from_pixels": True, "render_select": ["worst:2"], "policy_batch": "per-env"}))
    assert (result.cells_done, result.episodes) == (2, 10)
    records = read_records(tmp_path / "sw")
    assert not [r for r in records if r.get("kind") == "artifacts" and any(p.endswith(".mp4") for p in r["paths"])]
    galleries = {r["cell"]: r for r in records if r.get("kind") == "gallery"}
    assert len(galleries) == 2
    for cell, gallery in galleries.items():
        eps = sorted((r["metrics"] for r in records if r.get("kind") == "episode" and r["cell"] == cell),
                     key=lambda m: m["episode_ix"])
        worst = sorted(eps, key=lambda m: (m["sum_reward"], m["episode_ix"]))[:2]
        assert [e["episode_ix"] for e in gallery["episodes"]] == sorted(m["episode_ix"] for m in worst)
        for e in gallery["episodes"]:
            assert e["reproduced"] and e["seed"] == 3 + e["episode_ix"] and e["reason"].startswith("worst ")
            assert probe_mp4(e["path"])["frames"] == e["length"] + 1 == e["num_frames"]
    info = json.loads((tmp_path / "sw" / "eval_info.json").read_text())
    assert set(info["galleries"]) == set(galleries)
    page = (tmp_path / "sw" / "report.html").read_text()
    assert page.count("<figure><video") >= 4 and "worst 1 of 2" in page and "Chosen episodes" in page
    # the executed notebook has the same gallery: each chosen episode's film (relative to the folder) and reason
    notebook = json.loads((tmp_path / "sw" / "report.ipynb").read_text())
    cell = next(c for c in notebook["cells"] if c.get("id") == "gallery")
    text = "".join(cell["source"])
    assert "Chosen episodes" in text and text.count("worst 1 of 2") == 2
    for gallery in galleries.values():
        for e in gallery["episodes"]:
            relative = (tmp_path / "sw").resolve()
            assert f'src="{Path(e["path"]).resolve().relative_to(relative)}"' in text
    again = sweep(SweepConfig(ckpt=[str(p) for p in ckpts], env=["tiny=helpers.tinyenv:make_env"], out=tmp_path / "sw",
                              resume=True, report=False, base={"policy": "helpers.tinyenv:make_policy", "num_trajs": 5,
                                                               "seed": 3, "max_steps": 4, "from_pixels": True,
                                                               "render_select": ["worst:2"],
                                                               "policy_batch": "per-env"}))
    assert again.episodes_run == 0
    assert len([r for r in read_records(tmp_path / "sw") if r.get("kind") == "gallery"]) == 2  # filmed once
