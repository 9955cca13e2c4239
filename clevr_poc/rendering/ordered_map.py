"""The visibility check's index map of a few objects, with most shared pixels settled without a ray (issue 27).

:func:`clevr_poc.rendering.masks.instance_index_map` casts a ray against every camera-facing face plane of
each object that may be the nearest at a pixel several objects cover (a few thousand planes for a sphere).
:func:`ordered_index_map` gives the same map (every pixel the same label; tests/test_visibility.py) and
casts those rays only where the answer is not known from the objects' positions:

- Two objects that a vertical plane separates by more than :data:`GAP` world units (:func:`_pair_order`):
  a ray from the camera crosses that plane once, so along every ray that meets both, the object on the
  camera's side comes first; the pair's order is one for all pixels.
- A pixel centre more than :data:`INSIDE_MARGIN` px inside the convex hull of an object's projected
  vertices (the polygon its mask fills) sees a ray that meets the solid (the hull is the solid's exact
  projection). There the renderer's entry distance is the solid's to within the rounding (about
  1e-12 world units), and two such distances of separated objects differ by the gap (> 1e-6 / ray length):
  the ray cast would pick the object the pair order puts first.

A shared pixel where every pair of its candidates is ordered and every candidate holds the pixel that far
inside gets the candidate that comes first against all others; the rest (pixels on a hull's edge, objects
that no such plane separates: CLEVR's full-size cubes reach beyond their disc) are ray-cast with the very float
operations of ``instance_index_map``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from clevr_poc.camera import Camera, pixel_rays
from clevr_poc.rendering.masks import (_DEPTH_MARGIN, _clip, _depth_ranges, _hull_mask, _next, first_cover,
                                      nearest_far_depth, projected_hull)
from clevr_poc.rendering.shapes import Mesh

#: World units a vertical plane must leave between two objects for their order to be taken from their positions.
GAP = 1e-6
#: How far inside an object's hull (pixels) a pixel centre must be for its ray to count as meeting the solid.
INSIDE_MARGIN = 1e-6


def hull_footprints(meshes: Sequence[Mesh], camera: Camera, window: tuple[int, int, int, int] | None = None
                    ) -> list:
    """Per mesh: ``((i0, i1, j0, j1), inside, hull)``: :func:`clevr_poc.rendering.masks.mesh_footprints`' box and
    mask (the same computation) and the hull polygon (M, 2) they come from; None when it misses the image.

    ``window`` ``(i0, i1, j0, j1)``: the box and mask of the footprint's part inside these columns and rows
    only (image coordinates; None when nothing of it is there): the same pixels, as the mask's test is per
    pixel (``_hull_mask`` equals its reference on any grid).

    Raises:
        ValueError: a mesh reaches behind the camera.
    """
    out = []
    for mesh in meshes:
        hull, (i0, i1, j0, j1) = projected_hull(mesh, camera)
        if window is not None:
            i0, i1, j0, j1 = max(i0, window[0]), min(i1, window[1]), max(j0, window[2]), min(j1, window[3])
        if i0 >= i1 or j0 >= j1 or len(hull) < 3:
            out.append(None)
            continue
        out.append(((i0, i1, j0, j1), _hull_mask(hull, np.arange(i0, i1) + 0.5, np.arange(j0, j1) + 0.5), hull))
    return out


def ordered_index_map(meshes: Sequence[Mesh], camera: Camera, footprints: Sequence,
                      window: tuple[int, int, int, int]) -> np.ndarray:
    """``instance_index_map(meshes, camera, [f[:2] for f in footprints], window)``: the (j1 - j0, i1 - i0)
    block of object indices (or :data:`~clevr_poc.rendering.masks.BACKGROUND`), rays cast only where the
    module's pair order cannot settle a pixel.

    Args:
        meshes: convex world meshes in front of the camera, index = label.
        camera: the render camera.
        footprints: :func:`hull_footprints` of the meshes.
        window: ``(i0, i1, j0, j1)`` columns and rows of the image.
    """
    wi0, wi1, wj0, wj1 = window
    H, W = wj1 - wj0, wi1 - wi0
    clipped = [None if f is None else _clip(f[:2], wi0, wi1, wj0, wj1) for f in footprints]
    index, cover = first_cover(clipped, H, W)
    if not (cover > 1).any():
        return index
    # the candidates of instance_index_map: not certainly behind another object covering the pixel
    near, far = _depth_ranges(meshes, camera)
    nearest_far = nearest_far_depth(clipped, far, H, W)
    candidate: dict[int, np.ndarray] = {}                 # k -> (H, W) candidate mask
    candidates = np.zeros((H, W), dtype=np.int32)
    for k, footprint in enumerate(clipped):
        if footprint is None:
            continue
        (i0, i1, j0, j1), inside = footprint
        mask = np.zeros((H, W), dtype=bool)
        mask[j0:j1, i0:i1] = inside & (near[k] <= nearest_far[j0:j1, i0:i1] + _DEPTH_MARGIN)
        candidate[k] = mask
        candidates += mask
    for k, mask in candidate.items():                     # pixels with one candidate (among several hulls)
        index[mask & (candidates == 1) & (cover > 1)] = k
    shared = candidates > 1
    if not shared.any():
        return index
    # settle the shared pixels by the pair order where it holds
    keys = sorted(candidate)
    order = _pair_order(meshes, camera, keys)
    unsettled = np.zeros((H, W), dtype=bool)
    for position, k in enumerate(keys):
        here = candidate[k] & shared
        if not here.any():
            continue
        rows, cols = here.nonzero()
        far_inside = _inside(footprints[k][2], cols + (wi0 + 0.5), rows + (wj0 + 0.5))
        unsettled[rows[~far_inside], cols[~far_inside]] = True
        for j in keys[position + 1:]:
            if order.get((k, j)) is None:
                unsettled |= here & candidate[j]
    settled = shared & ~unsettled
    if settled.any():                                     # the candidate that comes before every other one
        for k in keys:
            first = settled & candidate[k]
            for j in keys:
                if j != k and order.get((k, j) if k < j else (j, k)) != (1 if k < j else -1):
                    first &= ~candidate[j]
            index[first] = k
    if unsettled.any():
        _cast(meshes, camera, footprints, candidate, unsettled & shared, index, wi0, wj0)
    return index


def _inside(hull: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether each point (u, v) lies more than :data:`INSIDE_MARGIN` px inside the counter-clockwise convex
    ``hull`` (M, 2) (distance to every edge's line)."""
    a = hull
    e = _next(hull) - a
    length = np.hypot(e[:, 0], e[:, 1])
    cross = e[:, 0] * (v[:, None] - a[:, 1]) - e[:, 1] * (u[:, None] - a[:, 0])      # (P, M), > 0 inside
    return (cross > INSIDE_MARGIN * length).all(axis=1)


def _pair_order(meshes: Sequence[Mesh], camera: Camera, keys: list[int]) -> dict[tuple[int, int], int]:
    """For each pair k < j of ``keys`` that a vertical plane separates by more than :data:`GAP`: +1 when k
    comes first along every ray that meets both, -1 when j does (the camera's side of that plane); pairs left
    out are not ordered.

    The plane's normal is the horizontal direction n from the middle of k's vertices' x/y box to j's; k's
    vertices reach at most ``a = max n . v``, j's at least ``b = min n . v`` (the solids are the vertices'
    convex hulls), and the plane is ``n . x = (a + b) / 2``. A pair is ordered when ``b - a > GAP`` and the
    camera lies more than 1e-9 from the plane (far above the rounding of these dot products, about 1e-15)."""
    xy = {k: meshes[k].vertices[:, :2] for k in keys}
    # per column (reducing an (N, 2) view along axis 0 runs an inner loop of 2 per vertex: ten times slower)
    centres = {k: (np.array((u.min(), v.min())) + np.array((u.max(), v.max()))) / 2
               for k, (u, v) in ((k, (xy[k][:, 0], xy[k][:, 1])) for k in keys)}
    camera_xy = np.asarray(camera.position[:2], dtype=float)
    order = {}
    for position, k in enumerate(keys):
        for j in keys[position + 1:]:
            d = centres[j] - centres[k]
            length = float(np.hypot(d[0], d[1]))
            if not length > 0:
                continue
            n = d / length
            a, b = float((xy[k] @ n).max()), float((xy[j] @ n).min())
            if not b - a > GAP + 2e-9:
                continue
            side = float(camera_xy @ n) - (a + b) / 2             # < 0: the camera is on k's side
            if abs(side) > 1e-9:
                order[(k, j)] = 1 if side < 0 else -1
    return order


def _cast(meshes, camera, footprints, candidate: dict, pixels: np.ndarray, index: np.ndarray, wi0: int, wj0: int
          ) -> None:
    """Label ``pixels`` (window mask) as instance_index_map's ray cast does: each candidate in index order
    takes the pixels where its entry distance is below the best so far (the same float operations)."""
    best = np.full(index.shape, np.inf)
    origin = camera.position
    for k in sorted(candidate):
        shared = candidate[k] & pixels
        if not shared.any():
            continue
        rows, cols = shared.nonzero()
        rays = pixel_rays(cols + wi0 + 0.5, rows + wj0 + 0.5, camera)
        normals, offsets = meshes[k].planes()
        num = offsets - normals @ origin
        facing = num < 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = num[facing] / (rays @ normals[facing].T)
        dist = np.max(np.where(t > 0, t, -np.inf), axis=1)
        dist[~np.isfinite(dist)] = np.inf
        closer = dist < best[rows, cols]
        best[rows[closer], cols[closer]] = dist[closer]
        index[rows[closer], cols[closer]] = k
