"""The writer table: format name -> lazy writer class. One line per format.

Tests, CLI choices, ``--list-formats`` and the docs' format table all read it.
"""

from __future__ import annotations

from ..registry import WRITERS, needs_frames

__all__ = ["WRITERS", "needs_frames"]
