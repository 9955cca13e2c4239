"""Rendering CLEVR-POC scenes with Blender (paper §3.3), and the geometry around the images.

::

    from clevr_poc.rendering import render_scene, check_visibility, image_to_ground, project

    result = render_scene(scene, "out/CLEVR_train_000000.png", seed=7)   # needs bpy==5.0.1
    result.scene.to_file("scene_with_ground_truth.json")                    # masks, boxes, camera, ...
    report = check_visibility(scene, seed=7)                                # no Blender needed

Modules: :mod:`.geometry` (re-exports :mod:`clevr_poc.camera`: camera, ``project``, ``image_to_ground``), :mod:`.shapes` (procedural
meshes), :mod:`.masks` (instance masks by ray casting, COCO RLE), :mod:`.render` (``render_scene``),
:mod:`.blender` (the ``bpy`` scene). Only :mod:`.blender` touches ``bpy``, inside its functions, so
everything here imports without Blender.
"""

from clevr_poc.camera import (
    CAMERA_PRESETS,
    Camera,
    camera_preset,
    default_camera,
    image_to_ground,
    look_at,
    official_camera,
    project,
    project_points,
)
from clevr_poc.render_settings import RenderSettings
from clevr_poc.rendering.masks import decode_rle, encode_rle, instance_index_map, mask_bbox
from clevr_poc.rendering.render import (
    DEFAULT_ENGINE,
    DEFAULT_SAMPLES,
    OffendingObject,
    RenderError,
    RenderResult,
    RenderStats,
    VisibilityReport,
    check_visibility,
    default_min_pixels,
    render_scene,
    scene_camera,
)

__all__ = [
    "CAMERA_PRESETS", "Camera", "camera_preset", "official_camera", "DEFAULT_ENGINE", "DEFAULT_SAMPLES", "OffendingObject", "RenderError", "RenderResult", "RenderSettings", "RenderStats",
    "VisibilityReport", "check_visibility", "decode_rle", "default_camera", "default_min_pixels", "encode_rle",
    "image_to_ground", "instance_index_map", "look_at", "mask_bbox", "project", "project_points", "render_scene",
    "scene_camera",
]
