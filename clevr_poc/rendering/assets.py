"""Render with the official CLEVR(-POC) Blender files (``render --assets DIR``); never shipped or copied.

``DIR`` is the official image generator's ``data/`` folder, which users have from the official code::

    DIR/base_scene.blend                       camera, lights, ground, world
    DIR/shapes/SmoothCube_v2.blend             object "SmoothCube_v2"   (cube)
    DIR/shapes/Sphere.blend                    object "Sphere"          (sphere)
    DIR/shapes/SmoothCylinder.blend            object "SmoothCylinder"  (cylinder)
    DIR/shapes/Cone.blend                      object "Cone"            (cone; CLEVR-POC adds it)
    DIR/materials/Rubber.blend                 node group "Rubber"
    DIR/materials/MyMetal.blend                node group "MyMetal"

(names: official ``properties.json``, ``"shapes"`` and ``"materials"``). As the official
``render_images.py`` does, the base scene is opened, the node groups and shapes are appended, each shape
is scaled by the size's radius and rotated about z, and each object gets a material holding the group
with its ``Color`` input set. Two differences, both deliberate: every object is placed at its layout
position ``(x, y, r)`` (the official code *adds* that to the location stored in the shape's file, which
shifts official cones; see :mod:`clevr_poc.rendering.render`), and the render settings (samples,
denoiser, size, colour management) are ours (:func:`clevr_poc.rendering.blender.configure`).

The files are data, not programs (:mod:`clevr_poc.rendering.asset_safety`): a file linking another is
refused before Blender opens it; after opening, the scene's compositor, sequencer and output settings are
replaced by ours, and modifiers, constraints, drivers, images and handlers outside a short list are
refused with :class:`AssetsError`; Blender's stdin is ``/dev/null`` meanwhile.

Masks and boxes follow the files: each shape's mask is cast against the convex hull of the file's mesh
(:func:`read_assets`), the camera is read from the file (lens, sensor, fit, pose).

:func:`find_assets` needs no Blender; the rest imports ``bpy`` inside its functions.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clevr_poc.rendering import asset_safety as _safety
from clevr_poc.rendering.asset_safety import AssetsError
from clevr_poc.rendering.geometry import Camera
from clevr_poc.rendering.shapes import Mesh
from clevr_poc.rendering.styles import Light

#: Shape -> object name in ``shapes/<name>.blend`` (official ``properties.json``; ``Cone``: CLEVR-POC).
SHAPE_OBJECTS: dict[str, str] = {"cube": "SmoothCube_v2", "sphere": "Sphere", "cylinder": "SmoothCylinder",
                                 "cone": "Cone"}
#: Material -> node group name in ``materials/<name>.blend`` (official ``properties.json``).
MATERIAL_GROUPS: dict[str, str] = {"rubber": "Rubber", "metal": "MyMetal"}
BASE_SCENE = "base_scene.blend"


@dataclass(frozen=True)
class AssetFiles:
    """The files of an official ``data/`` folder (all checked to exist)."""

    root: Path
    base_scene: Path
    shapes: dict[str, Path]
    materials: dict[str, Path]


@dataclass(frozen=True)
class OfficialFiles:
    """What :func:`read_assets` read: the files, the camera (at the render's size), the lights, and per
    shape the convex hull of its mesh (object space times the stored scale; for the masks)."""

    files: AssetFiles
    camera: Camera
    lights: tuple[Light, ...]
    unit_meshes: dict[str, Mesh]


def find_assets(directory: str | os.PathLike[str]) -> AssetFiles:
    """Check that ``directory`` holds the official files (module doc). No Blender needed.

    Raises:
        AssetsError: not a folder, or a file missing (the message names it).
    """
    root = Path(directory)
    if not root.is_dir():
        raise AssetsError(f"--assets {root}: not a folder (expected the official image generator's data/ folder)")
    base = root / BASE_SCENE
    shapes = {shape: root / "shapes" / f"{name}.blend" for shape, name in SHAPE_OBJECTS.items()}
    materials = {material: root / "materials" / f"{name}.blend" for material, name in MATERIAL_GROUPS.items()}
    for path in (base, *shapes.values(), *materials.values()):
        if not path.is_file():
            raise AssetsError(f"--assets {root}: missing {path.relative_to(root)} (an official data/ folder has "
                              f"{BASE_SCENE}, shapes/{{{','.join(SHAPE_OBJECTS.values())}}}.blend and "
                              f"materials/{{{','.join(MATERIAL_GROUPS.values())}}}.blend)")
    return AssetFiles(root, base, shapes, materials)


# ---------------------------------------------------------------------- reading (bpy)
def _camera_from_blender(obj: Any, width: int, height: int) -> Camera:
    """Our :class:`Camera` of a Blender camera object at ``width`` x ``height`` (perspective, any fit)."""
    data = obj.data
    if data.type != "PERSP":
        raise AssetsError(f"the camera of {BASE_SCENE} is {data.type}, expected a perspective camera")
    fit = data.sensor_fit
    if fit == "AUTO":
        f = data.lens / data.sensor_width * max(width, height)
    elif fit == "HORIZONTAL":
        f = data.lens / data.sensor_width * width
    else:
        f = data.lens / data.sensor_height * height
    big = max(width, height)
    K = ((f, 0.0, width / 2.0 - data.shift_x * big), (0.0, f, height / 2.0 + data.shift_y * big), (0.0, 0.0, 1.0))
    cam_to_world = np.array(obj.matrix_world, dtype=float)
    cam_to_world[:3, :3] = cam_to_world[:3, :3] @ np.diag([1.0, -1.0, -1.0])  # Blender -> OpenCV axes
    scale = np.linalg.norm(cam_to_world[:3, :3], axis=0)
    cam_to_world[:3, :3] /= scale
    world_to_camera = np.linalg.inv(cam_to_world)
    return Camera(K, tuple(map(tuple, world_to_camera)), int(width), int(height))


def _light_name(name: str) -> str:
    lowered = name.lower()
    return lowered[5:] if lowered.startswith("lamp_") else lowered


def _hull_mesh(points: np.ndarray) -> Mesh:
    """The convex hull of ``points`` (V, 3) as a :class:`Mesh` with outward triangles (for the masks)."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    vertices = points[hull.vertices]
    remap = {int(v): k for k, v in enumerate(hull.vertices)}
    triangles = np.array([[remap[int(i)] for i in tri] for tri in hull.simplices], dtype=np.int64)
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0
    triangles[flip] = triangles[flip][:, [0, 2, 1]]
    centre = vertices.mean(axis=0)
    normals = vertices - centre
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    return Mesh(vertices, normals, triangles)


def _load(path: Path, kind: str, name: str) -> Any:
    """Append datablock ``name`` of ``kind`` (``objects``/``node_groups``) from ``path`` and check what came
    with it (:func:`asset_safety.check_loaded_data`); raises AssetsError."""
    import bpy

    handlers = _safety.handler_counts()
    with _safety.closed_stdin(), bpy.data.libraries.load(str(path), link=False) as (source, target):
        if name not in getattr(source, kind):
            raise AssetsError(f"{path}: has no {kind[:-1].replace('_', ' ')} named {name!r} "
                              f"(found: {sorted(getattr(source, kind))[:10]})")
        setattr(target, kind, [name])
    block = getattr(target, kind)[0]
    if block is None:
        raise AssetsError(f"{path}: cannot append {name!r}")
    _safety.check_loaded_data(path, handlers)
    return block


def read_assets(files: AssetFiles, *, width: int, height: int) -> OfficialFiles:
    """Open ``base_scene.blend`` (replacing Blender's current scene), read its camera and lights, and
    append the four shapes (kept unlinked, for :func:`build_scene`) and read their meshes. Every file is
    checked (:mod:`clevr_poc.rendering.asset_safety`) before anything in it is evaluated.

    Raises:
        AssetsError: a file that Blender cannot read, links another file or holds what asset files may not,
            no camera, an object missing from its file.
    """
    import bpy

    for path in (files.base_scene, *files.shapes.values(), *files.materials.values()):
        _safety.check_links(path)
    handlers = _safety.handler_counts()
    try:
        with _safety.closed_stdin():
            bpy.ops.wm.open_mainfile(filepath=str(files.base_scene), load_ui=False, use_scripts=False)
    except RuntimeError as exc:
        raise AssetsError(f"{files.base_scene}: Blender cannot open it ({exc})") from None
    scene = bpy.context.scene
    _safety.own_scene_settings(scene)
    _safety.check_loaded_data(files.base_scene, handlers)
    if scene.camera is None:
        raise AssetsError(f"{files.base_scene}: the scene has no camera")
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = width, height, 100
    bpy.context.view_layer.update()
    camera = _camera_from_blender(scene.camera, width, height)
    lights = tuple(Light(_light_name(obj.name), tuple(float(c) for c in obj.matrix_world.translation),
                         float(obj.data.energy), float(getattr(obj.data, "size", 0.0)),
                         tuple(float(c) for c in obj.data.color))
                   for obj in sorted(scene.objects, key=lambda o: o.name) if obj.type == "LIGHT")
    unit_meshes = {}
    for shape, path in files.shapes.items():
        obj = _load(path, "objects", SHAPE_OBJECTS[shape])
        if obj.type != "MESH":
            raise AssetsError(f"{path}: {SHAPE_OBJECTS[shape]!r} is a {obj.type}, expected a mesh")
        points = np.empty(len(obj.data.vertices) * 3)
        obj.data.vertices.foreach_get("co", points)
        points = points.reshape(-1, 3) * np.asarray(obj.scale, dtype=float)
        unit_meshes[shape] = _hull_mesh(points)
    for material, path in files.materials.items():
        if MATERIAL_GROUPS[material] not in bpy.data.node_groups:
            _load(path, "node_groups", MATERIAL_GROUPS[material])
    return OfficialFiles(files, camera, lights, unit_meshes)


#: Custom property that tags what :func:`build_scene` adds (objects, their meshes and materials), so that
#: :func:`prepared_assets` can take it away again and reuse the opened base scene for the next image.
ADDED_TAG = "clevr_poc_added"
#: Custom property on the scene naming which :func:`read_assets` call prepared it.
PREPARED_TAG = "clevr_poc_assets"
_prepared: dict[str, Any] = {}


def _files_key(files: AssetFiles, width: int, height: int) -> tuple:
    """What identifies a prepared base scene: every file's path, size and modification time, and the size."""
    paths = (files.base_scene, *files.shapes.values(), *files.materials.values())
    stamps = []
    for path in paths:
        stat = path.stat()
        stamps.append((str(path.resolve()), stat.st_size, stat.st_mtime_ns))
    return tuple(stamps), int(width), int(height)


def _remove_added() -> None:
    """Take away every datablock :func:`build_scene` added (tagged with :data:`ADDED_TAG`)."""
    import bpy

    for collection in (bpy.data.objects, bpy.data.meshes, bpy.data.materials, bpy.data.cameras):
        for block in [b for b in collection if b.get(ADDED_TAG)]:
            collection.remove(block)


def prepared_assets(files: AssetFiles, *, width: int, height: int) -> OfficialFiles:
    """:func:`read_assets`, done once per process: when Blender still holds the base scene this function
    prepared for the same files (unchanged on disk) and size, the objects of the previous image are taken
    away and that scene is reused (opening the base scene and appending the shapes and node groups costs
    about 1.5 s per image otherwise; ``benchmarks/render.py``). Any other Blender use in between (a
    procedural render resets Blender) makes the next call read the files again.

    Raises:
        AssetsError: as :func:`read_assets`.
    """
    import bpy

    key = _files_key(files, width, height)
    cached = _prepared.get("current")
    if cached is not None and cached[0] == key and bpy.context.scene.get(PREPARED_TAG) == cached[2]:
        _remove_added()
        return cached[1]
    _prepared.pop("current", None)
    official = read_assets(files, width=width, height=height)
    token = os.urandom(8).hex()
    bpy.context.scene[PREPARED_TAG] = token
    _prepared["current"] = (key, official, token)
    return official


def build_scene(official: OfficialFiles, scene: Any, lights: dict, camera: Camera, style: Any,
                cone_lift: float = 0.0) -> None:
    """Fill the opened base scene (:func:`read_assets` ran just before): lights moved to ``lights``
    (jittered positions), the camera set to ``camera``, one copy of the file's shape per object (scale,
    rotation about z, location ``(x, y, r)``, cones lifted by ``cone_lift``), each with its ``Rubber``/``MyMetal``
    material (``Color`` = the colour in the style's colour space), ``pass_index = k + 1``."""
    import bpy

    from clevr_poc.rendering import blender as _blender
    from clevr_poc.rendering import shaders as _shaders
    from clevr_poc.rendering.render import object_rotation
    from clevr_poc.rendering.shapes import object_scale

    view = bpy.context.scene
    for obj in view.objects:
        if obj.type == "LIGHT" and _light_name(obj.name) in lights:
            obj.location = lights[_light_name(obj.name)]
    file_camera = view.camera
    _blender.add_camera(camera)
    view.camera[ADDED_TAG] = 1
    view.camera.data[ADDED_TAG] = 1
    if file_camera is not None:
        bpy.data.objects.remove(file_camera)
    sources = {shape: bpy.data.objects[SHAPE_OBJECTS[shape]] for shape in SHAPE_OBJECTS}
    materials: dict[tuple[str, str], Any] = {}
    for k, item in enumerate(scene.objects):
        key = (item.color, item.material)
        if key not in materials:
            rgb = _blender.colour_rgb(item.color, style.colour_space)
            materials[key] = _shaders.group_material(f"{item.color}_{item.material}",
                                                     MATERIAL_GROUPS[item.material], (*rgb, 1.0))
            materials[key][ADDED_TAG] = 1
        source = sources[item.shape]
        obj = source.copy()
        obj.data = source.data.copy()
        obj[ADDED_TAG] = 1
        obj.data[ADDED_TAG] = 1
        obj.name = f"{SHAPE_OBJECTS[item.shape]}_{k}"
        s = object_scale(item.shape, item.size, shrink_cube=style.shrink_cube)
        obj.scale = tuple(c * s for c in source.scale)
        obj.rotation_euler[2] = math.radians(object_rotation(item))
        lift = cone_lift if item.shape == "cone" else 0.0
        obj.location = (float(item.coords_3d[0]), float(item.coords_3d[1]), s + lift)
        obj.data.materials.clear()
        obj.data.materials.append(materials[key])
        obj.pass_index = k + 1
        view.collection.objects.link(obj)
