// view.js: the three.js scene built from the exported MuJoCo scene, and one View (canvas, camera, orbit
// controls, follow camera) per episode shown. Bodies are direct children of the scene, posed in world
// coordinates (xpos, xquat); geoms sit in their body's frame (geom_pos, geom_quat), as in MuJoCo.
"use strict";
var RP = window.RP = window.RP || {};

RP.prepareAssets = async function (scene) {
  THREE.ColorManagement.enabled = false;  // MuJoCo colours are used as they are (no sRGB conversion)
  const meshes = await Promise.all(scene.meshes.map(async (m) => {
    const vert = await RP.decodeArray(m.vertices, Float32Array), face = await RP.decodeArray(m.faces, Uint32Array);
    const g = new THREE.BufferGeometry();
    g.setAttribute("position", new THREE.BufferAttribute(vert, 3));
    g.setIndex(new THREE.BufferAttribute(face, 1));
    const flat = g.toNonIndexed();
    flat.computeVertexNormals();
    return flat;
  }));
  // a texture is one image (2-D) or six square faces (cube: +x, -x, +y, -y, +z, -z, as MuJoCo stores them)
  const textures = await Promise.all(scene.textures.map(async (t) => {
    const rgb = await RP.unpack(t.rgb), n = t.width * t.height, faces = [];
    for (let k = 0; k < (t.faces || 1); k++) {
      const rgba = new Uint8Array(n * 4);
      for (let i = 0; i < n; i++) {
        rgba.set(rgb.subarray(3 * (k * n + i), 3 * (k * n + i) + 3), 4 * i); rgba[4 * i + 3] = 255;
      }
      faces.push(rgba);
    }
    return { kind: t.kind || "2d", width: t.width, height: t.height, rgba: faces[0], faces };
  }));
  const hfields = await Promise.all((scene.hfields || []).map(async (h) => ({ ...h,
    heights: await RP.decodeArray(h.data, Float32Array) })));
  const skins = await Promise.all((scene.skins || []).map(async (k) => ({ ...k,
    vert: await RP.decodeArray(k.vertices, Float32Array), face: await RP.decodeArray(k.faces, Uint32Array),
    uv: k.texcoords ? await RP.decodeArray(k.texcoords, Float32Array) : null,
    vertid: await RP.decodeArray(k.bone_vertid, Uint32Array), weight: await RP.decodeArray(k.bone_weight, Float32Array),
  })));
  return { meshes, textures, hfields, skins, geometries: new Map() };
};

// a height field as MuJoCo draws its surface: point (r, c) at x = sx (2c / (ncol - 1) - 1),
// y = sy (2r / (nrow - 1) - 1), z = top * elevation
function hfieldGeometry(h) {
  const [sx, sy, top] = h.size, R = h.nrow, C = h.ncol, pos = new Float32Array(R * C * 3), idx = [];
  for (let r = 0; r < R; r++) {
    for (let c = 0; c < C; c++) {
      const i = r * C + c;
      pos[3 * i] = sx * (2 * c / (C - 1) - 1); pos[3 * i + 1] = sy * (2 * r / (R - 1) - 1);
      pos[3 * i + 2] = top * h.heights[i];
      if (r < R - 1 && c < C - 1) idx.push(i, i + 1, i + C + 1, i, i + C + 1, i + C);
    }
  }
  const g = new THREE.BufferGeometry();
  g.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  g.setIndex(idx);
  g.computeVertexNormals();
  return g;
}

function dataTexture(rgba, w, h, mat) {
  const tex = new THREE.DataTexture(rgba, w, h, THREE.RGBAFormat);
  tex.wrapS = tex.wrapT = THREE.RepeatWrapping;
  tex.magFilter = THREE.NearestFilter;
  tex.minFilter = THREE.LinearMipmapLinearFilter;
  tex.generateMipmaps = true;
  if (mat) tex.repeat.set(mat.texrepeat[0], mat.texrepeat[1]);
  tex.needsUpdate = true;
  return tex;
}

function geomGeometry(g, assets) {
  const s = g.size, key = g.type + ":" + s.join(",") + ":" + g.mesh + ":" + g.hfield;
  if (assets.geometries.has(key)) return assets.geometries.get(key);
  let geo;
  if (g.type === "plane") {
    const big = Math.max(10 * g.extent, 50);
    geo = new THREE.PlaneGeometry(2 * (s[0] > 0 ? s[0] : big), 2 * (s[1] > 0 ? s[1] : big));
  } else if (g.type === "sphere" || g.type === "ellipsoid") {
    geo = new THREE.SphereGeometry(g.type === "sphere" ? s[0] : 1, 28, 18);
  } else if (g.type === "capsule") {
    geo = new THREE.CapsuleGeometry(s[0], 2 * s[1], 8, 20).rotateX(Math.PI / 2);
  } else if (g.type === "cylinder") {
    geo = new THREE.CylinderGeometry(s[0], s[0], 2 * s[1], 28).rotateX(Math.PI / 2);
  } else if (g.type === "box") {
    geo = new THREE.BoxGeometry(2 * s[0], 2 * s[1], 2 * s[2]);
  } else if (g.type === "hfield") {
    geo = hfieldGeometry(assets.hfields[g.hfield]);
  } else {
    geo = assets.meshes[g.mesh];
  }
  assets.geometries.set(key, geo);
  return geo;
}

function geomMaterial(g, scene, assets) {
  const c = g.rgba, mat = g.material !== null ? scene.materials[g.material] : null;
  const spec = mat ? mat.specular : 0.5, emission = mat ? mat.emission : 0;
  const m = new THREE.MeshPhongMaterial({
    color: new THREE.Color(c[0], c[1], c[2]), opacity: c[3], transparent: c[3] < 1,
    specular: new THREE.Color(spec * 0.1, spec * 0.1, spec * 0.1),  // ~ light specular 0.3 / pi
    shininess: Math.max(1, (mat ? mat.shininess : 0.5) * 128),
    emissive: new THREE.Color(c[0] * emission, c[1] * emission, c[2] * emission),
    flatShading: g.type === "mesh" || g.type === "box",
  });
  const t = mat && mat.texture !== null ? assets.textures[mat.texture] : null;
  if (t && t.kind === "cube") {
    // a box shows the six faces, one per side (BoxGeometry's material groups: +x, -x, +y, -y, +z, -z);
    // other geoms are drawn in the material's colour (the scene's "drawn" entry says so)
    if (g.type !== "box") return m;
    // each face as MuJoCo maps it (checked face by face against MuJoCo's renderer): rows run the other way
    return t.faces.map((face) => {
      const f = m.clone(), tex = dataTexture(face, t.width, t.height);
      tex.repeat.y = -1; tex.offset.y = 1;
      f.map = tex;
      return f;
    });
  }
  if (t && g.type !== "mesh") {
    const tex = dataTexture(t.rgba, t.width, t.height);
    let rx = mat.texrepeat[0], ry = mat.texrepeat[1];
    if (g.type === "plane" && mat.texuniform) {
      const big = Math.max(10 * g.extent, 50);
      rx *= 2 * (g.size[0] > 0 ? g.size[0] : big); ry *= 2 * (g.size[1] > 0 ? g.size[1] : big);
    }
    tex.repeat.set(rx, ry);
    tex.needsUpdate = true;
    m.map = tex;
  }
  return m;
}

// a skin: vertices in world coordinates, recomputed per frame from its bones' poses (see View.skinPose)
function skinMesh(k, scene, assets) {
  const g = new THREE.BufferGeometry(), pos = new Float32Array(k.vert.length);
  g.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  g.setIndex(new THREE.BufferAttribute(k.face, 1));
  if (k.uv) g.setAttribute("uv", new THREE.BufferAttribute(k.uv, 2));
  const proxy = { type: "skin", rgba: k.rgba, material: k.material, size: [0, 0, 0] };
  if (k.material !== null && scene.materials[k.material]) {
    const mat = scene.materials[k.material], c = k.rgba;
    if (c[0] === 0.5 && c[1] === 0.5 && c[2] === 0.5 && c[3] === 1) proxy.rgba = mat.rgba;
  }
  let material = geomMaterial(proxy, scene, assets);
  if (!k.uv && material.map) material.map = null;
  if (Array.isArray(material)) material = material[0];
  const mesh = new THREE.Mesh(g, material);
  mesh.frustumCulled = false;  // its bounds change every frame
  return mesh;
}

// three.js divides diffuse light by pi (physically based Lambert); MuJoCo does not: intensities are pi
function addLights(three, scene, bodies, camera) {
  const head = scene.headlight;
  let ambient = head.active ? head.ambient.slice() : [0, 0, 0];
  for (const l of scene.lights) ambient = ambient.map((a, i) => a + l.ambient[i]);
  three.add(new THREE.AmbientLight(new THREE.Color(...ambient.map((a) => Math.min(a, 1))), Math.PI));
  if (head.active) {  // MuJoCo's headlight shines from the camera
    const light = new THREE.DirectionalLight(new THREE.Color(...head.diffuse), Math.PI);
    light.position.set(0, 0, 1);
    camera.add(light);
    light.target.position.set(0, 0, -1);
    camera.add(light.target);
  }
  for (const l of scene.lights) {
    const color = new THREE.Color(...l.diffuse), parent = bodies[l.body] || bodies[0];
    let light;
    if (l.type === "point") light = new THREE.PointLight(color, Math.PI, 0, 0);
    else if (l.type === "spot") light = new THREE.SpotLight(color, Math.PI, 0, Math.min(Math.PI / 2, l.cutoff * Math.PI / 180), 0.3, 0);
    else light = new THREE.DirectionalLight(color, Math.PI);
    light.position.set(...l.pos);
    parent.add(light);
    if (light.target) {
      light.target.position.set(l.pos[0] + l.dir[0], l.pos[1] + l.dir[1], l.pos[2] + l.dir[2]);
      parent.add(light.target);
    }
  }
}

// One 3-D view: its own canvas, renderer, scene copy, camera and orbit controls.
RP.View = class {
  constructor(container, scene, assets) {
    this.scene = scene;
    this.el = document.createElement("div");
    this.el.className = "view";
    this.label = document.createElement("div");
    this.label.className = "label";
    this.el.appendChild(this.label);
    container.appendChild(this.el);
    this.renderer = new THREE.WebGLRenderer({ antialias: true, alpha: true, preserveDrawingBuffer: true });
    this.renderer.outputColorSpace = THREE.LinearSRGBColorSpace;
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.el.insertBefore(this.renderer.domElement, this.label);
    this.three = new THREE.Scene();
    const cam = scene.camera, extent = scene.stat.extent;
    this.camera = new THREE.PerspectiveCamera((cam.track || cam.free).fovy, 1, cam.znear, cam.zfar);
    this.camera.up.set(0, 0, 1);
    this.three.add(this.camera);
    this.bodies = scene.bodies.map(() => { const b = new THREE.Group(); this.three.add(b); return b; });
    for (const g of scene.geoms) {
      const mesh = new THREE.Mesh(geomGeometry(g, assets), geomMaterial(g, scene, assets));
      mesh.position.set(...g.pos);
      mesh.quaternion.set(g.quat[1], g.quat[2], g.quat[3], g.quat[0]);
      if (g.type === "ellipsoid") mesh.scale.set(g.size[0], g.size[1], g.size[2]);
      if (g.type === "hfield") (this.hfieldMeshes = this.hfieldMeshes || []).push(mesh);
      this.bodies[g.body].add(mesh);
    }
    this.skins = assets.skins.map((k) => { const m = skinMesh(k, scene, assets); this.three.add(m); return m; });
    this.assets = assets;
    addLights(this.three, scene, this.bodies, this.camera);
    this.controls = new THREE.OrbitControls(this.camera, this.renderer.domElement);
    this.controls.enableDamping = false;
    this.controls.screenSpacePanning = true;
    this.controls.addEventListener("change", () => { this.dirty = true; });
    this.followBody = scene.follow_body || 0;
    this.followReason = scene.follow_reason;
    this.follow = true;
    this.dirty = true;
    this.extent = extent;
  }

  // the body the follow camera tracks in this episode: the scene's (a moving tracking camera's body, a
  // free joint's body), else the body that moves most over the episode; never the world nor a static body
  chooseFollow(ep) {
    const sc = this.scene;
    if (sc.follow_body !== null && sc.follow_body !== undefined) {
      this.followBody = sc.follow_body; this.followReason = sc.follow_reason;
      return;
    }
    const B = this.bodies.length;
    let best = 0, bestSpan = 0;
    for (const b of sc.moving || []) {
      const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
      for (let f = 0; f < ep.frames; f++) {
        for (let k = 0; k < 3; k++) {
          const x = ep.pos[(f * B + b) * 3 + k];
          if (x < lo[k]) lo[k] = x;
          if (x > hi[k]) hi[k] = x;
        }
      }
      const span = Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
      if (span > bestSpan) { best = b; bestSpan = span; }
    }
    this.followBody = best;
    this.followReason = best ? "moves most" : "nothing moves";
  }

  followInfo() {
    const b = this.followBody;
    return { body: b, body_name: this.scene.bodies[b].name, follow_reason: this.followReason };
  }

  // poses of frame f of a decoded episode onto the body groups
  pose(ep, f) {
    const B = this.bodies.length;
    for (let b = 0; b < B; b++) {
      const p = (f * B + b) * 3, q = (f * B + b) * 4;
      this.bodies[b].position.set(ep.pos[p], ep.pos[p + 1], ep.pos[p + 2]);
      this.bodies[b].quaternion.set(ep.quat[q + 1], ep.quat[q + 2], ep.quat[q + 3], ep.quat[q]);
    }
    this.assets.skins.forEach((k, i) => this.skinPose(k, this.skins[i], ep, f));
    const target = this.bodies[this.followBody].position;
    if (this.follow && this.lastFollow) {
      const d = target.clone().sub(this.lastFollow);
      this.camera.position.add(d);
      this.controls.target.add(d);
      this.controls.update();
    }
    this.lastFollow = target.clone();
    this.dirty = true;
  }

  // the opening view: the model's tracking camera at frame 0, else MuJoCo's free camera
  home() {
    const cam = this.scene.camera, target = this.bodies[this.followBody].position;
    if (cam.track) {
      const m = cam.track.xmat, pos = new THREE.Vector3(...cam.track.pos);
      const fwd = new THREE.Vector3(-m[2], -m[5], -m[8]);
      const dist = Math.max(target.clone().sub(pos).dot(fwd), 0.1 * this.extent);
      this.camera.position.copy(pos);
      this.controls.target.copy(pos.clone().addScaledVector(fwd, dist));
    } else {
      const f = cam.free, az = f.azimuth * Math.PI / 180, el = f.elevation * Math.PI / 180;
      const fwd = new THREE.Vector3(Math.cos(az) * Math.cos(el), Math.sin(az) * Math.cos(el), Math.sin(el));
      const look = new THREE.Vector3(...f.lookat);
      this.camera.position.copy(look.clone().addScaledVector(fwd, -f.distance));
      this.controls.target.copy(look);
    }
    this.controls.update();
    this.lastFollow = target.clone();
    this.dirty = true;
  }

  // MuJoCo's mjv_updateSkin: per bone, rotation q = xquat(body) * conj(bindquat) and translation
  // xpos(body) - R(q) bindpos; each vertex is the weighted sum of R(q) v + t over its bones; then inflated
  skinPose(k, mesh, ep, f) {
    const B = this.bodies.length, out = mesh.geometry.attributes.position.array, v = k.vert, bq = k.bone_bindquat;
    out.fill(0);
    let at = 0;
    for (let j = 0; j < k.bone_body.length; j++) {
      const b = k.bone_body[j], p = (f * B + b) * 3, qa = (f * B + b) * 4;
      // q = body * conj(bind), quaternions w first
      const aw = ep.quat[qa], ax = ep.quat[qa + 1], ay = ep.quat[qa + 2], az = ep.quat[qa + 3];
      const bw = bq[4 * j], bx = -bq[4 * j + 1], by = -bq[4 * j + 2], bz = -bq[4 * j + 3];
      const w = aw * bw - ax * bx - ay * by - az * bz, x = aw * bx + ax * bw + ay * bz - az * by;
      const y = aw * by - ax * bz + ay * bw + az * bx, z = aw * bz + ax * by - ay * bx + az * bw;
      const r = [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)];  // row-major
      const px = k.bone_bindpos[3 * j], py = k.bone_bindpos[3 * j + 1], pz = k.bone_bindpos[3 * j + 2];
      const tx = ep.pos[p] - (r[0] * px + r[1] * py + r[2] * pz);
      const ty = ep.pos[p + 1] - (r[3] * px + r[4] * py + r[5] * pz);
      const tz = ep.pos[p + 2] - (r[6] * px + r[7] * py + r[8] * pz);
      for (let n = 0; n < k.bone_count[j]; n++, at++) {
        const id = k.vertid[at], wt = k.weight[at], vx = v[3 * id], vy = v[3 * id + 1], vz = v[3 * id + 2];
        out[3 * id] += wt * (r[0] * vx + r[1] * vy + r[2] * vz + tx);
        out[3 * id + 1] += wt * (r[3] * vx + r[4] * vy + r[5] * vz + ty);
        out[3 * id + 2] += wt * (r[6] * vx + r[7] * vy + r[8] * vz + tz);
      }
    }
    mesh.geometry.attributes.position.needsUpdate = true;
    mesh.geometry.computeVertexNormals();
    if (k.inflate) {
      const nrm = mesh.geometry.attributes.normal.array;
      for (let i = 0; i < out.length; i++) out[i] += k.inflate * nrm[i];
    }
  }

  // world coordinates of what is drawn for a skin ("skin", i) or a height-field geom ("hfield", i)
  drawnVertices(kind, i) {
    if (kind === "skin" && this.skins[i]) return Array.from(this.skins[i].geometry.attributes.position.array);
    const geoms = this.hfieldMeshes || (this.hfieldMeshes = []);
    if (kind === "hfield" && geoms[i]) {
      geoms[i].updateWorldMatrix(true, false);
      const a = geoms[i].geometry.attributes.position, v = new THREE.Vector3(), out = [];
      for (let n = 0; n < a.count; n++) out.push(...v.fromBufferAttribute(a, n).applyMatrix4(geoms[i].matrixWorld).toArray());
      return out;
    }
    throw new RangeError("nothing drawn as " + kind + " " + i + "; the scene draws " + this.skins.length +
                         " skin(s) and " + geoms.length + " height field(s)");
  }

  resize() {
    const w = Math.max(1, this.el.clientWidth), h = Math.max(1, this.el.clientHeight);
    if (w === this.w && h === this.h) return;
    this.w = w; this.h = h;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.dirty = true;
  }

  draw(force) {
    this.resize();
    if (!this.dirty && !force) return;
    this.renderer.render(this.three, this.camera);
    this.dirty = false;
  }

  positions() { return this.bodies.map((b) => [b.position.x, b.position.y, b.position.z]); }

  dispose() { this.controls.dispose(); this.renderer.dispose(); this.el.remove(); }
};
