"""Cost of the hardened file helpers (clevr_poc._io): durable atomic writes and capped JSON reads.

Baselines, in the same process: the atomic write before the hardening (``tempfile.mkstemp`` + rename,
no fsync) and a plain ``json.loads(path.read_text())``. Also times the refusal of a scene file over
the ``scene_file_bytes`` cap (size check before reading).

Batched writes (issue 27): the three files of ``--files`` dataset examples written one example at a time
(``write_batch=1``: two fsyncs per file, the path before batching) and 32 at a time
(:func:`clevr_poc.generation.dataset_writer.write_examples`), in the same run.

``--generation N`` also generates N examples twice in this process (1 environment, the default
visibility check, and with ``--visibility-check off``), with the real ``os.fsync`` and with ``os.fsync``
replaced by a no-op, to show what durability costs a real run.

Usage: python benchmarks/io_hardening.py [--files 300] [--folder DIR] [--generation 30]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from clevr_poc._io import atomic_write_text, read_json
from clevr_poc.errors import FormatError
from clevr_poc.scene import Scene


def _old_atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _per_file(action, paths) -> float:
    start = time.perf_counter()
    for path in paths:
        action(path)
    return (time.perf_counter() - start) / len(paths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--folder", default=None, help="where to write (default: a temp folder)")
    parser.add_argument("--generation", type=int, default=0, metavar="N", help="also time generating N examples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        root = Path(folder)
        obj = {"color": "red", "size": "large", "shape": "cube", "material": "metal", "region": "0",
               "3d_coords": [1.0, 2.0, 0.7], "pixel_coords": [100.0, 120.0, 11.0]}
        text = json.dumps({"split": "train", "image_index": 0, "image_filename": "CLEVR_train_000000.png",
                           "objects": [obj] * 8, "relationships": {}}) + "\n"  # ~2 KB, like a scene file
        paths = [root / f"CLEVR_{i:06d}.json" for i in range(args.files)]
        old = _per_file(lambda p: _old_atomic_write_text(p, text), paths)
        new = _per_file(lambda p: atomic_write_text(p, text), paths)
        print(f"atomic write of a {len(text)}-byte file: {1e3 * new:.3f} ms with fsync of file and folder, "
              f"{1e3 * old:.3f} ms before (mkstemp + rename): x{new / old:.1f}")
        _batched_writes(root, text, args.files)
        plain = _per_file(lambda p: json.loads(p.read_text(encoding="utf-8")), paths)
        capped = _per_file(read_json, paths)
        print(f"JSON read: {1e6 * capped:.1f} us capped (fstat, bounded read, depth check), "
              f"{1e6 * plain:.1f} us plain json.loads(read_text): x{capped / plain:.2f}")
        big = root / "big.json"
        with open(big, "w", encoding="utf-8") as handle:
            handle.write('{"objects": [')
            handle.write(",".join([json.dumps(obj)] * 1_700_000))
            handle.write("]}")
        start = time.perf_counter()
        try:
            Scene.from_file(big)
        except FormatError as exc:
            print(f"1.7-million-object scene file ({big.stat().st_size / 1e6:.0f} MB) refused in "
                  f"{1e3 * (time.perf_counter() - start):.2f} ms: {exc}")


        if args.generation:
            _generation(root, args.generation)


def _batched_writes(root: Path, text: str, count: int) -> None:
    from clevr_poc.generation.dataset_writer import write_examples
    from clevr_poc.generation.example_generation import GeneratedExample
    from clevr_poc.generation.example_plan import ExampleSpec

    results = [GeneratedExample(ExampleSpec(0, i, "train", i, "color"), text, text, text, "color", 1, 0, 0.0)
               for i in range(count)]
    timings = {}
    for batch in (1, 32, 1, 32):  # alternated, twice: the machine is shared
        out = root / f"batched-{batch}-{len(timings)}"
        start = time.perf_counter()
        for first in range(0, count, batch):
            write_examples(out, results[first:first + batch])
        timings.setdefault(batch, []).append((time.perf_counter() - start) / count)
    one, many = min(timings[1]), min(timings[32])
    print(f"dataset example (3 files) written durably: {1e3 * many:.2f} ms in batches of 32, {1e3 * one:.2f} ms "
          f"one example at a time (best of 2): x{one / many:.1f}")


def _generation(root: Path, examples: int) -> None:
    from clevr_poc.generation.dataset_writer import generate_dataset

    real_fsync = os.fsync
    for visibility in ("both", "off"):
        rates = {}
        for label in ("fsync", "no fsync", "fsync ", "no fsync "):  # alternated, twice: the machine is shared
            os.fsync = real_fsync if label.strip() == "fsync" else (lambda fd: None)
            try:
                summary = generate_dataset(root / f"gen-{visibility}-{len(rates)}", environments=1,
                                           scenes_per_environment=examples, seed=3, progress=False,
                                           visibility_check=visibility)
            finally:
                os.fsync = real_fsync
            rates.setdefault(label.strip(), []).append(summary.generated / summary.examples_seconds)
        best = {k: max(v) for k, v in rates.items()}
        print(f"generation, visibility {visibility}: {best['fsync']:.1f} questions/s with fsync, "
              f"{best['no fsync']:.1f} without (best of 2): x{best['fsync'] / best['no fsync']:.2f}")


if __name__ == "__main__":
    main()
