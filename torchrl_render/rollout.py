"""``torchrl.render.rollout``, torchrl.render's module path, kept: ``from torchrl.render.rollout import ...``
becomes ``from torchrl_render.rollout import ...``. Its names (collect_render_rollouts)
are served by :mod:`torchrl_render.compat`; our own code lives in :mod:`torchrl_render.engine`.

Example:
    >>> import torchrl_render
    >>> from torchrl_render.rollout import collect_render_rollouts
    >>> collect_render_rollouts is torchrl_render.collect_render_rollouts
    True
"""

from __future__ import annotations

from .compat.spool import collect_render_rollouts

__all__ = ["collect_render_rollouts"]
