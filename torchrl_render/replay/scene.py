"""Scene export: a MuJoCo model's bodies, geoms, materials, textures, meshes and lights as JSON.

The page (``page.html``) builds a three.js scene from this description once and then
only moves the bodies (see :mod:`torchrl_render.replay.poses`). Geom poses are relative
to their body, exactly as MuJoCo stores them (``geom_pos``, ``geom_quat``), so a body's
pose per frame places all its geoms. Large arrays (mesh vertices and faces, texture
pixels) are zlib-compressed and base64-encoded, like the poses.

Example:
    >>> import mujoco
    >>> model = mujoco.MjModel.from_xml_string(
    ...     '<mujoco><worldbody><geom type="plane" size="1 1 .1"/>'
    ...     '<body><freejoint/><geom type="box" size=".1 .2 .3" rgba="1 0 0 1"/></body></worldbody></mujoco>')
    >>> scene = export_scene(model)
    >>> [g["type"] for g in scene["geoms"]], scene["geoms"][1]["size"], scene["follow_body"]
    (['plane', 'box'], [0.1, 0.2, 0.3], 1)
"""

from __future__ import annotations

import base64
import zlib
from typing import NotRequired, TypedDict

import mujoco
import numpy as np
import numpy.typing as npt

__all__ = [
    "GEOM_TYPES",
    "SCENE_VERSION",
    "Scene",
    "drawn_summary",
    "export_scene",
    "follow_body",
    "follow_choice",
    "moving_bodies",
    "pack_array",
]

SCENE_VERSION = 2
#: mjtGeom value -> the page's name; other types (sdf) are not drawn, and are counted in ``drawn``
GEOM_TYPES = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}
_TEX_KINDS = {0: "2d", 1: "cube", 2: "skybox"}
_MAX_HFIELD = 256  # height fields are sampled down (nearest) to at most this many points a side
_LIGHT_TYPES = {0: "spot", 1: "directional", 2: "point", 3: "point"}
_VISIBLE_GROUPS = 3  # MuJoCo's viewer shows geom groups 0, 1 and 2 by default
_MAX_TEXTURE = 64  # textures are sampled down (nearest) to at most this many texels a side
_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
_TRACKING = (1, 2)  # mjCAMLIGHT_TRACK, mjCAMLIGHT_TRACKCOM


class SceneBody(TypedDict):
    """A body: its name and its parent's index (the world body is its own parent)."""

    name: str
    parent: int


class SceneGeom(TypedDict):
    """A drawn geom, posed relative to its body; ``material`` and ``mesh`` index the scene's lists (None: none),
    ``hfield`` too for a height field; a plane also carries the model's extent (how far it is drawn)."""

    body: int
    type: str
    size: list[float]
    pos: list[float]
    quat: list[float]
    rgba: list[float]
    material: int | None
    mesh: int | None
    hfield: NotRequired[int]
    extent: NotRequired[float]


class SceneMaterial(TypedDict):
    """A material's colour and lighting numbers; ``texture`` indexes the scene's textures (None: none)."""

    rgba: list[float]
    specular: float
    shininess: float
    reflectance: float
    emission: float
    texrepeat: list[float]
    texuniform: bool
    texture: int | None


class SceneTexture(TypedDict):
    """A texture's RGB texels (``rgb``: :func:`pack_array` of uint8 ``[faces * height, width, 3]``)."""

    kind: str
    width: int
    height: int
    faces: int
    rgb: str


class SceneMesh(TypedDict):
    """A mesh: packed float32 vertices and uint32 faces."""

    vertices: str
    num_vertices: int
    faces: str
    num_faces: int


class SceneHfield(TypedDict):
    """A height field: packed float32 elevations ``[nrow, ncol]`` and its size."""

    nrow: int
    ncol: int
    size: list[float]
    data: str


class SceneSkin(SceneMesh):
    """A skin: its mesh in the bind pose, and per bone the body, bind pose and weighted vertices (packed)."""

    rgba: list[float]
    inflate: float
    material: int | None
    bone_body: list[int]
    bone_bindpos: list[float]
    bone_bindquat: list[float]
    bone_count: list[int]
    bone_vertid: str
    bone_weight: str
    texcoords: str | None


class SceneLight(TypedDict):
    """A light, in its body's frame."""

    type: str
    body: int
    pos: list[float]
    dir: list[float]
    diffuse: list[float]
    ambient: list[float]
    specular: list[float]
    castshadow: bool
    cutoff: float


class Headlight(TypedDict):
    """The model's headlight."""

    active: bool
    ambient: list[float]
    diffuse: list[float]


class SceneStat(TypedDict):
    """The model's size and centre (``model.stat``)."""

    extent: float
    center: list[float]


class FreeCamera(TypedDict):
    """MuJoCo's free camera, framed on the model."""

    lookat: list[float]
    distance: float
    azimuth: float
    elevation: float
    fovy: float


class TrackCamera(TypedDict):
    """The model's first tracking camera: the body it follows and its pose at the scene's state."""

    name: str
    body: int
    pos: list[float]
    xmat: list[float]
    fovy: float


class SceneCamera(TypedDict):
    """The view the page opens with, and the clipping distances."""

    free: FreeCamera
    track: TrackCamera | None
    znear: float
    zfar: float


class Drawn(TypedDict):
    """How many of a kind the model has, and how many the page draws."""

    model: int
    drawn: int


class DrawnSummary(TypedDict):
    """What the page draws of the model (:func:`drawn_summary`)."""

    meshes: Drawn
    skins: Drawn
    hfields: Drawn
    textures: Drawn
    flex: Drawn
    not_drawn: list[str]


class SceneParts(TypedDict):
    """The parts of a scene :func:`drawn_summary` reads (a :class:`Scene` is one)."""

    geoms: list[SceneGeom]
    materials: list[SceneMaterial]
    skins: list[SceneSkin]
    meshes: list[SceneMesh]
    hfields: list[SceneHfield]


class Scene(SceneParts):
    """:func:`export_scene`'s JSON-ready scene (see ``docs/formats.md``)."""

    version: int
    bodies: list[SceneBody]
    textures: list[SceneTexture]
    lights: list[SceneLight]
    headlight: Headlight
    stat: SceneStat
    camera: SceneCamera
    follow_body: int | None
    follow_reason: str
    moving: list[int]
    drawn: DrawnSummary


def pack_array(array: npt.NDArray[np.float32 | np.uint32 | np.uint8]) -> str:
    """zlib-compressed, base64-encoded bytes of ``array`` (little-endian, C order): the scene's float32
    vertices, elevations and weights, uint32 faces and indices, uint8 texels."""
    return base64.b64encode(zlib.compress(np.ascontiguousarray(array).tobytes(), 9)).decode("ascii")


def _floats(values: npt.ArrayLike, digits: int = 6) -> list[float]:
    return [round(float(v), digits) for v in np.asarray(values).ravel()]


def _names(model: mujoco.MjModel, obj: mujoco.mjtObj, count: int) -> list[str]:
    return [mujoco.mj_id2name(model, obj, i) or "" for i in range(count)]


def export_scene(model: mujoco.MjModel, data: mujoco.MjData | None = None) -> Scene:
    """The JSON-ready scene of ``model`` (``data``: a state for the initial lights/camera, else ``qpos0``).

    Args:
        model: A ``mujoco.MjModel``.
        data: A ``mujoco.MjData`` of ``model``; a private one at ``qpos0`` when omitted.

    Returns:
        A dict with ``bodies``, ``geoms``, ``materials``, ``textures``, ``meshes``, ``hfields``, ``skins``,
        ``lights``, ``headlight``, ``camera``, ``follow_body``, ``follow_reason``, ``moving``, ``stat`` and
        ``drawn`` (what is drawn and what is not; see ``docs/formats.md``).
    """
    if data is None:
        data = mujoco.MjData(model)
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_camlight(model, data)
    bodies: list[SceneBody] = [{"name": name, "parent": int(model.body_parentid[i])}
                               for i, name in enumerate(_names(model, mujoco.mjtObj.mjOBJ_BODY, model.nbody))]
    textures: dict[int, int] = {}
    meshes: dict[int, int] = {}
    hfields: dict[int, int] = {}
    packed_textures: list[SceneTexture] = []  # filled by _material, in first-use order
    packed_meshes: list[SceneMesh] = []  # filled by _geom, in first-use order
    packed_hfields: list[SceneHfield] = []
    parts: SceneParts = {
        "materials": [_material(model, i, textures, packed_textures) for i in range(model.nmat)],
        "geoms": [g for g in (_geom(model, i, meshes, packed_meshes, hfields, packed_hfields)
                              for i in range(model.ngeom)) if g],
        "skins": [_skin(model, i) for i in range(model.nskin) if int(model.skin_group[i]) < _VISIBLE_GROUPS],
        "meshes": packed_meshes, "hfields": packed_hfields}
    head = model.vis.headlight
    follow, reason = follow_choice(model)
    return {"version": SCENE_VERSION, "bodies": bodies, "textures": packed_textures, "meshes": packed_meshes,
            "hfields": packed_hfields, "materials": parts["materials"], "geoms": parts["geoms"],
            "skins": parts["skins"],
            "lights": [_light(model, i) for i in range(model.nlight) if model.light_active[i]],
            "headlight": {"active": bool(head.active), "ambient": _floats(head.ambient),
                          "diffuse": _floats(head.diffuse)},
            "stat": {"extent": float(model.stat.extent), "center": _floats(model.stat.center)},
            "camera": _camera(model, data), "follow_body": follow, "follow_reason": reason,
            "moving": moving_bodies(model), "drawn": drawn_summary(model, parts, textures)}


def drawn_summary(model: mujoco.MjModel, scene: SceneParts, textures: dict[int, int]) -> DrawnSummary:
    """What the page draws of the model and what it does not: ``{kind: {"model", "drawn"}}`` for meshes,
    skins, height fields, textures and flex objects, plus ``not_drawn``: one line per thing left out."""
    visible = [i for i in range(model.ngeom) if model.geom_group[i] < _VISIBLE_GROUPS and model.geom_rgba[i][3] > 0]
    not_drawn: list[str] = []
    for i in visible:
        if int(model.geom_type[i]) not in GEOM_TYPES:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, i) or f"#{i}"
            not_drawn.append(f"geom {name!r} of type {mujoco.mjtGeom(int(model.geom_type[i])).name[8:].lower()}")
    drawn_tex: set[int] = set()
    for t in range(model.ntex):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_TEXTURE, t) or f"#{t}"
        kind = _TEX_KINDS.get(int(model.tex_type[t]), "?")
        if t not in textures:
            why = "the page's background is its own gradient" if kind == "skybox" else "no material uses it"
            not_drawn.append(f"{kind} texture {name!r} ({why})")
            continue
        index = textures[t]
        users = [g for g in scene["geoms"] if g["material"] is not None
                 and scene["materials"][g["material"]]["texture"] == index]
        skins = [k for k in scene["skins"] if k["material"] is not None
                 and scene["materials"][k["material"]]["texture"] == index]
        shown = [g for g in users if (g["type"] == "box" if kind == "cube" else g["type"] != "mesh")]
        shown_skins = [k for k in skins if kind == "2d" and k["texcoords"] is not None]
        if shown or shown_skins:
            drawn_tex.add(t)
        left = len(users) + len(skins) - len(shown) - len(shown_skins)
        if not users and not skins:
            not_drawn.append(f"{kind} texture {name!r} (no visible geom or skin uses it)")
        elif left:
            what = "geoms other than boxes" if kind == "cube" else "meshes (their texture coordinates are not exported)"
            not_drawn.append(f"{kind} texture {name!r} on {left} {what}: drawn in the material's colour")
    if model.nflex:
        not_drawn.append(f"{model.nflex} flex object(s) (flexcomp): not drawn")
    skins_hidden = model.nskin - len(scene["skins"])
    if skins_hidden:
        not_drawn.append(f"{skins_hidden} skin(s) in hidden groups")
    return {"meshes": {"model": int(model.nmesh), "drawn": len(scene["meshes"])},
            "skins": {"model": int(model.nskin), "drawn": len(scene["skins"])},
            "hfields": {"model": int(model.nhfield), "drawn": len(scene["hfields"])},
            "textures": {"model": int(model.ntex), "drawn": len(drawn_tex)},
            "flex": {"model": int(model.nflex), "drawn": 0},
            "not_drawn": not_drawn}


def _material_textures(model: mujoco.MjModel) -> list[tuple[int, int]]:
    """``(material, texture)`` of every material: the RGB role's texture, else the first role's."""
    out = []
    for i in range(model.nmat):
        if model.mat_texid.ndim == 2:
            texid = int(model.mat_texid[i][1])
            if texid < 0:
                texid = int(model.mat_texid[i][0])
        else:
            texid = int(model.mat_texid[i])
        out.append((i, texid))
    return out


def _geom(model: mujoco.MjModel, i: int, meshes: dict[int, int], packed: list[SceneMesh], hfields: dict[int, int],
          packed_hf: list[SceneHfield]) -> SceneGeom | None:
    kind = GEOM_TYPES.get(int(model.geom_type[i]))
    rgba = model.geom_rgba[i]
    if kind is None or model.geom_group[i] >= _VISIBLE_GROUPS or rgba[3] == 0:
        return None
    geom: SceneGeom = {"body": int(model.geom_bodyid[i]), "type": kind, "size": _floats(model.geom_size[i]),
            "pos": _floats(model.geom_pos[i]), "quat": _floats(model.geom_quat[i]),
            "rgba": _floats(rgba, 4), "material": None, "mesh": None}
    matid = int(model.geom_matid[i])
    if matid >= 0:
        geom["material"] = matid
        if tuple(np.round(rgba, 6)) == _DEFAULT_RGBA:  # MuJoCo: an unset geom rgba takes the material's
            geom["rgba"] = _floats(model.mat_rgba[matid], 4)
    if kind == "mesh":
        mesh_id = int(model.geom_dataid[i])
        if mesh_id not in meshes:
            meshes[mesh_id] = len(packed)
            packed.append(_mesh(model, mesh_id))
        geom["mesh"] = meshes[mesh_id]
    if kind == "hfield":
        hf = int(model.geom_dataid[i])
        if hf not in hfields:
            hfields[hf] = len(packed_hf)
            packed_hf.append(_hfield(model, hf))
        geom["hfield"] = hfields[hf]
    if kind == "plane":
        geom["extent"] = float(model.stat.extent)
    return geom


def _hfield(model: mujoco.MjModel, hf: int) -> SceneHfield:
    """A height field's elevations (``[nrow, ncol]``, 0..1, row 0 at -y), sampled down (nearest) if large,
    and ``size`` (x and y radii, top elevation, base depth), as MuJoCo stores them."""
    nrow, ncol, adr = int(model.hfield_nrow[hf]), int(model.hfield_ncol[hf]), int(model.hfield_adr[hf])
    data = np.asarray(model.hfield_data[adr:adr + nrow * ncol], np.float32).reshape(nrow, ncol)
    rows = np.unique(np.linspace(0, nrow - 1, min(nrow, _MAX_HFIELD)).round().astype(int))
    cols = np.unique(np.linspace(0, ncol - 1, min(ncol, _MAX_HFIELD)).round().astype(int))
    small = data[np.ix_(rows, cols)]
    return {"nrow": int(small.shape[0]), "ncol": int(small.shape[1]), "size": _floats(model.hfield_size[hf]),
            "data": pack_array(small.astype("<f4"))}


def _skin(model: mujoco.MjModel, i: int) -> SceneSkin:
    """A skin: its vertices in the bind pose, faces, texture coordinates, and per bone the body, the bind
    pose and the weighted vertices, so the page skins it as MuJoCo's visualiser does (``mjv_updateSkin``)."""
    v0, nv = int(model.skin_vertadr[i]), int(model.skin_vertnum[i])
    f0, nf = int(model.skin_faceadr[i]), int(model.skin_facenum[i])
    b0, nb = int(model.skin_boneadr[i]), int(model.skin_bonenum[i])
    ids: list[npt.NDArray[np.int32]] = []
    weights: list[npt.NDArray[np.float32]] = []
    counts: list[int] = []
    for b in range(b0, b0 + nb):
        a, n = int(model.skin_bonevertadr[b]), int(model.skin_bonevertnum[b])
        ids.append(model.skin_bonevertid[a:a + n])
        weights.append(model.skin_bonevertweight[a:a + n])
        counts.append(n)
    skin: SceneSkin = {"vertices": pack_array(model.skin_vert[v0:v0 + nv].astype("<f4")), "num_vertices": nv,
            "faces": pack_array(model.skin_face[f0:f0 + nf].astype("<u4")), "num_faces": nf,
            "rgba": _floats(model.skin_rgba[i], 4), "inflate": float(model.skin_inflate[i]),
            "material": int(model.skin_matid[i]) if int(model.skin_matid[i]) >= 0 else None,
            "bone_body": [int(x) for x in model.skin_bonebodyid[b0:b0 + nb]],
            "bone_bindpos": _floats(model.skin_bonebindpos[b0:b0 + nb]),
            "bone_bindquat": _floats(model.skin_bonebindquat[b0:b0 + nb]), "bone_count": counts,
            "bone_vertid": pack_array(np.concatenate(ids).astype("<u4")),
            "bone_weight": pack_array(np.concatenate(weights).astype("<f4")), "texcoords": None}
    t0 = int(model.skin_texcoordadr[i])
    if t0 >= 0:
        skin["texcoords"] = pack_array(model.skin_texcoord[t0:t0 + nv].astype("<f4"))
    return skin


def _mesh(model: mujoco.MjModel, mesh_id: int) -> SceneMesh:
    v0, nv = int(model.mesh_vertadr[mesh_id]), int(model.mesh_vertnum[mesh_id])
    f0, nf = int(model.mesh_faceadr[mesh_id]), int(model.mesh_facenum[mesh_id])
    return {"vertices": pack_array(model.mesh_vert[v0:v0 + nv].astype("<f4")), "num_vertices": nv,
            "faces": pack_array(model.mesh_face[f0:f0 + nf].astype("<u4")), "num_faces": nf}


def _material(model: mujoco.MjModel, i: int, textures: dict[int, int], packed: list[SceneTexture]) -> SceneMaterial:
    mat: SceneMaterial = {"rgba": _floats(model.mat_rgba[i], 4), "specular": float(model.mat_specular[i]),
           "shininess": float(model.mat_shininess[i]), "reflectance": float(model.mat_reflectance[i]),
           "emission": float(model.mat_emission[i]), "texrepeat": _floats(model.mat_texrepeat[i]),
           "texuniform": bool(model.mat_texuniform[i]), "texture": None}
    texid = _material_textures(model)[i][1]
    if texid >= 0 and int(model.tex_type[texid]) in (0, 1):  # 2-D and cube textures (a skybox is not drawn)
        if texid not in textures:
            textures[texid] = len(packed)
            packed.append(_texture(model, texid))
        mat["texture"] = textures[texid]
    return mat


def _texture(model: mujoco.MjModel, texid: int) -> SceneTexture:
    """The texture's RGB texels, sampled down (nearest) so that a checker keeps its cells. A cube texture
    is six square faces stacked (+x, -x, +y, -y, +z, -z, as MuJoCo stores them), each sampled down."""
    h, w, c = int(model.tex_height[texid]), int(model.tex_width[texid]), int(model.tex_nchannel[texid])
    adr = int(model.tex_adr[texid])
    texels = np.asarray(model.tex_data[adr:adr + h * w * c], np.uint8).reshape(h, w, c)
    kind = _TEX_KINDS[int(model.tex_type[texid])]
    faces = [texels[k * w:(k + 1) * w] for k in range(6)] if kind == "cube" and h == 6 * w else [texels]
    small = []
    for face in faces:
        fh, fw = face.shape[:2]
        step_h, step_w = max(1, -(-fh // _MAX_TEXTURE)), max(1, -(-fw // _MAX_TEXTURE))
        f = face[::step_h, ::step_w]
        small.append(f[..., :3] if c >= 3 else np.repeat(f[..., :1], 3, axis=2))
    rgb = np.concatenate(small)
    return {"kind": "cube" if len(faces) == 6 else "2d", "width": int(rgb.shape[1]),
            "height": int(small[0].shape[0]), "faces": len(faces), "rgb": pack_array(rgb)}


def _light(model: mujoco.MjModel, i: int) -> SceneLight:
    kind = int(model.light_type[i]) if hasattr(model, "light_type") else int(model.light_directional[i])
    return {"type": _LIGHT_TYPES.get(kind, "point"), "body": int(model.light_bodyid[i]),
            "pos": _floats(model.light_pos[i]), "dir": _floats(model.light_dir[i]),
            "diffuse": _floats(model.light_diffuse[i]), "ambient": _floats(model.light_ambient[i]),
            "specular": _floats(model.light_specular[i]), "castshadow": bool(model.light_castshadow[i]),
            "cutoff": float(model.light_cutoff[i])}


def _camera(model: mujoco.MjModel, data: mujoco.MjData) -> SceneCamera:
    """The view the page opens with: the model's first tracking camera, else MuJoCo's free camera."""
    glob = model.vis.global_
    free: FreeCamera = {"lookat": _floats(model.stat.center), "distance": float(1.5 * model.stat.extent),
            "azimuth": float(glob.azimuth), "elevation": float(glob.elevation), "fovy": float(glob.fovy)}
    znear, zfar = float(model.vis.map.znear * model.stat.extent), float(model.vis.map.zfar * model.stat.extent)
    tracking = [c for c in range(model.ncam) if int(model.cam_mode[c]) in _TRACKING]
    if not tracking:
        return {"free": free, "track": None, "znear": znear, "zfar": zfar}
    cam = tracking[0]
    body = int(model.cam_targetbodyid[cam]) if int(model.cam_targetbodyid[cam]) > 0 else int(model.cam_bodyid[cam])
    track: TrackCamera = {"name": mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, cam) or "", "body": body,
             "pos": _floats(data.cam_xpos[cam]), "xmat": _floats(data.cam_xmat[cam]),
             "fovy": float(model.cam_fovy[cam])}
    return {"free": free, "track": track, "znear": znear, "zfar": zfar}


def moving_bodies(model: mujoco.MjModel) -> list[int]:
    """The bodies that can move: below a joint (not welded to the world) or mocap bodies."""
    return [b for b in range(1, model.nbody) if int(model.body_weldid[b]) != 0 or int(model.body_mocapid[b]) >= 0]


def follow_choice(model: mujoco.MjModel) -> tuple[int | None, str]:
    """``(body, reason)`` the follow camera tracks, from the model alone.

    The first tracking camera's target (or its own body) when that body moves; else the body of the
    first free joint (the root of the moving tree); else ``None``: the page then follows the body that
    moves most over the episode. A camera in the world body or in a static body is never followed.
    """
    moving = set(moving_bodies(model))
    for c in range(model.ncam):
        if int(model.cam_mode[c]) in _TRACKING:
            target = int(model.cam_targetbodyid[c]) if int(model.cam_targetbodyid[c]) > 0 else int(model.cam_bodyid[c])
            if target in moving:
                name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, c) or str(c)
                return target, f"tracking camera {name!r}"
    for j in range(model.njnt):
        if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
            return int(model.jnt_bodyid[j]), "free joint"
    return None, "moves most"


def follow_body(model: mujoco.MjModel) -> int | None:
    """The body a follow camera tracks (see :func:`follow_choice`); ``None``: the one that moves most."""
    return follow_choice(model)[0]
