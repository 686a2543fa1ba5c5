"""The exit code of ``torchrl_render.cli.main``: 0 returned on success, ``SystemExit(code)`` raised otherwise."""

from __future__ import annotations

from torchrl_render.cli import main


def exit_code(argv: list[str]) -> int:
    """Runs the CLI in this process and returns its exit code, whichever way it ends."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code
