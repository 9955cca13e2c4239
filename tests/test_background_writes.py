"""Issue 27: ``generate`` writes its batches on a thread of their own
(:class:`clevr_poc.generation.background_writes.BackgroundBatchWriter`): in order, every handed-over
batch written before the block is left (also after an error), a failed write raised as itself."""

from __future__ import annotations

import threading
import time

import pytest

from clevr_poc.generation.background_writes import BackgroundBatchWriter
from clevr_poc.generation.dataset_writer import generate_dataset


def test_batches_are_written_in_order_on_another_thread():
    seen, threads = [], set()

    def write(batch):
        time.sleep(0.002 * (len(seen) % 3))  # uneven write times must not reorder anything
        threads.add(threading.get_ident())
        seen.extend(batch)

    reported = []
    with BackgroundBatchWriter(write, max_pending=2) as writer:
        for start in range(0, 30, 3):
            writer.submit(list(range(start, start + 3)))
            reported += writer.written()
    reported += writer.written()
    assert seen == reported == list(range(30))
    assert threads and threading.get_ident() not in threads


def test_unthreaded_writer_writes_inside_submit():
    seen = []
    writer = BackgroundBatchWriter(seen.extend, threaded=False)
    writer.submit([1, 2])
    assert seen == [1, 2] and writer.written() == [1, 2] and writer.written() == []
    writer.close()


class _DiskFull(OSError):
    pass


def test_a_failed_write_is_raised_as_itself_and_later_batches_are_dropped():
    seen = []
    error = _DiskFull(28, "No space left on device")

    def write(batch):
        if batch == ["b"]:
            raise error
        seen.extend(batch)

    with pytest.raises(_DiskFull) as raised:
        with BackgroundBatchWriter(write, max_pending=1) as writer:
            writer.submit(["a"])
            writer.submit(["b"])
            writer.submit(["c"])
            time.sleep(0.05)
            writer.submit(["d"])  # raises once the writer has failed (or leaving the block does)
    assert raised.value is error
    assert seen == ["a"]


def test_an_error_in_the_block_still_waits_for_the_handed_over_batches():
    seen = []

    def slow(batch):
        time.sleep(0.05)
        seen.extend(batch)

    with pytest.raises(KeyError):
        with BackgroundBatchWriter(slow, max_pending=3) as writer:
            writer.submit([1])
            writer.submit([2])
            raise KeyError("interrupted")
    assert seen == [1, 2]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_bad_max_pending_is_refused(bad):
    with pytest.raises(ValueError, match="max_pending must be a positive integer"):
        BackgroundBatchWriter(list, max_pending=bad)


def test_workers_write_the_same_bytes_and_report_every_example_once(tmp_path):
    settings = dict(environments=1, scenes_per_environment=6, seed=3, splits={"test": 1.0}, visibility_check="off",
                    progress=False)
    generate_dataset(tmp_path / "one", workers=1, **settings)
    reported = []
    generate_dataset(tmp_path / "two", workers=2, write_batch=2, chunksize=1, on_example=reported.append, **settings)
    assert [r.spec.image_index for r in reported] == list(range(6))

    def tree(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and p.name != "stats.json" and "figures" not in p.parts}
    assert tree(tmp_path / "two") == tree(tmp_path / "one")
