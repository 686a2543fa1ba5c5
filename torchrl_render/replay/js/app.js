// app.js: the player (one clock for one or two episodes), the controls, and window.replay, the page's
// automation API: ready, episodes, numFrames, seek, play, pause, setSpeed, bodyPositions (+ a few extras).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const readJSON = (id) => JSON.parse($(id).textContent);
  const head = readJSON("replay-head"), scene = readJSON("replay-scene"), meta = readJSON("replay-episodes");
  const SPEEDS = [0.25, 0.5, 1, 2, 4];
  const st = { frame: 0, clock: 0, playing: false, speed: 1, loop: true, follow: true,
               primary: null, secondary: null, last: null };
  const timing = { script_ms: performance.now() };  // ms since navigation, per loading stage
  const decoded = new Map();  // episode_ix -> decoded poses
  const views = [];
  let chart = null, resolveReady, rejectReady;

  const api = {
    ready: new Promise((res, rej) => { resolveReady = res; rejectReady = rej; }),
    episodes: meta.map((e) => e.episode_ix),
    numFrames(episode) { return info(episode === undefined ? st.primary : episode).frames; },
    // why an episode is shown (--render-select: "worst 1 of 3", ...), null when it was not chosen
    reason(episode) { return info(episode === undefined ? st.primary : episode).render_reason || null; },
    seek(frame, episode) {
      // checked before anything changes: a bad frame or episode throws and leaves the page as it was
      if (typeof frame !== "number" || !Number.isFinite(frame)) {
        throw new TypeError("replay.seek(frame, episode): frame must be a finite number (0 to " +
                            (framesShown() - 1) + "), got " + describe(frame));
      }
      if (episode !== undefined && episode !== null) info(episode);
      if (episode !== undefined && episode !== null && Number(episode) !== st.primary) setPrimary(episode);
      st.frame = clamp(Math.round(frame), 0, framesShown() - 1);
      st.clock = st.frame;
      apply();
      return st.frame;
    },
    play() { if (st.frame >= framesShown() - 1 && !st.loop) api.seek(0); st.playing = true; st.last = null; ui(); },
    pause() { st.playing = false; ui(); },
    setSpeed(x) {
      const v = Number(x);
      if (!(v >= 0.25 && v <= 4)) throw new RangeError("speed must be between 0.25 and 4, got " + x);
      st.speed = v; ui(); return v;
    },
    setLoop(on) { st.loop = !!on; ui(); },
    setFollow(on) { st.follow = !!on; for (const v of views) { v.follow = st.follow; v.lastFollow = null; } apply(); },
    setCompare(episode) { setSecondary(episode === undefined ? null : episode); },
    bodyPositions(which) { return view(which, "bodyPositions").positions(); },
    camera(which) {
      const v = view(which, "camera");
      return { position: v.camera.position.toArray(), target: v.controls.target.toArray(),
               mode: st.follow ? "follow" : "free", ...v.followInfo() };
    },
    setCamera(position, target, which) {
      const v = view(which, "setCamera"), ok = (a) => Array.isArray(a) && a.length === 3 && a.every(Number.isFinite);
      if (!ok(position) || !(target === undefined || ok(target))) {
        throw new TypeError("replay.setCamera(position, target, view): position and target must be [x, y, z] of " +
                            "finite numbers, got " + describe(position) + ", " + describe(target));
      }
      v.camera.position.set(...position);
      if (target) v.controls.target.set(...target);
      v.controls.update();
      v.lastFollow = v.bodies[v.followBody].position.clone();
      v.dirty = true;
      v.draw(true);
      return api.camera(which);
    },
    drawn() { return JSON.parse(JSON.stringify(scene.drawn || {})); },
    drawnVertices(kind, index, which) { return view(which, "drawnVertices").drawnVertices(kind, index); },
    state() {
      return { episode: st.primary, compare: st.secondary, frame: st.frame, playing: st.playing,
               speed: st.speed, loop: st.loop, follow: st.follow };
    },
    get frame() { return st.frame; },
    get episode() { return st.primary; },
    get playing() { return st.playing; },
    get speed() { return st.speed; },
    timing,
  };
  window.replay = api;

  function describe(x) {
    try { return typeof x === "string" ? JSON.stringify(x) : String(x); } catch (e) { return typeof x; }
  }
  // which view a call means: 0 (or nothing) the first, 1 the one beside it (when one is shown)
  function view(which, name) {
    const i = which === undefined || which === null || which === false || which === 0 ? 0
      : which === true || which === 1 ? 1 : -1;
    if (i < 0 || !views[i]) {
      throw new RangeError("replay." + name + "(view): view must be 0" + (views.length > 1 ? " or 1" : "") +
                           " (1 needs an episode beside: replay.setCompare(e)), got " + describe(which));
    }
    return views[i];
  }
  function clamp(x, lo, hi) { return Math.min(Math.max(x, lo), hi); }
  function info(episode) {
    const e = typeof episode === "boolean" || episode === null || episode === "" ? undefined : meta.find((m) => m.episode_ix === Number(episode));
    if (!e) {
      throw new RangeError("no episode " + describe(episode) + "; the page holds episodes " + api.episodes.join(", "));
    }
    return e;
  }
  function framesShown() {
    const eps = [st.primary, st.secondary].filter((e) => e !== null);
    return Math.max(1, ...eps.map((e) => info(e).frames));
  }

  function setPrimary(episode) { info(episode); st.primary = Number(episode); layout(); }
  function setSecondary(episode) {
    st.secondary = episode === null || episode === "" ? null : (info(episode), Number(episode));
    layout();
  }

  // one view per episode shown, each posed from its own decoded poses on the shared clock
  function layout() {
    const wanted = st.secondary === null ? 1 : 2;
    while (views.length > wanted) views.pop().dispose();
    while (views.length < wanted) {
      const v = new RP.View($("views"), scene, RP.assets);
      v.follow = st.follow;
      views.push(v);
      v.home();
    }
    const shown = [st.primary, st.secondary];
    views.forEach((v, i) => {
      v.label.textContent = "episode " + shown[i];
      v.chooseFollow(decoded.get(shown[i]));
      v.lastFollow = null;
    });
    st.frame = clamp(st.frame, 0, framesShown() - 1);
    chart.set(shown.filter((e) => e !== null).map((e, i) => ({ ep: decoded.get(e), dash: i > 0 })));
    facts();
    apply();
  }

  function apply() {
    const shown = [st.primary, st.secondary];
    views.forEach((v, i) => {
      const ep = decoded.get(shown[i]);
      v.pose(ep, Math.min(st.frame, ep.frames - 1));
    });
    ui();
  }

  function ui() {
    const n = framesShown();
    $("scrub").max = String(n - 1);
    $("scrub").value = String(st.frame);
    $("time").textContent = "frame " + st.frame + " / " + (n - 1);
    $("play").innerHTML = st.playing ? "&#10074;&#10074;" : "&#9654;";
    $("speed").value = String(st.speed);
    $("loop").checked = st.loop;
    $("camera").value = st.follow ? "follow" : "free";
    $("episode").value = String(st.primary);
    $("compare").value = st.secondary === null ? "" : String(st.secondary);
    if (chart) chart.draw(st.frame);
  }

  function facts() {
    const rows = [], fmt = (v) => (v === null || v === undefined ? "-" : typeof v === "number" ? +v.toFixed(4) : String(v));
    for (const e of [st.primary, st.secondary].filter((x) => x !== null)) {
      const m = info(e), tag = st.secondary === null ? "" : " (ep " + e + ")";
      rows.push(["episode" + tag, e], ["seed" + tag, m.seed], ["return" + tag, m.sum_reward],
                ["length" + tag, m.length], ["success" + tag, m.success]);
      if (m.render_reason) rows.push(["chosen" + tag, m.render_reason]);
      if (m.rerun) rows.push(["re-run shown" + tag, "return " + fmt(m.rerun.sum_reward) + ", length " + m.rerun.length]);
    }
    const sha = head.facts.checkpoint_sha256;
    rows.push(["checkpoint sha256", sha ? sha.slice(0, 16) + "..." : null], ["env", head.facts.env]);
    const left = (scene.drawn && scene.drawn.not_drawn) || [];
    if (left.length) rows.push(["not drawn", left.length + " (hover)"]);
    $("facts").innerHTML = "";
    for (const [k, v] of rows) {
      const tr = $("facts").insertRow(), a = tr.insertCell(), b = tr.insertCell();
      a.textContent = k; b.textContent = fmt(v);
      if (k === "checkpoint sha256" && sha) b.title = sha;
      if (k === "not drawn") b.title = left.join("\n");
    }
  }

  function tick(now) {
    if (st.playing) {
      const dt = st.last === null ? 0 : (now - st.last) / 1000;
      st.clock += dt * head.fps * st.speed;
      const n = framesShown();
      if (st.clock > n - 1) {
        if (st.loop) st.clock = st.clock % n; else { st.clock = n - 1; st.playing = false; }
      }
      if (Math.floor(st.clock) !== st.frame) { st.frame = Math.floor(st.clock); apply(); } else ui();
    }
    st.last = now;
    for (const v of views) v.draw();
    requestAnimationFrame(tick);
  }

  function controls() {
    $("play").onclick = () => (st.playing ? api.pause() : api.play());
    $("back").onclick = () => { api.pause(); api.seek(st.frame - 1); };
    $("fwd").onclick = () => { api.pause(); api.seek(st.frame + 1); };
    $("scrub").oninput = (e) => api.seek(Number(e.target.value));
    $("speed").onchange = (e) => api.setSpeed(e.target.value);
    $("loop").onchange = (e) => api.setLoop(e.target.checked);
    $("camera").onchange = (e) => api.setFollow(e.target.value === "follow");
    $("episode").onchange = (e) => setPrimary(e.target.value);
    $("compare").onchange = (e) => setSecondary(e.target.value);
    for (const e of api.episodes) {
      const why = info(e).render_reason;
      for (const id of ["episode", "compare"]) $(id).add(new Option("episode " + e + (why ? " (" + why + ")" : ""), String(e)));
    }
    document.addEventListener("keydown", (e) => {
      if (e.target.tagName === "INPUT" && e.target.type !== "range" || e.target.tagName === "SELECT") return;
      if (e.key === " ") { e.preventDefault(); $("play").onclick(); }
      else if (e.key === "ArrowLeft") $("back").onclick();
      else if (e.key === "ArrowRight") $("fwd").onclick();
    });
  }

  async function start() {
    if (!meta.length) throw new Error("this replay holds no episode");
    RP.assets = await RP.prepareAssets(scene);
    const eps = await Promise.all(meta.map((e) => RP.decodeEpisode(e, head.nbody)));
    meta.forEach((e, i) => decoded.set(e.episode_ix, eps[i]));
    timing.decoded_ms = performance.now();
    $("message").remove();
    chart = new RP.Chart($("chart"), (f) => api.seek(f));
    controls();
    st.primary = meta[0].episode_ix;
    layout();
    timing.built_ms = performance.now();
    for (const v of views) v.draw(true);
    timing.drawn_ms = performance.now();
    requestAnimationFrame(tick);
    window.addEventListener("resize", () => { for (const v of views) v.dirty = true; chart.static = null; ui(); });
  }

  // in an iframe (a notebook holds one viewer per episode) the WebGL context is made only once the
  // viewer scrolls into view: browsers keep about 16 live contexts per page
  function whenVisible() {
    if (window.self === window.top || typeof IntersectionObserver === "undefined") return Promise.resolve();
    return new Promise((resolve) => {
      const seen = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) { seen.disconnect(); resolve(); }
      });
      seen.observe(document.documentElement);
    });
  }

  whenVisible().then(start).then(() => resolveReady(api), (err) => {
    const box = $("message");
    if (box) box.textContent = "could not show the replay: " + err.message;
    console.error("replay:", err);
    rejectReady(err);
  });
})();
