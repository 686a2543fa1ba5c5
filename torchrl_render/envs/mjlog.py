"""MuJoCo's warnings go to the run's notes, never to stderr or a ``MUJOCO_LOG.TXT`` in the user's folder.

MuJoCo reports model-compiler deprecations (HalfCheetah's and dm_control cheetah's
``settotalmass``) and simulation trouble (``Nan, Inf or huge value in QPOS``) through
``mju_warning``. Without a handler, MuJoCo 3.17 prints ``WARNING: ...`` on the console
and appends it to ``MUJOCO_LOG.TXT`` in the current folder (its ``MjLogConfig``); with
dm_control imported, dm_control's handler logs it through absl (``WARNING:absl:...``).

:func:`captured_mujoco_warnings` installs our handler (``mujoco.set_mju_user_warning``),
turns MuJoCo's console and file logging off, and catches dm_control's absl record, for
the duration of a run; each message becomes a debug log line (``--debug`` shows it) and, unless it
is a deprecation in a model file (not the user's to fix), one note (``MuJoCo warned: ...``).
:func:`quiet_mujoco_log` does the same, without notes, in env worker processes.

Example:
    >>> import mujoco
    >>> model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><joint/><geom size='.1'/></body>"
    ...                                        "</worldbody></mujoco>")
    >>> data = mujoco.MjData(model)
    >>> data.qpos[0] = float("nan")  # MuJoCo warns, and resets the simulation
    >>> with captured_mujoco_warnings() as notes:
    ...     mujoco.mj_step(model, data)
    >>> notes
    ['MuJoCo warned: Nan, Inf or huge value in QPOS at DOF 0. The simulation is unstable. Time = 0.0000.']
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["captured_mujoco_warnings", "quiet_mujoco_log"]

log = logging.getLogger("torchrl_render")


class _DmControlFilter(logging.Filter):
    """Takes dm_control's re-logged MuJoCo warnings off the absl logger and hands them to ``sink``."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        if record.funcName == "_warning_callback" and "dm_control" in record.pathname:
            self.sink(record.getMessage())
            return False
        return True


def _absl_logger() -> logging.Logger:
    """absl's logger, as absl makes it (asking logging for it first would make a plain Logger of another class)."""
    if importlib.util.find_spec("absl") is not None:
        from absl import logging as absl_logging

        return absl_logging.get_absl_logger()
    return logging.getLogger("absl")


def _import_mujoco() -> ModuleType | None:
    """mujoco, or ``None`` when it is not installed or cannot start (a missing GL library: the env build says so)."""
    if importlib.util.find_spec("mujoco") is None:
        return None
    try:
        import mujoco
    except Exception as exc:  # e.g. MUJOCO_GL=osmesa without libOSMesa: PyOpenGL fails inside mujoco's import
        log.debug("mujoco cannot be imported (%s: %s); its warnings are not routed", type(exc).__name__, exc)
        return None
    return mujoco


def _mute_log_file(mujoco: ModuleType) -> tuple[bool, bool]:
    """Turns MuJoCo's own console and ``MUJOCO_LOG.TXT`` logging off; returns what they were."""
    config = mujoco.MjLogConfig.get()
    before = (config.logto_file, config.logto_console)
    config.logto_file = False
    config.logto_console = False
    config.set()
    return before


@contextmanager
def captured_mujoco_warnings(notes: list[str] | None = None) -> Iterator[list[str]]:
    """Routes MuJoCo's warnings into ``notes`` (a new list if ``None``) while the block runs.

    A no-op when mujoco is not installed. Must be entered after :func:`torchrl_render.envs.gl.ensure_headless_gl`
    (it imports mujoco). The previous handler is restored on exit.
    """
    messages: list[str] = [] if notes is None else notes
    mujoco = _import_mujoco()
    if mujoco is None:
        yield messages
        return

    def sink(message: str | bytes) -> None:
        text = f"MuJoCo warned: {message.decode() if isinstance(message, bytes) else message}"
        log.debug("%s", text)
        if "deprecated" not in text and text not in messages:  # a model file's deprecation is not the user's to fix
            messages.append(text)

    previous = mujoco.get_mju_user_warning()
    to_file, to_console = _mute_log_file(mujoco)
    mujoco.set_mju_user_warning(sink)
    absl = _absl_logger()
    dm_filter = _DmControlFilter(sink)
    absl.addFilter(dm_filter)
    try:
        yield messages
    finally:
        absl.removeFilter(dm_filter)
        mujoco.set_mju_user_warning(previous)
        config = mujoco.MjLogConfig.get()
        config.logto_file, config.logto_console = to_file, to_console
        config.set()


def quiet_mujoco_log() -> None:
    """In a worker process: MuJoCo's warnings become debug log lines; no console output, no log file."""
    mujoco = _import_mujoco()
    if mujoco is None:
        return
    _mute_log_file(mujoco)
    mujoco.set_mju_user_warning(lambda message: log.debug("MuJoCo warned: %s", message))
    _absl_logger().addFilter(_DmControlFilter(lambda message: log.debug("MuJoCo warned: %s", message)))
