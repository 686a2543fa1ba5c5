"""``python -m torchrl_render replay ROLLOUTS --mujoco-model-path model.xml --out replay.html``.

Rebuilds saved rollouts (recorded with ``--mujoco-qpos-key qpos --save-rollout``) into html,
mp4, gif or frames from the model file alone (see :mod:`torchrl_render.cli.rebuild`). Without
``--mujoco-model-path`` the model file the run recorded (a gymnasium MuJoCo env's own) is used.
Exit codes as for the main command: 0 done, 2 a user error (one paragraph), 130 Ctrl-C.

Example:
    >>> build_parser().prog
    'torchrl-render replay'
"""

from __future__ import annotations

import argparse
import sys

from .parser import report_artifacts
from .rebuild import replay_rollouts

__all__ = ["build_parser", "main"]

PROG = "torchrl-render replay"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{PROG}: error: {message}. Fix: correct the flag; {PROG} --help lists them.", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The replay subcommand's flags (names as the RenderConfig fields they set)."""
    p = _Parser(prog=PROG, description="Rebuild saved rollouts from a MuJoCo model file: no policy, no env.",
                epilog="example:\n  python -m torchrl_render replay runs/eval_rollouts --mujoco-model-path "
                       "model.xml --out replay.html", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rollouts", help="rollout folder written with --save-rollout (holds index.json)")
    p.add_argument("--mujoco-model-path", default=None,
                   help="the MuJoCo model (XML or MJB) of the rollouts (default: the model file the run recorded "
                        "in the rollouts' index.json and its metadata sidecar; gymnasium MuJoCo envs record theirs)")
    p.add_argument("--mujoco-asset-paths", action="extend", nargs="+", default=[], metavar="PATH",
                   help="asset files or folders of the model (several values, as the main command takes them)")
    p.add_argument("--mujoco-qpos-key", default="qpos", help="key the qpos were recorded under (default qpos)")
    p.add_argument("--out", required=True, help="replay.html, replay.mp4, replay.gif or a folder (frames)")
    p.add_argument("--format", default=None, help="html, mp4, gif or frames (default: from --out)")
    p.add_argument("--fps", type=float, default=None, help="frames per second (default 30)")
    p.add_argument("--width", type=int, default=None, help="frame width for mp4/gif/frames")
    p.add_argument("--height", type=int, default=None, help="frame height for mp4/gif/frames")
    p.add_argument("--camera", default=None, help="comma-separated camera names for mp4/gif/frames")
    p.add_argument("--render-quality", default=None, help="default, balanced or fast (mp4/gif/frames)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--trust-rollouts", action="store_true",
                   help="load pickled non-tensor entries of the rollouts (unpickling runs code from the folder: "
                        "only for a folder you trust)")
    return p


def main(argv: list[str]) -> int:
    """Runs the subcommand; returns the exit code."""
    args = build_parser().parse_args(argv)

    # several values, or one comma list as earlier versions took them
    assets = [a.strip() for value in args.mujoco_asset_paths for a in value.split(",") if a.strip()]
    return report_artifacts(
        lambda: replay_rollouts(args.rollouts, args.mujoco_model_path, args.out, asset_paths=assets,
                                qpos_key=args.mujoco_qpos_key, format=args.format, fps=args.fps,
                                width=args.width, height=args.height, camera=args.camera,
                                render_quality=args.render_quality, overwrite=args.overwrite or None,
                                trust_rollouts=args.trust_rollouts),
        error=f"{PROG}: error:", prog=PROG)
