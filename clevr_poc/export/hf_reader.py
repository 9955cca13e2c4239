"""Read a Hugging Face export (:mod:`clevr_poc.export.hf_writer`) back as typed examples.

:func:`clevr_poc.dataset_reader.load_dataset` calls :func:`load_export` for a folder holding
``clevr_poc_export.json``, so ``evaluate --dataset OUT`` and ``clevr_poc.load_dataset(OUT, "test")`` work on
an export as on the folder it came from: each :class:`~clevr_poc.dataset_reader.Example` is rebuilt from the
row's ``question_json``, ``partial_scene``, ``complete_scene`` and ``environment_lp`` (checked as on reading
the files). Images are written, on first use of an example, to a private temp folder of the process,
removed when it exits (models read images from paths; an example may outlive its dataset object).
Needs ``pyarrow`` only.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence, overload

from clevr_poc._io import loads_json, read_json
from clevr_poc.dataset_reader import SPLIT_ALIASES, Example
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.export.hf_writer import FORMAT_NAME, HUB_SPLITS, MANIFEST
from clevr_poc.question import Question
from clevr_poc.scene import Scene

#: Columns the reader needs.
_READ = ("image", "split", "environment_id", "environment_lp", "partial_scene", "complete_scene", "question_json")


_IMAGE_FOLDER: list[Path] = []


def _image_folder() -> Path:
    """The process's temp folder for exported images (made on first use, removed at exit)."""
    if not _IMAGE_FOLDER:
        folder = Path(tempfile.mkdtemp(prefix="clevr_poc_export_"))
        atexit.register(shutil.rmtree, folder, True)
        _IMAGE_FOLDER.append(folder)
    return _IMAGE_FOLDER[0]


def is_export(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an export folder (it holds the manifest)."""
    return (Path(path) / MANIFEST).is_file()


class ExportDataset(Sequence[Example]):
    """The examples of some splits of an export, built lazily (the same reading API as
    :class:`clevr_poc.dataset_reader.Dataset`: indexing, slicing, iteration, :meth:`questions`,
    :meth:`environment`)."""

    layout = "hf"

    def __init__(self, root: Path, splits: tuple[str, ...], columns: dict[str, list[Any]]):
        self.root, self.splits = root, splits
        self._columns = columns
        self._questions: list[Question | None] = [None] * len(columns["question_json"])
        self._environments: dict[tuple[int | None, str], Environment] = {}
        self._images = _image_folder() / hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self._questions)

    @overload
    def __getitem__(self, index: int) -> Example: ...
    @overload
    def __getitem__(self, index: slice) -> list[Example]: ...

    def __getitem__(self, index: int | slice) -> Example | list[Example]:
        if isinstance(index, slice):
            return [self._example(i) for i in range(len(self))[index]]
        return self._example(range(len(self))[index])

    def __iter__(self) -> Iterator[Example]:
        for i in range(len(self)):
            yield self._example(i)

    def __repr__(self) -> str:
        return f"ExportDataset({str(self.root)!r}, splits={list(self.splits)}, examples={len(self)})"

    def questions(self) -> list[Question]:
        return [self._question(i) for i in range(len(self))]

    @property
    def environment_ids(self) -> list[int]:
        return sorted({i for i in self._columns["environment_id"] if i is not None})

    def environment(self, environment_id: int) -> Environment:
        """The environment with this id (from the first row that has it).

        Raises:
            FormatError: no row has this environment id.
        """
        for i, found in enumerate(self._columns["environment_id"]):
            if found == environment_id:
                return self._environment(i)
        raise FormatError("no environment with this id in the export", source=self.root,
                          field="environment_id", value=environment_id)

    # ------------------------------------------------------------------ one row
    def _source(self, i: int) -> str:
        return f"{self.root}: row {i}"

    def _question(self, i: int) -> Question:
        question = self._questions[i]
        if question is None:
            data = loads_json(self._columns["question_json"][i], source=self._source(i), field="question_json")
            question = self._questions[i] = Question.from_json(data, source=self._source(i))
        return question

    def _environment(self, i: int) -> Environment:
        key = (self._columns["environment_id"][i], self._columns["environment_lp"][i])
        environment = self._environments.get(key)
        if environment is None:
            if not isinstance(key[1], str):
                raise FormatError("missing environment program", source=self._source(i), field="environment_lp")
            environment = Environment.from_asp(key[1], source=self._source(i), id=key[0])
            self._environments[key] = environment
        return environment

    def _scene(self, i: int, column: str) -> Scene | None:
        text = self._columns[column][i]
        if text is None:
            return None
        return Scene.from_json(loads_json(text, source=self._source(i), field=column), source=self._source(i))

    def _image(self, i: int, question: Question) -> Path | None:
        image = self._columns["image"][i]
        if not image or image.get("bytes") is None:
            return None
        name = Path(image.get("path") or question.image_filename or f"{i:06d}.png").name
        path = self._images / str(self._columns["split"][i]) / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(image["bytes"])
        return path

    def _example(self, i: int) -> Example:
        question = self._question(i)
        partial = self._scene(i, "partial_scene")
        if partial is None:
            raise FormatError("missing partial scene", source=self._source(i), field="partial_scene")
        return Example(self._environment(i), partial, question, self._scene(i, "complete_scene"),
                       self._image(i, question), None)


def load_export(path: str | os.PathLike[str], split: str | Sequence[str] | None = None) -> ExportDataset:
    """Open an export folder; ``split`` takes Hub names (``test``) or source names (``testing``).

    Raises:
        FormatError: not an export of this format/version, an unknown split, a missing or unreadable
            Parquet file (naming it), a missing column; ``pyarrow`` not installed (naming the extra).
    """
    root = Path(path)
    manifest = read_json(root / MANIFEST, what="an export manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise FormatError(f"not a {FORMAT_NAME} export", source=root / MANIFEST, field="format",
                          value=manifest.get("format") if isinstance(manifest, dict) else None)
    available = list((manifest.get("splits") or {}).keys())
    wanted = available if split is None else [split] if isinstance(split, str) else list(split)
    chosen = []
    for name in wanted:
        options = (name, HUB_SPLITS.get(name, name), *SPLIT_ALIASES.get(name, ()))
        match = next((o for o in options if o in available), None)
        if match is None:
            raise FormatError(f"unknown split; the export has {available}", source=root, field="split", value=name)
        chosen.append(match)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise FormatError("reading an export needs pyarrow: install the [hf] extra (pip install '.[hf]' in the clevr_poc folder)",
                          source=root) from None
    columns: dict[str, list[Any]] = {name: [] for name in _READ}
    for name in chosen:
        files = sorted((root / "data").glob(f"{name}-*.parquet"))
        if not files:
            raise FormatError(f"no Parquet files for split {name!r}", source=root / "data")
        for file in files:
            try:
                table = pq.read_table(file, columns=list(_READ))
            except Exception as exc:  # pyarrow raises several types for damaged or foreign files
                raise FormatError(f"cannot read the Parquet file ({' '.join(str(exc).split())[:200]})",
                                  source=file) from None
            for column in _READ:
                columns[column].extend(table.column(column).to_pylist())
    return ExportDataset(root, tuple(chosen), columns)
