"""``torchrl.render.artifacts``: :func:`write_render_artifact` (a face over :mod:`torchrl_render.compat.spool`) and
:func:`checkpoint_hash`, which the pipeline looks up here when it hashes the checkpoint.

Example:
    >>> from torchrl_render.artifacts import write_render_artifact
    >>> write_render_artifact.__name__
    'write_render_artifact'
"""

from __future__ import annotations

from .compat import checkpoint_hash
from .compat.spool import write_render_artifact

__all__ = ["checkpoint_hash", "write_render_artifact"]
