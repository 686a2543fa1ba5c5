"""The CLI: generated flags, config files, exit codes and one-paragraph errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from torchrl_render import RenderConfig
from torchrl_render.backends import BACKENDS
from torchrl_render.cli import build_parser, main
from torchrl_render.writers import WRITERS

from helpers.mediaprobe import probe_mp4
from helpers.paths import ROOT, TESTS

TINY = ["--policy", "helpers.tinyenv:make_policy", "--env", "helpers.tinyenv:make_env", "--from-pixels"]


def test_every_config_field_is_a_flag():
    import dataclasses
    dests = {a.dest for a in build_parser()._actions}
    assert {f.name for f in dataclasses.fields(RenderConfig)} <= dests


def test_choices_come_from_the_registries():
    actions = {a.dest: a for a in build_parser()._actions}
    assert actions["format"].choices == WRITERS.names()
    assert actions["render_backend"].choices == BACKENDS.names()


def test_list_formats_and_backends(capsys):
    assert main(["--list-formats"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in WRITERS.names())
    assert main(["--list-backends"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in BACKENDS.names())


def test_print_config_and_config_file_override(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("policy: a:b\nenv: c:d\nnum_trajs: 4\nfps: 12\n")
    assert main(["--config", str(cfg), "--num-trajs", "2", "--stochastic", "--print-config"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["num_trajs"], data["fps"], data["deterministic"], data["policy"]) == (2, 12.0, False, "a:b")


@pytest.mark.parametrize("argv,fragment", [
    (["--policy", "a:b", "--env", "c:d", "--out", "x.gif", "--format", "mp4"], "says gif, but format is 'mp4'"),
    (["--policy", "a:b", "--env", "c:d", "--max-steps", "0"], "max_steps must be at least 1"),
    (["--policy", "a:b", "--env", "c:d", "--fps", "-2"], "fps must be a positive number"),
    (["--policy", "a:b"], "Missing required rlrender option --env: no env was given"),
    (["--policy", "a:b", "--env", "c:d", "--env-kwargs", "{bad"], "env_kwargs is not valid JSON"),
    (["--config", "missing.toml"], "does not exist"),
    (["--policy", "nomodule_zz:p", "--env", "helpers.tinyenv:make_env", "--out", "{tmp}/o.mp4"],
     "cannot import module"),
    (["--ckpt", "{tmp}/none.pt", *TINY, "--out", "{tmp}/o.mp4"], "does not exist"),
    (["--policy", "helpers.tinyenv:make_policy", "--env", "HalfCheetah-v9", "--out", "{tmp}/o.mp4"],
     "Did you mean 'HalfCheetah-v5'?"),
])
def test_user_errors_exit_2_with_one_paragraph(tmp_path, capsys, argv, fragment):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as exc:  # as argparse's errors and torchrl.render's main
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("torchrl-render: error: ") and fragment in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--format", "avi"])
    assert exc.value.code == 2 and "invalid choice: 'avi'" in capsys.readouterr().err


def test_debug_shows_traceback(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--policy", "a:b", "--env", "c:d", "--fps", "0", "--debug"])
    assert exc.value.code == 2
    assert "Traceback" in capsys.readouterr().err


def test_validate_only_and_dry_run(tmp_path, capsys):
    assert main(["--policy", "a:b", "--env", "c:d", "--validate-only"]) == 0
    assert "valid" in capsys.readouterr().out
    assert main([*TINY, "--out", str(tmp_path / "r.mp4"), "--dry-run"]) == 0
    assert "dry run" in capsys.readouterr().out and list(tmp_path.iterdir()) == []


def test_success_prints_the_artifact_path(tmp_path, capsys):
    out = tmp_path / "r.mp4"
    assert main([*TINY, "--out", str(out), "--num-trajs", "2", "--max-steps", "3"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out)
    assert "mean return" in captured.err
    assert probe_mp4(out)["frames"] == 8


@pytest.mark.slow
def test_python_m_subprocess(tmp_path):
    out = tmp_path / "r.gif"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    proc = subprocess.run([sys.executable, "-m", "torchrl_render", *TINY, "--out", str(out), "--max-steps", "2",
                           "--quiet"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out) and out.exists()
    bad = subprocess.run([sys.executable, "-m", "torchrl_render", *TINY, "--out", str(out)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert bad.returncode == 2 and "already exists" in bad.stderr and "Traceback" not in bad.stderr


def test_docs_cli_reference_is_current():
    from torchrl_render.cli import markdown_reference
    assert (ROOT / "docs" / "cli.md").read_text() == markdown_reference(), \
        "regenerate docs/cli.md (see its second line)"


def test_docs_formats_table_lists_every_writer():
    text = (ROOT / "docs" / "formats.md").read_text()
    for name in WRITERS.names():
        assert f"| `{name}` |" in text and f"## {name}" in text, name


def test_version_of_the_command_and_of_every_subcommand_is_the_package_version(capsys):
    import torchrl_render
    from torchrl_render.cli import SUBCOMMANDS, main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"torchrl-render {torchrl_render.__version__}\n"
    for name in SUBCOMMANDS:
        assert main([name, "--version"]) == 0
        assert capsys.readouterr().out == f"torchrl-render {name} {torchrl_render.__version__}\n"
    from importlib.metadata import version

    assert version("torchrl_render") == torchrl_render.__version__  # pyproject reads the same string


def test_help_and_the_reference_name_every_subcommand(capsys):
    from torchrl_render.cli import SUBCOMMAND_HELP, SUBCOMMANDS, markdown_reference

    assert list(SUBCOMMAND_HELP) == list(SUBCOMMANDS)
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "subcommands (python -m torchrl_render SUBCOMMAND --help):" in out
    reference = markdown_reference()
    for name, text in SUBCOMMAND_HELP.items():
        assert f"  {name:<13} {text}" in out
        assert f"| `{name}` | {text} |" in reference
    assert "### replay" in reference and "| `--mujoco-asset-paths` |" in reference
    assert "### compare" in reference and "| `--bootstrap-reps` | `2000` |" in reference


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """``--print-config | head``: the reader is gone before the command writes; no BrokenPipeError traceback."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    for argv in (["--policy", "a:b", "--env", "c:d", "--print-config"],
                 ["sweep", "--ckpt", "a.pt", "--policy", "a:b", "--env", "c:d", "--out", "s", "--print-config"]):
        read, write = os.pipe()
        os.close(read)  # as `| head` once head has exited
        proc = subprocess.run([sys.executable, "-m", "torchrl_render", *argv], stdout=write, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path, env=env, timeout=120)
        os.close(write)
        assert proc.returncode == 141, proc.stderr
        assert proc.stderr == ""


def test_the_main_command_takes_several_asset_paths():
    """(``replay`` takes them the same way: tests/replay/test_replay_rollouts.py runs it.)"""
    main_cfg = build_parser().parse_args(["--policy", "a:b", "--env", "c:d", "--mujoco-asset-paths", "a", "b",
                                          "--mujoco-asset-paths", "c"])
    assert main_cfg.mujoco_asset_paths == ["a", "b", "c"]
