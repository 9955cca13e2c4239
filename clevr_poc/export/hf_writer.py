"""``export --format hf``: a dataset folder (ours or the official release) -> a Hugging Face ``datasets`` folder.

::

    OUT/README.md                               dataset card: YAML header (configs, licence, task), citation
    OUT/data/<split>-00000-of-00003.parquet     the rows (:mod:`clevr_poc.export.hf_columns`), at most
                                                ``shard_rows`` per file, with the ``datasets`` feature types
    OUT/clevr_poc_export.json                   what was exported (source, splits, counts, columns)

``datasets.load_dataset(OUT)`` (or ``load_dataset("parquet", data_dir=OUT/data)``) reads it; so does
:func:`clevr_poc.load_dataset` / ``evaluate --dataset OUT`` (:mod:`clevr_poc.export.hf_reader`). Split
names follow the Hub's conventions (``train``, ``validation``, ``test``; the official ``training`` /
``validation`` / ``testing`` are renamed, the source name stays in the ``split`` column).

Needs the ``[hf]`` extra (``datasets``, ``pyarrow``). Files are written atomically; an ``OUT`` that
already holds an export is refused unless ``overwrite`` is set (the old shards are then removed).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from clevr_poc._io import atomic_path, atomic_write_json, atomic_write_text
from clevr_poc.errors import FormatError, OutputPathError

#: The export's manifest (also how readers recognise an export folder).
MANIFEST = "clevr_poc_export.json"
FORMAT_NAME, FORMAT_VERSION = "clevr_poc-hf", 1
#: Rows per Parquet shard: 1,000 keeps a shard of 320x240 PNGs near 100 MB, under the Hub's advice
#: of at most ~500 MB per file.
SHARD_ROWS = 1_000
#: Hub split name of each source split name (the rest are kept as they are).
HUB_SPLITS: dict[str, str] = {"train": "train", "training": "train", "val": "validation",
                              "validation": "validation", "test": "test", "testing": "test"}


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_hf` wrote: rows per Hub split, the files (relative to ``out``), images missing."""

    out: Path
    rows: dict[str, int]
    files: list[str] = field(default_factory=list)
    missing_images: int = 0


def export_hf(dataset: str | os.PathLike[str], out: str | os.PathLike[str], *,
              splits: Sequence[str] | None = None, shard_rows: int = SHARD_ROWS, overwrite: bool = False,
              name: str | None = None, progress: Callable[[int], None] | None = None) -> ExportSummary:
    """Export ``dataset`` (any layout :func:`clevr_poc.load_dataset` reads) to ``out``.

    Args:
        dataset: the source dataset folder.
        out: the export folder (created; must not hold an export unless ``overwrite``).
        splits: source splits to export (default: all).
        shard_rows: rows per Parquet file, >= 1.
        overwrite: replace an earlier export in ``out``.
        name: the dataset's name in the card (default: the source folder's name).
        progress: called with the number of rows written after each shard.

    Raises:
        FormatError: a bad source (naming the file), ``shard_rows`` < 1, two source splits mapping to one
            Hub split.
        OutputPathError: ``out`` holds an export and ``overwrite`` is false.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.export.hf_card import dataset_card
    from clevr_poc.export.hf_columns import COLUMNS, example_row, features

    if not isinstance(shard_rows, int) or shard_rows < 1:
        raise FormatError("must be a positive integer", field="shard_rows", value=shard_rows)
    source = load_dataset(dataset, list(splits) if splits else None)
    out = Path(out)
    _prepare(out, overwrite)
    hub_names: dict[str, str] = {}
    for split in source.splits:
        hub = HUB_SPLITS.get(split, split)
        if hub in hub_names.values():
            raise FormatError(f"two splits would both be the Hub split {hub!r}", source=dataset, field="split",
                              value=split)
        hub_names[split] = hub
    types = features()
    schema = types.arrow_schema
    rows_per_split: dict[str, int] = {}
    files: list[str] = []
    missing = 0
    by_split: dict[str, list[int]] = {}
    for index, question in enumerate(source.questions()):
        by_split.setdefault(_source_split(question, source.splits), []).append(index)
    (out / "data").mkdir(parents=True, exist_ok=True)
    for split, hub in hub_names.items():
        indices = by_split.get(split, [])
        shards = max(1, math.ceil(len(indices) / shard_rows))
        for shard in range(shards):
            rows = []
            for i in indices[shard * shard_rows:(shard + 1) * shard_rows]:
                row = example_row(source[i], split)
                missing += row["image"] is None
                rows.append(types.encode_example(row))
            table = pa.Table.from_pylist(rows, schema=schema)
            relative = f"data/{hub}-{shard:05d}-of-{shards:05d}.parquet"
            with atomic_path(out / relative) as tmp:
                pq.write_table(table, tmp)
            files.append(relative)
            if progress is not None:
                progress(len(rows))
        rows_per_split[hub] = len(indices)
    title = name or Path(dataset).resolve().name
    atomic_write_text(out / "README.md", dataset_card(title, rows_per_split, source.layout))
    atomic_write_json(out / MANIFEST, {
        "format": FORMAT_NAME, "version": FORMAT_VERSION, "name": title, "source_layout": source.layout,
        "splits": {hub_names[s]: {"source_split": s, "rows": rows_per_split[hub_names[s]]} for s in hub_names},
        "columns": list(COLUMNS), "files": files, "missing_images": missing}, indent=2)
    return ExportSummary(out, rows_per_split, [*files, "README.md", MANIFEST], missing)


def _source_split(question: Any, splits: Sequence[str]) -> str:
    """The source split of a question (its ``split`` field, else the only split)."""
    if question.split in splits:
        return question.split
    from clevr_poc.dataset_reader import SPLIT_ALIASES

    for name in SPLIT_ALIASES.get(question.split or "", ()):
        if name in splits:
            return name
    return splits[0]


def _prepare(out: Path, overwrite: bool) -> None:
    """Refuse (or, with ``overwrite``, clear) an earlier export in ``out``."""
    if out.exists() and not out.is_dir():
        raise OutputPathError("exists and is not a folder", option="--out", path=out)
    old = sorted((out / "data").glob("*.parquet")) if (out / "data").is_dir() else []
    if (old or (out / MANIFEST).exists()) and not overwrite:
        raise OutputPathError("already holds an export; pass --overwrite to replace it", option="--out", path=out)
    for path in old:
        path.unlink()
