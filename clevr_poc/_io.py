"""File helpers: atomic writes, stale temp files, and bounded reading of text and JSON with typed errors.

**Atomic writes.** Every dataset, checkpoint and report file is written by :func:`atomic_open` (or its
shorthands :func:`atomic_write_bytes`, :func:`atomic_write_text`, :func:`atomic_write_json`, and
:func:`atomic_path` for writers that need a file name, like Blender): the data goes to a temp file
``.<name>.<pid>-<8 hex digits>.tmp`` in the target's folder, created with mode ``0666 & ~umask``
(``0644`` under the usual umask 022: the mode a plain ``open(path, "w")`` gives), ``fsync``-ed, renamed
over the target (``os.replace``), and then the folder is ``fsync``-ed so that the rename survives a power
loss. A reader never sees a partial file; a crash leaves the old file or the new one, and at worst a
temp file.

**Batched writes.** :func:`atomic_write_many` writes many files with the same guarantees for a fraction
of the cost (two ``fsync`` calls per file are most of a dataset example's write time): every temp file
is written and ``fsync``-ed first, then all are renamed in the given order, then each folder is
``fsync``-ed once. A kill at any moment leaves every path with its old content or its new one; since
the renames run in order, a path holding its new content means every path before it in the batch does
too (after a power loss as well once the call has returned).

**Stale temp files.** A hard kill (SIGKILL, power loss) can leave a temp file behind.
:func:`remove_stale_temp_files` removes, in one folder, the temp files of this naming whose process is
gone (or that are older than :data:`STALE_TEMP_AGE`), and the ``.<name>.<8 characters>.tmp`` files of
``tempfile.mkstemp`` that earlier clevr_poc versions wrote (older than :data:`LEGACY_TEMP_AGE`); nothing
else.
Every resumable command calls it on its output folders before it resumes.

**Bounded reads.** :func:`read_bytes` / :func:`read_text` / :func:`read_json` refuse anything that is not
a regular file (a folder, a FIFO, ``/dev/zero``) and any file over a byte cap
(:mod:`clevr_poc.limits`) *before* reading it, and turn every failure -- missing, unreadable, not UTF-8,
invalid JSON, a 5,000-digit integer, nesting deeper than the ``json_depth`` cap, out of memory -- into one
:class:`~clevr_poc.errors.FormatError` naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

from clevr_poc import limits
from clevr_poc.errors import FormatError

#: A temp file of ours whose process still runs is stale only when older than this (seconds): after a
#: reboot or on a shared file system its pid may belong to another process (our writes take milliseconds,
#: a Blender render minutes).
STALE_TEMP_AGE = 3600.0
#: A ``tempfile.mkstemp`` temp file of an earlier version is stale when older than this (seconds).
LEGACY_TEMP_AGE = 60.0
#: ``.<name>.<pid>-<8 hex digits>.tmp``: the temp files of :func:`atomic_open` / :func:`atomic_path`.
TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp$")
#: ``.<name>.<8 characters>.tmp``: ``tempfile.mkstemp``'s temp files, written by earlier clevr_poc versions.
#: (At least one of the 8 is not a digit: ``.<image>.<pid>.tmp``, the renderer's old PNG temp, is not one.)
LEGACY_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?=[0-9]*[A-Za-z_])[A-Za-z0-9_]{8}\.tmp$")


# ====================================================================== writing
def _fsync_folder(folder: Path) -> None:
    """``fsync`` a folder (makes a rename in it durable); a no-op where folders cannot be opened/synced."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder: nothing more can be done
        pass
    finally:
        os.close(fd)


def _create_temp(path: Path, *, make_folder: bool = True) -> tuple[int, Path]:
    """A new, empty temp file beside ``path`` (mode ``0666 & ~umask``); returns ``(fd, temp path)``.
    ``make_folder=False``: the caller has created ``path``'s folder."""
    if make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 1 in 4 billion
            continue


def _rename(tmp: Path, path: Path) -> None:
    os.replace(tmp, path)


def _commit(tmp: Path, path: Path) -> None:
    _rename(tmp, path)
    _fsync_folder(path.parent)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], *, binary: bool = True) -> Iterator[IO[Any]]:
    """Open a temp file for writing; on a normal exit of the ``with`` block it replaces ``path``.

    ``with atomic_open(p) as f: torch.save(obj, f)``. The temp file is fsync-ed, renamed over ``path``
    and the folder fsync-ed; after an exception it is removed and ``path`` is untouched. Parent folders
    are created. ``binary=False`` gives a UTF-8 text handle (``\\n`` line ends).

    Raises:
        OSError: the folder cannot be created or written (the caller names the option/file).
    """
    path = Path(path)
    fd, tmp = _create_temp(path)
    try:
        if binary:
            handle: IO[Any] = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _commit(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def new_temp_path(path: str | os.PathLike[str]) -> Path:
    """Create an empty temp file beside ``path`` (our naming, mode ``0666 & ~umask``) for a writer that
    needs a file name (Blender); finish with :func:`commit_temp`, or remove it after a failure."""
    fd, tmp = _create_temp(Path(path))
    os.close(fd)
    return tmp


def commit_temp(tmp: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """``fsync`` the finished temp file ``tmp``, rename it over ``path`` and ``fsync`` the folder."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _commit(Path(tmp), Path(path))
    return Path(path)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temp file name for a writer that needs one (``savefig(name)``, Blender); see :func:`atomic_open`.

    The temp file exists (empty) when the block starts; the block writes it by name. On a normal
    exit it is committed (:func:`commit_temp`; an error if the block removed it); after an exception
    it is removed.
    """
    tmp = new_temp_path(path)
    try:
        yield tmp
        commit_temp(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_open`). Returns the path."""
    with atomic_open(path) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically (:func:`atomic_open`). Returns the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


#: Files :func:`atomic_write_many` holds open at once (its temp files are written in groups of this many).
MANY_FILES_OPEN = 256


def atomic_write_many(files: Sequence[tuple[str | os.PathLike[str], bytes]]) -> list[Path]:
    """Write ``(path, data)`` pairs atomically and durably, in order, with one folder ``fsync`` per folder.

    In groups of :data:`MANY_FILES_OPEN` files: each group's temp files (as :func:`atomic_open`'s) are
    written, then ``fsync``-ed, then renamed over their paths in the given order; after the last group
    each folder is ``fsync``-ed once. So after a kill at any moment each path holds its old content or
    its new one (never a partial file), and a path holding its new content implies the same for every
    path before it; once the call returns, all of them survive a power loss. A path given twice gets
    its last data. After an exception the temp files not yet renamed are removed.

    Returns:
        the paths, in order.

    Raises:
        OSError: a folder cannot be created or written (the caller names the option/file).
    """
    paths = [Path(path) for path, _ in files]
    folders: dict[Path, None] = {}
    for folder in dict.fromkeys(path.parent for path in paths):  # once per folder, not per file (issue 27)
        folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(paths), MANY_FILES_OPEN):
        temps: list[tuple[int, Path, Path]] = []  # (fd or -1 once closed, temp, path) not yet renamed
        try:
            for path, (_, data) in zip(paths[start:start + MANY_FILES_OPEN], files[start:start + MANY_FILES_OPEN]):
                fd, tmp = _create_temp(path, make_folder=False)
                temps.append((fd, tmp, path))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            for fd, _, _ in temps:
                os.fsync(fd)
            for index, (fd, tmp, path) in enumerate(temps):
                os.close(fd)
                temps[index] = (-1, tmp, path)
            for _, tmp, path in list(temps):
                _rename(tmp, path)
                folders[path.parent] = None
                del temps[0]
        except BaseException:
            for fd, tmp, _ in temps:
                if fd >= 0:
                    os.close(fd)
                tmp.unlink(missing_ok=True)
            raise
    for folder in folders:
        _fsync_folder(folder)
    return paths


def atomic_write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = None) -> Path:
    """Serialise ``data`` as JSON (keys in insertion order, UTF-8, a final newline) and write it atomically."""
    return atomic_write_text(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


# ====================================================================== stale temp files
def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # someone else's process / not a pid: treat as alive
        return True
    return True


def is_stale_temp(path: str | os.PathLike[str], *, now: float | None = None, max_age: float = STALE_TEMP_AGE) -> bool:
    """Whether ``path`` is one of our temp files (see the module docstring) left by a dead writer.

    A :data:`TEMP_NAME` file is stale when no process of its pid runs on this machine, or when it is
    at least ``max_age`` seconds old; a :data:`LEGACY_TEMP_NAME` file when it is at least
    :data:`LEGACY_TEMP_AGE` seconds old. Any other name, or a non-regular file: False.
    """
    path = Path(path)
    match = TEMP_NAME.match(path.name)
    if match is None and LEGACY_TEMP_NAME.match(path.name) is None:
        return False
    try:
        info = path.lstat()
    except FileNotFoundError:  # its writer just renamed it
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    age = (time.time() if now is None else now) - info.st_mtime
    if match is None:
        return age >= LEGACY_TEMP_AGE
    return age >= max_age or not _process_alive(int(match["pid"]))


def remove_stale_temp_files(folder: str | os.PathLike[str], *, recursive: bool = False,
                            targets: Any = None, now: float | None = None,
                            max_age: float = STALE_TEMP_AGE) -> list[Path]:
    """Remove the stale temp files (:func:`is_stale_temp`) in ``folder`` (and its sub-folders with
    ``recursive``); with ``targets`` (file names), only the temp files of those names. Files of other
    names are never touched; a missing folder is fine. Returns the removed paths, sorted.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    wanted = None if targets is None else {str(t) for t in targets}
    removed = []
    for path in sorted(folder.rglob(".*.tmp") if recursive else folder.glob(".*.tmp")):
        match = TEMP_NAME.match(path.name) or LEGACY_TEMP_NAME.match(path.name)
        if match is None or (wanted is not None and match["name"] not in wanted):
            continue
        if is_stale_temp(path, now=now, max_age=max_age):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
    return removed


# ====================================================================== reading
def _cap_error(path: object, size: str, cap_name: str, what: str) -> FormatError:
    return FormatError(f"{what} of {size} bytes is over {limits.describe(cap_name)}", source=path)


def read_bytes(path: str | os.PathLike[str], *, cap: str = "json_file_bytes", what: str = "a file") -> bytes:
    """The bytes of a regular file of at most ``limits.cap(cap)`` bytes, checked before reading.

    Raises:
        FormatError: missing, a folder or other non-regular file, unreadable, or over the cap (the
            message names the file, the size and the cap with its variable).
    """
    maximum = limits.cap(cap)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FormatError("file not found", source=path) from None
    except IsADirectoryError:
        raise FormatError("cannot read: a folder, not a file", source=path) from None
    except OSError as exc:
        raise FormatError(f"cannot read ({exc.strerror or exc.__class__.__name__})", source=path) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FormatError("cannot read: a folder, not a file", source=path)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError("cannot read: not a regular file (a device, pipe or socket)", source=path)
        if info.st_size > maximum:
            raise _cap_error(path, f"{info.st_size:,}", cap, what)
        chunks, total = [], 0
        while total <= maximum:  # the file may grow while it is read (or be a /proc file of size 0)
            chunk = os.read(fd, min(maximum + 1 - total, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > maximum:
            raise _cap_error(path, f"more than {maximum:,}", cap, what)
        return b"".join(chunks)
    except OSError as exc:
        raise FormatError(f"cannot read ({exc.strerror or exc.__class__.__name__})", source=path) from None
    finally:
        os.close(fd)


def decode_utf8(data: bytes, *, source: object) -> str:
    """``data`` as UTF-8 text; raises :class:`FormatError` naming the line and column of a bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FormatError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} column {column}",
                          source=source) from None


def read_text(path: str | os.PathLike[str], *, cap: str = "json_file_bytes", what: str = "a file") -> str:
    """The UTF-8 text of a regular file under a byte cap; see :func:`read_bytes`, :func:`decode_utf8`."""
    return decode_utf8(read_bytes(path, cap=cap, what=what), source=path)


def _deeper_than(value: Any, depth: int) -> bool:
    """Whether arrays/objects nest more than ``depth`` levels in ``value`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads_json(text: str, *, source: object = None, field: object = None) -> Any:
    """Parse JSON text (a file's content or one JSON line); every failure is one :class:`FormatError`.

    Invalid JSON (line and column), integers over Python's 4,300-digit limit, nesting deeper than the
    ``json_depth`` cap, and documents too large for memory are all refused with the file (``source``)
    and ``field`` (e.g. ``"line 12"`` of a JSON-lines file) named.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # one line of a JSON-lines file (field "line 12"): its column only, the field names the line
        at = (f"column {exc.colno}" if isinstance(field, str) and field.startswith("line ") and exc.lineno == 1
              else f"line {exc.lineno} column {exc.colno}")
        # json's messages that end in "at" ("Unterminated string starting at") name the place themselves
        message = (f"invalid JSON: {exc.msg[0].lower()}{exc.msg[1:]} {at}" if exc.msg.endswith(" at")
                   else f"invalid JSON at {at}: {exc.msg}")
        raise FormatError(message, source=source, field=field) from None
    except RecursionError:
        raise FormatError(f"JSON nested deeper than {limits.describe('json_depth')}", source=source,
                          field=field) from None
    except MemoryError:
        raise FormatError("JSON too large to parse in memory", source=source, field=field) from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        detail = str(exc).split(":")[0].split(";")[0]
        raise FormatError(f"invalid JSON value: {detail}", source=source, field=field) from None
    if isinstance(value, (dict, list)) and _deeper_than(value, limits.cap("json_depth")):
        raise FormatError(f"JSON nested deeper than {limits.describe('json_depth')}", source=source, field=field)
    return value


def read_json(path: str | os.PathLike[str], *, cap: str = "json_file_bytes", what: str = "a JSON file") -> Any:
    """Read a JSON file under the byte cap ``cap`` (:mod:`clevr_poc.limits`); see :func:`loads_json`.

    Raises:
        FormatError: naming the file, for a missing/unreadable/non-regular file, a file over the cap,
            text that is not UTF-8, or any JSON failure.
    """
    return loads_json(read_text(path, cap=cap, what=what), source=path)


__all__ = ["LEGACY_TEMP_AGE", "LEGACY_TEMP_NAME", "STALE_TEMP_AGE", "TEMP_NAME", "atomic_open", "atomic_path",
           "atomic_write_bytes", "atomic_write_json", "atomic_write_many", "atomic_write_text", "commit_temp",
           "decode_utf8", "is_stale_temp", "loads_json", "new_temp_path", "read_bytes", "read_json", "read_text", "remove_stale_temp_files"]
