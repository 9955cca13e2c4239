"""The pinhole camera an image was taken with, and the one home of camera geometry: the :class:`Camera`
value (intrinsics, pose, size) and its scene-JSON form, the camera presets and projection of world points
to pixels and back onto the ground.

numpy only, so every stage can use it: rendering makes cameras (:mod:`clevr_poc.rendering.render`), a scene
carries one (:class:`clevr_poc.scene_metadata.ImageInfo`), perception turns pixels back into ground
positions with it (:mod:`clevr_poc.perception.box_geometry`, :mod:`clevr_poc.perception.cameras`), the
scene generator projects with it. ``clevr_poc.rendering.geometry`` re-exports the geometry names.

JSON (the scene's ``"camera"``, written by ``python -m clevr_poc render``)::

    {"K": 3x3, "world_to_camera": 4x4, "image_size": [width, height], "convention": "opencv"}

Conventions (world = Blender world, units = Blender metres):

* the ground is the plane ``z = 0``; ``x`` grows to the right of the scene, ``y`` towards the back
  (official CLEVR-POC regions, :data:`clevr_poc.domain.REGION_BOXES`);
* the camera follows the OpenCV convention: camera ``x`` to the right of the image, ``y`` down, ``z``
  forward (the viewing direction). ``world_to_camera`` maps homogeneous world points to camera points;
* pixels: ``u`` from the image's left edge, ``v`` from its top edge, both in pixels; pixel ``(i, j)``
  (column i, row j) covers ``[i, i+1) x [j, j+1)``, so its centre is ``(i + 0.5, j + 0.5)``;
* ``depth`` is the camera-space ``z`` of a point (distance along the viewing axis, world units), as in
  CLEVR's ``pixel_coords`` (CLEVR ``utils.get_camera_coords``).

Two cameras: :func:`official_camera`, the fixed camera of the released CLEVR-POC images (the default
look, style ``official``; also the camera to assume for images that come without one), and our own
framing (:func:`default_camera`, style ``ours``), which keeps the CLEVR viewing direction (camera at azimuth -43.3
degrees, i.e. in front of the scene and to its right, CLEVR ``base_scene.blend``: camera at
(7.36, -6.93, 4.96)) and CLEVR's lens (35 mm on a 32 mm sensor), but is raised to 30 degrees of elevation
and pulled back to 18.6 units so that the whole 10 x 10 area of the four CLEVR-POC regions (CLEVR: 6 x 6)
stays in view with objects up to 2 units tall at its corners, also under the camera jitter (+-0.5 per
coordinate, CLEVR's ``--camera_jitter 0.5``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from clevr_poc.errors import FormatError


@dataclass(frozen=True)
class Camera:
    """A pinhole camera (no distortion) with square pixels.

    Attributes:
        intrinsics: K, 3x3 nested tuples ``((fx, 0, cx), (0, fy, cy), (0, 0, 1))``, pixels.
        world_to_camera: 4x4 nested tuples, rigid transform world -> camera (OpenCV axes, see module doc).
        width, height: image size in pixels.
    """

    intrinsics: tuple[tuple[float, float, float], ...]
    world_to_camera: tuple[tuple[float, float, float, float], ...]
    width: int
    height: int

    def __post_init__(self) -> None:
        K = np.asarray(self.intrinsics, dtype=float)
        T = np.asarray(self.world_to_camera, dtype=float)
        if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
            raise FormatError("camera intrinsics must be a finite 3x3 matrix with fx, fy > 0",
                              field="camera.K", value=self.intrinsics)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise FormatError("camera world_to_camera must be a finite 4x4 matrix",
                              field="camera.world_to_camera", value=self.world_to_camera)
        if not (isinstance(self.width, int) and isinstance(self.height, int) and self.width > 0 and self.height > 0):
            raise FormatError("camera width and height must be positive integers",
                              field="camera.image_size", value=(self.width, self.height))
        object.__setattr__(self, "intrinsics", tuple(tuple(float(v) for v in row) for row in K))
        object.__setattr__(self, "world_to_camera", tuple(tuple(float(v) for v in row) for row in T))

    # ------------------------------------------------------------------ matrices
    @cached_property
    def matrix_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(world_to_camera (4, 4), K (3, 3))`` as read-only float64 arrays, made once per camera: what
        :func:`project_points` and the visibility bounds multiply by (views of these arrays have the strides
        of :attr:`rotation`'s and :attr:`K`'s fresh arrays, so the products are the same floats; issue 27:
        building them from the nested tuples on every call cost a few microseconds)."""
        T = np.asarray(self.world_to_camera, dtype=float)
        K = np.asarray(self.intrinsics, dtype=float)
        T.setflags(write=False)
        K.setflags(write=False)
        return T, K

    @property
    def K(self) -> np.ndarray:
        """Intrinsics, float64 (3, 3)."""
        return np.asarray(self.intrinsics, dtype=float)

    @property
    def rotation(self) -> np.ndarray:
        """World -> camera rotation R, float64 (3, 3); rows are the camera's right, down, forward axes."""
        return np.asarray(self.world_to_camera, dtype=float)[:3, :3]

    @property
    def translation(self) -> np.ndarray:
        """World -> camera translation t, float64 (3,): ``p_cam = R @ p_world + t``."""
        return np.asarray(self.world_to_camera, dtype=float)[:3, 3]

    @property
    def position(self) -> np.ndarray:
        """Camera centre in world coordinates, float64 (3,)."""
        return -self.rotation.T @ self.translation

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        """``{"K": 3x3, "world_to_camera": 4x4, "image_size": [width, height], "convention": "opencv"}``."""
        return {"K": [list(r) for r in self.intrinsics], "world_to_camera": [list(r) for r in self.world_to_camera],
                "image_size": [self.width, self.height], "convention": "opencv"}

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "Camera":
        """Inverse of :meth:`to_json`; raises :class:`FormatError` naming the field."""
        if not isinstance(data, Mapping):
            raise FormatError("camera must be a JSON object", source=source, field="camera", value=data)
        for key in ("K", "world_to_camera", "image_size"):
            if key not in data:
                raise FormatError("missing key", source=source, field=f"camera.{key}")
        size = data["image_size"]
        if not (isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) for v in size)):
            raise FormatError("must be [width, height]", source=source, field="camera.image_size", value=size)
        if data.get("convention", "opencv") != "opencv":
            raise FormatError("only the 'opencv' convention is known", source=source, field="camera.convention",
                              value=data.get("convention"))
        try:
            return cls(tuple(map(tuple, data["K"])), tuple(map(tuple, data["world_to_camera"])), size[0], size[1])
        except (TypeError, ValueError):
            raise FormatError("K must be 3x3 and world_to_camera 4x4 numbers", source=source, field="camera",
                              value=data) from None


# ====================================================================== presets and projection
#: CLEVR lens: focal length and sensor width in millimetres (Blender camera of ``base_scene.blend``).
FOCAL_MM = 35.0
SENSOR_MM = 32.0
#: CLEVR camera position (``base_scene.blend``); :data:`DEFAULT_CAMERA_POSITION` keeps its azimuth.
CLEVR_CAMERA_POSITION = (7.358891487121582, -6.925790786743164, 4.958309173583984)
#: Elevation (degrees above the ground) and distance (world units) from the origin of the default camera.
DEFAULT_ELEVATION_DEG = 30.0
DEFAULT_DISTANCE = 18.6
#: Camera jitter: each coordinate of the camera position moves by U(-j, j) (CLEVR ``--camera_jitter``).
DEFAULT_CAMERA_JITTER = 0.5


def _default_position() -> tuple[float, float, float]:
    azimuth = math.atan2(CLEVR_CAMERA_POSITION[1], CLEVR_CAMERA_POSITION[0])
    elevation = math.radians(DEFAULT_ELEVATION_DEG)
    d = DEFAULT_DISTANCE
    return (d * math.cos(elevation) * math.cos(azimuth), d * math.cos(elevation) * math.sin(azimuth),
            d * math.sin(elevation))


#: Default camera position (world units): about (11.7, -11.0, 9.3).
DEFAULT_CAMERA_POSITION: tuple[float, float, float] = _default_position()

#: The official CLEVR-POC camera (its ``base_scene.blend``; fixed, never jittered by the official code):
#: location (world units), aimed at the origin by a TRACK_TO constraint (no roll), lens 21 mm on a 32 mm
#: sensor with sensor fit AUTO, so fx = fy = 21 / 32 * 320 = 210 px at the official 320 x 320.
OFFICIAL_CAMERA_POSITION: tuple[float, float, float] = (10.0, -6.50764, 5.34367)
OFFICIAL_FOCAL_MM = 21.0
#: The official image size (the official generator's ``--width 320 --height 320``).
OFFICIAL_WIDTH, OFFICIAL_HEIGHT = 320, 320


# ---------------------------------------------------------------------- construction
def intrinsics_for(width: int, height: int, *, focal_mm: float = FOCAL_MM, sensor_mm: float = SENSOR_MM
                   ) -> np.ndarray:
    """K of a Blender camera with ``sensor_fit='AUTO'`` (the sensor spans the larger image side), no shift.

    ``fx = fy = focal_mm / sensor_mm * max(width, height)``, ``cx = width / 2``, ``cy = height / 2``.
    """
    f = focal_mm / sensor_mm * max(width, height)
    return np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0], [0.0, 0.0, 1.0]])


def look_at(position: Sequence[float], target: Sequence[float] = (0.0, 0.0, 0.0), *, width: int = 320,
            height: int = 240, focal_mm: float = FOCAL_MM, sensor_mm: float = SENSOR_MM) -> Camera:
    """A camera at ``position`` looking at ``target`` with the world's ``+z`` up in the image (no roll).

    Raises:
        ValueError: position equals target, or the viewing direction is vertical.
    """
    pos = np.asarray(position, dtype=float)
    forward = np.asarray(target, dtype=float) - pos
    norm = np.linalg.norm(forward)
    if norm == 0:
        raise ValueError("camera position equals its target")
    forward /= norm
    right = np.cross(forward, (0.0, 0.0, 1.0))
    if np.linalg.norm(right) < 1e-9:
        raise ValueError("camera looks straight up or down; the image's up direction is undefined")
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    R = np.stack([right, down, forward])
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = -R @ pos
    K = intrinsics_for(width, height, focal_mm=focal_mm, sensor_mm=sensor_mm)
    return Camera(tuple(map(tuple, K)), tuple(map(tuple, T)), int(width), int(height))


def default_camera(width: int = 320, height: int = 240, *, rng: np.random.Generator | None = None,
                   jitter: float = DEFAULT_CAMERA_JITTER) -> Camera:
    """The CLEVR-POC camera (module doc), jittered by U(-jitter, jitter) per coordinate when ``rng`` is given.

    The framing assumes landscape or square images (``width >= height``).
    """
    position = np.asarray(DEFAULT_CAMERA_POSITION, dtype=float)
    if rng is not None and jitter > 0:
        position = position + rng.uniform(-jitter, jitter, size=3)
    return look_at(position, (0.0, 0.0, 0.0), width=width, height=height)


def official_camera(width: int = OFFICIAL_WIDTH, height: int = OFFICIAL_HEIGHT) -> Camera:
    """The official CLEVR-POC camera (:data:`OFFICIAL_CAMERA_POSITION`, 21 mm lens, 32 mm sensor, fit AUTO).

    The camera of images that come without one (the release's scene JSONs carry no camera matrix).
    ``fx = fy = 21 / 32 * max(width, height)`` px (210 px at 320 px), principal point at the image centre.
    """
    return look_at(OFFICIAL_CAMERA_POSITION, (0.0, 0.0, 0.0), width=width, height=height,
                   focal_mm=OFFICIAL_FOCAL_MM, sensor_mm=SENSOR_MM)


def ours_camera(width: int = 320, height: int = 240) -> Camera:
    """Our own framing (:func:`default_camera` without jitter), the camera of the ``ours`` render style."""
    return default_camera(width, height)


#: Named cameras: preset name -> ``f(width, height) -> Camera`` (no jitter). ``official`` is the default
#: for images without a camera file.
CAMERA_PRESETS: dict[str, Callable[..., Camera]] = {"official": official_camera, "ours": ours_camera}


def camera_preset(name: str, width: int | None = None, height: int | None = None) -> Camera:
    """The camera of preset ``name`` (:data:`CAMERA_PRESETS`) at ``width`` x ``height`` (default: the
    preset's own size: 320 x 320 official, 320 x 240 ours).

    Raises:
        FormatError: unknown preset name.
    """
    if name not in CAMERA_PRESETS:
        raise FormatError(f"unknown camera preset; expected one of {sorted(CAMERA_PRESETS)}", field="camera",
                          value=name)
    return _preset(name, CAMERA_PRESETS[name], None if width is None else int(width),
                   None if height is None else int(height))


@lru_cache(maxsize=64)
def _preset(name: str, make: Callable[..., Camera], width: int | None, height: int | None) -> Camera:
    """:func:`camera_preset`'s camera, built once per preset and size (a :class:`Camera` is immutable;
    issue 27: the dataset generator's visibility check asks for it once per example)."""
    kwargs = {}
    if width is not None:
        kwargs["width"] = width
    if height is not None:
        kwargs["height"] = height
    return make(**kwargs)


# ---------------------------------------------------------------------- projection
def project_points(points: np.ndarray, camera: Camera) -> np.ndarray:
    """Project world points: float array (..., 3) -> (..., 3) of ``(u, v, depth)``.

    Points behind the camera (depth <= 0) get u = v = nan.
    """
    p = np.asarray(points, dtype=float)
    T, K = camera.matrix_arrays
    cam = p @ T[:3, :3].T + T[:3, 3]               # camera.rotation.T, camera.translation
    depth = cam[..., 2]
    out = np.empty(cam.shape)                      # written in place: no np.where/np.stack copies (issue 27)
    with np.errstate(divide="ignore", invalid="ignore"):
        uvw = cam @ K.T
        np.divide(uvw[..., 0], uvw[..., 2], out=out[..., 0])
        np.divide(uvw[..., 1], uvw[..., 2], out=out[..., 1])
    out[..., 2] = depth
    behind = ~(depth > 0)
    if behind.any():
        out[behind, :2] = np.nan
    return out


def project(point: Sequence[float], camera: Camera) -> tuple[float, float, float]:
    """``(u, v, depth)`` of one world point (x, y, z): pixels from the top-left corner, depth in world units.

    Raises:
        ValueError: ``point`` is not 3 numbers, or lies behind the camera.
    """
    p = np.asarray(point, dtype=float)
    if p.shape != (3,):
        raise ValueError(f"a world point is (x, y, z), got {point!r}")
    u, v, depth = project_points(p, camera)
    if not depth > 0:
        raise ValueError(f"point {tuple(p)} is behind the camera (depth {depth:.3f})")
    return float(u), float(v), float(depth)


def pixel_rays(u: np.ndarray, v: np.ndarray, camera: Camera) -> np.ndarray:
    """Unit world-space directions (..., 3) of the rays through image points (u, v) (pixels, any shape)."""
    u = np.asarray(u, dtype=float)
    v = np.asarray(v, dtype=float)
    K = camera.K
    x = (u - K[0, 2]) / K[0, 0]
    y = (v - K[1, 2]) / K[1, 1]
    cam = np.stack([x, y, np.ones_like(x)], axis=-1)
    world = cam @ camera.rotation  # R^T @ d for each row vector
    return world / np.linalg.norm(world, axis=-1, keepdims=True)


def image_to_ground(u: float, v: float, camera: Camera, *, height: float = 0.0) -> tuple[float, float]:
    """World (x, y) where the ray through image point (u, v) meets the plane ``z = height``.

    ``height=0`` is the ground; pass an object's centre height (e.g. its radius) to recover the (x, y) of
    its centre from its ``pixel_coords``. Inverse of :func:`project` for points on that plane.

    Raises:
        ValueError: the ray is parallel to the plane or meets it behind the camera (above the horizon).
    """
    direction = pixel_rays(np.asarray(u), np.asarray(v), camera)
    origin = camera.position
    if abs(direction[2]) < 1e-12:
        raise ValueError(f"the ray through ({u}, {v}) is parallel to the plane z={height}")
    s = (height - origin[2]) / direction[2]
    if s <= 0:
        raise ValueError(f"the ray through ({u}, {v}) meets z={height} behind the camera (above the horizon)")
    hit = origin + s * direction
    return float(hit[0]), float(hit[1])


__all__ = [
    "CAMERA_PRESETS", "CLEVR_CAMERA_POSITION", "Camera", "DEFAULT_CAMERA_JITTER", "DEFAULT_CAMERA_POSITION",
    "DEFAULT_DISTANCE", "DEFAULT_ELEVATION_DEG", "FOCAL_MM", "OFFICIAL_CAMERA_POSITION", "OFFICIAL_FOCAL_MM",
    "OFFICIAL_HEIGHT", "OFFICIAL_WIDTH", "SENSOR_MM", "camera_preset", "default_camera", "image_to_ground",
    "intrinsics_for", "look_at", "official_camera", "ours_camera", "pixel_rays", "project", "project_points",
]
