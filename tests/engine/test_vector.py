"""K envs at once: dispatching, seeding, ordering, rendering a subset."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from torchrl_render import RenderConfig, render_policy
from torchrl_render.engine import StepRecord
from torchrl_render.engine.workers import EpisodeOrderer

from helpers.mediaprobe import decode_frames, probe_mp4
from helpers.torchrl_toys import make_lstm_policy


def run(tmp_path, name, **kw):
    cfg = dict(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env", from_pixels=True,
               out=tmp_path / name,
               num_trajs=7, seed=11)
    cfg.update(kw)
    return render_policy(RenderConfig(**cfg))


def per_episode(result):
    keys = ("episode_ix", "seed", "sum_reward", "max_reward", "length", "terminated", "truncated", "num_frames")
    return [{k: e[k] for k in keys} for e in result.metrics["per_episode"]]


@pytest.mark.parametrize("mode", ["serial", "parallel"])
@pytest.mark.slow
def test_k1_and_k3_report_identical_episodes(tmp_path, mode):
    one = run(tmp_path, "one.mp4")
    many = run(tmp_path, f"many_{mode}.mp4", num_envs=3, env_batch_mode=mode)
    assert per_episode(one) == per_episode(many)
    lengths = [e["length"] for e in one.metrics["per_episode"]]
    assert len(set(lengths)) > 1                      # episode length depends on the seed
    assert [e["seed"] for e in many.metrics["per_episode"]] == list(range(11, 18))
    # the videos hold the same frames in the same (episode) order
    a = list(decode_frames(one.artifact_path))
    b = list(decode_frames(many.artifact_path))
    assert len(a) == len(b) == sum(n + 1 for n in lengths)
    assert max(float(np.abs(x.astype(int) - y.astype(int)).mean()) for x, y in zip(a, b)) < 1.0
    for ta, tb in zip(one.trajectories, many.trajectories):
        assert (ta["next", "observation"] == tb["next", "observation"]).all()


@pytest.mark.slow
def test_torchrl_env_workers_are_forks_of_one_server_with_each_runs_environment(tmp_path, monkeypatch):
    # picklable factories: the workers come from a fork server that imported torch and torchrl once, not
    # from spawned interpreters importing them each; a variable set after the server started reaches them
    import os

    notes = tmp_path / "notes.txt"
    monkeypatch.setenv("TORCHRL_RENDER_TEST_NOTES", str(notes))
    results = []
    for mark in ("first", "second"):
        monkeypatch.setenv("TORCHRL_RENDER_TEST_MARK", mark)
        results.append(run(tmp_path, f"{mark}.jsonl", env="helpers.tinyenv:make_env_noting_its_process",
                           from_pixels=False, num_envs=2, env_batch_mode="parallel"))
    assert [r.metadata["engine"]["start_method"] for r in results] == ["forkserver", "forkserver"]
    assert per_episode(results[0]) == per_episode(results[1])
    workers = [line.split() for line in notes.read_text().splitlines() if int(line.split()[0]) != os.getpid()]
    assert [mark for _, _, mark, _ in workers] == ["first"] * 2 + ["second"] * 2
    servers = {parent for _, parent, _, _ in workers}
    assert len(servers) == 1 and int(servers.pop()) != os.getpid()  # one server's forks, both runs


@pytest.mark.parametrize("env,policy", [("torchrl", "helpers.tinyenv:make_policy"), ("torchrl", "lambda"),
                                        ("gymnasium", "lambda")])
def test_a_forked_env_worker_leaves_the_heap_it_inherited_out_of_its_collections(tmp_path, monkeypatch, env, policy):
    # a forked worker shares its parent's heap; torchrl's worker calls gc.collect() as it closes, which walked
    # (and copied) every object of a big parent: half a second a worker. The worker freezes what it inherited.
    # A lambda policy cannot be pickled, so a torchrl run's workers are then forks of this process.
    import gc
    import os

    import torch

    from helpers.tinyenv import make_policy

    notes = tmp_path / "notes.txt"
    monkeypatch.setenv("TORCHRL_RENDER_TEST_NOTES", str(notes))
    if env == "torchrl":
        kw = dict(env="helpers.tinyenv:make_env_noting_its_process",
                  policy=(lambda: make_policy()) if policy == "lambda" else policy)
    else:
        kw = dict(env="helpers.gymtoys:make_noting_its_process",
                  policy=lambda: (lambda obs: torch.zeros(*obs.shape[:-1], 2)))
    threads = torch.get_num_threads()
    result = run(tmp_path, "run.jsonl", from_pixels=False, num_envs=2, env_batch_mode="parallel", num_trajs=2, **kw)
    assert result.metadata["engine"]["path"] == env
    if env == "gymnasium":  # torch's threads beside the worker: the cores it leaves, then put back
        from torchrl_render.engine.env_slots import cpu_count

        assert result.metadata["engine"]["torch_threads"] == max(1, min(threads, cpu_count() - 1))
        assert torch.get_num_threads() == threads
    method = result.metadata["engine"]["start_method"]
    if env == "torchrl":
        assert method == ("fork" if policy == "lambda" else "forkserver")
    workers = [line.split() for line in notes.read_text().splitlines() if int(line.split()[0]) != os.getpid()]
    assert len(workers) >= 1
    if method == "fork":
        assert all(int(parent) == os.getpid() for _, parent, _, _ in workers)
    # what the worker started with (torch, torchrl and, for a fork, this test runner) is frozen
    assert all(int(frozen) > 50_000 for *_, frozen in workers), workers
    assert gc.get_freeze_count() == 0  # and this process's own collections are left as they were


@pytest.mark.slow
def test_only_the_first_episodes_are_rendered(tmp_path):
    result = run(tmp_path, "sub.mp4", num_envs=2, env_batch_mode="serial", max_episodes_rendered=3)
    frames = [e["num_frames"] for e in result.metrics["per_episode"]]
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    assert frames == [n + 1 for n in lengths[:3]] + [0] * 4
    assert probe_mp4(result.artifact_path)["frames"] == sum(frames)


def _rec(ep, step, done=False, frame=None):
    return StepRecord(ep, step, None, None, ep, done=done, frames=None if frame is None else {"c": frame})


def test_orderer_puts_interleaved_records_back_in_order():
    orderer = EpisodeOrderer(max_steps=None)
    img = lambda v: np.full((2, 2, 3), v, np.uint8)  # noqa: E731
    stream = [_rec(0, 0, frame=img(0)), _rec(1, 0, frame=img(10)), _rec(1, 1, True, img(11)),
              _rec(2, 0, frame=img(20)), _rec(0, 1, frame=img(1)), _rec(2, 1, frame=img(21)),
              _rec(0, 2, True, img(2)), _rec(2, 2, True, img(22))]
    out = [r for rec in stream for r in orderer.push(rec)]
    orderer.close()
    assert [(r.trajectory, r.step) for r in out] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    assert [int(r.frames["c"][0, 0, 0]) for r in out] == [0, 1, 2, 10, 11, 20, 21, 22]


class Counting:
    """A stateful python policy: its action depends on how many steps it has taken."""

    def __init__(self):
        self.t = 0
        self.resets = 0

    def reset(self):
        self.t = 0
        self.resets += 1

    def __call__(self, obs):
        import torch
        self.t += 1
        return torch.tanh(obs[:1] * 0.1 * self.t)


@pytest.mark.slow
def test_stateful_policy_is_reset_per_episode_and_per_worker(tmp_path):
    one = Counting()
    a = run(tmp_path, "a.gif", policy=lambda: one, format="gif")
    b = run(tmp_path, "b.gif", policy=Counting, format="gif", num_envs=2, env_batch_mode="serial")
    assert one.resets == 7
    assert per_episode(a) == per_episode(b)


@pytest.mark.slow
def test_recurrent_torchrl_policy_state_is_reset_per_episode(tmp_path):
    a = run(tmp_path, "a.mp4", policy=make_lstm_policy)
    b = run(tmp_path, "b.mp4", policy=make_lstm_policy, num_envs=2, env_batch_mode="serial")
    assert per_episode(a) == per_episode(b)
    assert any("recurrent policy" in w for w in a.warnings)
    assert ("next", "recurrent_state_h") in a.trajectories[0].keys(True)


def _same_frames(one, two):
    a, b = list(decode_frames(one.artifact_path)), list(decode_frames(two.artifact_path))
    assert len(a) == len(b) == sum(e["num_frames"] for e in one.metrics["per_episode"]) > 0
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert a[0].std() > 5                        # real pictures, not blank frames


@pytest.mark.slow
def test_gymnasium_path_renders_in_process_and_steps_the_rest_in_workers(tmp_path):
    common = dict(policy="helpers.policies:linear_policy", env="InvertedPendulum-v5", num_trajs=5, max_steps=6,
                  width=48,
                  height=48, render_quality="fast", seed=5, max_episodes_rendered=2, policy_batch="per-env")
    one = render_policy(RenderConfig(out=tmp_path / "one.mp4", **common))
    two = render_policy(RenderConfig(out=tmp_path / "two.mp4", num_envs=2, env_batch_mode="parallel", **common))
    assert per_episode(one) == per_episode(two)
    assert two.metadata["engine"]["path"] == "gymnasium" and two.metadata["engine"]["batch_mode"] == "parallel"
    assert [e["num_frames"] for e in two.metrics["per_episode"]] == [7, 7, 0, 0, 0]
    _same_frames(one, two)


@pytest.mark.slow
def test_torchrl_parallel_env_workers_render_a_real_mujoco_env(tmp_path):
    common = dict(policy="helpers.policies:linear_policy", env="helpers.torchrl_toys:torchrl_pendulum", num_trajs=3,
                  max_steps=6,
                  width=48, height=48, render_quality="fast", seed=5)
    one = render_policy(RenderConfig(out=tmp_path / "one.mp4", **common))
    two = render_policy(RenderConfig(out=tmp_path / "two.mp4", num_envs=2, env_batch_mode="parallel", **common))
    assert per_episode(one) == per_episode(two)
    assert two.metadata["engine"]["path"] == "torchrl" and "torchrl env" in two.metadata["engine"]["why_torchrl"]
    assert two.metadata["render"]["render_backend"].endswith("(in env workers)")
    # worker-rendered frames are the in-process frames, bit for bit (each episode sets its camera up
    # from its own first state, whichever env renders it)
    _same_frames(one, two)


@pytest.mark.slow
def test_stochastic_policy_same_samples_for_any_k(tmp_path):
    from helpers.policies import make_probabilistic_policy
    a = run(tmp_path, "a.jsonl", policy=make_probabilistic_policy, deterministic=False, format="jsonl")
    b = run(tmp_path, "b.jsonl", policy=make_probabilistic_policy, deterministic=False, format="jsonl",
            num_envs=3, env_batch_mode="serial")
    assert per_episode(a) == per_episode(b)
    for ta, tb in zip(a.trajectories, b.trajectories):
        assert (ta["action"] == tb["action"]).all()


def _write_syscalls(pid) -> int:
    return int(next(line for line in open(f"/proc/{pid}/io") if line.startswith("syscw")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts write syscalls in /proc/<pid>/io (Linux)")
def test_a_batch_step_with_both_sides_ready_hands_off_through_shared_memory_without_a_syscall(monkeypatch):
    # the orders and answers are flags in shared memory, polled for a while before a side blocks on the pipe:
    # back-to-back steps write nothing to the pipe, either way; a worker left idle blocks, and is woken.
    # The polling window is widened to 0.5 s (for both sides: the worker is forked after), so that a side
    # descheduled on a busy machine still finds the other ready, as it would on a quiet one within 2 ms
    import gymnasium

    from torchrl_render.engine import env_slots
    from torchrl_render.engine.env_slots import ProcessSlots, obs_layout

    monkeypatch.setattr(env_slots, "_SPIN_S", 0.5)
    make = lambda: gymnasium.make("Pendulum-v1")  # noqa: E731
    slots = ProcessSlots(make, 4, 2, obs_layout(make().observation_space), method="fork", action_shape=(1,))
    try:
        slots.reset([0, 1, 2, 3], [0, 1, 2, 3])
        actions = np.zeros((4, 1), np.float32)
        worker = slots.procs[0].pid
        before = _write_syscalls("self"), _write_syscalls(worker)
        for _ in range(300):
            slots.step([0, 1, 2, 3], actions)
        after = _write_syscalls("self"), _write_syscalls(worker)
        # 300 orders and 300 answers; a pipe per step wrote 300 each (a few wake-ups on a busy machine)
        assert after[0] - before[0] < 30 and after[1] - before[1] < 30, (before, after)
        deadline = time.monotonic() + 30
        while not slots.handoffs[0].theirs[0] and time.monotonic() < deadline:  # idle: it stops polling
            time.sleep(0.05)
        assert slots.handoffs[0].theirs[0] == 1  # it blocked on the pipe, and said so: the next order wakes it
        slots.step([1], actions)
        assert slots.obs["observation"][1].any()
    finally:
        slots.close()
    assert not slots.procs


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_shared_memory_slots_step_exactly_as_envs_in_this_process(method):
    # slot 0 and 2 are stepped here, slot 1 in a worker process; everything they report, qpos extras
    # included, crosses shared memory and must equal the same envs stepped one after another here
    from functools import partial

    import gymnasium

    from torchrl_render.engine.env_slots import InProcessSlots, ProcessSlots, obs_layout
    from torchrl_render.engine.gym_loop import read_qpos
    from torchrl_render.engine.procs import worker_factory

    make = partial(gymnasium.make, "HalfCheetah-v5")
    extras = {"qpos": ((9,), read_qpos)}
    here = InProcessSlots([make() for _ in range(3)], extras)
    shared = ProcessSlots(worker_factory(make, method), 3, 2, obs_layout(here.envs[0].observation_space),
                          method=method, extras=extras,
                          action_shape=(6,), action_dtype=np.float32)
    try:
        assert shared.workers == 1 and shared.env(0) is not None and shared.env(1) is None
        rng = np.random.default_rng(0)
        for slots in (here, shared):
            slots.reset([0, 1, 2], [5, 6, None])
        here.reset([2], [7])
        shared.reset([2], [7])
        for step in range(30):
            rows = [0, 1, 2] if step % 3 else [1, 2]   # a slot left out keeps its state
            actions = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
            here.step(rows, actions)
            shared.step(rows, actions)
            for key in here.obs:
                np.testing.assert_array_equal(here.obs[key], shared.obs[key], err_msg=key)
            for name in ("reward", "terminated", "truncated", "success"):
                np.testing.assert_array_equal(getattr(here, name), getattr(shared, name), err_msg=name)
        assert here.obs["qpos"].any() and (here.obs["qpos"][1] != here.obs["qpos"][0]).any()
    finally:
        here.close()
        shared.close()
    assert not shared.procs and not shared.local


@pytest.mark.slow
@pytest.mark.parametrize("num_envs,mode", [(1, "serial"), (3, "serial"), (3, "parallel")])
def test_a_dict_space_whose_one_entry_is_named_observation_steps_as_a_plain_loop(tmp_path, num_envs, mode):
    # its observations are dicts: the slots once wrote the whole dict into the observation array and crashed
    import torch

    from helpers.gymtoys import make_named_observation
    from helpers.plainloop import plain_returns

    def policy():
        return lambda obs: torch.clamp(0.1 * obs[..., :2], -1, 1)

    result = render_policy(RenderConfig(policy=policy, env="helpers.gymtoys:make_named_observation", num_trajs=4,
                                        num_envs=num_envs, env_batch_mode=mode, seed=3,
                                        out=tmp_path / "named.jsonl"))
    plain = plain_returns(make_named_observation,
                          lambda obs: np.clip(0.1 * obs["observation"][:2], -1, 1).astype(np.float32), range(3, 7))
    assert [(e["sum_reward"], e["length"]) for e in result.metrics["per_episode"]] == plain
