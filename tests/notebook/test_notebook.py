"""Inline display: the HTML builders (pure, no kernel), show(), and the display path in a real kernel."""

from __future__ import annotations

import base64

import nbformat
import numpy as np
import pytest

from torchrl_render import ConfigError, RenderConfig, render_policy
from torchrl_render.data import Artifact, FrameBundle, RenderResult
from torchrl_render.notebook import (
    Media,
    artifact_html,
    metrics_html,
    metrics_markdown,
    result_html,
    result_mimebundle,
    show,
    video_html,
)
from torchrl_render.notebook.report import ReportVideo, build_report, equivalent_command
from torchrl_render.writers.gif import GifWriter
from torchrl_render.writers.mp4 import Mp4Writer

from helpers.mediaprobe import decode_embedded

EPISODES = [{"episode_ix": i, "seed": i, "sum_reward": float(i), "max_reward": 1.0, "length": 5 + i, "success": None,
             "terminated": True, "truncated": False, "wall_s": 0.1, "num_frames": 6 + i} for i in range(3)]
METRICS = {"per_episode": EPISODES, "aggregated": {"n_episodes": 3, "avg_sum_reward": 1.0, "std_sum_reward": 0.8}}


def _video(path, n=5, size=(24, 32), noise=False):
    rng = np.random.default_rng(0)
    writer = Mp4Writer(path, fps=10) if path.suffix == ".mp4" else GifWriter(path, fps=10)
    with writer:
        for step in range(n):
            frame = (rng.integers(0, 256, (*size, 3), dtype=np.uint8) if noise
                     else np.full((*size, 3), 40 * step, np.uint8))
            writer.write(FrameBundle({"default": frame}, step, 0))
    return writer.close()


def test_video_html_embeds_a_file_that_decodes(tmp_path):
    _video(tmp_path / "a.mp4", n=7)
    html_text = video_html(tmp_path / "a.mp4", caption="episode <0>")
    assert "<video controls" in html_text and "&lt;0&gt;" in html_text
    assert decode_embedded(html_text) == [7]


def test_video_html_links_over_the_limit_and_says_so(tmp_path, monkeypatch):
    _video(tmp_path / "a.mp4")
    monkeypatch.chdir(tmp_path)
    html_text = video_html(tmp_path / "a.mp4", limit_bytes=10)
    assert "base64" not in html_text and 'src="a.mp4"' in html_text
    assert "Not embedded" in html_text and "over the" in html_text


def test_gif_is_an_image(tmp_path):
    _video(tmp_path / "a.gif")
    assert '<img src="data:image/gif;base64,' in video_html(tmp_path / "a.gif")


def test_artifact_html(tmp_path):
    art = _video(tmp_path / "a.mp4")
    assert decode_embedded(artifact_html(art)) == [5] and decode_embedded(art._repr_html_()) == [5]
    data = Artifact(tmp_path / "run.npz", "npz", 0, {})
    assert "<video" not in artifact_html(data) and "run.npz" in artifact_html(data)


def test_metrics_tables():
    html_text = metrics_html(METRICS)
    assert html_text.count("<tr><td>") == 3 and "mean return" in html_text
    truncated = metrics_html(METRICS, max_rows=2)
    assert "1 more episodes" in truncated and truncated.count("<tr><td>") == 2
    markdown = metrics_markdown(METRICS).splitlines()
    assert markdown[:2] == ["| metric | value |", "|:--|--:|"] and len(markdown) == 2 + 3 + 1 + 2 + 3


def test_result_html_shows_each_video_within_one_budget(tmp_path):
    arts = [_video(tmp_path / f"t{i}.mp4", n=4, noise=True) for i in range(2)]
    result = RenderResult(arts[0].path, [], [a.path for a in arts], {}, ["a note"], [], arts, METRICS)
    assert decode_embedded(result_html(result)) == [4, 4]
    first = arts[0].path.stat().st_size
    partial = result_html(result, limit_bytes=first + 10)           # room for the first video only
    assert decode_embedded(partial) == [4] and "Not embedded" in partial
    assert "1 note(s)" in partial and "<table" in partial
    bundle = result_mimebundle(result)
    assert bundle["text/plain"].startswith("RenderResult(") and "3 episode(s)" in bundle["text/plain"]


def test_result_of_render_policy(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                        from_pixels=True,
                                        out=tmp_path / "run.mp4", num_trajs=2, max_steps=3))
    html_text = result._repr_html_()
    assert decode_embedded(html_text) == [8] and html_text.count("<tr>") >= 3


def test_show_returns_a_media_outside_ipython(tmp_path):
    art = _video(tmp_path / "a.mp4")
    media = show(art)                                                # an Artifact or a path
    assert isinstance(media, Media) and decode_embedded(media._repr_html_()) == [5]
    assert media._repr_mimebundle_()["text/plain"] == f"Media({str(art.path)!r})"
    with pytest.raises(ConfigError, match=r"cannot play.*\(missing\).*result.artifact_path"):
        show(tmp_path / "nope.mp4")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ConfigError, match="not an mp4 or gif"):
        show(tmp_path / "x.txt")


def test_equivalent_command():
    cfg = RenderConfig(policy="m:p", env="Hopper-v5", num_trajs=2, deterministic=False, camera="a,b",
                       env_kwargs={"x": 1})
    assert equivalent_command(cfg.to_dict()) == ("torchrl-render --policy m:p --env Hopper-v5 --num-trajs 2 "
                                                 "--out render.mp4 --camera a,b --stochastic --env-kwargs '{\"x\": 1}'")


HEAD = ["title", "metrics", "config", "assets", "cfg"]  # torchrl.render's first five cells (indices 2 and 4 run)


@pytest.mark.parametrize("mode, ids", [
    ("saved", HEAD + ["returns-plot", "episodes", "episode-0", "episode-2", "rerun-heading", "rerun-kwargs", "rerun"]),
    ("live", HEAD + ["rerun-heading", "live-rollout", "live-show", "live-plot"]),
    ("both", HEAD + ["returns-plot", "episodes", "episode-0", "episode-2", "rerun-heading", "live-rollout",
                     "live-show", "live-plot"]),
])
def test_build_report_cells(mode, ids):
    videos = [ReportVideo(0, "r_ep0.mp4", 3, data=b"abc", preview=b"png"),
              ReportVideo(2, "r_ep2.mp4", 50 * 2**20, metrics=EPISODES[2])]
    config = RenderConfig(policy="m:p", env="e:m").to_dict()
    nb = build_report(config=config, metrics=METRICS, videos=videos if mode != "live" else [], mode=mode,
                      command="torchrl-render --policy m:p", search_path=["/somewhere"])
    nbformat.validate(nb)
    assert [c.id for c in nb.cells] == ids and nb.nbformat == 4 and nb.nbformat_minor >= 5
    namespace: dict = {}
    exec(nb.cells[2].source, namespace)  # torchrl.render's users run cell 2, then cell 4
    exec(nb.cells[4].source, namespace)
    assert namespace["render_config"] == config and namespace["cfg"].to_dict() == config
    if mode == "saved":
        rerun = nb.cells[ids.index("rerun")]
        assert "skip-execution" in rerun.metadata.get("tags", [])
        assert "render_policy(RenderConfig.from_dict(" in rerun.source
        kwargs = nb.cells[ids.index("rerun-kwargs")].source
        assert "env_kwargs = {}" in kwargs and "'/somewhere'" in kwargs
    else:
        live = nb.cells[ids.index("live-rollout")].source
        assert "live_result = collect_rollouts_in_notebook()" in live and "'/somewhere'" in live
        assert "write_render_artifact(live_result, live_config)" in nb.cells[ids.index("live-show")].source
    assert "torchrl-render --policy m:p" in nb.cells[0].source
    if mode != "live":
        embedded, linked = nb.cells[ids.index("episode-0")], nb.cells[ids.index("episode-2")]
        assert embedded.outputs[0]["data"]["text/html"].count("data:video/mp4;base64,YWJj") == 1
        assert embedded.outputs[1]["data"]["image/png"] == base64.b64encode(b"png").decode()
        assert "Not embedded: this video is 50.0 MiB" in linked.outputs[0]["data"]["text/html"]
        assert 'src="r_ep2.mp4"' in linked.outputs[0]["data"]["text/html"] and "show('r_ep2.mp4'" in linked.source
        assert "Episode 2, seed 2, 7 steps, return 2" in linked.outputs[0]["data"]["text/plain"]
        assert "| 2 | 2 | 2 | 7 |" in nb.cells[ids.index("metrics")].source


@pytest.mark.slow
def test_display_path_in_a_real_kernel(tmp_path):
    """show(), an Artifact and a RenderResult as a cell's last line, in an ipykernel via nbclient."""
    from nbformat.v4 import new_code_cell, new_notebook

    from helpers.kernels import notebook_client

    _video(tmp_path / "a.mp4", n=6)
    cells = [
        new_code_cell("from torchrl_render.notebook import show\nshow('a.mp4')"),
        new_code_cell("from torchrl_render.data import Artifact, RenderResult\n"
                      "art = Artifact('a.mp4', 'mp4', 6, {})\nart"),
        new_code_cell(f"RenderResult(art.path, [], [art.path], {{}}, [], [], [art], {METRICS!r})"),
        new_code_cell("import sys\nprint(sorted(m for m in ('torch', 'av', 'PIL') if m in sys.modules))"),
    ]
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}})
    notebook_client(nb, tmp_path).execute()
    shown, art, result, light = (c.outputs for c in nb.cells)
    assert [o["output_type"] for o in shown] == ["display_data"]                 # once, not twice
    assert decode_embedded(shown[0]["data"]["text/html"]) == [6]
    assert art[0]["output_type"] == "execute_result" and decode_embedded(art[0]["data"]["text/html"]) == [6]
    html_text = result[0]["data"]["text/html"]
    assert decode_embedded(html_text) == [6] and "torchrl-render-episodes" in html_text
    assert light[0]["text"].strip() == "[]"                                       # display stays light


@pytest.mark.slow
def test_a_kernel_that_loses_a_cells_outputs_is_replaced(tmp_path):
    """The first kernel drops every IOPub message (as a loaded machine's kernel now and then does for a cell):
    nbclient would keep the cell empty; execute_notebook raises that and runs the notebook again, once."""
    from nbformat.v4 import new_code_cell, new_notebook

    from torchrl_render.notebook.kernel import execute_notebook

    lose = ("import os\nfirst = not os.path.exists('attempts')\nopen('attempts', 'a').write('x')\n"
            "if first:\n    k = get_ipython().kernel\n    send = k.session.send\n"
            "    k.session.send = lambda stream, *a, **kw: (None if stream is k.iopub_socket\n"
            "                                                else send(stream, *a, **kw))\n")
    nb = new_notebook(cells=[new_code_cell(lose), new_code_cell("print('shown')")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    execute_notebook(nb, tmp_path, timeout=120, iopub_timeout=3)
    assert (tmp_path / "attempts").read_text() == "xx"  # two kernels
    assert nb.cells[1].outputs[0]["text"] == "shown\n"
