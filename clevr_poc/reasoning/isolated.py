"""Ground and solve a program in a worker process that is killed when it overruns its time limit.

clingo's grounding cannot be interrupted: a query such as ``missing(Q) :- hasProperty(X0,color,Q), ...,
hasProperty(X6,color,Q).`` grounds for tens of seconds (9 objects, 9^7 combinations) whatever time
limit the solve call has. The Reasoner's direct mode therefore hands its program to a worker process
(:mod:`clevr_poc.reasoning.solver_worker`) and waits ``time_limit`` + :data:`GRACE_SECONDS`; a worker
that has not answered by then is killed (``SIGKILL``) and :class:`~clevr_poc.errors.SolverTimeoutError`
is raised. So every call ends within its limit plus the grace, grounding included.

Workers are started on first use (about 0.1-0.3 s: a Python interpreter importing clingo; not counted
in the time limit), kept in a small pool (:data:`MAX_IDLE` idle workers, one per concurrent caller) and
reused; a killed worker is replaced on the next call. Each worker's address space is capped at
:data:`MEMORY_LIMIT` bytes (Linux/macOS ``RLIMIT_AS``): a program that needs more ends in a typed error
instead of exhausting the machine. A worker dies with its parent (Linux) or at the end of its input.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path

from clevr_poc.errors import ClevrPocError, SolverTimeoutError
from clevr_poc.solver.programs import Program

#: Seconds a worker may take beyond the time limit (replying, winding down an interrupted solve)
#: before it is killed.
GRACE_SECONDS = 0.5
#: Seconds a new worker may take to start (interpreter + ``import clingo``; generous for loaded machines).
STARTUP_SECONDS = 60.0
#: Address-space cap of one worker, bytes (0: none). Grounding the direct program of a CLEVR-POC
#: question takes about 50 MB.
MEMORY_LIMIT = 4 * 1024**3
#: Idle workers kept for reuse.
MAX_IDLE = 4

_HEADER = struct.Struct(">I")
_WORKER_SCRIPT = Path(__file__).with_name("solver_worker.py")  # loads ../solver/control.py


class SolverWorkerError(ClevrPocError):
    """The worker process failed (clingo error, out of memory, or it died)."""


class _Worker:
    """One worker process and the thread that reads its replies."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.process = subprocess.Popen(
            [sys.executable, str(_WORKER_SCRIPT), str(MEMORY_LIMIT)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.replies: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._read_replies, name="clevr-poc-solver-worker-reader", daemon=True).start()
        _ALL.add(self)
        try:
            ready = self.replies.get(timeout=STARTUP_SECONDS)
        except queue.Empty:
            ready = None
        if not (isinstance(ready, dict) and ready.get("ready")):
            self.kill()
            raise SolverWorkerError(f"the clingo worker process did not start within {STARTUP_SECONDS:g} s "
                                    f"({sys.executable} {_WORKER_SCRIPT})")

    def _read_replies(self) -> None:
        stream = self.process.stdout
        try:
            while True:
                header = stream.read(_HEADER.size)
                if len(header) < _HEADER.size:
                    break
                size = _HEADER.unpack(header)[0]
                body = b""
                while len(body) < size:
                    chunk = stream.read(size - len(body))
                    if not chunk:
                        break
                    body += chunk
                if len(body) < size:
                    break
                self.replies.put(json.loads(body))
        except (OSError, ValueError):
            pass
        self.replies.put(None)  # end of output: the worker died or was killed

    def call(self, program: dict, time_limit: float) -> dict:
        body = json.dumps({"program": program, "time_limit": time_limit}).encode("utf-8")
        try:
            self.process.stdin.write(_HEADER.pack(len(body)) + body)
            self.process.stdin.flush()
        except OSError:
            self.kill()
            raise SolverWorkerError("the clingo worker process died") from None
        try:
            reply = self.replies.get(timeout=time_limit + GRACE_SECONDS)
        except queue.Empty:
            self.kill()
            raise SolverTimeoutError(f"clingo did not finish within {time_limit:g} s") from None
        if reply is None:
            self.kill()
            raise SolverWorkerError("the clingo worker process died (out of memory? its limit is "
                                    f"{MEMORY_LIMIT / 1024**3:g} GiB)")
        return reply

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def kill(self) -> None:
        if self.owner != os.getpid():  # a forked child must not kill its parent's worker
            return
        try:
            self.process.kill()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


_ALL: "weakref.WeakSet[_Worker]" = weakref.WeakSet()
_IDLE: list[_Worker] = []
_IDLE_LOCK = threading.Lock()


def _acquire() -> _Worker:
    with _IDLE_LOCK:
        while _IDLE:
            worker = _IDLE.pop()
            if worker.alive():
                return worker
    return _Worker()


def _release(worker: _Worker) -> None:
    with _IDLE_LOCK:
        if worker.alive() and len(_IDLE) < MAX_IDLE:
            _IDLE.append(worker)
            return
    worker.kill()


@atexit.register
def _stop_all() -> None:
    for worker in list(_ALL):
        worker.kill()


def solve_brave_isolated(program: Program, time_limit: float) -> tuple[bool, frozenset[str], bool]:
    """Ground and solve ``program`` (brave consequences) in a worker process.

    Args:
        program: the Reasoner's direct program (background, answering rules, objects, constraints,
            scene facts, sanitized query; :mod:`clevr_poc.solver.programs`); ``missing/1`` must be
            shown. Its parts go to the audit observers (:func:`~clevr_poc.solver.programs.observing`)
            before they go to the worker.
        time_limit: seconds for grounding and solving together.

    Returns:
        ``(satisfiable, values of missing/1 in the brave consequences, timed_out)``; ``timed_out`` is
        True when the worker interrupted its own solve call at the limit.

    Raises:
        SolverTimeoutError: no reply within ``time_limit`` + :data:`GRACE_SECONDS` (the worker was
            killed: grounding overran the limit).
        SolverWorkerError: clingo reported an error, ran out of memory, or the worker died.
        UnsafeProgramError: non-ASCII text in the program.
    """
    program.check_ascii()
    program.announce()
    message = program.to_message()
    worker = _acquire()
    try:
        reply = worker.call(message, time_limit)
    except BaseException:
        worker.kill()  # a timeout, or an interruption (Ctrl-C) while the worker still works
        raise
    _release(worker)
    if "error" in reply:
        raise SolverWorkerError(f"clingo failed: {reply['error']}")
    if reply.get("timed_out"):
        return False, frozenset(), True
    return bool(reply["satisfiable"]), frozenset(reply["values"]), False
