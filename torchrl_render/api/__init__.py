"""``render_policy``: one run, top to bottom (:mod:`.run`), its outputs planned and checked before anything runs
(:mod:`.outputs`), and its stages as functions of what they need (:mod:`.stages`)."""

from .run import Run, render_policy

__all__ = ["Run", "render_policy"]
