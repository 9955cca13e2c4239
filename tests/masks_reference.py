"""The edge test at every pixel that :func:`clevr_poc.rendering.masks._hull_mask` replaced (issue 27), kept here
as the reference it is tested equal to."""

from __future__ import annotations

import numpy as np

from clevr_poc.rendering.masks import _edge_cross


def hull_mask_reference(hull: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The pixel centres (u (w,), v (h,)) on the inner side of every edge of the counter-clockwise ``hull``
    (M, 2) (or on it): the edge test at every pixel, (h, w, M) values."""
    us, vs = np.meshgrid(u, v)
    return np.all(_edge_cross(hull, us[..., None], vs[..., None]) >= 0, axis=-1)
