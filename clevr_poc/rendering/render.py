"""Render a scene to a PNG with ground truth: ``render_scene(scene, out_png) -> RenderResult``.

Paper §3.3: a scene graph is rendered with Blender; the partial scene's image is rendered from the
partial scene graph (the hidden object is simply absent). Render the complete and the partial scene
with the same ``seed``: camera and lights are drawn from it (when jittered), and object rotations come
from the objects themselves (``SceneObject.rotation``, or a hash of the object when absent), so the two
images differ only by the hidden object.

The look is a named style (:mod:`clevr_poc.rendering.styles`): ``official`` (default: the released
images, 320 x 320, fixed official camera and lights, cubes not shrunk, linear colours, the official
shaders) or ``ours`` (our former look, unchanged). ``assets=DIR`` renders with the official
``data/`` files instead of the procedural scene, meshes and shaders (:mod:`clevr_poc.rendering.assets`).

Cones: the official generator appends each shape at the location stored in its ``.blend`` file, moves it
by (x, y, r) (CLEVR ``utils.add_object``: ``bpy.ops.transform.translate(value=(x, y, scale))``) and then
sets its x and y back to the layout's (CLEVR-POC ``image_generation/blender.py``, ``add_object``:
``obj.location = Vector((x, y, obj.location[2]))``). The official ``Cone`` is stored at
(0.734, -0.477, 0.118), so official cones stand at their layout (x, y) -- the region and relations in the
scene JSON hold for what is drawn -- but float 0.118 above the floor, and their recorded ``3d_coords`` z
is r + 0.118. ``cone_lift`` is that height: the style's by default (``official`` and ``assets``:
:data:`OFFICIAL_CONE_LIFT`; ``ours``: 0); the recorded ``3d_coords`` z follows.

Ground truth written into the returned scene (official keys plus CLEVR-style extras; typed fields of
:class:`~clevr_poc.scene.Scene` and :class:`~clevr_poc.scene.SceneObject`: ``scene.image`` is an
:class:`~clevr_poc.scene_metadata.ImageInfo`)::

    scene["camera"]  = {"K": 3x3, "world_to_camera": 4x4, "image_size": [W, H], "convention": "opencv"}
    scene["render"]  = {"engine", "samples", "denoise", "seed", "width", "height", "lights"}
    object["3d_coords"]    = [x, y, z]          centre; z = half-height (the object rests on the ground)
    object["pixel_coords"] = [u, v, depth]      projection of the centre (geometry.project)
    object["rotation"]     = degrees about z
    object["mask"]         = COCO RLE {"size": [H, W], "counts": str} of the visible pixels
    object["bbox"]         = [x, y, w, h] of the mask (pixels), or null when nothing is visible
    object["visible_pixels"] = mask area

Masks come from :func:`clevr_poc.rendering.masks.instance_index_map` (exact ray casting of the rendered
meshes at pixel centres; the same for every engine).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from clevr_poc._io import commit_temp, new_temp_path
from clevr_poc.camera import SENSOR_MM, Camera, camera_preset, default_camera, look_at, project
from clevr_poc.errors import ClevrPocError, FormatError, RenderError
from clevr_poc.render_settings import (  # noqa: F401  (public names of this module)
    DEFAULT_ENGINE, DEFAULT_MAX_RELAYOUTS, DEFAULT_SAMPLES, ENGINE_NAMES, RenderSettings,
)
from clevr_poc.rendering import masks as _masks
from clevr_poc.rendering.shapes import Mesh, object_mesh, object_rotation, object_scale
from clevr_poc.rendering.styles import DEFAULT_STYLE, OFFICIAL_CONE_LIFT, STYLE_NAMES, RenderStyle, get_style, resolve_look  # noqa: F401
from clevr_poc.scene import Scene, SceneObject
from clevr_poc.scene_metadata import ImageInfo, RenderInfo

#: Default image size: the official 320 x 320 (the ``official`` style's; ``ours``: 320 x 240).
DEFAULT_WIDTH, DEFAULT_HEIGHT = 320, 320
#: Minimum visible pixels of an object at 320 x 240, scaled with the image area for other sizes. An
#: unoccluded small cone at the far corner of region 0 covers about 80 pixels at 320 x 240.
MIN_PIXELS_AT_320x240 = 40


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class OffendingObject:
    """An object that does not cover enough pixels.

    Attributes:
        index: object index in the scene.
        pixels: visible pixels.
        footprint: pixels it would cover without occluders (inside the image).
        reason: ``"occluded"`` (its footprint is large enough, other objects hide it) or ``"too_small"``
            (even unoccluded it covers fewer than the minimum: outside the view, or far and tiny).
    """

    index: int
    pixels: int
    footprint: int
    reason: str


@dataclass(frozen=True)
class VisibilityReport:
    """Visible pixels per object and the objects under the minimum.

    Attributes:
        min_pixels: the threshold used.
        pixels: visible pixels per object (index order).
        footprints: unoccluded pixels per object.
        offending: objects with ``pixels < min_pixels``.
    """

    min_pixels: int
    pixels: tuple[int, ...]
    footprints: tuple[int, ...]
    offending: tuple[OffendingObject, ...]

    @property
    def ok(self) -> bool:
        return not self.offending

    def describe(self) -> str:
        if self.ok:
            return f"all {len(self.pixels)} objects cover >= {self.min_pixels} pixels"
        parts = [f"object {o.index}: {o.pixels} px ({o.reason}, footprint {o.footprint})" for o in self.offending]
        return f"{len(self.offending)} object(s) under {self.min_pixels} visible pixels: " + "; ".join(parts)


@dataclass(frozen=True)
class RenderStats:
    """Timings (seconds, wall clock) and settings of one :func:`render_scene` call.

    ``render_seconds`` is Blender's part (scene build + render + PNG); ``relayouts`` counts ``relayout``
    calls; ``rendered`` is False when the image was skipped (``skip_invisible``).
    """

    seconds: float
    render_seconds: float
    mask_seconds: float
    engine: str
    samples: int
    width: int
    height: int
    denoise: bool
    relayouts: int = 0
    rendered: bool = True


@dataclass(frozen=True)
class RenderResult:
    """``scene``: the input scene with ground truth (module doc); ``image_path``: the PNG (None when
    skipped); ``index_pass``: Blender's object-index pass (int32 (H, W), 0 = none, k+1 = object k) when
    requested."""

    scene: Scene
    stats: RenderStats
    visibility: VisibilityReport
    camera: Camera
    image_path: Path | None
    index_pass: np.ndarray | None = field(default=None, compare=False)


# ---------------------------------------------------------------------- helpers
def default_min_pixels(width: int, height: int) -> int:
    """:data:`MIN_PIXELS_AT_320x240` scaled by the image area (at least 1)."""
    return max(1, round(MIN_PIXELS_AT_320x240 * width * height / (320 * 240)))


def _rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, stream]))


def scene_camera(seed: int = 0, *, width: int | None = None, height: int | None = None,
                 jitter: float | None = None, style: str | RenderStyle = DEFAULT_STYLE) -> Camera:
    """The camera :func:`render_scene` uses for ``seed``: the style's camera preset at ``width`` x
    ``height`` (default: the style's size), its position jittered by U(-jitter, jitter) per coordinate
    from the seed (default: the style's jitter; official 0, ours 0.5), still aimed at the origin.

    Raises:
        FormatError: unknown style.
    """
    st = get_style(style)
    width = st.width if width is None else width
    height = st.height if height is None else height
    jitter = st.camera_jitter if jitter is None else jitter
    if st.camera == "ours":  # exactly the former camera (same draws from the same seed)
        return default_camera(width, height, rng=_rng(seed, 1), jitter=jitter)
    camera = camera_preset(st.camera, width, height)
    if not jitter > 0:
        return camera
    position = camera.position + _rng(seed, 1).uniform(-jitter, jitter, size=3)
    focal_mm = camera.K[0, 0] / max(width, height) * SENSOR_MM
    return look_at(position, (0.0, 0.0, 0.0), width=width, height=height, focal_mm=focal_mm)


def _object_xy(obj: SceneObject, index: int) -> tuple[float, float]:
    if obj.coords_3d is None or len(obj.coords_3d) < 2:
        raise FormatError("the object has no position: render needs '3d_coords' [x, y, z] (run the layout first)",
                          field=f"objects[{index}].3d_coords", value=obj.coords_3d)
    x, y = float(obj.coords_3d[0]), float(obj.coords_3d[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise FormatError("3d_coords must be finite", field=f"objects[{index}].3d_coords", value=obj.coords_3d)
    return x, y


def _lift(shape: str, cone_lift: float) -> float:
    return float(cone_lift) if shape == "cone" else 0.0


def scene_meshes(scene: Scene, style: str | RenderStyle = DEFAULT_STYLE, *, cone_lift: float = 0.0,
                 unit_meshes: dict[str, Mesh] | None = None, indices: Sequence[int] | None = None) -> list[Mesh]:
    """World meshes of the scene's objects (index order) in ``style`` (its mesh set and cube scale);
    ``unit_meshes`` (shape -> unit mesh) replaces the style's meshes (the official files' hulls, ``assets``);
    ``indices``: only these objects' meshes, in that order (the same meshes).

    Raises:
        FormatError: an object without position, or an unknown style.
    """
    st = get_style(style)
    meshes = []
    for i in range(len(scene.objects)) if indices is None else indices:
        obj = scene.objects[i]
        x, y = _object_xy(obj, i)
        offset = (0.0, 0.0, _lift(obj.shape, cone_lift))
        if unit_meshes is not None:
            s = object_scale(obj.shape, obj.size, shrink_cube=st.shrink_cube)
            meshes.append(unit_meshes[obj.shape].transformed(s, object_rotation(obj), (x, y, s + offset[2])))
        else:
            meshes.append(object_mesh(obj.shape, obj.size, x, y, object_rotation(obj), mesh_set=st.meshes,
                                      shrink_cube=st.shrink_cube, offset=offset))
    return meshes


def object_placements(scene: Scene, style: str | RenderStyle = DEFAULT_STYLE, *, cone_lift: float = 0.0
                      ) -> list[tuple[str, str, float, float, tuple[float, float, float]]]:
    """How :func:`scene_meshes` places each object's unit mesh: ``(shape, mesh set, scale, rotation in
    degrees, location)`` (``unit_mesh(shape, mesh_set).transformed(scale, rotation, location)`` is its mesh).

    Raises:
        FormatError: an object without position, or an unknown style.
    """
    st = get_style(style)
    placements = []
    for i, obj in enumerate(scene.objects):
        x, y = _object_xy(obj, i)
        s = object_scale(obj.shape, obj.size, shrink_cube=st.shrink_cube)
        placements.append((obj.shape, st.meshes, s, object_rotation(obj), (x, y, s + _lift(obj.shape, cone_lift))))
    return placements


def visibility_report(index_map: np.ndarray, meshes: Sequence[Mesh], camera: Camera, min_pixels: int,
                      mesh_footprints: Sequence | None = None) -> VisibilityReport:
    """Visibility of every object from an index map (:func:`masks.instance_index_map`); the meshes'
    footprints (:func:`masks.mesh_footprints`) are reused when given."""
    counts = np.bincount(index_map[index_map >= 0].ravel(), minlength=len(meshes))
    pixels = tuple(int(c) for c in counts[:len(meshes)])
    offending = []
    footprints = []
    for k, mesh in enumerate(meshes):
        if mesh_footprints is not None:
            fp = 0 if mesh_footprints[k] is None else int(mesh_footprints[k][1].sum())
        else:
            fp = _masks.footprint_pixels(mesh, camera)
        footprints.append(fp)
        if pixels[k] < min_pixels:
            offending.append(OffendingObject(k, pixels[k], fp, "occluded" if fp >= min_pixels else "too_small"))
    return VisibilityReport(int(min_pixels), pixels, tuple(footprints), tuple(offending))


def check_visibility(scene: Scene, *, seed: int = 0, width: int | None = None, height: int | None = None,
                     camera: Camera | None = None, min_pixels: int | None = None,
                     style: str | RenderStyle = DEFAULT_STYLE, cone_lift: float = 0.0) -> VisibilityReport:
    """Whether every object of ``scene`` covers at least ``min_pixels`` pixels (no Blender needed).

    The camera is ``camera`` or the one :func:`render_scene` would use for ``seed`` and ``style`` (so a
    generator can check a layout before anything is rendered, and re-place the objects when
    ``report.ok`` is False). Checking the complete scene suffices for its partial scene: removing an
    object only uncovers pixels.
    """
    camera = camera or scene_camera(seed, width=width, height=height, style=style)
    minimum = default_min_pixels(camera.width, camera.height) if min_pixels is None else int(min_pixels)
    meshes = scene_meshes(scene, style, cone_lift=cone_lift)
    footprints = _masks.mesh_footprints(meshes, camera)
    return visibility_report(_masks.instance_index_map(meshes, camera, footprints), meshes, camera, minimum,
                             footprints)


def annotate(scene: Scene, camera: Camera, index_map: np.ndarray, render_info: RenderInfo,
             style: str | RenderStyle = DEFAULT_STYLE, cone_lift: float = 0.0) -> Scene:
    """``scene`` with the ground truth of the module doc (positions, projections, masks, camera)."""
    st = get_style(style)
    objects = []
    for i, obj in enumerate(scene.objects):
        x, y = _object_xy(obj, i)
        z = object_scale(obj.shape, obj.size, shrink_cube=st.shrink_cube) + _lift(obj.shape, cone_lift)
        mask = index_map == i
        bbox = _masks.mask_bbox(mask)
        objects.append(replace(obj, coords_3d=(x, y, z), pixel_coords=project((x, y, z), camera),
                               rotation=object_rotation(obj), mask=_masks.encode_rle(mask),
                               bbox=tuple(bbox) if bbox else None, visible_pixels=int(mask.sum())))
    return replace(scene, objects=tuple(objects), image=ImageInfo(camera, render_info))


def _import_bpy() -> None:
    """Import ``bpy`` or raise :class:`RenderError`.

    A process started by one that had imported ``bpy`` (``multiprocessing`` spawn, Ray) inherits its
    ``sys.path``, where Blender put its own ``scripts/modules`` first; that folder holds Blender's inner
    ``bpy`` package, which needs the ``_bpy`` built-in of a Blender executable. Such entries are dropped
    before a second try (``import bpy`` adds them back).
    """
    try:
        import bpy  # noqa: F401
        return
    except ImportError as exc:
        if exc.name != "_bpy":
            raise RenderError(f"rendering needs Blender's Python module ({exc}); install it with "
                              "pip install '.[render]' in the clevr_poc folder (bpy==5.0.1 needs Python 3.11 and numpy<2)") from None
    for name in [m for m in sys.modules if m == "bpy" or m.startswith("bpy.")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not _is_blender_scripts_path(p)]
    try:
        import bpy  # noqa: F401,F811
    except ImportError as exc:
        raise RenderError(f"cannot import Blender's Python module ({exc})") from None


def _is_blender_scripts_path(path: str) -> bool:
    parts = Path(path).parts
    return "scripts" in parts and any(p == "bpy" or p.lower().startswith("blender") for p in parts)


def bpy_available() -> bool:
    """Whether ``bpy`` can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("bpy") is not None


# ---------------------------------------------------------------------- the renderer
@contextlib.contextmanager
def _deferred_interrupt() -> Iterator[list[int]]:
    """Hold back Ctrl-C (SIGINT) while Blender renders; re-raise it as KeyboardInterrupt afterwards.

    A KeyboardInterrupt raised inside Blender's render callback is caught and printed by Blender, which
    then goes on as if nothing happened (measured with bpy 5.0.1: a render command kept rendering after
    SIGINT). So the signal is only recorded during the call (the list it yields gets the signal number);
    the caller checks it and stops. Outside the main thread (no signal handlers there) it does nothing.
    """
    import signal
    import threading

    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):  # Ctrl-C ignored (background job) or not set from Python
        yield received
        return
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)


def render_scene(
    scene: Scene,
    out_png: str | os.PathLike[str],
    settings: RenderSettings | None = None,
    *,
    seed: int = 0,
    relayout: Callable[[Scene, VisibilityReport, int], Scene] | None = None,
    skip_invisible: bool = False,
    index_pass: bool = False,
    **overrides: object,
) -> RenderResult:
    """Render ``scene`` to ``out_png`` (atomically: temp file + rename) and return it with ground truth.

    Args:
        scene: objects with ``3d_coords`` (x, y used; z is recomputed so that objects rest on the ground).
        out_png: output path; parent folders are created.
        settings: the :class:`~clevr_poc.render_settings.RenderSettings` (style, size, samples, engine,
            jitters, ``assets``, ``min_pixels``, ``max_relayouts``, threads, ...; default: the defaults).
        seed: draws the camera jitter, the light jitter and Cycles' sampling pattern.
        relayout: called as ``relayout(scene, report, attempt)`` when an object is under ``min_pixels``;
            returns a re-placed scene, checked again; at most ``max_relayouts`` calls (counted in
            ``stats.relayouts``). Without it the image is rendered anyway and the report lists the objects.
        skip_invisible: do not render when the (final) check fails (``image_path`` is None).
        index_pass: also return Blender's object-index pass (Cycles only; for checks).
        overrides: fields of ``settings`` to replace (``render_scene(scene, out, samples=4, style="ours")``).

    Ctrl-C (SIGINT) during Blender's part lets the render finish, then raises KeyboardInterrupt without
    writing the image (Blender itself would swallow the interrupt; see :func:`_deferred_interrupt`).

    Raises:
        FormatError: an object without ``3d_coords``, a bad ``rotation``, an unknown style or colour space.
        RenderError: bad settings, ``bpy`` not installed, or Blender failed.
        clevr_poc.rendering.assets.AssetsError: ``assets`` is not an official ``data/`` folder (names the
            missing file).
    """
    from clevr_poc.rendering import blender as _blender

    start = time.perf_counter()
    settings = (settings or RenderSettings()).with_overrides(**overrides)
    samples, engine = settings.samples, settings.engine
    denoise, adaptive, assets = settings.denoise, settings.adaptive, settings.assets
    min_pixels, max_relayouts, threads, quiet = (settings.min_pixels, settings.max_relayouts, settings.threads,
                                                 settings.quiet)
    look = resolve_look(settings)
    st, width, height = look.style, look.width, look.height
    camera_jitter, light_jitter, cone_lift = look.camera_jitter, look.light_jitter, look.cone_lift
    if engine not in ENGINE_NAMES:
        raise RenderError(f"unknown engine {engine!r}; expected one of {list(ENGINE_NAMES)}")
    for name, value in (("width", width), ("height", height), ("samples", samples)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RenderError(f"{name} must be a positive integer, got {value!r}")
    for name, value in (("camera_jitter", camera_jitter), ("light_jitter", light_jitter), ("cone_lift", cone_lift)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10:
            raise RenderError(f"{name} must be a number in [0, 10] (world units), got {value!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise RenderError(f"seed must be an integer, got {seed!r}")
    if index_pass and engine != "cycles":
        raise RenderError("the object-index pass is only available with engine='cycles'")
    out_png = Path(out_png)
    minimum = default_min_pixels(width, height) if min_pixels is None else int(min_pixels)
    official_files = None
    if assets is not None:
        from clevr_poc.rendering import assets as _assets

        files = _assets.find_assets(assets)  # typed error naming the missing file, before bpy
        _import_bpy()
        with _blender.quiet_stdout(quiet):
            official_files = _assets.prepared_assets(files, width=width, height=height)
        camera = official_files.camera
        if camera_jitter > 0:
            camera = look_at(camera.position + _rng(seed, 1).uniform(-camera_jitter, camera_jitter, size=3),
                             (0.0, 0.0, 0.0), width=width, height=height,
                             focal_mm=camera.K[0, 0] / max(width, height) * SENSOR_MM)
        lights_spec = official_files.lights
    else:
        camera = scene_camera(seed, width=width, height=height, jitter=camera_jitter, style=st)
        lights_spec = st.lights
    unit_meshes = None if official_files is None else official_files.unit_meshes

    mask_start = time.perf_counter()
    meshes = scene_meshes(scene, st, cone_lift=cone_lift, unit_meshes=unit_meshes)
    index_map = _masks.instance_index_map(meshes, camera)
    report = visibility_report(index_map, meshes, camera, minimum)
    relayouts = 0
    while not report.ok and relayout is not None and relayouts < max_relayouts:
        relayouts += 1
        scene = relayout(scene, report, relayouts)
        meshes = scene_meshes(scene, st, cone_lift=cone_lift, unit_meshes=unit_meshes)
        index_map = _masks.instance_index_map(meshes, camera)
        report = visibility_report(index_map, meshes, camera, minimum)
    mask_seconds = time.perf_counter() - mask_start

    lights = _blender.light_positions(_rng(seed, 2), light_jitter, lights_spec)
    used = replace(settings, style=st.name, width=width, height=height, denoise=bool(denoise and engine == "cycles"),
                   adaptive=bool(adaptive and engine == "cycles"), colour_space=st.colour_space,
                   camera_jitter=camera_jitter, light_jitter=light_jitter, cone_lift=cone_lift,
                   assets=None if official_files is None else str(official_files.files.root))
    # 'ours' scene files stay as they were: no style recorded
    info = RenderInfo.of(used, seed, lights, with_style=st.name != "ours" or official_files is not None)
    annotated = annotate(scene, camera, index_map, info, st, cone_lift)
    stats_kw = dict(engine=engine, samples=samples, width=width, height=height,
                    denoise=info.denoise, relayouts=relayouts)
    if skip_invisible and not report.ok:
        stats = RenderStats(time.perf_counter() - start, 0.0, mask_seconds, rendered=False, **stats_kw)
        return RenderResult(annotated, stats, report, camera, None)

    _import_bpy()
    render_start = time.perf_counter()
    out_png.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_temp_path(out_png)  # .<name>.<pid>-<hex>.tmp, the umask's mode (clevr_poc._io)
    objects = [_blender.BlenderObject(mesh, obj.color, obj.material, k + 1)
               for k, (mesh, obj) in enumerate(zip(meshes, scene.objects))]
    try:
        from clevr_poc.rendering.asset_safety import closed_stdin

        with _deferred_interrupt() as interrupted, _blender.quiet_stdout(quiet), closed_stdin():
            if official_files is not None:
                _assets.build_scene(official_files, scene, lights, camera, st, cone_lift)
            else:
                _blender.reset()
            _blender.configure(engine=engine, width=width, height=height, samples=samples,
                               denoise=info.denoise, adaptive=adaptive, seed=seed, threads=threads)
            if official_files is None:
                _blender.add_world(st.world_rgb, st.world_strength)
                if st.backdrop is not None:
                    _blender.add_backdrop(st.backdrop)
                else:
                    _blender.add_ground(rgb=st.ground_rgb)
                _blender.add_lights(lights, st.lights)
                if st.sun is not None:
                    _blender.add_sun(st.sun)
                _blender.add_camera(camera)
                _blender.add_objects(objects, shaders=st.shaders, colour_space=st.colour_space)
            passes = _blender.render_png(tmp, index_pass=index_pass)
        if interrupted:  # Ctrl-C during the render: drop this image (the finally removes the temp file)
            raise KeyboardInterrupt
        if not tmp.exists() or tmp.stat().st_size == 0:
            raise RenderError(f"Blender wrote no image for {out_png}")
        commit_temp(tmp, out_png)  # fsync, rename, fsync the folder
    except ClevrPocError:
        raise
    except (RuntimeError, ValueError, TypeError, AttributeError, KeyError) as exc:  # from bpy
        raise RenderError(f"Blender failed to render {out_png}: {exc.__class__.__name__}: {exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    end = time.perf_counter()
    stats = RenderStats(end - start, end - render_start, mask_seconds, **stats_kw)
    return RenderResult(annotated, stats, report, camera, out_png, passes)
