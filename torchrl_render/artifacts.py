"""``torchrl.render.artifacts``: :func:`write_render_artifact`, a face over :mod:`torchrl_render.spool`.

Example:
    >>> from torchrl_render.artifacts import write_render_artifact
    >>> write_render_artifact.__name__
    'write_render_artifact'
"""

from __future__ import annotations

from .spool import write_render_artifact

__all__ = ["write_render_artifact"]
