"""No file of the project cites the issue tracker: a maintainer reading the code cannot look an issue up.

Comments, docstrings, help texts and docs say what and why instead. Links to other projects' public
trackers (a full github.com URL) are references a reader can follow, and stay allowed.
"""
import re
import subprocess

from helpers.paths import ROOT

CITATION = re.compile(r"\b[Ii]ssues? #?[0-9]+|\b[Ii]tem [0-9]+ of\b")
SCOPES = ["torchrl_render", "tests", "tools", "benchmarks", "docs", "examples", "Makefile", "pyproject.toml",
          "README.md", ".ci"]


def _tracked_text_files():
    listed = subprocess.run(["git", "ls-files", *SCOPES], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in listed.stdout.split():
        if "/vendor/" in name or name.endswith((".pt", ".png", ".mp4", ".gif", ".npz", ".zip", ".svg")):
            continue
        path = ROOT / name
        if path.is_file():
            yield name, path.read_text(errors="replace")


def test_no_file_cites_the_issue_tracker():
    cited = [f"{name}:{n}: {line.strip()}" for name, text in _tracked_text_files()
             for n, line in enumerate(text.splitlines(), 1)
             if CITATION.search(line) and "github.com" not in line]
    assert cited == [], "say what and why instead of citing the tracker:\n" + "\n".join(cited)
