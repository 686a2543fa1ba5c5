"""What a policy may return for each action space, and its conversion to the env's action.

Per action space (gymnasium's name; torchrl's spec in brackets), for one env (``[K, ...]`` for a
batch of K):

* ``Box`` (``Bounded`` / ``Unbounded``): the action, of the space's shape (or as many numbers).
* ``Discrete`` (``OneHot`` / ``Categorical``): the index (a Python int, a numpy integer, a 0-d
  tensor; ``[K]`` for a batch), or the one-hot vector.
* ``MultiDiscrete`` (``MultiOneHot`` / ``MultiCategorical``): one index per component (an int
  vector), or the components' one-hot vectors end to end.
* ``MultiBinary`` (``Binary``): 0/1 values (bool, integers or whole floats).

A tensor, a numpy array, a Python number or a (nested) list are all taken. Which conversion an
action needs (reshape, index to one-hot or back, dtype cast) is decided from its shape and dtype
the first time they are seen and kept, so a step only runs the conversions its action needs, and
only value checks (finite, whole numbers, a valid index or one-hot) look at the values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from numpy.typing import NDArray

from ..contracts import Array
from ..errors import PolicyError

if TYPE_CHECKING:
    import torch
    from gymnasium import Space
    from torchrl.data import TensorSpec

__all__ = ["ActionChecker", "ActionGuard", "ActionLayout", "Bounds", "Plan", "gym_action_layout", "gym_bounds",
           "non_finite_action"]

#: What an action of one kind (shape, dtype, device) needs to become the env's: reshape, encoding, cast, checks.
Plan: TypeAlias = "Callable[[torch.Tensor], torch.Tensor]"

#: The lowest and highest valid values of a gymnasium integer action: numbers (``Discrete``, ``MultiBinary``) or
#: one per component (``MultiDiscrete``).
Bounds: TypeAlias = tuple[int, int] | tuple[Array, Array]


def non_finite_action(action: torch.Tensor | Array) -> PolicyError:
    """The error for a NaN or infinite action."""
    values = action.tolist() if hasattr(action, "tolist") else action
    return PolicyError("the policy produced a NaN or infinite action", got=str(values)[:200],
                       fix="check the checkpoint's weights and the observation normalisation")


@dataclass(frozen=True)
class ActionLayout:
    """What an action must look like, for one env: what the checker needs of a torchrl spec.

    Args:
        shape: The action's shape (``torch.Size``).
        dtype: Its torch dtype.
        device: Its device (None: any).
        encoding: ``"onehot"`` or ``"index"`` for a discrete action, else None.
        sizes: The category counts of a discrete action (one per component).
        multi: Several discrete components (MultiDiscrete / MultiOneHot).
    """

    shape: torch.Size
    dtype: torch.dtype
    device: torch.device | None = None
    encoding: str | None = None
    sizes: list[int] = field(default_factory=list)
    multi: bool = False

    @classmethod
    def of_spec(cls, spec: TensorSpec) -> ActionLayout:
        """The layout of a torchrl action spec."""
        encoding, sizes, multi = _encoding(spec)
        return cls(spec.shape, spec.dtype, spec.device, encoding, sizes, multi)


def gym_action_layout(space: Space) -> tuple[ActionLayout, int | torch.Tensor] | None:
    """The layout of a gymnasium action space in gymnasium's own encoding (indices for ``Discrete``, where
    torchrl's spec is one-hot) and its index offset (``start``), built without torchrl; None for a space
    the engine's gymnasium path does not step."""
    import torch
    from gymnasium import spaces

    dtype, cpu = getattr(torch, np.dtype(space.dtype).name), torch.device("cpu")
    if isinstance(space, spaces.Discrete):
        return ActionLayout(torch.Size(()), dtype, cpu, "index", [int(space.n)]), int(space.start)
    if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return ActionLayout(torch.Size(space.shape), dtype, cpu, "index", [int(n) for n in space.nvec],
                            True), torch.as_tensor(space.start)
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        return ActionLayout(torch.Size(space.shape), dtype, cpu), 0
    return None


def gym_bounds(space: Space) -> Bounds | None:
    """The lowest and highest valid values of a gymnasium integer action (numpy), None for a Box."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        return int(space.start), int(space.start + space.n - 1)
    if isinstance(space, spaces.MultiDiscrete):
        return space.start, space.start + space.nvec - 1
    if isinstance(space, spaces.MultiBinary):
        return 0, 1
    return None


class ActionChecker:
    """Checks a policy's actions against ``spec`` (one env's) and converts them to it.

    Args:
        spec: The torchrl action spec of one env, or its :class:`ActionLayout`.
        note: Called once per adaptation with a sentence for the run's warnings.
        start: The index offset of a gymnasium ``Discrete`` / ``MultiDiscrete`` (indices in
            ``[start, start + n)``; a one-hot position ``j`` is index ``start + j``).
    """

    def __init__(self, spec: TensorSpec | ActionLayout, note: Callable[[str], None],
                 start: int | torch.Tensor = 0) -> None:
        self.spec = spec if isinstance(spec, ActionLayout) else ActionLayout.of_spec(spec)
        self.note, self.start = note, start
        self.encoding, self.sizes, self.multi = self.spec.encoding, self.spec.sizes, self.spec.multi
        self._plans: dict[tuple[torch.Size, torch.dtype, torch.device, tuple[int, ...], bool], Plan | None] = {}

    def __call__(self, action: object, batch: tuple[int, ...] = (), finite: bool = True) -> torch.Tensor:
        """The action as ``spec`` wants it (``batch`` leading dims); ``finite=False`` leaves the NaN check to
        the caller (the engine checks a whole batch in numpy)."""
        import torch

        if not isinstance(action, torch.Tensor):
            action = _as_tensor(action)
        if action.requires_grad:  # a parameter, or a view of one: no_grad does not detach those
            action = action.detach()
        plan = self.plan_of(action, batch, finite)
        return action if plan is None else plan(action)

    def plan_of(self, action: torch.Tensor, batch: tuple[int, ...] = (), finite: bool = True) -> Plan | None:
        """What an action of ``action``'s shape, dtype and device needs (None: nothing), decided once per kind."""
        key = (action.shape, action.dtype, action.device, batch, finite)
        if key not in self._plans:
            self._plans[key] = self._plan(action, batch, finite)
        return self._plans[key]

    def _plan(self, action: torch.Tensor, batch: tuple[int, ...], finite: bool) -> Plan | None:
        """The steps an action of this shape and dtype needs, each decided here once."""
        import torch

        spec = self.spec
        shape = torch.Size(batch) + spec.shape
        _refuse_complex(action, spec.dtype)
        convert = self._conversion(action, batch, shape)
        steps = [] if convert is None else [convert]  # a conversion checks values and gives spec.dtype
        if convert is None:
            if action.shape != shape:
                self.note(f"actions reshaped from {tuple(action.shape)} to {tuple(shape)}")
                steps.append(lambda a: a.reshape(shape))
            if finite and action.is_floating_point():
                steps.append(_finite)
            if _integral(spec.dtype) and action.is_floating_point():
                steps.append(lambda a: _whole(a, spec.dtype))
            if action.dtype != spec.dtype:
                self.note(f"actions cast from {action.dtype} to the action spec's {spec.dtype}")
                steps.append(lambda a: a.to(spec.dtype))
        if spec.device is not None and action.device != spec.device:
            steps.append(lambda a: a.to(spec.device))
        return _chain(steps)

    def _conversion(self, action: torch.Tensor, batch: tuple[int, ...], shape: torch.Size) -> Plan | None:
        """Index -> one-hot or one-hot -> index, when the action has the other encoding's size; else
        None. A wrong size is refused here, with what each encoding would be."""
        import torch

        n, other = action.numel(), self._other_shape()
        if n == shape.numel() or other is None:
            if n != shape.numel():
                raise _wrong_shape(shape, action, batch, None)
            return None
        full = torch.Size(batch) + other
        if n != full.numel():
            raise _wrong_shape(shape, action, batch, full, self.encoding)
        dtype = self.spec.dtype
        if self.encoding == "onehot":
            self.note(f"actions converted from indices {tuple(action.shape)} to the env's one-hot {tuple(shape)}")
            return lambda a: _to_one_hot(a.reshape(full), self.sizes, self.multi, dtype)
        self.note(f"actions converted from one-hot {tuple(action.shape)} to indices {tuple(shape)}")
        return lambda a: _to_index(a.reshape(full), self.sizes, self.multi, self.start).to(dtype)

    def _other_shape(self) -> torch.Size | None:
        """The shape of the encoding the spec does not use (indices for a one-hot spec and back), or None."""
        import torch

        shape, sizes = self.spec.shape, self.sizes
        if self.encoding == "onehot":  # OneHot: [..., n] -> [...]; MultiOneHot: [..., sum] -> [..., len]
            return shape[:-1] + (torch.Size([len(sizes)]) if self.multi else torch.Size())
        if self.encoding == "index":  # Categorical: [...] -> [..., n]; MultiCategorical: [..., len] -> [..., sum]
            return (shape[:-1] if self.multi else shape) + torch.Size([sum(sizes)])
        return None


def _encoding(spec: TensorSpec) -> tuple[str | None, list[int], bool]:
    """``("onehot" | "index", category sizes, several components)`` of a discrete spec, else ``(None, [], False)``."""
    from torchrl.data import Categorical, MultiCategorical, MultiOneHot, OneHot

    if isinstance(spec, MultiOneHot):
        return "onehot", [int(n) for n in spec.nvec], True
    if isinstance(spec, OneHot):
        return "onehot", [int(spec.space.n)], False
    if isinstance(spec, MultiCategorical):
        return "index", [int(n) for n in spec.nvec.reshape(-1)], True
    if isinstance(spec, Categorical):
        return "index", [int(spec.space.n)], False
    return None, [], False


def _as_tensor(action: object) -> torch.Tensor:
    import torch

    try:
        return torch.as_tensor(action)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise PolicyError("the policy's action is not an array of numbers", expected="a tensor, a numpy array, "
                          "a number or a (nested) list of numbers", got=f"{type(action).__name__}: {exc}",
                          fix="return the action as a tensor or a numpy array") from exc


def _chain(steps: list[Plan]) -> Plan | None:
    """The steps as one callable; None when there is nothing to do (the action is taken as it is)."""
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]

    def run(a: torch.Tensor) -> torch.Tensor:
        for step in steps:
            a = step(a)
        return a

    return run


def _integral(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex)


def _finite(action: torch.Tensor) -> torch.Tensor:
    """``action``, checked finite: in numpy for a CPU tensor that numpy can view (2 us against torch's
    8 us for a small action, paid at every step), in torch otherwise (bfloat16, other devices)."""
    import torch

    if action.device.type == "cpu" and action.dtype in (torch.float32, torch.float64, torch.float16):
        finite = bool(np.isfinite(action.numpy()).all())
    else:
        finite = bool(torch.isfinite(action).all())
    if not finite:
        raise non_finite_action(action)
    return action


def _whole(action: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if not bool((action == action.round()).all()):
        raise PolicyError("the policy's action has the wrong dtype",
                          expected=f"whole numbers ({dtype}, the env's action spec)",
                          got=f"fractional values {str(action.tolist())[:200]} ({action.dtype})",
                          fix="return the chosen action index (e.g. logits.argmax(-1)), not probabilities")
    return action


def _refuse_complex(action: torch.Tensor, dtype: torch.dtype) -> None:
    if action.is_complex():
        raise PolicyError("the policy's action has the wrong dtype", expected=f"real values ({dtype})",
                          got=f"complex values ({action.dtype})", fix="return a real tensor from the policy")


def _wrong_shape(shape: torch.Size, action: torch.Tensor, batch: tuple[int, ...], other: torch.Size | None,
                 encoding: str | None = None) -> PolicyError:
    """The wrong-shape error; for a discrete space (``other``, the shape of the encoding the spec does not use)
    it names both encodings, each with its own shape: the spec's ``encoding`` ("index" or "onehot") first."""
    per_batch = f", for a batch of {batch[0]} envs" if batch else ""
    expected = f"shape {tuple(shape)} (the env's action spec{per_batch})"
    if other is not None:
        assert encoding is not None  # ``other`` is the shape of the encoding that the spec's one is not
        names = {"index": "indices", "onehot": "one-hot"}
        expected = (f"shape {tuple(shape)} ({names[encoding]}, the env's action spec{per_batch}) or {tuple(other)} "
                    f"({names['onehot' if encoding == 'index' else 'index']})")
    return PolicyError("the policy's action has the wrong shape", expected=expected,
                       got=f"shape {tuple(action.shape)}",
                       fix="make the policy output one action per step for this env"
                           + (" and per row of a batch (or pass --policy-batch per-env)" if batch else ""))


def _to_one_hot(index: torch.Tensor, sizes: list[int], multi: bool, dtype: torch.dtype) -> torch.Tensor:
    """Indices ``[..., len(sizes)]`` (``[...]`` for one category) to their one-hot vectors end to end."""
    import torch

    if index.is_floating_point():
        _whole(index, dtype)
    index = index.long()
    columns = list(index.unbind(-1)) if multi else [index]
    for column, n in zip(columns, sizes):
        if bool(((column < 0) | (column >= n)).any()):
            raise PolicyError("the policy's action is not a valid index", expected=f"indices in [0, {n})",
                              got=str(index.tolist())[:200], fix="return the chosen index (e.g. logits.argmax(-1))")
    return torch.cat([torch.nn.functional.one_hot(c, n) for c, n in zip(columns, sizes)], -1).to(dtype)


def _to_index(one_hot: torch.Tensor, sizes: list[int], multi: bool, start: int | torch.Tensor) -> torch.Tensor:
    """One-hot vectors end to end ``[..., sum(sizes)]`` to indices (``+ start``)."""
    import torch

    parts = one_hot.split(sizes, -1)
    if not all(bool((((p == 0) | (p == 1)).all()) and (p.sum(-1) == 1).all()) for p in parts):
        raise PolicyError("the policy's action is neither an index nor a one-hot vector",
                          expected=f"one index per component, or one-hot vectors of {sizes} entries end to end"
                          if multi else f"an index, or a one-hot vector of {sizes[0]} entries",
                          got=f"values {str(one_hot.tolist())[:200]}",
                          fix="return the chosen index (e.g. probs.argmax(-1)), not probabilities or scores")
    index = torch.stack([p.argmax(-1) for p in parts], -1) if multi else parts[0].argmax(-1)
    return index + start if not (isinstance(start, int) and start == 0) else index


class ActionGuard:
    """Refuses a NaN or infinite action, or an integer action outside the space, in a batch of actions:
    one numpy check for the whole batch per step, and the rows looked at only when it fails.

    Args:
        out: The batch's action array (``[K, ...]``), filled anew before each call.
        bounds: The lowest and highest valid integer actions (:func:`gym_bounds`), None for a Box.

    Example:
        >>> out = np.zeros((2, 3), np.float32)
        >>> guard = ActionGuard(out, None)
        >>> guard(np.arange(2)) is out
        True
        >>> out[1, 2] = np.nan
        >>> guard(np.array([0]))[0].tolist()      # a row that is not stepped may hold anything
        [0.0, 0.0, 0.0]
        >>> guard(np.array([0, 1]))
        Traceback (most recent call last):
        ...
        torchrl_render.errors.PolicyError: the policy produced a NaN or infinite action. Got: [0.0, 0.0, nan].
        Fix: check the checkpoint's weights and the observation normalisation.
    """

    def __init__(self, out: Array, bounds: Bounds | None) -> None:
        self.out, self.bounds = out, bounds
        self.floats = out.dtype.kind == "f"
        self.flat = out.reshape(-1)  # a view: x . 0 is 0 for finite x, NaN for NaN and inf (one BLAS call)
        self.zeros = np.zeros_like(self.flat)

    def __call__(self, rows: NDArray[np.intp]) -> Array:
        out = self.out
        if self.floats and not math.isfinite(self.flat.dot(self.zeros)):
            bad = out[rows]
            if not np.isfinite(bad).all():
                raise non_finite_action(bad[~np.isfinite(bad).all(axis=tuple(range(1, bad.ndim)))][0])
        if self.bounds is not None:
            actions = out[rows]
            outside = (actions < self.bounds[0]) | (actions > self.bounds[1])
            if outside.any():
                raise _out_of_space(actions[outside.reshape(len(rows), -1).any(-1)][0], self.bounds)
        return out


def _out_of_space(actions: Array, bounds: Bounds) -> Exception:
    low, high = (np.asarray(b).tolist() for b in bounds)
    return PolicyError("the policy's action is outside the env's action space",
                       expected=f"whole numbers from {low} to {high}", got=str(actions.tolist())[:200],
                       fix="return a valid index (e.g. logits.argmax(-1)), or 0/1 values for a MultiBinary space")
