"""``torchrl.render.env``, torchrl.render's module path, kept: ``from torchrl.render.env import ...``
becomes ``from torchrl_render.env import ...``. Its names (add_step_counter, make_render_env, normalize_env, seed_env)
are served by :mod:`torchrl_render.compat`; our own code lives in :mod:`torchrl_render.envs`.

Example:
    >>> import torchrl_render
    >>> from torchrl_render.env import add_step_counter
    >>> add_step_counter is torchrl_render.add_step_counter
    True
"""

from __future__ import annotations

from .compat import add_step_counter, make_render_env, normalize_env, seed_env

__all__ = ["add_step_counter", "make_render_env", "normalize_env", "seed_env"]
