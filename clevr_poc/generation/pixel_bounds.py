"""The visibility check's cheap bounds: how many pixels each object of a layout covers, at least (and, for
the objects under the threshold, at most), from 32-direction polygons around the projected meshes, without
casting a ray (issue 27).

Used by :class:`clevr_poc.generation.layout.VisibilityCheck`; the exact counts are those of the ray-cast index
map (:func:`clevr_poc.rendering.masks.instance_index_map`), which the bounds bracket (tests/test_visibility.py,
tests/test_pixel_bounds.py).
"""

from __future__ import annotations

import math

import numpy as np

from clevr_poc.rendering.masks import _next, _previous

#: Support directions of the silhouette polygons of :func:`visible_pixel_bounds` (angles 2*pi*k/K).
SILHOUETTE_DIRECTIONS = 32
_ANGLES = [2.0 * math.pi * k / SILHOUETTE_DIRECTIONS for k in range(SILHOUETTE_DIRECTIONS)]
_QUARTER, _HALF = SILHOUETTE_DIRECTIONS // 4, SILHOUETTE_DIRECTIONS // 2
#: The unit vectors ``d_k`` of those directions, (K, 2).
_DIRECTIONS = np.array([[math.cos(a), math.sin(a)] for a in _ANGLES])
_C, _S = _DIRECTIONS[:, 0], _DIRECTIONS[:, 1]
_VERTICAL = np.abs(_C) < 1e-12                          # the directions along v (an outer polygon's top and bottom)
_NEXT = (np.arange(SILHOUETTE_DIRECTIONS) + 1) % SILHOUETTE_DIRECTIONS
_PREVIOUS = (np.arange(SILHOUETTE_DIRECTIONS) - 1) % SILHOUETTE_DIRECTIONS
#: det [d_k; d_k+1] (the same for every k): lines k and k + 1 cross at v = (c_k h_k+1 - c_k+1 h_k) / det.
_DET = _C[0] * _S[1] - _C[1] * _S[0]
#: Safety margin of the bound, in pixels (far above the rounding of the ray-cast masks, 1e-9 px).
_MARGIN = 1e-6
#: Per direction, constants of :func:`_outer_intervals`: ``c`` of the next direction, whether the line bounds
#: a row's interval from the left (``c < 0``) or the right (``c > 0``), and ``s`` of the two directions along v.
_C_NEXT = _C[_NEXT]
_LEFT, _RIGHT = ~_VERTICAL & (_C < 0), ~_VERTICAL & (_C > 0)
_S_VERTICAL = _S[_VERTICAL]
#: The top and bottom lines (s = 1 and -1 exactly); the indices of the left- and right-bounding lines.
_TOP, _BOTTOM = _QUARTER, 3 * _QUARTER
_LEFT_LINES, _RIGHT_LINES = np.flatnonzero(_LEFT), np.flatnonzero(_RIGHT)
_BIG = np.iinfo(np.int64).max
_EXACT_LIMIT = float(2 ** 40)       # support values and rows under it: exact interval ends (_covered_pixels)


def visible_pixel_bounds(meshes, camera, shown, min_pixels: int | None = None) -> list[int] | None:
    """Lower bounds of the pixels each object of ``shown`` covers in the image of ``shown`` (the other
    meshes are absent), as the ray-cast index map (:func:`clevr_poc.rendering.masks.instance_index_map`)
    would count them; None when an object reaches behind the camera (the full check raises then).

    Each object's silhouette (the convex hull of its projected vertices, what the masks fill) is
    bracketed by two convex polygons from its projected vertices' extremes in
    :data:`SILHOUETTE_DIRECTIONS` directions ``d_k``: the *inner* polygon joins the extreme vertices
    (inside the hull: each is a hull vertex), the *outer* one is ``{p : d_k . p <= max_v d_k . v}``
    (contains the hull). A pixel centre strictly inside object k's inner polygon (by more than 1e-6 px)
    is in k's mask; it shows k unless some other object's silhouette covers it too with that object
    possibly in front. Object j is certainly behind k along every ray when j's smallest vertex depth
    exceeds k's largest (the ray's entry points into convex solids lie within their vertices' depth
    ranges; rays are compared by distance, proportional to depth along one ray). So the bound counts
    the pixel centres of the image strictly inside k's inner polygon and outside the outer polygon of
    every shown object j != k that is not certainly behind k. It never exceeds the exact count, and
    for most layouts (objects apart or barely overlapping) it is within a few percent of it.

    Args:
        meshes: the world meshes of the complete scene (:func:`clevr_poc.rendering.render.scene_meshes`).
        camera: the render camera.
        shown: indices of the objects in the image (all of them, or all but the hidden one).
        min_pixels: when given, stop early (returning a bound of 0 for the rest) once an object is
            found under it.

    Returns:
        a list over all mesh indices (entries of objects not shown are 0), or None.
    """
    found = silhouettes(meshes, camera, shown)
    if found is None:
        return None
    return lower_bounds(found, camera, len(meshes), shown, min_pixels)


def silhouettes(meshes, camera, shown) -> dict | None:
    """Per object of ``shown``: (inner polygon (M, 2), support values (K,), smallest and largest vertex
    depth); None when a vertex lies behind the camera (:func:`vertex_silhouettes` of the meshes' vertices)."""
    shown = list(shown)
    found = vertex_silhouettes([meshes[k].vertices for k in shown], camera)
    return None if found is None else {k: found[position] for position, k in enumerate(shown)}


def vertex_silhouettes(vertices: list, camera, outer: list | None = None) -> dict | None:
    """:func:`silhouettes` of objects given by their world vertices ((V, 3) arrays, e.g.
    :func:`.bound_solids.scene_bound_points`), keyed by position; None when a vertex lies behind
    the camera. The projection is :func:`clevr_poc.camera.project_points`' arithmetic, all objects at once.

    ``outer``: per object, points whose convex hull contains the solid (:mod:`.bound_solids`); then
    ``vertices`` need only lie inside it, the inner polygon comes from them and the support values and
    depths from ``outer`` (bounds of the mesh's: the bounds stay bounds)."""
    if not len(vertices):
        return {}
    if outer is None:
        outer = vertices
        points = np.concatenate(vertices)
        inner_count = 0
    else:
        points = np.concatenate(list(vertices) + list(outer))
        inner_count = sum(len(v) for v in vertices)
    projected = _projected(points, camera)
    if projected is None:
        return None
    depth, uv = projected
    # (K, sum V): a row per direction (numpy's argmax along the columns of a (V, K) array is 2x slower)
    support_all = _DIRECTIONS @ uv
    sizes = [len(v) for v in vertices]
    starts = np.cumsum([0] + sizes[:-1])
    outer_starts = inner_count + np.cumsum([0] + [len(v) for v in outer][:-1])
    nears = np.minimum.reduceat(depth, outer_starts).tolist()
    fars = np.maximum.reduceat(depth, outer_starts).tolist()
    # the extreme vertex of each object in each direction (argmax per object: a (K, V) block each), then
    # everything else for all objects at once
    extremes = np.stack([support_all[:, start:start + size].argmax(axis=1)
                         for start, size in zip(starts.tolist(), sizes)]) + starts[:, None]   # (n, K), global
    if inner_count:
        values = np.maximum.reduceat(support_all, outer_starts, axis=1).T                   # (n, K)
    else:
        values = support_all[np.arange(SILHOUETTE_DIRECTIONS)[None, :], extremes]           # (n, K)
    return _silhouettes(uv, extremes, values, nears, fars)


def _silhouettes(uv: np.ndarray, extremes: np.ndarray, values: np.ndarray, nears: list, fars: list) -> dict:
    """Object position -> ``(polygon (M, 2), support values (K,), near, far)`` from each object's extreme
    points (``extremes`` (n, K), indices into ``uv`` (2, V)): consecutive directions with the same extreme
    give one hull vertex; a point (one extreme in every direction) keeps it once."""
    keep = extremes != np.concatenate((extremes[:, -1:], extremes[:, :-1]), axis=1)  # hull vertices, once each
    keep[~keep.any(axis=1), 0] = True                  # a point (every direction's extreme the same vertex)
    counts = keep.sum(axis=1).tolist()
    corners = uv[:, extremes[keep]].T                  # counter-clockwise in (u, v) per object
    found = {}
    offset = 0
    for position, count in enumerate(counts):
        found[position] = (corners[offset:offset + count], values[position], nears[position], fars[position])
        offset += count
    return found


def _projected(points: np.ndarray, camera) -> tuple[np.ndarray, np.ndarray] | None:
    """``(depth (V,), uv (2, V))`` of world points (V, 3), :func:`clevr_poc.camera.project_points`'
    arithmetic; None when a point lies behind the camera (depth <= 0).

    The products are taken on ``points.T`` (3, V) rows, ``R @ p.T`` and ``K @ cam.T``: the same three-term dot
    products (bit for bit with the OpenBLAS here, on all 3,447 recorded layouts; within 1e-9 px wherever, far
    inside the bounds' 1e-6 px margins, tested), without numpy's slow inner loop of 3 over (V, 3) rows (issue 27,
    sixth round: 14 us against 36 for 2,100 points). Only the bounds project this way: the exact masks keep
    :func:`clevr_poc.camera.project_points`."""
    T, K = camera.matrix_arrays                    # camera.rotation, .translation and .K, made once per camera
    cam = T[:3, :3] @ points.T
    cam += T[:3, 3:4]
    depth = cam[2]
    if not (depth > 0).all():
        return None
    uvw = K @ cam
    uv = uvw[:2] / uvw[2]
    return depth, uv


def stacked_silhouettes(points: np.ndarray, inner_counts: list[int], outer_counts: list[int], camera
                        ) -> dict | None:
    """:func:`vertex_silhouettes` of ``(inner, outer)`` points given object by object in one array
    (:func:`.bound_solids.scene_bound_array`: object k's inner points, then its outer ones): the same
    silhouettes (the same float operations on each point and the same extremes; tested equal), keyed by
    object index; None when a point lies behind the camera."""
    n = len(inner_counts)
    if not n:
        return {}
    projected = _projected(points, camera)
    if projected is None:
        return None
    depth, uv = projected
    support_all = _DIRECTIONS @ uv                                       # (K, V)
    sizes = np.array(inner_counts) + np.array(outer_counts)
    starts = sizes.cumsum() - sizes                                       # object k's first (inner) point
    bounds = np.empty(2 * n, dtype=np.int64)                              # inner, outer, inner, outer, ...
    bounds[0::2] = starts
    bounds[1::2] = starts + np.array(inner_counts)
    nears = np.minimum.reduceat(depth, bounds)[1::2].tolist()
    fars = np.maximum.reduceat(depth, bounds)[1::2].tolist()
    # the maxima over each object's outer points along the rows of the transposed view (the same maxima; 19 us
    # against 26 along axis 1 of the (K, V) array: issue 27, sixth round)
    values = np.maximum.reduceat(support_all.T, bounds, axis=0)[1::2]                     # (n, K)
    extremes = np.empty((n, SILHOUETTE_DIRECTIONS), dtype=np.intp)                          # (n, K)
    for position, (start, size) in enumerate(zip(starts.tolist(), inner_counts)):
        support_all[:, start:start + size].argmax(axis=1, out=extremes[position])
    extremes += starts[:, None]
    return _silhouettes(uv, extremes, values, nears, fars)


def silhouette_box(support) -> tuple[float, float, float, float]:
    """(u_min, u_max, v_min, v_max) of a silhouette from its support values."""
    return -support[_HALF], support[0], -support[3 * _QUARTER], support[_QUARTER]


def boxes_meet(a, b, margin: float = 1.0) -> bool:
    return a[0] <= b[1] + margin and b[0] <= a[1] + margin and a[2] <= b[3] + margin and b[2] <= a[3] + margin


def lower_bounds(found: dict, camera, count: int, shown, min_pixels: int | None = None, *,
                 enough: int | None = None) -> list[int]:
    """:func:`visible_pixel_bounds` from the :func:`silhouettes` ``found``: the same numbers as
    the object-by-object code before it (``tests/pixel_bounds_reference.py``, tested equal), with the inner polygons' row intervals of all objects and the
    outer polygons' of all occluders each computed in one pass of array operations (the very float
    operations of :func:`_inner_rows` and :func:`_outer_rows`, row by row; issue 27: the per-object
    calls on small arrays were most of the bound's time).

    ``enough``: when given, an object whose inner polygon keeps at least ``enough`` pixels after taking away
    every pixel of its possible occluders' bounding boxes (:func:`_box_overlaps`) gets that smaller bound
    (still a lower bound, >= ``enough``) without its rows being counted (what the visibility check needs:
    whether each object reaches its threshold)."""
    H, W = camera.height, camera.width
    bounds = [0] * count
    shown = list(shown)
    polygons = [k for k in shown if len(found[k][0]) >= 3]
    objects, spans = [], []                              # objects with a polygon and rows in the image
    if polygons:
        sizes = np.array([len(found[k][0]) for k in polygons])
        v = np.concatenate([found[k][0][:, 1] for k in polygons])
        starts = sizes.cumsum() - sizes
        low = np.floor(np.minimum.reduceat(v, starts)).tolist()
        high = np.ceil(np.maximum.reduceat(v, starts)).tolist()
        for k, lo, hi in zip(polygons, low, high):
            j0, j1 = max(int(lo), 0), min(int(hi) + 1, H)
            if j0 < j1:
                objects.append(k)
                spans.append((j0, j1))
    if objects:
        spans = np.array(spans)                          # (n, 2) int64: one array for the helpers' reductions
        first, last, row_start = _inner_intervals([found[k][0] for k in objects], spans, W)
        widths = np.maximum(last - first + 1, 0)
        starts = row_start[:-1]
        plain = np.add.reduceat(widths, starts)          # the pixels of each inner polygon
        support = np.array([found[j][1] for j in shown])                            # (shown, K)
        pairs, rows_box = _occluder_pairs(found, objects, shown, support, spans, first, last, starts)
        if enough is not None and np.count_nonzero(pairs):
            # an occluder covers at most the pixels of its box within the rows' box: objects that keep
            # ``enough`` pixels even so need no row-exact count (their bound is that smaller number)
            boxed = plain - _box_overlaps(support, pairs, rows_box)
            proven = boxed >= enough
            plain = np.where(proven, boxed, plain)
            pairs = pairs & ~proven[:, None]
        if np.count_nonzero(pairs):
            plain = plain - _covered_pixels(support, pairs, spans, first, last, row_start)
        for k, bound in zip(objects, plain.tolist()):
            bounds[k] = bound
    if min_pixels is not None:  # the reference stops at the first object under the threshold
        for position, k in enumerate(shown):
            if bounds[k] < min_pixels:
                for j in shown[position + 1:]:
                    bounds[j] = 0
                break
    return bounds


def _inner_intervals(polygons: list, spans: list, width: int):
    """Pixel columns ``first..last`` (int64, clipped to the image; empty: last < first) strictly inside each
    polygon (:func:`_inner_rows`) in each of its rows ``spans[k]`` = (j0, j1), all polygons' rows
    concatenated; and where each polygon's rows start in them ((len + 1,) int64; ``spans`` a list of pairs or an
    (n, 2) array: issue 27, sixth round, one array each instead of lists that every reduction converted again).

    Each row is tested against the edges whose v-range, widened by a pixel, holds it (:func:`_row_edges`), with
    :func:`_inner_rows`' float operations: in a convex polygon the other edges' lines lie farther out on that
    row (exactly; by far more than the rounding near a vertex, where both edges are tested), so these are
    its intervals, at O(rows) instead of O(rows x edges) (issue 27). A row without a lower or an upper edge
    (none in a convex polygon of area) is left empty, which keeps the bound a bound."""
    sizes = np.array([len(polygon) for polygon in polygons])
    starts = sizes.cumsum() - sizes
    a = np.concatenate(polygons)                                            # (E, 2) all edges' starts
    following = np.arange(len(a)) + 1
    following[starts + sizes - 1] = starts                        # each polygon's last edge closes it
    ax, ay = a[:, 0], a[:, 1]
    bx, by = ax[following], ay[following]
    ex, ey = bx - ax, by - ay
    span_j0, span_j1 = np.asarray(spans).T
    row_start = np.concatenate(([0], (span_j1 - span_j0).cumsum()))        # int64 (n + 1,)
    owner = np.arange(len(polygons)).repeat(sizes)                          # (E,) polygon of each edge
    j0 = span_j0[owner]
    j1 = span_j1[owner]
    edge, row = _row_edges(np.minimum(ay, by), np.maximum(ay, by), j0, j1)
    v = row + 0.5
    # the per-edge factors first, then gathered per (edge, row) pair: the same products
    coef = (-ey)[edge]
    rhs = (_MARGIN * np.hypot(ex, ey))[edge] - ex[edge] * (v - ay[edge]) - (ey * ax)[edge]
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = rhs / coef
    at = row_start[owner[edge]] + (row - j0[edge])                          # the pair's row among all rows
    total = int(row_start[-1])
    lo = np.full(total, -np.inf)
    hi = np.full(total, np.inf)
    lower, upper = coef > 0, coef < 0
    np.maximum.at(lo, at[lower], bound[lower])
    np.minimum.at(hi, at[upper], bound[upper])
    # a row without a lower or an upper edge keeps its infinite end, as does one with a flat edge it is not inside
    # of: empty (an edge's bound is finite, |e_v| being 0 or at least a float step of the coordinates; were one
    # infinite, its row would be left empty: only safer). Issue 27, sixth round: two tests instead of two masks
    # written by index (88 us per call against 93, 1,724 recorded calls, the same intervals)
    empty = (lo == -np.inf) | (hi == np.inf)
    flat = coef == 0
    if flat.any():
        empty[at[flat & (rhs >= 0)]] = True
    lo[empty] = np.inf
    # np.clip's bounds by np.maximum/np.minimum (the same integers once cast; a -0.0 may stay -0.0 before)
    first = np.minimum(np.maximum(np.floor(lo - 0.5) + 1, 0), width).astype(np.int64)      # i + 0.5 > lo
    last = np.minimum(np.maximum(np.ceil(hi - 0.5) - 1, -1), width - 1).astype(np.int64)   # i + 0.5 < hi
    return first, last, row_start


def _row_edges(v_min, v_max, j0, j1):
    """(edge, row) pairs: for each edge e (v-range ``v_min[e]..v_max[e]``, pixel rows ``j0[e] <= j < j1[e]``
    of its polygon), the rows j whose centre ``j + 0.5`` lies within one pixel of that range, edge by edge
    (issue 27, fifth round: one gather and one repeat fewer)."""
    lo = np.maximum(np.ceil(v_min - 1.5), j0)
    hi = np.minimum(np.floor(v_max + 0.5), j1 - 1)
    count = np.maximum(hi - lo + 1, 0).astype(np.int64)
    edge = np.arange(len(count)).repeat(count)
    return edge, np.arange(len(edge)) + (lo.astype(np.int64) - (count.cumsum() - count))[edge]


def _occluder_pairs(found: dict, objects: list, shown: list, support: np.ndarray, spans: list, first, last,
                   starts) -> tuple:
    """(len(objects), len(shown)) booleans: whether object ``shown[q]`` may cover pixels of the inner polygon
    rows of ``objects[p]``, for all pairs at once: not the object itself, not certainly behind it (depth
    ranges), its bounding box within a pixel of the rows' box; an object without a pixel in its rows has
    none (issue 27, fifth round: by one ``logical_or.reduceat``, x1.05)."""
    rows = last >= first
    big = _BIG
    i0 = np.minimum.reduceat(np.where(rows, first, big), starts)
    i1 = np.maximum.reduceat(np.where(rows, last, -big), starts) + 1
    index = np.arange(len(rows))
    r0 = np.minimum.reduceat(np.where(rows, index, big), starts)
    r1 = np.maximum.reduceat(np.where(rows, index, -big), starts)
    j0 = np.asarray(spans)[:, 0]
    v_lo = (r0 - starts + j0).astype(float)             # = the first kept row's centre - 0.5
    v_hi = (r1 - starts + j0 + 1).astype(float)
    far = np.array([found[k][3] for k in objects])
    near = np.array([found[j][2] for j in shown])
    behind = far[:, None] + _MARGIN < near[None, :]
    misses = ((support[None, :, 0] < i0[:, None] - 1) | (-support[None, :, _HALF] > i1[:, None] + 1)
              | (support[None, :, _QUARTER] < v_lo[:, None] - 1) | (-support[None, :, 3 * _QUARTER] > v_hi[:, None] + 1))
    same = np.array(objects)[:, None] == np.array(shown)[None, :]
    some = np.logical_or.reduceat(rows, starts)         # an object with a pixel in its rows
    return ~(behind | misses | same) & some[:, None], (i0, i1, v_lo, v_hi)


def _box_overlaps(support: np.ndarray, pairs: np.ndarray, rows_box) -> np.ndarray:
    """Per object (row of ``pairs``): the pixel centres of its rows' box (columns ``i0 <= i < i1``, rows
    ``v_lo <= j < v_hi``, :func:`_occluder_pairs`) inside the bounding box of each of its possible
    occluders (columns of ``pairs``, support values ``support`` (shown, K)), summed over them ((n,) int64): at
    least the pixels their outer polygons cover there (each lies in its support box; the box's pixel ranges
    are widened by one or two columns and rows on each side)."""
    i0, i1, v_lo, v_hi = rows_box
    u_min, u_max = np.floor(-support[:, _HALF] - 0.5) - 1, np.ceil(support[:, 0] - 0.5) + 1
    w_min, w_max = np.floor(-support[:, 3 * _QUARTER] - 0.5) - 1, np.ceil(support[:, _QUARTER] - 0.5) + 1
    columns = (np.minimum(u_max[None, :], (i1 - 1)[:, None]) - np.maximum(u_min[None, :], i0[:, None]) + 1)
    rows = (np.minimum(w_max[None, :], (v_hi - 1)[:, None]) - np.maximum(w_min[None, :], v_lo[:, None]) + 1)
    overlap = np.maximum(columns, 0) * np.maximum(rows, 0)
    return np.where(pairs, overlap, 0).sum(axis=1).astype(np.int64)


def _covered_pixels(support: np.ndarray, pairs: np.ndarray, spans: list, first, last, row_start: list
                    ) -> np.ndarray:
    """Per object position: the pixels of its inner polygon's rows (columns ``first..last``, the
    :func:`_inner_intervals` rows) that the outer polygon of an object of ``pairs`` (support values ``support``
    (shown, K)) covers, (n,) int64: what the
    object-by-object bound (``tests/pixel_bounds_reference.py``) masks out, for all objects at once (issue 27:
    its per-object array calls were most of the bound's time).

    Every (object, occluder, row) gets the occluder's closed interval of :func:`_outer_intervals`, turned into
    the pixel columns ``i`` with ``lo <= i + 0.5 <= hi`` (the float comparisons themselves settle the rounding
    of ``ceil``/``floor``); :func:`_union_pixels` counts them on the rows. Issue 27, fifth round: with support
    values and rows under 2**40 every finite end is under 2**43 (``|c| >= 0.195``), where ``lo - 0.5``, ``ceil``,
    ``floor`` and ``a +- 0.5`` are exact: the four corrections change nothing (nor infinite ends) and are
    skipped; the same integers, 104 us per call against 130 (x1.25, 1,355 recorded calls)."""
    position, occluder = pairs.nonzero()
    starts = np.asarray(row_start)
    row_starts = starts[:-1]
    counts = starts[1:] - row_starts
    rows = counts[position]
    j0 = np.asarray(spans)[:, 0][position]
    lo, hi, pair_start = _outer_intervals(support[occluder], j0, j0 + rows)
    pair_of = np.arange(len(position)).repeat(rows)
    row_of = np.arange(len(pair_of)) + (row_starts[position] - pair_start)[pair_of]    # among all rows
    a = np.ceil(lo - 0.5)                               # the first column with lo <= a + 0.5
    b = np.floor(hi - 0.5)                              # the last column with b + 0.5 <= hi
    if not float(np.abs(support).max()) + float(starts[-1] + j0.max(initial=0)) < _EXACT_LIMIT:
        a = np.where(a - 0.5 >= lo, a - 1, a)
        a = np.where(a + 0.5 < lo, a + 1, a)
        b = np.where(b + 1.5 <= hi, b + 1, b)
        b = np.where(b + 0.5 > hi, b - 1, b)
    per_row = _union_pixels(row_of, a, b, first, last)
    return np.add.reduceat(per_row, row_starts) if len(per_row) else np.zeros(len(counts), dtype=np.int64)


def _outer_intervals(support: np.ndarray, j0, j1):
    """:func:`_outer_rows`' closed intervals ``[lo, hi]`` of the outer polygons of ``support`` (m, K) in the
    pixel rows ``j0[i] <= j < j1[i]`` of each (their centres ``j + 0.5``), all items' rows concatenated, and
    where each item's rows start ((m,) int64).

    Each row is tested against the support lines whose edge of the polygon, widened by a pixel, holds it (line
    l's edge lies between its crossings with lines l - 1 and l + 1, or within, when a neighbour is redundant),
    with :func:`_outer_rows`' float operations, and against the two lines along u (rows above or below the
    polygon are empty): the other lines lie farther out on that row (issue 27: O(rows) instead of O(rows x
    K)). Fewer lines can only widen an interval, so the outer polygon still contains the silhouette. Fifth
    round: the same floats in fewer calls (one gather per item; no ``np.errstate``, no ``c`` is 0; the top and
    bottom lines, ``s`` exactly +-1, as ``v > top``, ``v < -bottom``): 61 us per call against 79 (x1.30)."""
    j0 = np.asarray(j0)
    rows = np.asarray(j1) - j0
    item_start = rows.cumsum() - rows
    item_of = np.arange(len(rows)).repeat(rows)
    v = (np.arange(len(item_of)) + (j0 - item_start)[item_of]) + 0.5
    shifted = support + _MARGIN
    crossing = (shifted[:, _NEXT] * _C - shifted * _C_NEXT) / _DET                            # (m, K)
    previous = crossing[:, _PREVIOUS]
    v_min = np.minimum(crossing, previous).ravel()
    v_max = np.maximum(crossing, previous).ravel()
    line_j0 = j0.repeat(SILHOUETTE_DIRECTIONS)
    line, row = _row_edges(v_min, v_max, line_j0, (j0 + rows).repeat(SILHOUETTE_DIRECTIONS))
    item, direction = np.divmod(line, SILHOUETTE_DIRECTIONS)
    at = (item_start - j0)[item] + row                                               # its (item, row)
    bound = (shifted.ravel()[line] - (row + 0.5) * _S[direction]) / _C[direction]
    lo = np.full(len(item_of), -np.inf)
    hi = np.full(len(item_of), np.inf)
    left, right = _LEFT[direction], _RIGHT[direction]
    np.maximum.at(lo, at[left], bound[left])
    np.minimum.at(hi, at[right], bound[right])
    empty = (v > shifted[:, _TOP][item_of]) | (v < -shifted[:, _BOTTOM][item_of])
    lo[empty] = np.inf
    hi[empty] = -np.inf
    return lo, hi, item_start


def _union_pixels(row_of, a, b, first, last) -> np.ndarray:
    """Per row r of ``first``/``last`` (columns ``first[r]..last[r]``): how many of its columns lie in some
    column range ``a[i]..b[i]`` (float, may be infinite) with ``row_of[i] == r``; (rows,) int64. Counted on a
    difference array of the rows' own pixels (+1 at a range's start, -1 after its end, running sums > 0).
    Issue 27, fifth round: its two tests by ``np.count_nonzero`` (x1.05)."""
    per_row = np.zeros(len(first), dtype=np.int64)
    f, g = first[row_of], last[row_of]
    a = np.maximum(a, f)
    b = np.minimum(b, g)
    hit = a <= b
    if not np.count_nonzero(hit):
        return per_row
    row_of, a, b = row_of[hit], a[hit].astype(np.int64), b[hit].astype(np.int64)
    present = np.zeros(len(first), dtype=bool)                 # np.unique(row_of, return_inverse=True)
    present[row_of] = True
    if np.count_nonzero(present) == len(row_of):  # one range per row (the common case): the union is that range
        per_row[row_of] = b - a + 1
        return per_row
    local_rows = np.flatnonzero(present)
    f = first[row_of]
    row_index = (present.cumsum() - 1)[row_of]
    width = int((last[local_rows] - first[local_rows]).max()) + 2
    base = row_index * width
    marks = (np.bincount(base + (a - f), minlength=len(local_rows) * width)
             - np.bincount(base + (b - f + 1), minlength=len(local_rows) * width))
    cover = marks.reshape(len(local_rows), width).cumsum(axis=1)[:, :width - 1] > 0
    per_row[local_rows] = cover.sum(axis=1)
    return per_row


def _inner_rows(polygon, v):
    """Open u-interval (lo, hi) per row ``v`` of the points more than :data:`_MARGIN` px inside the
    counter-clockwise convex ``polygon`` (M, 2); empty rows get lo >= hi."""
    ax, ay = polygon[:, 0], polygon[:, 1]
    ex, ey = _next(ax) - ax, _next(ay) - ay
    # inside: ex * (v - ay) - ey * (u - ax) > margin * length, i.e. (-ey) * u > rhs; the per-edge factors
    # first (the same products, fewer operations on the (rows, M) arrays; issue 27)
    rhs = _MARGIN * np.hypot(ex, ey) - ex * (v[:, None] - ay) - ey * ax
    coef = -ey
    inf = np.inf
    flat = coef == 0
    if not flat.any():
        bound = rhs / coef
        return np.where(coef > 0, bound, -inf).max(axis=1), np.where(coef < 0, bound, inf).min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = rhs / coef
    lo = np.where(coef > 0, bound, -inf).max(axis=1)
    hi = np.where(coef < 0, bound, inf).min(axis=1)
    flat_fail = (flat & (rhs >= 0)).any(axis=1)  # a horizontal edge the row is not inside of
    lo = np.where(flat_fail, inf, lo)
    return lo, hi


def _outer_rows(directions, support, v):
    """Closed u-interval [lo, hi] per row ``v`` of ``{p : d_k . p <= support_k + margin}``; empty rows
    get lo > hi. ``support`` (K,) gives (rows,) intervals; (m, 1, K) gives (m, rows) ones, the same
    numbers as m calls."""
    c, s = directions[:, 0], directions[:, 1]
    rhs = support + _MARGIN - v[:, None] * s                   # c * u <= rhs
    vertical = np.abs(c) < 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = rhs / c
    lo = np.where(~vertical & (c < 0), bound, -np.inf).max(axis=-1)
    hi = np.where(~vertical & (c > 0), bound, np.inf).min(axis=-1)
    empty = (vertical & (rhs < 0)).any(axis=-1)
    return np.where(empty, np.inf, lo), np.where(empty, -np.inf, hi)
