"""LLM few-shot question parser: English question -> ASP query (paper §4.1.3 "LLM as question parser",
prompt of Appendix C.2).

The paper replaces the NS-VQA BiLSTM parser with GPT-4 given "just 28 (question, ASP program) pairs of
examples". :class:`LLMParser` does the same with any chat backend (:class:`clevr_poc.llm.ChatBackend`):

1. **Prompt** (:meth:`LLMParser.messages`): a system message with the paper's task description ("You are
   a helpful assistant that converts questions in English into ASP logic language.") followed by a short
   description of the query language (predicates, the ``rel(Y, X)`` = "X is rel of Y" convention, the
   ``same_P(Y, X), X != Y`` form of "the other ... with the same P as ...", the CLEVR synonyms), then the
   28 examples as chat turns (user ``Question: ...`` / assistant ``### <ASP> ###``, the paper's ``###``
   delimiters), then the question. The examples (:data:`FEWSHOT_EXAMPLES_FILE`) are our own: one per
   question template of :mod:`clevr_poc.generation.template_files` (6 families, 4 query attributes), each checked
   by the tests to be the query the generator writes for its question.
2. **Extraction** (:func:`extract_query`): the content of the first ``###...###`` block, else of the first
   ``` fence, must be exactly one rule; without either, the first rule whose head is
   ``missing(V)`` / ``query(V)`` / ``unknown(V)`` is cut out of the reply (up to its final period).
3. **Checking** (:func:`check_query`): every extracted text goes through
   :func:`~clevr_poc.reasoning.sanitize_query` (the one gate for untrusted ASP: no directives such as
   ``#script``, only the query predicates; ``query``/``unknown`` heads are renamed to ``missing``), must
   ask for an attribute (``hasProperty(X, <attribute>, Q)`` with Q the head variable), and the sanitized
   text must parse with clingo's parser (:func:`clevr_poc.solver.rules.parse_statements`).
4. **Repair**: when a reply fails, the model gets its reply back as an assistant turn and the error in a
   follow-up user turn, at most ``repair_rounds`` times (default 1). A question whose last reply still
   fails gets ``asp_query=None`` and is counted in :attr:`LLMParser.stats` — never guessed.
5. **Official form**: an accepted query is rewritten by
   :func:`~clevr_poc.queries.official_form.to_official_form` (variables X, Y / Y1, Y2, Y3 by hop from X,
   every pairwise inequality of object variables added, the official literal order), as the official
   generator writes ``asp_query``; a query outside the six question structures is kept as sanitized.

Backend errors (connection refused, HTTP errors) propagate as
:class:`~clevr_poc.llm.LLMBackendError`; only :class:`~clevr_poc.llm.PromptTooLongError` (this prompt
does not fit the model's context) is recorded as a failed parse of that question.
"""

from __future__ import annotations

import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import clingo

from clevr_poc import domain
from clevr_poc._io import read_json
from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.llm.base import ChatBackend, PromptTooLongError
from clevr_poc.parsing.query_parser import ParseResult
from clevr_poc.queries.official_form import to_official_form
from clevr_poc.queries.sanitizer import SanitizedQuery, sanitize_query
from clevr_poc.solver.rules import parse_statements

__all__ = [
    "DEFAULT_MAX_TOKENS", "FEWSHOT_EXAMPLES_FILE", "LOCAL_N_CTX", "TASK_DESCRIPTION", "FewShotExample",
    "LLMParser", "ParseResult", "ParserStats", "QueryRejected", "check_query", "extract_query",
    "load_fewshot_examples", "make_parser_backend", "read_questions_jsonl",
]

#: The packaged few-shot examples (28 question -> ASP pairs, one per question template).
FEWSHOT_EXAMPLES_FILE: Path = Path(__file__).resolve().parent / "fewshot_examples.json"

#: Default cap on generated tokens per reply: the longest query of our templates (three-hop, every
#: reference fully described) is ~19 literals, about 200 SmolLM2 tokens.
DEFAULT_MAX_TOKENS = 320

#: Context window (tokens) given to a local GGUF model built from a spec string: the prompt with the 28
#: examples is ~3,600 SmolLM2 tokens (SmolLM2 is trained with 8,192).
LOCAL_N_CTX = 6144

_RELATION_WORDS = "; ".join(f"{r}: " + " / ".join(f'"{w}"' for w in domain.SYNONYMS[r]) for r in domain.RELATIONS)
_SYNONYM_WORDS = ", ".join(f"{w} = {value}" for value, words in domain.SYNONYMS.items()
                           if value in domain.ATTRIBUTE_OF_VALUE for w in words if w != value)

#: The system message: the paper's task description (Appendix C.2), then the query language.
TASK_DESCRIPTION = (
    "You are a helpful assistant that converts questions in English into ASP logic language.\n"
    "Each question asks about one attribute of one object in a scene. Write the question as one ASP rule "
    "with the head missing(Q), where Q is the asked value and X is the object asked about:\n"
    "- hasProperty(X, A, Q) names the asked attribute A (color, shape, size or material);\n"
    "- hasProperty(V, A, value) describes an object V: colors "
    + ", ".join(domain.COLORS) + "; shapes " + ", ".join(domain.SHAPES) + "; sizes " + ", ".join(domain.SIZES)
    + "; materials " + ", ".join(domain.MATERIALS) + " (" + _SYNONYM_WORDS + "; \"thing\" and \"object\" say "
    "nothing about the shape);\n"
    "- left(Y, X), right(Y, X), front(Y, X), behind(Y, X) mean that X is left of / right of / in front of / "
    "behind Y (" + _RELATION_WORDS + ");\n"
    "- \"the other X with the same P as Y\" is same_P(Y, X), X != Y (P is color, shape, size or material);\n"
    "- X is the object asked about; one other object is Y, several are Y1, Y2, Y3 (Y1 next to X, Y2 next "
    "to Y1 or to X, ...), and every two different objects are written different: X != Y, or X != Y1, "
    "Y1 != Y2, X != Y2 (and with Y3: Y2 != Y3, X != Y3, Y1 != Y3).\n"
    "Reply with the rule only, between ### and ###."
)

#: How a question is put to the model (user turn) and how an example answer is written (assistant turn).
QUESTION_FORMAT = "Question: {question}"
ANSWER_FORMAT = "### {asp} ###"
#: The follow-up user turn of a repair round.
REPAIR_FORMAT = ("That answer cannot be used: {error}\n"
                 "Write the question again as one ASP rule with the head missing(Q), between ### and ###.")

_HEAD = re.compile(r"\b(?:missing|query|unknown)\s*\(\s*[A-Z][A-Za-z0-9_]*\s*\)\s*:-", re.ASCII)
_DELIMITED = re.compile(r"###(.*?)(?:###|$)", re.DOTALL)
_FENCED = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_LABEL = re.compile(r"^\s*(?:ASP|Answer|Rule|Query)\s*:\s*", re.IGNORECASE)
# end of a rule: a period that is not part of ".." and is followed by white space or the end
_RULE_END = re.compile(r"(?<!\.)\.(?!\.)(?=\s|$)")


# ============================================================================ few-shot examples
@dataclass(frozen=True)
class FewShotExample:
    """One (question, ASP query) pair of the prompt.

    Attributes:
        question: English question, e.g. ``"What color is the medium thing?"``.
        asp: its query, e.g. ``"missing(Q) :- hasProperty(X,color,Q), hasProperty(X,size,medium)."``.
        template: the question template it instantiates (``"zero_hop.json#0"``), or None.
        values: the template parameters it fills (``{"<Z>": "medium", "<C>": "", ...}``; empty if unknown).
    """

    question: str
    asp: str
    template: str | None = None
    values: Mapping[str, str] = field(default_factory=dict)


def load_fewshot_examples(path: str | os.PathLike[str] | None = None) -> tuple[FewShotExample, ...]:
    """Read few-shot examples: a JSON object ``{"examples": [{"question", "asp", "template"?, "values"?}]}``
    or a bare list of such objects; default :data:`FEWSHOT_EXAMPLES_FILE` (28 examples).

    Raises:
        FormatError: unreadable file, bad JSON, no examples, or an example without a non-empty string
            ``question`` / ``asp`` (names the file and the example index).
    """
    source = FEWSHOT_EXAMPLES_FILE if path is None else Path(path)
    data = read_json(source)
    items = data.get("examples") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise FormatError("expected a non-empty list of examples (or {\"examples\": [...]})", source=source)
    examples = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise FormatError("an example must be an object", source=source, field=f"examples[{index}]",
                              value=type(item).__name__)
        for key in ("question", "asp"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise FormatError("must be a non-empty string", source=source, field=f"examples[{index}].{key}",
                                  value=item.get(key))
        values = item.get("values") or {}
        if not isinstance(values, dict):
            raise FormatError("must be an object", source=source, field=f"examples[{index}].values", value=values)
        examples.append(FewShotExample(item["question"].strip(), item["asp"].strip(), item.get("template"),
                                       dict(values)))
    return tuple(examples)


def _as_examples(examples: Any) -> tuple[FewShotExample, ...]:
    if examples is None:
        return load_fewshot_examples()
    if isinstance(examples, (str, os.PathLike)):
        return load_fewshot_examples(examples)
    result = []
    for index, item in enumerate(examples):
        if isinstance(item, FewShotExample):
            result.append(item)
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2 \
                and all(isinstance(x, str) for x in item):
            result.append(FewShotExample(item[0], item[1]))
        else:
            raise FormatError("expected FewShotExample or (question, asp) pairs", field=f"examples[{index}]",
                              value=type(item).__name__)
    return tuple(result)


# ============================================================================ extraction and checking
class QueryRejected(UnsafeProgramError):
    """A reply holds no usable query; the message says why (it is what the repair turn shows the model)."""


def extract_query(reply: str) -> str:
    """Cut the ASP rule out of a model reply.

    * a ``###...###`` block (the paper's delimiters; an unclosed final ``###`` block counts) — its content,
      without a leading ``ASP:`` label or a fence around it, is the rule;
    * else a fenced block (```` ``` ```` or ```` ```asp ````) — likewise;
    * else the first rule with head ``missing(V)`` / ``query(V)`` / ``unknown(V)``, up to the period that
      ends it (or the end of the line when there is none).

    The text is only cut out, never repaired or checked: pass it to :func:`check_query`.

    Raises:
        QueryRejected: empty reply, an empty block, or no rule with such a head.
    """
    if not reply or not reply.strip():
        raise QueryRejected("the reply is empty")
    for pattern in (_DELIMITED, _FENCED):
        for match in pattern.finditer(reply):
            block = match.group(1).strip()
            fenced = _FENCED.search(block) if pattern is _DELIMITED else None
            if fenced is not None:  # ### ```asp ... ``` ###
                block = fenced.group(1).strip()
            block = _LABEL.sub("", block.strip("`").strip())
            if block:
                return block
    match = _HEAD.search(reply)
    if match is None:
        raise QueryRejected("no rule with the head missing(Q) found in the reply")
    rest = reply[match.start():]
    end = _RULE_END.search(rest)
    if end is not None:
        return rest[:end.end()].strip()
    return rest.split("\n", 1)[0].strip()


def _clingo_parse_error(text: str) -> str | None:
    """None if clingo parses ``text``, else clingo's message."""
    messages: list[str] = []

    def logger(code: clingo.MessageCode, message: str) -> None:
        messages.append(message.strip())

    try:
        parse_statements(text, logger=logger, message_limit=5)
    except RuntimeError as exc:
        return "; ".join(messages) or str(exc)
    return None


def check_query(text: str) -> SanitizedQuery:
    """Check an extracted query: the sanitizer (query language only), an asked attribute
    (``hasProperty(X, <attribute>, Q)`` with Q the head variable), and a clingo parse of the sanitized text.

    Returns:
        the :class:`~clevr_poc.reasoning.SanitizedQuery` (``.text`` is the canonical rule).

    Raises:
        UnsafeProgramError: the sanitizer rejects the text (its message says what is wrong).
        QueryRejected: no asked attribute, or clingo cannot parse the sanitized text.
    """
    checked = sanitize_query(text)
    if checked.attribute is None:
        raise QueryRejected(f"the rule does not ask for an attribute: the body needs "
                            f"hasProperty(X, <color|shape|size|material>, {checked.head_variable})")
    error = _clingo_parse_error(checked.text)
    if error is not None:
        raise QueryRejected(f"clingo cannot parse the rule: {error}")
    return checked


def _official_text(checked: SanitizedQuery) -> str:
    """The official form of an accepted query (step 5 of the module docstring), or its sanitized text
    when it has none of the six question structures."""
    try:
        return to_official_form(checked)
    except FormatError:
        return checked.text


# ============================================================================ the parser
@dataclass
class ParserStats:
    """Counters of an :class:`LLMParser` (cumulative over its life).

    Attributes:
        calls: questions parsed.
        requests: chat requests sent (first replies + repair turns).
        repaired: questions whose first reply failed and a repair reply succeeded.
        failures: questions left unparsed (``asp_query`` None).
    """

    calls: int = 0
    requests: int = 0
    repaired: int = 0
    failures: int = 0

    def to_json(self) -> dict[str, int]:
        return {"calls": self.calls, "requests": self.requests, "repaired": self.repaired,
                "failures": self.failures}


def make_parser_backend(spec: str, *, n_ctx: int = LOCAL_N_CTX, timeout: float = 60) -> ChatBackend:
    """A backend for the parser from a spec (see :func:`clevr_poc.llm.make_backend`); local GGUF specs
    (``local``, ``smollm2``, ``gguf:PATH``) get a context window of ``n_ctx`` tokens so the 28-example
    prompt fits.

    Raises:
        FormatError: unknown spec. LLMBackendError: the backend cannot be set up.
    """
    from clevr_poc.llm.factory import LOCAL_SPECS, make_backend

    text = spec.strip()
    kind, _, rest = text.partition(":")
    if text.lower() in LOCAL_SPECS or (kind.lower() == "gguf" and rest):
        from clevr_poc.llm.local import LocalGGUFBackend

        return LocalGGUFBackend(rest if kind.lower() == "gguf" and rest else None, n_ctx=n_ctx)
    return make_backend(text, timeout=timeout)


class LLMParser:
    """Few-shot LLM question parser (paper §4.1.3, Appendix C.2); see the module docstring.

    Args:
        backend: a :class:`~clevr_poc.llm.ChatBackend`, or a spec string for :func:`make_parser_backend`
            (``"local"`` = the bundled SmolLM2-135M-Instruct GGUF, ``"openai:MODEL@URL"``, ...).
        examples: the few-shot examples: None (the packaged 28), a JSON file path, or a sequence of
            :class:`FewShotExample` / ``(question, asp)`` pairs.
        repair_rounds: follow-up turns allowed after a failed reply (>= 0; default 1).
        max_tokens: cap on generated tokens per reply (>= 1).
        temperature: sampling temperature (>= 0; 0 = greedy).
        seed: sampling seed sent to the backend.

    Attributes:
        stats: :class:`ParserStats`.

    Raises:
        ValueError: negative ``repair_rounds``, ``max_tokens`` < 1 or negative ``temperature``.
        FormatError: bad examples or backend spec.
    """

    def __init__(self, backend: ChatBackend | str, examples: Any = None, repair_rounds: int = 1,
                 max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = 0):
        if isinstance(repair_rounds, bool) or not isinstance(repair_rounds, int) or repair_rounds < 0:
            raise ValueError(f"repair_rounds must be an integer >= 0, got {repair_rounds!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        self.backend: ChatBackend = make_parser_backend(backend) if isinstance(backend, str) else backend
        self.examples = _as_examples(examples)
        self.repair_rounds = repair_rounds
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.seed = seed
        self.stats = ParserStats()
        self._lock = threading.Lock()
        self._prefix = self._build_prefix()

    @property
    def name(self) -> str:
        """The parser's name in model names: ``"LLM <backend name>"``."""
        return f"LLM {self.backend.name or ''}".strip()

    def parse_queries(self, questions: Sequence[str]) -> list[ParseResult]:
        """:meth:`parse_batch` with one request at a time (the :class:`~clevr_poc.parsing.QueryParser`
        protocol)."""
        return self.parse_batch(questions)

    def __repr__(self) -> str:
        return (f"LLMParser(backend={getattr(self.backend, 'name', self.backend)!r}, "
                f"examples={len(self.examples)}, repair_rounds={self.repair_rounds})")

    def _build_prefix(self) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": TASK_DESCRIPTION}]
        for example in self.examples:
            messages.append({"role": "user", "content": QUESTION_FORMAT.format(question=example.question)})
            messages.append({"role": "assistant", "content": ANSWER_FORMAT.format(asp=example.asp)})
        return messages

    def messages(self, question: str) -> list[dict[str, str]]:
        """The chat messages of the first request: system task description, the examples as
        user/assistant turns, then ``Question: <question>``."""
        return [*self._prefix, {"role": "user", "content": QUESTION_FORMAT.format(question=question.strip())}]

    def _count(self, **increments: int) -> None:
        with self._lock:
            for name, value in increments.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)

    def parse(self, question: str) -> ParseResult:
        """Parse one question into an ASP query.

        Returns:
            :class:`ParseResult`; ``asp_query`` is None (and ``error`` says why) when the first reply and
            every repair reply failed, or when the prompt does not fit the model's context.

        Raises:
            FormatError: ``question`` is not a non-empty string.
            LLMBackendError: the backend failed (other than a prompt too long).
        """
        if not isinstance(question, str) or not question.strip():
            raise FormatError("a question must be a non-empty string", field="question", value=question)
        messages = self.messages(question)
        replies: list[str] = []
        error: str | None = None
        requests = 0
        for round_index in range(self.repair_rounds + 1):
            requests += 1
            try:
                reply = self.backend.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature,
                                              seed=self.seed)
            except PromptTooLongError as exc:
                error = str(exc)
                break
            finally:
                self._count(requests=1)
            replies.append(reply)
            try:
                checked = check_query(extract_query(reply))
            except UnsafeProgramError as exc:
                error = str(exc)
                messages = [*messages, {"role": "assistant", "content": reply},
                            {"role": "user", "content": REPAIR_FORMAT.format(error=error)}]
                continue
            self._count(calls=1, repaired=int(round_index > 0))
            return ParseResult(_official_text(checked), reply, None, requests, tuple(replies))
        self._count(calls=1, failures=1)
        return ParseResult(None, replies[-1] if replies else "", error, requests, tuple(replies))

    def parse_batch(self, questions: Iterable[str], *, workers: int = 1,
                    progress: Callable[[int, ParseResult], None] | None = None) -> list[ParseResult]:
        """Parse many questions, results in input order.

        Args:
            questions: the questions.
            workers: concurrent requests (use > 1 only with an HTTP backend; a local model serialises
                calls anyway).
            progress: called as ``progress(index, result)`` after each question (in completion order).

        Raises:
            as :meth:`parse`.
        """
        items = list(questions)
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")

        def one(index: int) -> ParseResult:
            result = self.parse(items[index])
            if progress is not None:
                progress(index, result)
            return result

        if workers == 1 or len(items) <= 1:
            return [one(i) for i in range(len(items))]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, range(len(items))))


def read_questions_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read ``{"question": ...}`` objects, one per line (blank lines skipped).

    Raises:
        FormatError: missing/unreadable file, a line that is not JSON, not an object, or has no non-empty
            string ``question`` (names the file and the 1-based line number).
    """
    from clevr_poc import limits
    from clevr_poc._io import loads_json, read_text

    source = Path(path)
    text = read_text(source, what="a questions file")  # typed errors; the json_file_bytes cap
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(rows) >= limits.cap("questions_per_file"):
            raise FormatError(f"more questions than {limits.describe('questions_per_file')}", source=source,
                              field=f"line {number}")
        row = loads_json(line, source=source, field=f"line {number}")
        if not isinstance(row, dict):
            raise FormatError("must be a JSON object", source=source, field=f"line {number}",
                              value=type(row).__name__)
        if not isinstance(row.get("question"), str) or not row["question"].strip():
            raise FormatError("needs a non-empty string \"question\"", source=source,
                              field=f"line {number}", value=row.get("question"))
        rows.append(row)
    return rows
