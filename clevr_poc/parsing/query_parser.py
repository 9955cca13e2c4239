"""The seam between question parsers and the rest: :class:`QueryParser` (what every parser offers) and
:class:`ParseResult` (what it returns for each question).

Two parsers implement it, :class:`~clevr_poc.parsing.seq2seq.BiLSTMParser` (the NS-VQA seq2seq parser) and
:class:`~clevr_poc.parsing.llm_parser.LLMParser` (few-shot LLM, paper App. C.2); :class:`FunctionParser`
turns a plain ``question -> query text | None`` function into one. :class:`clevr_poc.pipeline.Pipeline`
calls only :meth:`QueryParser.parse_queries`. No torch, no clingo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence, runtime_checkable

#: :attr:`ParseResult.error` of a parser that returned no text (an empty string or None).
NO_TEXT = "the parser returned no text"


@dataclass(frozen=True)
class ParseResult:
    """The parse of one question.

    Attributes:
        asp_query: the ASP query (``missing(Q) :- ... .``; the LLM parser's is sanitized and in the official
            form, :func:`~clevr_poc.queries.official_form.to_official_form`), or None when there is none.
        raw: the parser's raw output: the last reply of an LLM (``""`` when no reply came, e.g. a prompt too
            long), the decoded text of the BiLSTM.
        error: why there is no query (None on success).
        attempts: requests made for this question (an LLM: 1 + repair rounds used; else 1).
        replies: every LLM reply, in order (empty for other parsers).
    """

    asp_query: str | None
    raw: str
    error: str | None
    attempts: int = 1
    replies: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.asp_query is not None

    def to_json(self) -> dict[str, str | int | None]:
        return {"asp_query": self.asp_query, "raw": self.raw, "error": self.error, "attempts": self.attempts}

    @classmethod
    def of_text(cls, text: str | None) -> "ParseResult":
        """The result of a parser that returns query text: the text, or a failure (:data:`NO_TEXT`) when it
        is None, not a string or blank."""
        if isinstance(text, str) and text.strip():
            return cls(text, text, None)
        return cls(None, text if isinstance(text, str) else "", NO_TEXT)


@runtime_checkable
class QueryParser(Protocol):
    """A question parser: English questions -> ASP queries.

    Attributes:
        name: the parser's name in model names (``"BiLSTM"``, ``"LLM <backend>"``, ...).
    """

    name: str

    def parse_queries(self, questions: Sequence[str]) -> list[ParseResult]:
        """One :class:`ParseResult` per question, in order (a failure is a result with ``asp_query`` None).

        Raises:
            FormatError: a question that is not a non-empty string.
            ClevrPocError: what the parser's backend raised (e.g. ``LLMBackendError``).
        """
        ...


class FunctionParser:
    """A :class:`QueryParser` around a function ``question -> query text | None`` (None or blank: a failure).

    Args:
        function: the parser function.
        name: its name in model names (default: the function's ``__name__``, else its class name).
    """

    def __init__(self, function: Callable[[str], str | None], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", None) or type(function).__name__

    def __repr__(self) -> str:
        return f"FunctionParser({self.name!r})"

    def parse_queries(self, questions: Sequence[str]) -> list[ParseResult]:
        return [ParseResult.of_text(self.function(question)) for question in questions]


__all__ = ["FunctionParser", "NO_TEXT", "ParseResult", "QueryParser"]
