// decode.js: base64 + zlib (the browser's DecompressionStream) + byte un-shuffling of the pose chunks.
// Chunk layout: see torchrl_render/replay/poses.py.
"use strict";
var RP = window.RP = window.RP || {};

RP.b64 = function (text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

RP.inflate = async function (bytes) {
  if (typeof DecompressionStream === "undefined") {
    throw new Error("this browser has no DecompressionStream (Chrome 80+, Firefox 113+, Safari 16.4+ needed)");
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
};

RP.unpack = async function (text) { return RP.inflate(RP.b64(text)); };

// planes of `size` bytes each -> values in natural byte order
RP.unshuffle = function (bytes, offset, count, size) {
  const out = new Uint8Array(count * size);
  for (let k = 0; k < size; k++) {
    const base = offset + k * count;
    for (let i = 0; i < count; i++) out[i * size + k] = bytes[base + i];
  }
  return out.buffer;
};

RP.decodeChunk = async function (text, nbody) {
  const raw = await RP.unpack(text);
  const frames = raw.length / (nbody * 20 + 8);
  let off = 0;
  const pos = new Float32Array(RP.unshuffle(raw, off, frames * nbody * 3, 4)); off += frames * nbody * 12;
  const q16 = new Int16Array(RP.unshuffle(raw, off, frames * nbody * 4, 2)); off += frames * nbody * 8;
  const reward = new Float32Array(RP.unshuffle(raw, off, frames, 4)); off += frames * 4;
  const ret = new Float32Array(RP.unshuffle(raw, off, frames, 4));
  return { frames, pos, q16, reward, ret };
};

// one episode: {frames, pos: Float32Array[F*B*3], quat: Float32Array[F*B*4] (w, x, y, z), reward, ret}
RP.decodeEpisode = async function (ep, nbody) {
  const parts = await Promise.all(ep.chunks.map((c) => RP.decodeChunk(c, nbody)));
  const frames = parts.reduce((n, p) => n + p.frames, 0);
  const out = { frames, pos: new Float32Array(frames * nbody * 3), quat: new Float32Array(frames * nbody * 4),
                reward: new Float32Array(frames), ret: new Float32Array(frames) };
  let f = 0;
  for (const p of parts) {
    out.pos.set(p.pos, f * nbody * 3);
    out.reward.set(p.reward, f);
    out.ret.set(p.ret, f);
    for (let i = 0; i < p.q16.length; i += 4) {
      const w = p.q16[i], x = p.q16[i + 1], y = p.q16[i + 2], z = p.q16[i + 3];
      const n = Math.hypot(w, x, y, z) || 1, j = f * nbody * 4 + i;
      out.quat[j] = w / n; out.quat[j + 1] = x / n; out.quat[j + 2] = y / n; out.quat[j + 3] = z / n;
    }
    f += p.frames;
  }
  return out;
};

RP.decodeArray = async function (text, Type) { return new Type((await RP.unpack(text)).buffer); };
