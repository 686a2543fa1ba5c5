"""Import specs and the factory-call protocol."""

from __future__ import annotations

import pytest

from torchrl_render import RenderConfig, RenderEnvSpec, ResolveError
from torchrl_render.resolve import call_factory, resolve


def spec(**env_kwargs):
    return RenderEnvSpec.from_config(RenderConfig(policy="p:m", env="e:m", seed=7, env_kwargs=env_kwargs))


def test_module_object_and_callable():
    from helpers import tinyenv
    assert resolve("helpers.tinyenv:make_env", "env") is tinyenv.make_env
    assert resolve(tinyenv.make_env, "env") is tinyenv.make_env
    assert resolve("helpers.tinyenv:TinyEnv._reset", "env") is tinyenv.TinyEnv._reset


def test_file_path_spec(tmp_path):
    f = tmp_path / "my_factories.py"
    f.write_text("import helper_mod\ndef make():\n    return helper_mod.VALUE\n")
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    assert resolve(f"{f}:make", "env")() == 41


@pytest.mark.parametrize("text,fragment", [
    ("helpers.tinyenv.make_env", "has no colon"),
    ("tinyenv:", "is incomplete"),
    ("no_such_module_xyz:make", "cannot import module 'no_such_module_xyz'"),
    ("helpers.tinyenv:make_evn", "has no attribute 'make_evn'. Did you mean 'make_env'?"),
    ("helpers.tinyenv:torch", "'helpers.tinyenv:torch' is not callable"),
    ("missing/file.py:make", "does not exist"),
])
def test_resolve_errors(text, fragment):
    with pytest.raises(ResolveError) as exc:
        resolve(text, "env")
    assert fragment in str(exc.value) and "Fix:" in str(exc.value)


def test_module_that_raises_on_import(tmp_path, monkeypatch):
    (tmp_path / "broken_mod_abc.py").write_text("raise ValueError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ResolveError, match="importing 'broken_mod_abc' raised ValueError: boom at import"):
        resolve("broken_mod_abc:make", "env")


def test_module_with_missing_dependency(tmp_path, monkeypatch):
    (tmp_path / "needs_dep_abc.py").write_text("import not_installed_pkg_q\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ResolveError, match="module 'not_installed_pkg_q' is not installed"):
        resolve("needs_dep_abc:make", "env")


def test_protocol_no_args_spec_fields_and_kwargs():
    assert call_factory(lambda: 1, spec(), {}, "env") == 1
    s = spec()
    assert call_factory(lambda spec: spec, s, {}, "env") is s
    assert call_factory(lambda cfg: cfg, s, {}, "env") is s          # single positional: the spec
    assert call_factory(lambda seed, device: (seed, device), s, {}, "env") == (7, "cpu")
    assert call_factory(lambda size=3: size, s, {"size": 5}, "env") == 5
    assert call_factory(lambda **kw: kw, s, {"a": 1}, "env") == {"a": 1}
    assert call_factory(lambda spec, a: (spec.seed, a), s, {"a": 2}, "env") == (7, 2)


def test_protocol_spec_carries_kwargs_when_factory_takes_spec():
    s = spec(a=1)
    assert call_factory(lambda spec: spec.env_kwargs, s, {"a": 1}, "env") == {"a": 1}


def test_protocol_unknown_kwarg_did_you_mean():
    def make(size=3):
        return size
    with pytest.raises(ResolveError, match="does not accept env_kwargs key 'szie'. Did you mean 'size'?"):
        call_factory(make, spec(), {"szie": 4}, "env")


def test_protocol_unprovided_argument():
    def make(a, b):
        return a, b
    with pytest.raises(ResolveError, match="needs argument\\(s\\) a, b that nothing provides"):
        call_factory(make, spec(), {}, "env")


def test_factory_exception_is_wrapped_with_its_name():
    def make_env():
        raise RuntimeError("the simulator is sad")
    with pytest.raises(ResolveError) as exc:
        call_factory(make_env, spec(), {}, "env")
    assert "the env factory" in str(exc.value) and "make_env" in str(exc.value)
    assert "RuntimeError: the simulator is sad" in str(exc.value)


def test_every_message_spells_a_factory_one_way(tmp_path, monkeypatch, capsys):
    """'file.py:name' (or 'module:name'): the same in the resolver's, the env's, the policy's and compat's messages."""
    from torchrl_render.cli import main
    from torchrl_render.compat import call_with_supported_kwargs
    from torchrl_render.resolve import factory_name

    (tmp_path / "facts.py").write_text("def make_env():\n    return 'not an env'\n\n"
                                       "def make_policy():\n    return None\n\n"
                                       "def needs(alpha, beta):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    tiny = ["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.tinyenv:make_env", "--out", "run.jsonl"]
    messages = []
    for argv in (["--env", "facts.py:make_env", *tiny[:2], "--out", "run.jsonl"],
                 ["--policy", "facts.py:make_policy", *tiny[2:]]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        messages.append(capsys.readouterr().err)
    with pytest.raises(ResolveError) as exc:
        call_with_supported_kwargs(resolve("facts.py:needs", "env"), None, {})
    messages.append(str(exc.value))
    assert "the env factory 'facts.py:make_env' returned a builtins.str" in messages[0]
    assert "the policy factory 'facts.py:make_policy' returned NoneType" in messages[1]
    assert "cannot call the factory 'facts.py:needs'" in messages[2]
    assert factory_name("pkg/facts.py:make_env") == factory_name(resolve("facts.py:make_env", "env"))
    assert factory_name("helpers.tinyenv:make_env") == factory_name(resolve("helpers.tinyenv:make_env", "env"))
