"""Open a dataset folder in any format clevr_poc reads: ours or the official release's layout
(:mod:`clevr_poc.dataset_reader`), or a Hugging Face export (``export --format hf``,
:mod:`clevr_poc.export.hf_reader`). This is ``clevr_poc.load_dataset`` and what ``evaluate --dataset`` reads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from clevr_poc.dataset_reader import load_dataset as load_folder
from clevr_poc.export.hf_reader import is_export, load_export

__all__ = ["load_dataset"]


def load_dataset(path: str | os.PathLike[str], split: str | Sequence[str] | None = None, *,
                 environments: str | os.PathLike[str] | None = None) -> Any:
    """The examples of ``split`` (a name, several, or None for all) of the dataset folder ``path``: a
    :class:`~clevr_poc.dataset_reader.Dataset`, or for an export an
    :class:`~clevr_poc.export.hf_reader.ExportDataset` (the same reading API: indexing, slicing, iteration,
    ``questions()``, ``environment(id)``, ``splits``).

    Raises:
        FormatError: see :func:`clevr_poc.dataset_reader.load_dataset` and
            :func:`clevr_poc.export.hf_reader.load_export`; ``environments`` given for an export.
    """
    if Path(path).is_dir() and is_export(path):
        if environments is not None:
            from clevr_poc.errors import FormatError

            raise FormatError("an export carries its environments; do not pass environments=", source=path)
        return load_export(path, split)
    return load_folder(path, split, environments=environments)
