"""Locate the ASP knowledge base (``asp/``) shipped with the package.

In a wheel the folder is installed as ``clevr_poc/asp``; in a source checkout or editable install it is
the top-level ``asp/`` folder next to the package.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from clevr_poc.errors import ClevrPocError


@lru_cache(maxsize=1)
def asp_dir() -> Path:
    """The folder holding ``background.lp``, ``answering.lp`` and ``templates/``.

    Raises:
        ClevrPocError: the folder cannot be found (a broken install).
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "asp", here.parent / "asp"):
        if (candidate / "background.lp").is_file():
            return candidate
    raise ClevrPocError(f"ASP knowledge base not found next to {here} (broken installation?)")


@lru_cache(maxsize=None)
def read_asp(name: str) -> str:
    """Text of ``asp/<name>`` (e.g. ``"background.lp"`` or ``"templates/05_negation.lp"``)."""
    return (asp_dir() / name).read_text(encoding="utf-8")


def strip_comments(text: str) -> str:
    """Drop ``%`` line comments (our .lp files use no ``%*...*%`` blocks)."""
    return "\n".join(line.split("%", 1)[0] for line in text.splitlines())
