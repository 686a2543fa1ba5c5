"""Escaping for where a user's string lands in a notebook's Markdown: text, an inline code span, a fenced block.

File names, specs, titles and command lines are the user's (or a stranger's: a checkpoint named by someone
else), and Markdown cells render raw HTML in Jupyter, VS Code and nbviewer, not all of which sanitise it. So
nothing user-controlled goes into Markdown as it is:

* :func:`md_text`: every ASCII punctuation character that Markdown reads backslash-escaped (CommonMark
  renders each as itself: no emphasis, link, heading, list, table cell or tag; ``. : / '`` and the like,
  inert there, stay as they are so that ``policy.py:make`` reads as it is), ``&`` ``<`` ``>`` as entities,
  line breaks as spaces (a blank line would end the block and start raw HTML);
* :func:`md_code`: an inline code span whose backtick run is longer than any run inside it;
* :func:`md_fence`: a fenced block whose fence is longer than any backtick run inside it, so no line of the
  content can close it;
* :func:`md_html`: an HTML fragment (already escaped) on one line: a blank line inside a user's name would
  end the HTML block, and Markdown (links, images) would be read in the rest.

Example:
    >>> print(md_text("a*b* <i> policy.py:make"))
    a\\*b\\* &lt;i&gt; policy.py:make
    >>> md_code("x`y")
    '`` x`y ``'
    >>> print(md_fence("echo ```", "bash"))
    ````bash
    echo ```
    ````
"""

from __future__ import annotations

import re
import string

__all__ = ["md_code", "md_fence", "md_html", "md_text"]

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_PUNCTUATION = set(string.punctuation) - set(_ENTITIES) - set(".,:;/'\"?=@%$^")
_LIST_START = re.compile(r"^(\d+)([.)])")  # "1. x" at the start of a line would open an ordered list
_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")


def _one_line(text: str) -> str:
    return _BREAKS.sub(" ", text)


def md_text(text: object) -> str:
    """``text`` as literal Markdown text on one line (trimmed: leading spaces would indent it into a code block)."""
    out = "".join(_ENTITIES.get(ch) or ("\\" + ch if ch in _PUNCTUATION else ch) for ch in _one_line(str(text)).strip())
    return _LIST_START.sub(r"\1\\\2", out)


def _longest_run(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)


def md_code(text: object) -> str:
    """``text`` as an inline code span on one line (its backticks, ``<`` and ``&`` shown as they are)."""
    text = _one_line(str(text))
    fence = "`" * (_longest_run(text) + 1)
    return f"{fence} {text} {fence}"


def md_fence(text: object, lang: str = "") -> str:
    """``text`` as a fenced code block (its lines as they are: a fence inside cannot close this one)."""
    text = str(text).replace("\r\n", "\n").replace("\r", "\n")
    fence = "`" * max(3, _longest_run(text) + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def md_html(fragment: str) -> str:
    """An escaped HTML fragment for a Markdown cell, on one line (HTML reads a line break as a space)."""
    return _one_line(fragment)
