"""Fuzz the image readers and the M3CoT/ScienceQA record loaders (issue #26), the sibling of ``fuzz.py``.

Images (``--images``, default 3000): valid PNG, JPEG, GIF, BMP, palette and 16-bit PNGs with 1-4 random
edits (bytes flipped, a slice cut or repeated, the PNG size fields rewritten up to 60000 x 60000, chunks
inserted: zTXt/iCCP bombs, oversized text), random bytes, and the hostile images of
``tests/test_image_reader.py``. Each goes through every reader of the library: the pipeline's
``as_image``, perception's size-checked ``as_rgb_array``, the VLM reader ``image_part``, the CLIP loader.

Records (``--records``, default 2000): M3CoT JSON-lines files whose ``image``, ``id`` and ``image_id``
fields are drawn from hostile values (``../``, absolute paths, a symlink out of the folder, NUL, very long
names, non-strings), with invalid UTF-8 or broken JSON lines mixed in; ScienceQA ``problems.json`` with
hostile ids and images. Every image a loaded record points to must be inside the data folder.

Reported: inputs, outcomes, uncaught exceptions (anything but a one-line ClevrPocError; must be 0),
records pointing outside the data folder (must be 0), the slowest call, and the 12000 x 12000 PNG probe
(time to refusal and extra peak RSS, in a fresh process). Usage::

    python benchmarks/fuzz_inputs.py [--images 3000] [--records 2000] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz import Tally  # noqa: E402  (benchmarks/fuzz.py: one-line typed errors are outcomes)
from test_image_reader import _chunk, blank_png, hostile_images  # noqa: E402

from clevr_poc.baselines.clip.features import _open_image  # noqa: E402
from clevr_poc.image_files import as_rgb_array  # noqa: E402
from clevr_poc.llm.images import image_part  # noqa: E402
from clevr_poc.mcot.mcot_data import load_m3cot, load_scienceqa  # noqa: E402
from clevr_poc.pipeline_inputs import as_image  # noqa: E402

PROBE = """
import resource, sys, time
from clevr_poc.image_files import ImageFileError, read_rgb
read_rgb(sys.argv[2])  # warm: imports and a small image
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    read_rgb(sys.argv[1])
except ImageFileError:
    pass
print(time.perf_counter() - started, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def seed_images() -> list[bytes]:
    from PIL import Image

    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (64, 80, 3), dtype=np.uint8))
    out = []
    grey16 = Image.fromarray(rng.integers(0, 65536, (64, 70), dtype=np.uint16))
    for image, fmt in ((rgb, "PNG"), (rgb, "JPEG"), (rgb.convert("P"), "GIF"), (rgb, "BMP"),
                       (rgb.convert("P"), "PNG"), (grey16, "PNG"), (rgb.convert("RGBA"), "PNG"),
                       (rgb.convert("L"), "PNG")):
        buffer = io.BytesIO()
        image.save(buffer, format=fmt)
        out.append(buffer.getvalue())
    return out


def mutate_image(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4])):
        kind = rng.random()
        if kind < 0.35 and data:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind < 0.5 and len(data) > 2:
            a = rng.randrange(len(data))
            b = min(len(data), a + rng.randint(1, 200))
            data[a:b] = b"" if rng.random() < 0.6 else data[a:b] * rng.randint(2, 5)
        elif kind < 0.7 and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 24:
            data[16:24] = struct.pack(">II", rng.choice([0, 1, 64, 2049, 9000, 60000]), rng.choice([0, 1, 64, 60000]))
        elif kind < 0.9 and data[:8] == b"\x89PNG\r\n\x1a\n":
            chunk = rng.choice([
                _chunk(b"zTXt", b"k\0\0" + zlib.compress(b"A" * rng.choice([1000, 2 ** 21, 2 ** 23]))),
                _chunk(b"iCCP", b"p\0\0" + zlib.compress(b"\0" * rng.choice([100, 2 ** 24]))),
                _chunk(b"tEXt", b"k\0" + b"x" * rng.choice([10, 2 ** 20])),
                _chunk(b"PLTE", bytes(rng.randrange(256) for _ in range(rng.choice([3, 7, 768])))),
                _chunk(b"tRNS", bytes(rng.randrange(256) for _ in range(rng.choice([1, 300])))),
            ])
            data[33:33] = chunk  # after IHDR
        else:
            data[:] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    return bytes(data)


HOSTILE_NAMES = ["../secret.png", "../../secret.png", "images/../../secret.png", "ABS", "link.png",
                 "images/link.png", "a\0b.png", "x" * 300, "", ".", "..", "/", "images", "images/ok.png", "ok.png",
                 "ok", "../data/images/ok.png", 7, None, ["x"], {"path": "../secret.png"}, {"bytes": "@@"}]


def _value(rng: random.Random, root: Path):
    value = rng.choice(HOSTILE_NAMES)
    return str(root / "secret.png") if value == "ABS" else value


def fuzz_records(rng: random.Random, tally: Tally, root: Path, count: int, outside: list[str]) -> None:
    data = root / "data"
    base = {"category": "c", "question": "Which?", "choices": ["a", "b"], "context": "", "answer": "B",
            "rationale": "", "split": "test", "domain": "science", "topic": "t"}

    def check(records):
        for record in records or ():
            path = getattr(record, "image_path", None)
            if path is not None and not Path(path).resolve().is_relative_to(data.resolve()):
                outside.append(f"{getattr(record, 'id', getattr(record, 'qid', '?'))!r} -> {path}")

    for n in range(count):
        path = data / f"m3cot_{n}.jsonl"
        lines = []
        for k in range(rng.randint(1, 4)):
            record = {**base, "id": _value(rng, root) if rng.random() < 0.5 else f"r{k}",
                      "image_id": _value(rng, root), "image": _value(rng, root)}
            line = json.dumps(record).encode()
            if rng.random() < 0.1:
                line = line[: rng.randrange(len(line))] + b"\xff\xfe" + line[rng.randrange(len(line)):]
            elif rng.random() < 0.05:
                line = line[: rng.randrange(len(line))]
            lines.append(line)
        path.write_bytes(b"\n".join(lines) + b"\n")
        check(tally.call("m3cot", load_m3cot, path))
        path.unlink()
    problems = data / "scienceqa" / "problems.json"
    for _ in range(max(1, count // 10)):
        raw = {str(_value(rng, root)) if rng.random() < 0.5 else str(i): {
            "question": "Q?", "choices": ["a", "b"], "answer": 1, "hint": "", "image": _value(rng, root),
            "task": "t", "grade": "grade3", "subject": "natural science", "topic": "t", "category": "", "skill": "",
            "lecture": "", "solution": "", "split": "test"} for i in range(rng.randint(1, 4))}
        problems.write_text(json.dumps(raw))
        result = tally.call("scienceqa", load_scienceqa, problems.parent)
        check(None if result is None else list(result.problems.values()))


def probe_big_png(folder: Path) -> tuple[float, float]:
    big, small = folder / "big.png", folder / "small.png"
    big.write_bytes(blank_png(12000, 12000))
    small.write_bytes(blank_png(64, 64))
    out = subprocess.run([sys.executable, "-c", PROBE, str(big), str(small)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    seconds, megabytes = map(float, out.stdout.split())
    return seconds, megabytes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    tally = Tally(time_limit=5.0)
    outside: list[str] = []
    readers = {"as_image": as_image, "perception": lambda p: as_rgb_array(p, min_side=64, max_side=2048),
               "image_part": image_part, "clip": lambda p: _open_image(p, p.read_bytes())}
    with tempfile.TemporaryDirectory(prefix="clevr_poc_fuzz_") as tmp:
        root = Path(tmp)
        (root / "data" / "images").mkdir(parents=True)
        (root / "data" / "scienceqa").mkdir()
        seeds = seed_images()
        (root / "secret.png").write_bytes(seeds[0])
        (root / "data" / "images" / "ok.png").write_bytes(seeds[0])
        (root / "data" / "images" / "link.png").symlink_to(root / "secret.png")
        (root / "data" / "link.png").symlink_to(root / "secret.png")
        for folder in ("0", "1", "test/0"):  # ScienceQA's images/<qid>/ and images/<split>/<qid>/
            (root / "data" / "scienceqa" / "images" / folder).mkdir(parents=True)
            (root / "data" / "scienceqa" / "images" / folder / "ok.png").write_bytes(seeds[0])
            (root / "data" / "scienceqa" / "images" / folder / "link.png").symlink_to(root / "secret.png")
        started = time.monotonic()
        images = [mutate_image(rng, rng.choice(seeds)) for _ in range(args.images)] + list(hostile_images().values())
        image_path = root / "fuzz.img"
        for data in images:
            image_path.write_bytes(data)
            for name, reader in readers.items():
                begun = time.monotonic()
                tally.call(f"image-{name}", reader, image_path)
                tally.slowest = max(tally.slowest, time.monotonic() - begun)
        image_seconds = time.monotonic() - started
        started = time.monotonic()
        fuzz_records(rng, tally, root, args.records, outside)
        record_seconds = time.monotonic() - started
        big_seconds, big_mb = probe_big_png(root)
    result = {"images": len(images), "image_reads": len(images) * len(readers), "record_files": args.records,
              "outcomes": dict(sorted(tally.counts.items())), "uncaught_exceptions": len(tally.uncaught),
              "records_pointing_outside": len(outside), "slowest_call_s": round(tally.slowest, 3),
              "image_part_s": round(image_seconds, 1), "record_part_s": round(record_seconds, 1),
              "png_12000x12000_refusal_s": round(big_seconds, 4), "png_12000x12000_extra_peak_rss_mb": round(big_mb, 1),
              "seed": args.seed, "load_average_1min_end": os.getloadavg()[0],
              "examples": {"uncaught": tally.uncaught[:5], "outside": outside[:5]}}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{len(images)} images x {len(readers)} readers, {args.records} M3CoT files "
              f"(+{max(1, args.records // 10)} ScienceQA) (seed {args.seed})")
        for key, value in result["outcomes"].items():
            print(f"  {key:40s} {value:6d}")
        print(f"uncaught exceptions:              {len(tally.uncaught)}")
        print(f"records pointing outside the data: {len(outside)}")
        print(f"slowest call: {tally.slowest:.3f} s; 12000x12000 PNG refused in {big_seconds * 1000:.1f} ms, "
              f"extra peak RSS {big_mb:.1f} MB")
        print(f"time: images {image_seconds:.1f} s, records {record_seconds:.1f} s "
              f"(load average {result['load_average_1min_end']:.1f})")
        for line in tally.uncaught[:5] + outside[:5]:
            print("  " + line)
    return 1 if tally.uncaught or outside else 0


if __name__ == "__main__":
    sys.exit(main())
