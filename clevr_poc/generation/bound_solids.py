"""Few-vertex stand-ins for the renderer's meshes in the visibility check's bounds (issue 27).

The cheap bounds of :mod:`clevr_poc.generation.pixel_bounds` need, per object, points *inside* its solid
(their projections' convex hull lies inside the object's silhouette) and points whose convex hull
*contains* the solid (their projections' hull contains the silhouette). The meshes themselves serve as both,
but a sphere has 2,112 vertices and projecting and scanning them was most of a bound. Here each unit mesh
(:func:`clevr_poc.rendering.shapes.unit_mesh`) gets, once per process:

- *inner* points: the mesh vertices that are extreme in one of :data:`DIRECTIONS` (about 100 of them);
- *outer* points: the vertices of the polytope ``{x : d . x <= max_v d . v + 1e-7}`` over the same
  directions (``scipy.spatial.HalfspaceIntersection``), which contains every vertex, hence the solid.

A mesh with at most :data:`EXACT_UP_TO` distinct hull vertices (the cone) uses those vertices for both;
without scipy every mesh uses all its vertices.
Scaling, rotating about z and translating (what places an object) keep inside inside and containing
containing, and the perspective projection of points in front of the camera maps convex hulls to convex
hulls; so the bounds stay bounds, only a little looser (the outer polytope of the unit sphere reaches
about 3 % beyond it). ``tests/test_pixel_bounds.py`` checks the brackets against the ray-cast counts.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np

#: Meshes with at most this many distinct hull vertices use them as inner and outer points.
EXACT_UP_TO = 200
#: How far (unit-mesh units) the outer polytope's planes lie beyond the farthest vertex: far above the
#: rounding of the half-space intersection (about 1e-15), far below a pixel.
OUTER_MARGIN = 1e-7


def _directions() -> np.ndarray:
    """(D, 3) unit vectors: 16 azimuths at 5 elevations (-60..60 degrees) and the 26 directions of
    the cube's faces, edges and corners (tight on the cube and the cylinder's caps)."""
    rings = [(math.cos(a) * math.cos(e), math.sin(a) * math.cos(e), math.sin(e))
             for e in (math.radians(x) for x in (-60.0, -30.0, 0.0, 30.0, 60.0))
             for a in (2.0 * math.pi * k / 16 for k in range(16))]
    cube = [v for v in itertools.product((-1.0, 0.0, 1.0), repeat=3) if any(v)]
    d = np.array(rings + cube)
    return d / np.linalg.norm(d, axis=1, keepdims=True)


#: The support directions of the inner and outer points.
DIRECTIONS = _directions()


@lru_cache(maxsize=32)
def bound_points(shape: str, mesh_set: str = "official") -> tuple[np.ndarray, np.ndarray]:
    """(inner (Vi, 3), outer (Vo, 3)) points of the unit mesh of ``shape`` in ``mesh_set`` (module doc);
    read-only arrays."""
    from clevr_poc.rendering.shapes import unit_mesh

    vertices = unit_mesh(shape, mesh_set).vertices
    try:
        from scipy.spatial import ConvexHull, HalfspaceIntersection
    except ImportError:  # pragma: no cover - scipy comes with the generate/render extras; the mesh itself
        return vertices, vertices
    hull = vertices[np.sort(ConvexHull(vertices).vertices)]
    if len(hull) <= EXACT_UP_TO:
        inner = outer = hull
    else:
        products = vertices @ DIRECTIONS.T                       # (V, D)
        inner = vertices[np.unique(products.argmax(axis=0))]
        halfspaces = np.hstack([DIRECTIONS, -(products.max(axis=0) + OUTER_MARGIN)[:, None]])
        corners = HalfspaceIntersection(halfspaces, vertices.mean(axis=0)).intersections
        outer = corners[np.sort(ConvexHull(corners).vertices)]
    inner, outer = np.array(inner), np.array(outer)
    inner.setflags(write=False)
    outer.setflags(write=False)
    return inner, outer


def scene_bound_points(scene, style: str = "official", *, cone_lift: float = 0.0
                       ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per object of the scene, placed as the renderer places its mesh
    (:func:`clevr_poc.rendering.render.object_placements`): its inner and its outer points
    (:func:`bound_points`), world (V, 3) arrays.

    Raises:
        FormatError: an object without position, or an unknown style.
    """
    from clevr_poc.rendering.render import object_placements
    from clevr_poc.rendering.shapes import transformed_vertices

    inner, outer = [], []
    for shape, mesh_set, scale, rotation, location in object_placements(scene, style, cone_lift=cone_lift):
        points_in, points_out = bound_points(shape, mesh_set)
        inner.append(transformed_vertices(points_in, scale, rotation, location)[0])
        outer.append(transformed_vertices(points_out, scale, rotation, location)[0])
    return inner, outer


@lru_cache(maxsize=32)
def _stacked_points(shape: str, mesh_set: str) -> tuple[np.ndarray, int]:
    """:func:`bound_points` of a shape as one (Vi + Vo, 3) array, inner points first, and Vi."""
    inner, outer = bound_points(shape, mesh_set)
    stacked = np.concatenate([inner, outer])
    stacked.setflags(write=False)
    return stacked, len(inner)


def scene_bound_array(scene, style: str = "official", *, cone_lift: float = 0.0
                      ) -> tuple[np.ndarray, list[int], list[int]]:
    """:func:`scene_bound_points` as one world (V, 3) array, object by object (each object's inner points,
    then its outer points), with the inner and outer point counts per object: one transform per object
    instead of two, the very floats of :func:`scene_bound_points` (issue 27; tested equal).

    :func:`clevr_poc.rendering.shapes.transformed_vertices`' operations: the scaled points come from a cache per
    (shape, mesh set, scale) (:func:`_scaled_points`, the same product), each object's are rotated by its own
    matrix product and the translations are added to all points at once (the same sums).

    The array is the transpose of a C-ordered (3, V) one (``points.T`` is contiguous): each rotation is
    ``Rz @ scaled.T``, the same three-term dot products as ``scaled @ Rz.T`` (bit for bit with the OpenBLAS
    here: all 3,447 recorded layouts; a BLAS that rounded the two layouts differently would move a point by
    about 1e-16, which the bounds' 1e-6 px margins absorb: no decision can change), and
    :func:`clevr_poc.generation.pixel_bounds.stacked_silhouettes` projects the rows of ``points.T``. Issue 27,
    sixth round: numpy's (V, 3) @ (3, 3) products, and any (V, 3) op broadcast over the last axis of 3, run
    an inner loop of three per point, several times slower than the same operations on (3, V) rows (42 us
    against 64 per layout).

    Raises:
        FormatError: an object without position, or an unknown style.
    """
    from clevr_poc.rendering.render import object_placements
    from clevr_poc.rendering.shapes import rotation_z

    parts, inner_counts, outer_counts, locations = [], [], [], []
    for shape, mesh_set, scale, rotation, location in object_placements(scene, style, cone_lift=cone_lift):
        scaled_t, inner = _scaled_columns(shape, mesh_set, scale)
        parts.append(rotation_z(rotation) @ scaled_t)
        inner_counts.append(inner)
        outer_counts.append(scaled_t.shape[1] - inner)
        locations.append(location)
    if not parts:
        return np.zeros((0, 3)), [], []
    columns = np.concatenate(parts, axis=1)                                       # (3, V)
    columns += np.repeat(np.array(locations, dtype=float).T, [part.shape[1] for part in parts], axis=1)
    return columns.T, inner_counts, outer_counts


@lru_cache(maxsize=64)
def _scaled_points(shape: str, mesh_set: str, scale: float) -> tuple[np.ndarray, int]:
    """``stacked * scale`` of :func:`_stacked_points` (read-only) and the inner point count."""
    stacked, inner = _stacked_points(shape, mesh_set)
    scaled = stacked * scale
    scaled.setflags(write=False)
    return scaled, inner


@lru_cache(maxsize=64)
def _scaled_columns(shape: str, mesh_set: str, scale: float) -> tuple[np.ndarray, int]:
    """:func:`_scaled_points` as a C-ordered (3, V) array (read-only; the same floats) and the inner point count."""
    scaled, inner = _scaled_points(shape, mesh_set, scale)
    columns = np.ascontiguousarray(scaled.T)
    columns.setflags(write=False)
    return columns, inner
