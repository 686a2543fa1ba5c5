"""Headless Chromium (Debian's ``chromium``) driven by playwright, for the replay page's tests.

Every request that is not ``file://`` (or ``about:``/``data:`` the page makes itself) is aborted
and counted; console errors and page errors are collected.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("TORCHRL_RENDER_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox"]


def available() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists()


needs_browser = pytest.mark.skipif(not available(), reason="needs playwright and /usr/bin/chromium "
                                                           "(bash tools/test_setup.sh installs both)")


class Page:
    """A loaded page plus what it did: ``blocked`` (non-file requests), ``errors`` (console + page errors)."""

    def __init__(self, page, blocked, errors, requests):
        self.page, self.blocked, self.errors, self.requests = page, blocked, errors, requests

    def js(self, expression, arg=None):
        return self.page.evaluate(expression, arg)


@contextmanager
def browser(width: int = 900, height: int = 700):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = b.new_context(viewport={"width": width, "height": height})
            yield context
        finally:
            b.close()


@contextmanager
def open_page(url_or_html: str | Path | None, *, srcdoc: bool = False, outer: str | None = None, width: int = 900,
              height: int = 700):
    """Loads a replay file (``file://``); with ``srcdoc=True`` its text in a sandboxed iframe; or ``outer``,
    an HTML text whose first iframe holds the replay."""
    with browser(width, height) as context:
        page = context.new_page()
        blocked, errors, requests = [], [], []

        def route(r):
            url = r.request.url
            requests.append(url)
            if url.startswith(("file://", "about:", "data:")):
                r.continue_()
            else:
                blocked.append(url)
                r.abort()

        context.route("**/*", route)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        if srcdoc or outer is not None:
            import html

            if outer is None:
                text = Path(url_or_html).read_text(encoding="utf-8")
                outer = (f'<iframe id="f" sandbox="allow-scripts" style="width:{width}px;height:{height - 20}px;'
                         f'border:0" srcdoc="{html.escape(text)}"></iframe>')
            page.set_content(f'<!DOCTYPE html><html><body style="margin:0">{outer}</body></html>')
            page.wait_for_function("() => document.querySelector('iframe') !== null")
            page.wait_for_timeout(100)
            target = next(f for f in page.frames if f != page.main_frame)
        else:
            page.goto(Path(url_or_html).resolve().as_uri())
            target = page
        target.wait_for_function("() => window.replay !== undefined", timeout=30000)
        target.evaluate("window.replay.ready.then(() => true)")
        yield Page(target, blocked, errors, requests), page
