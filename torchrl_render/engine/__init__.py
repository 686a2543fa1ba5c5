"""The evaluation engine: episodes from 1 or K env slots, seeded as their ecosystem means it.

Two paths, chosen per run (recorded in the metadata's ``engine``):

* ``gymnasium``: an env that the factory returned as a gymnasium env is stepped directly, in
  numpy, as a plain gymnasium loop would (``env.reset(seed=seed + i)``, float64 rewards summed
  step by step); K slots live in this process (``serial``) or in worker processes
  (``parallel``), and the policy is called once per batch step (``policy_batch="batched"``) or
  once per env (``"per-env"``). Rendered episodes run first, one after another, in this process.
* ``torchrl``: torchrl envs of the user's (their transforms run in torchrl), dm_control tasks and
  recurrent TensorDict policies go through torchrl (``SerialEnv`` / ``ParallelEnv`` for K > 1).

Either way the engine yields :class:`StepRecord` s for the steps of rendered episodes and one
:class:`Episode` per finished episode, in episode order. It knows nothing of frames or files.

The package: :mod:`.engine` (the :class:`Engine` and the choice of path), :mod:`.gym_loop` and
:mod:`.slot_loop` (the gymnasium path over :mod:`.env_slots`), :mod:`.torchrl_loop`, :mod:`.single` and
:mod:`.workers` (the torchrl path; :mod:`.episode_control` is the transform inside its env workers),
:mod:`.plan`, :mod:`.records` and :mod:`.seeding`. Render backends come in from the caller as a
picklable factory (``make_backend``), never imported here.
"""

from __future__ import annotations

from .engine import Engine
from .plan import EpisodePlan
from .records import Episode, StepRecord

__all__ = ["Engine", "Episode", "EpisodePlan", "StepRecord"]
