"""--render-select: each selector films the right episodes, the artifacts hold exactly their frames, and a
filmed re-run that does not reproduce the first pass is caught and reported per episode."""

from __future__ import annotations

import json

import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.cli import main
from torchrl_render.errors import ConfigError
from torchrl_render.selection import choose, parse_selectors

from helpers.browser import needs_browser, open_page
from helpers.mediaprobe import gif_frames, probe_mp4
from helpers.select_toys import expected

N = 12
RETURNS = [expected(s)[0] for s in range(N)]
LENGTHS = [expected(s)[1] for s in range(N)]
BASE = dict(policy="helpers.select_toys:zero_policy", env="helpers.select_toys:make", num_trajs=N,
            render_quality="fast", progress=False)


def _ranked(sign: float) -> list[int]:
    return sorted(range(N), key=lambda i: (sign * RETURNS[i], i))


def _run(tmp_path, out="run.mp4", **fields):
    return render_policy(**{**BASE, "out": str(tmp_path / out), **fields})


def _filmed(result) -> dict[int, str]:
    return {e["episode_ix"]: e["render_reason"] for e in result.metrics["per_episode"] if "render_reason" in e}


@pytest.mark.slow
@pytest.mark.parametrize("selector, chosen", [
    ("worst:3", _ranked(1.0)[:3]),
    ("best:2", _ranked(-1.0)[:2]),
    ("failed:2", [i for i in range(N) if RETURNS[i] <= 0][:2]),
    ("succeeded:3", [i for i in range(N) if RETURNS[i] > 0][:3]),
    ("seeds:9,2", [2, 9]),
])
def test_each_selector_films_its_episodes_with_length_plus_one_frames(tmp_path, selector, chosen):
    result = _run(tmp_path, render_select=[selector])
    assert sorted(_filmed(result)) == sorted(chosen)
    per = result.metrics["per_episode"]
    assert [e["sum_reward"] for e in per] == RETURNS and [e["length"] for e in per] == LENGTHS
    assert [e["num_frames"] > 0 for e in per] == [i in chosen for i in range(N)]  # non-zero exactly there
    for i in chosen:
        assert per[i]["num_frames"] == LENGTHS[i] + 1 and per[i]["reproduced"] is True
    assert probe_mp4(tmp_path / "run.mp4")["frames"] == sum(LENGTHS[i] + 1 for i in chosen)
    meta = json.loads((tmp_path / "run.mp4.metadata.json").read_text())
    assert [e["episode_ix"] for e in meta["render_select"]["episodes"]] == sorted(chosen)
    assert meta["render_select"]["differ"] == [] and meta["render_select"]["passes"] == 2
    assert [t["num_frames"] for t in meta["trajectories"]] == [e["num_frames"] for e in per]


def test_reasons_ranks_and_ties_break_by_episode_index():
    outcomes = [(1.0, True), (0.0, False), (0.0, False), (5.0, True), (float("nan"), None)]
    episodes = [{"episode_ix": i, "seed": 100 + i, "sum_reward": r, "success": s} for i, (r, s) in enumerate(outcomes)]
    # the NaN return is the worst (and says so), never the best; the tie at 0.0 goes to the lower index
    assert choose(parse_selectors(["worst:2", "best:1", "failed:1", "seeds:104"]), episodes) == [
        (1, "worst 2 of 2, failed 1 of 1"), (3, "best 1 of 1"),
        (4, "worst 1 of 2 (its return is not finite: NaN or infinite), seed 104")]
    assert choose(parse_selectors(["worst:3"]), episodes)[:2] == [(1, "worst 2 of 3"), (2, "worst 3 of 3")]
    assert choose(parse_selectors(["succeeded:5"]), episodes) == [(0, "succeeded 1 of 2"), (3, "succeeded 2 of 2")]


@pytest.mark.slow
def test_frames_are_named_by_the_episodes_own_index_and_several_selectors_combine(tmp_path):
    result = _run(tmp_path, out="frames", render_select=["worst:1", "best:1"], max_episodes_rendered=1)
    worst, best = _ranked(1.0)[0], _ranked(-1.0)[0]
    assert _filmed(result) == dict(sorted({worst: "worst 1 of 1", best: "best 1 of 1", 0: "first 1 of 1"}.items()))
    names = sorted(p.name for p in (tmp_path / "frames").iterdir())
    expected_names = sorted(f"traj{i:04d}_step{t:06d}.png" for i in (0, worst, best) for t in range(LENGTHS[i] + 1))
    assert names == expected_names


@pytest.mark.slow
def test_gif_and_split_videos_film_the_selection(tmp_path):
    _run(tmp_path, out="run.gif", render_select=["seeds:4"])
    assert gif_frames(tmp_path / "run.gif") == LENGTHS[4] + 1
    result = _run(tmp_path, out="split.mp4", render_select=["worst:2"], split_trajectories=True)
    chosen = sorted(_filmed(result))
    assert sorted(p.name for p in tmp_path.glob("split_traj*.mp4")) == sorted(f"split_traj{i}.mp4" for i in chosen)
    for i in chosen:
        assert probe_mp4(tmp_path / f"split_traj{i}.mp4")["frames"] == LENGTHS[i] + 1


@pytest.mark.slow
def test_a_stochastic_policy_is_caught_and_both_numbers_kept(tmp_path):
    result = _run(tmp_path, policy="helpers.select_toys:noisy_policy", render_select=["worst:2"])
    per = result.metrics["per_episode"]
    chosen = [e for e in per if "render_reason" in e]
    assert len(chosen) == 2 and all(e["reproduced"] is False for e in chosen)
    for e in chosen:  # the first pass's numbers stand; the re-run's are beside them
        assert e["rerun"]["sum_reward"] != e["sum_reward"] and e["rerun"]["length"] == e["length"]
    meta = json.loads((tmp_path / "run.mp4.metadata.json").read_text())
    assert meta["render_select"]["differ"] == [e["episode_ix"] for e in chosen]
    assert meta["render_select"]["shows"] == "re-run"
    note = next(w for w in result.warnings if "did not reproduce" in w)
    assert all(f"episode {e['episode_ix']} (seed {e['seed']})" in note for e in chosen)


@pytest.mark.slow
def test_first_n_alone_is_todays_single_pass(tmp_path):
    today = _run(tmp_path, out="a.mp4", max_episodes_rendered=2)
    alias = _run(tmp_path, out="b.mp4", render_select=["first:2"])
    assert alias.metrics["per_episode"] == [{**e, "wall_s": b["wall_s"]} for e, b in
                                            zip(today.metrics["per_episode"], alias.metrics["per_episode"])]
    assert "render_select" not in alias.metadata and alias.metadata["config"]["max_episodes_rendered"] == 2
    assert probe_mp4(tmp_path / "b.mp4")["frames"] == probe_mp4(tmp_path / "a.mp4")["frames"]


@pytest.mark.slow
def test_k_envs_in_the_first_pass_and_saved_rollouts_of_the_selection(tmp_path):
    result = _run(tmp_path, num_envs=3, env_batch_mode="serial", policy_batch="per-env",
                  render_select=["best:2"], save_rollout=True)
    chosen = sorted(_filmed(result))
    assert all(e["reproduced"] for e in result.metrics["per_episode"] if "render_reason" in e)
    index = json.loads((tmp_path / "run_rollouts" / "index.json").read_text())
    assert [t["index"] for t in index["trajectories"]] == chosen  # named by the episodes' own indices
    assert [t["batch_size"][0] for t in index["trajectories"]] == [LENGTHS[i] for i in chosen]
    assert sorted(p.name for p in (tmp_path / "run_rollouts").iterdir() if p.is_dir()) == \
        [f"traj{i:04d}" for i in chosen]
    every = _run(tmp_path, out="all.mp4", render_select=["best:2"], save_rollout=True, save_all_rollouts=True)
    assert len(every.trajectories) == N
    assert json.loads((tmp_path / "all_rollouts" / "index.json").read_text())["count"] == N


@pytest.mark.slow
def test_a_selection_that_chooses_nothing_writes_the_metrics_only(tmp_path):
    result = _run(tmp_path, render_select=["seeds:3"], policy="helpers.select_toys:zero_policy",
                  env_kwargs={}, num_trajs=1, seed=3, max_steps=1)
    assert _filmed(result) == {0: "seed 3"}
    nothing = render_policy(**{**BASE, "out": str(tmp_path / "none.mp4"), "render_select": ["failed:2"],
                               "num_trajs": 1, "seed": 7})  # seed 7's episode succeeds
    assert RETURNS[7] > 0 and nothing.artifact_path is None and not (tmp_path / "none.mp4").exists()
    assert (tmp_path / "none.mp4.metadata.json").is_file()
    assert any("chose no episode" in w for w in nothing.warnings)


@pytest.mark.parametrize("fields, words", [
    ({"render_select": ["worst:3"], "seed": None}, "seed=None"),
    ({"render_select": ["worst:3"], "live": 0}, "--live"),
    ({"render_select": ["worst:3"], "seed_mode": "torchrl"}, "seed_mode"),
    ({"render_select": ["worst:3"], "format": "json", "out": "x.json"}, "format that films"),
    ({"render_select": ["seeds:99"]}, "seed 99"),
    ({"render_select": ["first:2"], "max_episodes_rendered": 3}, "disagree"),
    ({"render_select": ["worst"]}, "not a selector"),
    ({"render_select": ["best:-1"]}, "at least 1"),
])
def test_refusals(fields, words):
    with pytest.raises(ConfigError, match=words):
        RenderConfig(**{**BASE, **fields})


@pytest.mark.slow
def test_the_cli_takes_repeated_selectors(tmp_path):
    out = tmp_path / "cli.mp4"
    assert main(["--policy", "helpers.select_toys:zero_policy", "--env", "helpers.select_toys:make", "--num-trajs",
                 str(N), "--out", str(out), "--render-select", "worst:1", "--render-select", "best:1", "--quiet"]) == 0
    meta = json.loads(out.with_name("cli.mp4.metadata.json").read_text())
    assert meta["render_select"]["selectors"] == ["worst:1", "best:1"]
    assert probe_mp4(out)["frames"] == LENGTHS[_ranked(1.0)[0]] + 1 + LENGTHS[_ranked(-1.0)[0]] + 1


@pytest.mark.slow
def test_the_3d_page_holds_and_labels_the_chosen_episodes(tmp_path):
    from helpers.htmlread import read_data

    result = render_policy(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=6, num_trajs=5,
                           out=str(tmp_path / "page.html"), render_select=["worst:1", "best:1"], progress=False)
    filmed = _filmed(result)
    episodes = read_data(tmp_path / "page.html")["episodes"]
    assert {e["episode_ix"]: e["render_reason"] for e in episodes} == filmed
    lengths = {e["episode_ix"]: e["length"] for e in result.metrics["per_episode"]}
    assert all(e["frames"] == lengths[e["episode_ix"]] + 1 for e in episodes)
    assert "reason(episode)" in (tmp_path / "page.html").read_text()  # window.replay.reason


@pytest.mark.slow
def test_the_report_notebook_labels_the_chosen_episodes_and_tables_every_episode(tmp_path):
    import nbformat

    result = _run(tmp_path, out="report.ipynb", render_select=["worst:2"], execute_notebook=False,
                  notebook_preview=False)
    nb = nbformat.read(tmp_path / "report.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    for ix, why in _filmed(result).items():
        assert f"Episode {ix}, seed {ix}" in text and f"chosen: {why}" in text
    assert f"{N} saved episode(s)" in text  # the table covers the whole run, not only the filmed episodes
    rows = [line for line in nb.cells[1].source.splitlines() if line.count("|") == 10 and line[2].isdigit()]
    assert [int(r.split("|")[-2]) > 0 for r in rows] == [i in _filmed(result) for i in range(N)]


@pytest.mark.slow
@pytest.mark.parametrize("num_envs", [1, 2])
def test_torchrl_envs_take_both_passes(tmp_path, num_envs):
    """A torchrl env of the user's (its own pixels), one env or K in torchrl's SerialEnv for the first pass."""
    common = dict(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env", from_pixels=True,
                  num_trajs=6, max_steps=5, policy_batch="per-env", progress=False)
    plain = render_policy(**common, format="json", out=str(tmp_path / f"plain{num_envs}.json"))
    result = render_policy(**common, num_envs=num_envs, env_batch_mode="serial", render_select=["worst:2"],
                           out=str(tmp_path / f"t{num_envs}.mp4"))
    assert result.metadata["engine"]["path"] == "torchrl"
    returns = [e["sum_reward"] for e in plain.metrics["per_episode"]]
    worst = sorted(range(6), key=lambda i: (returns[i], i))[:2]
    assert sorted(_filmed(result)) == sorted(worst)
    assert [e["sum_reward"] for e in result.metrics["per_episode"]] == returns
    assert all(e["reproduced"] for e in result.metrics["per_episode"] if "render_reason" in e)
    assert probe_mp4(tmp_path / f"t{num_envs}.mp4")["frames"] == sum(
        result.metrics["per_episode"][i]["length"] + 1 for i in worst)


def test_cli_mistakes_exit_2_and_leave_nothing(tmp_path, capsys):
    out = tmp_path / "x.mp4"
    with pytest.raises(SystemExit) as exc:
        main(["--policy", "helpers.select_toys:zero_policy", "--env", "helpers.select_toys:make",
              "--out", str(out), "--render-select", "worst:3", "--live"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "render_select worst:3" in err and "--live" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_a_batched_policy_over_k_envs_is_reproduced_by_the_re_run(tmp_path, mode):
    """The first pass calls the policy once per batch step of 3 envs; each re-run calls it on the same [3] batch
    and reads the row its episode ran in, so the filmed episode is the measured one, to the bit."""
    common = dict(BASE, policy="helpers.select_toys:mlp_policy", num_envs=3, env_batch_mode=mode)
    plain = render_policy(**common, format="json", out=str(tmp_path / "plain.json"))
    result = render_policy(**common, render_select=["worst:3", "best:3"], out=str(tmp_path / "k.mp4"))
    per = result.metrics["per_episode"]
    assert [e["sum_reward"] for e in per] == [e["sum_reward"] for e in plain.metrics["per_episode"]]
    assert len(_filmed(result)) == 6 and all(e["reproduced"] for e in per if "render_reason" in e)
    assert result.metadata["render_select"]["differ"] == []


def row_dependent_policy(obs):
    """Acts on a batch, and each row's action depends on the row it sits in (a bias per row): a re-run called
    on one observation alone, or in another row, acts otherwise."""
    import torch

    base = torch.tanh(obs.sum(-1, keepdim=True))
    if obs.ndim == 1:
        return base
    return (base + 0.05 * torch.arange(obs.shape[0], dtype=obs.dtype).unsqueeze(-1)).clamp(-1, 1)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_a_batched_policy_over_k_torchrl_envs_is_reproduced_by_the_re_run_in_its_row(tmp_path, mode):
    """TorchRL envs four at a time (SerialEnv / ParallelEnv), one policy call per batch step: each re-run calls
    the policy on a [4] batch and reads the row its episode ran in, so a policy whose rows act differently
    films the measured episodes, to the bit."""
    common = dict(policy=lambda: row_dependent_policy, env="helpers.tinyenv:make_env", from_pixels=True,
                  num_trajs=8, max_steps=6, num_envs=4, env_batch_mode=mode, seed=0, progress=False)
    plain = render_policy(**common, format="json", out=str(tmp_path / "plain.json"))
    result = render_policy(**common, render_select=["worst:2", "best:2"], out=str(tmp_path / "k.mp4"))
    assert result.metadata["engine"]["path"] == "torchrl"
    per = result.metrics["per_episode"]
    assert [e["sum_reward"] for e in per] == [e["sum_reward"] for e in plain.metrics["per_episode"]]
    assert len(_filmed(result)) == 4 and all(e["reproduced"] for e in per if "render_reason" in e)
    assert result.metadata["render_select"]["differ"] == []


@pytest.mark.slow
@needs_browser
def test_the_page_in_a_browser_names_why_each_episode_is_shown(tmp_path):
    result = render_policy(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", max_steps=6, num_trajs=4,
                           out=str(tmp_path / "page.html"), render_select=["best:1"], progress=False)
    (ix, why), = _filmed(result).items()
    with open_page(tmp_path / "page.html") as (page, top):
        assert page.js("replay.episodes") == [ix]
        assert page.js(f"replay.reason({ix})") == why == "best 1 of 1"
        assert top.locator("#episode option").first.text_content() == f"episode {ix} (best 1 of 1)"
        assert "chosen" in top.locator("#facts").inner_text() and page.errors == []


@pytest.mark.slow
def test_eval_n_timesteps_runs_both_passes_and_names_seeds_it_never_ran(tmp_path):
    fields = {k: v for k, v in BASE.items() if k != "num_trajs"}
    result = render_policy(**fields, eval_n_timesteps=10, render_select=["worst:1", "seeds:40"],
                           out=str(tmp_path / "t.mp4"))
    per = result.metrics["per_episode"]
    assert sum(e["length"] for e in per) >= 10 and len(per) < 40
    worst = min(range(len(per)), key=lambda i: (RETURNS[i], i))
    assert _filmed(result) == {worst: "worst 1 of 1"}
    assert any("seed(s) 40, which no episode of the run had" in w for w in result.warnings)


@pytest.mark.slow
def test_a_failing_re_run_keeps_the_first_pass_metrics_and_leaves_no_artifact(tmp_path):
    with pytest.raises(Exception, match="the renderer broke"):
        _run(tmp_path, env="helpers.select_toys:make_breaking", render_select=["worst:2"])
    assert not (tmp_path / "run.mp4").exists() and not (tmp_path / "run.mp4.metadata.json").exists()
    partial = json.loads((tmp_path / "run.mp4.partial.json").read_text())
    assert [e["sum_reward"] for e in partial["metrics"]["per_episode"]] == RETURNS


def test_an_episode_whose_return_is_not_finite_is_the_worst_and_says_so(tmp_path):
    # a real run of an env whose reward turns NaN in the episode seeded 1: that is the episode to look at first
    result = render_policy(policy="helpers.engine_toys:half_policy", env="helpers.eval_envs:diverging_env",
                           num_trajs=4, seed=0, out=str(tmp_path / "eval_info.json"), progress=False)
    episodes = result.metrics["per_episode"]
    assert [e["episode_ix"] for e in episodes if e["sum_reward"] != e["sum_reward"]] == [1]  # NaN
    chosen = dict(choose(parse_selectors(["worst:2"]), episodes))
    assert chosen == {1: "worst 1 of 2 (its return is not finite: NaN or infinite)", 0: "worst 2 of 2"}
    assert dict(choose(parse_selectors(["best:4"]), episodes)).keys() == {0, 2, 3}  # never the best
