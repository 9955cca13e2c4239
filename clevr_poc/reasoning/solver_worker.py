"""The worker process of :mod:`clevr_poc.reasoning.isolated`: grounds and solves one program per request.

Run as a script (``python solver_worker.py MEMORY_LIMIT_BYTES``), it imports nothing but the standard
library, clingo and :mod:`clevr_poc.solver.control` (loaded by its file path, which imports only clingo:
the same Control factory, program loader and answer reader as in process). Messages on stdin/stdout are a 4-byte
big-endian length and a UTF-8 JSON object:

- request ``{"program": {"parts": [[name, [], text], ...], "facts": [symbol text, ...], "ground":
  [[name, [int, ...]], ...]}, "time_limit": float}`` (:meth:`clevr_poc.solver.programs.Program.to_message`):
  grounding + brave solving under ``time_limit``
  seconds in all (the solve call is interrupted at what is left of it after grounding; grounding cannot
  be interrupted, so the parent kills the process when no reply comes in time);
- reply ``{"satisfiable": bool, "values": [str, ...], "timed_out": bool}`` (``values``: the arguments of
  the shown ``missing/1`` atoms of the last model, i.e. the brave consequences) or ``{"error": str}``.

The first message is ``{"ready": true}``. The process ends at the end of its input, and (Linux) when its
parent dies. ``MEMORY_LIMIT_BYTES`` > 0 caps its address space (``RLIMIT_AS``).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time

_HEADER = struct.Struct(">I")


def _read(stream, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _send(stream, message: dict) -> None:
    body = json.dumps(message).encode("utf-8")
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _limit_resources(memory_limit: int) -> None:
    try:  # die with the parent: a runaway grounding must not outlive it (Linux only)
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError, ImportError):
        pass
    if memory_limit > 0:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        except (ImportError, ValueError, OSError):
            pass


def _load_control_module():
    """:mod:`clevr_poc.solver.control` from its file (``../solver/control.py``), without importing
    the ``clevr_poc`` package."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "solver", "control.py")
    spec = importlib.util.spec_from_file_location("clevr_poc_solver_control", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _solve(clingo, solver_control, request: dict) -> dict:
    started = time.monotonic()
    seconds = float(request["time_limit"])
    try:
        program = request["program"]
        control = solver_control.make_control(["--models=0", "--enum-mode=brave"])
        solver_control.load_program(control, program["parts"], [clingo.parse_term(f) for f in program["facts"]],
                                    program["ground"])
        remaining = seconds - (time.monotonic() - started)
        if remaining <= 0:
            return {"timed_out": True}
        last: list = []

        def on_model(model) -> None:
            last[:] = model.symbols(shown=True)

        with control.solve(on_model=on_model, async_=True) as handle:
            if not handle.wait(remaining):
                handle.cancel()
                return {"timed_out": True}
            result = handle.get()
        if result.interrupted:
            return {"timed_out": True}
        values = sorted(solver_control.missing_values(last))
        return {"satisfiable": bool(result.satisfiable), "values": values, "timed_out": False}
    except MemoryError:
        return {"error": "clingo ran out of memory"}
    except (RuntimeError, ValueError) as exc:
        return {"error": " ".join(str(exc).split())[:300] or "clingo failed"}


def main(argv: list[str]) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # no module of ours shadows one
    _limit_resources(int(argv[1]) if len(argv) > 1 else 0)
    import clingo

    solver_control = _load_control_module()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    _send(stdout, {"ready": True})
    while True:
        header = _read(stdin, _HEADER.size)
        if header is None:
            return 0
        body = _read(stdin, _HEADER.unpack(header)[0])
        if body is None:
            return 0
        _send(stdout, _solve(clingo, solver_control, json.loads(body)))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
