"""Answers from pixels on the release's look, beside the procedural official style and our own style.

    python benchmarks/perception_looks.py --assets DATA_DIR --out DIR            # generate, render, evaluate
        [--seed 9101 --environments 40 --scenes-per-environment 9]              # >= 300 questions, never trained on
        [--looks assets,official,ours] [--samples 16] [--workers 2] [--checkpoint models/perception] [--json FILE]
    python benchmarks/perception_looks.py --out DIR --skip-render               # evaluate what DIR holds

One fresh dataset (``generate --seed SEED --splits test=1.0``: a seed no shipped checkpoint was trained on)
is copied once per look into ``DIR/<look>`` and rendered there: ``assets`` with the official asset files
(``render --assets DATA_DIR``: the release's ``base_scene.blend``, shapes and node groups; cones float 0.118
as the release's), ``official`` with the procedural official style (no files), ``ours`` with our former look.
Then, as the release's scene files have no camera, the ``camera`` of every partial-scene JSON is deleted
(perception then uses the official camera, ``--camera auto``), and the perception checkpoint is measured on
each copy with :func:`clevr_poc.perception.evaluation.evaluate` (gold ASP query, constraint-aware decoding):
answers from pixels (exact, mean Jaccard), detection precision / recall, accuracy per attribute and region,
answers per question family and per occlusion level (the image's least visible object), recall per
object visibility. Resumable: rendered images are kept. Needs ``bpy`` (render) and torch (perception): the
``[demo]`` extra.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from clevr_poc import domain
from clevr_poc._io import atomic_write_json, read_json
from clevr_poc.commands.main import main as clevr_poc_main

LOOKS = ("assets", "official", "ours")


def strip_cameras(dataset: Path) -> int:
    """Delete ``camera`` from every partial-scene JSON of ``dataset`` (as the release's files are); returns
    how many files changed."""
    changed = 0
    for path in sorted((dataset / "incomplete" / "scenes").glob("*/*.json")):
        data = read_json(path)
        if "camera" in data:
            del data["camera"]
            atomic_write_json(path, data)
            changed += 1
    return changed


def prepare(args: argparse.Namespace, look: str) -> Path:
    """Generate (once), copy and render the dataset of ``look``; returns its folder."""
    base = args.out / "base"
    if not (base / "dataset.json").exists():
        code = clevr_poc_main(["generate", "--out", str(base), "--environments", str(args.environments),
                               "--scenes-per-environment", str(args.scenes_per_environment), "--seed", str(args.seed),
                               "--splits", "test=1.0", "--no-progress"])
        if code:
            raise SystemExit(code)
    folder = args.out / look
    if not folder.exists():
        shutil.copytree(base, folder)
    flags = {"assets": ["--assets", str(args.assets)], "official": ["--style", "official"],
             "ours": ["--style", "ours"]}[look]
    start = time.perf_counter()
    code = clevr_poc_main(["render", "--dataset", str(folder), "--samples", str(args.samples), "--workers",
                           str(args.workers), "--no-progress", *flags])
    if code:
        raise SystemExit(code)
    print(f"{look}: rendered in {time.perf_counter() - start:.0f} s", flush=True)
    return folder


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def print_table(reports: dict[str, dict]) -> None:
    looks = list(reports)
    print("\n| " + " | ".join(["measure"] + looks) + " |")
    print("|" + "---|" * (len(looks) + 1))

    def row(label: str, get) -> None:
        print("| " + " | ".join([label] + [fmt(get(reports[look])) for look in looks]) + " |")

    row("images (questions)", lambda r: r["images"])
    row("**answers from pixels, exact**", lambda r: r["constraints"]["answers"])
    row("answers, mean Jaccard", lambda r: r["constraints"]["answers_jaccard"])
    row("answers, argmax decoding", lambda r: r["argmax"]["answers"])
    row("detection precision", lambda r: r["constraints"]["detection"]["precision"])
    row("detection recall", lambda r: r["constraints"]["detection"]["recall"])
    for attribute in domain.ATTRIBUTES:
        row(attribute, lambda r, a=attribute: r["constraints"]["attributes"][a])
    row("region", lambda r: r["constraints"]["region"])
    row("scene exact", lambda r: r["constraints"]["scene_exact"])
    for key, title in (("answers_by_family", "answers, family"), ("answers_by_occlusion", "answers, least visible object"),
                       ("recall_by_visibility", "recall, object")):
        labels = sorted({label for r in reports.values() for label in r["breakdowns"][key]},
                        key=lambda x: (x[0].isdigit(), x))
        for label in labels:
            print("| " + " | ".join([f"{title} {label}"] + [
                "n/a" if label not in reports[look]["breakdowns"][key] else
                f"{reports[look]['breakdowns'][key][label]['accuracy']:.3f} (n {reports[look]['breakdowns'][key][label]['n']})"
                for look in looks]) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="working folder (one sub-folder per look)")
    parser.add_argument("--assets", type=Path, default=None, help="the official data/ folder (look 'assets')")
    parser.add_argument("--looks", default=",".join(LOOKS), help="comma-separated subset of assets,official,ours")
    parser.add_argument("--seed", type=int, default=9101)
    parser.add_argument("--environments", type=int, default=40)
    parser.add_argument("--scenes-per-environment", type=int, default=9)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--checkpoint", type=Path, default=Path(__file__).resolve().parents[1] / "models" / "perception")
    parser.add_argument("--skip-render", action="store_true", help="evaluate the looks already rendered in --out")
    parser.add_argument("--limit", type=int, default=None, help="evaluate at most N questions per look")
    parser.add_argument("--json", type=Path, default=None, help="write every report to this JSON file")
    args = parser.parse_args(argv)
    looks = [x for x in args.looks.split(",") if x]
    if any(look not in LOOKS for look in looks):
        parser.error(f"--looks: choose from {','.join(LOOKS)}")
    if "assets" in looks and args.assets is None and not args.skip_render:
        parser.error("the look 'assets' needs --assets DATA_DIR (the official data/ folder)")

    from clevr_poc.perception import Perception
    from clevr_poc.perception.evaluation import evaluate

    perception = Perception.from_pretrained(args.checkpoint, device="cpu")
    reports = {}
    for look in looks:
        folder = args.out / look if args.skip_render else prepare(args, look)
        print(f"{look}: {strip_cameras(folder)} scene files had a camera (deleted)", flush=True)
        start = time.perf_counter()
        reports[look] = evaluate(perception, folder, split="test", limit=args.limit, progress=False)
        print(f"{look}: evaluated {reports[look]['images']} questions in {time.perf_counter() - start:.0f} s; "
              f"cameras {reports[look]['cameras']}", flush=True)
    print(f"\ncheckpoint {args.checkpoint}; gold ASP query, constraint-aware decoding; no camera in the scene files")
    print_table(reports)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
