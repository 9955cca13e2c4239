"""The object-by-object lower bound that :func:`clevr_poc.generation.pixel_bounds.lower_bounds` replaced
(issue 27's second round), kept here as the reference its vectorised form is tested against."""

from __future__ import annotations

import math

import numpy as np

from clevr_poc.generation.pixel_bounds import _DIRECTIONS, _HALF, _MARGIN, _QUARTER, _inner_rows, _outer_rows


def lower_bounds_reference(silhouettes: dict, camera, count: int, shown, min_pixels: int | None = None
                            ) -> list[int]:
    """:func:`lower_bounds` object by object (the code before issue 27's second round; kept for the test)."""
    directions = _DIRECTIONS
    H, W = camera.height, camera.width
    bounds = [0] * count
    for k in shown:
        inner, _, _, far = silhouettes[k]
        if len(inner) < 3:
            if min_pixels is not None:
                return bounds
            continue
        j0 = max(int(math.floor(inner[:, 1].min())), 0)
        j1 = min(int(math.ceil(inner[:, 1].max())) + 1, H)
        if j0 >= j1:
            if min_pixels is not None:
                return bounds
            continue
        v = np.arange(j0, j1) + 0.5                     # pixel-centre rows
        lo, hi = _inner_rows(inner, v)
        first = np.maximum(np.floor(lo - 0.5) + 1, 0).astype(np.int64)       # i + 0.5 > lo
        last = np.minimum(np.ceil(hi - 0.5) - 1, W - 1).astype(np.int64)     # i + 0.5 < hi
        rows = last >= first
        if not rows.any():
            if min_pixels is not None:
                return bounds
            continue
        v, first, last = v[rows], first[rows], last[rows]
        i0, i1 = int(first.min()), int(last.max()) + 1
        centres = mask = None  # built when an object may cover some of these pixels
        u_lo, u_hi, v_lo, v_hi = i0, i1, v[0] - 0.5, v[-1] + 0.5
        for j in shown:
            if j == k:
                continue
            _, support_j, near_j, _ = silhouettes[j]
            if far + _MARGIN < near_j:                  # j is behind k on every ray
                continue
            # j's bounding box (directions 0, pi/2, pi, 3pi/2) misses k's rows and columns
            if (support_j[0] < u_lo - 1 or -support_j[_HALF] > u_hi + 1 or support_j[_QUARTER] < v_lo - 1
                    or -support_j[3 * _QUARTER] > v_hi + 1):
                continue
            if mask is None:
                centres = np.arange(i0, i1) + 0.5
                mask = (centres[None, :] >= first[:, None] + 0.5) & (centres[None, :] <= last[:, None] + 0.5)
            olo, ohi = _outer_rows(directions, support_j, v)
            mask &= ~((centres[None, :] >= olo[:, None]) & (centres[None, :] <= ohi[:, None]))
        # no such object: the row intervals' lengths (the mask's count)
        bounds[k] = int((last - first + 1).sum()) if mask is None else int(mask.sum())
        if min_pixels is not None and bounds[k] < min_pixels:
            return bounds
    return bounds
