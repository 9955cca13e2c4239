"""Read a CLEVR-POC dataset from disk (ours or the official release's) as typed examples. Torch-free.

::

    from clevr_poc.dataset_reader import load_dataset

    data = load_dataset("clevr-poc", split="train")
    for example in data:                    # Example(environment, partial_scene, question, ...)
        example.question.answer             # frozenset of values

Two layouts are recognised (``root`` is the folder given to :func:`load_dataset`):

Ours (written by :func:`clevr_poc.generation.dataset_writer.generate_dataset`)::

    root/environments/<id>.lp
    root/complete/scenes/<split>/CLEVR_%06d.json
    root/incomplete/scenes/<split>/CLEVR_%06d.json
    root/incomplete/questions/<split>/CLEVR_%06d.json
    root/incomplete/images/<split>/<image_filename>        (once rendered)

The official release (``output/`` of the official generator, ``--complete_data_dir ../output/complete/``,
``--incomplete_data_dir ../output/incomplete/``; splits ``training``/``validation``/``testing``; the
official README's runs write it as ``output-<N>/`` beside ``environment_constraints/``)::

    <root or root/output>/{complete,incomplete}/scenes/<split>/CLEVR_%06d.json
    <root or root/output>/incomplete/questions/<split>/CLEVR_%06d.json
        (or one file per split, incomplete/questions/CLEVR_<split>_questions.json or <split>.json:
         {"info": ..., "questions": [...]})
    <root or root/output>/{complete,incomplete}/images/<split>/CLEVR_%06d.png
    environment_constraints/<id>.lp  or  environments/<id>.lp  or  environment_<id>.lp
        (in root, root/output or root's parent; other files there -- the generator's pickles -- are ignored)

Only ``incomplete/questions``, ``incomplete/scenes`` and the environment files are required: complete
scenes, images, and everything only our writer adds (``dataset.json``, ``stats.json``, the dataset card,
masks, boxes, the camera in the scene files) are optional. A question's image is its
``image_filename``, else its partial scene's, looked up in ``incomplete/images/<split>/``.

The environment of a question is its ``constraint_type_index`` (question JSON; the official release
stores it in the scene JSON instead, which is used when the question lacks it). A question is paired
with its scenes by its ``image_index`` (or, lacking it, the number in its ``image_filename``), never by
directory listing order; the scene's own ``image_index`` is checked when the scene is read. Split names
``train``/``val``/``test`` and ``training``/``validation``/``testing`` are interchangeable.

Malformed content raises :class:`~clevr_poc.errors.FormatError` naming the file and the field.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence, overload

from clevr_poc._io import read_json
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.question import Question
from clevr_poc.scene import Scene

#: Folder names that may hold environment ``.lp`` files, in the order they are looked for.
ENVIRONMENT_FOLDERS: tuple[str, ...] = ("environments", "environment_constraints")
#: Interchangeable split names (ours <-> official).
SPLIT_ALIASES: Mapping[str, tuple[str, ...]] = {
    "train": ("train", "training"), "training": ("training", "train"),
    "val": ("val", "validation"), "validation": ("validation", "val"),
    "test": ("test", "testing"), "testing": ("testing", "test"),
}
_SPLIT_ORDER = ("train", "training", "val", "validation", "test", "testing")
_ENVIRONMENT_FILE = re.compile(r"^(?:environment_)?(\d+)\.lp$")
_NUMBER = re.compile(r"(\d+)(?=\.[A-Za-z0-9]+$)")
#: One file holding a whole split's questions: CLEVR's ``CLEVR_<split>_questions.json``, or the
#: ``<split>.json`` of the official question generator's (disabled) single-file writer.
_QUESTIONS_FILE = re.compile(r"^(?:CLEVR_)?([A-Za-z]+?)(?:_questions)?\.json$")
#: Most questions one split file may hold (the paper's largest split has 12,000).
MAX_QUESTIONS_PER_FILE = 1_000_000


@dataclass(frozen=True)
class Example:
    """One CLEVR-POC example: an environment, a partial scene and a question about its hidden object.

    Attributes:
        environment: the scene's environment (constraints and N, hidden object included).
        partial_scene: the visible objects (N-1 of them).
        question: the question; ``question.answer`` is the gold answer set (None if unlabelled).
        complete_scene: the complete scene (N objects), or None if the dataset has none.
        image_path: the partial scene's rendered image, or None when not (yet) rendered.
        scene_path: the partial scene's JSON file (None for examples built in memory).
    """

    environment: Environment
    partial_scene: Scene
    question: Question
    complete_scene: Scene | None = None
    image_path: Path | None = None
    scene_path: Path | None = None

    @property
    def split(self) -> str | None:
        return self.question.split

    @property
    def image_index(self) -> int | None:
        return self.question.image_index

    @property
    def answer(self) -> frozenset[str] | None:
        return self.question.answer

    @property
    def environment_id(self) -> int | None:
        return self.environment.id


@dataclass(frozen=True)
class _Entry:
    split: str
    image_index: int
    question_path: Path
    question: Question


class Dataset(Sequence[Example]):
    """The examples of one dataset folder (one split or all), in (split, image_index) order.

    Questions are read when the dataset is opened; scenes, environments and images when an example is
    accessed (environments are parsed once and cached).

    Attributes:
        root: the folder holding ``complete/`` and ``incomplete/``.
        layout: ``"clevr_poc"`` (ours) or ``"official"``.
        splits: the split folder names included.
        environment_dir: the folder of environment ``.lp`` files.
    """

    def __init__(self, root: Path, layout: str, splits: tuple[str, ...], environment_dir: Path,
                 entries: list[_Entry], environment_paths: Mapping[int, Path]) -> None:
        self.root = root
        self.layout = layout
        self.splits = splits
        self.environment_dir = environment_dir
        self._entries = entries
        self._environment_paths = dict(environment_paths)
        self._environments: dict[int, Environment] = {}
        self._scene_paths: dict[tuple[str, str], dict[int, Path]] = {}

    # ------------------------------------------------------------------ Sequence
    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> Example: ...
    @overload
    def __getitem__(self, index: slice) -> list[Example]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._example(e) for e in self._entries[index]]
        return self._example(self._entries[index])

    def __iter__(self) -> Iterator[Example]:
        for entry in self._entries:
            yield self._example(entry)

    def __repr__(self) -> str:
        return (f"Dataset({str(self.root)!r}, layout={self.layout!r}, splits={list(self.splits)}, "
                f"examples={len(self)}, environments={len(self._environment_paths)})")

    # ------------------------------------------------------------------ accessors
    def questions(self) -> list[Question]:
        """All questions (already in memory; no scene is read)."""
        return [e.question for e in self._entries]

    @property
    def environment_ids(self) -> list[int]:
        return sorted(self._environment_paths)

    def environment(self, environment_id: int) -> Environment:
        """The environment with this id (parsed on first use).

        Raises:
            FormatError: no such environment file, or the file is malformed.
        """
        env = self._environments.get(environment_id)
        if env is None:
            path = self._environment_paths.get(environment_id)
            if path is None:
                raise FormatError(f"no environment file for this id in {self.environment_dir} "
                                  f"(ids: {self.environment_ids[:10]}{'...' if len(self._environment_paths) > 10 else ''})",
                                  field="constraint_type_index", value=environment_id)
            env = Environment.from_lp(path, id=environment_id)
            self._environments[environment_id] = env
        return env

    @cached_property
    def environments(self) -> dict[int, Environment]:
        """Every environment of the dataset, by id (parses all files)."""
        return {i: self.environment(i) for i in self.environment_ids}

    # ------------------------------------------------------------------ loading one example
    def _scene_path(self, kind: str, split: str, image_index: int) -> Path | None:
        key = (kind, split)
        paths = self._scene_paths.get(key)
        if paths is None:
            paths = self._scene_paths[key] = _index_files(self.root / kind / "scenes" / split)
        return paths.get(image_index)

    def _read_scene(self, kind: str, entry: _Entry) -> Scene | None:
        path = self._scene_path(kind, entry.split, entry.image_index)
        if path is None:
            return None
        scene = Scene.from_file(path)
        if scene.image_index is not None and scene.image_index != entry.image_index:
            raise FormatError(f"scene file for image {entry.image_index} says another image_index",
                              source=path, field="image_index", value=scene.image_index)
        return scene

    def _example(self, entry: _Entry) -> Example:
        partial = self._read_scene("incomplete", entry)
        if partial is None:
            raise FormatError(f"no incomplete scene with image_index {entry.image_index} in "
                              f"{self.root / 'incomplete' / 'scenes' / entry.split}",
                              source=entry.question_path, field="image_index", value=entry.image_index)
        complete = self._read_scene("complete", entry)
        question = entry.question
        environment_id, id_source = question.environment_id, entry.question_path
        if environment_id is None:
            for kind, scene in (("incomplete", partial), ("complete", complete)):
                if scene is not None and scene.environment_id is not None:
                    id_source = self._scene_path(kind, entry.split, entry.image_index)
                    environment_id = scene.environment_id
                    break
        if environment_id is None:
            raise FormatError("no constraint_type_index in the question or its scenes",
                              source=entry.question_path, field="constraint_type_index")
        if environment_id not in self._environment_paths:
            ids = self.environment_ids
            raise FormatError(f"no environment with this id in {self.environment_dir} (ids: {ids[:10]}"
                              f"{'...' if len(ids) > 10 else ''})", source=id_source,
                              field="constraint_type_index", value=environment_id)
        environment = self.environment(environment_id)
        if (len(partial) != environment.num_objects - 1 if self.layout == "clevr_poc"
                else len(partial) >= environment.num_objects):
            raise FormatError(f"the partial scene has {len(partial)} objects but environment {environment_id} "
                              f"declares {environment.num_objects} (hidden object included)",
                              source=self._scene_path("incomplete", entry.split, entry.image_index),
                              field="objects", value=len(partial))
        image_path = None
        for name in dict.fromkeys(n for n in (question.image_filename, partial.image_filename) if n):
            candidate = self.root / "incomplete" / "images" / entry.split / Path(name).name
            if candidate.is_file():
                image_path = candidate
                break
        return Example(environment, partial, question, complete, image_path,
                       self._scene_path("incomplete", entry.split, entry.image_index))


# ---------------------------------------------------------------------- opening a folder
def load_dataset(path: str | os.PathLike[str], split: str | Sequence[str] | None = None, *,
                 environments: str | os.PathLike[str] | None = None) -> Dataset:
    """Open a dataset folder (our layout or the official release's; see the module docstring).

    Args:
        path: the dataset folder.
        split: a split name (``"train"``, ``"validation"``, ...), several, or None for every split.
        environments: the folder of environment ``.lp`` files, when it is not in a standard place.

    Returns:
        :class:`Dataset` (a sequence of :class:`Example`); questions are read now, the rest lazily.
        (:func:`clevr_poc.dataset_formats.load_dataset`, which ``clevr_poc.load_dataset`` is, also reads
        Hugging Face exports.)

    Raises:
        FormatError: no such folder, no ``incomplete/questions``, an unknown split, no environment
            folder, a malformed question file (naming the file and field), or two questions for one image.
    """
    path = Path(path)
    if not path.is_dir():
        raise FormatError("is a file, not a dataset folder" if path.exists() else "dataset folder not found",
                          source=path)
    root = _data_root(path)
    layout = "clevr_poc" if (root / "environments").is_dir() or (root / "dataset.json").is_file() else "official"
    environment_dir = Path(environments) if environments is not None else _environment_dir(path, root)
    if not environment_dir.is_dir():
        raise FormatError("environment folder not found", source=environment_dir)
    environment_paths = _environment_files(environment_dir)
    question_root = root / "incomplete" / "questions"
    folders = {p.name for p in question_root.iterdir() if p.is_dir()}
    files = {m.group(1): p for p in question_root.iterdir() if p.is_file()
             for m in [_QUESTIONS_FILE.match(p.name)] if m}
    available = sorted(folders | set(files))
    splits = _choose_splits(split, available, question_root)
    entries: list[_Entry] = []
    for name in splits:
        if name in folders:
            entries.extend(_read_questions(question_root / name, name))
        else:
            entries.extend(_read_question_file(files[name], name))
    return Dataset(root, layout, tuple(splits), environment_dir, entries, environment_paths)


def _data_root(path: Path) -> Path:
    for candidate in (path, path / "output"):
        if (candidate / "incomplete" / "questions").is_dir():
            return candidate
    raise FormatError("not a CLEVR-POC dataset folder: no incomplete/questions/ (nor output/incomplete/questions/)",
                      source=path)


def _environment_dir(path: Path, root: Path) -> Path:
    for base in dict.fromkeys((root, path, path.parent)):
        for name in ENVIRONMENT_FOLDERS:
            if (base / name).is_dir():
                return base / name
    raise FormatError(f"no environment folder ({' or '.join(ENVIRONMENT_FOLDERS)}) in the dataset folder, "
                      f"its output/ or its parent; pass environments=", source=path)


def _environment_files(folder: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    for file in sorted(folder.iterdir()):
        match = _ENVIRONMENT_FILE.match(file.name)
        if not match or not file.is_file():
            continue
        env_id = int(match.group(1))
        if env_id in found:
            raise FormatError(f"two files for environment {env_id}: {found[env_id].name} and {file.name}",
                              source=folder, field="environment id", value=env_id)
        found[env_id] = file
    if not found:
        raise FormatError("no environment files (<id>.lp or environment_<id>.lp)", source=folder)
    return found


def _choose_splits(split: str | Sequence[str] | None, available: list[str], folder: Path) -> list[str]:
    if split is None:
        if not available:
            raise FormatError("no split folders", source=folder)
        known = [name for name in _SPLIT_ORDER if name in available]
        return known + [name for name in available if name not in known]
    wanted = [split] if isinstance(split, str) else list(split)
    chosen = []
    for name in wanted:
        match = next((a for a in SPLIT_ALIASES.get(name, (name,)) if a in available), None)
        if match is None:
            raise FormatError(f"unknown split; the dataset has {available}", source=folder, field="split", value=name)
        chosen.append(match)
    return chosen


def _index_files(folder: Path) -> dict[int, Path]:
    """image_index -> JSON file of a scene folder: the number in the file name, or (files without one)
    the file's own ``image_index``."""
    found: dict[int, Path] = {}
    if not folder.is_dir():
        return found
    for file in sorted(folder.iterdir()):
        if file.suffix != ".json" or file.name.startswith("."):
            continue
        match = _NUMBER.search(file.name)
        if match:
            index = int(match.group(1))
        else:
            data = read_json(file)
            index = _as_int(data.get("image_index") if isinstance(data, dict) else None, file, "image_index")
        if index in found:
            raise FormatError(f"two scene files for image_index {index}: {found[index].name} and {file.name}",
                              source=folder, field="image_index", value=index)
        found[index] = file
    return found


def _read_question_file(file: Path, split: str) -> list[_Entry]:
    """The questions of one ``CLEVR_<split>_questions.json`` (``{"questions": [...]}`` or a list)."""
    data = read_json(file)
    items = data.get("questions") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise FormatError("must be {\"questions\": [...]} or a list of questions", source=file, field="questions")
    if len(items) > MAX_QUESTIONS_PER_FILE:
        raise FormatError(f"more than {MAX_QUESTIONS_PER_FILE} questions", source=file, field="questions",
                          value=len(items))
    return _entries(((file, Question.from_json(item, source=f"{file}: questions[{i}]")) for i, item in
                     enumerate(items)), split, file)


def _read_questions(folder: Path, split: str) -> list[_Entry]:
    files = [f for f in sorted(folder.iterdir()) if f.suffix == ".json" and not f.name.startswith(".")]
    return _entries(((f, Question.from_file(f)) for f in files), split, folder)


def _entries(questions: Iterable[tuple[Path, Question]], split: str, folder: Path) -> list[_Entry]:
    entries: dict[int, _Entry] = {}
    for file, question in questions:
        index = question.image_index
        if index is None:
            match = _NUMBER.search(question.image_filename or "")
            if match is None:
                raise FormatError("no image_index and no number in image_filename", source=file,
                                  field="image_index")
            index = int(match.group(1))
        if index in entries:
            raise FormatError(f"two questions for image_index {index} ({entries[index].question_path.name} and "
                              f"{file.name}); CLEVR-POC has one question per image", source=folder,
                              field="image_index", value=index)
        entries[index] = _Entry(split, index, file, question)
    return [entries[i] for i in sorted(entries)]


def _as_int(value: object, source: object, field: str) -> int:
    if isinstance(value, bool) or value is None:
        raise FormatError("must be an integer", source=source, field=field, value=value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    raise FormatError("must be an integer", source=source, field=field, value=value)
