"""One BLAS thread for the small matrix products of dataset generation (issue 27).

The visibility check and the layout's projections multiply thin matrices: (V, 2) @ (2, 32),
(V, 3) @ (3, 3), (P, 3) @ (3, F) with V a few thousand mesh vertices. numpy hands them to OpenBLAS,
which by default starts one thread per core for each; on the 2-core machine, with the 2 generation
workers (or another job) already busy on them, every product then waits for a core and the threads
spin: a labelled question cost 47.9 CPU ms with OpenBLAS's default threads and 25.8 with one (same
run, 200 questions, load 8-9, byte-identical files). Generation is parallel over examples (workers),
not inside a matrix product, so :func:`single_blas_thread` limits BLAS to one thread around each
example.

The values of generation's products do not depend on the thread count: with an inner dimension of
2 or 3 every element is computed by the same kernel whichever thread computes it
(``tests/test_blas_threads.py``), and the integer-valued products of the scene check are exact. (Products
with a long inner dimension, or ``a @ a.T``, can differ in the last bits between thread counts.) The
generated files are byte-identical either way (``diff -r``, docs/benchmarks.md).

``threadpoolctl`` (with the ``generate`` extra) does the limiting; without it the context does nothing
(the same results, slower on a busy machine).
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager

_CONTROLLER: list[Any] = []  # [ThreadpoolController] once built, [None] when threadpoolctl is missing


def _controller():
    if not _CONTROLLER:
        try:
            import numpy  # noqa: F401  (its BLAS must be loaded for the controller to see it)
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with the generate extra
            _CONTROLLER.append(None)
        else:
            _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def single_blas_thread() -> ContextManager:
    """Context: the BLAS libraries loaded in this process use one thread inside it (the previous
    limits come back on exit); a no-op without ``threadpoolctl``. About 20 microseconds per use."""
    controller = _controller()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")
