"""Augmented Random Search (ARS V2-t, Mania, Guy & Recht 2018) in plain numpy.

Shared by ``examples/*/train.py``. No torch here: the policy is the matrix
``M`` of shape ``[act_dim, obs_dim + 1]`` (last column is the bias) acting on
observations normalised by the running mean/std of every state visited during
training (V2), and each update uses only the top-``b`` of the ``N`` sampled
directions, ranked by ``max(r+, r-)`` (the "-t").

One iteration:

    deltas ~ N(0, I)                                 (N of them)
    r+_k, r-_k = return(M +- nu * delta_k)           (same reset seed for both)
    keep the b directions with the largest max(r+_k, r-_k)
    M += alpha / (b * sigma_R) * sum_k (r+_k - r-_k) delta_k
    update running obs mean/std with the states of all 2N rollouts

Rollouts run in a ``multiprocessing`` pool (one env per worker). Everything
random comes from one ``numpy.random.Generator`` seeded with ``--seed`` and
pool results are merged in task order, so iteration ``k`` is bit-for-bit
reproducible; only the number of iterations that fit in ``--minutes`` depends
on the machine (pass ``--iters`` for a fixed count).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ARSConfig", "RunningStat", "train"]


@dataclass
class ARSConfig:
    env_id: str
    step_size: float = 0.02        # alpha
    noise: float = 0.03            # nu
    n_directions: int = 8          # N
    top_b: int = 4                 # b
    episode_len: int = 1000        # H during training
    eval_len: int = 1000           # H when evaluating the mean policy
    eval_every: int = 10           # iterations between evaluations
    eval_episodes: int = 4
    seed: int = 0
    minutes: float = 11.0
    max_iters: int | None = None
    workers: int = 2
    env_kwargs: dict = field(default_factory=dict)
    log_every: int = 5
    target_return: float | None = None   # stop once the mean-policy evaluation reaches this


class RunningStat:
    """Count, mean and M2 of a stream of vectors (Chan et al. parallel merge)."""

    def __init__(self, dim: int):
        self.n = 0
        self.mean = np.zeros(dim)
        self.m2 = np.zeros(dim)

    def merge(self, n: int, mean: np.ndarray, m2: np.ndarray) -> None:
        if n == 0:
            return
        total = self.n + n
        delta = mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + m2 + delta ** 2 * (self.n * n / total)
        self.n = total

    def std(self) -> np.ndarray:
        if self.n < 2:
            return np.ones_like(self.mean)
        std = np.sqrt(self.m2 / (self.n - 1))
        return np.where(std < 1e-8, 1.0, std)  # constant features: leave unscaled (they centre to 0)


# --------------------------------------------------------------------------- workers

_ENV = None
_LOW = _HIGH = None


def _init_worker(env_id: str, env_kwargs: dict) -> None:
    global _ENV, _LOW, _HIGH
    import gymnasium as gym

    # The raw MuJoCo env, without gymnasium's wrappers: the episode length is
    # enforced by the loop below. (HalfCheetah never terminates; pendulum does.)
    _ENV = gym.make(env_id, **env_kwargs).unwrapped
    _LOW, _HIGH = _ENV.action_space.low.astype(np.float64), _ENV.action_space.high.astype(np.float64)


def _episode(M: np.ndarray, mean: np.ndarray, std: np.ndarray, seed: int, horizon: int, keep_obs: bool):
    env = _ENV
    obs, _ = env.reset(seed=int(seed))
    W, b = M[:, :-1] / std, M[:, -1] - (M[:, :-1] / std) @ mean   # fold normalisation into the matrix
    total, steps = 0.0, 0
    states = [obs] if keep_obs else None
    for _ in range(horizon):
        action = np.clip(W @ obs + b, _LOW, _HIGH)
        obs, reward, terminated, _truncated, _ = env.step(action)
        total += reward
        steps += 1
        if terminated:
            break
        if keep_obs:
            states.append(obs)
    return total, steps, states


def _rollout_pair(args):
    """Task: both signs of one direction. Returns returns, steps and obs statistics."""
    M, mean, std, delta, noise, seed, horizon = args
    r_plus, n_plus, s_plus = _episode(M + noise * delta, mean, std, seed, horizon, True)
    r_minus, n_minus, s_minus = _episode(M - noise * delta, mean, std, seed, horizon, True)
    states = np.asarray(s_plus + s_minus)
    mu = states.mean(axis=0)
    m2 = ((states - mu) ** 2).sum(axis=0)
    return r_plus, r_minus, n_plus + n_minus, len(states), mu, m2


def _evaluate(args):
    M, mean, std, seed, horizon = args
    total, steps, _ = _episode(M, mean, std, seed, horizon, False)
    return total, steps


# --------------------------------------------------------------------------- training

def train(cfg: ARSConfig, obs_dim: int, act_dim: int, on_eval=None, on_each_eval=None) -> dict:
    """Runs ARS V2-t. Returns the best (by mean-policy evaluation) ``M``, mean, std and a log.

    ``on_eval(result_dict)`` is called after every evaluation that improved on
    the best so far (e.g. to checkpoint the best policy); ``on_each_eval`` after
    every evaluation, with the current policy (e.g. to write one checkpoint per
    evaluation, named by training step, for ``sweep --watch``).
    """
    rng = np.random.default_rng(cfg.seed)
    M = np.zeros((act_dim, obs_dim + 1))
    stat = RunningStat(obs_dim)
    mean, std = np.zeros(obs_dim), np.ones(obs_dim)   # the filter snapshot the current M is used with
    ctx = mp.get_context("fork")
    pool = ctx.Pool(cfg.workers, initializer=_init_worker, initargs=(cfg.env_id, cfg.env_kwargs))
    start = time.perf_counter()
    budget = cfg.minutes * 60.0
    total_steps = 0
    best = {"eval_return": -np.inf}
    log = []
    it = 0
    iter_time = 0.0
    eval_seeds_base = 10_000 + 1000 * cfg.seed   # disjoint from the training reset seeds' typical range

    def evaluate(iteration: int) -> float:
        tasks = [(M, mean, std, eval_seeds_base + k, cfg.eval_len) for k in range(cfg.eval_episodes)]
        results = pool.map(_evaluate, tasks, chunksize=1)
        ret = float(np.mean([r for r, _ in results]))
        steps = float(np.mean([s for _, s in results]))
        elapsed = time.perf_counter() - start
        improved = ret > best["eval_return"]
        current = dict(eval_return=ret, M=M.copy(), mean=mean.copy(), std=std.copy(), iteration=iteration,
                       env_steps=total_steps, seconds=elapsed)
        log.append({"iter": iteration, "env_steps": total_steps, "seconds": elapsed, "eval_return": ret,
                    "eval_len": steps})
        print(f"  eval  iter {iteration:4d}  steps {total_steps:9d}  {elapsed:6.0f}s  "
              f"mean-policy return {ret:9.1f}  (len {steps:.0f}){'  *best*' if improved else ''}", flush=True)
        if improved:
            best.update(current)
            if on_eval is not None:
                on_eval(dict(best))
        if on_each_eval is not None:
            on_each_eval(current)
        return ret

    try:
        while True:
            elapsed = time.perf_counter() - start
            if cfg.max_iters is not None and it >= cfg.max_iters:
                break
            # stop when one more iteration (plus a final evaluation) would overrun the budget
            if elapsed + 1.5 * iter_time > budget:
                break
            t0 = time.perf_counter()
            deltas = rng.standard_normal((cfg.n_directions, act_dim, obs_dim + 1))
            seeds = rng.integers(0, 2**31 - 1, size=cfg.n_directions)
            tasks = [(M, mean, std, deltas[k], cfg.noise, seeds[k], cfg.episode_len) for k in range(cfg.n_directions)]
            results = pool.map(_rollout_pair, tasks, chunksize=1)
            r_plus = np.array([r[0] for r in results])
            r_minus = np.array([r[1] for r in results])
            for _, _, n_steps, n_states, mu, m2 in results:
                total_steps += n_steps
                stat.merge(n_states, mu, m2)
            # top-b directions by max(r+, r-)
            order = np.argsort(-np.maximum(r_plus, r_minus), kind="stable")[: cfg.top_b]
            used = np.concatenate([r_plus[order], r_minus[order]])
            sigma = used.std()
            if sigma < 1e-8:
                sigma = 1.0
            grad = np.tensordot(r_plus[order] - r_minus[order], deltas[order], axes=1)
            M = M + cfg.step_size / (cfg.top_b * sigma) * grad
            mean, std = stat.mean.copy(), stat.std()
            it += 1
            iter_time = time.perf_counter() - t0
            if it % cfg.log_every == 0 or it == 1:
                print(f"iter {it:4d}  steps {total_steps:9d}  {time.perf_counter() - start:6.0f}s  "
                      f"rollouts mean {np.mean(np.concatenate([r_plus, r_minus])):9.1f}  "
                      f"max {used.max():9.1f}  ({iter_time:.2f}s/iter)", flush=True)
            target = cfg.target_return if cfg.target_return is not None else np.inf
            if it % cfg.eval_every == 0 and evaluate(it) >= target:
                print(f"  target return {cfg.target_return} reached", flush=True)
                break
        if not log or log[-1]["iter"] != it:
            evaluate(it)
    finally:
        pool.close()
        pool.join()
    best["iterations"] = it
    best["total_env_steps"] = total_steps
    best["total_seconds"] = time.perf_counter() - start
    best["log"] = log
    return best


# --------------------------------------------------------------------------- checkpointing (torch only here)

def load_module_from_file(path, name: str):
    """Imports a Python file (e.g. ``examples/half_cheetah/policy.py``) under ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save_checkpoint(path, policy_module, result: dict, *, env_id: str, seed: int, extra: dict | None = None) -> None:
    """Writes ``M``/mean/std of ``result`` into ``policy_module.make_policy()`` and saves it.

    The file holds only tensors, str, int and float, so ``torch.load(path,
    weights_only=True)`` reads it.
    """
    import torch

    policy = policy_module.make_policy()
    M = result["M"]
    with torch.no_grad():
        policy.linear.weight.copy_(torch.as_tensor(M[:, :-1], dtype=torch.float32))
        policy.linear.bias.copy_(torch.as_tensor(M[:, -1], dtype=torch.float32))
        policy.obs_mean.copy_(torch.as_tensor(result["mean"], dtype=torch.float32))
        policy.obs_std.copy_(torch.as_tensor(result["std"], dtype=torch.float32))
    payload = {
        "model_state_dict": {k: v.detach().clone().contiguous() for k, v in policy.state_dict().items()},
        "env_name": env_id,
        "algo": "ARS",
        "train_return": float(result["eval_return"]),
        "train_steps": int(result["env_steps"]),
        "train_iteration": int(result["iteration"]),
        "train_seconds": float(result["seconds"]),
        "seed": int(seed),
    }
    payload.update(extra or {})
    tmp = f"{path}.tmp"
    torch.save(payload, tmp)
    import os

    os.replace(tmp, path)


# --------------------------------------------------------------------------- command line shared by train.py scripts

def cli(example_dir, argv=None, *, description: str = "", **defaults) -> int:
    """The ``train.py`` command line: trains the example in ``example_dir`` and saves its checkpoint.

    ``defaults`` override the argparse defaults (``minutes``, ``step_size``,
    ``noise``, ``directions``, ``top_b``, ``episode_len``, ``eval_every``,
    ``eval_episodes``, ``target_return``).
    """
    import argparse
    from pathlib import Path

    example_dir = Path(example_dir)
    d = {"minutes": 11.0, "step_size": 0.02, "noise": 0.03, "directions": 8, "top_b": 4, "episode_len": 1000,
         "eval_every": 10, "eval_episodes": 4, "target_return": None, **defaults}
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--minutes", type=float, default=d["minutes"], help="wall-clock training budget")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=example_dir / "policy.pt")
    p.add_argument("--iters", type=int, default=None, help="stop after this many iterations (reproducible)")
    p.add_argument("--episode-len", type=int, default=d["episode_len"], help="training horizon H")
    p.add_argument("--step-size", type=float, default=d["step_size"], help="alpha")
    p.add_argument("--noise", type=float, default=d["noise"], help="nu")
    p.add_argument("--directions", type=int, default=d["directions"], help="N")
    p.add_argument("--top-b", type=int, default=d["top_b"], help="b")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=d["eval_every"])
    p.add_argument("--eval-episodes", type=int, default=d["eval_episodes"])
    p.add_argument("--target-return", type=float, default=d["target_return"],
                   help="stop early once the mean-policy evaluation reaches this")
    p.add_argument("--checkpoints", type=Path, default=None,
                   help="also save the policy of every evaluation as DIR/step_<env steps>.pt (its 'step' key: the "
                        "env steps so far), as a training run does for `sweep --watch`")
    args = p.parse_args(argv)

    policy_module = load_module_from_file(example_dir / "policy.py", f"{example_dir.name}_policy")
    cfg = ARSConfig(env_id=policy_module.ENV_ID, step_size=args.step_size, noise=args.noise,
                    n_directions=args.directions, top_b=args.top_b, episode_len=args.episode_len,
                    eval_every=args.eval_every, eval_episodes=args.eval_episodes, seed=args.seed,
                    minutes=args.minutes, max_iters=args.iters, workers=args.workers,
                    target_return=args.target_return)
    print(f"ARS V2-t on {cfg.env_id}: {cfg}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    extra = {"episode_len": cfg.episode_len, "step_size": cfg.step_size, "noise": cfg.noise,
             "n_directions": cfg.n_directions, "top_b": cfg.top_b}

    def checkpoint(best):
        save_checkpoint(args.out, policy_module, best, env_id=cfg.env_id, seed=args.seed, extra=extra)

    def each_checkpoint(current):
        # saved under a temporary name, then renamed (save_checkpoint): a watcher never sees a half-written file
        save_checkpoint(args.checkpoints / f"step_{current['env_steps']}.pt", policy_module, current,
                        env_id=cfg.env_id, seed=args.seed, extra={**extra, "step": int(current["env_steps"])})

    if args.checkpoints is not None:
        args.checkpoints.mkdir(parents=True, exist_ok=True)
    best = train(cfg, policy_module.OBS_DIM, policy_module.ACT_DIM, on_eval=checkpoint,
                 on_each_eval=each_checkpoint if args.checkpoints is not None else None)
    extra["total_iterations"] = int(best["iterations"])
    extra["total_env_steps"] = int(best["total_env_steps"])
    extra["total_seconds"] = float(best["total_seconds"])
    checkpoint(best)
    print(f"done in {best['total_seconds']:.0f}s, {best['iterations']} iterations, "
          f"{best['total_env_steps']} env steps; best mean-policy return {best['eval_return']:.1f} "
          f"at iteration {best['iteration']} -> {args.out}", flush=True)
    return 0
