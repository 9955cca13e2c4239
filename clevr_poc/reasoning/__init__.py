"""Reasoning: the clingo Reasoner (brave consequences), the query sanitizer, the official query form
(:func:`to_official_form`) and explanations."""

from clevr_poc.reasoning.reasoner import Reasoner
from clevr_poc.reasoning.official_form import to_official_form
from clevr_poc.reasoning.sanitizer import SanitizedQuery, sanitize_query

__all__ = ["Reasoner", "SanitizedQuery", "sanitize_query", "to_official_form"]
