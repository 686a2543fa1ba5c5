"""The offline 3-D replay page: scene export from a MuJoCo model, pose encoding, the page itself.

Modules: :mod:`.scene` (model -> JSON scene), :mod:`.poses` (states -> encoded body poses),
:mod:`.page` (the HTML assembly, with ``page.html``, ``js/`` and the vendored three.js). The MuJoCo
state it encodes comes from :mod:`torchrl_render.envs.mujoco_state`; the ``replay`` subcommand and the
rebuild from saved rollouts are :mod:`torchrl_render.cli.replay` and :mod:`torchrl_render.cli.rebuild`;
the live page is :mod:`torchrl_render.live`. Nothing here is imported by ``import torchrl_render``.
"""
