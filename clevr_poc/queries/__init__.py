"""The query language of CLEVR-POC questions, below every stage that reads or writes queries.

- :mod:`.query` -- :class:`SanitizedQuery`, the typed query value (head variable, body of :class:`Atom`
  and :class:`Inequality` literals over :class:`Variable`, :class:`Constant` and :class:`Number` terms),
  which checks itself against the query whitelist, prints its canonical text and gives clingo syntax trees;
- :mod:`.sanitizer` -- :func:`sanitize_query`, the only way from text to a query: an untrusted ASP query
  read exactly as clingo reads it (:mod:`clevr_poc.asp_lexer`), parsed into a :class:`SanitizedQuery`;
- :mod:`.official_form` -- :func:`to_official_form`: the query rewritten the way the official generator
  writes ``asp_query`` (reference: SEMANTICS.md, "The official query form").

Generation writes queries, parsers produce them, :class:`~clevr_poc.question.Question` holds one and the
Reasoner answers them; all of them import from here, and this folder imports none of them (so no
folder import cycle runs through the query language). ``clevr_poc.reasoning`` re-exports both names.
"""

from clevr_poc.queries.official_form import to_official_form
from clevr_poc.queries.query import Atom, Constant, Inequality, Number, SanitizedQuery, Variable
from clevr_poc.queries.sanitizer import sanitize_query

__all__ = ["Atom", "Constant", "Inequality", "Number", "SanitizedQuery", "Variable", "sanitize_query",
           "to_official_form"]
