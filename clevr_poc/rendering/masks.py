"""Per-object instance masks: an exact object-ID image by ray casting, COCO RLE, bounding boxes.

numpy only. :func:`instance_index_map` casts one ray through every pixel centre against the very meshes
Blender renders (:mod:`clevr_poc.rendering.shapes`): each object is a convex solid, so a pixel centre sees
it iff it lies in the convex hull of its projected vertices, and where several objects cover a pixel the
one whose face planes the ray enters first wins. The result equals the renderer's object-index pass up to
where a pixel's sample lands inside the pixel (tests/test_rendering.py compares them); it needs no
Blender, so scene generators can check visibility before anything is rendered.

``footprint_pixels`` is the same without occluders (to tell "occluded" from "too small").

RLE: the COCO format (``pycocotools.mask``): the mask is read in column-major (Fortran) order, runs
alternate 0s and 1s starting with 0s; ``counts`` is the compressed string (``rleToString``), the form
COCO annotations and ``pycocotools.mask.decode`` use. ``{"size": [height, width], "counts": "..."}``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from clevr_poc.errors import FormatError
from clevr_poc.camera import Camera, pixel_rays, project_points
from clevr_poc.rendering.shapes import Mesh

#: Background value of an index map.
BACKGROUND = -1


# ---------------------------------------------------------------------- ray casting
def _next(a: np.ndarray) -> np.ndarray:
    """``np.roll(a, -1, axis=0)`` (the next vertex of each polygon vertex), without np.roll's overhead
    (issue 27: tens of microseconds per call on these small arrays)."""
    return np.concatenate((a[1:], a[:1]))


def _previous(a: np.ndarray) -> np.ndarray:
    """``np.roll(a, 1, axis=0)`` (the previous vertex), as :func:`_next`."""
    return np.concatenate((a[-1:], a[:-1]))


def instance_index_map(meshes: Sequence[Mesh], camera: Camera, footprints: Sequence | None = None,
                       window: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The object seen at every pixel centre: int32 (height, width), object index or :data:`BACKGROUND`.

    A pixel centre sees a convex solid iff it lies in the convex hull of the solid's projected vertices
    (perspective projection keeps convexity); where several hulls cover a pixel, the ray's entry distance
    into each solid (the largest ``t`` over its camera-facing face planes) decides.

    Args:
        meshes: convex world-space meshes in front of the camera, index = object index.
        camera: the camera (pixel centres at (i + 0.5, j + 0.5)).
        footprints: the meshes' :func:`mesh_footprints`, when the caller has them already.
        window: ``(i0, i1, j0, j1)``: only these columns and rows; the result is then the (j1 - j0,
            i1 - i0) block of the whole map (every pixel's label depends on that pixel alone; issue 27:
            the visibility check needs a few objects' pixels, not the image's).
    """
    if footprints is None:
        footprints = mesh_footprints(meshes, camera)
    wi0, wi1, wj0, wj1 = (0, camera.width, 0, camera.height) if window is None else window
    H, W = wj1 - wj0, wi1 - wi0
    if window is not None:  # the footprints' parts inside the window, in its coordinates
        footprints = [_clip(footprint, wi0, wi1, wj0, wj1) for footprint in footprints]
    index, cover = first_cover(footprints, H, W)
    if not (cover > 1).any():
        return index
    # Where several hulls meet, an object whose nearest vertex lies farther than the farthest vertex of
    # another object covering the pixel cannot be seen there (a ray enters a convex solid within its
    # vertices' depth range, and along one ray depth is proportional to distance): only the remaining
    # candidates are ray-cast, and a pixel left with one candidate is that object's (issue 27: most
    # overlaps are an object behind another, so most shared pixels need no ray).
    near, far = _depth_ranges(meshes, camera)
    nearest_far = nearest_far_depth(footprints, far, H, W)
    candidate_masks: list = []
    candidates = np.zeros((H, W), dtype=np.int32)
    for k, footprint in enumerate(footprints):
        if footprint is None:
            candidate_masks.append(None)
            continue
        (i0, i1, j0, j1), inside = footprint
        mask = inside & (near[k] <= nearest_far[j0:j1, i0:i1] + _DEPTH_MARGIN)
        candidate_masks.append(mask)
        candidates[j0:j1, i0:i1] += mask
    best = np.full((H, W), np.inf)
    origin = camera.position
    for k, (mesh, footprint, mask) in enumerate(zip(meshes, footprints, candidate_masks)):
        if footprint is None:
            continue
        (i0, i1, j0, j1), _ = footprint
        count = candidates[j0:j1, i0:i1]
        only = mask & (count == 1) & (cover[j0:j1, i0:i1] > 1)
        index[j0:j1, i0:i1][only] = k
        shared = mask & (count > 1)
        if not shared.any():
            continue
        rows, cols = np.nonzero(shared)
        rays = pixel_rays(cols + (i0 + wi0) + 0.5, rows + (j0 + wj0) + 0.5, camera)
        normals, offsets = mesh.planes()
        num = offsets - normals @ origin
        facing = num < 0                                    # planes the camera is outside of
        with np.errstate(divide="ignore", invalid="ignore"):
            t = num[facing] / (rays @ normals[facing].T)    # (P, F'), > 0 where the ray enters
        dist = np.max(np.where(t > 0, t, -np.inf), axis=1)
        dist[~np.isfinite(dist)] = np.inf
        r, c = rows + j0, cols + i0
        closer = dist < best[r, c]
        best[r[closer], c[closer]] = dist[closer]
        index[r[closer], c[closer]] = k
    return index


def _clip(footprint, i0: int, i1: int, j0: int, j1: int):
    """A :func:`mesh_footprints` entry cut to the window (i0, i1, j0, j1), in the window's pixel
    coordinates; None when nothing of it is inside."""
    if footprint is None:
        return None
    (a0, a1, b0, b1), inside = footprint
    c0, c1, d0, d1 = max(a0, i0), min(a1, i1), max(b0, j0), min(b1, j1)
    if c0 >= c1 or d0 >= d1:
        return None
    return (c0 - i0, c1 - i0, d0 - j0, d1 - j0), inside[d0 - b0:d1 - b0, c0 - a0:c1 - a0]


#: Depth margin (world units) of the candidate test of :func:`instance_index_map`: far above the rounding
#: of the ray distances (about 1e-14 world units at CLEVR's 5-20 units from the camera).
_DEPTH_MARGIN = 1e-6


def first_cover(footprints: Sequence, H: int, W: int) -> tuple[np.ndarray, np.ndarray]:
    """``(index, cover)`` of footprints ``((i0, i1, j0, j1), inside)`` (None: off the image) on an (H, W)
    grid: the first footprint covering each pixel (``BACKGROUND`` where none), int32 (H, W), and how many
    cover it, int32 (H, W). Shared by :func:`instance_index_map` and
    :func:`clevr_poc.rendering.ordered_map.ordered_index_map`."""
    index = np.full((H, W), BACKGROUND, dtype=np.int32)
    cover = np.zeros((H, W), dtype=np.int32)
    for k, footprint in enumerate(footprints):
        if footprint is None:
            continue
        (i0, i1, j0, j1), inside = footprint[:2]
        cover[j0:j1, i0:i1] += inside
        first = index[j0:j1, i0:i1]
        first[inside & (first == BACKGROUND)] = k
    return index, cover


def nearest_far_depth(footprints: Sequence, far: np.ndarray, H: int, W: int) -> np.ndarray:
    """Per pixel of the (H, W) grid, the smallest far depth ``far[k]`` (world units along the view axis) of
    the footprints covering it, ``inf`` where none: an object whose near depth lies beyond it cannot be
    seen there. float64 (H, W)."""
    nearest_far = np.full((H, W), np.inf)
    for k, footprint in enumerate(footprints):
        if footprint is not None:
            (i0, i1, j0, j1), inside = footprint[:2]
            box = nearest_far[j0:j1, i0:i1]
            box[inside] = np.minimum(box[inside], far[k])
    return nearest_far


def _depth_ranges(meshes: Sequence[Mesh], camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest camera depth (world units) of each mesh's vertices, float64 (M,) each."""
    near = np.empty(len(meshes))
    far = np.empty(len(meshes))
    axis, offset = camera.rotation[2], camera.translation[2]
    for k, mesh in enumerate(meshes):
        depth = mesh.vertices @ axis + offset
        near[k], far[k] = depth.min(), depth.max()
    return near, far


def mesh_footprints(meshes: Sequence[Mesh], camera: Camera) -> list:
    """Per mesh: ``((i0, i1, j0, j1), inside)`` (pixel box and the pixel centres inside its projected
    convex hull), or None when it misses the image."""
    return [_footprint(mesh, camera) for mesh in meshes]


def footprint_pixels(mesh: Mesh, camera: Camera) -> int:
    """Pixel centres of the image that the mesh would cover if nothing occluded it."""
    footprint = _footprint(mesh, camera)
    return 0 if footprint is None else int(footprint[1].sum())


def _convex_hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise (in (u, v) axes) convex hull of 2-D points, (M, 2), no collinear vertices.

    scipy's Qhull when scipy is installed (it is, with the ``generate`` and ``render`` extras), else
    Andrew's monotone chain; both give the same polygon (tested). Points that cannot be hull vertices
    are dropped first (:func:`_drop_interior_many` for a mesh's many vertices, else :func:`_drop_interior`):
    the polygon is that of all points."""
    pts = np.asarray(points).round(9)
    many = len(pts) > _PREFILTER_MIN_POINTS
    if many:  # a mesh's projection: most vertices are inside (issue 27)
        pts = _drop_interior_many(pts)
    pts = _unique_rows(pts)  # sorted by u, then v
    if len(pts) < 3:
        return pts
    if not many or _qhull is None:
        pts = _drop_interior(pts)
    if len(pts) >= 3 and _qhull is not None:
        try:
            indices = _qhull_vertices(pts)
        except Exception:  # degenerate (all points collinear): the monotone chain handles it
            pass
        else:
            vertices = pts[indices]  # counter-clockwise for 2-D input
            start = int(np.lexsort((vertices[:, 1], vertices[:, 0]))[0])
            return np.concatenate((vertices[start:], vertices[:start]))
    return _monotone_chain(pts)


def _unique_rows(pts: np.ndarray) -> np.ndarray:
    """``np.unique(pts, axis=0)`` of (N, 2) floats (rows sorted by u, then v; equal rows once), a few
    times faster on small inputs."""
    if len(pts) < 2:
        return pts.copy()
    ordered = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=keep[1:])
    return ordered[keep]


def _monotone_chain(pts: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain over points sorted by (u, v); counter-clockwise, no collinear vertices."""
    if len(pts) < 3:
        return pts

    def half(seq: list) -> list:  # plain floats: numpy scalars make this loop ~10x slower
        out: list = []
        for p in seq:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (p[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])) <= 0:
                out.pop()
            out.append(p)
        return out

    as_list = pts.tolist()
    lower, upper = half(as_list), half(as_list[::-1])
    return np.array(lower[:-1] + upper[:-1], dtype=pts.dtype)


try:  # a C implementation of the hull: the monotone chain in Python was most of a visibility check
    from scipy.spatial import ConvexHull as _qhull
except ImportError:  # pragma: no cover - scipy comes with the generate/render extras
    _qhull = None
try:  # the Qhull object ConvexHull wraps (scipy's private API; ConvexHull itself where it is missing)
    from scipy.spatial._qhull import _Qhull
except ImportError:  # pragma: no cover
    _Qhull = None


def _qhull_vertices(pts: np.ndarray) -> np.ndarray:
    """``scipy.spatial.ConvexHull(pts).vertices`` of 2-D points (counter-clockwise indices), from the Qhull run
    ConvexHull makes (the same options: ``"i"`` mode, ``Qt``), without extracting the simplices, neighbours,
    equations, volume and area it does not need here (issue 27: a quarter of a hull's time; tested equal).

    Raises:
        scipy.spatial.QhullError: degenerate input, as ConvexHull."""
    if _Qhull is None:  # pragma: no cover
        return _qhull(pts).vertices
    qhull = _Qhull(b"i", np.ascontiguousarray(pts, dtype=np.double), b"", required_options=b"Qt")
    try:
        qhull.triangulate()  # what ConvexHull does before reading the extremes
        return qhull.get_extremes_2d()
    finally:
        qhull.close()


def _lean_qhull_works() -> bool:
    """Whether :func:`_qhull_vertices`' use of scipy's private ``_Qhull`` gives ``ConvexHull``'s vertices
    on a small probe (a scipy release that changed it falls back to ``ConvexHull``, never a wrong hull)."""
    probe = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]])
    try:
        return bool(np.array_equal(_qhull_vertices(probe), _qhull(probe).vertices))
    except Exception:
        return False


if _Qhull is not None and not _lean_qhull_works():  # pragma: no cover - depends on the scipy release
    _Qhull = None


def _drop_interior(pts: np.ndarray) -> np.ndarray:
    """Akl-Toussaint heuristic: drop the points strictly inside the polygon of the extreme points in
    the u, v, u+v and u-v directions (they cannot be hull vertices); order is kept. The hull of the
    rest is the hull of all points, and the monotone chain over fewer points is much faster (meshes
    of spheres and cylinders have hundreds of vertices, their hulls a few dozen)."""
    u, v = pts[:, 0], pts[:, 1]
    keys = (u, v, u + v, u - v)
    extreme = sorted({int(k.argmin()) for k in keys} | {int(k.argmax()) for k in keys})
    if len(extreme) < 3:
        return pts
    poly = pts[extreme]
    centre = poly.mean(axis=0)
    order = np.argsort(np.arctan2(poly[:, 1] - centre[1], poly[:, 0] - centre[0]))
    a = poly[order]
    b = _next(a)
    cross = ((b[:, 0] - a[:, 0])[None, :] * (v[:, None] - a[:, 1][None, :])
             - (b[:, 1] - a[:, 1])[None, :] * (u[:, None] - a[:, 0][None, :]))
    strictly_inside = np.all(cross > 1e-9, axis=1)
    return pts[~strictly_inside]


#: Points above which :func:`_convex_hull` first drops the points inside the polygon of the extreme points
#: in :data:`_PREFILTER_DIRECTIONS` directions (:func:`_drop_interior_many`).
_PREFILTER_MIN_POINTS = 64
_PREFILTER_ANGLES = np.arange(32) * (2 * np.pi / 32)
#: (K, 2) unit vectors, counter-clockwise in (u, v) axes (products as (K, N) rows: numpy's argmax along
#: the rows of a (N, K) array is 20x slower).
_PREFILTER_DIRECTIONS_T = np.stack([np.cos(_PREFILTER_ANGLES), np.sin(_PREFILTER_ANGLES)], axis=1)  # (K, 2)


def _drop_interior_many(pts: np.ndarray) -> np.ndarray:
    """:func:`_drop_interior` with the extreme points in 32 directions instead of 8, on unsorted points
    (duplicates allowed): a point more than 1e-7 px inside the polygon of the points that are extreme in
    some direction cannot be a hull vertex, so the hull of the rest is the hull of all points. For a
    sphere's 2,112 projected vertices about 10 % remain (8 directions: 35 %), so deduplication and the
    hull run on far fewer points (issue 27: the hulls were most of the visibility check's exact path)."""
    points_t = pts.T                                                   # (2, N): rows of (K, N) products
    poly = pts[(_PREFILTER_DIRECTIONS_T @ points_t).argmax(axis=1)]    # by direction: counter-clockwise
    poly = poly[(poly != _previous(poly)).any(axis=1)]     # a point extreme in several once
    if len(poly) < 3:
        return pts
    edge = _next(poly) - poly
    length = np.hypot(edge[:, 0], edge[:, 1])
    # inward unit normals (-e_v, e_u) / |e| of the counter-clockwise edges: inside <=> n . (p - a) > 0
    normals = np.stack([-edge[:, 1], edge[:, 0]], axis=1) / length[:, None]    # (E, 2)
    offsets = np.einsum("ij,ij->i", normals, poly) + _PREFILTER_MARGIN          # n . a + margin, (E,)
    return pts[~(normals @ points_t > offsets[:, None]).all(axis=0)]


#: How far inside (pixels) :func:`_drop_interior_many` wants a point before dropping it: far above the
#: rounding of its products (about 1e-13 px at 320 px).
_PREFILTER_MARGIN = 1e-7


def projected_hull(mesh: Mesh, camera: Camera) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The convex hull (M, 2) of the mesh's projected vertices (pixels) and its pixel box ``(i0, i1, j0, j1)``
    clipped to the image (empty when ``i0 >= i1`` or ``j0 >= j1``): what :func:`_footprint` and
    :func:`clevr_poc.rendering.ordered_map.hull_footprints` start from.

    Raises:
        ValueError: the mesh reaches behind the camera.
    """
    uvd = project_points(mesh.vertices, camera)
    if (uvd[:, 2] <= 0).any():
        raise ValueError("an object reaches behind the camera; cannot compute its mask")
    hull = _convex_hull(uvd[:, :2])
    i0 = max(int(np.floor(hull[:, 0].min())), 0)
    i1 = min(int(np.ceil(hull[:, 0].max())) + 1, camera.width)
    j0 = max(int(np.floor(hull[:, 1].min())), 0)
    j1 = min(int(np.ceil(hull[:, 1].max())) + 1, camera.height)
    return hull, (i0, i1, j0, j1)


def _footprint(mesh: Mesh, camera: Camera):
    """Pixel box (i0, i1, j0, j1) of the mesh's projection and the boolean mask (j1-j0, i1-i0) of the
    pixel centres inside its convex hull; None when it misses the image."""
    hull, (i0, i1, j0, j1) = projected_hull(mesh, camera)
    if i0 >= i1 or j0 >= j1 or len(hull) < 3:
        return None
    return (i0, i1, j0, j1), _hull_mask(hull, np.arange(i0, i1) + 0.5, np.arange(j0, j1) + 0.5)


def _edge_cross(hull: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``e_u * (v - a_v) - e_v * (u - a_u)`` per edge ``a -> a + e`` of ``hull`` (last axis) at points
    (u, v) broadcast against it: the very float operations of the edge test, whatever the shapes."""
    a = hull
    b = _next(hull)
    return (b[:, 0] - a[:, 0]) * (v - a[:, 1]) - (b[:, 1] - a[:, 1]) * (u - a[:, 0])


def _hull_mask(hull: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The edge test's mask at every pixel (``tests/masks_reference.py``) (the same booleans), row by row (issue 27).

    In row ``v`` edge k's test ``c_k - e_v (u - a_u) >= 0`` (``c_k = e_u (v - a_v)``) is an interval of u
    with end ``a_u + c_k / e_v``; pixels farther than a tolerance (1e-9 px plus 1e-12 of the terms'
    size over ``|e_v|``: a thousand times the rounding of either computation) from every end are
    decided by the intervals, the few within it by the edge test itself (:func:`_edge_cross`, the same
    float operations as the reference), and edges with ``e_v == 0`` by the sign of ``c_k``, as in the
    reference (``c_k - (+-0) = c_k``). Cost O(h M + h w) instead of O(h w M)."""
    a = hull
    ex = _next(hull[:, 0]) - a[:, 0]
    ey = _next(hull[:, 1]) - a[:, 1]
    c = ex[None, :] * (v[:, None] - a[None, :, 1])                      # (h, M): the first product
    flat = ey == 0
    row_out = ((c < 0) & flat[None, :]).any(axis=1)                      # a flat edge the row is outside of
    scale = float(np.abs(hull).max()) + abs(float(u[-1])) + abs(float(v[-1])) + 1.0 if len(u) and len(v) else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        end = a[None, :, 0] + c / ey[None, :]                            # (h, M)
        tol = 1e-9 + 1e-12 * (np.abs(ex) + np.abs(ey)) * scale / np.abs(ey)  # (M,)
        lower, upper = (ey < 0)[None, :], (ey > 0)[None, :]              # u >= end (e_v < 0), u <= end (e_v > 0)
        inf = np.inf
        lo_in = np.where(lower, end + tol, -inf).max(axis=1)             # u > lo_in: inside every lower end
        lo_out = np.where(lower, end - tol, -inf).max(axis=1)            # u < lo_out: outside one of them
        hi_in = np.where(upper, end - tol, inf).min(axis=1)
        hi_out = np.where(upper, end + tol, inf).min(axis=1)
    uu = u[None, :]
    inside = (uu > lo_in[:, None]) & (uu < hi_in[:, None]) & ~row_out[:, None]
    outside = (uu < lo_out[:, None]) | (uu > hi_out[:, None]) | row_out[:, None]
    rows, cols = (~inside & ~outside).nonzero()
    if len(rows):
        inside[rows, cols] = (_edge_cross(hull, u[cols][:, None], v[rows][:, None]) >= 0).all(axis=1)
    return inside


# ---------------------------------------------------------------------- boxes
def mask_bbox(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """COCO box ``(x, y, width, height)`` in pixels of a boolean (H, W) mask; None when it is empty."""
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    if len(rows) == 0:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


# ---------------------------------------------------------------------- COCO RLE
def rle_counts(mask: np.ndarray) -> list[int]:
    """Uncompressed COCO run lengths of a boolean (H, W) mask (column-major, starting with a run of 0s)."""
    flat = np.asarray(mask, dtype=bool).ravel(order="F")
    if flat.size == 0:
        return []
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    runs = np.diff(bounds).tolist()
    if flat[0]:
        runs.insert(0, 0)
    return runs


def _counts_to_string(counts: Sequence[int]) -> str:
    """pycocotools ``rleToString``: LEB128-like, 5 bits per character (offset 48), deltas from i-2."""
    out = []
    for i, value in enumerate(counts):
        x = int(value)
        if i > 2:
            x -= int(counts[i - 2])
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def _string_to_counts(text: str) -> list[int]:
    """pycocotools ``rleFrString``."""
    counts: list[int] = []
    p = 0
    while p < len(text):
        x = 0
        k = 0
        more = True
        while more:
            if p >= len(text):
                raise ValueError("truncated RLE string")
            c = ord(text[p]) - 48
            if not 0 <= c < 64:
                raise ValueError(f"invalid RLE character {text[p]!r}")
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def encode_rle(mask: np.ndarray) -> dict[str, Any]:
    """COCO compressed RLE of a boolean (H, W) mask: ``{"size": [H, W], "counts": str}``."""
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ValueError(f"a mask is a 2-D array, got shape {mask.shape}")
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": _counts_to_string(rle_counts(mask))}


def decode_rle(rle: Mapping[str, Any], *, source: object = None) -> np.ndarray:
    """Boolean (H, W) mask of a COCO RLE (compressed string or uncompressed list ``counts``).

    Raises:
        FormatError: malformed ``size``/``counts``, or run lengths that do not add up to H * W.
    """
    if not isinstance(rle, Mapping) or "size" not in rle or "counts" not in rle:
        raise FormatError("an RLE mask is {'size': [H, W], 'counts': ...}", source=source, field="mask", value=rle)
    size = rle["size"]
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) and v >= 0 for v in size)):
        raise FormatError("size must be [height, width]", source=source, field="mask.size", value=size)
    raw = rle["counts"]
    try:
        counts = _string_to_counts(raw) if isinstance(raw, str) else [int(c) for c in raw]
    except (TypeError, ValueError) as exc:
        raise FormatError(f"bad counts ({exc})", source=source, field="mask.counts", value=raw) from None
    H, W = size
    if any(c < 0 for c in counts) or sum(counts) != H * W:
        raise FormatError(f"run lengths must be >= 0 and add up to {H * W}", source=source, field="mask.counts",
                          value=raw)
    values = np.zeros(len(counts), dtype=bool)
    values[1::2] = True
    flat = np.repeat(values, counts)
    return flat.reshape((W, H)).T.copy()
