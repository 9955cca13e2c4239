"""``python -m clevr_poc render``: render the images of a generated dataset with Blender (paper §3.3).

A thin shell over :func:`clevr_poc.rendering.batch_render.render_dataset`: renders
``DIR/incomplete/scenes/<split>/*.json`` to ``DIR/incomplete/images/<split>/<image_filename>`` (and, with
``--complete``, the complete scenes to ``DIR/complete/images/...``), rewrites each scene file with its
ground truth (masks, boxes, ``pixel_coords``, camera), skips images already done (resumable; a folder rendered with other settings, as recorded in
``DIR/<kind>/images/render.json``, is refused unless ``--overwrite``), writes
atomically, and first removes the temp files a killed run left. Needs ``bpy`` (``pip install '.[render]' in the clevr_poc folder``); bad values end with one ``error: ...``
line and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from clevr_poc.commands.shared import Subparsers, add_command
from clevr_poc.errors import ClevrPocError

_EPILOG = """examples:
  python -m clevr_poc render --dataset clevr-poc --split train --workers 2
  python -m clevr_poc render --dataset clevr-poc --complete --samples 32
  python -m clevr_poc render --dataset clevr-poc --samples 512 --no-denoise --no-adaptive  # official settings
  python -m clevr_poc render --dataset clevr-poc --style ours                # our former look (320x240)
  python -m clevr_poc render --dataset clevr-poc --assets ~/clevr-poc/clevr-poc-dataset-gen/data  # official files
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``render`` sub-command (sets ``func=run``)."""
    from clevr_poc.rendering.render import DEFAULT_ENGINE, DEFAULT_SAMPLES
    from clevr_poc.rendering.styles import COLOUR_SPACES, DEFAULT_STYLE, STYLE_NAMES

    parser = add_command(
        subparsers,
        "render",
        help="render the scenes of a dataset folder to images with ground-truth masks (Blender)",
        description="Render the partial (and with --complete the complete) scenes of a dataset folder.\n"
                    "Resumable: images already rendered are skipped. The settings that decide the pixels are\n"
                    "recorded in DIR/<kind>/images/render.json; resuming with other settings is refused\n"
                    "(--overwrite renders every image again).",
        epilog=_EPILOG,
    )
    parser.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder (from `generate`)")
    parser.add_argument("--split", action="append", default=None, metavar="S",
                        help="split to render (repeatable; default: every split)")
    parser.add_argument("--complete", action="store_true", help="also render the complete scenes")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="N",
                        help="samples per pixel (default: %(default)s)")
    parser.add_argument("--style", default=DEFAULT_STYLE, choices=STYLE_NAMES,
                        help="look: official (the released images: 320x320, fixed official camera and lights, "
                             "official sizes and shaders) or ours (our former look, 320x240) (default: %(default)s)")
    parser.add_argument("--assets", default=None, metavar="DIR",
                        help="render with the official asset files: the data/ folder of the official CLEVR-POC "
                             "repository (clevr-poc-dataset-gen/data/: base_scene.blend, shapes/, materials/), from "
                             "your own clone; the files are read, never copied")
    parser.add_argument("--width", type=int, default=None, help="image width (default: the style's, official 320)")
    parser.add_argument("--height", type=int, default=None, help="image height (default: the style's, official 320)")
    parser.add_argument("--colour-space", default=None, choices=COLOUR_SPACES,
                        help="colours c/255 as linear values (official) or as sRGB (ours) (default: the style's)")
    parser.add_argument("--camera-jitter", type=float, default=None, metavar="J",
                        help="camera position jitter per coordinate, world units (default: the style's; official 0)")
    parser.add_argument("--light-jitter", type=float, default=None, metavar="J",
                        help="light position jitter per coordinate, world units (default: the style's; official 0)")
    parser.add_argument("--cone-lift", type=float, default=None, metavar="H",
                        help="cones float H above the floor, world units (default: the style's: official 0.118, "
                             "as the release's cones; ours 0)")
    parser.add_argument("--no-denoise", dest="denoise", action="store_false", help="no OpenImageDenoise")
    parser.add_argument("--no-adaptive", dest="adaptive", action="store_false", help="no adaptive sampling")
    parser.add_argument("--engine", default=DEFAULT_ENGINE, choices=("cycles", "eevee"),
                        help="render engine (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of camera/light jitter (default: the dataset's seed from DIR/dataset.json, "
                             "the one `generate` checked visibility with; 0 without one)")
    parser.add_argument("--min-pixels", type=int, default=None, metavar="P",
                        help="visible pixels an object needs (default: 40 at 320x240, scaled by image area)")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="parallel workers (default: 1)")
    parser.add_argument("--executor", default="local", choices=("local", "ray"),
                        help="local process pool (default) or Ray")
    parser.add_argument("--ray-address", default=None, metavar="ADDR", help="Ray cluster address")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="render at most N images now")
    parser.add_argument("--overwrite", action="store_true", help="render again images that are done (needed to re-render a folder with other settings)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(func=run, interrupted_line=interrupted_line)
    return parser


def interrupted_line(args: argparse.Namespace) -> str:
    """The Ctrl-C line: a rerun skips the images already rendered (not with ``--overwrite``)."""
    if args.overwrite:
        return ("interrupted: run the same command again without --overwrite to resume (images rendered so far "
                "are kept)")
    return "interrupted: run the same command again to resume (images rendered so far are kept)"


def run(args: argparse.Namespace) -> int:
    from clevr_poc.render_settings import RenderSettings
    from clevr_poc.rendering.batch_render import render_dataset
    from clevr_poc.rendering.render import RenderError

    from clevr_poc import limits

    for option, cap in (("samples", "samples"), ("width", "image_side"), ("height", "image_side"),
                        ("workers", "workers")):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise RenderError(f"--{option}: must be >= 1, got {value}")
        if value is not None and value > limits.cap(cap):
            raise RenderError(f"--{option}: {value:,} is over {limits.describe(cap)}")
    if args.limit is not None and args.limit < 0:
        raise RenderError(f"--limit: must be >= 0, got {args.limit}")
    from clevr_poc.commands.shared import require_dataset_folder

    require_dataset_folder(args.dataset)  # worded as evaluate's --dataset
    try:
        settings = RenderSettings(
            style=args.style, width=args.width, height=args.height, samples=args.samples, engine=args.engine,
            denoise=args.denoise, adaptive=args.adaptive, camera_jitter=args.camera_jitter,
            light_jitter=args.light_jitter, colour_space=args.colour_space, cone_lift=args.cone_lift,
            assets=args.assets, min_pixels=args.min_pixels)
        summary = render_dataset(
            args.dataset, splits=args.split, complete=args.complete, settings=settings, seed=args.seed,
            workers=args.workers, executor=args.executor, ray_address=args.ray_address, overwrite=args.overwrite,
            limit=args.limit, progress=not args.no_progress)
    except ClevrPocError:
        raise
    except OSError as exc:
        raise ClevrPocError(f"cannot render the dataset: {exc}") from None
    report = summary.report(stale_temp_files_removed=summary.stale_temp_files,
                            scenes_with_invisible_objects=len(summary.invisible))
    for warning in summary.warnings():
        print(warning, file=sys.stderr)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{args.dataset}: {summary.images} images ({summary.rendered} rendered now, "
              f"{summary.skipped} already there)")
        if summary.stale_temp_files:
            print(f"removed {summary.stale_temp_files} temp file(s) left by an interrupted run")
        if summary.rendered:
            print(f"rendering: {summary.seconds:.1f} s, {summary.seconds_per_image:.2f} s per image per worker")
        if summary.invisible:
            print(f"warning: {len(summary.invisible)} scene(s) with objects under the pixel minimum:")
            for scene, objects in summary.invisible[:10]:
                print(f"  {scene}: " + ", ".join(f"object {i} {p} px ({why})" for i, p, why in objects))
    return 0
