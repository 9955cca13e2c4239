"""Predictions made so far, in a JSON-lines file, so an interrupted :func:`~clevr_poc.evaluation.evaluate`
run resumes where it stopped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from clevr_poc.errors import FormatError
from clevr_poc.evaluation.report import Prediction, normalize_prediction


class Checkpoint:
    """Predictions made so far, in a JSON-lines file (see :func:`evaluate`'s ``checkpoint``).

    Line 1: ``{"checkpoint": "clevr_poc.evaluate", "model": NAME}``; then one line per prediction:
    ``{"key": image_filename, "values": [...] | null, "error": str | null, "raw": str | null}``.
    A last line cut short by a crash is dropped when the file is reopened.

    Raises:
        FormatError: the file belongs to another model, or a line (other than a cut last line) is not
            a prediction record.
    """

    KIND = "clevr_poc.evaluate"

    def __init__(self, path: str | os.PathLike[str], model: str) -> None:
        self.path = Path(path)
        self.model = model
        self._known: dict[str, Prediction] = {}
        if self.path.is_file() and self.path.stat().st_size:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append([{"checkpoint": self.KIND, "model": model}])

    def __len__(self) -> int:
        return len(self._known)

    def get(self, key: str) -> Prediction | None:
        return self._known.get(key)

    def add(self, items: Sequence[tuple[str, Prediction]]) -> None:
        records = []
        for key, prediction in items:
            self._known[key] = prediction
            records.append({"key": key, "values": None if prediction.values is None else sorted(prediction.values),
                            "error": prediction.error, "raw": prediction.raw})
        self._append(records)

    def _append(self, records: Sequence[Mapping[str, Any]]) -> None:
        with open(self.path, "a", encoding="utf-8", newline="\n") as handle:
            handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            handle.flush()
            os.fsync(handle.fileno())

    def _load(self) -> None:
        from clevr_poc._io import decode_utf8, loads_json, read_bytes

        data = read_bytes(self.path, what="a checkpoint file")  # typed errors; the json_file_bytes cap
        if not data.endswith(b"\n"):  # a line cut short by a crash: drop it
            data = data[: data.rfind(b"\n") + 1]
            with open(self.path, "r+b") as handle:
                handle.truncate(len(data))
        lines = decode_utf8(data, source=self.path).splitlines()
        for number, line in enumerate(lines, start=1):
            record = loads_json(line, source=self.path, field=f"line {number}")
            if number == 1:
                if not isinstance(record, Mapping) or record.get("checkpoint") != self.KIND:
                    raise FormatError("not an evaluation checkpoint", source=self.path, field="line 1")
                if record.get("model") != self.model:
                    raise FormatError(f"the checkpoint belongs to model {record.get('model')!r}, not {self.model!r}",
                                      source=self.path, field="model", value=record.get("model"))
                continue
            if not isinstance(record, Mapping) or not isinstance(record.get("key"), str):
                raise FormatError("not a prediction record", source=self.path, field=f"line {number}")
            values = record.get("values")
            try:
                prediction = normalize_prediction(
                    Prediction(None if values is None else frozenset(values), record.get("error"), record.get("raw")),
                    where=f"line {number}")
            except (FormatError, TypeError):
                raise FormatError("bad predicted values", source=self.path, field=f"line {number}",
                                  value=values) from None
            self._known[record["key"]] = prediction
