"""Writes docs/troubleshooting.md: tests/bad_inputs_explained.md with each catalogued mistake's message.

Every row of the bad-input catalogue (tests/test_bad_inputs.py) runs through the real CLI, in-process, as the
catalogue's test runs it; the paragraph it prints goes under the row's heading, its folders written
``inputs/`` and ``out/``. The catalogue's test then compares each message with the page's, whole.

    MUJOCO_GL=egl .venv/bin/python tools/gen_troubleshooting.py          # rewrites the page
    MUJOCO_GL=egl .venv/bin/python tools/gen_troubleshooting.py --check  # exit 1 if the page is not current
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS.parent)]

from torchrl_render.envs.gl import ensure_headless_gl

ensure_headless_gl()

import pytest
import test_bad_inputs as catalogue

from helpers import troubleshooting as page


def message(case: catalogue.Case) -> str:
    """The paragraph ``case`` prints, as the page shows it."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as monkeypatch:
        ctx = catalogue.Ctx(Path(tmp) / "inp", Path(tmp) / "out", monkeypatch)
        ctx.inp.mkdir()
        ctx.out.mkdir()
        monkeypatch.chdir(ctx.out)
        if case.setup:
            case.setup(ctx)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = catalogue.run_cli(case.argv, ctx)
        if code != 2:
            raise SystemExit(f"{case.id}: exit code {code}, not 2:\n{err.getvalue()}")
        return page.page_message(err.getvalue(), ctx.inp, ctx.out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the page is current")
    args = parser.parse_args(argv)
    source = page.SOURCE.read_text(encoding="utf-8")
    ids = page.row_ids(source)
    missing = sorted({c.id for c in catalogue.CASES} ^ set(ids))
    if missing:
        raise SystemExit(f"rows in only one of the catalogue and {page.SOURCE.name}: {missing}")
    text = page.render(source, {case.id: message(case) for case in catalogue.CASES})
    if args.check:
        return 0 if page.PAGE.read_text(encoding="utf-8") == text else 1
    page.PAGE.write_text(text, encoding="utf-8")
    print(f"{page.PAGE}: {len(ids)} messages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MUJOCO_GL", "egl")
    sys.exit(main())
