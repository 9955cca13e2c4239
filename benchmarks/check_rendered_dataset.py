"""Check that a rendered dataset folder is complete and uncorrupted (after interrupted and resumed renders).

    python benchmarks/check_rendered_dataset.py DIR [--kind incomplete] [--json]

For every scene file ``DIR/<kind>/scenes/<split>/*.json``: the JSON parses (``clevr_poc.scene.Scene``),
carries the ``render`` key and ground truth (``camera``; ``mask``/``bbox``/``pixel_coords`` per object),
and its image ``DIR/<kind>/images/<split>/<image_filename>`` exists and decodes fully with PIL
(``verify()`` on one handle, ``load()`` on a second; the size must equal the scene's ``render`` width and
height). Also lists temp files (``.*.tmp``) anywhere under DIR and PNGs without a scene. Exit status 0
when every scene is rendered and valid and no temp file is left, 1 otherwise; the counts are printed
(one JSON object with ``--json``). Needs Pillow only (no bpy).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from clevr_poc.errors import ClevrPocError
from clevr_poc.scene import Scene


def check_image(path: Path, width: int, height: int) -> str | None:
    """None when ``path`` is a complete PNG of ``width`` x ``height`` pixels, else why not."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.verify()  # checksums of every chunk, without decoding
        with Image.open(path) as image:
            if image.format != "PNG":
                return f"not a PNG ({image.format})"
            image.load()  # decodes every pixel (a truncated file raises)
            if image.size != (width, height):
                return f"size {image.size}, expected {(width, height)}"
    except FileNotFoundError:
        return "missing"
    except Exception as exc:  # PIL raises several types for a corrupt file
        return f"{exc.__class__.__name__}: {exc}"
    return None


def check_dataset(dataset: Path, kind: str = "incomplete") -> dict:
    """Counts and problems of ``dataset``'s ``kind`` scenes and images (module doc)."""
    counts: Counter[str] = Counter()
    problems: list[str] = []
    scenes_root, images_root = dataset / kind / "scenes", dataset / kind / "images"
    expected_images: set[Path] = set()
    for scene_path in sorted(scenes_root.glob("*/*.json")):
        split = scene_path.parent.name
        counts[f"scenes_{split}"] += 1
        counts["scenes"] += 1
        try:
            data = json.loads(scene_path.read_text(encoding="utf-8"))
            scene = Scene.from_json(data)
        except (ValueError, ClevrPocError) as exc:
            problems.append(f"{scene_path}: bad JSON ({exc})")
            continue
        image_path = images_root / split / Path(scene.image_filename or "").name
        expected_images.add(image_path)
        if "render" not in data:
            counts["scenes_not_rendered"] += 1
            if image_path.exists():
                counts["images_without_render_key"] += 1  # a kill between the PNG and the JSON: re-rendered
            continue
        render = data["render"]
        if "camera" not in data or any(k not in o for o in data["objects"] for k in ("mask", "bbox", "pixel_coords")):
            problems.append(f"{scene_path}: ground truth missing")
        why = check_image(image_path, int(render["width"]), int(render["height"]))
        if why:
            problems.append(f"{image_path}: {why}")
        else:
            counts["rendered_valid"] += 1
    stray = sorted(p for p in images_root.glob("*/*.png") if p not in expected_images)
    temps = sorted(str(p) for p in dataset.rglob(".*.tmp"))
    problems += [f"{p}: PNG without a scene file" for p in stray]
    problems += [f"{p}: temp file left" for p in temps]
    return {"dataset": str(dataset), "kind": kind, "counts": dict(sorted(counts.items())),
            "temp_files": temps, "problems": problems,
            "complete": not problems and counts["rendered_valid"] == counts["scenes"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--kind", default="incomplete", choices=("incomplete", "complete"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = check_dataset(args.dataset, args.kind)
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report["counts"].items():
            print(f"{key}: {value}")
        for problem in report["problems"][:50]:
            print(f"problem: {problem}")
        print("complete and valid" if report["complete"] else "NOT complete/valid")
    return 0 if report["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
