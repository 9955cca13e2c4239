"""single_blas_thread: BLAS on one thread inside the block, the previous limits after it (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

from clevr_poc.blas_threads import single_blas_thread


def _blas_threads(threadpoolctl) -> list[int]:
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_previous_limits_after():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = _blas_threads(threadpoolctl)
    with single_blas_thread():
        inside = _blas_threads(threadpoolctl)
    assert inside and set(inside) == {1}
    assert _blas_threads(threadpoolctl) == before


@pytest.mark.parametrize("left, right", [((2112, 3), (3, 3)), ((8368, 2), (2, 32)), ((32, 2), (2, 8368)),
                                         ((600, 3), (3, 2000))])
def test_the_products_of_generation_are_the_same_on_one_thread(left, right):
    """Vertices through a camera rotation, support values of 32 directions, rays against face planes:
    inner dimension 2 or 3, the same numbers whatever the thread count."""
    rng = np.random.default_rng(27)
    a, b = rng.normal(size=left) * 100, rng.normal(size=right)
    default = a @ b
    with single_blas_thread():
        single = a @ b
    assert np.array_equal(single, default)
