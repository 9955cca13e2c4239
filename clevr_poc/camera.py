"""The pinhole camera an image was taken with (intrinsics, pose, size) and its scene-JSON form.

numpy only, so every stage can hold one: rendering makes it (:mod:`clevr_poc.rendering.geometry`:
projection, presets), a scene carries it (:class:`clevr_poc.scene_metadata.ImageInfo`), perception turns
pixels back into ground positions with it (:mod:`clevr_poc.perception.box_geometry`).

Conventions: OpenCV camera axes (``x`` right, ``y`` down, ``z`` forward), world = Blender world (ground
``z = 0``), pixels from the image's top-left; see :mod:`clevr_poc.rendering.geometry`. JSON (the scene's
``"camera"``, written by ``python -m clevr_poc render``)::

    {"K": 3x3, "world_to_camera": 4x4, "image_size": [width, height], "convention": "opencv"}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

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
    def from_json(cls, data: Any, *, source: object = None) -> "Camera":
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


__all__ = ["Camera"]
