"""Build and render a CLEVR-POC scene with Blender's Python module (``bpy``, Blender 5.0).

Only :mod:`clevr_poc.rendering.render` calls into this module; every function imports ``bpy`` itself,
so importing :mod:`clevr_poc` (or this module) never needs Blender.

The look is a :class:`clevr_poc.rendering.styles.RenderStyle` (``official``: the released images;
``ours``: our former look), rebuilt in code:

* a large ground plane (official: no material, Blender's default grey diffuse; ours: matte grey) and the
  style's world (official: strength 0, no ambient light; ours: dim grey);
* three area lights aimed at the origin: key (front right), fill (front left, weak), back (behind), at
  the style's positions, each jittered by U(-j, j) per coordinate when asked (CLEVR
  ``--key_light_jitter`` etc.; the official CLEVR-POC code does not jitter);
* materials: the official node groups ``Rubber``/``MyMetal`` (:mod:`clevr_poc.rendering.shaders`, or
  the official files with ``--assets``) or ours (Principled BSDF *rubber*, rough dielectric, and
  *metal*); the eight CLEVR colours (official ``properties.json``) as ``c / 255`` linear values
  (official) or converted from sRGB to linear (ours);
* the shapes of :mod:`clevr_poc.rendering.shapes`, with exact per-vertex normals (or flat shading);
* 'Standard' view transform, display sRGB (the official setting; Blender 5's default AgX would wash the
  colours out).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.rendering.geometry import SENSOR_MM, Camera
from clevr_poc.rendering.shapes import Mesh
from clevr_poc.rendering.styles import OURS, Backdrop, Light, Sun

#: Render engines: our name -> Blender's.
ENGINES = {"cycles": "CYCLES", "eevee": "BLENDER_EEVEE"}

#: Linear RGB of the ground and of the world (background) colour of the ``ours`` style.
GROUND_RGB = OURS.ground_rgb
WORLD_RGB = OURS.world_rgb
#: Principled BSDF settings of the two materials.
RUBBER = {"Metallic": 0.0, "Roughness": 0.75, "Specular IOR Level": 0.35}
METAL = {"Metallic": 1.0, "Roughness": 0.15}


@dataclass(frozen=True)
class BlenderObject:
    """What Blender needs of one object: its world mesh, colour and material names, pass index (>= 1)."""

    mesh: Mesh
    color: str
    material: str
    pass_index: int


def srgb_to_linear(rgb255: Sequence[int]) -> tuple[float, float, float]:
    """sRGB 0..255 -> linear 0..1 (IEC 61966-2-1 transfer function)."""
    out = []
    for v in rgb255:
        c = v / 255.0
        out.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    return out[0], out[1], out[2]


def colour_rgb(color: str, colour_space: str) -> tuple[float, float, float]:
    """Shader colour (linear 0..1) of a CLEVR colour name: ``c / 255`` as is (``linear``, official) or
    read as sRGB and converted (``srgb``, ours). Raises KeyError for an unknown colour or colour space."""
    rgb = domain.COLOR_RGB[color]
    if colour_space == "linear":
        return rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0
    if colour_space == "srgb":
        return srgb_to_linear(rgb)
    raise KeyError(f"unknown colour space {colour_space!r}")


def light_positions(rng: np.random.Generator | None, jitter: float, lights: Sequence[Light] = OURS.lights
                    ) -> dict[str, tuple[float, float, float]]:
    """Light positions, each coordinate moved by U(-jitter, jitter) when ``rng`` is given (key, fill, back order)."""
    out = {}
    for light in lights:
        name, p = light.name, np.asarray(light.location, dtype=float)
        if rng is not None and jitter > 0:
            p = p + rng.uniform(-jitter, jitter, size=3)
        out[name] = (float(p[0]), float(p[1]), float(p[2]))
    return out


# ---------------------------------------------------------------------- scene building
def reset() -> None:
    """Start from an empty scene (factory settings, no objects)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)


def configure(*, engine: str, width: int, height: int, samples: int, denoise: bool, seed: int,
              adaptive: bool = True, threads: int = 0) -> None:
    """Render settings of the current scene. ``threads=0``: all CPUs. Raises ValueError for an unknown engine."""
    import bpy

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {list(ENGINES)}")
    scene = bpy.context.scene
    render = scene.render
    render.engine = ENGINES[engine]
    render.resolution_x, render.resolution_y, render.resolution_percentage = width, height, 100
    render.use_file_extension = False
    render.image_settings.file_format = "PNG"
    render.image_settings.color_mode = "RGB"
    render.image_settings.color_depth = "8"
    render.dither_intensity = 0.0
    render.threads_mode = "FIXED" if threads else "AUTO"
    if threads:
        render.threads = threads
    scene.view_settings.view_transform = "Standard"
    scene.view_settings.look = "None"
    if engine == "cycles":
        cycles = scene.cycles
        cycles.device = "CPU"
        cycles.samples = samples
        cycles.use_adaptive_sampling = adaptive
        cycles.adaptive_threshold = 0.02
        cycles.seed = seed % 2 ** 31  # Blender's int property
        cycles.max_bounces = 4
        cycles.diffuse_bounces = 2
        cycles.glossy_bounces = 4
        cycles.transmission_bounces = 0
        cycles.volume_bounces = 0
        cycles.transparent_max_bounces = 2
        cycles.caustics_reflective = False
        cycles.caustics_refractive = False
        cycles.blur_glossy = 2.0  # CLEVR's setting: less glossy noise
        cycles.use_denoising = denoise
        if denoise:
            cycles.denoiser = "OPENIMAGEDENOISE"
            cycles.denoising_input_passes = "RGB_ALBEDO_NORMAL"
            cycles.denoising_prefilter = "FAST"  # ACCURATE: +1 s per image at 320 x 240, +0.5 dB
    else:
        eevee = scene.eevee
        eevee.taa_render_samples = samples
        if hasattr(eevee, "use_raytracing"):
            eevee.use_raytracing = True
        if hasattr(eevee, "use_shadows"):
            eevee.use_shadows = True


def add_world(rgb: Sequence[float] = WORLD_RGB, strength: float = 1.0) -> None:
    import bpy

    world = bpy.data.worlds.new("World")  # Blender 5: new worlds and materials come with their node trees
    background = world.node_tree.nodes.get("Background")
    background.inputs["Color"].default_value = (*rgb, 1.0)
    background.inputs["Strength"].default_value = strength
    bpy.context.scene.world = world


def _principled(name: str, rgb: Sequence[float], settings: dict) -> "object":
    import bpy

    material = bpy.data.materials.new(name)
    bsdf = material.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    for key, value in settings.items():
        bsdf.inputs[key].default_value = value
    return material


def add_ground(size: float = 200.0, rgb: Sequence[float] | None = GROUND_RGB) -> None:
    """A square ground plane at z = 0, ``size`` units wide: matte ``rgb`` grey, or without material
    (Blender's default surface, grey diffuse) when ``rgb`` is None."""
    import bpy

    h = size / 2
    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata([(-h, -h, 0.0), (h, -h, 0.0), (h, h, 0.0), (-h, h, 0.0)], [], [(0, 1, 2, 3)])
    if rgb is not None:
        mesh.materials.append(_principled("Ground", rgb, {"Roughness": 0.9, "Specular IOR Level": 0.2}))
    obj = bpy.data.objects.new("Ground", mesh)
    bpy.context.scene.collection.objects.link(obj)


def backdrop_mesh(backdrop: Backdrop) -> tuple[np.ndarray, np.ndarray]:
    """World vertices (N, 3) float64 and quads (M, 4) int64 of ``backdrop``: the profile (floor start, then
    ``segments + 1`` samples of the curve) at both ends of the extrusion."""
    t = np.linspace(0.0, 1.0, backdrop.segments + 1)[:, None]
    p0, p1 = np.array([backdrop.bend, 0.0]), np.array([backdrop.control1_u, 0.0])
    p2, p3 = np.asarray(backdrop.control2, dtype=float), np.asarray(backdrop.end, dtype=float)
    curve = (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t ** 2 * p2 + t ** 3 * p3  # (u, z)
    profile = np.concatenate([[[backdrop.floor_start, 0.0]], curve])
    profile[:, 1] = np.maximum(profile[:, 1], 0.0)
    c, s = np.cos(backdrop.rotation_z), np.sin(backdrop.rotation_z)
    vertices = []
    for v in (backdrop.v_min, backdrop.v_max):
        x = backdrop.location[0] + c * profile[:, 0] - s * v
        y = backdrop.location[1] + s * profile[:, 0] + c * v
        vertices.append(np.stack([x, y, profile[:, 1]], axis=1))
    n = len(profile)
    quads = np.array([(k, k + 1, n + k + 1, n + k) for k in range(n - 1)], dtype=np.int64)
    return np.concatenate(vertices), quads


def add_backdrop(backdrop: Backdrop) -> None:
    """The backdrop (:class:`clevr_poc.rendering.styles.Backdrop`) as a smooth-shaded mesh without material."""
    import bpy

    vertices, quads = backdrop_mesh(backdrop)
    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata(vertices.tolist(), [], quads.tolist())
    mesh.update()
    mesh.shade_smooth()
    obj = bpy.data.objects.new("Ground", mesh)
    bpy.context.scene.collection.objects.link(obj)


def add_sun(sun: Sun) -> None:
    """A sun light shining along ``sun.direction``."""
    import bpy
    from mathutils import Vector

    light = bpy.data.lights.new("Sun", type="SUN")
    light.energy = sun.strength
    light.angle = sun.angle
    obj = bpy.data.objects.new("Sun", light)
    obj.rotation_euler = Vector(sun.direction).to_track_quat("-Z", "Y").to_euler()
    bpy.context.scene.collection.objects.link(obj)


def add_lights(positions: dict[str, tuple[float, float, float]], lights: Sequence[Light] = OURS.lights) -> None:
    """Square area lights ``lights`` (energy, size, colour) at ``positions``, each pointing at the origin."""
    import bpy
    from mathutils import Vector

    for spec in lights:
        name = spec.name
        light = bpy.data.lights.new(name, type="AREA")
        light.energy = spec.energy
        light.size = spec.size
        light.color = spec.colour
        obj = bpy.data.objects.new(name, light)
        obj.location = positions[name]
        obj.rotation_euler = (-Vector(positions[name])).to_track_quat("-Z", "Y").to_euler()
        bpy.context.scene.collection.objects.link(obj)


def add_camera(camera: Camera) -> None:
    """A Blender camera reproducing ``camera`` (same K for the render's width/height, same pose)."""
    import bpy
    from mathutils import Matrix

    data = bpy.data.cameras.new("Camera")
    data.sensor_fit = "AUTO"
    data.sensor_width = SENSOR_MM
    data.lens = camera.K[0, 0] / max(camera.width, camera.height) * SENSOR_MM
    data.clip_start, data.clip_end = 0.1, 1000.0
    obj = bpy.data.objects.new("Camera", data)
    # OpenCV camera axes (right, down, forward) -> Blender camera axes (right, up, backward)
    cam_to_world = np.linalg.inv(np.asarray(camera.world_to_camera, dtype=float))
    cam_to_world[:3, :3] = cam_to_world[:3, :3] @ np.diag([1.0, -1.0, -1.0])
    obj.matrix_world = Matrix(cam_to_world.tolist())
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.scene.camera = obj


def object_material(color: str, material: str, *, shaders: str, colour_space: str):
    """A new material of ``material`` (rubber/metal) in ``color``: a ``Rubber``/``MyMetal`` group node
    (``shaders="official"``; the groups must exist, :func:`shaders.ensure_official_groups`) or a
    Principled BSDF (``"principled"``)."""
    from clevr_poc.rendering import shaders as _shaders

    rgb = colour_rgb(color, colour_space)
    if shaders == "official":
        return _shaders.group_material(f"{color}_{material}", _shaders.GROUP_NAMES[material], (*rgb, 1.0))
    return _principled(f"{color}_{material}", rgb, METAL if material == "metal" else RUBBER)


def add_objects(objects: Sequence[BlenderObject], *, shaders: str = "principled", colour_space: str = "srgb"
                ) -> None:
    """Mesh objects with their materials (one material per colour x material pair)."""
    import bpy

    if shaders == "official":
        from clevr_poc.rendering.shaders import ensure_official_groups

        ensure_official_groups()
    materials: dict[tuple[str, str], object] = {}
    for k, item in enumerate(objects):
        key = (item.color, item.material)
        if key not in materials:
            materials[key] = object_material(item.color, item.material, shaders=shaders, colour_space=colour_space)
        mesh = bpy.data.meshes.new(f"object_{k}")
        mesh.from_pydata(item.mesh.vertices.tolist(), [], item.mesh.triangles.tolist())
        mesh.update()
        if item.mesh.smooth:
            mesh.shade_smooth()
            mesh.normals_split_custom_set_from_vertices(item.mesh.normals.tolist())
        else:
            mesh.shade_flat()
        mesh.materials.append(materials[key])
        obj = bpy.data.objects.new(f"object_{k}", mesh)
        obj.pass_index = item.pass_index
        bpy.context.scene.collection.objects.link(obj)


# ---------------------------------------------------------------------- rendering
@contextlib.contextmanager
def quiet_stdout(enabled: bool = True) -> Iterator[None]:
    """Silence Blender's own prints (render progress, 'Saved: ...') at the file-descriptor level."""
    if not enabled:
        yield
        return
    import sys

    sys.stdout.flush()
    with on_devnull(1, os.O_WRONLY):
        yield


@contextlib.contextmanager
def on_devnull(fd: int, flags: int) -> Iterator[None]:
    """File descriptor ``fd`` points at ``/dev/null`` (opened with ``flags``) inside the block and is
    restored afterwards; nothing happens when ``fd`` is not open."""
    try:
        saved = os.dup(fd)
    except OSError:
        yield
        return
    devnull = os.open(os.devnull, flags)
    try:
        os.dup2(devnull, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)


def render_png(path: Path, *, index_pass: bool = False) -> np.ndarray | None:
    """Render the current scene to the PNG ``path`` (written as is; the caller makes it atomic).

    With ``index_pass`` (Cycles only), also return the object-index pass: int32 (height, width), each
    pixel the ``pass_index`` of the object its first sample hit (0: ground/background), top row first.
    """
    import bpy

    scene = bpy.context.scene
    scene.render.filepath = str(path)
    index_dir = None
    if index_pass:
        index_dir = tempfile.mkdtemp(prefix="clevr_poc_index_")
        scene.view_layers[0].use_pass_object_index = True
        tree = bpy.data.node_groups.new("Compositor", "CompositorNodeTree")
        scene.compositing_node_group = tree
        layers = tree.nodes.new("CompositorNodeRLayers")
        out = tree.nodes.new("CompositorNodeOutputFile")
        out.directory = index_dir + os.sep
        out.file_name = "pass_"
        out.format.media_type = "IMAGE"
        out.format.file_format = "OPEN_EXR"
        out.format.color_depth = "32"
        out.file_output_items.new("FLOAT", "index")
        tree.links.new(layers.outputs["Object Index"], out.inputs["index"])
    try:
        bpy.ops.render.render(write_still=True)
        if not index_pass:
            return None
        files = sorted(Path(index_dir).glob("pass_*"))
        if not files:
            raise RuntimeError("Blender wrote no object-index pass")
        image = bpy.data.images.load(str(files[0]))
        pixels = np.empty(image.size[0] * image.size[1] * image.channels, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        values = pixels.reshape(image.size[1], image.size[0], image.channels)[::-1, :, 0]
        bpy.data.images.remove(image)
        return np.rint(values).astype(np.int32)
    finally:
        if index_dir is not None:
            for f in Path(index_dir).glob("*"):
                f.unlink()
            os.rmdir(index_dir)
