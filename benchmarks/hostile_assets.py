"""``render --assets DIR`` with a hostile ``base_scene.blend`` (issue #26 done-when): time, peak memory and
files written, against the same fake ``data/`` folder without the attacks, each render in a fresh process.

The hostile base scene holds all four attacks of the issue at once: a compositor File Output node aimed
at a folder outside the dataset, a Subdivision modifier at level 8 on the ground, a driver on the ground's
z, and a library linked at ``/dev/stdin`` (stdin of the render process is a pipe nobody writes to). Two
more variants peel the attacks off: ``no_link`` (the first three; refused by the polygon bound) and
``file_output`` (the File Output node alone: rendered, nothing written outside).
``--official`` also renders one image with the official ``data/`` folder (read-only; never copied).
Needs the render venv (``bpy``). Usage::

    python benchmarks/hostile_assets.py [--size 320] [--samples 16] [--official DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

RENDER = """
import json, resource, sys, time
from clevr_poc.errors import ClevrPocError
from clevr_poc.rendering import render_scene
from test_hostile_assets import SCENE
started = time.perf_counter()
try:
    render_scene(SCENE, sys.argv[2], assets=sys.argv[1], width=int(sys.argv[3]), height=int(sys.argv[3]),
                 samples=int(sys.argv[4]))
    outcome = "rendered"
except ClevrPocError as exc:
    outcome = f"{type(exc).__name__}: {exc}"
print(json.dumps({"seconds": time.perf_counter() - started, "outcome": outcome,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_folders(tmp: Path) -> tuple[dict[str, Path], Path]:
    """({variant: data/ folder}, the outside folder the File Output nodes aim at)."""
    import shutil

    import bpy

    from test_hostile_assets import _edit, _file_output_node, _link_stdin_library
    from test_render_styles import _write_fake_assets

    folders = {"normal": _write_fake_assets(tmp / "normal")}
    outside = tmp / "outside"
    outside.mkdir()

    def subdivision_and_driver(bpy_module):
        ground = bpy_module.data.objects["Ground"]
        modifier = ground.modifiers.new("Subsurf", "SUBSURF")
        modifier.levels = modifier.render_levels = 8
        ground.driver_add("location", 2).driver.expression = "1.0"
    variants = {"hostile": [_file_output_node(outside), subdivision_and_driver, _link_stdin_library(tmp)],
                "no_link": [_file_output_node(outside), subdivision_and_driver],
                "file_output": [_file_output_node(outside)]}
    for name, attacks in variants.items():
        folders[name] = tmp / name
        shutil.copytree(folders["normal"], folders[name])
        _edit(folders[name] / "base_scene.blend", lambda bpy_module, attacks=attacks: [a(bpy_module) for a in attacks])
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return folders, outside


def render(assets: Path, out: Path, size: int, samples: int) -> dict:
    read, write = os.pipe()  # stdin: a pipe nobody writes to (a /dev/stdin library would block on it)
    try:
        done = subprocess.run([sys.executable, "-c", RENDER, str(assets), str(out), str(size), str(samples)],
                              stdin=read, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"})
    finally:
        os.close(read)
        os.close(write)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"render process failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(lines[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=320)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--official", metavar="DIR", help="also render with this official data/ folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="clevr_poc_hostile_") as tmp_name:
        tmp = Path(tmp_name)
        folders, outside = write_folders(tmp)
        result = {name: render(folder, tmp / "ds" / f"{name}.png", args.size, args.samples)
                  for name, folder in folders.items()}
        if args.official:
            result["official"] = render(Path(args.official), tmp / "ds" / "official.png", args.size, args.samples)
        result["written_outside"] = sorted(p.name for p in outside.iterdir())
        result["dataset_files"] = sorted(p.name for p in (tmp / "ds").iterdir())
    variants = ("hostile", "no_link", "file_output")
    result["time_ratio"] = {v: round(result[v]["seconds"] / result["normal"]["seconds"], 3) for v in variants}
    result["memory_ratio"] = {v: round(result[v]["peak_rss_mb"] / result["normal"]["peak_rss_mb"], 3) for v in variants}
    result["load_average_1min_end"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name in ("normal", *variants, "official"):
            if name in result:
                r = result[name]
                print(f"{name:9s} {r['seconds']:7.2f} s  peak RSS {r['peak_rss_mb']:7.1f} MB  {r['outcome'][:150]}")
        print(f"variant / normal: time {result['time_ratio']}, memory {result['memory_ratio']}; written outside the "
              f"dataset: {result['written_outside']}; dataset: {result['dataset_files']} "
              f"(load average {result['load_average_1min_end']:.1f})")
    worst = max(*result["time_ratio"].values(), *result["memory_ratio"].values())
    return 0 if not result["written_outside"] and worst <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
