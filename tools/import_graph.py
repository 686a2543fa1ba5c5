"""The package's own import graph, measured and drawn from the code.

Prints the figures docs/architecture.md quotes: modules, top-level modules, function-level imports of
the package's own modules, cycles between capabilities, and imports that go up the layers of the
import-linter contract in pyproject.toml. With ``--svg`` it draws the capabilities in their layers
(graphviz's ``dot`` must be on PATH; the picture is committed, so only whoever redraws it needs it).

    python tools/import_graph.py                       # the figures
    python tools/import_graph.py --svg docs/img/architecture.svg
    python tools/import_graph.py --list-lazy           # where each function-level self-import is

A capability is a first-level name under ``torchrl_render`` (a subpackage or a top-level module).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "torchrl_render"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def own_targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str]) -> list[str]:
    """The package's own modules an import statement names (``from . import x`` names module ``x``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = module.split(".") if is_package else module.split(".")[:-1]
        if node.level:
            base = base[:len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
        # "from . import x" with x a module imports x; the package itself only when a name is not a module
        names = submodules if len(submodules) == len(node.names) else [target, *submodules]
    found = []
    for name in names:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in modules and name.split(".")[0] == PACKAGE:
            found.append(name)
    return found


def function_level(tree: ast.Module) -> set[int]:
    """ids of the import nodes that sit inside a function body."""
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner.update(id(sub) for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom)))
    return inner


def annotations_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``: imports for the type checker, which never run."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            found.update(id(sub) for stmt in node.body for sub in ast.walk(stmt)
                         if isinstance(sub, (ast.Import, ast.ImportFrom)))
    return found


def import_edges(root: Path) -> tuple[set[str], list[tuple[str, str, bool, int, bool]]]:
    """Every module of the package, and its (importer, imported, inside a function, line, under TYPE_CHECKING)
    edges."""
    paths = {module_name(p, root): p for p in (root / PACKAGE).rglob("*.py")}
    modules, edges = set(paths), []
    for module, path in sorted(paths.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner, typing_only = function_level(tree), annotations_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in own_targets(node, module, path.name == "__init__.py", modules):
                    if target != module:
                        edges.append((module, target, id(node) in inner, node.lineno, id(node) in typing_only))
    return modules, edges


def capability(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def read_layers(pyproject: Path) -> list[list[str]]:
    """The layers contract of pyproject.toml, top first, each a list of sibling capabilities."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config.get("tool", {}).get("importlinter", {}).get("contracts", []):
        if contract.get("type") == "layers":
            return [[name.strip() for name in layer.replace(":", "|").split("|")] for layer in contract["layers"]]
    return []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def figures(root: Path, layers: list[list[str]], home: dict[str, str]) -> dict:
    """The counts: ``home`` maps a capability to the one it is measured as (to compare an old layout)."""
    modules, edges = import_edges(root)
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    cap_graph, module_graph, up = defaultdict(set), defaultdict(set), set()
    for a, b, _lazy, _line, typing_only in edges:
        # a module cycle is one that runs: an annotation's import (under TYPE_CHECKING, which
        # `from __future__ import annotations` leaves unevaluated) does not; the layers count every import
        if not typing_only:
            module_graph[a].add(b)
        ca, cb = (home.get(c, c) for c in (capability(a), capability(b)))
        if ca != cb and ca != "__init__" and cb != "__init__":
            cap_graph[ca].add(cb)
            if ca in rank and cb in rank and rank[cb] < rank[ca]:
                up.add((ca, cb))
    top_level = [m for m in modules if m.count(".") == 1 and (root / PACKAGE / f"{m.split('.')[1]}.py").exists()]
    return {
        "modules": len(modules),
        "top-level modules": len(top_level) + 1,  # + the package's own __init__.py
        "subpackages": sum(1 for m in modules if m.count(".") == 1 and m not in top_level),
        "function-level self-imports": sum(1 for e in edges if e[2]),
        "capability cycles": cycles(cap_graph),
        "module cycles": cycles(module_graph),
        "arrows up": sorted(up),
        "unlayered": sorted({c for c in cap_graph if c not in rank} - {"__main__"}) if rank else [],
        "_graph": cap_graph,
    }


def reduced(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without the arrows implied by others (a -> c goes when a -> b -> ... -> c exists)."""
    def reachable(start: str, skip: tuple[str, str]) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for nxt in graph.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {a: {b for b in targets if b not in reachable(a, (a, b))} for a, targets in graph.items()}


def dot_source(graph: dict[str, set[str]], layers: list[list[str]], upward: set[tuple[str, str]]) -> str:
    """Graphviz source: one row per layer, the imports implied by others left out, upward ones dashed."""
    down = {a: {b for b in targets if (a, b) not in upward} for a, targets in graph.items()}
    lines = ["digraph torchrl_render {", "  rankdir=TB; newrank=true; nodesep=0.3; ranksep=0.5;",
             '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];',
             '  edge [color="#7a869a", arrowsize=0.6];']
    for i, layer in enumerate(layers):
        lines.append("  { rank=same; " + " ".join(f'"{n}";' for n in layer) + " }")
        if i:  # keep the rows in the contract's order
            lines.append(f'  "{layers[i - 1][0]}" -> "{layer[0]}" [style=invis, weight=10];')
    placed = {n for layer in layers for n in layer}
    for a, targets in sorted(reduced(down).items()):
        lines += [f'  "{a}" -> "{b}";' for b in sorted(targets) if a in placed and b in placed]
    lines += [f'  "{a}" -> "{b}" [style=dashed, color="#c0504d"];' for a, b in sorted(upward)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--layers-from", type=Path, default=ROOT / "pyproject.toml",
                        help="the pyproject.toml whose import-linter layers contract says what is 'up'")
    parser.add_argument("--home", action="append", default=[], metavar="OLD=NEW",
                        help="measure capability OLD as NEW (to compare an older layout with today's layers)")
    parser.add_argument("--svg", type=Path, help="draw the capabilities in their layers into this file")
    parser.add_argument("--list-lazy", action="store_true", help="list each function-level self-import")
    args = parser.parse_args(argv)
    layers = read_layers(args.layers_from)
    result = figures(args.root, layers, dict(pair.split("=", 1) for pair in args.home))
    for key, value in result.items():
        if not key.startswith("_"):
            print(f"{key}: {len(value) if isinstance(value, list) else value}"
                  + (f"  {value}" if isinstance(value, list) and value else ""))
    if args.list_lazy:
        counts = Counter(a for a, _b, lazy, _line, _typing in import_edges(args.root)[1] if lazy)
        for module, n in counts.most_common():
            print(f"  {n:3d} {module}")
    if args.svg:
        subprocess.run(["dot", "-Tsvg", "-o", str(args.svg)], input=dot_source(result["_graph"], layers,
                                                                               set(result["arrows up"])),
                       text=True, check=True)
        print(f"drew {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
