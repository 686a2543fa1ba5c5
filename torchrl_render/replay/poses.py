"""Per-frame body poses, computed with MuJoCo itself, and their compact encoding.

For each frame the encoder sets a private ``MjData`` to the saved state (``qpos``,
and the mocap bodies' poses if the model has any), runs ``mj_kinematics`` and keeps
``xpos`` (float32, so the page reports positions to float32 precision) and ``xquat``
(int16, ``round(q * 32767)``: the orientation is only drawn). Frames are grouped in
chunks of :data:`CHUNK_FRAMES`; a chunk is byte-shuffled (the k-th byte of every value
together, which zlib compresses far better), zlib-compressed and base64-encoded, so
memory stays flat however long the episode is.

Chunk layout (all little-endian), for ``F`` frames and ``B`` bodies, before shuffling:
``xpos`` float32 ``[F, B, 3]``, then ``xquat`` int16 ``[F, B, 4]``, then ``reward``
float32 ``[F]`` and ``return`` float32 ``[F]``. Each of these four arrays is shuffled
on its own (``bytes.reshape(n, itemsize).T``).

Example:
    >>> import mujoco, numpy as np
    >>> model = mujoco.MjModel.from_xml_string(
    ...     '<mujoco><worldbody><body pos="0 0 1"><freejoint/><geom size=".1"/></body></worldbody></mujoco>')
    >>> enc = PoseEncoder(model)
    >>> enc.add(model.qpos0)
    >>> chunk = enc.flush()
    >>> xpos, xquat, reward, ret = decode_chunk(chunk, model.nbody)
    >>> xpos[0, 1].tolist(), xquat.shape
    ([0.0, 0.0, 1.0], (1, 2, 4))
"""

from __future__ import annotations

import base64
import zlib
from typing import Literal, overload

import mujoco
import numpy as np
import numpy.typing as npt

from ..errors import WriterError

__all__ = ["CHUNK_FRAMES", "PoseEncoder", "body_poses", "decode_chunk", "pose_message"]

CHUNK_FRAMES = 256
_QUAT_SCALE = 32767.0


def body_poses(model: mujoco.MjModel, data: mujoco.MjData, qpos: npt.ArrayLike, mocap_pos: npt.ArrayLike | None = None,
               mocap_quat: npt.ArrayLike | None = None) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(xpos, xquat)`` of every body for the state ``qpos`` (``data`` is overwritten)."""
    data.qpos[:] = np.asarray(qpos, dtype=np.float64).reshape(-1)
    if model.nmocap and mocap_pos is not None:
        data.mocap_pos[:] = np.asarray(mocap_pos, dtype=np.float64).reshape(model.nmocap, 3)
    if model.nmocap and mocap_quat is not None:
        data.mocap_quat[:] = np.asarray(mocap_quat, dtype=np.float64).reshape(model.nmocap, 4)
    mujoco.mj_kinematics(model, data)
    return data.xpos.copy(), data.xquat.copy()


def pose_message(model: mujoco.MjModel, data: mujoco.MjData, qpos: npt.ArrayLike,
                 mocap_pos: npt.ArrayLike | None = None,
                 mocap_quat: npt.ArrayLike | None = None) -> dict[str, list[float]]:
    """The live page's pose: ``pos`` (flat ``xpos``) and ``quat`` (flat ``xquat``, w first), float32 values."""
    xpos, xquat = body_poses(model, data, qpos, mocap_pos, mocap_quat)
    return {"pos": xpos.astype("float32").ravel().tolist(), "quat": xquat.astype("float32").ravel().tolist()}


def _shuffle(array: npt.NDArray[np.float32 | np.int16]) -> bytes:
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(-1, array.dtype.itemsize)
    return raw.T.tobytes()


@overload
def _unshuffle(raw: bytes, dtype: Literal["<f4"], shape: tuple[int, ...]) -> npt.NDArray[np.float32]: ...


@overload
def _unshuffle(raw: bytes, dtype: Literal["<i2"], shape: tuple[int, ...]) -> npt.NDArray[np.int16]: ...


def _unshuffle(raw: bytes, dtype: Literal["<f4", "<i2"], shape: tuple[int, ...]) -> npt.NDArray[np.float32 | np.int16]:
    size = np.dtype(dtype).itemsize
    planes = np.frombuffer(raw, np.uint8).reshape(size, -1)
    return planes.T.copy().view(dtype).reshape(shape)


class PoseEncoder:
    """Turns states into encoded pose chunks (see the module docstring).

    Args:
        model: The ``mujoco.MjModel`` the states belong to.
        chunk_frames: Frames per chunk.
    """

    def __init__(self, model: mujoco.MjModel, chunk_frames: int = CHUNK_FRAMES) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.chunk_frames = int(chunk_frames)
        self._pos: list[npt.NDArray[np.float32]] = []
        self._quat: list[npt.NDArray[np.int16]] = []
        self._rewards: list[tuple[float, float]] = []

    def add(self, qpos: npt.ArrayLike, mocap_pos: npt.ArrayLike | None = None, mocap_quat: npt.ArrayLike | None = None,
            reward: float = 0.0, ret: float = 0.0) -> str | None:
        """Adds one frame; returns a finished chunk when one is full, else ``None``."""
        nq = self.model.nq
        qpos = np.asarray(qpos, dtype=np.float64).reshape(-1)
        if qpos.shape[0] != nq:
            raise WriterError("a saved MuJoCo state does not fit the model", expected=f"qpos of {nq} values",
                              got=f"{qpos.shape[0]} values",
                              fix="pass the model file the rollout was recorded with (--mujoco-model-path)")
        xpos, xquat = body_poses(self.model, self.data, qpos, mocap_pos, mocap_quat)
        self._pos.append(xpos.astype("<f4"))
        self._quat.append(np.round(xquat * _QUAT_SCALE).astype("<i2"))
        self._rewards.append((float(reward), float(ret)))
        return self.flush() if len(self._pos) >= self.chunk_frames else None

    def __len__(self) -> int:
        return len(self._pos)

    def flush(self) -> str | None:
        """The pending frames as one encoded chunk (``None`` if there are none)."""
        if not self._pos:
            return None
        rewards = np.asarray(self._rewards, dtype="<f4")
        parts = [_shuffle(np.stack(self._pos)), _shuffle(np.stack(self._quat)),
                 _shuffle(np.ascontiguousarray(rewards[:, 0])), _shuffle(np.ascontiguousarray(rewards[:, 1]))]
        self._pos, self._quat, self._rewards = [], [], []
        return base64.b64encode(zlib.compress(b"".join(parts), 9)).decode("ascii")


def decode_chunk(chunk: str, nbody: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32],
                                                  npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """``(xpos, xquat, reward, return)`` of an encoded chunk (the page's decoder, in Python)."""
    raw = zlib.decompress(base64.b64decode(chunk))
    frames = len(raw) // (nbody * (12 + 8) + 8)
    sizes = [frames * nbody * 12, frames * nbody * 8, frames * 4, frames * 4]
    offsets = np.cumsum([0, *sizes])
    xpos = _unshuffle(raw[offsets[0]:offsets[1]], "<f4", (frames, nbody, 3))
    xquat = _unshuffle(raw[offsets[1]:offsets[2]], "<i2", (frames, nbody, 4)).astype(np.float32) / _QUAT_SCALE
    reward = _unshuffle(raw[offsets[2]:offsets[3]], "<f4", (frames,))
    ret = _unshuffle(raw[offsets[3]:offsets[4]], "<f4", (frames,))
    return xpos, xquat, reward, ret
