"""What a plugin registers is checked where it is loaded: a render backend must build backends (``from_config``), a
writer must be a :class:`Writer` or have its calls; anything else is a one-paragraph error naming the entry, not an
``AttributeError`` from deep inside a run."""

from __future__ import annotations

import pytest
import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.backends.base import backend_class
from torchrl_render.errors import ConfigError
from torchrl_render.registry import BACKENDS, WRITERS, Entry
from torchrl_render.writers.base import Writer, writer_class
from torchrl_render.writers.jsonl import JsonlWriter


class DuckWriter:
    """A plugin's writer that does not subclass Writer but has the calls a writer group makes."""

    from_config = JsonlWriter.from_config
    wants_state = JsonlWriter.wants_state


def policy():
    return lambda obs: torch.zeros(*obs.shape[:-1], 2)


def test_a_backend_plugin_without_from_config_is_named_and_no_artifact_is_left(tmp_path, monkeypatch):
    monkeypatch.setitem(BACKENDS.table, "nofactory", Entry("helpers.gymtoys:Toy", description="plugin"))
    with pytest.raises(ConfigError) as err:
        backend_class("nofactory")
    assert str(err.value).startswith("render backend 'nofactory' (helpers.gymtoys:Toy) has no from_config")
    assert "register a RenderBackend subclass under 'nofactory'" in str(err.value)
    out = tmp_path / "run.mp4"
    with pytest.raises(ConfigError, match=r"render backend 'nofactory' \(helpers.gymtoys:Toy\) has no from_config"):
        render_policy(RenderConfig(policy=policy, env="helpers.gymtoys:make", render_backend="nofactory",
                                   num_trajs=1, out=out))
    assert list(tmp_path.iterdir()) == []


def test_a_writer_plugin_is_a_writer_or_has_its_calls(monkeypatch):
    assert writer_class("jsonl") is JsonlWriter and issubclass(writer_class("jsonl"), Writer)
    monkeypatch.setitem(WRITERS.table, "duck", Entry(f"{__name__}:DuckWriter", suffixes=(".duck",)))
    assert writer_class("duck") is DuckWriter  # used as a writer, as a plugin's class always was
    monkeypatch.setitem(WRITERS.table, "notawriter", Entry("helpers.gymtoys:Toy", suffixes=(".nw",)))
    with pytest.raises(ConfigError) as err:
        writer_class("notawriter")
    assert str(err.value).startswith("format 'notawriter' (helpers.gymtoys:Toy) is not a writer: it has no "
                                     "from_config and wants_state")
    assert "register a Writer subclass under 'notawriter'" in str(err.value)
