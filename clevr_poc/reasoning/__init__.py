"""Reasoning: the clingo Reasoner (brave consequences) and explanations; re-exports the query language
(:func:`sanitize_query`, :class:`SanitizedQuery`, :func:`to_official_form`, which live in
:mod:`clevr_poc.queries`)."""

from clevr_poc.reasoning.reasoner import Reasoner, ReasonerMode
from clevr_poc.queries.official_form import to_official_form
from clevr_poc.queries.sanitizer import SanitizedQuery, sanitize_query

__all__ = ["Reasoner", "ReasonerMode", "SanitizedQuery", "sanitize_query", "to_official_form"]
