"""Every user-controlled string that goes into Markdown, HTML or JavaScript is escaped for where it lands.

Property-based (hypothesis): names built from the characters that matter (backticks, fences, line breaks,
``<``, ``&``, quotes, Markdown punctuation, terminal escapes) and known payloads (a fence that closes the
title cell's block and opens raw HTML, ``</script>``, ``<!--``, an ``onerror`` image) go through every writer
of Markdown, HTML and JS: the report notebook (its Markdown cells rendered by a real CommonMark renderer,
markdown-it with raw HTML on, as Jupyter renders them; its code cells parsed by Python), the sweep report's
tables and galleries (as its notebook embeds them), the replay page and the live page (parsed as a browser
tokenises HTML). A name may change the text, never the markup: the tags, attributes and scripts are those a
plain name gives, the name comes back as text, and Python cells hold it only as string constants.
"""

from __future__ import annotations

import ast
import html
import io
import re
import shlex
from html.parser import HTMLParser
from pathlib import Path

import markdown_it
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchrl_render.live.server import live_page
from torchrl_render.notebook.markup import md_code, md_fence, md_text
from torchrl_render.notebook.report import ReportVideo, build_report
from torchrl_render.replay.page import assemble_page
from torchrl_render.sweep.gallery import gallery_html
from torchrl_render.sweep.html import episode_videos, success_table

PAYLOADS = ["\n```\n<script>alert(1)</script>\n```\n", "</script><script>alert(1)</script>", "<!--<script>",
            "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "\n\n<b>raw</b>\n\n", "`` ` ```` ~~~",
            "\x1b]0;title\x07\x1b[2J", "# heading\n---\n", "| a | b |\n|---|---|", "&lt;script&gt;", "1. list",
            "\\`\\<", "\u2028\u2029", "'\"\\", "{{ x }} ${x}"]
CHARS = st.sampled_from(list("`<>&\"'\\*_[]()#!|~-+:/.= \n\r\tab1\x1b\x00") + ["\u00e9", "\u202e"])
NAMES = st.one_of(st.sampled_from(PAYLOADS), st.text(CHARS, min_size=1, max_size=30),
                  st.tuples(st.text(CHARS, max_size=8), st.sampled_from(PAYLOADS), st.text(CHARS, max_size=8))
                  .map("".join)).filter(str.strip)   # not a lambda: hypothesis 6.100 fails to read its source
PLAIN = "plain"


def payloads(test):
    """Every known payload as an explicit example, besides what hypothesis draws."""
    for payload in PAYLOADS:
        test = example(payload)(test)
    return test
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PAGE_SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _Markup(HTMLParser):
    """The tags and attribute names of a document, the text of each element and the scripts' bodies."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, tuple(sorted(name for name, _ in attrs))))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self.tags.append(("/" + tag, ()))
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def handle_comment(self, data):
        self.tags.append(("<!--", ()))


def parse(html: str) -> _Markup:
    parser = _Markup()
    parser.feed(html)
    parser.close()
    return parser


def render(markdown: str) -> str:
    return markdown_it.MarkdownIt("commonmark", {"html": True}).render(markdown)


def squash(text: str) -> str:
    """What survives any renderer: no whitespace, NUL read as U+FFFD (CommonMark's rule), then dropped."""
    return re.sub(r"[\s\x00\ufffd]+", "", text)


# -- the escaping functions themselves -----------------------------------------------------------------------


@SETTINGS
@given(NAMES)
@payloads
def test_md_text_renders_as_exactly_its_text(name):
    if not squash(name):
        return  # only line breaks: nothing to show
    out = parse(render(md_text(name)))
    assert [t for t, _ in out.tags] == ["p", "/p"]
    assert squash("".join(out.text)) == squash(name)


@SETTINGS
@given(NAMES)
@payloads
def test_md_code_renders_as_one_code_span_of_its_text(name):
    out = parse(render(md_code(name)))
    assert [t for t, _ in out.tags] == ["p", "code", "/code", "/p"]
    assert squash("".join(out.text)) == squash(name)


@SETTINGS
@given(NAMES)
@payloads
def test_md_fence_renders_as_one_block_holding_its_text_verbatim(name):
    text = name.replace("\x00", "")
    page = render(md_fence(text, "bash"))
    assert [t for t, _ in parse(page).tags] == ["pre", "code", "/code", "/pre"]
    inside = re.fullmatch(r'<pre><code class="language-bash">(.*)</code></pre>\n', page, re.S)
    expected = text.replace("\r\n", "\n").replace("\r", "\n")
    assert inside is not None and html.unescape(inside[1]) == expected + "\n"


# -- the report notebook ---------------------------------------------------------------------------------------


def _report(name, title=None):
    from torchrl_render import RenderConfig

    config = RenderConfig(policy=f"{name}.py:make", env=name, out="report.ipynb").to_dict()  # out is checked
    metrics = {"per_episode": [{"episode_ix": 0, "sum_reward": 1.0, "length": 3, "seed": 0}],
               "aggregated": {"n_episodes": 1, "avg_sum_reward": 1.0}}
    videos = [ReportVideo(0, f"{name}.mp4", 3, data=b"abc", metrics=metrics["per_episode"][0])]
    return build_report(config=config, metrics=metrics, videos=videos, mode="both", title=title,
                        command=shlex.join(["torchrl-render", "--env", name, "--out", f"{name}.ipynb"]),
                        live_out=f"{name}.mp4", search_path=[f"/tmp/{name}"])


def _shape(nb):
    """Per cell: the markup of its rendered Markdown, or its Python with every constant blanked, and the markup
    of its HTML outputs."""
    shape = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            shape.append(parse(render(cell.source)).tags)
        else:
            tree = ast.parse(cell.source)  # a name never breaks the code
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant):
                    node.value = None
            shape.append(ast.dump(tree))
        for output in cell.get("outputs", []):
            page = output.get("data", {}).get("text/html")
            if page:
                shape.append(parse("".join(page)).tags)
    return shape


BASE = None


@SETTINGS
@given(NAMES)
@payloads
def test_a_name_changes_the_report_notebooks_text_never_its_markup(name):
    global BASE
    BASE = BASE or (_shape(_report(PLAIN)), _shape(_report(PLAIN, title=PLAIN)))
    nb = _report(name)
    assert _shape(nb) == BASE[0]
    title = parse(render(nb.cells[0].source))
    assert squash(name) in squash("".join(title.text))   # shown, escaped, not dropped
    fence = re.search(r"<pre><code[^>]*>(.*?)</code></pre>", render(nb.cells[0].source), re.S)
    assert fence is not None
    assert _shape(_report(name, title=name)) == BASE[1]


# -- the sweep report's tables and galleries -------------------------------------------------------------------


def _sweep_info(name):
    cell = {"cell": "c0", "status": "done", "n_episodes": 2, "pc_success": 50.0, "avg_sum_reward": 1.5,
            "ci95_sum_reward": [1.0, 2.0], "iqm_sum_reward": 1.5, "video_paths": ["videos/c0.mp4"]}
    return {"per_task": [{"task": name}],
            "per_checkpoint": [{"run": name, "checkpoint": f"/ckpts/{name.replace('/', '_')}.pt", "step": 10,
                                "per_task": {name: cell}}],
            "galleries": {"c0": [{"path": "videos/c0_ep1.mp4", "episode_ix": 1, "seed": 3, "reason": "worst",
                                  "sum_reward": 0.5, "length": 4, "reproduced": True}]},
            "progress": {"done": 1, "cells": 1, "failed": 0, "episodes": 2, "episodes_total": 2}}


@SETTINGS
@given(NAMES)
@payloads
def test_a_name_changes_the_sweep_reports_text_never_its_markup(name):
    from torchrl_render.sweep.notebook import build_notebook

    for build in (success_table, episode_videos, gallery_html):  # as report.html has them
        named = parse(build(_sweep_info(name)))
        assert named.tags == parse(build(_sweep_info(PLAIN))).tags
        assert squash(name) in squash("".join(named.text))
    notebooks = [build_notebook(Path("/tmp/sweep"), _sweep_info(n)) for n in (PLAIN, name)]   # as its notebook
    plain, named = ([parse(render(c.source)).tags for c in nb.cells if c.cell_type == "markdown"] for nb in notebooks)
    assert named == plain


# -- the pages -------------------------------------------------------------------------------------------------


def _replay(name):
    out = io.StringIO()
    head = {"title": name, "fps": 30, "facts": {"env": name, "policy": name}, "nbody": 0}
    episodes = [{"episode_ix": 0, "frames": 0, "chunks": 0, "metrics": {"task": name}}]
    assemble_page(out, head, {"name": name, "bodies": []}, episodes, [])
    return out.getvalue()


@PAGE_SETTINGS
@given(NAMES)
@payloads
def test_a_name_changes_the_replay_pages_data_never_its_markup(name):
    import json

    plain, named = parse(_replay(PLAIN)), parse(_replay(name))
    assert named.tags == plain.tags and len(named.scripts) == len(plain.scripts)
    assert [len(s) for s in named.scripts[3:]] == [len(s) for s in plain.scripts[3:]]   # three.js and the app
    head = json.loads(named.scripts[0])   # the data scripts read back whole, the name as it was
    assert head["title"] == name and head["facts"]["env"] == name
    assert json.loads(named.scripts[1])["name"] == name
    assert json.loads(named.scripts[2])[0]["task"] == name


@PAGE_SETTINGS
@given(NAMES)
@payloads
def test_a_title_changes_the_live_pages_text_never_its_markup(name):
    plain, named = parse(live_page(PLAIN)), parse(live_page(name))
    assert named.tags == plain.tags and [len(s) for s in named.scripts] == [len(s) for s in plain.scripts]
    assert squash(name) in squash("".join(named.text))
