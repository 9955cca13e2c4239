"""``python -m clevr_poc generate``: write a CLEVR-POC dataset (environments, scenes, labelled questions).

A thin shell over :func:`clevr_poc.generation.dataset_writer.generate_dataset` (see there for the layout,
determinism, resuming and the visibility check). Running the same command again on the same folder
finishes an interrupted run (removing the temp files a hard kill left); a folder generated with other
settings is refused. Bad values (``--splits train=abc``, a negative count, an unknown executor, a count
over its cap in :mod:`clevr_poc.limits` such as ``--environments 100000000000``, an ``--out`` that cannot be
written, a core install without the [generate] extra) end with one ``error: ...`` line and exit status 1,
before anything is written.

Every layout is checked from the camera the renderer will use (on by default; ``--no-visibility-check``
turns it off). ``--render`` then renders the images by the very code path of ``python -m clevr_poc render
--dataset DIR`` (:func:`clevr_poc.rendering.batch_render.render_dataset`, resumable, the dataset's seed); it
needs Blender's ``bpy`` (``pip install '.[render]'``), checked before anything is generated.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from clevr_poc.commands.shared import Subparsers, add_command
from clevr_poc.errors import ClevrPocError

_EPILOG = """examples:
  python -m clevr_poc generate --out clevr-poc --environments 30 --scenes-per-environment 100 --seed 0
  python -m clevr_poc generate --out small --environments 2 --scenes-per-environment 3 --seed 1 \\
      --splits train=0.8,test=0.2 --workers 2
  python -m clevr_poc generate --out big --environments 30 --scenes-per-environment 33334 --seed 0 \\
      --executor ray --ray-address auto
  python -m clevr_poc generate --out small --environments 2 --scenes-per-environment 3 --seed 1 \\
      --render --samples 8          # then render the partial images (needs pip install '.[render]')
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``generate`` sub-command (sets ``func=run``)."""
    parser = add_command(
        subparsers,
        "generate",
        help="generate a CLEVR-POC dataset (environments, complete/partial scenes, labelled questions)",
        description="Generate a CLEVR-POC dataset: E environments x S scenes, one labelled question per scene.\n"
                    "Deterministic for a seed (whatever --workers/--executor) and resumable.",
        epilog=_EPILOG,
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="dataset folder (new, or one to resume)")
    parser.add_argument("--environments", required=True, metavar="E", help="number of environments (paper: 30)")
    parser.add_argument("--scenes-per-environment", required=True, metavar="S",
                        help="scenes (= questions) per environment")
    parser.add_argument("--seed", required=True, metavar="K", help="random seed (integer)")
    parser.add_argument("--splits", default="train=0.6,val=0.2,test=0.2", metavar="NAME=SHARE,...",
                        help="split shares, adding up to 1 (default: %(default)s)")
    parser.add_argument("--query-shares", default="color=0.4,shape=0.4,size=0.1,material=0.1",
                        metavar="ATTR=SHARE,...", help="query attribute shares (default: %(default)s, paper App. B)")
    parser.add_argument("--workers", default="1", metavar="N", help="parallel workers (default: 1)")
    parser.add_argument("--executor", default="local", metavar="{local,ray}",
                        help="local process pool (default) or Ray")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="Ray cluster address (default: start a local Ray instance)")
    parser.add_argument("--chunksize", default="4", metavar="C", help="examples per worker task (default: 4)")
    parser.add_argument("--write-batch", default="32", metavar="B",
                        help="examples written to disk at once, durably (default: 32; a kill -9 loses at most one "
                             "batch of finished examples, three with --workers 2 or more, whose batches are "
                             "written beside the work; the files do not depend on it)")
    parser.add_argument("--visibility-check", default="both", choices=("both", "partial", "off"),
                        help="check layouts from the render camera: every object of the complete image "
                             "('both', default; implies the partial image), the partial image only ('partial'), "
                             "or no check ('off')")
    parser.add_argument("--no-visibility-check", dest="visibility_check", action="store_const", const="off",
                        help="same as --visibility-check off")
    parser.add_argument("--min-visible-pixels", default=None, metavar="P",
                        help="pixels every checked object must cover at 320x320 (default: the renderer's, 53)")
    parser.add_argument("--render", action="store_true",
                        help="then render the images (the `render` command's code path; needs bpy)")
    parser.add_argument("--render-complete", action="store_true",
                        help="with --render: also render the complete scenes")
    parser.add_argument("--samples", default=None, metavar="N",
                        help="with --render: samples per pixel (default: the renderer's, 8)")
    parser.add_argument("--style", default="official", choices=("official", "ours"),
                        help="with --render: render style (default: official; layouts are checked from the "
                             "official camera either way)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(func=run, interrupted_line=interrupted_line)
    return parser


def interrupted_line(args: argparse.Namespace) -> str:
    """The Ctrl-C line: a rerun on the same folder keeps what was written and finishes the rest."""
    done = "examples and images written so far are kept" if args.render else "examples written so far are kept"
    return f"interrupted: run the same command again to resume ({done})"


#: Python modules of the [generate] extra, checked before anything is written.
GENERATE_MODULES: tuple[str, ...] = ("tqdm", "matplotlib", "scipy")


def _whole(shares: dict[str, float], option: str, example: str) -> dict[str, float]:
    """``shares`` when they add up to 1 (to 1e-6): the command takes shares, not weights, so that a typo
    (``train=0.5,test=0.6``) is not silently rescaled (the library's ``DatasetConfig`` normalises).

    Raises:
        DatasetConfigError: naming the option, the sum and an example.
    """
    total = sum(shares.values())
    if abs(total - 1.0) > 1e-6:
        from clevr_poc.generation.dataset_config import DatasetConfigError

        raise DatasetConfigError(f"{option}: the shares add up to {total:g}, not 1 (e.g. {example})")
    return shares


#: Unused templates named on the console; the full list is ``templates_missing`` in ``stats.json``.
UNUSED_TEMPLATES_SHOWN = 3


def unused_templates_line(missing: list[str], templates: int, stats_file: Path) -> str:
    """The console line on the question templates no question used: their count out of ``templates`` and
    at most :data:`UNUSED_TEMPLATES_SHOWN` names, e.g. ``templates never used: 19 of 28 (one_hop.json#0,
    one_hop.json#1, one_hop.json#2, ...; all 19 under templates_missing in small/stats.json)``."""
    names = ", ".join(missing[:UNUSED_TEMPLATES_SHOWN])
    if len(missing) > UNUSED_TEMPLATES_SHOWN:
        names += f", ...; all {len(missing)} under templates_missing in {stats_file}"
    return f"templates never used: {len(missing)} of {templates} ({names})"


def _require_generate_extra() -> None:
    """A one-line error naming the [generate] extra when one of its modules is missing (core install)."""
    import importlib.util

    missing = [name for name in GENERATE_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ClevrPocError(f"generate needs {', '.join(missing)} (not installed): install the [generate] extra "
                            f"(pip install '.[generate]' in the clevr_poc folder)")


def _check_min_pixels(min_pixels: int | None) -> None:
    """``--min-visible-pixels`` is at most the pixels of the image the check assumes (the renderer's default size).

    Raises:
        DatasetConfigError: naming the flag, the bound and the value.
    """
    from clevr_poc.generation.dataset_config import DatasetConfigError
    from clevr_poc.rendering.render import DEFAULT_HEIGHT, DEFAULT_WIDTH

    if min_pixels is not None and min_pixels > DEFAULT_WIDTH * DEFAULT_HEIGHT:
        raise DatasetConfigError(f"--min-visible-pixels: must be <= {DEFAULT_WIDTH * DEFAULT_HEIGHT:,} (the pixels "
                                 f"of a {DEFAULT_WIDTH} x {DEFAULT_HEIGHT} image), got {min_pixels:,}")


def run(args: argparse.Namespace) -> int:
    from clevr_poc.executors import EXECUTORS
    from clevr_poc.generation.dataset_config import DatasetConfig, DatasetConfigError, parse_shares
    from clevr_poc.generation.dataset_writer import generate_dataset
    from clevr_poc.rendering.render import DEFAULT_SAMPLES, RenderError, bpy_available

    from clevr_poc.commands.shared import check_output_folder, integer_setting
    from clevr_poc.generation.dataset_config import check_generation_caps

    environments = integer_setting(args.environments, "--environments", 1, "environments")
    scenes = integer_setting(args.scenes_per_environment, "--scenes-per-environment", 1, "examples")
    check_generation_caps(environments, scenes, flags=("--environments", "--scenes-per-environment"))
    seed = integer_setting(args.seed, "--seed")
    workers = integer_setting(args.workers, "--workers", 1, "workers")
    chunksize = integer_setting(args.chunksize, "--chunksize", 1, "examples")
    write_batch = integer_setting(args.write_batch, "--write-batch", 1, "examples")
    splits = _whole(parse_shares(args.splits, what="--splits"), "--splits", "train=0.6,val=0.2,test=0.2")
    query_shares = _whole(parse_shares(args.query_shares, what="--query-shares"), "--query-shares",
                          "color=0.4,shape=0.4,size=0.1,material=0.1")
    from clevr_poc import domain

    unknown = [name for name in query_shares if name not in domain.ATTRIBUTES]
    if unknown:
        raise DatasetConfigError(f"--query-shares: unknown attribute {unknown[0]!r}; expected some of "
                                 f"{list(domain.ATTRIBUTES)}")
    if args.executor not in EXECUTORS:
        raise DatasetConfigError(f"--executor: expected one of {list(EXECUTORS)}, got {args.executor!r}")
    if args.ray_address is not None and args.executor != "ray":
        raise DatasetConfigError("--ray-address needs --executor ray")
    min_pixels = None if args.min_visible_pixels is None else integer_setting(args.min_visible_pixels,
                                                                       "--min-visible-pixels", 1)
    _check_min_pixels(min_pixels)
    if (args.samples is not None or args.render_complete) and not args.render:
        raise DatasetConfigError("--samples and --render-complete need --render")
    samples = DEFAULT_SAMPLES if args.samples is None else integer_setting(args.samples, "--samples", 1, "samples")
    _require_generate_extra()
    if args.render and not bpy_available():  # before generating anything
        raise RenderError("--render needs Blender's Python module (bpy); install it with pip install '.[render]' "
                          "(bpy==5.0.1, Python 3.11), or generate without --render")
    # every setting as generate_dataset will check it, before the folder is created
    DatasetConfig(environments, scenes, seed, tuple(splits.items()), tuple(query_shares.items()),
                  visibility_check=args.visibility_check, min_visible_pixels=min_pixels)
    check_output_folder(args.out, "--out")
    try:
        summary = generate_dataset(
            args.out, environments=environments, scenes_per_environment=scenes, seed=seed, splits=splits,
            query_shares=query_shares, workers=workers, executor=args.executor, ray_address=args.ray_address,
            progress=not args.no_progress, chunksize=chunksize, visibility_check=args.visibility_check,
            min_visible_pixels=min_pixels, write_batch=write_batch)
        rendered = None
        if args.render:
            from clevr_poc.rendering.batch_render import render_dataset

            from clevr_poc.rendering.render_manifest import RenderSettingsError

            width, height = summary.config.image_size if args.style == "official" else (None, None)
            try:
                rendered = render_dataset(
                    args.out, complete=args.render_complete, samples=samples, width=width, height=height,
                    style=args.style, seed=summary.config.seed, min_pixels=summary.config.min_visible_pixels,
                    workers=workers, executor=args.executor, ray_address=args.ray_address,
                    progress=not args.no_progress)
            except RenderSettingsError as exc:  # generate has no --overwrite: say what does
                raise RenderSettingsError(exc.folder, exc.differences, advice=(
                    f"use the same render settings, another --out, or `python -m clevr_poc render --dataset "
                    f"{args.out} --overwrite ...` to re-render")) from None
            for warning in rendered.warnings():
                print(warning, file=sys.stderr)
    except ClevrPocError:
        raise
    except OSError as exc:  # disk full, permission denied, ...
        raise ClevrPocError(f"cannot write the dataset: {exc}") from None
    stats = summary.stats
    generation = stats["generation"]
    report = {
        "out": str(summary.out_dir), "examples": summary.examples, "generated": summary.generated,
        "skipped": summary.skipped, "stale_temp_files_removed": summary.stale_temp_files,
        "environments_seconds": round(summary.environments_seconds, 2),
        "examples_seconds": round(summary.examples_seconds, 2), "stats_seconds": round(summary.stats_seconds, 2),
        "stats_reused": summary.stats_reused,
        "questions_per_second": round(summary.questions_per_second, 1) if summary.generated else None,
        "splits": stats["splits"], "query_attribute_shares": stats["query_attribute_shares"],
        "query_attribute_fallbacks": stats["query_attribute_fallbacks"],
        "templates_missing": stats["templates_missing"],
        "visibility": generation["visibility"]["check"],
        "layouts_checked": generation["layouts_checked"],
        "visibility_rejections": generation["visibility_rejections"],
        "visibility_rejection_rate": generation["visibility_rejection_rate"],
        "visibility_seconds_per_example": (round(summary.visibility_seconds / summary.generated, 4)
                                           if summary.generated else None),
    }
    if rendered is not None:
        report["render"] = rendered.report()
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{summary.out_dir}: {summary.examples} questions ({summary.generated} generated now, "
              f"{summary.skipped} already there) over {summary.config.environments} environments")
        if summary.stale_temp_files:
            print(f"removed {summary.stale_temp_files} temp file(s) left by an interrupted run")
        if summary.stats_reused:
            print("statistics unchanged: nothing was generated, so stats.json, figures/ and README.md are kept")
        if summary.generated:
            print(f"generation: {summary.examples_seconds:.1f} s ({summary.questions_per_second:.1f} questions/s), "
                  f"environments {summary.environments_seconds:.1f} s, statistics {summary.stats_seconds:.1f} s")
        print("splits: " + ", ".join(f"{k} {v}" for k, v in stats["splits"].items()))
        print("query attributes: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in stats["query_attribute_shares"].items()))
        if stats["templates_missing"]:
            print(unused_templates_line(stats["templates_missing"], len(stats["templates"]),
                                        summary.out_dir / "stats.json"))
        if generation["visibility"]["check"] != "off":
            print(f"visibility ({generation['visibility']['check']}, >= {generation['visibility']['min_pixels']} px): "
                  f"{generation['visibility_rejections']} of {generation['layouts_checked']} layouts rejected "
                  f"({100 * generation['visibility_rejection_rate']:.1f} %)")
        if rendered is not None:
            print(f"rendering: {rendered.rendered} images rendered now, {rendered.skipped} already there")
            if rendered.invisible:
                print(f"warning: {len(rendered.invisible)} image(s) with objects under the pixel minimum")
    return 0
