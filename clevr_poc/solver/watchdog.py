"""A time limit for clingo solve calls without a thread per call.

``clingo.Control.solve(async_=True)`` costs a thread hand-off per call (about 0.5 ms, more than a whole
compiled question). One daemon thread instead watches the current deadline and calls
``Control.interrupt()`` when it passes.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import clingo


class _Watchdog:
    """A daemon thread that polls the armed solve calls every :data:`POLL_SECONDS` and interrupts the
    ones past their deadline. Arming and disarming are plain dict operations (atomic under the GIL):
    no lock hand-off per solve call, which under load cost more than the solve itself."""

    POLL_SECONDS = 0.02

    def __init__(self) -> None:
        self._armed: dict[int, tuple[clingo.Control, float, list[bool]]] = {}
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._next = itertools.count()

    def _run(self) -> None:
        while True:
            time.sleep(self.POLL_SECONDS)
            if not self._armed:
                continue
            now = time.monotonic()
            for key, (control, deadline, fired) in list(self._armed.items()):
                # keep interrupting until the call disarms: an interrupt that arrives before the
                # search has started is ignored by clingo
                if deadline <= now:
                    fired[0] = True
                    try:
                        control.interrupt()
                    except Exception:  # the solve ended meanwhile; keep watching the others
                        pass

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="clevr-poc-clingo-watchdog", daemon=True)
                self._thread.start()

    @contextmanager
    def limit(self, control: clingo.Control, seconds: float) -> Iterator[list[bool]]:
        """Interrupt ``control`` if the block runs longer than ``seconds`` (checked every
        :data:`POLL_SECONDS`); yields ``[fired]``."""
        key, fired = self.arm(control, seconds)
        try:
            yield fired
        finally:
            self._armed.pop(key, None)

    def arm(self, control: clingo.Control, seconds: float) -> tuple[int, list[bool]]:
        """:meth:`limit` without the context manager: ``(key, [fired])``; the caller must call
        :meth:`disarm` with ``key`` (in a ``finally``)."""
        if self._thread is None or not self._thread.is_alive():
            self._ensure_thread()
        fired = [False]
        key = next(self._next)
        self._armed[key] = (control, time.monotonic() + seconds, fired)
        return key, fired

    def disarm(self, key: int) -> None:
        """End the watch :meth:`arm` started."""
        self._armed.pop(key, None)


WATCHDOG = _Watchdog()
#: Whether ``clingo.Control.solve`` takes ``on_last`` (the last model, after the search).
_ON_LAST = "on_last" in inspect.signature(clingo.Control.solve).parameters


def solve_brave(control: clingo.Control, assumptions, seconds: float) -> tuple[bool, list[clingo.Symbol], bool]:
    """Solve (brave mode must be configured on ``control``); returns ``(satisfiable, last model's shown
    symbols, timed_out)``. The last model of a brave enumeration holds the brave consequences.

    ``assumptions``: program literals (a list or tuple is passed on as is). A blocking solve with an
    ``on_model`` callback: about 0.1 ms less per call than iterating a ``yield_`` handle. Where clingo
    has ``on_last`` (the Python API of clingo 5.8), only the last model's symbols are read, once, instead
    of every model's (issue 27: a generated question's solve finds 3 models on average; 24 us less per
    solve, the same consequences).
    """
    last: list[clingo.Symbol] = []

    def on_model(model: clingo.Model) -> None:
        last[:] = model.symbols(shown=True)

    if not isinstance(assumptions, (list, tuple)):
        assumptions = list(assumptions)
    key, fired = WATCHDOG.arm(control, seconds)  # WATCHDOG.limit without a generator per call
    try:
        if _ON_LAST:
            result = control.solve(assumptions=assumptions, on_last=on_model)
        else:
            result = control.solve(assumptions=assumptions, on_model=on_model)
    finally:
        WATCHDOG.disarm(key)
    if fired[0] or result.interrupted:
        return False, [], True
    return bool(result.satisfiable), last, False
