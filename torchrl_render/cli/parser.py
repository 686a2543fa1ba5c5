"""The CLI's argparse parser class and program name, shared by the main command and the subcommands (which
the main command imports lazily, so they import these from here, not from the package)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable

from ..data import Artifact
from ..errors import RenderError, did_you_mean

__all__ = ["PROG", "Parser", "artifact_notes", "report_artifacts"]

PROG = "torchrl-render"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one paragraph (not the whole usage) and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.replace(PROG, "python -m torchrl_render", 1)
        print(f"{PROG}: error: {message}.{_suggestion(message, list(self._option_string_actions))} Fix: correct "
              f"the flag; {command} --help lists them all.", file=sys.stderr)
        sys.exit(2)


def _suggestion(message: str, flags: tuple[str, ...] | list[str] = ()) -> str:
    """A did-you-mean for argparse's "invalid choice: 'x' (choose from 'a', 'b')" and "unrecognized arguments"."""
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if found:
        return did_you_mean(found.group(1), re.findall(r"'([^']*)'", found.group(2)))
    unknown = re.search(r"unrecognized arguments: (.*)", message)
    first = next((a for a in unknown.group(1).split() if a.startswith("--")), None) if unknown else None
    return did_you_mean(first.split("=")[0], flags) if first else ""


def report_artifacts(work: Callable[[], Iterable[Artifact]], *, error: str, prog: str) -> int:
    """Runs a subcommand's ``work`` and says how it went: our error as one paragraph after ``error`` (exit 2), an
    interruption (130), else each artifact's notes and then its path (0)."""
    try:
        artifacts = list(work())
    except RenderError as exc:
        print(f"{error} {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; nothing was written at the output path", file=sys.stderr)
        return 130
    for artifact in artifacts:
        for note in artifact_notes(artifact):
            print(f"{prog}: note: {note}", file=sys.stderr)
        print(artifact.path)
    return 0


def artifact_notes(artifact: Artifact) -> list[str]:
    """The notes a writer left in an artifact's info (``info["notes"]``, a list of lines, or a plugin writer's any
    iterable of them; none: ``[]``)."""
    notes = artifact.info.get("notes")
    return [str(note) for note in notes] if notes and isinstance(notes, Iterable) else []
