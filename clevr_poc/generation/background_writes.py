"""Writes on a thread of their own, in order: :class:`BackgroundBatchWriter`.

Issue 27: ``generate`` with worker processes used to write each batch of finished examples on its main
thread, which also hands the workers their tasks and collects their results. Every file is ``fsync``-ed
(:func:`clevr_poc._io.atomic_write_many`), and an ``fsync`` waits for the disk: 0.4-2 ms here, about
40-200 ms per batch of 32 examples (96 files). Meanwhile no result was collected and no task handed
out, so the workers ran dry once their few queued tasks were done. With the writes on this thread the
main thread keeps the workers busy; the files, their order and their durability are unchanged (one
writer, batches written whole and in the order given).

Measured (``generate_dataset``, 10 environments x 200 scenes, 2 workers, a disk whose creates cost
0.4 ms right after mass deletions, load 3.5-4.4 from other jobs): the examples took 20.2 and 22.5 s
with the writes on the main thread, 7.3 and 14.9 s with them here (docs/benchmarks.md).
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")

#: Batches handed over but not yet written before :meth:`BackgroundBatchWriter.submit` waits (bounds
#: memory: 2 x 32 examples of a few KB each with the defaults).
DEFAULT_MAX_PENDING = 2
_CLOSE = object()


class BackgroundBatchWriter(Generic[T]):
    """Run ``write(batch)`` for every submitted batch on one thread, in submission order.

    Use it as a context manager: leaving the block (normally or by an exception, Ctrl-C included) waits
    until every submitted batch is written, so the work finished before an error is kept. After a
    failed ``write`` the later batches are not written, and the error (the same exception object) is
    raised by the next :meth:`submit` or by leaving the block.

    Args:
        write: called with each batch (a list), on the writer thread.
        max_pending: batches submitted but not yet written before :meth:`submit` blocks (>= 1).
        threaded: False writes each batch inside :meth:`submit`, on the caller's thread (the same
            interface without a thread: ``generate`` with one process, where nothing else runs meanwhile).

    Raises:
        ValueError: ``max_pending`` < 1.
    """

    def __init__(self, write: Callable[[list[T]], None], *, max_pending: int = DEFAULT_MAX_PENDING,
                 threaded: bool = True) -> None:
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a positive integer, got {max_pending!r}")
        self._write = write
        self._todo: queue.Queue = queue.Queue(maxsize=max_pending)
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._run, name="clevr-poc-batch-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            batch = self._todo.get()
            if batch is _CLOSE:
                return
            if self._error is not None:  # a batch failed: the later ones are dropped, in order
                continue
            try:
                self._write(batch)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread as it is
                self._error = exc
            else:
                self._done.put(batch)

    def submit(self, batch: list[T]) -> None:
        """Hand ``batch`` to the writer (blocks while ``max_pending`` batches wait); raises the error of
        an earlier failed write."""
        self._raise()
        if self._thread is None:
            self._write(batch)
            self._done.put(batch)
            return
        self._todo.put(batch)

    def written(self) -> list[T]:
        """The items of every batch written since the last call, in order (never blocks)."""
        items: list[T] = []
        while True:
            try:
                items.extend(self._done.get_nowait())
            except queue.Empty:
                return items

    def close(self) -> None:
        """Wait until every submitted batch is written (or dropped after a failure); raises a failed
        write's error. Idempotent."""
        self._stop()
        self._raise()

    def _stop(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._todo.put(_CLOSE)
            self._thread.join()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def __enter__(self) -> "BackgroundBatchWriter[T]":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        # the block failed: still wait for the batches already handed over (they are finished work);
        # its own exception wins over a write error
        self._stop()
