"""docs/troubleshooting.md from its source and the bad-input catalogue's messages, and back.

The page's prose (the sections, and under each catalogue row's ``### `id` `` heading what the message means
and the fix) lives in tests/bad_inputs_explained.md, beside the catalogue (tests/test_bad_inputs.py). The
message under each heading is not written by hand: ``tools/gen_troubleshooting.py`` runs every row through
the CLI and puts the message it printed there, with the row's folders written ``inputs/`` and ``out/``. The
catalogue's test compares each message it gets with the page's, whole.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.paths import ROOT

PAGE = ROOT / "docs" / "troubleshooting.md"
SOURCE = ROOT / "tests" / "bad_inputs_explained.md"
HEADING = re.compile(r"^### `([a-z0-9-]+)`$")
PREFIX = "torchrl-render: error: "


def page_message(err: str, inp: Path, out: Path) -> str:
    """What the page shows of the CLI's stderr ``err``: the paragraph, without the prefix, folders shortened."""
    message = err.removeprefix(PREFIX).rstrip("\n")
    return message.replace(str(inp), "inputs").replace(str(out), "out")


def quote(message: str) -> str:
    return f"`` {message} ``" if "`" in message else f"`{message}`"


def unquote(line: str) -> str:
    return line[3:-3] if line.startswith("`` ") else line[1:-1]


def render(source: str, messages: dict[str, str]) -> str:
    """The page: ``source`` with each row's message on the line after its heading."""
    lines = []
    for line in source.splitlines(keepends=True):
        lines.append(line)
        heading = HEADING.match(line.rstrip("\n"))
        if heading:
            lines.append(quote(messages[heading.group(1)]) + "\n")
    return "".join(lines)


def documented(page: str) -> dict[str, str]:
    """Each row's message as the page shows it."""
    lines = page.splitlines()
    return {m.group(1): unquote(lines[i + 1]) for i, line in enumerate(lines) if (m := HEADING.match(line))}


def row_ids(source: str) -> list[str]:
    return [m.group(1) for line in source.splitlines() if (m := HEADING.match(line))]
