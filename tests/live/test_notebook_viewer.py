"""The 3-D viewer in notebooks: the executed ipynb report holds it per episode, beside the video, in a
sandboxed srcdoc iframe that works in Chromium; RenderResult's inline HTML shows an html replay too."""

from __future__ import annotations

import html
import re

import nbformat
import pytest

from torchrl_render import RenderConfig, render_policy

from helpers.browser import needs_browser, open_page

IFRAME = re.compile(r'<iframe class="torchrl-render-replay" sandbox="allow-scripts"[^>]*srcdoc="([^"]*)"')


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("nb") / "report.ipynb"
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", num_trajs=2,
                                        max_steps=8, width=64, height=64, out=str(out),
                                        notebook_render_backend="mujoco-wasm", notebook_preview=False))
    return out, result


def _episode_html(out, episode):
    nb = nbformat.read(out, as_version=4)
    cell = next(c for c in nb.cells if c.id == f"episode-{episode}")
    return cell.outputs[0]["data"]["text/html"]


@pytest.mark.slow
def test_executed_report_holds_the_viewer_beside_each_video(report):
    out, result = report
    assert result.artifacts[0].info["executed"] is True
    for episode in (0, 1):
        text = _episode_html(out, episode)
        assert "<video" in text and len(IFRAME.findall(text)) == 1
        page = html.unescape(IFRAME.search(text).group(1))
        assert "default-src 'none'" in page and "window.replay" in page


@needs_browser
@pytest.mark.slow
def test_notebook_viewer_plays_in_a_sandboxed_iframe(report):
    out, result = report
    text = _episode_html(out, 1)
    with open_page(None, outer=text) as (page, _):
        assert page.js("replay.episodes") == [1]
        assert page.js("replay.numFrames(1)") == result.trajectories[1].shape[0] + 1
        assert len(page.js("replay.seek(3), replay.bodyPositions()")) == 3  # world, cart, pole
        assert page.errors == [] and page.blocked == []


@pytest.mark.slow
def test_auto_shows_the_viewer_for_mujoco_envs_only(tmp_path):
    common = {"max_steps": 3, "width": 32, "height": 32, "execute_notebook": False, "notebook_preview": False}
    render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5",
                               out=str(tmp_path / "a.ipynb"),
                               **common))
    render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                               out=str(tmp_path / "b.ipynb"),
                               from_pixels=True, **common))
    assert "torchrl-render-replay" in (tmp_path / "a.ipynb").read_text()
    assert "torchrl-render-replay" not in (tmp_path / "b.ipynb").read_text()


def test_static_backend_embeds_videos_only(tmp_path):
    out = tmp_path / "r.ipynb"
    render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=3,
                               width=32,
                               height=32, out=str(out), notebook_render_backend="static", execute_notebook=False,
                               notebook_preview=False))
    assert "torchrl-render-replay" not in out.read_text()


def test_result_display_shows_an_html_replay(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=3,
                                        out=str(tmp_path / "r.html")))
    shown = result._repr_html_()
    assert len(IFRAME.findall(shown)) == 1 and "mean return" in shown


@pytest.mark.slow
def test_mujoco_wasm_with_a_video_format_writes_the_replay_beside_it(tmp_path):
    result = render_policy(RenderConfig(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5",
                                        max_steps=4, width=32,
                                        height=32, out=str(tmp_path / "run.mp4"),
                                        notebook_render_backend="mujoco_wasm"))
    assert [a.format for a in result.artifacts] == ["mp4", "html"]
    assert result.artifacts[1].path == tmp_path / "run_replay.html" and result.artifacts[1].num_frames == 5
    shown = result._repr_html_()
    assert "<video" in shown and len(IFRAME.findall(shown)) == 1
    assert result.metrics["per_episode"][0]["num_frames"] == 5  # the video's frames, not counted twice


@needs_browser
@pytest.mark.slow
def test_a_viewer_below_the_fold_starts_when_scrolled_into_view(report):
    from helpers.browser import browser

    out, result = report
    text = _episode_html(out, 0)
    with browser(900, 600) as context:
        top = context.new_page()
        top.set_content(f'<!DOCTYPE html><html><body><div id="pad" style="height:3000px"></div>{text}</body></html>')
        top.wait_for_timeout(1500)
        frame = next(f for f in top.frames if f != top.main_frame)
        assert frame.evaluate("() => window.replay.timing.decoded_ms === undefined")  # not started
        top.evaluate("document.querySelector('iframe').scrollIntoView()")
        frame.evaluate("() => window.replay.ready.then(() => true)")
        assert frame.evaluate("() => window.replay.numFrames(0)") == result.trajectories[0].shape[0] + 1
