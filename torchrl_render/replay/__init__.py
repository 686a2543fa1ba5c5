"""The 3-D replay: scene export from a MuJoCo model, pose encoding, the page, replays from saved rollouts.

Modules: :mod:`.scene` (model -> JSON scene), :mod:`.poses` (states -> encoded body poses),
:mod:`.page` (the HTML assembly), :mod:`.state` (MuJoCo state from envs and rollouts),
:mod:`.live` (the state behind a step record), :mod:`.rebuild` (saved rollouts -> any format),
:mod:`.cli` (``python -m torchrl_render replay``). Nothing here is imported by ``import torchrl_render``.
"""
