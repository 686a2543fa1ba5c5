"""One exception root for every user-facing failure.

Every error says *what* was wrong, what was *expected*, what was *received* and
*how to fix it*, so that a message read in a terminal or a CI log is enough to
act on. The CLI turns any :class:`RenderError` into a one-paragraph message and
exit code 2; anything else is a bug and keeps its traceback.

Example:
    >>> err = ConfigError("fps must be positive", expected="a number > 0", got=0,
    ...                   fix="pass --fps 30")
    >>> print(err)
    fps must be positive. Expected: a number > 0. Got: 0. Fix: pass --fps 30.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

__all__ = [
    "BackendUnavailable",
    "CheckpointError",
    "ConfigError",
    "EnvError",
    "NoDisplayError",
    "NoFramesError",
    "OutputExistsError",
    "PolicyError",
    "RenderError",
    "ResolveError",
    "RolloutError",
    "UnsafeCheckpointError",
    "UnsafeRolloutsError",
    "UserPolicyError",
    "ViewerError",
    "ViewerTimeout",
    "WriterError",
    "did_you_mean",
    "printable",
    "short_name",
]

_UNSET = object()


class RenderError(Exception):
    """Root of all errors caused by input, environment or artifacts (not bugs).

    Args:
        what: One sentence saying what was wrong.
        expected: What would have been accepted.
        got: What was received (rendered with ``repr`` unless a string).
        fix: How to fix it, as an imperative sentence.
        extra: The pip extra or package that would help, if any.
    """

    def __init__(self, what: str, *, expected: object = None, got: object = _UNSET,
                 fix: str | None = None, extra: str | None = None) -> None:
        self.what = what.rstrip(".")
        self.expected = expected
        self.got = got
        self.fix = fix
        self.extra = extra
        super().__init__(self._compose())

    def _compose(self) -> str:
        parts = [_sentence(self.what)]
        if self.expected is not None:
            parts.append(f"Expected: {_sentence(self.expected)}")
        if self.got is not _UNSET:
            got = self.got if isinstance(self.got, str) else repr(self.got)
            parts.append(f"Got: {_sentence(got)}")
        if self.fix:
            parts.append(f"Fix: {_sentence(self.fix)}")
        if self.extra:
            parts.append(f"Install it with: pip install {self.extra}")
        return " ".join(parts)


def _sentence(text: object) -> str:
    text = printable(str(text).strip())
    return text if text.endswith((".", "?", "!")) else text + "."


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape (``\\x1b``): a file name
    quoted in a message cannot move the cursor, recolour or retitle the user's terminal."""
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf") else
                   ascii(ch)[1:-1] for ch in text)


class ConfigError(RenderError, ValueError):
    """A RenderConfig field, a CLI flag or a config file is invalid."""


class ResolveError(RenderError, ImportError):
    """A ``"module:object"`` spec cannot be imported or called."""


class CheckpointError(RenderError, ValueError):
    """A checkpoint is missing, unreadable or does not fit the policy (a ``ValueError``, as torchrl.render's
    error for a remote checkpoint path)."""


class UnsafeCheckpointError(CheckpointError):
    """A checkpoint needs full unpickling, which can run arbitrary code."""


def short_name(name: str, limit: int = 60) -> str:
    """A file name cut to fit a message: its first 40 and last 12 characters around ``...`` when over ``limit``."""
    return name if len(name) <= limit else f"{name[:40]}...{name[-12:]}"


class UnsafeRolloutsError(RenderError, ValueError):
    """A saved rollouts folder holds pickled entries, which only unpickling (running code) can load."""


class EnvError(RenderError):
    """An environment factory returned something unusable, or the env failed."""


class PolicyError(RenderError):
    """A policy factory returned something unusable, or the policy output is wrong."""


class RolloutError(RenderError):
    """A rollout failed mid-run (the env or policy raised)."""


class BackendUnavailable(RenderError):
    """A render backend cannot serve this env; ``auto`` moves on to the next one."""


class NoFramesError(RenderError):
    """A format that needs frames got none."""


class WriterError(RenderError):
    """An artifact could not be written."""


class OutputExistsError(WriterError):
    """The output path exists and ``overwrite`` is off."""


class UserPolicyError(Exception):
    """The user's policy raised (as opposed to a bug in our adaptation code); ``__cause__`` holds it.

    Not a :class:`RenderError`: the engine turns it into a :class:`PolicyError` that names the step.
    """


class ViewerError(RenderError, RuntimeError):
    """A viewer cannot show this run: ``--viewer`` here, or the MuJoCo viewer of ``torchrl_render.mujoco_wasm``
    (not serving, or closed)."""


class NoDisplayError(ViewerError):
    """``--viewer`` was asked for on a machine without a display (or one that cannot be opened)."""


class ViewerTimeout(ViewerError, TimeoutError):
    """No page of the live viewer drew a state in time (``wait=True``)."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """Returns ``" Did you mean 'x'?"`` for the closest candidate, or ``""``.

    Example:
        >>> did_you_mean("mp5", ["mp4", "gif"])
        " Did you mean 'mp4'?"
    """
    close = difflib.get_close_matches(str(name), list(candidates), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""
