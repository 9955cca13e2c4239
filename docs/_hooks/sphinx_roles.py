"""MkDocs hook: show the Sphinx roles of the docstrings (``:class:`~a.b.C``` ...) as plain code.

The library's docstrings use Sphinx cross-reference roles; mkdocstrings renders them as text such as
``:class:<code>~a.b.C</code>``. After a page is rendered, this hook drops the role and, as Sphinx does,
shortens a ``~``-prefixed dotted name to its last part (``<code>C</code>``).
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|ref|term):(?=<code>)")
_TILDE = re.compile(r"<code>~([\w.]+)</code>")


def on_page_content(html: str, **kwargs) -> str:
    html = _ROLE.sub("", html)
    return _TILDE.sub(lambda m: f"<code>{m.group(1).rsplit('.', 1)[-1]}</code>", html)
