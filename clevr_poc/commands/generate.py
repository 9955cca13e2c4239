"""``python -m clevr_poc generate``: write a CLEVR-POC dataset (environments, scenes, labelled questions).

A thin shell over :func:`clevr_poc.generation.dataset.generate_dataset` (see there for the layout,
determinism and resuming). Running the same command again on the same folder finishes an interrupted
run; a folder generated with other settings is refused. Bad values (``--splits train=abc``, a
negative count, an unknown executor) end with one ``error: ...`` line and exit status 1.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from clevr_poc.errors import ClevrPocError

_EPILOG = """examples:
  python -m clevr_poc generate --out clevr-poc --environments 30 --scenes-per-environment 100 --seed 0
  python -m clevr_poc generate --out small --environments 2 --scenes-per-environment 3 --seed 1 \\
      --splits train=0.8,test=0.2 --workers 2
  python -m clevr_poc generate --out big --environments 30 --scenes-per-environment 33334 --seed 0 \\
      --executor ray --ray-address auto
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``generate`` sub-command (sets ``func=run``)."""
    parser = subparsers.add_parser(
        "generate",
        help="generate a CLEVR-POC dataset (environments, complete/partial scenes, labelled questions)",
        description="Generate a CLEVR-POC dataset: E environments x S scenes, one labelled question per scene.\n"
                    "Deterministic for a seed (whatever --workers/--executor) and resumable.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="dataset folder (new, or one to resume)")
    parser.add_argument("--environments", required=True, metavar="E", help="number of environments (paper: 30)")
    parser.add_argument("--scenes-per-environment", required=True, metavar="S",
                        help="scenes (= questions) per environment")
    parser.add_argument("--seed", required=True, metavar="K", help="random seed (integer)")
    parser.add_argument("--splits", default="train=0.6,val=0.2,test=0.2", metavar="NAME=SHARE,...",
                        help="split shares (default: %(default)s)")
    parser.add_argument("--query-shares", default="color=0.4,shape=0.4,size=0.1,material=0.1",
                        metavar="ATTR=SHARE,...", help="query attribute shares (default: %(default)s, paper App. B)")
    parser.add_argument("--workers", default="1", metavar="N", help="parallel workers (default: 1)")
    parser.add_argument("--executor", default="local", metavar="{local,ray}",
                        help="local process pool (default) or Ray")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="Ray cluster address (default: start a local Ray instance)")
    parser.add_argument("--chunksize", default="4", metavar="C", help="examples per worker task (default: 4)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(func=run)
    return parser


def _integer(text: str, option: str, minimum: int | None = None) -> int:
    from clevr_poc.generation.dataset import DatasetConfigError

    try:
        value = int(str(text).strip())
    except ValueError:
        raise DatasetConfigError(f"{option}: expected an integer, got {text!r}") from None
    if minimum is not None and value < minimum:
        raise DatasetConfigError(f"{option}: must be >= {minimum}, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from clevr_poc.executors import EXECUTORS
    from clevr_poc.generation.dataset import DatasetConfigError, generate_dataset, parse_shares

    environments = _integer(args.environments, "--environments", 1)
    scenes = _integer(args.scenes_per_environment, "--scenes-per-environment", 1)
    seed = _integer(args.seed, "--seed")
    workers = _integer(args.workers, "--workers", 1)
    chunksize = _integer(args.chunksize, "--chunksize", 1)
    splits = parse_shares(args.splits, what="--splits")
    query_shares = parse_shares(args.query_shares, what="--query-shares")
    if args.executor not in EXECUTORS:
        raise DatasetConfigError(f"--executor: expected one of {list(EXECUTORS)}, got {args.executor!r}")
    if args.ray_address is not None and args.executor != "ray":
        raise DatasetConfigError("--ray-address needs --executor ray")
    try:
        summary = generate_dataset(
            args.out, environments=environments, scenes_per_environment=scenes, seed=seed, splits=splits,
            query_shares=query_shares, workers=workers, executor=args.executor, ray_address=args.ray_address,
            progress=not args.no_progress, chunksize=chunksize)
    except ClevrPocError:
        raise
    except OSError as exc:  # disk full, permission denied, ...
        raise ClevrPocError(f"cannot write the dataset: {exc}") from None
    stats = summary.stats
    report = {
        "out": str(summary.out_dir), "examples": summary.examples, "generated": summary.generated,
        "skipped": summary.skipped, "environments_seconds": round(summary.environments_seconds, 2),
        "examples_seconds": round(summary.examples_seconds, 2), "stats_seconds": round(summary.stats_seconds, 2),
        "questions_per_second": round(summary.questions_per_second, 1) if summary.generated else None,
        "splits": stats["splits"], "query_attribute_shares": stats["query_attribute_shares"],
        "query_attribute_fallbacks": stats["query_attribute_fallbacks"],
        "templates_missing": stats["templates_missing"],
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{summary.out_dir}: {summary.examples} questions ({summary.generated} generated now, "
              f"{summary.skipped} already there) over {summary.config.environments} environments")
        if summary.generated:
            print(f"generation: {summary.examples_seconds:.1f} s ({summary.questions_per_second:.1f} questions/s), "
                  f"environments {summary.environments_seconds:.1f} s, statistics {summary.stats_seconds:.1f} s")
        print("splits: " + ", ".join(f"{k} {v}" for k, v in stats["splits"].items()))
        print("query attributes: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in stats["query_attribute_shares"].items()))
        if stats["templates_missing"]:
            print(f"templates never used: {', '.join(stats['templates_missing'])}")
    return 0
