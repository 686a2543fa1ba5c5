"""How a policy is called: with the step TensorDict, or with its observation (one rule, in this order).

1. Anything with ``in_keys`` and ``out_keys`` (a ``TensorDictModule``, or any callable) is a
   TensorDict policy: called with the step TensorDict.
2. Otherwise the first parameter of the callable (of ``forward`` for a module) decides: annotated
   with a TensorDict class, or unannotated and named ``td`` / ``tensordict``, it takes the step
   TensorDict; annotated ``torch.Tensor`` / ``numpy.ndarray``, it takes the observation.
3. Any other callable is tried as a tensor policy at its first call, ``policy(td[obs_key])``; if
   that call raises (or the observation key is missing) it is called with the step TensorDict.
   The first call that works decides for the rest of the run (noted in the warnings).
"""

from __future__ import annotations

import inspect
import re
from typing import Literal, TypeAlias

from ..contracts import UserPolicy
from ..envs.handle import loaded_class
from ..errors import PolicyError

__all__ = ["TENSORDICT_NAMES", "PolicyKind", "both_failed", "policy_kind"]

#: Unannotated first-parameter names that say a callable takes the step TensorDict.
TENSORDICT_NAMES = ("td", "tensordict")

#: How a policy is called: with the step TensorDict, or with its observation tensor.
PolicyKind: TypeAlias = Literal["tensordict", "tensor"]


def policy_kind(policy: UserPolicy) -> PolicyKind | None:
    """``"tensordict"`` or ``"tensor"`` as the module docstring's rules 1-2 decide; ``None`` when only
    the first call can tell (rule 3).

    Example:
        >>> from tensordict import TensorDictBase
        >>> def a(td): ...
        >>> def b(data: TensorDictBase): ...
        >>> def c(obs): ...
        >>> [policy_kind(f) for f in (a, b, c)]
        ['tensordict', 'tensordict', None]
    """
    if getattr(policy, "in_keys", None) is not None and getattr(policy, "out_keys", None) is not None:
        return "tensordict"
    param = _first_parameter(policy)
    if param is None:
        return None
    said = _annotation_kind(param.annotation)
    if said is not None:
        return said
    return "tensordict" if param.name in TENSORDICT_NAMES else None


def _first_parameter(policy: UserPolicy) -> inspect.Parameter | None:
    """The first positional parameter of the policy (of ``forward`` for a module), if it has a signature."""
    import torch

    fn = policy.forward if isinstance(policy, torch.nn.Module) else policy
    try:
        try:
            sig = inspect.signature(fn, eval_str=True)
        except Exception:
            sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or an extension callable without a signature
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return next((p for p in sig.parameters.values() if p.kind in positional), None)


def _annotation_kind(annotation: object) -> PolicyKind | None:
    """``"tensordict"`` for a TensorDict class, ``"tensor"`` for a tensor or array class, else ``None``."""
    import numpy as np
    import torch

    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, type):
        base = loaded_class("tensordict", "TensorDictBase")  # an annotation class means its module is imported
        if base is not None and issubclass(annotation, base):
            return "tensordict"
        return "tensor" if issubclass(annotation, (torch.Tensor, np.ndarray)) else None
    text = str(annotation)  # a string that did not evaluate, or a union / Optional of classes
    if re.search(r"\bTensorDict(Base)?\b", text):
        return "tensordict"
    return "tensor" if re.search(r"\b(Tensor|ndarray)\b", text) else None


def both_failed(first: Exception, second: Exception) -> Exception:
    """The error of a policy that failed on the observation and on the TensorDict: the first, with the second."""
    said = " ".join(str(second).split())  # one paragraph: torch's dispatch errors span lines
    also = f" (called with the step TensorDict instead, it raised {said[:200]}{'...' if len(said) > 200 else ''})"
    if isinstance(first, PolicyError):
        return PolicyError(first.what + also, expected=first.expected, got=first.got,
                           fix=f"{first.fix}; a policy that takes the TensorDict: annotate its parameter "
                               "(def policy(td: TensorDictBase))")
    return type(first)(f"{first}{also}")
