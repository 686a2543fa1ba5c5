"""The report notebook: cells, execution in all three modes, embedded videos that decode, the size cap."""

from __future__ import annotations

import base64
import io
import json

import nbformat
import numpy as np
import pytest
from PIL import Image

from torchrl_render import ConfigError, OutputExistsError, RenderConfig, WriterError, render_policy
from torchrl_render.data import FrameBundle
from torchrl_render.writers.ipynb import IpynbWriter

from helpers.mediaprobe import decode_embedded, probe_mp4, x264_subme

HEAD = ["title", "metrics", "config", "assets", "cfg"]
SAVED = HEAD + ["returns-plot", "episodes", "episode-0", "episode-1", "rerun-heading", "rerun-kwargs", "rerun"]
LIVE = HEAD + ["rerun-heading", "live-rollout", "live-show", "live-plot"]
BOTH = HEAD + ["returns-plot", "episodes", "episode-0", "episode-1", "rerun-heading", "live-rollout", "live-show",
               "live-plot"]


def _run(tmp_path, **kw):
    kw.setdefault("out", tmp_path / "rep.ipynb")
    kw.setdefault("policy", "helpers.tinyenv:make_policy")
    kw.setdefault("env", "helpers.tinyenv:make_env")
    return render_policy(RenderConfig(from_pixels=True, num_trajs=2, **kw))


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cells(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return nb, {c.id: c for c in nb.cells}


def _episode(metrics_ix, n):
    return {"episode_ix": metrics_ix, "seed": metrics_ix, "sum_reward": 1.5, "max_reward": 1.0, "length": n - 1,
            "success": None, "terminated": True, "truncated": False, "wall_s": 0.1, "num_frames": n}


def _feed(writer, traj, n, noise=False, size=64):
    rng = np.random.default_rng(traj)
    for step in range(n):
        frame = (rng.integers(0, 256, (size, size, 3), dtype=np.uint8) if noise
                 else np.full((size, size, 3), 8 * step, np.uint8))
        writer.write(FrameBundle({"default": frame}, step, traj))
    writer.on_episode(_episode(traj, n))


@pytest.mark.slow
def test_saved_report_executed(tmp_path):
    result = _run(tmp_path, seed=3)
    _, cells = _cells(tmp_path / "rep.ipynb")
    assert list(cells) == SAVED == result.artifacts[0].info["cells"]
    frames = [e["num_frames"] for e in result.metrics["per_episode"]]
    for i in range(2):
        video, preview = cells[f"episode-{i}"].outputs
        assert decode_embedded(video["data"]["text/html"]) == [frames[i]]
        png = base64.b64decode(preview["data"]["image/png"])
        assert b"acTL" in png and Image.open(io.BytesIO(png)).n_frames > 1          # an animated PNG
        assert cells[f"episode-{i}"].metadata["tags"] == ["skip-execution"]
    plot = cells["returns-plot"]
    assert plot.execution_count is not None and "image/png" in plot.outputs[0]["data"]
    assert cells["rerun"].outputs == [] and cells["rerun"].execution_count is None  # left for the reader
    assert "| episode | seed | return |" in cells["metrics"].source
    assert "--notebook-rollout-mode" not in cells["title"].source and "torchrl-render --policy" in cells["title"].source
    assert cells["assets"].outputs[0]["data"]["text/plain"] == "2"  # executed with the saved rollouts in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "rep.ipynb", "rep.ipynb.metadata.json"]
    assets = tmp_path / "rep"  # torchrl.render's asset folder
    assert sorted(str(p.relative_to(assets)) for p in assets.rglob("*")) == [
        "config.json", "metadata.json", "rollouts", "rollouts/traj_000.pt", "rollouts/traj_001.pt"]
    assert json.loads((assets / "metadata.json").read_text()) == result.metadata
    for i, td in enumerate(result.trajectories):
        import torch

        saved = torch.load(assets / "rollouts" / f"traj_{i:03d}.pt", weights_only=False)
        assert torch.equal(saved["next", "reward"], td["next", "reward"])
    info = result.artifacts[0].info
    assert info["executed"] and [v["embedded"] for v in info["videos"]] == [True, True] and info["side_files"] == []


def test_size_cap_links_the_mp4_beside_and_says_so(tmp_path):
    writer = IpynbWriter(tmp_path / "rep.ipynb", execute=False, embed_limit_bytes=20_000)
    _feed(writer, 0, 3)                              # flat frames: a tiny video that fits
    _feed(writer, 1, 12, noise=True)                 # noise: far over 20 kB
    art = writer.close()
    nb, cells = _cells(art.path)
    assert [v["embedded"] for v in art.info["videos"]] == [True, False]
    beside = tmp_path / "rep_ep1.mp4"
    assert art.info["side_files"] == [str(beside)] and art.info["videos"][1]["path"] == str(beside)
    assert probe_mp4(beside)["frames"] == 12
    html_text = cells["episode-1"].outputs[0]["data"]["text/html"]
    assert "base64" not in html_text and 'src="rep_ep1.mp4"' in html_text and "Not embedded" in html_text
    assert decode_embedded(cells["episode-0"].outputs[0]["data"]["text/html"]) == [3]
    assert all(c.execution_count is None for c in nb.cells if c.cell_type == "code")   # --no-execute
    assert cells["returns-plot"].outputs == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "rep.ipynb", "rep_ep1.mp4"]


def test_video_preset_reaches_the_episode_videos(tmp_path):
    writer = IpynbWriter(tmp_path / "rep.ipynb", execute=False, embed_limit_bytes=0, preset="ultrafast")
    _feed(writer, 0, 4, noise=True)
    writer.close()
    assert x264_subme(tmp_path / "rep_ep0.mp4") == 0  # the linked video; veryfast would record subme=2


def test_abort_leaves_nothing(tmp_path):
    writer = IpynbWriter(tmp_path / "rep.ipynb", execute=False, embed_limit_bytes=0)
    _feed(writer, 0, 3)
    writer.write(FrameBundle({"default": np.zeros((64, 64, 3), np.uint8)}, 0, 1))
    writer.abort()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_live_mode_rolls_out_nothing_and_its_cells_do(tmp_path):
    """As torchrl.render: a live notebook is written at once (no checkpoint read, no env, no kernel); its cells
    roll the policy out when run (here in a kernel), shown live on notebook_viewer_port."""
    from torchrl_render.notebook.kernel import execute_notebook

    port = _free_port()
    result = _run(tmp_path, notebook_rollout_mode="live", max_steps=3, notebook_viewer_port=port)
    nb, cells = _cells(tmp_path / "rep.ipynb")
    assert list(cells) == LIVE and result.artifacts[0].num_frames == 0 and result.metrics["per_episode"] == []
    assert not result.artifacts[0].info["executed"] and all(c.get("outputs") in ([], None) for c in nb.cells)
    meta = json.loads((tmp_path / "rep" / "metadata.json").read_text())
    assert (meta["num_trajs"], meta["requested_num_trajs"], meta["config"]["notebook_rollout_mode"]) == (0, 2, "live")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "rep.ipynb", "rep.ipynb.metadata.json"]
    assert not (tmp_path / "rep" / "rollouts").exists()
    assert f"'live': {port}" in cells["live-rollout"].source
    execute_notebook(nb, tmp_path, timeout=600)
    cells = {c.id: c for c in nb.cells}
    displayed = [o for o in cells["live-rollout"].outputs if o["output_type"] == "display_data"]
    assert [o["data"]["text/html"] for o in displayed] == \
        ["<p><i>The live view ended with the run (2 episode(s) done).</i></p>"]
    shown = cells["live-show"].outputs[-1]
    assert shown["output_type"] == "execute_result"                 # live_result as the last line
    assert decode_embedded(shown["data"]["text/html"]) == [8]      # 2 episodes x (3 steps + 1)
    assert "torchrl-render-episodes" in shown["data"]["text/html"]
    assert "image/png" in cells["live-plot"].outputs[0]["data"]
    assert probe_mp4(tmp_path / "rep_live.mp4")["frames"] == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "rep.ipynb", "rep.ipynb.metadata.json",
                                                          "rep_live.mp4", "rep_live.mp4.metadata.json"]


@pytest.mark.slow
def test_both_mode_executed(tmp_path):
    result = _run(tmp_path, notebook_rollout_mode="both", max_steps=4, seed=7)
    _, cells = _cells(tmp_path / "rep.ipynb")
    assert list(cells) == BOTH
    assert decode_embedded(cells["episode-1"].outputs[0]["data"]["text/html"]) == [5]
    assert decode_embedded(cells["live-show"].outputs[-1]["data"]["text/html"]) == [10]
    live = json.loads((tmp_path / "rep_live.mp4.metadata.json").read_text())
    assert [e["sum_reward"] for e in live["metrics"]["per_episode"]] == \
        [e["sum_reward"] for e in result.metrics["per_episode"]]           # same seeds, same episodes
    assert cells["returns-plot"].outputs and cells["live-plot"].outputs
    assert result.artifacts[0].info["side_files"] == [str(tmp_path / "rep_live.mp4"),
                                                      str(tmp_path / "rep_live.mp4.metadata.json")]


def test_live_mode_needs_importable_factories(tmp_path):
    from helpers.tinyenv import make_env

    cfg = RenderConfig(policy="p:m", env=lambda: make_env(pixels=True), notebook_rollout_mode="live",
                       out=tmp_path / "rep.ipynb")
    with pytest.raises(ConfigError, match="needs an importable env factory.*module:object"):
        IpynbWriter.check(cfg.out, cfg)
    # through the pipeline (writers on the calling thread, so the error comes at the first step)
    with pytest.raises(ConfigError, match="needs an importable env factory"):
        _run(tmp_path, env=cfg.env, notebook_rollout_mode="live", max_steps=2, background_encode=False)
    assert list(tmp_path.iterdir()) == []


def test_existing_side_file_is_refused_before_writing(tmp_path):
    (tmp_path / "rep_ep1.mp4").write_bytes(b"old")
    cfg = RenderConfig(policy="p:m", env="e:m", num_trajs=2, out=tmp_path / "rep.ipynb")
    with pytest.raises(OutputExistsError, match="rep_ep1.mp4.*already exists.*--overwrite"):
        IpynbWriter.check(cfg.out, cfg)
    IpynbWriter.check(cfg.out, RenderConfig(policy="p:m", env="e:m", num_trajs=1, out=cfg.out))  # not rendered
    with pytest.raises(OutputExistsError, match="rep_ep1.mp4.*already exists"):
        _run(tmp_path, max_steps=2, background_encode=False)
    assert [p.name for p in tmp_path.iterdir()] == ["rep_ep1.mp4"]
    assert (tmp_path / "rep_ep1.mp4").read_bytes() == b"old"


@pytest.mark.slow
def test_execution_failure_names_the_cell_and_leaves_nothing(tmp_path):
    config = {"policy": "p:m", "env": "e:m", "fps": -1.0}                 # the rebuilt config is invalid
    writer = IpynbWriter(tmp_path / "rep.ipynb", config=config, mode="both", search_path=[])
    _feed(writer, 0, 3)
    with pytest.raises(WriterError, match="failed in cell 'cfg': ConfigError: fps must be a positive number"
                                          ".*--no-execute"):
        writer.close()
    assert list(tmp_path.iterdir()) == []
