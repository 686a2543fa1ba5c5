// chart.js: the reward / return chart under the view, with a cursor at the current frame (2-D canvas).
"use strict";
var RP = window.RP = window.RP || {};

RP.Chart = class {
  constructor(canvas, onSeek) {
    this.canvas = canvas;
    this.series = [];
    canvas.addEventListener("pointerdown", (e) => {
      if (!this.frames) return;
      const r = canvas.getBoundingClientRect(), x = (e.clientX - r.left - this.pad) / (r.width - 2 * this.pad);
      onSeek(Math.round(Math.min(Math.max(x, 0), 1) * (this.frames - 1)));
    });
    this.pad = 34;
  }

  // series: [{ep: decoded episode, label, dash}]
  set(series) {
    this.series = series;
    this.frames = Math.max(1, ...series.map((s) => s.ep.frames));
    this.static = null;
  }

  range(key) {
    let lo = Infinity, hi = -Infinity;
    for (const s of this.series) for (const v of s.ep[key]) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-9) { hi = lo + 1; }
    return [lo, hi];
  }

  background(w, h) {
    const c = document.createElement("canvas");
    c.width = w; c.height = h;
    const g = c.getContext("2d"), pad = this.pad, n = Math.max(1, this.frames - 1);
    g.font = "11px system-ui, sans-serif";
    g.fillStyle = "#93a0ad";
    for (const [key, color, side] of [["ret", "#4fb3ff", 0], ["reward", "#ffb347", 1]]) {
      const [lo, hi] = this.range(key);
      g.textAlign = side ? "right" : "left";
      g.fillStyle = color;
      g.fillText((key === "ret" ? "return " : "reward ") + hi.toPrecision(3), side ? w - 2 : 2, 11);
      g.fillText(lo.toPrecision(3), side ? w - 2 : 2, h - 3);
      for (const s of this.series) {
        g.strokeStyle = color;
        g.setLineDash(s.dash ? [4, 3] : []);
        g.beginPath();
        for (let f = 0; f < s.ep.frames; f++) {
          const x = pad + (w - 2 * pad) * f / n, y = h - 14 - (h - 28) * (s.ep[key][f] - lo) / (hi - lo);
          if (f) g.lineTo(x, y); else g.moveTo(x, y);
        }
        g.stroke();
      }
    }
    return c;
  }

  draw(frame) {
    const r = this.canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h || !this.static) {
      this.canvas.width = w; this.canvas.height = h;
      this.static = this.series.length ? this.background(w, h) : null;
    }
    const g = this.canvas.getContext("2d");
    g.clearRect(0, 0, w, h);
    if (!this.static) return;
    g.drawImage(this.static, 0, 0);
    const x = this.pad + (w - 2 * this.pad) * frame / Math.max(1, this.frames - 1);
    g.strokeStyle = "#ffffff";
    g.setLineDash([]);
    g.beginPath(); g.moveTo(x, 0); g.lineTo(x, h); g.stroke();
  }
};
