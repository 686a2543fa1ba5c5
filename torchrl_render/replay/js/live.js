// live.js: the live page. Server-sent events (/events) bring the scene, body poses, frames and metrics of
// the running evaluation; the 3-D view is view.js's. window.live is the page's automation API.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const token = new URLSearchParams(location.search).get("token") || "";
  const url = (path, extra) => path + "?token=" + encodeURIComponent(token) + (extra || "");
  const st = { view: null, sceneId: 0, homed: false, pose: null, poses: 0, applied: 0, metrics: {}, frames: 0, ended: false,
               loading: null, imgBusy: false, pendingFrame: null };
  let resolveReady;

  const api = {
    ready: new Promise((res) => { resolveReady = res; }),
    bodyPositions() { return st.view ? st.view.positions() : []; },
    camera() {
      return st.view ? { position: st.view.camera.position.toArray(), target: st.view.controls.target.toArray(),
                         follow_body: st.view.followBody } : null;
    },
    metrics() { return Object.assign({}, st.metrics); },
    state() {
      const p = st.pose || {};
      return { poses: st.poses, applied: st.applied, frames: st.frames, ended: st.ended, episode: p.episode,
               step: p.step, mode: st.view ? "3d" : (st.frames ? "frames" : "none") };
    },
  };
  window.live = api;

  async function loadScene() {
    const scene = await (await fetch(url("/scene"))).json();
    if (!scene) return;
    if (st.view) st.view.dispose();
    const assets = await RP.prepareAssets(scene);
    st.view = new RP.View($("views"), scene, assets);
    st.view.home();  // again at the first pose: the opening view is framed on the posed model
    st.homed = false;
    $("frame").style.display = "none";
    const box = $("message");
    if (box) box.remove();
    if (st.pose) applyPose(st.pose);
  }

  function scene(id) {
    if (id === st.sceneId) return;
    st.sceneId = id;
    st.loading = loadScene().catch((err) => { console.error("live:", err); status("could not load the scene: " + err.message); });
  }

  function applyPose(p) {
    st.pose = p;
    if (!st.view || p.pos.length !== st.view.bodies.length * 3) return;
    st.view.pose({ pos: p.pos, quat: p.quat }, 0);
    if (!st.homed) { st.view.home(); st.homed = true; }
    st.view.label.textContent = p.label || ("episode " + p.episode + "  step " + p.step);
    st.applied = p.seq;
    if (p.ack) fetch(url("/ack", "&seq=" + p.seq)).catch(() => {});
    facts();
  }

  function frame(f) {
    st.frames = f.seq; st.pose = f;
    const box = $("message");
    if (box) box.remove();
    const img = $("frame");
    img.style.display = st.view ? "none" : "block";
    if (st.ended) return;
    if (st.imgBusy) { st.pendingFrame = f.seq; return; }  // one image request at a time: frames are dropped
    st.imgBusy = true;
    img.onload = img.onerror = () => {
      st.imgBusy = false;
      if (st.pendingFrame !== null) { const n = st.pendingFrame; st.pendingFrame = null; frame({ ...st.pose, seq: n }); }
    };
    img.src = url("/frame.png", "&n=" + f.seq);
    facts();
  }

  function facts() {
    const m = st.metrics, p = st.pose || {}, fmt = (v) => (v === null || v === undefined ? "-" :
      typeof v === "number" ? String(+v.toFixed(3)) : String(v));
    const rows = m.episodes_done === undefined ? [] :  // the MuJoCo viewer's page has no run, no metrics
      [["episodes done", m.episodes_done], ["mean return", m.mean_return],
       ["success rate", m.success_rate === null || m.success_rate === undefined ? null :
        (100 * m.success_rate).toFixed(0) + "%"],
       ["episode", p.episode], ["step", p.step], ["return so far", p["return"]]];
    const table = $("metrics");
    table.innerHTML = "";
    for (const [k, v] of rows) {
      const tr = table.insertRow();
      tr.insertCell().textContent = k;
      tr.insertCell().textContent = fmt(v);
    }
  }

  function status(text) { $("status").textContent = text; }

  function connect() {
    const events = new EventSource(url("/events"));
    const on = (name, fn) => events.addEventListener(name, (e) => fn(JSON.parse(e.data)));
    on("hello", (s) => {
      st.metrics = s.metrics; status(s.ended ? "the run has ended" : "live");
      if (s.scene_id) scene(s.scene_id);
      if (s.pose) { st.poses = s.pose.seq; applyPose(s.pose); }
      if (s.frame_seq && !s.scene_id) frame({ ...(s.pose || {}), seq: s.frame_seq });
      facts(); resolveReady(api);
    });
    on("scene", (s) => scene(s.id));
    on("pose", (p) => { st.poses = p.seq; applyPose(p); });
    on("frame", frame);
    on("metrics", (m) => { st.metrics = m; facts(); });
    on("end", () => { st.ended = true; status("the run has ended"); events.close(); });
    events.onerror = () => { if (!st.ended) status("disconnected; retrying"); };
  }

  function tick() { if (st.view) st.view.draw(); requestAnimationFrame(tick); }
  facts();
  connect();
  requestAnimationFrame(tick);
})();
