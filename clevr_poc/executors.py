"""Run a function over many items, in order, on a local process pool or on Ray — one interface.

::

    from clevr_poc.executors import map_ordered

    for result in map_ordered(work, items, workers=4):                  # local process pool
        ...
    for result in map_ordered(work, items, workers=8, executor="ray")  # local Ray instance
        ...
    for result in map_ordered(work, items, executor="ray", ray_address="ray://head:10001"):  # a cluster
        ...

Results come back in the order of ``items`` whatever the executor or worker count, so a caller that
writes them out produces the same bytes every time. ``func`` must be a module-level (picklable)
function and must not depend on process-global state other than caches; with Ray on a cluster,
``clevr_poc`` must be installed on every node (the same version).

Items are sent in chunks (``chunksize`` items per task) and at most ``max_in_flight`` chunks are
queued at once, so an iterable of 10^6 items is never materialised.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from clevr_poc.errors import ClevrPocError
from clevr_poc.progress import progress_bar

T = TypeVar("T")
R = TypeVar("R")

#: Executors :func:`map_ordered` knows.
EXECUTORS: tuple[str, ...] = ("local", "ray")


class ExecutorError(ClevrPocError, ValueError):
    """Bad executor settings (unknown executor, workers < 1, Ray not installed or unreachable)."""


@dataclass(frozen=True)
class ExecutorConfig:
    """Where and how wide to run.

    Attributes:
        workers: processes (local) or concurrent Ray tasks; >= 1. ``workers=1`` with the local
            executor runs in the calling process (no pool), which is the easiest to debug.
        executor: ``"local"`` (a :class:`concurrent.futures.ProcessPoolExecutor`, forked where that
            is safe, else spawned: :func:`pool_start_method`) or ``"ray"``.
        ray_address: Ray cluster address (``"auto"``, ``"ray://host:10001"``, ...); None starts a
            local Ray instance with ``workers`` CPUs.
    """

    workers: int = 1
    executor: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ExecutorError(f"unknown executor {self.executor!r}; expected one of {list(EXECUTORS)}")
        if not isinstance(self.workers, int) or isinstance(self.workers, bool) or self.workers < 1:
            raise ExecutorError(f"workers must be a positive integer, got {self.workers!r}")
        if self.ray_address is not None and self.executor != "ray":
            raise ExecutorError("ray_address is only used with executor='ray'")
        if self.executor == "local" and self.workers > 1:
            _pinned_start_method()  # a bad CLEVR_POC_START_METHOD fails here, before a caller writes anything


def default_workers() -> int:
    """CPUs this process may use (``os.sched_getaffinity`` where available)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _run_chunk(func: Callable[[Any], Any], chunk: Sequence[Any]) -> list[Any]:
    return [func(item) for item in chunk]


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while True:
        chunk = list(itertools.islice(iterator, size))
        if not chunk:
            return
        yield chunk


def map_ordered(
    func: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    chunksize: int = 1,
    max_in_flight: int | None = None,
    progress: bool | str = False,
    total: int | None = None,
) -> Iterator[R]:
    """``func(item)`` for every item, yielded in the order of ``items``.

    Args:
        func: a picklable (module-level) function of one argument.
        items: any iterable; consumed lazily.
        workers, executor, ray_address: see :class:`ExecutorConfig`.
        chunksize: items per task (>= 1); larger chunks cut per-task overhead for cheap functions.
        max_in_flight: chunks submitted but not yet yielded (default ``4 * workers``).
        progress: False, True, or a description: show a tqdm bar over items.
        total: number of items, for the progress bar (default ``len(items)`` when it has one).

    Yields:
        the results, in order. An exception raised by ``func`` is re-raised here (as its own type)
        and the remaining work is cancelled.

    Raises:
        ExecutorError: bad settings, or Ray requested but not installed.
    """
    config = ExecutorConfig(workers, executor, ray_address)
    if not isinstance(chunksize, int) or chunksize < 1:
        raise ExecutorError(f"chunksize must be a positive integer, got {chunksize!r}")
    window = max_in_flight or 4 * config.workers
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    bar = progress_bar(total, enabled=bool(progress) and total != 0, description=progress if isinstance(progress, str) else None,
                       smoothing=0.05)
    try:
        if config.executor == "local" and config.workers == 1:
            results: Iterator[R] = (func(item) for item in items)
        elif config.executor == "local":
            results = _map_pool(func, items, config, chunksize, window)
        else:
            results = _map_ray(func, items, config, chunksize, window)
        for result in results:
            if bar is not None:
                bar.update(1)
            yield result
    finally:
        if bar is not None:
            bar.close()


#: The pool of the innermost :func:`local_pool_session` block: [(workers, pool)], or empty.
_SHARED_POOLS: list[tuple[int, ProcessPoolExecutor]] = []
if hasattr(os, "register_at_fork"):  # a forked worker must not submit to its parent's pools
    os.register_at_fork(after_in_child=_SHARED_POOLS.clear)


#: Start methods a local pool may use (:func:`pool_start_method`).
START_METHODS: tuple[str, ...] = ("fork", "spawn")
#: Modules whose native thread pools or runtimes a forked child must not inherit (OpenMP/CUDA in torch,
#: Blender's in bpy, llama.cpp's, the raylet connection in ray): once one is imported, local pools spawn
#: their workers.
FORK_UNSAFE_MODULES: tuple[str, ...] = ("torch", "tensorflow", "jax", "bpy", "llama_cpp", "ray")
#: Environment variable that pins the start method (one of :data:`START_METHODS`).
START_METHOD_VARIABLE = "CLEVR_POC_START_METHOD"


def pool_start_method() -> str:
    """How a local pool starts its workers: ``"fork"`` where that is safe, else ``"spawn"``.

    Fork is safe here when the process is on Linux, runs no thread besides the main one
    (``threading.active_count() == 1``: no clingo watchdog, no progress-bar monitor, no executor
    thread whose locks a child could inherit held) and has imported none of
    :data:`FORK_UNSAFE_MODULES`. A forked worker starts with this process's modules and caches instead
    of importing numpy, scipy and clingo again (issue 27: 0.55 CPU s per spawned worker; ``generate``'s
    set-up for 10 environments on 2 workers fell from 1.45 to 0.93 s wall, ``benchmarks/generation.py``).
    Results never depend on it: a worker's function sees only its item and its caches.
    ``CLEVR_POC_START_METHOD=spawn`` (or ``fork``) pins the method.

    Raises:
        ExecutorError: the variable holds another value.
    """
    pinned = _pinned_start_method()
    if pinned is not None:
        return pinned
    safe = (sys.platform.startswith("linux") and threading.active_count() == 1
            and not any(name in sys.modules for name in FORK_UNSAFE_MODULES))
    return "fork" if safe else "spawn"


def _pinned_start_method() -> str | None:
    """``$CLEVR_POC_START_METHOD`` if set (checked), else None."""
    pinned = os.environ.get(START_METHOD_VARIABLE)
    if pinned is not None and pinned not in START_METHODS:
        raise ExecutorError(f"{START_METHOD_VARIABLE} must be one of {list(START_METHODS)}, got {pinned!r}")
    return pinned


#: ``prctl`` option that asks Linux to signal a process when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _end_with_parent(parent: int) -> None:
    """Pool worker initializer: the worker is killed when the process that started it dies, even by
    SIGKILL (Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``), instead of waiting forever on a task queue
    whose other ends its sibling workers keep open (a ``kill -9`` of ``generate`` used to leave its
    workers behind). Elsewhere it does nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _new_pool(workers: int) -> ProcessPoolExecutor:
    method = pool_start_method()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=_end_with_parent, initargs=(os.getpid(),))
    if method == "fork":
        # a fork pool forks all its workers at the first submit: do it now, while the process is known to
        # run one thread (before the pool's own manager thread, a progress bar's monitor or a solve).
        # The workers inherit this process's objects frozen (gc.freeze): their collections then skip the
        # modules and tables imported before the fork instead of walking (and copying on write) them
        # again; the parent unfreezes its own at once. Issue 27: a generation worker's cyclic-GC time
        # over 1,000 benchmark examples fell from about 0.30 to 0.20 CPU s (gc.callbacks, 2 runs each);
        # nothing else changes (the frozen objects are only never collected in the workers).
        gc.freeze()
        try:
            pool.submit(int).result()
        finally:
            gc.unfreeze()
    return pool


@contextlib.contextmanager
def local_pool_session(workers: int) -> Iterator[None]:
    """Keep one local process pool of ``workers`` processes for the duration of a ``with`` block.

    :func:`map_ordered` calls inside the block with the local executor and this many workers run on
    it instead of starting (spawning, importing) a pool each: ``generate`` prepares the environments
    and generates the examples on the same processes, which also keep their caches (scene samplers,
    grounded reasoner programs) from one call to the next (issue 27: a spawned worker costs about
    1 CPU second of imports). Results do not change. ``workers=1`` (no pool) does nothing.
    """
    if workers <= 1:
        yield
        return
    with _new_pool(workers) as pool:
        _SHARED_POOLS.append((workers, pool))
        try:
            yield
        finally:
            _SHARED_POOLS.pop()


def _map_pool(func, items, config: ExecutorConfig, chunksize: int, window: int) -> Iterator[Any]:
    shared = _SHARED_POOLS[-1] if _SHARED_POOLS and _SHARED_POOLS[-1][0] == config.workers else None
    with (contextlib.nullcontext(shared[1]) if shared else _new_pool(config.workers)) as pool:
        pending: deque = deque()
        chunks = _chunks(items, chunksize)
        try:
            for chunk in itertools.islice(chunks, window):
                pending.append(pool.submit(_run_chunk, func, chunk))
            while pending:
                done = pending.popleft().result()
                for chunk in itertools.islice(chunks, 1):
                    pending.append(pool.submit(_run_chunk, func, chunk))
                yield from done
        finally:
            for future in pending:
                future.cancel()


def _ray():
    try:
        import ray
    except ImportError:
        raise ExecutorError("executor='ray' needs the ray package: pip install 'ray>=2.9'") from None
    return ray


@contextlib.contextmanager
def ray_session(workers: int | None = None, ray_address: str | None = None) -> Iterator[Any]:
    """Start (or connect to) Ray for the duration of a ``with`` block; yields the ``ray`` module.

    :func:`map_ordered` calls inside the block reuse the session instead of starting Ray each time
    (starting a local Ray instance takes 5-15 s). Does nothing if Ray is already initialised.

    Args:
        workers: CPUs of a local instance (default: all this process may use); ignored with an address.
        ray_address: a cluster address (``"auto"``, ``"ray://head:10001"``); None starts a local instance
            whose workers see this process's ``sys.path`` (so functions of scripts unpickle).

    Raises:
        ExecutorError: Ray is not installed, or cannot be started/reached.
    """
    ray = _ray()
    if ray.is_initialized():
        yield ray
        return
    try:
        if ray_address is None:
            paths = [p for p in sys.path if p and os.path.isdir(p)]
            saved = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = os.pathsep.join(paths)  # inherited by the raylet and its workers
            try:
                ray.init(num_cpus=workers or default_workers(), include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
        else:
            ray.init(address=ray_address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ExecutorError(f"cannot start or reach Ray ({ray_address or 'local'}): {exc}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _map_ray(func, items, config: ExecutorConfig, chunksize: int, window: int) -> Iterator[Any]:
    with ray_session(config.workers, config.ray_address) as ray:
        remote_chunk = ray.remote(_run_chunk)
        func_ref = ray.put(func)
        pending: deque = deque()
        chunks = _chunks(items, chunksize)
        try:
            for chunk in itertools.islice(chunks, window):
                pending.append(remote_chunk.remote(func_ref, chunk))
            while pending:
                ref = pending.popleft()
                try:
                    done = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # re-raise the worker's own exception
                    cause = getattr(exc, "cause", None)
                    if not isinstance(cause, BaseException):
                        cause = exc.as_instanceof_cause()
                    raise cause from None
                for chunk in itertools.islice(chunks, 1):
                    pending.append(remote_chunk.remote(func_ref, chunk))
                yield from done
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref)
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass
