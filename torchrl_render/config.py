"""RenderConfig, validated once, and the spec objects handed to factories.

Field names and meanings follow ``torchrl.render.RenderConfig`` so that its users
can switch by changing an import; ``width``, ``height``, ``render_quality``,
``trust_checkpoint`` and a few more are ours. The CLI is generated from these
fields (see :mod:`torchrl_render.cli`): a field's ``help`` metadata is its flag's help.

Example:
    >>> cfg = RenderConfig(ckpt="policy.pt", policy="pkg.policy:make", env="pkg.env:make",
    ...                    out="run.gif", obs_key="agent.obs")
    >>> cfg.format, cfg.obs_key
    ('gif', ('agent', 'obs'))
    >>> RenderConfig(policy="p:m", env="e:m", fps=0)
    Traceback (most recent call last):
    ...
    torchrl_render.errors.ConfigError: fps must be a positive number. Expected: a number > 0. Got: 0.0.
    Fix: pass e.g. fps=30 (--fps 30).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, Unpack, get_args

from .contracts import Json, JsonDumpOptions, Payload, UserEnv, UserFactory, UserPolicy, UserValue
from .data import FrameBundle, RenderResult  # torchrl.render's config module holds them too
from .errors import ConfigError, did_you_mean
from .keys import NestedKey, key_to_string, parse_nested_key
from .metrics import SUCCESS_RULES
from .metrics.sequential import parse_precision
from .registry import BACKENDS, WRITERS, needs_frames
from .selection import check_selection

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.data import Composite

__all__ = ["CameraLayout", "EnvBackendName", "ExplorationMode", "FrameBundle", "NotebookRenderBackendName",
           "NotebookRolloutMode", "RenderBackendName", "RenderConfig", "RenderEnvSpec", "RenderFormat",
           "RenderPolicySpec", "RenderResult", "key_to_string", "load_mapping", "parse_nested_key"]

# torchrl.render's Literal types, with our choices (a superset of theirs): a type checker accepts code
# written against torchrl.render and ours. The choice tuples below are read from them (one list each).
#: Artifact formats (``torchrl_render.writers.WRITERS``): torchrl.render's six plus ``json`` and ``html``.
RenderFormat = Literal["ipynb", "mp4", "gif", "frames", "npz", "jsonl", "json", "html", "minari"]
#: How several cameras are combined.
CameraLayout = Literal["single", "grid", "horizontal", "vertical", "separate"]
#: Where frames come from (``torchrl_render.backends.BACKENDS``): torchrl.render's four plus ``mujoco``.
RenderBackendName = Literal["auto", "pixels", "env", "mujoco", "null"]
#: The notebook's viewer (``mujoco-wasm`` is torchrl.render's spelling of ``mujoco_wasm``).
NotebookRenderBackendName = Literal["auto", "static", "mujoco_wasm", "mujoco-wasm"]
#: When a notebook's rollouts are collected.
NotebookRolloutMode = Literal["saved", "live", "both"]
#: How the env factory's result is wrapped.
EnvBackendName = Literal["auto", "torchrl", "gym", "gymnasium", "mujoco", "dm_control", "isaaclab"]
#: torchrl's exploration types.
ExplorationMode = Literal["deterministic", "mode", "mean", "random"]

ENV_BACKENDS = get_args(EnvBackendName)
EXPLORATION_MODES = get_args(ExplorationMode)
CAMERA_LAYOUTS = get_args(CameraLayout)
RENDER_QUALITIES = ("default", "balanced", "fast")
#: How many times faster than ``default`` each look draws: 480x480, software GL (llvmpipe), one draw timed alone
#: (benchmarks/quality_stills.py, docs/user_guide.md's table). --help and the docs quote these figures.
RENDER_QUALITY_SPEEDUP = {"balanced": 3.7, "fast": 9.3}
#: x264/x265 speed presets, fastest (largest file at the same quality) first.
VIDEO_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
ENV_BATCH_MODES = ("auto", "serial", "parallel")
POLICY_BATCHES = ("batched", "per-env")
NOTEBOOK_ROLLOUT_MODES = get_args(NotebookRolloutMode)
NOTEBOOK_RENDER_BACKENDS = get_args(NotebookRenderBackendName)
#: How each episode is seeded (``torchrl_render.engine.seeding`` implements them).
SEED_MODES = ("per-episode", "torchrl")
VIEWER_KINDS = ("auto", "mujoco", "window")  # --viewer
MINARI_BACKENDS = ("hdf5", "arrow")  # minari format: Minari's storage backends
LOGGER_KINDS = ("tensorboard", "wandb", "mlflow", "csv")  # --logger: TorchRL's loggers (torchrl_render.loggers)
_DEVICE_RE = re.compile(r"^(cpu|meta|mps|cuda|xpu)(:\d+)?$")
_KEY_FIELDS = ("obs_key", "action_key", "done_key", "reward_key", "pixel_key")
_PATH_FIELDS = ("ckpt", "out", "frame_dir", "artifact_dir", "metadata")


@dataclass(frozen=True)
class _Number:
    """A field rule: a finite number above ``low`` (or at it, with ``inclusive``); an int is taken as a float."""

    message: str
    expected: str
    fix: str
    low: float = 0.0
    inclusive: bool = False
    kind: str = "a number"

    def __call__(self, cfg: RenderConfig, name: str) -> None:
        value = getattr(cfg, name)
        if isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
            setattr(cfg, name, value)
        _check_type(name, value, float, self.kind)
        if not (math.isfinite(value) and (value >= self.low if self.inclusive else value > self.low)):
            raise ConfigError(f"{name} {self.message}", expected=self.expected, got=value, fix=self.fix)


@dataclass(frozen=True)
class _Int:
    """A field rule: an integer; from 1 up to ``most`` (``low=None``: from ``low`` to ``most``, in range)."""

    example: str
    most: int | None = None
    low: int | None = None

    def __call__(self, cfg: RenderConfig, name: str) -> None:
        value = getattr(cfg, name)
        if self.low is not None:  # a range (video_crf): its own wording
            _check_type(name, value, int, f"an integer {self.low}-{self.most}")
            if not self.low <= value <= self.most:
                raise ConfigError(f"{name} is out of range", expected=f"{self.low} to {self.most}", got=value,
                                  fix=f"pass e.g. {self.example}")
            return
        _positive_int(cfg, name, self.example)
        if self.most is not None and value > self.most:
            raise ConfigError(f"{name} is too large", expected=f"at most {self.most} pixels", got=value,
                              fix=f"pass a smaller --{name}")


_T = TypeVar("_T")


def _f(default: _T, help: str = "", **meta: object) -> _T:
    """A dataclass field whose metadata carries the CLI help and options (a list or dict default: a copy per
    config)."""
    metadata = {"help": help, **meta}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.copy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class RenderConfig:
    """Everything one render/evaluation run needs.

    Args:
        ckpt: Local checkpoint file handed to the policy factory (``None``: no checkpoint).
        policy: Policy factory: ``"module:object"``, ``"path/file.py:object"`` or a callable.
        env: Env factory, a gymnasium id (``"HalfCheetah-v5"``) or ``"dm_control/cheetah-run"``.
        num_trajs: Trajectories (episodes) to roll out; trajectory ``i`` is seeded ``seed + i``.
        format: Artifact format (a name in ``--list-formats``); inferred from ``out``'s suffix.
        out: Artifact path (default ``render.<suffix>``).

    See ``docs/cli.md`` for every field; each one is also a CLI flag.
    """

    ckpt: str | Path | None = _f(None, help="Local checkpoint file handed to the policy factory.")
    policy: str | UserFactory[UserPolicy] | None = _f(None, help="Policy factory: module:object, path/file.py:object, "
                                                     "or lerobot (a LeRobot policy: --ckpt names its "
                                                     "pretrained_model folder).")
    # an env object (the user's, with reset and step) is taken too, as it is (one env only)
    env: str | UserFactory[UserEnv] | UserEnv | None = _f(None, help="Env factory (module:object), a gymnasium id "
                                                          "such as HalfCheetah-v5, or dm_control/DOMAIN-TASK.")
    num_trajs: int | None = _f(None, help="Number of trajectories (episodes; default 1); trajectory i is seeded "
                                          "seed+i. Exactly one of --num-trajs and --eval-n-timesteps.")
    format: str | None = _f(None, help="Artifact format; inferred from the --out suffix, else mp4.", choices="formats")
    out: str | Path | None = _f(None, help="Artifact path (default render.<suffix>).")
    max_steps: int | None = _f(None, help="Maximum steps per trajectory (default: until done).")
    num_envs: int = _f(1, help="Envs stepped at once as one batch; each runs whole episodes and takes the next "
                                "when done.")
    env_batch_mode: str = _f("auto", help="With --num-envs > 1: serial (in this process), parallel (this process "
                             "and worker processes step their share of the envs at once, on shared memory) or auto "
                             "(parallel when the env time it saves beats the workers' wake-up cost).",
                             choices=ENV_BATCH_MODES)
    policy_batch: str = _f("batched", help="batched: one policy call per batch step; per-env: one per env (per-"
                           "episode numbers bit-identical for every --num-envs).", choices=POLICY_BATCHES)
    eval_n_timesteps: int | None = _f(None, help="Run whole episodes until at least this many steps in total "
                                      "(instead of --num-trajs).")
    precision: str | None = _f(None, help="METRIC:HALFWIDTH (success:0.05, return:25): run episodes in seed order "
                               "until the 95% anytime-valid confidence sequence of the mean return or the success "
                               "rate is at most HALFWIDTH wide on each side, or --num-trajs episodes (the cap, "
                               "required). The same episodes and numbers for every --num-envs (docs/sequential.md).",
                               metavar="METRIC:HALFWIDTH")
    return_bounds: list[float] | None = _f(None, help="With --precision return:...: the range LO HI that every "
                                           "episode's return lies in, for a bounded (exact, tighter) sequence "
                                           "instead of the asymptotic one; a return outside it is an error.",
                                           nargs=2, metavar=("LO", "HI"))
    # the callable's reward: whatever torch.as_tensor takes (a tensor, an array, a number), summed
    reward_fn: str | Callable[[TensorDictBase], object] | None = _f(None, help="Reward override: module:object, a "
                                                                    "callable from the step TensorDict to a reward, "
                                                                    "reported beside the env's.")
    success_rule: str = _f("any", help="An episode's success from the steps that report it: any (true at some "
                           "step, as lerobot-eval) or final (the last step's report, as SB3's EvalCallback).",
                           choices=SUCCESS_RULES)
    trajectories: bool = _f(True, help="Return the trajectories as TensorDicts (--no-trajectories keeps only "
                            "metrics: flat memory for thousands of episodes). The command line builds them only "
                            "when they are saved (--save-rollout) or asked for with --trajectories.")
    max_episodes_rendered: int | None = _f(None, help="Render only the first N episodes (default: all); the "
                                           "same as --render-select first:N.")
    render_select: list[str] = _f([], help="Which episodes to film: first:N, worst:N, best:N (by return), "
                                  "failed:N, succeeded:N (by --success-rule) or seeds:3,17,42 (repeatable). Anything "
                                  "but first:N evaluates every episode without frames first, then re-runs the chosen "
                                  "ones by seed with rendering.", multiple=True, metavar="KIND:N")
    overlay: bool = _f(False, help="Draw step, reward and return (and success) onto the frames.")
    progress: bool | None = _f(None, help="Progress bar over episodes (default: when stderr is a terminal).")
    fps: float = _f(30.0, help="Frames per second of videos.",
                    check=_Number("must be a positive number", "a number > 0", "pass e.g. fps=30 (--fps 30)"))
    camera: list[str] = _f(["default"], help="Comma-separated camera names ('default' = the env's own view).")
    camera_layout: str = _f("single",
                            help="How several cameras are combined (single with several cameras: grid, with a note).",
                            choices=CAMERA_LAYOUTS)
    deterministic: bool = _f(True, help="Act deterministically (--stochastic samples actions).", negative="stochastic")
    exploration_mode: str | None = _f(None, help="TorchRL exploration type; overrides --deterministic.",
                                      choices=EXPLORATION_MODES)
    seed: int | None = _f(0, help="Base seed; trajectory i uses seed+i.")
    bootstrap_reps: int = _f(2000, help="Bootstrap resamples of the IQM's, the median's and the profiles' 95% "
                             "intervals (seeded from --seed; 0: none; papers use more, e.g. 50000).")
    seed_mode: str = _f("per-episode", help="per-episode: episode i is reset with seed+i as its env's ecosystem "
                        "seeds it (gymnasium's reset(seed=seed+i)); torchrl: as torchrl.render, the env is seeded "
                        "once (env.set_seed(seed)) and its episodes follow one another (--num-envs 1).",
                        choices=SEED_MODES)
    device: str = _f("cpu", help="Default device for env and policy.")
    policy_device: str | None = _f(None, help="Policy device (default: --device).")
    env_device: str | None = _f(None, help="Env device (default: --device).")
    render_backend: str = _f("auto", help="Where frames come from.", choices="backends")
    env_backend: str = _f("auto", help="How the env factory's result is wrapped (isaaclab: Isaac Lab's batched "
                          "torch envs, whose copies become the env slots; see docs/migrating.md).",
                          choices=ENV_BACKENDS)
    env_kwargs: dict[str, UserValue] = _f({}, help="Env factory kwargs: inline JSON or a JSON/YAML/TOML file.")
    policy_kwargs: dict[str, UserValue] = _f({}, help="Policy factory kwargs: inline JSON or a JSON/YAML/TOML file.")
    checkpoint_key: str | None = _f(None, help="Key of the checkpoint payload holding the policy's entry.")
    state_dict_key: str | None = _f(None, help="Key of the state dict to load into the policy.")
    strict_load: bool = _f(True, help="Load the state dict strictly.")
    auto_load_policy: bool = _f(True, help="Load the checkpoint's state dict into the policy.")
    policy_eval: bool = _f(True, help="Put the policy in eval mode (--train keeps train mode).", negative="train",
                           flag="eval")
    obs_key: NestedKey = _f("observation", help="Observation key for tensor policies ('a.b' is nested).")
    action_key: NestedKey = _f("action", help="Action key the policy writes.")
    done_key: NestedKey = _f("done", help="Done key that ends a trajectory.")
    reward_key: NestedKey = _f("reward", help="Reward key summed into returns.")
    pixel_key: NestedKey = _f("pixels", help="Pixel key read by the pixels backend.")
    from_pixels: bool = _f(False, help="Ask the env factory for pixel observations.")
    pixels_only: bool = _f(False, help="Ask the env factory for pixels only.")
    render_mode: str | None = _f(None, help="gymnasium render_mode (e.g. rgb_array).")
    width: int = _f(480, help="Frame width for backends that render themselves (mujoco, dm_control).",
                    check=_Int("width=480", most=8192))
    height: int = _f(480, help="Frame height for backends that render themselves.", check=_Int("height=480", most=8192))
    render_quality: str = _f("default", help="MuJoCo look: default; balanced (same lighting, shadows and "
                             "reflections; small shadow map, no MSAA: about "
                             f"{RENDER_QUALITY_SPEEDUP['balanced']}x faster on software GL); fast (no "
                             f"shadows/reflections/MSAA: about {RENDER_QUALITY_SPEEDUP['fast']}x).",
                             choices=RENDER_QUALITIES)
    trust_checkpoint: bool = _f(False, help="Allow full pickle loading (runs code from the file: trusted files only).")
    background_encode: bool = _f(True, help="Encode on a background thread while the rollout goes on.")
    split_trajectories: bool = _f(False, help="Write one file per trajectory instead of one after another.")
    keep_pixels: bool = _f(False, help="Keep pixel entries in the returned trajectories.")
    video_codec: str | None = _f(None, help="Video codec for mp4 (default libx264).")
    video_crf: int = _f(23, help="H.264 quality (lower is better, 0-51).", check=_Int("23", most=51, low=0))
    video_preset: str = _f("veryfast", help="x264 speed preset: faster ones use less CPU and make larger files.",
                           choices=VIDEO_PRESETS)
    save_rollout: bool = _f(False, help="Save the trajectories next to the artifact.")
    save_all_rollouts: bool = _f(False, help="With --render-select other than first:N, --save-rollout keeps every "
                                 "episode's trajectory (default: the filmed episodes' only).")
    save_tensordicts: bool = _f(False, help="Save the trajectories as TensorDict memmaps.")
    save_frames: bool = _f(False, help="Also write the frames as PNG files.")
    frame_dir: str | Path | None = _f(None, help="Folder for --save-frames (default: the out name's stem + _frames, "
                                      "run.mp4 -> run_frames).")
    artifact_dir: str | Path | None = _f(None, help="Folder for side artifacts (default: beside --out).")
    metadata: str | Path | None = _f(None, help="Metadata sidecar path (default <out>.metadata.json).")
    notebook_rollout_mode: str = _f("saved", help="ipynb only: saved, live or both.", choices=NOTEBOOK_ROLLOUT_MODES)
    npz_frames: bool = _f(False, help="npz only: also store the rendered frames.")
    minari_backend: str = _f("hdf5", help="minari only: Minari's storage backend, hdf5 (what TorchRL's "
                             "MinariExperienceReplay reads) or arrow (needs pyarrow).", choices=MINARI_BACKENDS)
    minari_dataset_id: str | None = _f(None, help="minari only: the dataset id (default ENV/POLICY-v0, from the "
                                       "env's id and the policy's name).")
    execute_notebook: bool = _f(True, help="ipynb only: execute the report so it opens with outputs.",
                                negative="no-execute")
    notebook_embed_limit_mb: float = _f(20.0, help="ipynb only: embed videos up to this many MB, link the rest.",
                                        check=_Number("must be 0 or more", "a number of MB >= 0",
                                                      "pass e.g. --notebook-embed-limit-mb 20", inclusive=True,
                                                      kind="a number of MB >= 0"))
    notebook_preview: bool = _f(True, help="ipynb only: add an animated PNG preview (GitHub blocks <video>).")
    overwrite: bool = _f(False, help="Replace an existing --out.")
    dry_run: bool = _f(False, help="Print the validated config and the paths it would write, then stop: nothing "
                                   "is imported, loaded or built (as torchrl.render's --dry-run).")
    check_setup: bool = _f(False, help="Load the checkpoint and build the env, policy and render backend as a run "
                                       "would, then stop before rolling out.")
    validate_only: bool = _f(False, help="Validate the configuration only (no imports, no files).")
    # -- 3-D replay (html format, notebooks, replays from saved rollouts); torchrl.render's names --
    notebook_render_backend: str = _f("auto", help="ipynb only: mujoco_wasm embeds the 3-D replay per episode "
                                      "beside its video; static shows videos only; auto: mujoco_wasm for MuJoCo "
                                      "envs.", choices=NOTEBOOK_RENDER_BACKENDS)
    mujoco_model_path: str | Path | None = _f(None, help="MuJoCo model file (XML/MJB) to replay saved rollouts "
                                              "with (python -m torchrl_render replay).")
    mujoco_asset_paths: list[Path] = _f([], help="Comma-separated files or folders holding the model's assets "
                                       "(meshes, textures) when they are not beside the model file; the flag "
                                       "may be repeated.", multiple=True)
    mujoco_qpos_key: NestedKey | None = _f(None, help="Record MuJoCo qpos in the rollouts under this key "
                                           "(the state before each action; next.<key> after it).")
    # -- drop-in for torchrl.render (its remaining fields) --
    notebook_viewer_port: int = _f(5178, help="Localhost port of the notebook's live MuJoCo viewer (stored now; "
                                   "the notebook's live viewer serves on it).",
                                   check=_Int("notebook_viewer_port=5178"))
    result_frames: bool = _f(False, help="Also keep every frame in RenderResult.frames, as torchrl.render does "
                             "(memory grows with the run; by default frames only stream to the writers).")
    # -- watching a run live (--live: a page in the browser, for machines without a display) --
    live: int | None = _f(None, help="Serve a live page of the run (3-D view of MuJoCo envs, else the latest "
                          "frames; metrics so far) on this port (a free one if taken; 0: any); prints its URL "
                          "with a token.", optional_value=8765, metavar="PORT")
    live_host: str = _f("127.0.0.1", help="Address the live page listens on; anything but loopback is reachable "
                        "from other machines (a warning is logged).")
    live_keep: float = _f(0.0, help="Seconds the live page stays up after the run ends.")
    # -- --viewer (watching a run in a window on this machine's display) --
    viewer: str | None = _f(None, help="Show the rendered episodes on screen as they run: mujoco opens MuJoCo's "
                            "viewer on the env's own model and data, window shows the run's frames, auto (the "
                            "flag alone) picks mujoco for MuJoCo envs. Keys: space pauses, right arrow steps, "
                            "escape ends the run (finished episodes kept). Needs a display (else --live).",
                            optional_value="auto", choices=VIEWER_KINDS, metavar="KIND")
    render_fps: float | None = _f(None, help="Steps per second the viewer shows, in real time (default: the "
                                  "env's metadata render_fps, else --fps); paces the viewer only.")
    # -- --logger (the evaluation in an experiment tracker, through TorchRL's loggers) --
    logger: str | None = _f(None, help="Also log the evaluation through TorchRL's logger of this kind: eval/* "
                            "scalars at the checkpoint's training step, the rendered videos, the config as hparams "
                            "(pip install 'torchrl_render[loggers]'; W&B runs offline without credentials).",
                            choices=LOGGER_KINDS, metavar="KIND")
    logger_dir: str | None = _f(None, help="Where --logger writes (default: a logs folder beside --out; a "
                                "sweep's: its folder's logs).", metavar="DIR")
    logger_project: str | None = _f(None, help="The W&B project (MLflow: the experiment) of --logger (default: "
                                    "torchrl_render).")
    exp_name: str | None = _f(None, help="The run's name in --logger (default: --out's stem; a sweep's: its "
                              "folder's name).")

    def __post_init__(self) -> None:
        _normalise(self)
        _validate(self)

    # The fields take what users pass (a str or a Path, or None to infer); once the config is built, ``out`` is a
    # Path and ``format`` a writer's name. These say so to the stages that read them.
    @property
    def out_path(self) -> Path:
        """``out`` as the built config holds it: a Path (inferred from the format when it was not given)."""
        if self.out is None:  # only a config whose out was set to None after it was built
            raise ConfigError("out is unset", expected="a path", got=None, fix="pass out='run.mp4'")
        return Path(self.out)

    @property
    def ckpt_path(self) -> Path | None:
        """``ckpt`` as the built config holds it: a Path, or None without a checkpoint."""
        return Path(self.ckpt) if self.ckpt is not None else None

    @property
    def format_name(self) -> str:
        """``format`` as the built config holds it: a writer's name (inferred from ``out`` when not given)."""
        if self.format is None:
            raise ConfigError("format is unset", expected="a writer's name", got=None, fix="pass format='mp4'")
        return self.format

    @classmethod
    def from_dict(cls, data: Mapping[str, UserValue], **overrides: UserValue) -> RenderConfig:
        """Builds a config from a mapping; unknown keys get a did-you-mean."""
        merged = {**data, **overrides}
        names = [f.name for f in dataclasses.fields(cls)]
        for key in merged:
            if key not in names:
                raise ConfigError(f"unknown config key {key!r}.{did_you_mean(key, names)}",
                                  expected="a RenderConfig field", got=key,
                                  fix="remove it or correct its name (see --print-config)")
        return cls(**merged)

    @classmethod
    def from_file(cls, path: str | Path, **overrides: UserValue) -> RenderConfig:
        """Loads a JSON, YAML or TOML file; ``overrides`` win over the file."""
        return cls.from_dict(load_mapping(path), **overrides)

    def to_dict(self) -> dict[str, Json]:
        """A JSON-serializable dict; loading it back gives an equal config."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in _PATH_FIELDS:
            if data[name] is not None:
                data[name] = str(data[name])
        for name in _KEY_FIELDS:
            data[name] = key_to_string(data[name])
        for name in ("policy", "env", "reward_fn"):
            if data[name] is not None and not isinstance(data[name], str):
                data[name] = callable_name(data[name])
        data["camera"] = list(data["camera"])
        data["mujoco_asset_paths"] = [str(p) for p in data["mujoco_asset_paths"]]
        parsed: dict[str, Json] = json.loads(json.dumps(data, default=str))  # a dict dumped: a dict back
        return parsed

    def to_json(self, **kwargs: Unpack[JsonDumpOptions]) -> str:
        """:meth:`to_dict` as JSON."""
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), **kwargs)


def _normalise(cfg: RenderConfig) -> None:
    for name in _PATH_FIELDS:
        value = getattr(cfg, name)
        if value is not None and not isinstance(value, Path):
            _check_type(name, value, (str, Path), "a path")
            setattr(cfg, name, Path(value))
        if value is not None and name != "ckpt":
            _check_output_path(name, str(value))
    for name in _KEY_FIELDS:
        setattr(cfg, name, parse_nested_key(getattr(cfg, name), name))
    if isinstance(cfg.camera, int) and not isinstance(cfg.camera, bool):  # YAML/TOML read `camera: 0` as a number
        cfg.camera = [str(cfg.camera)]
    if isinstance(cfg.camera, (list, tuple)):
        cfg.camera = [str(c) if isinstance(c, int) and not isinstance(c, bool) else c for c in cfg.camera]
    if isinstance(cfg.camera, str):
        cfg.camera = [c.strip() for c in cfg.camera.split(",") if c.strip()]
    if not isinstance(cfg.camera, (list, tuple)) or not all(isinstance(c, str) for c in cfg.camera):
        raise ConfigError("camera must be camera names", expected="'front,side' or a list of names",
                          got=repr(cfg.camera), fix="pass e.g. camera='default' (--camera default)")
    cfg.camera = list(cfg.camera) or ["default"]
    for name in ("env_kwargs", "policy_kwargs"):
        value = getattr(cfg, name)
        if isinstance(value, str):
            setattr(cfg, name, load_mapping_or_inline(value, name))
        elif value is None:
            setattr(cfg, name, {})
    if isinstance(cfg.fps, int) and not isinstance(cfg.fps, bool):
        cfg.fps = float(cfg.fps)
    _normalise_replay(cfg)
    _infer_format(cfg)


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def _check_output_path(name: str, text: str) -> None:
    """A Windows path or a backslash on POSIX would become a file named with backslashes, not a folder."""
    if os.name == "nt" or ("\\" not in text and not _WINDOWS_PATH.match(text)):
        return
    posix = text.replace("\\", "/")
    if _WINDOWS_PATH.match(text):
        raise ConfigError(f"{name} {text!r} is a Windows path, and this machine is {sys.platform}",
                          expected="a path on this machine, with '/' between folders", got=text,
                          fix="pass a path on this machine, e.g. videos/run.mp4")
    raise ConfigError(f"{name} {text!r} holds a backslash, which {sys.platform} keeps as a character of the file name "
                      "(it does not separate folders)", expected="'/' between folders", got=text,
                      fix=f"write it with forward slashes: {posix!r}")


def _normalise_replay(cfg: RenderConfig) -> None:
    """The replay page's fields: the ``mujoco-wasm`` alias, paths, the comma-separated asset list, the qpos key."""
    if cfg.notebook_render_backend == "mujoco-wasm":
        cfg.notebook_render_backend = "mujoco_wasm"
    if cfg.mujoco_model_path is not None:
        _check_type("mujoco_model_path", cfg.mujoco_model_path, (str, Path), "a path")
        cfg.mujoco_model_path = Path(cfg.mujoco_model_path)
    assets: UserValue = cfg.mujoco_asset_paths  # what the user passed: checked here
    if isinstance(assets, (str, Path)):
        assets = [a.strip() for a in str(assets).split(",") if a.strip()]
    elif isinstance(assets, (list, tuple)) and all(isinstance(a, str) for a in assets):  # repeated flags
        assets = [a.strip() for item in assets for a in item.split(",") if a.strip()]
    if not isinstance(assets, (list, tuple)) or not all(isinstance(a, (str, Path)) for a in assets):
        raise ConfigError("mujoco_asset_paths must be paths", expected="'meshes/,textures/' or a list of paths",
                          got=repr(assets), fix="pass e.g. --mujoco-asset-paths assets/")
    cfg.mujoco_asset_paths = [Path(a) for a in assets]
    if cfg.mujoco_qpos_key is not None:
        cfg.mujoco_qpos_key = parse_nested_key(cfg.mujoco_qpos_key, "mujoco_qpos_key")


def _infer_format(cfg: RenderConfig) -> None:
    out = Path(cfg.out) if cfg.out is not None else None  # a Path already (the path fields are converted first)
    inferred = WRITERS.for_suffix(out) if out is not None else None
    if cfg.format is not None:
        WRITERS.entry(cfg.format)
    suffix = out.suffix.lower() if out is not None else ""
    entry = WRITERS.entry(cfg.format) if cfg.format is not None else None
    if suffix and inferred is None and not (entry is not None and entry.directory):
        known = sorted({s for name in WRITERS.names() for s in WRITERS.entry(name).suffixes})
        raise ConfigError(f"the --out suffix {suffix!r} is not a format torchrl_render writes",
                          expected=f"one of {', '.join(known)}, or a folder name for frames", got=str(out),
                          fix="change the suffix (e.g. run.mp4); --list-formats shows them all")
    if cfg.format is None:
        cfg.format = inferred or ("frames" if out is not None and not out.suffix else "mp4")
    else:
        WRITERS.entry(cfg.format)
        if out is not None and inferred is not None and inferred != cfg.format:
            raise ConfigError(
                f"the --out suffix {out.suffix!r} says {inferred}, but format is {cfg.format!r}",
                expected=f"an --out ending in {' or '.join(WRITERS.entry(cfg.format).suffixes) or 'a folder name'}",
                got=str(out), fix="make --out and --format agree, or drop --format to infer it")
    if out is None:
        entry = WRITERS.entry(cfg.format)
        cfg.out = Path("render" + (entry.suffixes[0] if entry.suffixes else "_frames"))


def _validate(cfg: RenderConfig) -> None:
    for name, flag in (("policy", "--policy mypkg.policy:make_policy"), ("env", "--env HalfCheetah-v5")):
        if getattr(cfg, name) is None:  # the first words are torchrl.render's message, which scripts match
            raise ConfigError(f"Missing required rlrender option --{name}: no {name} was given",
                              expected=f"{'an' if name == 'env' else 'a'} {name} factory spec", got="nothing",
                              fix=f"pass {flag} (or {name}=... in the config file)")
    if not (isinstance(cfg.policy, str) or callable(cfg.policy)):
        raise ConfigError("policy must be a factory", expected="'module:object', 'file.py:object' or a callable",
                          got=type(cfg.policy).__name__, fix="pass e.g. policy='mypkg.policy:make'")
    if cfg.reward_fn is not None and not (isinstance(cfg.reward_fn, str) or callable(cfg.reward_fn)):
        raise ConfigError("reward_fn must be a callable", expected="'module:object', 'file.py:object' or a callable",
                          got=type(cfg.reward_fn).__name__, fix="pass e.g. --reward-fn mypkg.reward:learned")
    if (cfg.save_rollout or cfg.save_tensordicts) and not cfg.trajectories:
        raise ConfigError("save_rollout needs the trajectories, and trajectories=False drops them",
                          got="--save-rollout with --no-trajectories",
                          fix="drop --no-trajectories, or drop --save-rollout")
    if not (isinstance(cfg.env, str) or callable(cfg.env) or _is_env_object(cfg.env)):
        raise ConfigError("env must be a factory or an env id",
                          expected="'module:object', a gymnasium id or a callable",
                          got=type(cfg.env).__name__, fix="pass e.g. env='HalfCheetah-v5'")
    _episode_count(cfg)
    _positive_int(cfg, "num_envs", "num_envs=4 (--num-envs 4)")
    envs = cfg.num_envs if cfg.num_trajs is None else min(cfg.num_envs, cfg.num_trajs)  # never more than episodes
    if cfg.seed_mode == "torchrl" and envs > 1:
        raise ConfigError("seed_mode='torchrl' seeds one env once and runs its episodes one after another, so it "
                          "takes one env", expected="--num-envs 1 with --seed-mode torchrl", got=cfg.num_envs,
                          fix="drop --num-envs, or use --seed-mode per-episode (episode i seeded seed+i)")
    if envs > 1 and _is_env_object(cfg.env):
        raise ConfigError(f"an env object cannot be copied into {envs} env workers: each one builds its own "
                          "env",
                          expected="with num_envs > 1, a factory: 'module:object', a gymnasium id, or a callable",
                          got=f"a {type(cfg.env).__qualname__} object",
                          fix="pass a function that builds a new env (env=lambda: MyEnv()), or num_envs=1")
    _check_type("bootstrap_reps", cfg.bootstrap_reps, int, "a non-negative integer")
    if cfg.bootstrap_reps < 0:
        raise ConfigError("bootstrap_reps must not be negative", expected="0 (no intervals) or more",
                          got=cfg.bootstrap_reps, fix="pass e.g. --bootstrap-reps 2000")
    if cfg.max_episodes_rendered is not None:
        _check_type("max_episodes_rendered", cfg.max_episodes_rendered, int, "a non-negative integer or None")
        if cfg.max_episodes_rendered < 0:
            raise ConfigError("max_episodes_rendered must not be negative", expected="0 or more",
                              got=cfg.max_episodes_rendered, fix="pass e.g. --max-episodes-rendered 5")
    if cfg.max_episodes_rendered == 0 and WRITERS.entry(cfg.format_name).needs_state:
        raise ConfigError(f"max_episodes_rendered=0 renders no episode, and format {cfg.format!r} replays the "
                          "rendered episodes' MuJoCo states", expected="--max-episodes-rendered 1 or more (or none: "
                          "all) for this format", got=0,
                          fix="pass --max-episodes-rendered 1 or more (the page replays that many episodes), or "
                              "drop --max-episodes-rendered")
    if cfg.max_episodes_rendered == 0 and needs_frames(cfg):
        raise ConfigError(f"max_episodes_rendered=0 renders no episode, and format {cfg.format!r} needs frames",
                          expected="--max-episodes-rendered 1 or more (or none: all) for this format", got=0,
                          fix="pass --max-episodes-rendered 1 or more, or a format that needs no frames "
                              "(--format jsonl or npz)")
    check_selection(cfg, bool(needs_frames(cfg) or WRITERS.entry(cfg.format_name).needs_state or cfg.save_frames))
    if cfg.max_steps is not None:
        _positive_int(cfg, "max_steps", "max_steps=200 (--max-steps 200), or None to run until done")
    if cfg.seed is not None:
        _check_type("seed", cfg.seed, int, "an integer or None")
    _validate_live(cfg)
    _validate_viewer(cfg)  # --viewer
    for f in dataclasses.fields(cfg):  # per-field rules (choices, types, the check= metadata)
        _validate_field(cfg, f)
    for name in ("device", "policy_device", "env_device"):
        _validate_device(name, getattr(cfg, name))
    if cfg.notebook_rollout_mode != "saved" and cfg.format != "ipynb":
        raise ConfigError("notebook_rollout_mode other than 'saved' needs format='ipynb'",
                          got=f"format={cfg.format!r}", fix="drop --notebook-rollout-mode or write an .ipynb")
    BACKENDS.entry(cfg.render_backend)


def _episode_count(cfg: RenderConfig) -> None:
    """Exactly one of num_trajs and eval_n_timesteps (num_trajs is 1 when neither is given); precision's rules."""
    _precision(cfg)
    if cfg.eval_n_timesteps is None:
        cfg.num_trajs = 1 if cfg.num_trajs is None else cfg.num_trajs
        _positive_int(cfg, "num_trajs", "num_trajs=5 (--num-trajs 5)")
        return
    _positive_int(cfg, "eval_n_timesteps", "eval_n_timesteps=10000 (--eval-n-timesteps 10000)")
    if cfg.num_trajs is not None:
        raise ConfigError("num_trajs and eval_n_timesteps were both given", expected="exactly one of the two",
                          got=f"num_trajs={cfg.num_trajs}, eval_n_timesteps={cfg.eval_n_timesteps}",
                          fix="drop --num-trajs (episodes run until --eval-n-timesteps steps) or drop "
                              "--eval-n-timesteps")


def parse_return_bounds(value: UserValue) -> list[float]:
    """``return_bounds`` as the user gave it (``[0, 500]``, or a config file's ``"0 500"`` / ``"0,500"``) as
    ``[LO, HI]``: two finite floats, LO below HI; a :class:`ConfigError` that says the fix otherwise. A sweep's
    ``base`` holds it as given, and reads it through this too.

    Example:
        >>> parse_return_bounds("0, 500")
        [0.0, 500.0]
    """
    bounds: UserValue = value.replace(",", " ").split() if isinstance(value, str) else value
    try:
        bounds = [float(b) for b in bounds]
    except (TypeError, ValueError):
        bounds = None
    if bounds is None or len(bounds) != 2 or not all(math.isfinite(b) for b in bounds):
        raise ConfigError("return_bounds must be two finite numbers LO HI", expected="e.g. [0, 500]",
                          got=repr(value), fix="pass --return-bounds 0 500 (the range of a return)")
    if bounds[0] >= bounds[1]:
        raise ConfigError("return_bounds' LO must be below its HI", expected="LO < HI, e.g. --return-bounds 0 500",
                          got=f"LO={bounds[0]:g}, HI={bounds[1]:g}",
                          fix="pass the lowest return first: --return-bounds "
                              f"{min(bounds):g} {max(bounds):g}" if bounds[0] > bounds[1] else
                              "pass a range wider than one value, e.g. --return-bounds 0 500")
    return [float(b) for b in bounds]


def _precision(cfg: RenderConfig) -> None:
    """``precision`` parses (METRIC:HALFWIDTH), stops a run whose length is a cap (``num_trajs``, not
    ``eval_n_timesteps``); ``return_bounds`` is LO < HI, finite, and only with a return precision."""
    if cfg.return_bounds is not None:
        cfg.return_bounds = parse_return_bounds(cfg.return_bounds)
    if cfg.precision is None:
        if cfg.return_bounds is not None:
            raise ConfigError("return_bounds bounds the sequence of --precision return:..., and no precision was "
                              "given", got=f"--return-bounds {cfg.return_bounds[0]:g} {cfg.return_bounds[1]:g}",
                              fix="add --precision return:HALFWIDTH (e.g. return:25), or drop --return-bounds")
        return
    metric, _ = precision_target(cfg)
    if cfg.eval_n_timesteps is not None:
        raise ConfigError("precision and eval_n_timesteps were both given: each one decides when the run stops",
                          expected="one of the two", got=f"precision={cfg.precision!r}, "
                          f"eval_n_timesteps={cfg.eval_n_timesteps}",
                          fix="drop --eval-n-timesteps (--precision stops on the half-width, --num-trajs caps it) "
                              "or drop --precision")
    if cfg.num_trajs is None:
        raise ConfigError("precision needs a cap: the most episodes to run if the half-width is not reached",
                          expected="--num-trajs N with --precision", got="no --num-trajs",
                          fix=f"add --num-trajs (e.g. --precision {cfg.precision} --num-trajs 500)")
    if metric == "success" and cfg.return_bounds is not None:
        raise ConfigError("return_bounds bounds returns, and precision is on the success rate (already in 0..1)",
                          got=f"precision={cfg.precision!r}, --return-bounds {cfg.return_bounds[0]:g} "
                          f"{cfg.return_bounds[1]:g}", fix="drop --return-bounds, or use --precision return:HALFWIDTH")


def precision_target(cfg: RenderConfig) -> tuple[str, float]:
    """``(metric, half-width)`` of ``cfg.precision``; a malformed one is a :class:`ConfigError` with the fix.

    Example:
        >>> precision_target(RenderConfig(policy="p:m", env="e:m", precision="return:25", num_trajs=100))
        ('return', 25.0)
    """
    if not isinstance(cfg.precision, str):
        raise ConfigError("precision has the wrong type", expected="a string METRIC:HALFWIDTH, e.g. 'success:0.05'",
                          got=f"{cfg.precision!r} ({type(cfg.precision).__name__})",
                          fix="pass e.g. --precision return:25")
    try:
        return parse_precision(cfg.precision)
    except ValueError as exc:
        raise ConfigError(str(exc), expected="success:H (0 < H < 0.5, e.g. success:0.05) or return:H (H > 0, e.g. "
                          "return:25)", got=cfg.precision,
                          fix="pass e.g. --precision success:0.05 or --precision return:25") from None


def _validate_live(cfg: RenderConfig) -> None:
    """The live page's port, address and keep time."""
    if cfg.live is not None:
        _check_type("live", cfg.live, int, "a port number (0 picks a free one)")
        if not 0 <= cfg.live <= 65535:
            raise ConfigError("live must be a port number", expected="0 to 65535 (0 picks a free port)",
                              got=cfg.live, fix="pass e.g. --live 8765")
    _check_type("live_host", cfg.live_host, str, "an address such as 127.0.0.1")
    if isinstance(cfg.live_keep, int) and not isinstance(cfg.live_keep, bool):
        cfg.live_keep = float(cfg.live_keep)
    _check_type("live_keep", cfg.live_keep, float, "a number of seconds")
    if not (math.isfinite(cfg.live_keep) and cfg.live_keep >= 0):
        raise ConfigError("live_keep must be a number of seconds", expected="a number >= 0", got=cfg.live_keep,
                          fix="pass e.g. --live-keep 30")


def _validate_viewer(cfg: RenderConfig) -> None:
    """--viewer's kind (its choices are checked with the other fields; True means auto) and --render-fps."""
    if isinstance(cfg.viewer, bool):
        cfg.viewer = "auto" if cfg.viewer else None
    if cfg.viewer is not None:
        _check_type("viewer", cfg.viewer, str, f"one of {', '.join(VIEWER_KINDS)}")
    if cfg.render_fps is None:
        return
    if isinstance(cfg.render_fps, int) and not isinstance(cfg.render_fps, bool):
        cfg.render_fps = float(cfg.render_fps)
    _check_type("render_fps", cfg.render_fps, float, "a number of steps per second")
    if not (math.isfinite(cfg.render_fps) and cfg.render_fps > 0):
        raise ConfigError("render_fps must be a positive number", expected="a number > 0 (steps per second)",
                          got=cfg.render_fps, fix="pass e.g. --render-fps 30, or leave it out (the env's render_fps)")


def _is_env_object(obj: object) -> bool:
    """An env instance (it has reset and step), as opposed to a factory function or class."""
    return not isinstance(obj, (str, type)) and callable(getattr(obj, "reset", None)) and \
        callable(getattr(obj, "step", None))


def _validate_field(cfg: RenderConfig, f: dataclasses.Field) -> None:
    value = getattr(cfg, f.name)
    choices = f.metadata.get("choices")
    if isinstance(choices, tuple) and value is not None and value not in choices:
        raise ConfigError(f"{f.name} must be one of {', '.join(choices)}.{did_you_mean(value, choices)}",
                          expected=", ".join(choices), got=value,
                          fix=f"pass one of them (--{f.name.replace('_', '-')})")
    if f.type == "bool" or (f.type == "bool | None" and value is not None):
        _check_type(f.name, value, bool, "True or False")
    if f.name in ("env_kwargs", "policy_kwargs"):
        _check_type(f.name, value, dict, "a mapping of keyword arguments")
    check = f.metadata.get("check")
    if check is not None:
        check(cfg, f.name)


def _positive_int(cfg: RenderConfig, name: str, example: str) -> None:
    value = getattr(cfg, name)
    _check_type(name, value, int, "a positive integer")
    if value < 1:
        raise ConfigError(f"{name} must be at least 1", expected="a positive integer", got=value,
                          fix=f"pass e.g. {example}")


def _check_type(name: str, value: object, types: type | tuple[type, ...], expected: str) -> None:
    wrong_bool = isinstance(value, bool) and types in (int, float)
    if wrong_bool or not isinstance(value, types):
        raise ConfigError(f"{name} has the wrong type", expected=expected,
                          got=f"{value!r} ({type(value).__name__})", fix=f"pass {expected} for {name}")


def _validate_device(name: str, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        value = str(value)
    if not _DEVICE_RE.match(value):
        raise ConfigError(f"{name} is not a device", expected="cpu, cuda, cuda:N or mps", got=value,
                          fix=f"pass e.g. --{name.replace('_', '-')} cpu")


def callable_name(obj: object) -> str:
    """``module:qualname`` of a callable, for metadata."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if qualname is None:  # an object (a module, an env), not a function or class: not a "module:object" spec
        return f"<{type(obj).__qualname__} instance from {module}>"
    return f"{module}:{qualname}" if module else repr(obj)


def load_mapping(path: str | Path) -> dict[str, Json]:
    """Reads a JSON (.json), YAML (.yaml/.yml) or TOML (.toml) file into a dict."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist", expected="a readable JSON/YAML/TOML file",
                          got=str(path), fix="check the path")
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    data: Json
    try:
        if suffix == ".toml":
            import tomllib
            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml
            data = yaml.safe_load(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(f"unsupported config file type {suffix!r}", expected=".json, .yaml, .yml or .toml",
                              got=str(path), fix="rename the file with the right suffix")
    except ConfigError:
        raise
    except Exception as exc:  # parser errors of three libraries, reported uniformly
        raise ConfigError(f"{str(path)!r} is not valid {suffix[1:].upper()}: {exc}",
                          fix="correct the syntax at the position shown") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{str(path)!r} must hold a mapping at the top level", expected="key: value pairs",
                          got=type(data).__name__, fix="write the config as field: value lines (or a JSON object)")
    return data


def load_mapping_or_inline(value: str, name: str) -> dict[str, Json]:
    """Inline JSON (``'{"a": 1}'``) or a path to a JSON/YAML/TOML file."""
    text = value.strip()
    if text.startswith("{"):
        try:
            data: Json = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{name} is not valid JSON: {exc}", expected='an object such as {"key": 1}',
                              got=text, fix="quote keys and strings with double quotes") from exc
        assert isinstance(data, dict)  # JSON text that starts with "{" and parses is an object
        return data
    if not text:
        return {}
    if not Path(text).suffix:
        raise ConfigError(f"{name} must be inline JSON or a file",
                          expected='{"key": value} or a .json/.yaml/.toml path',
                          got=text, fix=f"pass e.g. --{name.replace('_', '-')} '{{\"key\": 1}}'")
    return load_mapping(text)


@dataclass
class RenderEnvSpec:
    """What an env factory may ask for (by taking ``spec`` or any of these names).

    Same fields as ``torchrl.render.RenderEnvSpec``, plus ``width``/``height``.
    """

    device: str
    seed: int | None
    max_steps: int | None
    from_pixels: bool
    pixels_only: bool
    camera: list[str]
    render_mode: str | None
    env_kwargs: dict[str, UserValue]
    config: RenderConfig
    checkpoint: Payload = None
    width: int = 480
    height: int = 480

    @classmethod
    def from_config(cls, config: RenderConfig, checkpoint: Payload = None,
                    render_mode: str | None = None) -> RenderEnvSpec:
        """The spec for ``config`` (``render_mode`` overrides the config's)."""
        return cls(device=config.env_device or config.device, seed=config.seed, max_steps=config.max_steps,
                   from_pixels=config.from_pixels, pixels_only=config.pixels_only, camera=list(config.camera),
                   render_mode=render_mode or config.render_mode, env_kwargs=dict(config.env_kwargs),
                   config=config, checkpoint=checkpoint, width=config.width, height=config.height)


class Deferred:
    """A value computed at its first read (:class:`RenderPolicySpec`'s ``env_specs``: torchrl's specs of a
    gymnasium env cost torchrl's import, which a factory that never reads them should not pay)."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


class _DeferredField:
    """A dataclass field whose value may be :class:`Deferred`: made, and kept, when it is first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = f"_{name}"

    def __get__(self, obj: object, owner: type | None = None) -> object:
        if obj is None:
            raise AttributeError(self.name)  # no class-level default: the field stays required
        value = obj.__dict__[self.name]
        if isinstance(value, Deferred):
            value = obj.__dict__[self.name] = value.make()
        return value

    def __set__(self, obj: object, value: object) -> None:
        obj.__dict__[self.name] = value


@dataclass
class RenderPolicySpec:
    """What a policy factory may ask for. Same fields as ``torchrl.render.RenderPolicySpec``.

    ``env_specs`` (torchrl's ``Composite`` of the env's specs) is built when the factory first reads it.
    """

    ckpt_path: Path | None
    checkpoint: Payload
    checkpoint_hash: str | None
    device: str
    # a descriptor as the default keeps env_specs a required argument (see _DeferredField.__get__), which mypy
    # cannot see: to it, the two fields after it follow a default
    env_specs: Composite | None = _DeferredField()
    policy_kwargs: dict[str, UserValue]  # type: ignore[misc]
    config: RenderConfig  # type: ignore[misc]

