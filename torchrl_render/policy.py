"""``torchrl.render.policy``, torchrl.render's module path, kept: ``from torchrl.render.policy import ...``
becomes ``from torchrl_render.policy import ...``. Its names (TensorDictPolicyAdapter, load_render_policy,
normalize_policy) are served by :mod:`torchrl_render.compat`; our own code lives in :mod:`torchrl_render.policies`.

Example:
    >>> import torchrl_render
    >>> from torchrl_render.policy import TensorDictPolicyAdapter
    >>> TensorDictPolicyAdapter is torchrl_render.TensorDictPolicyAdapter
    True
"""

from __future__ import annotations

from .compat import TensorDictPolicyAdapter, load_render_policy, normalize_policy

__all__ = ["TensorDictPolicyAdapter", "load_render_policy", "normalize_policy"]
