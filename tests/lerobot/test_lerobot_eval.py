"""``--policy lerobot`` against lerobot-eval itself, in the LeRobot venv (`make test-lerobot`).

A real LeRobot ACT policy, built from its config with a fixed seed and saved by LeRobot's own ``save_pretrained``
(policy, pre- and post-processor), on the real gym-pusht env. lerobot-eval's own ``eval_policy`` (and
``eval_policy_all``, which its ``eval_info.json`` holds) runs in the same test as the reference. Without lerobot
(the main venv) the module skips.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# a submodule of the real package: this folder itself is importable as a namespace package named lerobot wherever
# tests/ is on sys.path (an installed lerobot, a regular package, takes the name first)
pytest.importorskip("lerobot.scripts.lerobot_eval",
                    reason="the LeRobot tests run in the LeRobot venv (make test-lerobot)")
pytest.importorskip("gym_pusht", reason="lerobot[pusht] installs gym-pusht")

import torch

from torchrl_render import RenderConfig, render_policy
from torchrl_render.policies.lerobot import LeRobotPolicy, load

#: PushT with its state observation (the T's keypoints and the agent's position): ACT without a vision backbone.
OBS_TYPE = "environment_state_agent_pos"
#: ACT's chunk: a queue of 10 actions, refilled every 10 steps; episodes of 55 steps end with 5 left in it, which a
#: missing reset() would carry into the next episode.
CHUNK = 10
STEPS = 55


@pytest.fixture(scope="module")
def act_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LeRobot pretrained_model folder: a small ACT built with seed 0 and its processors, as LeRobot saves them."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    cfg = ACTConfig(input_features={"observation.state": PolicyFeature(FeatureType.STATE, (2,)),
                                    "observation.environment_state": PolicyFeature(FeatureType.ENV, (16,))},
                    output_features={"action": PolicyFeature(FeatureType.ACTION, (2,))}, chunk_size=CHUNK,
                    n_action_steps=CHUNK, dim_model=32, dim_feedforward=64, n_heads=2, n_encoder_layers=1,
                    n_decoder_layers=1, use_vae=False, device="cpu", pretrained_backbone_weights=None)
    torch.manual_seed(0)
    policy = ACTPolicy(cfg)
    # PushT's workspace is 0..512 pixels: normalising around its middle makes the untrained ACT move about it
    stats = {key: {"mean": torch.full((n,), 256.0), "std": torch.full((n,), 100.0)} for key, n in
             (("observation.state", 2), ("observation.environment_state", 16), ("action", 2))}
    pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
    folder = tmp_path_factory.mktemp("act") / "pretrained_model"
    for part in (policy, pre, post):
        part.save_pretrained(folder)
    return folder


def lerobot_eval(folder: Path, num_envs: int, episodes: int, seed: int, steps: int = STEPS,
                 return_episode_data: bool = False) -> dict[str, Any]:
    """lerobot-eval's ``eval_policy`` on its own env (``make_env``) with the policy loaded as we load it."""
    from lerobot.envs.configs import PushtEnv
    from lerobot.envs.factory import make_env, make_env_pre_post_processors
    from lerobot.scripts.lerobot_eval import eval_policy

    env_cfg = PushtEnv(obs_type=OBS_TYPE, episode_length=steps)
    loaded = load(folder, env_type="pusht")
    env = make_env(env_cfg, n_envs=num_envs)["pusht"][0]
    env_pre, env_post = make_env_pre_post_processors(env_cfg, loaded.policy.config)
    try:
        with torch.no_grad():
            return eval_policy(env, loaded.policy, env_pre, env_post, loaded.preprocessor, loaded.postprocessor,
                               n_episodes=episodes, start_seed=seed, return_episode_data=return_episode_data)
    finally:
        env.close()


def ours(folder: Path, tmp_path: Path, num_envs: int, episodes: int, seed: int, steps: int = STEPS,
         out: str = "eval_info.json") -> Any:
    # the K envs in this process, where importing lerobot registered gym-pusht's ids (an env worker process has not
    # imported gym_pusht, so the id is unknown there)
    return render_policy(RenderConfig(ckpt=str(folder / "model.safetensors"), policy="lerobot",
                                      env="gym_pusht/PushT-v0", num_envs=num_envs, num_trajs=episodes, seed=seed,
                                      env_batch_mode="serial",
                                      env_kwargs={"obs_type": OBS_TYPE, "max_episode_steps": steps},
                                      out=str(tmp_path / out)))


def _same_numbers(got: list[dict[str, Any]], reference: list[dict[str, Any]], rel: float) -> None:
    assert [e["seed"] for e in got] == [e["seed"] for e in reference]
    assert [e["success"] for e in got] == [e["success"] for e in reference]
    for mine, theirs in zip(got, reference):
        assert mine["sum_reward"] == pytest.approx(theirs["sum_reward"], rel=rel, abs=rel)
        assert mine["max_reward"] == pytest.approx(theirs["max_reward"], rel=rel, abs=rel)


@pytest.fixture(params=[None, 0.02], ids=["pusht-threshold", "low-threshold"])
def success_threshold(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> float | None:
    """PushT's own success rule (coverage > 0.95, which the untrained ACT never reaches: every episode runs its 55
    steps), or coverage > 0.02, under which some episodes succeed and end after 1 to a few steps and others run to
    the limit: the success path and episodes of different lengths in one batch of lerobot-eval's. Every PushT env
    of this process gets it (both evaluators' envs are made here)."""
    if request.param is not None:
        from gym_pusht.envs.pusht import PushTEnv

        init = PushTEnv.__init__

        def lowered(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            self.success_threshold = request.param

        monkeypatch.setattr(PushTEnv, "__init__", lowered)
    return request.param


def lerobot_batches(folder: Path, num_envs: int, episodes: int, seed: int, steps: int = STEPS) -> dict[str, list]:
    """The rollouts eval_policy makes (lerobot-eval's own ``rollout``, seeds ``seed + b*K ..``), with each episode's
    numbers summed two ways: ``eval_policy``'s, whose mask keeps one step past an episode's first done, and through
    that done step only. In a batch whose envs end at different steps, the step past the done of an env that ended
    early is the first step of its auto-reset next episode (SAME_STEP autoreset), so eval_policy adds one reward of
    another episode to it; with K = 1 the rollout stops at the done and the two agree."""
    from lerobot.envs.configs import PushtEnv
    from lerobot.envs.factory import make_env, make_env_pre_post_processors
    from lerobot.scripts.lerobot_eval import rollout

    env_cfg = PushtEnv(obs_type=OBS_TYPE, episode_length=steps)
    loaded = load(folder, env_type="pusht")
    env = make_env(env_cfg, n_envs=num_envs)["pusht"][0]
    env_pre, env_post = make_env_pre_post_processors(env_cfg, loaded.policy.config)
    sums: dict[str, list] = {"eval_policy": [], "through_done": []}
    try:
        for start in range(seed, seed + episodes, num_envs):
            with torch.no_grad():
                data = rollout(env, loaded.policy, env_pre, env_post, loaded.preprocessor, loaded.postprocessor,
                               seeds=list(range(start, start + num_envs)))
            n = data["done"].shape[1]
            done = torch.argmax(data["done"].to(int), dim=1)
            for name, last in (("eval_policy", done + 1), ("through_done", done)):
                mask = (torch.arange(n) <= last[:, None]).int()
                sums[name] += [{"seed": start + i, "sum_reward": float((data["reward"][i] * mask[i]).sum()),
                                "max_reward": float((data["reward"][i] * mask[i]).max()),
                                "success": bool((data["success"][i] * mask[i]).any())} for i in range(num_envs)]
    finally:
        env.close()
    return sums


@pytest.mark.parametrize("num_envs", [1, 4])
def test_returns_and_success_equal_lerobot_eval(act_folder: Path, tmp_path: Path, num_envs: int,
                                                success_threshold: float | None) -> None:
    """Per-episode return, best reward, success and seed equal lerobot-eval's ``eval_policy`` for the same seeds.

    With K = 1 both runs do the same arithmetic: equal but for the order of the reward sum (rel 1e-12). With K = 4
    lerobot-eval calls the policy on the batch of 4 (its reset() clears all 4 queues: the 4 episodes start together),
    ours gives each env its own policy copy called on its own row, so our episode ``i`` is the same for any K, equal
    to lerobot-eval's K = 1 run. Against lerobot-eval's K = 4 run, two things differ, both checked: its batched matrix
    products differ from a single row's in the last bits, which moves its returns by about 1e-6 of themselves
    (measured: 1.4e-6 absolute on one episode here); and where an episode ends before the others of its batch,
    eval_policy's mask keeps one step past its end, the first step of the env's next (auto-reset) episode, whose
    reward it adds (:func:`lerobot_batches`). Through the episode's own last step, its numbers are ours.
    """
    episodes, seed = 8, 1000
    reference = lerobot_eval(act_folder, num_envs, episodes, seed)["per_episode"]
    single = reference if num_envs == 1 else lerobot_eval(act_folder, 1, episodes, seed)["per_episode"]
    result = ours(act_folder, tmp_path, num_envs, episodes, seed)
    got = json.loads((tmp_path / "eval_info.json").read_text())["per_episode"]
    print(json.dumps({"num_envs": num_envs, "threshold": success_threshold, "lerobot": reference,
                      "lerobot_k1": single, "ours": got}))  # the record
    assert [e["seed"] for e in got] == list(range(seed, seed + episodes))
    _same_numbers(got, single, rel=1e-12)
    assert any(e["sum_reward"] > 0 for e in reference), "the policy never covers the target: nothing is compared"
    lengths = {e["length"] for e in got}
    if success_threshold is None:
        assert lengths == {STEPS} and not any(e["success"] for e in got)
    else:
        successes = [e["success"] for e in got]
        assert any(successes) and not all(successes) and len(lengths) > 2, (successes, lengths)
    if num_envs == 1:
        _same_numbers(got, reference, rel=1e-12)
    else:
        batches = lerobot_batches(act_folder, num_envs, episodes, seed)
        _same_numbers(batches["eval_policy"], reference, rel=1e-12)  # eval_policy's numbers, rebuilt
        _same_numbers(got, batches["through_done"], rel=1e-5)
        # the episodes that ran to their batch's last step have no step past their end: eval_policy's are ours
        last = [max(e["length"] for e in got[b:b + num_envs]) for b in range(0, episodes, num_envs)]
        full = [i for i, e in enumerate(got) if e["length"] == last[i // num_envs]]
        _same_numbers([got[i] for i in full], [reference[i] for i in full], rel=1e-5)
        if success_threshold is not None:  # and some episode did end early, with another episode's reward added
            assert any(abs(e["sum_reward"] - r["sum_reward"]) > 1e-3 for e, r in zip(got, reference))
    assert result.metrics["aggregated"]["avg_sum_reward"] == pytest.approx(
        sum(e["sum_reward"] for e in single) / episodes, rel=1e-12)


def test_actions_equal_lerobot_eval_step_by_step(act_folder: Path, tmp_path: Path) -> None:
    """Every action of two episodes equals the one lerobot-eval's rollout applied (its episode data)."""
    reference = lerobot_eval(act_folder, 1, 2, seed=7, return_episode_data=True)["episodes"]
    result = ours(act_folder, tmp_path, 1, 2, seed=7, out="run.jsonl")
    for episode, trajectory in enumerate(result.trajectories):
        rows = reference["episode_index"] == episode
        theirs = reference["action"][rows][:-1]  # lerobot repeats the last frame once (its dataset layout)
        assert torch.equal(trajectory["action"].to(theirs.dtype), theirs)


def test_action_queue_is_reset_between_episodes(act_folder: Path, tmp_path: Path) -> None:
    """Episode 2 of a run acts as a fresh policy on that episode's seed: the queue left by episode 1 (55 steps, 5
    actions still queued) is cleared at the episode start, by the policy's reset()."""
    run = ours(act_folder, tmp_path, 1, 2, seed=3, out="two.jsonl").trajectories
    fresh = ours(act_folder, tmp_path, 1, 1, seed=4, out="fresh.jsonl").trajectories
    assert torch.equal(run[1]["action"], fresh[0]["action"])
    # and the queue was not empty when episode 1 ended: a policy that is not reset acts otherwise in episode 2
    loaded = load(act_folder, env_type="pusht")
    stale = _episode_actions(loaded, seed=3, reset=True)
    assert len(loaded.policy._action_queue) == STEPS % CHUNK
    carried = _episode_actions(loaded, seed=4, reset=False)
    assert torch.equal(_episode_actions(loaded, seed=4, reset=True), fresh[0]["action"])
    assert not torch.equal(carried, fresh[0]["action"]) and stale.shape == carried.shape


def _episode_actions(policy: LeRobotPolicy, seed: int, reset: bool) -> torch.Tensor:
    """One PushT episode stepped by hand through :class:`LeRobotPolicy` (reset at its start or not)."""
    import gymnasium as gym
    from tensordict import TensorDict

    env = gym.make("gym_pusht/PushT-v0", obs_type=OBS_TYPE, max_episode_steps=STEPS)
    if reset:
        policy.reset()
    obs, _ = env.reset(seed=seed)
    actions = []
    for _ in range(STEPS):
        action = policy(TensorDict({k: torch.as_tensor(v) for k, v in obs.items()}, batch_size=()))
        actions.append(action)
        obs, _, terminated, truncated, _ = env.step(action.numpy())
        if terminated or truncated:
            break
    env.close()
    return torch.stack(actions)


def test_eval_info_keys_match_lerobot_eval(act_folder: Path, tmp_path: Path) -> None:
    """Our eval_info.json holds every key lerobot-eval's holds: per episode, aggregated (eval_policy) and overall
    (eval_policy_all, what lerobot-eval writes to its eval_info.json)."""
    from lerobot.envs.configs import PushtEnv
    from lerobot.envs.factory import make_env, make_env_pre_post_processors
    from lerobot.scripts.lerobot_eval import eval_policy_all

    reference = lerobot_eval(act_folder, 1, 1, seed=0, steps=12)
    env_cfg = PushtEnv(obs_type=OBS_TYPE, episode_length=12)
    loaded = load(act_folder, env_type="pusht")
    envs = make_env(env_cfg, n_envs=1)
    env_pre, env_post = make_env_pre_post_processors(env_cfg, loaded.policy.config)
    with torch.no_grad():
        written = eval_policy_all(envs, loaded.policy, env_pre, env_post, loaded.preprocessor, loaded.postprocessor,
                                  n_episodes=1, start_seed=0)
    for suite in envs.values():
        for env in suite.values():
            env.close()
    ours(act_folder, tmp_path, 1, 1, seed=0, steps=12)
    got = json.loads((tmp_path / "eval_info.json").read_text())
    assert set(reference["per_episode"][0]) <= set(got["per_episode"][0])
    assert set(reference["aggregated"]) <= set(got["aggregated"])
    assert set(written["overall"]) - {"video_paths"} <= set(got["overall"])  # no video asked: no paths either


#: An env factory file of the user's: importing gym_pusht registers its ids (a fresh interpreter has not imported it).
PUSHT_FACTORY = """\
import gym_pusht  # noqa: F401
import gymnasium


def make_env(render_mode=None, **kwargs):
    return gymnasium.make("gym_pusht/PushT-v0", render_mode=render_mode, **kwargs)
"""


def cli(tmp_path: Path, ckpt: Path, env: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """The command as a LeRobot user types it, in a fresh interpreter (nothing imported beforehand, as in a shell)."""
    argv = [sys.executable, "-m", "torchrl_render", "--ckpt", str(ckpt), "--policy", "lerobot", "--env", env,
            "--env-kwargs", json.dumps({"obs_type": OBS_TYPE, "max_episode_steps": 12}), "--num-trajs", "2",
            *flags]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("num_envs", [1, 2])
def test_cli_renders_a_lerobot_folder(act_folder: Path, tmp_path: Path, num_envs: int) -> None:
    """The command line a LeRobot user types: the folder's weights, PushT from an env factory file, a video and the
    metrics; with 2 envs, the same episodes."""
    (tmp_path / "pusht_env.py").write_text(PUSHT_FACTORY)
    out = tmp_path / "pusht.mp4"
    done = cli(tmp_path, act_folder / "model.safetensors", "pusht_env.py:make_env", "--policy-kwargs",
               json.dumps({"env_type": "pusht"}), "--num-envs", str(num_envs), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 1000
    meta = json.loads(Path(f"{out}.metadata.json").read_text())
    assert [e["length"] for e in meta["metrics"]["per_episode"]] == [12, 12]
    loaded = load(act_folder, env_type="pusht")
    assert [e["sum_reward"] for e in meta["metrics"]["per_episode"]] == pytest.approx(
        [_episode_return(loaded, seed, 12) for seed in (0, 1)], rel=1e-12, abs=1e-12)


def test_cli_takes_the_gym_pusht_id(act_folder: Path, tmp_path: Path) -> None:
    """``--env gym_pusht/PushT-v0`` as lerobot's docs name the env, without a factory file of one's own: the id's
    namespace, gym_pusht, is imported, which registers it (a fresh interpreter has not imported it)."""
    done = cli(tmp_path, act_folder / "model.safetensors", "gym_pusht/PushT-v0", "--out", "eval_info.json")
    assert done.returncode == 0, done.stderr


def test_cli_takes_the_pretrained_model_folder(act_folder: Path, tmp_path: Path) -> None:
    """``--ckpt path/to/pretrained_model``, the folder itself, as LeRobot users name a checkpoint (a save_pretrained
    folder stands for its model.safetensors): the same numbers as the file's."""
    by_folder = cli(tmp_path, act_folder, "gym_pusht/PushT-v0", "--out", "folder.json")
    assert by_folder.returncode == 0, by_folder.stderr
    by_file = cli(tmp_path, act_folder / "model.safetensors", "gym_pusht/PushT-v0", "--out", "file.json")
    assert by_file.returncode == 0, by_file.stderr
    numbers = [[(e["seed"], e["sum_reward"], e["length"], e["success"]) for e in
                json.loads((tmp_path / name).read_text())["per_episode"]] for name in ("folder.json", "file.json")]
    assert numbers[0] == numbers[1] and len(numbers[0]) == 2


def _episode_return(policy: LeRobotPolicy, seed: int, steps: int) -> float:
    """One PushT episode's return, stepped by hand through :class:`LeRobotPolicy` from a reset."""
    import gymnasium as gym
    from tensordict import TensorDict

    env = gym.make("gym_pusht/PushT-v0", obs_type=OBS_TYPE, max_episode_steps=steps)
    policy.reset()
    obs, _ = env.reset(seed=seed)
    total = 0.0
    for _ in range(steps):
        action = policy(TensorDict({k: torch.as_tensor(v) for k, v in obs.items()}, batch_size=()))
        obs, reward, terminated, truncated, _ = env.step(action.numpy())
        total += float(reward)
        if terminated or truncated:
            break
    env.close()
    return total


def test_a_sweep_over_lerobot_checkpoints_takes_their_steps_and_films_the_worst(act_folder: Path,
                                                                             tmp_path: Path) -> None:
    """``sweep`` over a LeRobot training run's checkpoints (``checkpoints/<step>/pretrained_model``): each cell's
    step is its folder's number, its episodes equal a single run's, and ``--render-select worst:1`` films one."""
    import shutil

    for step in ("000100", "000200"):
        shutil.copytree(act_folder, tmp_path / "checkpoints" / step / "pretrained_model")
    argv = [sys.executable, "-m", "torchrl_render", "sweep", "--ckpt",
            str(tmp_path / "checkpoints" / "*" / "pretrained_model" / "model.safetensors"), "--policy", "lerobot",
            "--env", "pusht=gym_pusht/PushT-v0", "--env-kwargs",
            json.dumps({"obs_type": OBS_TYPE, "max_episode_steps": 12}), "--num-trajs", "2",
            "--render-select", "worst:1", "--workers", "1", "--no-report", "--out", str(tmp_path / "sw")]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    info = json.loads((tmp_path / "sw" / "eval_info.json").read_text())
    assert [e["step"] for e in info["per_checkpoint"]] == [100, 200]
    single = ours(act_folder, tmp_path, 1, 2, seed=0, steps=12, out="single.json")
    expected = single.metrics["aggregated"]["avg_sum_reward"]  # both folders hold the same weights
    assert [e["per_task"]["pusht"]["avg_sum_reward"] for e in info["per_checkpoint"]] == pytest.approx(
        [expected, expected], rel=1e-12)
    assert len(list((tmp_path / "sw").rglob("gallery/*.mp4"))) == 2  # worst:1 of each cell
