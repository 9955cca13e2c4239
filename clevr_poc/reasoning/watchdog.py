"""A time limit for clingo solve calls without a thread per call.

``clingo.Control.solve(async_=True)`` costs a thread hand-off per call (about 0.5 ms, more than a whole
compiled question). One daemon thread instead watches the current deadline and calls
``Control.interrupt()`` when it passes.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

import clingo


class _Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[clingo.Control, float, list[bool]]] = {}
        self._thread: threading.Thread | None = None
        self._next = 0

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._armed:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                soonest = min(deadline for _, deadline, _ in self._armed.values())
                if soonest > now:
                    self._cond.wait(soonest - now)
                    continue
                for key, (control, deadline, fired) in list(self._armed.items()):
                    if deadline <= now and not fired[0]:
                        fired[0] = True
                        control.interrupt()
                        del self._armed[key]

    @contextmanager
    def limit(self, control: clingo.Control, seconds: float) -> Iterator[list[bool]]:
        """Interrupt ``control`` if the block runs longer than ``seconds``; yields ``[fired]``."""
        fired = [False]
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="clevr-poc-clingo-watchdog", daemon=True)
                self._thread.start()
            key = self._next
            self._next += 1
            self._armed[key] = (control, time.monotonic() + seconds, fired)
            self._cond.notify()
        try:
            yield fired
        finally:
            with self._cond:
                self._armed.pop(key, None)


WATCHDOG = _Watchdog()


def solve_brave(control: clingo.Control, assumptions, seconds: float) -> tuple[bool, list[clingo.Symbol], bool]:
    """Solve (brave mode must be configured on ``control``); returns ``(satisfiable, last model's shown
    symbols, timed_out)``. The last model of a brave enumeration holds the brave consequences."""
    last: list[clingo.Symbol] = []
    with WATCHDOG.limit(control, seconds) as fired:
        with control.solve(assumptions=list(assumptions), yield_=True) as handle:
            for model in handle:
                last = model.symbols(shown=True)
            result = handle.get()
    if fired[0] or result.interrupted:
        return False, [], True
    return bool(result.satisfiable), last, False
