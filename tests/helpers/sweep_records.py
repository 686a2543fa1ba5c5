"""A sweep folder written from given returns (manifest.json and episodes.jsonl, as the driver writes them), so
that the report's statistics can be checked on known numbers without running a policy."""

from __future__ import annotations

from pathlib import Path

from torchrl_render.sweep.store import Store


def write_sweep(folder: Path, returns: dict[tuple[str, str], list[float]], *, seed: int = 0, reps: int = 2000,
                baselines: dict | None = None, groups: dict[str, list[str]] | None = None,
                successes: dict[tuple[str, str], list[bool]] | None = None) -> Path:
    """``returns[(checkpoint, task)]``: that cell's episode returns, in episode order (the store writes a NaN or
    infinite one as null, as the driver's records have it); ``successes``, the same cells' success flags
    (default: not reported)."""
    ckpts = list(dict.fromkeys(c for c, _ in returns))
    tasks = list(dict.fromkeys(t for _, t in returns))
    groups = groups or {"all": tasks}
    group_of = {t: g for g, ts in groups.items() for t in ts}
    cells = [{"id": f"{c}__{t}", "ckpt": c, "run": "default", "sha256": f"{i:064x}", "step": 10 * i, "task": t,
              "group": group_of[t], "num_trajs": len(returns[c, t])}
             for i, c in enumerate(ckpts) for t in tasks if (c, t) in returns]
    manifest = {"torchrl_render_sweep": 1, "cells": cells, "tasks": {t: f"spec_{t}" for t in tasks},
                "groups": groups, "config": {"base": {"seed": seed, "bootstrap_reps": reps}}, "baselines": baselines}
    store = Store.create(Path(folder), manifest)
    for cell in cells:
        flags = (successes or {}).get((cell["ckpt"], cell["task"])) or [None] * cell["num_trajs"]
        for k, r in enumerate(returns[cell["ckpt"], cell["task"]]):
            store.append({"kind": "episode", "cell": cell["id"], "run": "default", "checkpoint": cell["ckpt"],
                          "step": cell["step"], "task": cell["task"], "episode_ix": k, "seed": seed + k,
                          "metrics": {"episode_ix": k, "seed": seed + k, "sum_reward": float(r),
                                      "max_reward": 1.0, "length": 10, "wall_s": 0.01, "success": flags[k]}})
    store.close()
    return Path(folder)
