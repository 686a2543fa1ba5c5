"""LeRobot policies (``--policy lerobot``): a ``pretrained_model`` folder run the way lerobot-eval runs it.

The folder (``config.json``, ``model.safetensors`` and the processor files LeRobot 0.4 saves beside the weights)
is loaded through LeRobot's own factory (``make_policy``, ``make_pre_post_processors``,
``make_env_pre_post_processors``), and each step does what lerobot-eval's ``rollout`` does: the gymnasium
observation through ``preprocess_observation``, the task string, the env and policy pre-processors,
``select_action``, the policy and env post-processors.

A LeRobot policy keeps state between steps (ACT and diffusion keep action queues), and its ``reset()`` clears the
queue of every row of a batch at once. :class:`LeRobotPolicy` has a ``reset()``, so the runner treats it as
stateful: every episode start resets it, and with ``--num-envs K`` each env slot acts through its own copy (its
own queue), one row per call. Episode ``i`` is then the same for any K, and an env that finishes starts its next
episode at once instead of waiting for the slowest env of a wave, as lerobot-eval's batches do; the price is K
policy calls per step instead of one batched call, and K copies of the weights.

``--ckpt`` names the folder or its ``model.safetensors`` (the checkpoint loader takes a ``save_pretrained`` folder
for its ``model.safetensors``; this factory reads the folder beside it). ``--policy-kwargs`` may hold ``env_type``
(LeRobot's env config name, e.g. ``"pusht"``: ``make_policy`` reads the features from it, and the env processors
come from it; guessed from ``--env``'s gymnasium id when not given), ``task`` (the language instruction handed to
the policy; empty by default, as lerobot-eval gives envs without one) and ``device``.
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from ..contracts import Array
from ..errors import PolicyError, ResolveError

if TYPE_CHECKING:
    import torch
    from lerobot.policies.pretrained import PreTrainedPolicy
    from lerobot.processor import PolicyProcessorPipeline
    from tensordict import TensorDictBase

    from ..config import RenderPolicySpec

__all__ = ["LEROBOT_INSTALL", "LeRobotPolicy", "env_type_of", "lerobot_missing", "make_policy"]

#: How a LeRobot user installs us beside lerobot: its torch range (lerobot 0.4.4: torch>=2.2.1,<2.11) first.
LEROBOT_INSTALL = ("pip install torch==2.10.0 torchvision==0.25.0 'lerobot[pusht]==0.4.4' torchrl_render "
                   "(lerobot 0.4.4 needs torch >= 2.2.1 and < 2.11, so install it into a venv whose torch is "
                   "older than 2.11, or let this command choose torch 2.10.0 for it)")

#: The gymnasium id prefixes of LeRobot's simulated envs, and LeRobot's env config name for each.
ENV_TYPES = {"gym_pusht/": "pusht", "gym_aloha/": "aloha", "gym_xarm/": "xarm", "gym_hil/": "hil"}

#: What the observation of the processed batch is read from: the env's own observation keys.
OBS_KEYS = ("pixels", "agent_pos", "environment_state", "robot_state")


def lerobot_missing() -> ResolveError:
    """The error paragraph of ``--policy lerobot`` without lerobot installed."""
    return ResolveError("--policy lerobot needs the lerobot package, which is not installed in this environment",
                        expected="lerobot 0.4 importable beside torchrl_render", got="no module named 'lerobot'",
                        fix=f"install both into one venv: {LEROBOT_INSTALL}")


def env_type_of(env: object) -> str | None:
    """LeRobot's env config name for ``--env`` (a gymnasium id such as ``gym_pusht/PushT-v0``), else None.

    Example:
        >>> env_type_of("gym_pusht/PushT-v0"), env_type_of("HalfCheetah-v5")
        ('pusht', None)
    """
    if not isinstance(env, str):
        return None
    return next((name for prefix, name in ENV_TYPES.items() if env.startswith(prefix)), None)


def pretrained_folder(ckpt: Path | str | None) -> Path:
    """The ``pretrained_model`` folder that ``--ckpt`` names (the folder itself, or a file inside it)."""
    if ckpt is None:
        raise PolicyError("--policy lerobot needs --ckpt, the pretrained_model folder that LeRobot saved",
                          expected="a folder holding config.json and model.safetensors", got="no --ckpt",
                          fix="pass --ckpt path/to/pretrained_model")
    path = Path(ckpt).expanduser()
    folder = path if path.is_dir() else path.parent
    missing = [name for name in ("config.json", "model.safetensors") if not (folder / name).is_file()]
    if missing:
        held = sorted(p.name for p in folder.iterdir())[:8] if folder.is_dir() else []
        raise PolicyError(f"{str(folder)!r} is not a LeRobot pretrained_model folder: it has no {', '.join(missing)}",
                          expected="the folder LeRobot's save_pretrained wrote (config.json, model.safetensors, "
                                   "policy_preprocessor.json, policy_postprocessor.json)",
                          got=f"a folder holding {held}", fix="point --ckpt at the pretrained_model folder of a "
                                                             "LeRobot checkpoint (checkpoints/<step>/pretrained_model)")
    return folder


def make_policy(spec: RenderPolicySpec) -> LeRobotPolicy:
    """The policy factory of ``--policy lerobot``: the folder ``--ckpt`` names, through LeRobot's factory."""
    if importlib.util.find_spec("lerobot") is None:
        raise lerobot_missing()
    folder = pretrained_folder(spec.ckpt_path)
    kwargs = dict(spec.policy_kwargs)
    env_type = kwargs.get("env_type") or env_type_of(spec.config.env)
    return load(folder, env_type=env_type, device=str(kwargs.get("device", spec.device)),
                task=str(kwargs.get("task", "")))


def load(folder: Path | str, env_type: str | None = None, device: str = "cpu", task: str = "") -> LeRobotPolicy:
    """A LeRobot ``pretrained_model`` folder as lerobot-eval loads it (``make_policy`` with the env config when
    ``env_type`` names one; else the policy class's ``from_pretrained``, which ``make_policy`` calls too)."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import EnvConfig
    from lerobot.envs.factory import make_env_pre_post_processors
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.policies.factory import make_policy as lerobot_make_policy

    cfg = PreTrainedConfig.from_pretrained(str(folder))
    cfg.pretrained_path = str(folder)
    cfg.device = device
    env_cfg = EnvConfig.get_choice_class(env_type)() if env_type else None
    if env_cfg is not None:
        policy = lerobot_make_policy(cfg, env_cfg=env_cfg)
    else:
        policy = get_policy_class(cfg.type).from_pretrained(str(folder), config=cfg)
    policy.eval()
    pre, post = make_pre_post_processors(policy_cfg=cfg, pretrained_path=str(folder),
                                         preprocessor_overrides={"device_processor": {"device": device}})
    env_pre, env_post = make_env_pre_post_processors(env_cfg=env_cfg, policy_cfg=cfg) if env_cfg is not None \
        else (None, None)
    return LeRobotPolicy(policy, pre, post, env_pre, env_post, task)


class LeRobotPolicy:
    """A LeRobot policy with its processors, called on a step's observations (unbatched or batched).

    It declares ``in_keys`` / ``out_keys``, so the runner hands it the step TensorDict; it returns the action
    tensor. ``reset()`` clears the policy's state (its action queue), as lerobot-eval does at each rollout start.
    """

    out_keys = ("action",)

    def __init__(self, policy: PreTrainedPolicy, preprocessor: PolicyProcessorPipeline,
                 postprocessor: PolicyProcessorPipeline, env_preprocessor: PolicyProcessorPipeline | None = None,
                 env_postprocessor: PolicyProcessorPipeline | None = None, task: str = "") -> None:
        self.policy = policy
        self.preprocessor = preprocessor
        self.postprocessor = postprocessor
        self.env_preprocessor = env_preprocessor
        self.env_postprocessor = env_postprocessor
        self.task = task
        self.in_keys = list(OBS_KEYS)

    def reset(self) -> None:
        """Clears the policy's state between episodes (ACT's and diffusion's action queues)."""
        self.policy.reset()

    def __deepcopy__(self, memo: dict[int, object]) -> LeRobotPolicy:
        """A copy with its own policy state; the processors, which keep none between steps, are shared."""
        policy = copy.deepcopy(self.policy, memo)
        return LeRobotPolicy(policy, self.preprocessor, self.postprocessor, self.env_preprocessor,
                             self.env_postprocessor, self.task)

    def __call__(self, td: TensorDictBase) -> torch.Tensor:
        import torch
        from lerobot.envs.utils import preprocess_observation

        unbatched = td.batch_dims == 0
        raw = {key: _numpy(td.get(key), unbatched) for key in OBS_KEYS if key in td.keys()}
        tensors: dict[str, torch.Tensor] = preprocess_observation(raw)
        rows = next(iter(tensors.values())).shape[0]
        # lerobot-eval's add_envs_task for an env without a task
        observation: dict[str, torch.Tensor | list[str]] = {**tensors, "task": [self.task] * rows}
        if self.env_preprocessor is not None:
            observation = self.env_preprocessor(observation)
        observation = self.preprocessor(observation)
        with torch.inference_mode():
            action = self.policy.select_action(observation)
        action = self.postprocessor(action)
        if self.env_postprocessor is not None:
            action = self.env_postprocessor({"action": action})["action"]
        action = action.to("cpu").clone()  # out of inference mode: a plain tensor the runner may cast
        return action[0] if unbatched else action


def _numpy(value: torch.Tensor, unbatched: bool) -> Array:
    """A step's observation entry as the numpy batch a gymnasium vector env gives ``preprocess_observation``."""
    array = value.detach().cpu().numpy()
    return array[None] if unbatched else array
