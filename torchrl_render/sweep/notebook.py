"""``report.ipynb``: the sweep report as a notebook, executed so that it opens with its outputs.

Its code cells read ``episodes.jsonl`` themselves (through :func:`.store.read_records`),
compute the curves from the recorded episodes (:func:`.report.curves`), print them as JSON
(cell ``curves``) and plot them with their confidence bands (cell ``plot``); a success table
and the rendered episodes of each cell follow, then, with ``--render-select``, each cell's chosen
episodes and why each was chosen (cell ``gallery``, as report.html has them). Re-run it to see a
sweep still in progress.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..notebook.kernel import execute_notebook
from ..notebook.markup import md_html
from .gallery import gallery_html
from .html import episode_videos, success_table
from .store import write_json_atomic

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from .report import EvalInfo  # the report imports this module

__all__ = ["build_notebook", "write_notebook"]

_LOAD = """import json, sys
from pathlib import Path
sys.path.insert(0, {package!r})  # torchrl_render, as the sweep used it
from torchrl_render.sweep.report import curves
from torchrl_render.sweep.store import read_records

folder = Path({folder!r})
records = read_records(folder)
curve = curves(records)
print(json.dumps(curve, sort_keys=True))
"""
_PLOT = """import matplotlib.pyplot as plt
for task, runs in curve.items():
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for run, points in runs.items():
        xs = [p["step"] if p["step"] is not None else i for i, p in enumerate(points)]
        ax.plot(xs, [p["mean"] for p in points], marker="o", label=run)
        band = [(x, p["ci95"]) for x, p in zip(xs, points) if p["ci95"]]
        if band:
            ax.fill_between([b[0] for b in band], [b[1][0] for b in band], [b[1][1] for b in band], alpha=0.25)
    ax.set(xlabel="training step", ylabel="return (mean, 95% CI)", title=task)
    ax.legend(loc="best", fontsize="small")
    plt.show()
"""


def build_notebook(folder: Path, info: EvalInfo) -> NotebookNode:
    """The report notebook (not executed)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    package = str(Path(__file__).resolve().parents[2])
    p = info["progress"]
    cells = [new_markdown_cell(f"# Sweep report\n\n{p['done']}/{p['cells']} cells done, {p['failed']} failed, "
                               f"{p['episodes']}/{p['episodes_total']} episodes. Numbers below are computed from "
                               "`episodes.jsonl` when the notebook runs.", id="title"),
             new_code_cell(_LOAD.format(package=package, folder=str(Path(folder).resolve())), id="curves"),
             new_code_cell(_PLOT, id="plot"),
             new_markdown_cell("## Success rate and mean return\n\n" + md_html(success_table(info)), id="table"),
             new_markdown_cell("## Rendered episodes\n\n" + md_html(episode_videos(info)), id="episodes")]
    chosen = md_html(gallery_html(info))
    if chosen:  # HTML whose <h2> is the section's title: markdown cells render it, videos relative to the folder
        cells.append(new_markdown_cell(chosen, id="gallery"))
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}, "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


def write_notebook(folder: Path, info: EvalInfo, timeout: float = 300) -> Path:
    """Builds, executes (nbclient, a kernel of this interpreter) and writes ``report.ipynb``."""
    import nbformat

    folder = Path(folder)
    nb = build_notebook(folder, info)
    execute_notebook(nb, folder, timeout=timeout)
    path = folder / "report.ipynb"
    write_json_atomic(path, json.loads(nbformat.writes(nb)))
    return path
