"""Reasoning: the clingo Reasoner (brave consequences), the query sanitizer and explanations."""

from clevr_poc.reasoning.reasoner import Reasoner
from clevr_poc.reasoning.sanitizer import SanitizedQuery, sanitize_query

__all__ = ["Reasoner", "SanitizedQuery", "sanitize_query"]
