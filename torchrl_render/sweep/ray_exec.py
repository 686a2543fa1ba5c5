"""The Ray executor: each unit is a Ray generator task with declared resources.

``--ray-address`` joins a running cluster (``auto`` or ``HOST:PORT``); without it a local
Ray instance is started for the sweep and stopped after it, every server of it bound to
127.0.0.1 (see :func:`_loopback_only`) and, unless ``RAY_AUTH_MODE`` says otherwise, with
Ray's token authentication on. Each unit runs as a task
declaring ``--ray-num-cpus`` / ``--ray-num-gpus``; it yields one message per finished
episode, which Ray streams back to the driver before the task ends, and the driver alone
writes the results files. Ray's own task retries are off: when a worker dies, the driver
learns it from the task's error and resubmits only the episodes not yet recorded.

Ray is an optional extra: ``pip install torchrl_render[ray]``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import tempfile
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from ..envs.gl import ensure_headless_gl
from ..errors import ConfigError
from .work import LostMessage, Message, Unit, run_unit

if TYPE_CHECKING:
    from ray import ObjectRefGenerator

__all__ = ["RAY_EXTRA", "RayExecutor", "import_ray"]

RAY_EXTRA = "torchrl_render[ray]"
LOOPBACK = "127.0.0.1"

log = logging.getLogger("torchrl_render")


def import_ray() -> ModuleType:
    """``import ray``, or an error that names the extra."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("the ray executor needs Ray, which is not installed", expected="ray importable",
                          got=f"ImportError: {exc}", fix="install the extra, or use --executor local (the default)",
                          extra=f"'{RAY_EXTRA}'") from exc
    return ray


class RayExecutor:
    """Submits units as Ray tasks; :meth:`poll` returns the messages they streamed back."""

    name = "ray"

    def __init__(self, address: str | None, num_cpus: float, num_gpus: float) -> None:
        self.ray = import_ray()
        self.tasks: dict[ObjectRefGenerator, str] = {}  # each unit's task, streaming its messages: the unit's id
        self.started_here = False
        if not self.ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            env_vars = {"PYTHONPATH": _python_path(), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
            options = {"address": address, "log_to_driver": False, "logging_level": logging.WARNING,
                       "runtime_env": {"env_vars": env_vars}}
            output: list[str] = []
            try:
                # the user's cluster, on the user's network, joined as it is (ray.init joins $RAY_ADDRESS too)
                if address or os.environ.get("RAY_ADDRESS"):
                    with _stderr_kept(output):
                        self.ray.init(**options)
                else:
                    # "local": a new instance of our own, as the docs promise; ray.init(address=None) would join
                    # the latest cluster a `ray start` left running on this machine (its network, its settings)
                    with _loopback_only():
                        self.ray.init(**{**options, "address": "local"}, include_dashboard=False,
                                      _node_ip_address=LOOPBACK)
                    exposed, line = _local_instance_line(self.ray)
                    log.log(logging.WARNING if exposed else logging.INFO, "%s", line)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise connect_error(address or os.environ.get("RAY_ADDRESS"), exc, "".join(output)) from exc
            self.started_here = True
        self.remote = self.ray.remote(_ray_unit).options(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=0)

    def submit(self, unit: Unit) -> None:
        self.tasks[self.remote.remote(unit, os.getcwd())] = unit["id"]

    def busy(self) -> bool:
        return bool(self.tasks)

    def cancel_pending(self) -> None:
        """Stops scheduling: every task not finished is cancelled (its recorded episodes stay)."""
        for task in list(self.tasks):
            try:
                self.ray.cancel(task, force=True)
            except Exception:  # already finished or gone
                pass
        self.tasks.clear()

    def poll(self, timeout: float) -> list[Message]:
        if not self.tasks:
            return []
        ready, _ = self.ray.wait(list(self.tasks), num_returns=1, timeout=timeout)
        messages: list[Message] = []
        for task in ready:
            unit = self.tasks[task]
            try:
                message = self.ray.get(next(task))
            except StopIteration:
                del self.tasks[task]
                continue
            except self.ray.exceptions.RayError as exc:  # the worker died or the node went away
                del self.tasks[task]
                lost: LostMessage = {"type": "lost", "unit": unit,
                                     "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
                messages.append(lost)
                continue
            messages.append(message)
        return messages

    def close(self) -> None:
        self.cancel_pending()
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()


def connect_error(address: str | None, exc: Exception, output: str) -> ConfigError:
    """Why joining the cluster failed: a token the cluster refused (Ray logs ``InvalidAuthToken`` on stderr while
    ``ray.init`` retries, then raises a plain ConnectionError), or no cluster at that address."""
    if "InvalidAuthToken" in output or "InvalidAuthToken" in str(exc) or "Unauthenticated" in str(exc):
        return ConfigError(f"the Ray cluster at {address!r} refused this process's authentication token "
                           "(InvalidAuthToken): the cluster runs with token authentication, and this process has no "
                           "token or another one", expected="the cluster's token, given to the sweep's process",
                           got="RAY_AUTH_MODE=" + os.environ.get("RAY_AUTH_MODE", "(unset)") + ", RAY_AUTH_TOKEN_PATH="
                           + os.environ.get("RAY_AUTH_TOKEN_PATH", "(unset)"),
                           fix="export RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=<the token file the cluster was "
                               "started with> (or RAY_AUTH_TOKEN=<token>; `ray get-auth-token` prints it on the "
                               "head node), then run the same command again")
    return ConfigError(f"could not connect to the Ray cluster at {address!r}: {exc}",
                       expected="a running cluster (ray start --head) at that address",
                       got=str(address), fix="check --ray-address, or drop it to start a local instance")


@contextlib.contextmanager
def _stderr_kept(output: list[str]) -> Iterator[None]:
    """Copies what is written to fd 2 meanwhile (Ray's C++ client logs there) into ``output``; still shown after."""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            output.append(text)
            if text:
                sys.stderr.write(text)
                sys.stderr.flush()


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
    """While a local Ray instance starts: its node IP is 127.0.0.1, so every server binds there.

    Ray 2.60's processes bind their gRPC servers (GCS, raylet, each worker's core worker) and the
    runtime-env agent to the node IP address they are given; but ``ray.init(_node_ip_address=
    "127.0.0.1")`` alone does not give them loopback: ``services.resolve_ip_for_localhost`` turns a
    loopback address into the machine's outward address, and the servers then bind to ``::`` (all
    interfaces) and the agent to that address. It keeps loopback only when
    ``ray_constants.ENABLE_RAY_CLUSTER`` is false (Ray's own setting for Windows and macOS, where
    clusters are off by default), so that is set in this process while the instance starts, and
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` in the environment the instance's processes inherit.
    Both are restored afterwards: a later ``ray.init`` in this process behaves as Ray's default.
    """
    from ray._private import ray_constants

    env_var = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    saved_env, saved_flag = os.environ.get(env_var), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[env_var] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(env_var, None)
        else:
            os.environ[env_var] = saved_env


def _local_instance_line(ray: ModuleType) -> tuple[bool, str]:
    """The line logged when a local instance has started: where it listens, whether it asks for a token.

    Returns (whether other machines or tokenless processes can reach it, the line): a warning then.
    """
    # ray's _raylet.pyi (ray 2.60) lists neither, though the compiled _raylet has both
    from ray._raylet import AuthenticationMode, get_authentication_mode  # type: ignore[attr-defined]

    node = ray._private.worker._global_node
    auth = get_authentication_mode() == AuthenticationMode.TOKEN
    where = node.node_ip_address
    reach = ("reachable from this machine only" if where == LOOPBACK
             else f"reachable from the network at {where}: its node IP did not stay on loopback")
    token = ("token authentication on (a request without the cluster's token is refused)" if auth
             else "token authentication OFF (RAY_AUTH_MODE=disabled): any local process can submit work")
    line = (f"local Ray instance: GCS at {node.gcs_address}, raylet, workers and the runtime-env agent on {where}, "
            f"no dashboard; {reach}; {token}")
    return where != LOOPBACK or not auth, line


def _python_path() -> str:
    """The driver's import path (minus the interpreter's own folders), for the workers."""
    own = (sys.prefix, sys.base_prefix)
    paths = [os.path.abspath(p or ".") for p in sys.path]
    paths = [p for p in paths if not any(p.startswith(o) for o in own)]
    paths += os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return os.pathsep.join(dict.fromkeys(p for p in paths if p))


def _ray_unit(unit: Unit, cwd: str) -> Iterator[Message]:
    """The Ray task: runs the unit on a thread of its own and yields its messages as they come."""
    if os.path.isdir(cwd):
        os.chdir(cwd)

    ensure_headless_gl()
    messages: queue.Queue[Message] = queue.Queue()
    thread = threading.Thread(target=run_unit, args=(unit, messages.put), name="torchrl_render-unit", daemon=True)
    thread.start()  # the env and the policy are built and used on this one thread only
    while True:
        message = messages.get()
        yield message
        if message["type"] in ("done", "error"):
            break
    thread.join()
