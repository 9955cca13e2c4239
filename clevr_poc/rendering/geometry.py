"""Camera geometry for rendering: re-exports :mod:`clevr_poc.camera`, the one home of the camera, its
presets and projection (kept so ``clevr_poc.rendering.geometry`` names stay importable)."""

from clevr_poc.camera import (  # noqa: F401
    CAMERA_PRESETS, CLEVR_CAMERA_POSITION, Camera, DEFAULT_CAMERA_JITTER, DEFAULT_CAMERA_POSITION, DEFAULT_DISTANCE,
    DEFAULT_ELEVATION_DEG, FOCAL_MM, OFFICIAL_CAMERA_POSITION, OFFICIAL_FOCAL_MM, OFFICIAL_HEIGHT, OFFICIAL_WIDTH,
    SENSOR_MM, camera_preset, default_camera, image_to_ground, intrinsics_for, look_at, official_camera,
    ours_camera, pixel_rays, project, project_points,
)

__all__ = [
    "CAMERA_PRESETS", "CLEVR_CAMERA_POSITION", "Camera", "DEFAULT_CAMERA_JITTER", "DEFAULT_CAMERA_POSITION",
    "DEFAULT_DISTANCE", "DEFAULT_ELEVATION_DEG", "FOCAL_MM", "OFFICIAL_CAMERA_POSITION", "OFFICIAL_FOCAL_MM",
    "OFFICIAL_HEIGHT", "OFFICIAL_WIDTH", "SENSOR_MM", "camera_preset", "default_camera", "image_to_ground",
    "intrinsics_for", "look_at", "official_camera", "ours_camera", "pixel_rays", "project", "project_points",
]
