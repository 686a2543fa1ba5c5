"""Fuzzing the two front doors: RenderConfig fields and CLI argument lists.

Every outcome is a success or a :class:`RenderError` (the CLI: exit 0, or exit 2 from
a ``RenderError`` or from argparse), never another exception. Strategies are built from
``dataclasses.fields(RenderConfig)`` and ``build_parser()``, so a new field or flag is
fuzzed without touching this file. Deterministic (``derandomize=True``) so CI is stable.

Each bug the fuzzer found is pinned by a small explicit test below.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import math
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchrl_render import RenderConfig, RenderError
from torchrl_render.backends import BACKENDS
from torchrl_render.cli import build_parser, main
from torchrl_render.writers import WRITERS

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
FIELDS = {f.name: f for f in dataclasses.fields(RenderConfig)}

anything = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**6), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.binary(max_size=4),
    st.lists(st.one_of(st.text(max_size=5), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2), st.tuples(st.text(max_size=4)),
)


def _choices(f: dataclasses.Field) -> list[str]:
    choices = f.metadata.get("choices")
    if choices == "formats":
        return WRITERS.names()
    if choices == "backends":
        return BACKENDS.names()
    return list(choices or [])


def plausible(f: dataclasses.Field) -> st.SearchStrategy:
    """Values of the field's own type, valid or near the edges of validity."""
    kind = str(f.type)
    if _choices(f):
        return st.sampled_from(_choices(f) + ["", "nope", _choices(f)[0].upper()])
    if kind.startswith("bool"):
        return st.booleans()
    if kind.startswith("int"):
        return st.integers(-2, 60)
    if kind == "float":
        return st.one_of(st.floats(-10, 240), st.sampled_from([0.0, math.nan, math.inf, 29.97]))
    if kind.startswith("list"):
        return st.one_of(st.lists(st.sampled_from(["default", "front", "", "a,b", "-1"]), max_size=3),
                         st.sampled_from(["default", "front,side", ""]))
    if kind.startswith("dict"):
        return st.one_of(st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
                         st.sampled_from(['{"a": 1}', "{bad", "", "x.yaml", "[1]", "noext"]))
    if kind == "NestedKey":
        return st.one_of(st.sampled_from(["observation", "next.reward", "a..b", ".", "", ("a", "b"), ()]),
                         st.text(max_size=6))
    if "Path" in kind:
        return st.sampled_from(["run.mp4", "run.gif", "out_frames", "run.avi", "", "https://x/p.pt", "a/b/c.npz"])
    if f.name in ("device", "policy_device", "env_device"):
        return st.sampled_from(["cpu", "cuda", "cuda:1", "mps", "gpu", "CPU", "cpu:0", ""])
    return st.text(max_size=10)


def field_values(f: dataclasses.Field) -> st.SearchStrategy:
    return st.one_of(plausible(f), plausible(f), anything)


config_kwargs = st.fixed_dictionaries(
    {"policy": st.one_of(st.just("mypkg.policy:make"), anything),
     "env": st.one_of(st.just("HalfCheetah-v5"), anything)},
    optional={name: field_values(f) for name, f in FIELDS.items() if name not in ("policy", "env")})


@SETTINGS
@given(config_kwargs)
@example({"policy": "a:b", "env": "c:d", "fps": math.nan})
@example({"policy": "a:b", "env": "c:d", "num_envs": True})
@example({"policy": "a:b", "env": "c:d", "out": "run.gif", "format": "mp4"})
@pytest.mark.slow
def test_render_config_succeeds_or_raises_a_render_error(kwargs):
    try:
        cfg = RenderConfig(**kwargs)
    except RenderError:
        return
    again = RenderConfig.from_dict(cfg.to_dict())  # a valid config survives its own JSON form
    assert again.to_dict() == cfg.to_dict()


@pytest.mark.parametrize("camera", [1.5, [0.5, 2], None, True])  # whole numbers are camera indices
def test_camera_of_the_wrong_type_is_a_config_error(camera):
    with pytest.raises(RenderError, match="camera"):
        RenderConfig(policy="a:b", env="c:d", camera=camera)


@pytest.mark.parametrize("key", ["\r", "\t", ".\n."])
def test_blank_nested_key_is_a_config_error(key):
    with pytest.raises(RenderError, match="obs_key is not a TensorDict key"):
        RenderConfig(policy="a:b", env="c:d", obs_key=key)


@pytest.mark.parametrize("field", ["format", "render_backend"])
def test_registry_choice_of_the_wrong_type_is_a_config_error(field):
    with pytest.raises(RenderError, match=field.replace("_", " ")):
        RenderConfig(policy="a:b", env="c:d", **{field: []})


# -- the CLI ---------------------------------------------------------------------------------------------------


def _options() -> list[argparse.Action]:
    return [a for a in build_parser()._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def _flag_and_value(action: argparse.Action) -> st.SearchStrategy:
    flag = st.sampled_from(action.option_strings)
    if action.nargs == 0:  # store_true / store_false
        return flag.map(lambda f: [f])
    if action.choices:
        value = st.one_of(st.sampled_from(list(action.choices)), st.text(max_size=6))
    elif action.type is int:
        value = st.one_of(st.integers(-3, 100).map(str), st.text(max_size=4))
    elif action.type is float:
        value = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(str), st.text(max_size=4))
    else:
        value = st.one_of(st.sampled_from(["a:b", "helpers.tinyenv:make_env", '{"a": 1}', "{x", "x.yaml", "run.mp4",
                                           "cpu",
                                           "cuda:3", "default,front", "next.obs", "-1", "--fps"]), st.text(max_size=8))
    return st.tuples(flag, value).map(list)


OPTIONS = _options()
argv_lists = st.lists(st.sampled_from(OPTIONS).flatmap(_flag_and_value), max_size=8).map(
    lambda parts: [token for part in parts for token in part])
stop_before_running = st.sampled_from([["--validate-only"], ["--print-config"], ["--print-config", "--validate-only"]])


@pytest.fixture(scope="module", autouse=True)
def _empty_cwd(tmp_path_factory):
    """Relative paths the fuzzer invents resolve in an empty folder."""
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("fuzz_cwd"))
    yield
    os.chdir(before)


@SETTINGS
@given(argv_lists, st.booleans(), stop_before_running)
@example(["--fps", "nan"], True, ["--validate-only"])
@example(["--config", "x.yaml"], False, ["--print-config"])
@example(["--camera", ""], True, ["--print-config"])
@pytest.mark.slow
def test_cli_exits_0_or_2(argv, with_specs, stop):
    argv = (["--policy", "a:b", "--env", "c:d"] if with_specs else []) + argv + stop
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
    assert code in (0, 2), (argv, err.getvalue())
    if code == 2 and "--debug" not in argv and not err.getvalue().startswith("usage:"):  # --debug: traceback first
        assert err.getvalue().startswith("torchrl-render: error: ") and "Traceback" not in err.getvalue()
    assert os.listdir(".") == []  # --validate-only / --print-config write nothing
