"""The package's import graph, read from the code (tools/import_graph.py, which counts function-level imports
too): no cycle between capabilities, no import up the layers, and no exception to the layers contract."""

from __future__ import annotations

import importlib.util
import tomllib

from helpers.paths import ROOT


def _graph_tool():
    spec = importlib.util.spec_from_file_location("_import_graph", ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_capability_imports_one_above_it_or_closes_a_circle():
    tool = _graph_tool()
    figures = tool.figures(ROOT, tool.read_layers(ROOT / "pyproject.toml"), {})
    assert figures["capability cycles"] == [] and figures["arrows up"] == [], figures
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    assert "ignore_imports" not in contract  # lint-imports holds without an exception


def test_a_result_shows_itself_in_jupyter_through_the_notebook_display():
    """data.py sits below the notebook package: the display reaches it by registration, not by an import."""
    from torchrl_render import notebook
    from torchrl_render.data import _DISPLAY, RenderResult

    assert {name: _DISPLAY[name] for name in ("result_html", "artifact_mimebundle")} == {
        "result_html": notebook.result_html, "artifact_mimebundle": notebook.artifact_mimebundle}
    result = RenderResult(artifact_path=None, trajectories=[], frame_paths=[], metadata={}, warnings=[])
    assert result._repr_html_() == notebook.result_html(result)


def test_no_module_imports_itself_back_through_another():
    """Inside a capability too: a module's imports never lead back to it (the CLI's subcommands take the parser
    class from cli/parser.py, not from the package that imports them)."""
    tool = _graph_tool()
    assert tool.figures(ROOT, tool.read_layers(ROOT / "pyproject.toml"), {})["module cycles"] == []


def test_a_cycle_that_runs_is_found_and_an_annotations_import_is_not_one(tmp_path):
    """A module cycle is one Python runs: ``b`` importing ``a`` back at its top is one; ``b`` naming ``a``'s class
    in an annotation, imported under ``if TYPE_CHECKING:``, is not (it never runs); the layers count both."""
    tool = _graph_tool()
    package = tmp_path / "torchrl_render"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .a import X\n")
    assert tool.figures(tmp_path, [], {})["module cycles"] == []
    (package / "b.py").write_text("from .a import X\n")
    assert tool.figures(tmp_path, [], {})["module cycles"] == [["torchrl_render.a", "torchrl_render.b"]]


def test_any_is_allowed_only_at_the_users_boundary():
    # mypy (make lint) refuses an explicit Any everywhere but contracts.py, whose aliases name the user's objects;
    # an override that lifts the rule for another module would let Any back in unseen
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["disallow_any_explicit"] is True and mypy["files"] == ["torchrl_render"]
    lifted = [o["module"] for o in mypy.get("overrides", []) if o.get("disallow_any_explicit") is False]
    assert lifted == [["torchrl_render.contracts"]]
    assert not any(o.get("ignore_errors") for o in mypy.get("overrides", []))
    silenced = [str(p) for p in (ROOT / "torchrl_render").rglob("*.py") if "explicit-any" in p.read_text()]
    assert silenced == []  # no "# type: ignore[explicit-any]" either
