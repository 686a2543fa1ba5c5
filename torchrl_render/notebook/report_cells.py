"""The code cells of the report notebook that roll out, reload and rebuild (sources as text).

Split from :mod:`torchrl_render.notebook.report` (which lays the cells out). The ``assets`` and ``cfg``
cells and the ``live-rollout`` cell follow torchrl.render's report, so its users' habits (cell
indices, ``collect_rollouts_in_notebook()``, ``rollouts``, ``cfg``) carry over.

Example:
    >>> "live_result = collect_rollouts_in_notebook()" in live_source({}, "r_live.mp4", [])
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import SupportsInt

from .markup import md_code

__all__ = ["ASSETS", "CFG", "LIVE_OVERRIDES", "LIVE_SHOW", "NO_METRICS", "config_source", "kwargs_source",
           "literal", "live_source", "rerun_heading", "rerun_source"]

LIVE_OVERRIDES = {"format": "mp4", "overwrite": True, "metadata": None, "progress": False,
                  "notebook_rollout_mode": "saved", "split_trajectories": False, "save_frames": False,
                  "frame_dir": None, "save_rollout": False, "save_tensordicts": False, "artifact_dir": None,
                  "dry_run": False, "check_setup": False, "validate_only": False}
"""What the live/re-run cell changes in the run's config: one mp4 beside the notebook, no side files."""


def config_source(config: Mapping[str, object]) -> str:
    """The ``config`` cell: ``render_config``, the run's ``RenderConfig.to_dict()``."""
    return ("# The configuration of this run (RenderConfig.to_dict()); the cells below start from it.\n"
            "render_config = " + literal(config) + "\n")


NO_METRICS = "No episode was rolled out when this notebook was written: the cells below roll the policy out."

ASSETS = """# The run's asset folder (as torchrl.render's): its metadata (written after this notebook), its rollouts.
import json
from pathlib import Path

import torch

asset_dir = Path({relative!r})
if not (asset_dir / "metadata.json").exists() and not (asset_dir / "rollouts").exists():
    asset_dir = Path({absolute!r})
metadata = json.loads((asset_dir / "metadata.json").read_text()) if (asset_dir / "metadata.json").exists() else None
# the rollout TensorDicts this run wrote (unpickling runs code: load asset folders you trust)
rollouts = [torch.load(path, weights_only=False) for path in sorted((asset_dir / "rollouts").glob("traj_*.pt"))]
len(rollouts)
"""

CFG = """# The run's RenderConfig, rebuilt (paths and file specs were made absolute when the notebook was written).
from torchrl_render import RenderConfig

cfg = RenderConfig.from_dict(render_config)
cfg
"""


def rerun_heading(mode: str, live_out: str) -> str:
    """The markdown above the cells that roll out again."""
    if mode == "saved":
        return ("## Re-run the evaluation\n\nEdit the kwargs below if you like, then run the next two cells: "
                f"they roll the policy out again in this kernel, write {md_code(live_out)} beside the notebook and "
                "show its video(s) and metrics. (The re-run cell was not run when the report was written.)")
    when = ("They ran when the notebook was written" if mode == "both" else
            "Nothing was rolled out when the notebook was written: run them")
    return (f"## Live rollout\n\nThese cells roll the policy out in this kernel, as torchrl.render's "
            f"`collect_rollouts_in_notebook()` does, into `rollouts`. {when}; edit `live` (the factories' kwargs, "
            f"the mp4, the live view's port) and run them again. They write {md_code(live_out)} beside the notebook "
            "and show its video(s) and metrics.")


def kwargs_source(config: Mapping[str, object], live_out: str, search_path: Sequence[str]) -> str:
    """The ``rerun-kwargs`` cell (saved mode): the editable factory kwargs, the mp4 and the live view's port."""
    lines = ["# Editable: keyword arguments of the env and policy factories, and the mp4 the rollout writes.",
             "env_kwargs = " + literal(_kwargs(config, "env_kwargs")),
             "policy_kwargs = " + literal(_kwargs(config, "policy_kwargs")),
             f"live_out = {live_out!r}",
             "# The rollout is shown live below while it runs (the live page, served on localhost on this port,",
             "# or a free one; over SSH forward it: ssh -L PORT:127.0.0.1:PORT host). None: no live view.",
             f"live_port = {_viewer_port(config)!r}"]
    return "\n".join(lines) + "\n" + ("\n" + _search_source(search_path).rstrip("\n") + "\n" if search_path else "")


def rerun_source(config: Mapping[str, object]) -> str:
    """The ``rerun`` cell (saved mode): ``render_policy`` again, on the editable kwargs."""
    overrides = {k: v for k, v in LIVE_OVERRIDES.items() if k in config}
    return ("from torchrl_render import RenderConfig, render_policy\n\n"
            "overrides = " + literal(overrides) + "\n"
            "result = render_policy(RenderConfig.from_dict(\n"
            "    {**render_config, **overrides, \"out\": live_out, \"env_kwargs\": env_kwargs, "
            "\"policy_kwargs\": policy_kwargs, \"live\": live_port}))\n"
            "result  # the video(s) and the metrics table\n")


def live_source(config: Mapping[str, object], live_out: str, search_path: Sequence[str]) -> str:
    """torchrl.render's in-notebook collection (the same calls, in one cell), with what it changes editable."""
    live = {"env_kwargs": _kwargs(config, "env_kwargs"), "policy_kwargs": _kwargs(config, "policy_kwargs"),
            "out": live_out, "live": _viewer_port(config)}
    fixed = {k: v for k, v in LIVE_OVERRIDES.items() if k in config}
    return ("# Roll the policy out in this kernel (torchrl.render's in-notebook collection: the same calls).\n"
            + _search_source(search_path)
            + "import dataclasses\n\n"
            "from torchrl_render import (checkpoint_hash, collect_render_rollouts, load_checkpoint, "
            "load_render_policy,\n                            make_render_env)\n\n"
            "# Editable, then run this cell again: the factories' kwargs, the mp4 written beside the notebook, the\n"
            "# port the rollout is shown on live while it runs (a free one if taken; None: no live view).\n"
            "live = " + literal(live) + "\n"
            "# and what else the rollout changes in the run's config (cfg): one mp4, no side files\n"
            "live_fixed = " + literal(fixed) + "\n" + _COLLECT)


_COLLECT = '''

def collect_rollouts_in_notebook(config=None):
    """Loads the checkpoint, builds the env and the policy, and rolls out (torchrl.render's chain)."""
    global live_config
    config = live_config = dataclasses.replace(cfg if config is None else config, **live_fixed, **live)
    checkpoint = digest = None
    if config.ckpt is not None:
        checkpoint = load_checkpoint(config.ckpt, map_location=config.policy_device or config.device,
                                     trust=config.trust_checkpoint)
        digest = checkpoint_hash(config.ckpt)
    env = make_render_env(config, checkpoint=checkpoint)
    try:
        policy = load_render_policy(config, env, checkpoint=checkpoint, checkpoint_digest=digest)
        return collect_render_rollouts(env, policy, config)
    finally:
        env.close()


live_result = collect_rollouts_in_notebook()
rollouts = live_result.trajectories
'''

LIVE_SHOW = """# The rollout's files beside the notebook (a rename of what it encoded while it ran), and what they show.
from torchrl_render import write_render_artifact

live_result = write_render_artifact(live_result, live_config)
live_result  # the video(s) and the metrics table
"""


def _kwargs(config: Mapping[str, object], name: str) -> Mapping[str, object]:
    """The config's ``env_kwargs`` or ``policy_kwargs`` (a dict; empty where it has none)."""
    kwargs = config.get(name)
    return kwargs if isinstance(kwargs, Mapping) else {}


def _viewer_port(config: Mapping[str, object]) -> int:
    """The config's ``notebook_viewer_port`` (an int; 5178 where it has none)."""
    port = config.get("notebook_viewer_port")
    return int(port) if isinstance(port, (str, SupportsInt)) and port else 5178


def _search_source(search_path: Sequence[str]) -> str:
    if not search_path:
        return ""
    return ("import sys\n\n# Folders the env and policy factories are imported from (the original run's).\n"
            f"for folder in {list(search_path)!r}:\n    if folder not in sys.path:\n"
            "        sys.path.insert(0, folder)\n\n")


def literal(data: Mapping[str, object]) -> str:
    """A dict as Python source: one line when short, else one key per line."""
    one = repr(data)
    if len(one) <= 88:
        return one
    return "{\n" + "".join(f"    {key!r}: {value!r},\n" for key, value in data.items()) + "}"
