"""Every Python block and shell command of README.md, docs/*.md and examples/README.md, run as a reader runs them.

Blocks are found with sybil's markdown lexer and run in document order, one workspace per document (a temporary
folder holding a copy of examples/ and the files the docs' placeholders name: ``policy.pt``, ``p.pt``,
``mypkg.policy:make``, ``m:make``, ``model.xml``, ``runs/eval_rollouts``, ...; ``workspace.py`` builds it).

- ```` ```python ````: executed in one namespace per document, in the workspace. A block whose first line is
  ``# name.py`` is that file's text: it is written into the workspace (and compiled), for later blocks to use.
- ```` ```bash ```` (and ``sh``, ``shell``; an untagged block whose first line is a command): run by bash with
  ``-e``, in the workspace, with ``python`` and ``torchrl-render`` on PATH being ``shrink.py``'s shims, which
  shorten long runs (``TORCHRL_RENDER_DOCS_SHRINK``; the docs never show it).
- ```` ```console ````: ``$ command`` lines, each followed by the output it prints (stdout and stderr, as a
  terminal shows them), compared line by line; a line ``...`` stands for any lines, ``...`` in a line for any
  text, a run of spaces for any run of spaces. Numbers are compared exactly unless an ``<!-- output: numbers
  within N% -->`` comment stands before the block (the docs then say why, beside it).
- ```` ```text ````, ```` ```json ````, and untagged blocks that are no command (outputs, folder trees,
  synopses with ``[options]``): shown, not run.
- ``<!-- skip: next "why" -->`` before a block skips it, with the reason, in the test report.

Shell blocks get a real X server (Xvfb, as for a reader at a desktop), so ``--viewer`` opens its window there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import SkipTest

import pytest
from sybil import Document, Region
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer

from helpers.paths import ROOT

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shrink
import workspace

DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")), "examples/README.md"]
SHELL = {"bash", "sh", "shell"}
SHOWN = {"text", "json", "yaml", "toml", "html", "javascript", "js", "diff"}
COMMANDS = ("python", "torchrl-render", "make", "pip", "mkdir", "cd ", "bash ", "MUJOCO_GL=", ".venv/", "cat ")
TIMEOUT = 600
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def kind_of(language: str, source: str) -> str | None:
    """What a fenced block with this info string holds: 'python', 'shell', 'console', or None (shown only)."""
    if language == "python":
        return "python"
    if language in SHELL:
        return "shell"
    if language == "console":
        return "console"
    if language:
        if language not in SHOWN:
            raise ValueError(f"a ```{language} block: tag it bash, python, console or text")
        return None
    first = next((line.strip() for line in source.splitlines() if line.strip() and not line.startswith("#")), "")
    synopsis = re.search(r"\[-| \[[a-z]+\]", source)  # "[--flag X]", "[flags]": a usage line, not a command
    return "shell" if first.startswith(COMMANDS) and not synopsis else None


class Blocks:
    """The fenced blocks that run, each with its evaluator."""

    def __init__(self) -> None:
        self.lexer = FencedCodeBlockLexer(language=r"[\w-]*", mapping={"language": "language", "source": "source"})

    def __call__(self, document: Document):
        for region in self.lexer(document):
            kind = kind_of(region.lexemes["language"], str(region.lexemes["source"]))
            if kind is not None:
                region.parsed = (kind, str(region.lexemes["source"]))
                region.evaluator = EVALUATORS[kind]
                yield region


class OutputDirective:
    """``<!-- output: numbers within N% -->``: the tolerance of the next console block's numbers."""

    def __init__(self) -> None:
        self.lexer = DirectiveInHTMLCommentLexer(directive="output", arguments=r"numbers within [\d.]+%")

    def __call__(self, document: Document):
        for lexed in self.lexer(document):
            percent = float(re.search(r"([\d.]+)%", lexed.lexemes["arguments"]).group(1))
            yield Region(lexed.start, lexed.end, ("tolerance", percent / 100), set_tolerance)


def set_tolerance(example) -> None:
    example.namespace["__tolerance__"] = example.parsed[1]


# -- evaluators -------------------------------------------------------------------------------------------------


DISPLAY: dict[str, str | None] = {"name": None}  # the X server of the session (the `template` fixture starts it)


def shell_env(ws: Path) -> dict[str, str]:
    """The reader's shell: the shims first on PATH, this checkout importable, a display if one was started."""
    env = {**os.environ, "PATH": f"{ws / '.bin'}{os.pathsep}{os.environ['PATH']}", shrink.ENV_VAR: "",
           "MUJOCO_GL": "egl", "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONSTARTUP", None)
    env.pop("WAYLAND_DISPLAY", None)
    if DISPLAY["name"]:
        env["DISPLAY"] = DISPLAY["name"]
    return env


def run_shell(source: str, ws: Path, merged: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", source], cwd=ws, env=shell_env(ws),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE if not merged else subprocess.STDOUT,
                          text=True, timeout=TIMEOUT)


def failed(proc: subprocess.CompletedProcess, what: str) -> str:
    return (f"{what} exited {proc.returncode}\n--- stdout (end) ---\n{proc.stdout[-3000:]}\n"
            f"--- stderr (end) ---\n{(proc.stderr or '')[-3000:]}")


def evaluate_shell(example) -> str | None:
    if "--viewer" in example.parsed[1] and not DISPLAY["name"]:
        raise SkipTest("--viewer opens a window and Xvfb is not installed (tools/test_setup.sh installs it)")
    proc = run_shell(example.parsed[1], example.namespace["__workspace__"])
    return None if proc.returncode == 0 else failed(proc, "the block")


def evaluate_python(example) -> str | None:
    source = example.parsed[1]
    ws = example.namespace["__workspace__"]
    first = source.splitlines()[0]
    if re.fullmatch(r"# [\w./-]+\.py", first):  # the text of a file the next blocks use
        compile(source, first[2:], "exec")
        (ws / first[2:]).write_text(source)
        return None
    code = compile(source, f"{example.path}:{example.line}", "exec")
    with workspace.inside(ws), workspace.shrunk_render_policy():
        exec(code, example.namespace)
    return None


def commands(source: str) -> list[tuple[str, list[str]]]:
    """A console block's ``$ command`` lines (``\\``-continued) with the output lines after each."""
    pairs: list[tuple[str, list[str]]] = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"a console block's line must follow a '$ command': {lines[i]!r}")
        cmd = [lines[i][2:]]
        while cmd[-1].endswith("\\"):
            i += 1
            cmd.append(lines[i])
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        pairs.append(("\n".join(cmd), out))
    return pairs


def line_pattern(expected: str) -> re.Pattern:
    """``expected`` as a regex: its numbers captured, ``...`` any text, a run of spaces any run of spaces."""
    parts = []
    for piece in re.split(r"(\.\.\.|\s+)", expected.strip()):
        if piece == "...":
            parts.append(".*?")
        elif piece.isspace():
            parts.append(r"\s+")
        else:
            cut = NUMBER.split(piece)
            parts.append(f"({NUMBER.pattern})".join(re.escape(c) for c in cut))
    return re.compile("".join(parts) + r"\s*")


def line_matches(expected: str, got: str, tolerance: float) -> bool:
    match = line_pattern(expected).fullmatch(got.strip())
    if match is None:
        return False
    for want, have in zip(NUMBER.findall(expected.replace("...", " ")), match.groups()):
        w, h = float(want.replace(",", "")), float(have.replace(",", ""))
        if (w != h) if tolerance == 0 else abs(w - h) > tolerance * abs(w):
            return False
    return True


def output_matches(expected: list[str], got: list[str], tolerance: float) -> bool:
    """``expected`` (``...`` lines match any lines) against ``got``, line by line."""
    if not expected:
        return not got
    if expected[0].strip() == "...":
        return any(output_matches(expected[1:], got[k:], tolerance) for k in range(len(got) + 1))
    return bool(got) and line_matches(expected[0], got[0], tolerance) and output_matches(expected[1:], got[1:],
                                                                                           tolerance)


def evaluate_console(example) -> str | None:
    ws = example.namespace["__workspace__"]
    tolerance = example.namespace.pop("__tolerance__", 0.0)
    for cmd, expected in commands(example.parsed[1]):
        proc = run_shell(cmd, ws, merged=True)  # what the reader's terminal shows: stdout and stderr
        if proc.returncode != 0:
            return failed(proc, f"$ {cmd}")
        got = proc.stdout.rstrip("\n").splitlines()
        if not output_matches(expected, got, tolerance):
            return (f"$ {cmd}\nprinted (numbers within {tolerance:.0%} expected):\n" + "\n".join(got)
                    + "\n--- the docs show ---\n" + "\n".join(expected))
    return None


EVALUATORS = {"python": evaluate_python, "shell": evaluate_shell, "console": evaluate_console}
PARSERS = [SkipParser(), OutputDirective(), Blocks()]


# -- running in document order ----------------------------------------------------------------------------------


class DocRun:
    """One document's examples, evaluated in order once; each test asks for one of them (and those before it)."""

    def __init__(self, relpath: str) -> None:
        self.relpath = relpath
        self.document = Document.parse(str(ROOT / relpath), *PARSERS)
        self.examples = list(self.document)
        self.outcomes: list[BaseException | None] = []

    def outcome(self, index: int, template: Path) -> BaseException | None:
        if not self.outcomes:
            self.document.namespace["__workspace__"] = workspace.copy(template, self.relpath)
            self.document.namespace["__name__"] = "__main__"  # a script's `if __name__ == "__main__":` runs
        while len(self.outcomes) <= index:
            example = self.examples[len(self.outcomes)]
            try:
                example.evaluate()
                self.outcomes.append(None)
            except (SkipTest, Exception) as exc:
                self.outcomes.append(exc)
        return self.outcomes[index]


RUNS = {relpath: DocRun(relpath) for relpath in DOCS}


def _params():
    for relpath, run in RUNS.items():
        for index, example in enumerate(run.examples):
            if example.region.evaluator in EVALUATORS.values():
                kind = example.parsed[0]
                # one document's blocks run in one test process, in order: each block builds on those before it
                yield pytest.param(relpath, index, id=f"{relpath}:{example.line}:{kind}",
                                   marks=pytest.mark.xdist_group(f"docs:{relpath}"))


@pytest.fixture(scope="session")
def template(tmp_path_factory):
    """The workspace every document's copy starts from, and an X server for the blocks that open a window."""
    with workspace.x_server() as display:
        DISPLAY["name"] = display
        yield workspace.build(tmp_path_factory.mktemp("docs_template"))
        DISPLAY["name"] = None


@pytest.mark.slow
@pytest.mark.parametrize(("relpath", "index"), list(_params()))
def test_doc_block(relpath, index, template):
    outcome = RUNS[relpath].outcome(index, template)
    if isinstance(outcome, SkipTest):
        pytest.skip(str(outcome))
    if outcome is not None:
        raise outcome


def test_every_doc_block_is_run_shown_or_skipped_with_a_reason():
    """No ```lang the test does not know; every skip says why; the blocks that run are counted."""
    counts = {"python": 0, "shell": 0, "console": 0, "skip": 0}
    for run in RUNS.values():
        for example in run.examples:
            if example.parsed and example.parsed[0] in counts:
                counts[example.parsed[0]] += 1
            elif isinstance(example.parsed, tuple) and example.parsed[0] == "next":
                counts["skip"] += 1
                assert example.parsed[1] and example.parsed[1].strip('"\' '), f"{run.relpath}:{example.line}"
    assert counts["python"] >= 5 and counts["shell"] + counts["console"] >= 15, counts


def test_the_shims_cap_long_runs_and_leave_the_rest_as_written():
    cap = shrink.caps("")
    render = ["-m", "torchrl_render", "--ckpt", "p.pt", "--num-trajs", "50", "--out", "run.mp4"]
    assert shrink.rewrite(render, cap) == [*render[:5], "2", "--out", "run.mp4", "--max-steps", "40", "--width",
                                           "96", "--height", "96", "--render-quality", "fast"]
    evaluation = ["-m", "torchrl_render", "--num-trajs", "5", "--max-steps", "1000", "--out", "eval_info.json"]
    assert shrink.rewrite(evaluation, cap) == evaluation  # the docs' five-episode evaluations run as written
    assert shrink.rewrite(["-m", "torchrl_render", "--num-trajs=1000", "--out", "e.json"], cap)[2] == "--num-trajs=5"
    assert shrink.rewrite(["examples/half_cheetah/train.py", "--minutes", "11"], cap)[:5] == [
        "examples/half_cheetah/train.py", "--minutes", "11", "--iters", "2"]
    watch = ["-m", "torchrl_render", "sweep", "--ckpt", "c/*.pt", "--watch", "--watch-timeout", "15"]
    assert shrink.rewrite(watch, cap)[-6:] == ["--watch-timeout", "5", "--num-trajs", "2", "--max-steps", "40"]
    assert "--watch-timeout" not in shrink.rewrite(watch[:-2], cap)  # a watch until Ctrl-C stays one
    assert shrink.rewrite(render, None) == render  # without the env var the shim is the plain interpreter
    with pytest.raises(SystemExit, match="unknown key 'trajectories'"):
        shrink.caps("trajectories=3")


def test_python_blocks_runs_are_capped_as_the_shims_cap_commands():
    from torchrl_render import RenderConfig, SweepConfig

    cap = shrink.caps("")
    run = workspace.shrink_config(RenderConfig(policy="a:b", env="c:d", num_trajs=4, max_steps=300), cap)
    assert (run.num_trajs, run.max_steps, run.width, run.height, run.render_quality) == (2, 40, 96, 96, "fast")
    data = workspace.shrink_config(RenderConfig(policy="a:b", env="c:d", num_trajs=5, out="e.json"), cap)
    assert (data.num_trajs, data.max_steps, data.width) == (5, 1000, 480)  # evaluations run as written
    grid = workspace.shrink_sweep(SweepConfig(ckpt=["x.pt"], env=["HalfCheetah-v5"], out="s",
                                              base={"policy": "m:make", "num_trajs": 20}), cap)
    assert grid.base == {"policy": "m:make", "num_trajs": 2, "max_steps": 40, "width": 96, "height": 96,
                         "render_quality": "fast"}


def test_console_output_comparison():
    assert output_matches(["a 1.0", "...", "mean 5232.51 +- 46.12"], ["a 1.0", "x", "y", "mean 5232.51 +- 46.12"], 0)
    assert not output_matches(["mean 5232.51"], ["mean 5232.52"], 0)
    assert output_matches(["mean 5232.51"], ["mean 5419.0"], 0.05) and not output_matches(["mean 5232.51"],
                                                                                           ["mean 5600"], 0.05)
    assert not output_matches(["return 5.0 m"], ["return 5.0 s"], 0.05)
    assert output_matches(["mean 5232.51 +- 46.12 in ..."], ["mean   5232.51 +- 46.12 in 4.7s"], 0)
    assert not output_matches(["mean 5232.51 in ..."], ["mean 5232.51 out 4.7s"], 0)
    assert commands("$ a \\\n  b\nout\n$ c") == [("a \\\n  b", ["out"]), ("c", [])]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_and_anchor_of_the_docs_resolves():
    link = re.compile(r"\]\(([^)\s]+)\)")
    for relpath in DOCS:
        text = re.sub(r"```.*?```", "", (ROOT / relpath).read_text(encoding="utf-8"), flags=re.S)
        for target in link.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not checked here
            path, _, anchor = target.partition("#")
            file = (ROOT / relpath).parent / path if path else ROOT / relpath
            assert file.exists(), f"{relpath}: link to {target}"
            if anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
                assert anchor in {slug(h) for h in headings}, f"{relpath}: no heading for #{anchor} in {path}"
