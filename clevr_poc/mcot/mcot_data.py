"""Loaders for ScienceQA (Lu et al. 2022) and M3CoT (Chen et al. 2024) from user-supplied files.

Neither data set ships with clevr_poc (ScienceQA is CC BY-NC-SA 4.0); point the loaders at your copy.

ScienceQA (official release, ``lupantech/ScienceQA``):
    * ``problems.json`` — ``{qid: record}``; a record has ``question`` (str), ``choices`` (list of 2-5 str),
      ``answer`` (int index), ``hint`` (str, may be ""), ``image`` ("image.png" or null), ``task``,
      ``grade`` ("grade1".."grade12"), ``subject`` (natural / social / language science), ``topic``,
      ``category``, ``skill``, ``lecture``, ``solution``, ``split``.
    * ``pid_splits.json`` — ``{"train": [qid, ...], "val": [...], "test": [...], ...}`` (optional: without it
      the splits come from each record's ``split``).
    * ``captions.json`` — ``{"captions": {qid: caption}, ...}`` as released, or a plain ``{qid: caption}``
      map (optional; captions are the image context of text-only models, card §Method).
    * an image folder — ``<images>/<split>/<qid>/<image>`` or ``<images>/<qid>/<image>`` (optional).

M3CoT (``LightChen233/M3CoT``): records with ``id``, ``question``, ``choices`` (list of str), ``answer``
(a letter "A".."F"), ``domain``, ``topic`` and optionally ``context``, ``rationale``, ``split``,
``category``, ``image_id``, ``image``; one JSON object per line (``.jsonl``) or a Parquet table
(``.parquet``, needs ``pyarrow``). The image is the ``image`` field: a file path (relative to the data
file's folder, its ``images/`` folder or ``image_dir``), or, as in the Hugging Face Parquet release, an image
struct ``{"bytes": ..., "path": ...}`` (bytes, or base64 text in JSON). Lacking one, ``images/<image_id>.png``
or ``images/<id>.png`` next to the data file is used when it exists. The same loader reads M3CoT *experiment* files (records with
``messages``: prompt and reply turns, the model output last), as released under ``experiment/``.

Malformed input raises :class:`~clevr_poc.errors.FormatError` naming the file, the record id and the field.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from clevr_poc._io import loads_json, read_json, read_text
from clevr_poc.errors import FormatError

#: Option letters, in order (ScienceQA has at most 5 options, M3CoT at most 6).
OPTION_LETTERS: str = "ABCDEF"
#: The three ScienceQA subjects and their column names in the paper's Table 3.
SUBJECT_COLUMNS: dict[str, str] = {"natural science": "NAT", "social science": "SOC", "language science": "LAN"}
_GRADE = re.compile(r"^grade(\d{1,2})$")


def letter_of(index: int) -> str:
    """Option letter of a 0-based option index (0 -> "A"); raises ValueError outside 0..5."""
    if not 0 <= index < len(OPTION_LETTERS):
        raise ValueError(f"option index out of range 0..{len(OPTION_LETTERS) - 1}: {index}")
    return OPTION_LETTERS[index]


# ----------------------------------------------------------------------------------------------------------
# ScienceQA
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScienceQAProblem:
    """One ScienceQA question (fields as in ``problems.json``).

    Attributes:
        id: the problem id (string key of ``problems.json``).
        choices: the 2-5 options, in order; ``answer`` is the 0-based index of the correct one.
        hint: the text context ("" when none). ``image`` is the image file name or None.
        grade: "grade1".."grade12". ``subject``: "natural science" / "social science" / "language science".
        caption: the image caption from ``captions.json`` ("" when none or not loaded).
        image_path: the image file when an image folder was given and the file exists, else None.
    """

    id: str
    question: str
    choices: tuple[str, ...]
    answer: int
    hint: str
    image: str | None
    grade: str
    subject: str
    lecture: str
    solution: str
    split: str
    task: str = ""
    topic: str = ""
    category: str = ""
    skill: str = ""
    caption: str = ""
    image_path: Path | None = None

    @property
    def answer_letter(self) -> str:
        return letter_of(self.answer)

    @property
    def has_text(self) -> bool:
        """TXT column of Table 3: a non-empty text hint (whether or not there is an image)."""
        return bool(self.hint)

    @property
    def has_image(self) -> bool:
        """IMG column of Table 3: an image context (whether or not there is a hint)."""
        return bool(self.image)

    @property
    def no_context(self) -> bool:
        """NO column of Table 3: neither a hint nor an image."""
        return not self.hint and not self.image

    @property
    def grade_number(self) -> int:
        match = _GRADE.match(self.grade)
        return int(match.group(1)) if match else 0

    @property
    def grade_band(self) -> str:
        """"G1-6" or "G7-12" (Table 3), "" for an unknown grade."""
        number = self.grade_number
        return "G1-6" if 1 <= number <= 6 else "G7-12" if 7 <= number <= 12 else ""


@dataclass(frozen=True)
class ScienceQADataset:
    """ScienceQA problems by id plus the official split lists.

    Attributes:
        problems: ``{qid: ScienceQAProblem}``.
        splits: ``{"train": (qid, ...), "val": ..., "test": ..., ...}``; order as in the split file.
        source: the ``problems.json`` path.
    """

    problems: dict[str, ScienceQAProblem]
    splits: dict[str, tuple[str, ...]]
    source: Path

    def split_ids(self, name: str) -> tuple[str, ...]:
        """Ids of one split; raises FormatError for an unknown split name."""
        if name not in self.splits:
            raise FormatError(f"unknown split; known: {sorted(self.splits)}", source=self.source, field="split",
                              value=name)
        return self.splits[name]

    def __getitem__(self, qid: str) -> ScienceQAProblem:
        try:
            return self.problems[qid]
        except KeyError:
            raise FormatError("no such problem id", source=self.source, field="id", value=qid) from None

    def __contains__(self, qid: object) -> bool:
        return qid in self.problems

    def __len__(self) -> int:
        return len(self.problems)


def _require(record: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    """``record[key]`` checked against ``kinds`` (bool is not accepted as int); FormatError otherwise."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if key not in record:
        raise FormatError("missing field", source=where, field=key)
    value = record[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FormatError(f"expected {'/'.join(k.__name__ for k in kinds)}", source=where, field=key, value=value)
    return value


def _optional_str(record: Mapping[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FormatError("expected a string", source=where, field=key, value=value)
    return value


def _choices(record: Mapping[str, Any], where: str, max_options: int) -> tuple[str, ...]:
    choices = _require(record, "choices", list, where)
    if not 2 <= len(choices) <= max_options:
        raise FormatError(f"expected 2..{max_options} choices", source=where, field="choices", value=len(choices))
    for i, choice in enumerate(choices):
        if not isinstance(choice, str):
            raise FormatError("every choice must be a string", source=where, field=f"choices[{i}]", value=choice)
    return tuple(choices)


def parse_scienceqa_problem(qid: str, record: object, *, source: object = "problems.json", caption: str = "",
                            image_path: Path | None = None) -> ScienceQAProblem:
    """Validate one ``problems.json`` record and build a :class:`ScienceQAProblem`.

    Raises:
        FormatError: naming ``source``, the record id and the field (missing field, wrong type, answer
            index out of range, bad grade).
    """
    where = f"{source}, record {qid}"
    if not isinstance(record, Mapping):
        raise FormatError("a problem must be a JSON object", source=where, value=type(record).__name__)
    choices = _choices(record, where, 5)
    answer = _require(record, "answer", int, where)
    if not 0 <= answer < len(choices):
        raise FormatError(f"answer index out of range 0..{len(choices) - 1}", source=where, field="answer",
                          value=answer)
    image = record.get("image")
    if image is not None and not isinstance(image, str):
        raise FormatError("image must be a file name or null", source=where, field="image", value=image)
    grade = _require(record, "grade", str, where)
    if not _GRADE.match(grade):
        raise FormatError("grade must look like 'grade1'..'grade12'", source=where, field="grade", value=grade)
    return ScienceQAProblem(
        id=str(qid),
        question=_require(record, "question", str, where),
        choices=choices,
        answer=answer,
        hint=_optional_str(record, "hint", where),
        image=image or None,
        grade=grade,
        subject=_require(record, "subject", str, where),
        lecture=_optional_str(record, "lecture", where),
        solution=_optional_str(record, "solution", where),
        split=_optional_str(record, "split", where),
        task=_optional_str(record, "task", where),
        topic=_optional_str(record, "topic", where),
        category=_optional_str(record, "category", where),
        skill=_optional_str(record, "skill", where),
        caption=caption,
        image_path=image_path,
    )


def _load_captions(path: Path) -> dict[str, str]:
    data = read_json(path)
    if isinstance(data, Mapping) and isinstance(data.get("captions"), Mapping):
        data = data["captions"]
    if not isinstance(data, Mapping):
        raise FormatError("expected {'captions': {qid: text}} or {qid: text}", source=path)
    captions: dict[str, str] = {}
    for qid, text in data.items():
        if not isinstance(text, str):
            raise FormatError("a caption must be a string", source=path, field=f"captions.{qid}", value=text)
        captions[str(qid)] = text
    return captions


def _load_splits(path: Path) -> dict[str, tuple[str, ...]]:
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise FormatError("expected {split: [qid, ...]}", source=path)
    splits: dict[str, tuple[str, ...]] = {}
    for name, ids in data.items():
        if not isinstance(ids, list):
            raise FormatError("a split must be a list of ids", source=path, field=name, value=type(ids).__name__)
        splits[str(name)] = tuple(str(i) for i in ids)
    return splits


def _entry(folder: Path, name: str, listings: dict[Path, frozenset[str]]) -> Path | None:
    """``folder / name`` when ``name`` is one of the folder's own entries (read once per folder, into
    ``listings``): an id or file name is looked up, never joined as a path (``..``, ``/``, absolute
    names match no entry)."""
    if folder not in listings:
        try:
            listings[folder] = frozenset(os.listdir(folder))
        except OSError:
            listings[folder] = frozenset()
    return folder / name if name in listings[folder] else None


def _inside(root: Path, candidate: Path, *, where: object, image: str) -> Path | None:
    """``candidate`` when it is a file whose real path is inside ``root``; None when it is no file;
    FormatError naming the record (``where``) when it leads outside ``root`` (``..``, an absolute path,
    a symbolic link)."""
    real = candidate.resolve()
    if not real.is_relative_to(root.resolve()):
        raise FormatError(f"the image path leads outside the data folder {root} (refused: a record may "
                          "only name images inside it)", source=where, field="image", value=image)
    return candidate if real.is_file() else None


def _relative_image(folder: Path, image: str, listings: dict[Path, frozenset[str]], *, where: object
                    ) -> Path | None:
    """The file a record's relative ``image`` path names inside ``folder``: each part looked up as an entry
    (:func:`_entry`), the result checked to stay inside (:func:`_inside`); an absolute path or ``..`` is
    refused (FormatError naming the record)."""
    parts = Path(image).parts
    if Path(image).is_absolute() or ".." in parts or "\0" in image:
        raise FormatError("the image must be a path relative to the data folder, without '..' (refused: a "
                          "record may only name images inside it)", source=where, field="image", value=image)
    current: Path | None = folder
    for part in parts:
        current = _entry(current, part, listings) if current is not None else None
    return None if current is None else _inside(folder, current, where=where, image=image)


def _find_image(image_dir: Path | None, qid: str, split: str, image: str | None, *, where: object,
                listings: dict[Path, frozenset[str]]) -> Path | None:
    """``<images>/<split>/<qid>/<image>`` or ``<images>/<qid>/<image>``, each name looked up as a folder
    entry (never joined as a path)."""
    if image_dir is None or not image:
        return None
    for parents in ((split, qid), (qid,)):
        folder: Path | None = image_dir
        for name in parents:
            folder = _entry(folder, name, listings) if folder is not None else None
        if folder is not None:
            found = _relative_image(folder, image, listings, where=where)
            if found is not None:
                return _inside(image_dir, found, where=where, image=image)
    return None


def load_scienceqa(data: str | Path, *, pid_splits: str | Path | None = None, captions: str | Path | None = None,
                   image_dir: str | Path | None = None) -> ScienceQADataset:
    """Load ScienceQA from ``problems.json`` (or a folder holding it).

    When ``data`` is a folder, ``pid_splits.json``, ``captions.json`` and ``images/`` inside it are used
    unless given explicitly. Split ids that are not in ``problems.json`` raise FormatError.

    Raises:
        FormatError: missing file, bad JSON, a malformed record (naming file, id and field).
    """
    data = Path(data)
    folder = data if data.is_dir() else data.parent
    problems_path = data / "problems.json" if data.is_dir() else data
    if pid_splits is None and (folder / "pid_splits.json").is_file():
        pid_splits = folder / "pid_splits.json"
    if captions is None and data.is_dir() and (folder / "captions.json").is_file():
        captions = folder / "captions.json"
    if image_dir is None and data.is_dir() and (folder / "images").is_dir():
        image_dir = folder / "images"
    raw = read_json(problems_path)
    if not isinstance(raw, Mapping):
        raise FormatError("expected a JSON object {qid: problem}", source=problems_path)
    caption_map = _load_captions(Path(captions)) if captions is not None else {}
    images = Path(image_dir) if image_dir is not None else None
    problems: dict[str, ScienceQAProblem] = {}
    listings: dict[Path, frozenset[str]] = {}
    for qid, record in raw.items():
        qid = str(qid)
        split = record.get("split", "") if isinstance(record, Mapping) else ""
        image = record.get("image") if isinstance(record, Mapping) else None
        problems[qid] = parse_scienceqa_problem(
            qid, record, source=problems_path, caption=caption_map.get(qid, ""),
            image_path=_find_image(images, qid, str(split or ""), image if isinstance(image, str) else None,
                                   where=f"{problems_path}, problem {qid}", listings=listings))
    if pid_splits is not None:
        splits = _load_splits(Path(pid_splits))
        for name, ids in splits.items():
            missing = [qid for qid in ids if qid not in problems]
            if missing:
                raise FormatError(f"{len(missing)} id(s) of split {name!r} are not in {problems_path}",
                                  source=pid_splits, field=name, value=missing[0])
    else:
        grouped: dict[str, list[str]] = {}
        for qid, problem in problems.items():
            grouped.setdefault(problem.split or "unknown", []).append(qid)
        splits = {name: tuple(ids) for name, ids in grouped.items()}
    return ScienceQADataset(problems=problems, splits=splits, source=problems_path)


# ----------------------------------------------------------------------------------------------------------
# M3CoT
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class M3CoTRecord:
    """One M3CoT question, optionally with a model's conversation (experiment files).

    Attributes:
        answer: the gold option letter ("A".."F"); ``answer_index`` is its 0-based index.
        domain: "science" / "commonsense" / "mathematics"; ``topic`` e.g. "natural-science", "algebra".
        messages: the conversation of an experiment record — user and assistant turns alternating as
            plain strings, the model's final reply last; () for a data record.
        image: the ``image`` field as a path string (a struct's ``path``), else None.
        image_bytes: the image's bytes when the record holds them (Parquet image struct), else None.
        image_path: the image file found by :func:`load_m3cot` (see the module docstring), else None.
    """

    id: str
    question: str
    choices: tuple[str, ...]
    answer: str
    domain: str
    topic: str
    context: str = ""
    rationale: str = ""
    split: str = ""
    category: str = ""
    image_id: str = ""
    image: str | None = None
    messages: tuple[str, ...] = field(default=(), repr=False)
    image_bytes: bytes | None = field(default=None, repr=False, compare=False)
    image_path: Path | None = None

    @property
    def image_source(self) -> bytes | Path | None:
        """What to send as the image: the record's bytes, else the file found, else None."""
        return self.image_bytes if self.image_bytes else self.image_path

    @property
    def answer_index(self) -> int:
        return OPTION_LETTERS.index(self.answer)


def _message_text(message: object, where: str, index: int) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        return message["content"]
    raise FormatError("a message must be a string or {'role', 'content'}", source=where, field=f"messages[{index}]",
                      value=message)


def parse_m3cot_record(record: object, *, source: object = "m3cot", index: int = 0,
                       require_messages: bool = False) -> M3CoTRecord:
    """Validate one M3CoT record (data or experiment) and build an :class:`M3CoTRecord`.

    ``question`` may be absent in an experiment record (it is then ""). ``messages`` entries may be
    strings or OpenAI-style ``{"role", "content"}`` dicts.

    Raises:
        FormatError: naming ``source``, the record id (or its line number) and the field.
    """
    if not isinstance(record, Mapping):
        raise FormatError("a record must be a JSON object", source=f"{source}, record #{index}",
                          value=type(record).__name__)
    rid = record.get("id")
    where = f"{source}, record {rid}" if isinstance(rid, str) and rid else f"{source}, record #{index}"
    rid = _require(record, "id", str, where)
    choices = _choices(record, where, len(OPTION_LETTERS))
    answer = _require(record, "answer", (str, int), where)
    if isinstance(answer, int):
        if not 0 <= answer < len(choices):
            raise FormatError("answer index out of range", source=where, field="answer", value=answer)
        answer = OPTION_LETTERS[answer]
    answer = answer.strip().upper()
    if answer not in OPTION_LETTERS[:len(choices)]:
        raise FormatError(f"answer must be one of {list(OPTION_LETTERS[:len(choices)])}", source=where,
                          field="answer", value=record["answer"])
    messages: tuple[str, ...] = ()
    if "messages" in record or require_messages:
        raw = _require(record, "messages", list, where)
        if require_messages and not raw:
            raise FormatError("messages is empty (no model output)", source=where, field="messages")
        messages = tuple(_message_text(m, where, i) for i, m in enumerate(raw))
    image, image_bytes = _m3cot_image_field(record.get("image"), where)
    question = record.get("question", "")
    if not isinstance(question, str):
        raise FormatError("expected a string", source=where, field="question", value=question)
    if not require_messages and not question:
        raise FormatError("missing field", source=where, field="question")
    image_id = record.get("image_id", "")
    return M3CoTRecord(
        id=rid,
        question=question,
        choices=choices,
        answer=answer,
        domain=_require(record, "domain", str, where),
        topic=_require(record, "topic", str, where),
        context=_optional_str(record, "context", where),
        rationale=_optional_str(record, "rationale", where),
        split=_optional_str(record, "split", where),
        category=_optional_str(record, "category", where),
        image_id="" if image_id is None else str(image_id),
        image=image,
        messages=messages,
        image_bytes=image_bytes,
    )


def _m3cot_image_field(value: object, where: str) -> tuple[str | None, bytes | None]:
    """(path, bytes) of an M3CoT ``image`` field: a path string, or a ``{"bytes", "path"}`` struct."""
    if value is None or isinstance(value, str):
        return (value or None), None
    if isinstance(value, Mapping):
        data, path = value.get("bytes"), value.get("path")
        if isinstance(data, str) and data:
            import base64
            import binascii

            try:
                data = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise FormatError("image.bytes is neither bytes nor base64 text", source=where,
                                  field="image.bytes") from None
        if data is not None and not isinstance(data, (bytes, bytearray)):
            raise FormatError("image.bytes must be bytes", source=where, field="image.bytes",
                              value=type(data).__name__)
        if path is not None and not isinstance(path, str):
            raise FormatError("image.path must be a string", source=where, field="image.path", value=path)
        return (path or None), (bytes(data) if data else None)
    raise FormatError("image must be a path or {'bytes', 'path'}", source=where, field="image",
                      value=type(value).__name__)


def _find_m3cot_image(record: M3CoTRecord, folders: Sequence[Path], listings: dict[Path, frozenset[str]], *,
                      where: object) -> Path | None:
    """The record's image inside one of ``folders``: its ``image`` path (relative, inside the folder; else
    FormatError naming the record), that path's file name, or ``<image_id>.png`` / ``<id>.png`` looked up
    as a folder entry (an id is never joined as a path)."""
    names = [Path(record.image).name] if record.image else []
    names += [f"{name}.png" for name in (record.image_id, record.id) if name]
    for folder in folders:
        if record.image:
            found = _relative_image(folder, record.image, listings, where=where)
            if found is not None:
                return found
        for name in names:
            candidate = _entry(folder, name, listings)
            if candidate is not None and (found := _inside(folder, candidate, where=where, image=name)) is not None:
                return found
    return None


def _iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; the file is read under the JSON byte cap and decoded as
    UTF-8 first (:func:`clevr_poc._io.read_text`: a bad byte is a FormatError naming its line and column)."""
    text = read_text(path, what="a JSON-lines file")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        yield number, loads_json(line, source=f"{path}, line {number}")  # every JSON failure: FormatError


def _iter_parquet(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise FormatError("reading Parquet needs the 'pyarrow' package (pip install pyarrow)", source=path) from None
    if not path.is_file():
        raise FormatError("file not found", source=path)
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several exception types for a bad file
        raise FormatError(f"cannot read Parquet ({exc.__class__.__name__}: {exc})", source=path) from None
    for number, row in enumerate(table.to_pylist(), start=1):
        yield number, row


def iter_m3cot_records(path: str | Path, *, require_messages: bool = False) -> Iterator[M3CoTRecord]:
    """Yield M3CoT records from a ``.jsonl`` (one object per line) or ``.parquet`` file.

    Raises:
        FormatError: unknown extension, bad JSON line, malformed record, duplicate id.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        rows: Iterable[tuple[int, Any]] = _iter_jsonl(path)
    elif suffix in (".parquet", ".pq"):
        rows = _iter_parquet(path)
    else:
        raise FormatError("expected a .jsonl or .parquet file", source=path, value=path.suffix)
    seen: set[str] = set()
    for number, row in rows:
        record = parse_m3cot_record(row, source=f"{path}, line {number}" if suffix != ".parquet" else path,
                                    index=number, require_messages=require_messages)
        if record.id in seen:
            raise FormatError("duplicate record id", source=path, field="id", value=record.id)
        seen.add(record.id)
        yield record


def load_m3cot(path: str | Path, *, split: str | None = None, require_messages: bool = False,
               image_dir: str | Path | None = None) -> list[M3CoTRecord]:
    """Load M3CoT records; with ``split`` keep only records whose ``split`` equals it (records without a
    ``split`` field are kept). Records without image bytes get ``image_path`` when their image file is
    found in ``image_dir``, the data file's folder or its ``images/`` folder (module docstring). See
    :func:`iter_m3cot_records` for errors."""
    from dataclasses import replace

    records = list(iter_m3cot_records(path, require_messages=require_messages))
    if split is not None:
        records = [r for r in records if not r.split or r.split == split]
    folder = Path(path).parent
    folders = [Path(image_dir)] if image_dir is not None else []
    folders += [folder, folder / "images"]
    listings: dict[Path, frozenset[str]] = {}
    return [r if r.image_bytes else replace(r, image_path=_find_m3cot_image(
        r, folders, listings, where=f"{path}, record {r.id!r}")) for r in records]
