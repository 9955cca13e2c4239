"""Small file helpers: atomic writes and JSON reading with typed errors."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from clevr_poc.errors import FormatError


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically: a temp file in the same folder, then rename.

    A reader never sees a partial file; a crash leaves either the old file or the new one.
    Parent folders are created. Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = None) -> Path:
    """Serialise ``data`` as JSON (sorted keys off, UTF-8) and write it atomically."""
    return atomic_write_text(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; raises :class:`FormatError` naming the file on a missing file or bad JSON."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError("file not found", source=path) from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise FormatError(f"cannot read as UTF-8 text ({exc.__class__.__name__})", source=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=path) from None
