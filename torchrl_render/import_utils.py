"""``torchrl.render.import_utils``, torchrl.render's module path, kept: ``from torchrl.render.import_utils import ...``
becomes ``from torchrl_render.import_utils import ...``. Its names (call_with_supported_kwargs, import_from_string)
are served by :mod:`torchrl_render.compat`; our own code lives in :mod:`torchrl_render.resolve`.

Example:
    >>> import torchrl_render
    >>> from torchrl_render.import_utils import call_with_supported_kwargs
    >>> call_with_supported_kwargs is torchrl_render.call_with_supported_kwargs
    True
"""

from __future__ import annotations

from .compat import call_with_supported_kwargs, import_from_string

__all__ = ["call_with_supported_kwargs", "import_from_string"]
