"""From a detected box to a position on the ground, a region and relationships (numpy only, no torch).

The camera of every render is stored in its scene JSON (:class:`clevr_poc.camera.Camera`,
OpenCV axes). An object rests on the ground plane ``z = 0``, so the bottom-centre of its box — the
image point where it touches the ground, for an unoccluded object — is back-projected onto that plane
with :func:`clevr_poc.camera.image_to_ground`. That point lies on the object's front edge (as
seen from the camera); the object's centre is about one radius further along the camera's horizontal
viewing direction. The attribute network regresses that remaining offset (NS-VQA regresses 3-D
positions too); :func:`object_centre` adds it.

Regions are the official boxes of :data:`clevr_poc.domain.REGION_BOXES`; a point in the 0 < x < 0.5
strip between them (or outside them) goes to the nearest region (:func:`nearest_region`).
Relationships use the official convention (:func:`clevr_poc.scene.compute_relationships`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.camera import Camera, image_to_ground

#: The x coordinate halfway across the strip 0 < x < 0.5 that belongs to no region: points left of it
#: are nearest to regions 0/2, right of it to regions 1/3 (official region boxes).
REGION_SPLIT_X = 0.25
#: The y coordinate between front (2, 3) and back (0, 1) regions.
REGION_SPLIT_Y = 0.0

Box = Sequence[float]  # (x1, y1, x2, y2) pixels, x2 > x1, y2 > y1


def contact_point(box: Box) -> tuple[float, float]:
    """Image point ``(u, v)`` (pixels) where an object with box ``(x1, y1, x2, y2)`` touches the ground:
    the bottom-centre of the box."""
    x1, _, x2, y2 = (float(c) for c in box)
    return (x1 + x2) / 2.0, y2


def ground_point(box: Box, camera: Camera) -> tuple[float, float]:
    """World ``(x, y)`` of the box's :func:`contact_point` on the ground plane (world units).

    Raises:
        ValueError: the contact point is above the horizon (its ray never meets the ground).
    """
    u, v = contact_point(box)
    return image_to_ground(u, v, camera)


def ground_frame(camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Unit 2-vectors on the ground: the camera's viewing direction projected onto the ground
    (``forward``) and the image's right direction (``right``), float64 (2,) each.

    Raises:
        ValueError: the camera looks straight down (no horizontal viewing direction).
    """
    rotation = camera.rotation
    forward = rotation[2, :2].copy()
    right = rotation[0, :2].copy()
    norm = np.linalg.norm(forward)
    if norm < 1e-9:
        raise ValueError("the camera looks straight down; its ground frame is undefined")
    return forward / norm, right / max(np.linalg.norm(right), 1e-12)


def offset_to_world(offset: Sequence[float], camera: Camera) -> tuple[float, float]:
    """World ``(dx, dy)`` of an offset given as (along ``forward``, along ``right``) of :func:`ground_frame`."""
    forward, right = ground_frame(camera)
    d = float(offset[0]) * forward + float(offset[1]) * right
    return float(d[0]), float(d[1])


def world_to_offset(delta: Sequence[float], camera: Camera) -> tuple[float, float]:
    """Inverse of :func:`offset_to_world`: world ``(dx, dy)`` -> (along forward, along right)."""
    forward, right = ground_frame(camera)
    d = np.asarray(delta, dtype=float)[:2]
    return float(d @ forward), float(d @ right)


def object_centre(box: Box, camera: Camera, offset: Sequence[float] = (0.0, 0.0)) -> tuple[float, float]:
    """World ``(x, y)`` of an object's centre: :func:`ground_point` plus ``offset`` (forward, right)."""
    gx, gy = ground_point(box, camera)
    dx, dy = offset_to_world(offset, camera)
    return gx + dx, gy + dy


def box_features(box: Box, camera: Camera) -> np.ndarray:
    """The 9 geometric inputs of the attribute network, float32 (9,):

    ``[centre u / W, centre v / H, width / W, height / H, ground x / 5, ground y / 5, depth / 20,
    width * depth / fx, height * depth / fy]`` where ground (x, y) is :func:`ground_point` and depth the
    camera-space z of that point (world units); the last two are the box's size at that depth in world
    units (an object's size on the ground is ambiguous from pixels alone: large and far looks like
    small and near). A contact point above the horizon gives zeros for the ground features.
    """
    x1, y1, x2, y2 = (float(c) for c in box)
    W, H = camera.width, camera.height
    K = camera.K
    try:
        gx, gy = ground_point(box, camera)
        depth = float((camera.rotation @ np.array([gx, gy, 0.0]) + camera.translation)[2])
    except ValueError:
        gx = gy = depth = 0.0
    w, h = x2 - x1, y2 - y1
    return np.array([(x1 + x2) / 2 / W, (y1 + y2) / 2 / H, w / W, h / H, gx / 5.0, gy / 5.0, depth / 20.0,
                     w * depth / K[0, 0], h * depth / K[1, 1]], dtype=np.float32)


def nearest_region(x: float, y: float) -> int:
    """The region whose box contains (x, y), else the one nearest to it (Euclidean distance to the box;
    points in the 0 < x < 0.5 strip go to the side they are closer to)."""
    region = domain.region_of_point(x, y)
    if region is not None:
        return region
    best, best_distance = 0, math.inf
    for r, b in domain.REGION_BOXES.items():
        dx = max(b.x_min - x, 0.0, x - b.x_max)
        dy = max(b.y_min - y, 0.0, y - b.y_max)
        distance = math.hypot(dx, dy)
        if distance < best_distance:
            best, best_distance = r, distance
    return best


def _normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def region_probabilities(x: float, y: float, sigma: float) -> np.ndarray:
    """Probability of each region (float64 (4,), index = region id) for a position estimate (x, y) with
    isotropic Gaussian error of standard deviation ``sigma`` (world units), each outcome mapped to its
    :func:`nearest_region`: left (0, 2) iff x < :data:`REGION_SPLIT_X`, back (0, 1) iff y >= 0.

    ``sigma = 0`` gives the one-hot of :func:`nearest_region`.
    """
    if sigma <= 0:
        out = np.zeros(4)
        out[nearest_region(x, y)] = 1.0
        return out
    p_left = _normal_cdf((REGION_SPLIT_X - x) / sigma)
    p_back = 1.0 - _normal_cdf((REGION_SPLIT_Y - y) / sigma)
    return np.array([p_left * p_back, (1 - p_left) * p_back, p_left * (1 - p_back), (1 - p_left) * (1 - p_back)])
