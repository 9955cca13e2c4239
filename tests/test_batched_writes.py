"""Issue 27: dataset examples are written in batches (:func:`clevr_poc._io.atomic_write_many`, one folder
fsync per folder and batch) and stay durable: after a real SIGKILL at any rename every example is whole
(its three files, with their final bytes) or absent (no question file), the question files present are a
prefix of the plan, and resuming gives the bytes of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clevr_poc._io import atomic_write_many
from clevr_poc.generation.dataset_writer import generate_dataset

SETTINGS = dict(environments=1, scenes_per_environment=5, seed=3, splits={"test": 1.0}, visibility_check="off")
KINDS = ("complete/scenes", "incomplete/scenes", "incomplete/questions")

_KILL_AT_RENAME = textwrap.dedent("""
    import os, signal, sys
    import clevr_poc._io as io
    from clevr_poc.generation.dataset_writer import generate_dataset
    out, kill_at, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    real, count = io._rename, [0]
    def rename(tmp, path):
        count[0] += 1
        if count[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        real(tmp, path)
    io._rename = rename
    generate_dataset(out, environments=1, scenes_per_environment=5, seed=3, splits={"test": 1.0},
                     visibility_check="off", progress=False, write_batch=2, workers=workers)
""")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("batched") / "reference"
    generate_dataset(out, progress=False, write_batch=1, **SETTINGS)
    return out


def test_atomic_write_many_writes_in_order_with_one_fsync_per_folder(tmp_path, monkeypatch):
    calls = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        calls.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    files = [(tmp_path / "a" / f"{k}.json", f"{k}\n".encode()) for k in range(3)] + [(tmp_path / "b" / "x", b"")]
    assert atomic_write_many(files) == [path for path, _ in files]
    assert calls == ["file"] * 4 + ["folder"] * 2
    assert [(path.read_bytes()) for path, _ in files] == [b"0\n", b"1\n", b"2\n", b""]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["0.json", "1.json", "2.json", "a", "b", "x"]


def test_batches_give_the_bytes_of_single_writes(reference, tmp_path):
    generate_dataset(tmp_path / "data", progress=False, write_batch=3, **SETTINGS)
    assert _tree(tmp_path / "data") == _tree(reference)


# workers=2: the batches are written on the writer thread (background_writes), which the kill hits
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("kill_at", [5, 8, 11])  # in the first scene batch, its question batch, the 2nd batch
def test_sigkill_mid_batch_leaves_every_example_whole_or_absent(reference, tmp_path, kill_at, workers):
    out = tmp_path / "data"
    killed = subprocess.run([sys.executable, "-c", _KILL_AT_RENAME, str(out), str(kill_at), str(workers)],
                            capture_output=True,
                            text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    final = _tree(reference)
    questions = sorted(p.name for p in (out / "incomplete" / "questions" / "test").glob("*.json")) \
        if (out / "incomplete" / "questions" / "test").is_dir() else []
    # renames: manifest, environment, then per batch of 2 examples 4 scene files and 2 question files
    expected = {5: 0, 8: 1, 11: 2}[kill_at]
    assert questions == [f"CLEVR_{k:06d}.json" for k in range(expected)]
    for name in questions:  # whole: all three files, with their final bytes
        for kind in KINDS:
            key = f"{kind}/test/{name}"
            assert (out / key).read_bytes() == final[key], key
    for path in out.rglob("*.json"):  # nothing half written anywhere
        key = path.relative_to(out).as_posix()
        if key in final and "figures" not in key and key != "stats.json":
            assert path.read_bytes() == final[key], key
    summary = generate_dataset(out, progress=False, **SETTINGS)
    assert (summary.generated, summary.skipped) == (5 - expected, expected)
    assert summary.stale_temp_files >= 1
    assert _tree(out) == final
