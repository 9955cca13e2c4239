"""Size caps on what clevr_poc reads and generates: file sizes, JSON nesting, counts.

Every JSON / JSON-lines file clevr_poc reads is checked against a byte cap *before* it is read (its size comes from
``fstat``, then at most cap + 1 bytes are read), so a huge or endless input (a 2 GB scene file,
``/dev/zero``) fails in microseconds with a :class:`~clevr_poc.errors.FormatError` naming the file,
its size and the cap. Counts are checked right after parsing, before any value object is built, and
the generator's counts before anything is written.

The caps are far above what CLEVR-POC needs (a generated scene file is about 2.6 KB before rendering adds
masks and boxes, a question file about 1.8 KB, an environment file about 3 KB; 5-9 objects per scene;
30 environments in the paper).
Raise one for a run with the environment variable ``CLEVR_POC_MAX_<NAME>`` (e.g.
``CLEVR_POC_MAX_SCENE_FILE_BYTES=67108864``), or in Python with :func:`override`::

    with clevr_poc.limits.override(objects_per_scene=500):
        scene = Scene.from_file("big.json")

| cap | default | what it bounds |
|---|---|---|
| `scene_file_bytes` | 8 MiB | one scene JSON file (complete or partial, masks included) |
| `question_file_bytes` | 1 MiB | one question JSON file |
| `json_file_bytes` | 256 MiB | any other JSON / JSON-lines file (manifests, predictions, reports, checkpoints, question lists, configs) |
| `json_depth` | 64 | nesting of arrays/objects in any JSON document |
| `objects_per_scene` | 64 | objects of one scene |
| `questions_per_file` | 1,000,000 | entries of a predictions file or a question list |
| `environments` | 1,000 | `generate --environments` |
| `examples` | 1,000,000 | `generate`: environments x scenes per environment (and `--chunksize`) |
| `workers` | 1,024 | `--workers` of `generate`, `render`, `evaluate` |
| `image_side` | 16,384 | `render --width / --height` (pixels) |
| `samples` | 65,536 | `render --samples`, `generate --samples` (samples per pixel) |

Environment files have their own caps, arguments of
:meth:`clevr_poc.environments.environment.Environment.from_lp` (``max_chars``, default
1,000,000 characters; ``max_constraints``, default 200).

Planning a dataset costs about 30 microseconds and 0.3 KB per example (measured: 300,000 examples
in 8.7 s and 154 MB), so the ``examples`` cap keeps the plan under ~1 GB of memory.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, fields, replace
from typing import Iterator

from clevr_poc.errors import FormatError

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The caps (see the module docstring for what each bounds). All are integers >= 1."""

    scene_file_bytes: int = 8 * MiB
    question_file_bytes: int = 1 * MiB
    json_file_bytes: int = 256 * MiB
    json_depth: int = 64
    objects_per_scene: int = 64
    questions_per_file: int = 1_000_000
    environments: int = 1_000
    examples: int = 1_000_000
    workers: int = 1_024
    image_side: int = 16_384
    samples: int = 65_536


#: The defaults.
DEFAULTS = Limits()
_NAMES: tuple[str, ...] = tuple(item.name for item in fields(Limits))
_overrides: dict[str, int] = {}


def variable(name: str) -> str:
    """The environment variable that overrides cap ``name``: ``CLEVR_POC_MAX_<NAME>``."""
    return f"CLEVR_POC_MAX_{name.upper()}"


_VARIABLES: dict[str, str] = {name: variable(name) for name in _NAMES}


def current() -> Limits:
    """The caps in force: the defaults, then ``CLEVR_POC_MAX_<NAME>`` variables, then :func:`override`.

    Raises:
        FormatError: a ``CLEVR_POC_MAX_<NAME>`` variable is not an integer >= 1 (names the variable).
    """
    values = {name: _parse(name, os.environ[_VARIABLES[name]]) for name in _NAMES if _VARIABLES[name] in os.environ}
    return replace(DEFAULTS, **{**values, **_overrides})


def cap(name: str) -> int:
    """The cap ``name`` in force (see :func:`current`; reads only this cap's variable).

    Raises:
        KeyError: an unknown cap name; FormatError: a bad ``CLEVR_POC_MAX_<NAME>`` value.
    """
    if name in _overrides:
        return _overrides[name]
    text = os.environ.get(_VARIABLES[name])
    if text is None:
        return getattr(DEFAULTS, name)
    return _parse(name, text)


def _parse(name: str, text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise FormatError("must be an integer >= 1", source=f"environment variable {_VARIABLES[name]}",
                          value=text)
    return value


def describe(name: str) -> str:
    """``"the <name> cap of <value> (raise it with CLEVR_POC_MAX_<NAME>)"`` for error messages."""
    return f"the {name} cap of {cap(name):,} (raise it with {variable(name)})"


@contextlib.contextmanager
def override(**caps: int) -> Iterator[Limits]:
    """Change caps inside a ``with`` block (this process, every thread); yields the caps in force.

    Raises:
        TypeError: an unknown cap name; ValueError: a value that is not an integer >= 1.
    """
    known = set(_NAMES)
    for name, value in caps.items():
        if name not in known:
            raise TypeError(f"unknown cap {name!r}; expected one of {sorted(known)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"cap {name} must be an integer >= 1, got {value!r}")
    saved = dict(_overrides)
    _overrides.update(caps)
    try:
        yield current()
    finally:
        _overrides.clear()
        _overrides.update(saved)


__all__ = ["DEFAULTS", "Limits", "MiB", "cap", "current", "describe", "override", "variable"]
