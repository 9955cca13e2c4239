"""map_ordered: same results, same order, whatever the executor and worker count."""

from __future__ import annotations

import pytest

from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.executors import ExecutorError, local_pool_session, map_ordered, pool_start_method


def _square_or_fail(x: int) -> int:
    if x == 13:
        raise FormatError("thirteen is unlucky", field="x", value=x)
    return x * x


def _slow_first(x: int) -> tuple[int, int]:
    import os
    import time

    if x == 0:
        time.sleep(0.3)  # the first item finishes last: order must still hold
    return x, os.getpid()


def test_local_single_worker_runs_in_process():
    import os

    results = list(map_ordered(_slow_first, range(5), workers=1))
    assert [x for x, _ in results] == [0, 1, 2, 3, 4]
    assert {pid for _, pid in results} == {os.getpid()}


def test_pool_keeps_order_and_uses_other_processes():
    import os

    results = list(map_ordered(_slow_first, range(40), workers=2, chunksize=3, max_in_flight=4))
    assert [x for x, _ in results] == list(range(40))
    assert os.getpid() not in {pid for _, pid in results}


def test_pool_session_runs_every_call_on_the_same_processes():
    """Issue 27: ``generate`` prepares environments and generates examples on one pool."""
    import os

    with local_pool_session(2):
        first = list(map_ordered(_slow_first, range(12), workers=2, chunksize=2))
        second = list(map_ordered(_slow_first, range(12), workers=2, chunksize=2))
        with pytest.raises(FormatError, match="thirteen"):  # an error ends that call, not the pool
            list(map_ordered(_square_or_fail, range(20), workers=2))
        third = list(map_ordered(_square_or_fail, range(6), workers=2))
        other = list(map_ordered(_slow_first, range(4), workers=3))  # another width: a pool of its own
    assert [x for x, _ in first] == [x for x, _ in second] == list(range(12))
    assert third == [0, 1, 4, 9, 16, 25]
    pool_pids = {pid for _, pid in first} | {pid for _, pid in second}
    assert len(pool_pids) <= 2 and os.getpid() not in pool_pids
    assert not pool_pids & {pid for _, pid in other}


def test_pool_consumes_a_generator_lazily():
    results = list(map_ordered(_square_or_fail, (i for i in range(12)), workers=2, chunksize=5))
    assert results == [i * i for i in range(12)]


@pytest.mark.parametrize("workers", [1, 2])
def test_worker_error_keeps_its_type(workers):
    with pytest.raises(FormatError, match="thirteen"):
        list(map_ordered(_square_or_fail, range(20), workers=workers))


@pytest.mark.parametrize("kwargs, message", [
    ({"executor": "dask"}, "unknown executor"),
    ({"workers": 0}, "positive integer"),
    ({"ray_address": "auto"}, "only used with executor='ray'"),
    ({"chunksize": 0}, "chunksize"),
])
def test_bad_settings_raise_executor_error(kwargs, message):
    with pytest.raises(ExecutorError, match=message):
        list(map_ordered(_square_or_fail, range(3), **kwargs))
    assert issubclass(ExecutorError, ClevrPocError)


@pytest.mark.slow  # starting Ray takes 10-30 s here; tests/test_dataset.py runs Ray in the default suite
def test_ray_gives_the_same_results_and_errors():
    pytest.importorskip("ray")
    items = list(range(13))
    assert list(map_ordered(_square_or_fail, items, workers=2, executor="ray", chunksize=4)) == [
        i * i for i in items]
    with pytest.raises(FormatError, match="thirteen"):
        list(map_ordered(_square_or_fail, range(20), workers=2, executor="ray"))


def _module_seen(name: str) -> bool:
    import sys

    return name in sys.modules


_START_METHOD_PROBE = """
import sys, threading
{setup}
from clevr_poc.executors import pool_start_method
print(pool_start_method())
"""


@pytest.mark.parametrize("setup, expected", [
    ("", "fork"),                                                             # one thread, nothing unsafe
    ("threading.Thread(target=threading.Event().wait, daemon=True).start()", "spawn"),  # another thread
    ("import types; sys.modules['torch'] = types.ModuleType('torch')", "spawn"),  # torch imported
])
def test_pool_start_method_forks_only_a_single_threaded_process_without_torch(setup, expected, monkeypatch):
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("fork is used on Linux only")
    monkeypatch.delenv("CLEVR_POC_START_METHOD", raising=False)
    done = subprocess.run([sys.executable, "-c", _START_METHOD_PROBE.format(setup=setup)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_pinned_start_methods_give_the_same_results(monkeypatch):
    import os
    import sys
    import types

    monkeypatch.setitem(sys.modules, "_clevr_poc_parent_marker", types.ModuleType("_clevr_poc_parent_marker"))
    results = {}
    for method in ("fork", "spawn"):
        monkeypatch.setenv("CLEVR_POC_START_METHOD", method)
        assert pool_start_method() == method
        with local_pool_session(2):
            results[method] = list(map_ordered(_slow_first, range(9), workers=2, chunksize=2))
            # a forked worker starts with the parent's modules; a spawned one imports its own
            seen = list(map_ordered(_module_seen, ["_clevr_poc_parent_marker"] * 4, workers=2))
        assert all(seen) == (method == "fork")
        assert os.getpid() not in {pid for _, pid in results[method]}
    assert [x for x, _ in results["fork"]] == [x for x, _ in results["spawn"]] == list(range(9))


def test_bad_pinned_start_method_is_one_line(monkeypatch):
    monkeypatch.setenv("CLEVR_POC_START_METHOD", "forkserver")
    with pytest.raises(ExecutorError, match=r"CLEVR_POC_START_METHOD must be one of \['fork', 'spawn'\], got 'forkserver'"):
        list(map_ordered(_slow_first, range(4), workers=2))


def test_bad_pinned_start_method_stops_generate_before_it_writes(monkeypatch, tmp_path):
    from clevr_poc.generation.dataset_writer import generate_dataset

    monkeypatch.setenv("CLEVR_POC_START_METHOD", "bogus")
    with pytest.raises(ExecutorError, match="got 'bogus'"):
        generate_dataset(tmp_path / "data", environments=1, scenes_per_environment=1, seed=0, workers=2,
                         progress=False)
    assert not (tmp_path / "data").exists()


def _shared_pools_seen(_: int) -> int:
    from clevr_poc import executors

    return len(executors._SHARED_POOLS)


def test_forked_workers_do_not_see_the_parents_shared_pool(monkeypatch):
    monkeypatch.setenv("CLEVR_POC_START_METHOD", "fork")
    with local_pool_session(2):  # a pool of another width is forked while this session's pool is shared
        assert list(map_ordered(_shared_pools_seen, range(4), workers=3)) == [0, 0, 0, 0]


def _frozen_objects(_: int) -> int:
    import gc

    return gc.get_freeze_count()


def test_forked_workers_inherit_frozen_objects_and_the_parent_does_not_stay_frozen(monkeypatch):
    import gc

    monkeypatch.setenv("CLEVR_POC_START_METHOD", "fork")
    before = gc.get_freeze_count()
    with local_pool_session(2):
        counts = list(map_ordered(_frozen_objects, range(4), workers=2))
        assert gc.get_freeze_count() == before == 0
    # every object the parent had at the fork is in the workers' permanent generation (thousands: modules)
    assert min(counts) > 10_000


def test_progress_bar_draws_the_finished_bar_once(capsys):
    """tqdm's update draws the last step and close draws the finished bar again: in a log (no terminal to
    overwrite the line) the demo showed ``render: 100%|...| 80/80 [...]`` twice on one line."""
    pytest.importorskip("tqdm")
    import time

    assert list(map_ordered(time.sleep, [0.12] * 3, progress="render")) == [None] * 3
    err = capsys.readouterr().err
    frames = err.split("\r")
    assert [frame.split("|")[0] for frame in frames if frame] == ["render:   0%", "render:  33%", "render:  67%",
                                                                  "render: 100%"]
    assert err.count("3/3") == 1 and err.endswith("\n")


def _worker_pid(_: int) -> int:
    import os
    import time

    time.sleep(0.05)
    return os.getpid()


def test_workers_end_when_their_parent_is_killed(tmp_path):
    """A SIGKILL of the process that owns a pool (``kill -9`` of ``generate``) takes its workers with it."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    script = textwrap.dedent("""
        import os, signal, sys
        sys.path.insert(0, sys.argv[1])
        from test_executors import _worker_pid
        from clevr_poc.executors import local_pool_session, map_ordered
        with local_pool_session(2):
            pids = sorted(set(map_ordered(_worker_pid, range(8), workers=2, chunksize=1)))
            print(" ".join(map(str, pids)), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "CLEVR_POC_START_METHOD": "fork"})
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with open(f"/proc/{pid}/stat") as stat:  # a zombie awaiting its reaper is gone too
            return stat.read().split(") ")[-1][0] != "Z"

    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if alive(p)]
