"""``python -m clevr_poc export``: write a dataset folder in another ecosystem's format.

::

    python -m clevr_poc export --format hf --dataset DIR --out OUT [--split test] [--shard-rows 1000] [--overwrite]

``--format hf``: a folder ``datasets.load_dataset(OUT)`` reads (Parquet shards with typed features and a
dataset card; :mod:`clevr_poc.export.hf_writer`), which ``evaluate --dataset OUT`` also reads back. Needs the
``[hf]`` extra. Prints one line per split and, last, a JSON summary.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from clevr_poc.commands.shared import (
    Subparsers, add_command, check_output_folder, positive_int, require_dataset_folder,
)

FORMATS: tuple[str, ...] = ("hf",)

_EPILOG = """examples:
  python -m clevr_poc export --format hf --dataset clevr-poc --out clevr-poc-hf
  python -m clevr_poc export --format hf --dataset RELEASE/output --out clevr-poc-release-hf --split testing
then: datasets.load_dataset("clevr-poc-hf", split="test"), or push it: docs/export.md
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``export`` sub-command (sets ``func=run``)."""
    parser = add_command(
        subparsers,
        "export",
        help="export a dataset folder as a Hugging Face datasets folder (Parquet + dataset card)",
        description="Write a CLEVR-POC dataset folder (ours or the official release) in the Hugging Face\n"
                    "datasets format: typed columns, Parquet shards, a dataset card with citation and licence.",
        epilog=_EPILOG,
    )
    parser.add_argument("--format", required=True, choices=FORMATS, help="output format (hf = Hugging Face datasets)")
    parser.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder (ours or the official layout)")
    parser.add_argument("--out", required=True, metavar="OUT", help="export folder")
    parser.add_argument("--split", action="append", metavar="S",
                        help="a split to export (repeat for several; default: all)")
    parser.add_argument("--shard-rows", type=positive_int, default=1000, metavar="N",
                        help="rows per Parquet file (default 1000)")
    parser.add_argument("--name", metavar="NAME", help="the dataset's name in its card (default: the folder's)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier export in --out")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from clevr_poc.errors import ClevrPocError

    require_dataset_folder(args.dataset)
    missing = [m for m in ("datasets", "pyarrow") if importlib.util.find_spec(m) is None]
    if missing:
        raise ClevrPocError(f"export --format hf needs {', '.join(missing)} (not installed): install the [hf] "
                            "extra (pip install '.[hf]' in the clevr_poc folder)")
    from clevr_poc.export.hf_writer import export_hf

    check_output_folder(args.out, "--out")
    summary = export_hf(args.dataset, args.out, splits=args.split, shard_rows=args.shard_rows,
                        overwrite=args.overwrite, name=args.name)
    for split, rows in summary.rows.items():
        print(f"{split}: {rows} questions")
    if summary.missing_images:
        print(f"note: {summary.missing_images} question(s) without a rendered image (image is null)")
    print(json.dumps({"out": str(summary.out), "rows": summary.rows, "files": len(summary.files),
                      "missing_images": summary.missing_images}))
    return 0
