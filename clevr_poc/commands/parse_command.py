"""``python -m clevr_poc parse``: English question(s) -> ASP query, with a trained BiLSTM or a few-shot LLM.

* ``--parser PATH`` — a BiLSTM parser folder written by ``BiLSTMParser.save_pretrained`` (paper §4.1.1,
  NS-VQA's question parser);
* ``--parser llm`` — :class:`~clevr_poc.parsing.llm_parser.LLMParser` (paper §4.1.3 / Appendix C.2: 28
  question -> ASP examples in the prompt) on ``--backend`` (default ``local``: the bundled
  SmolLM2-135M-Instruct GGUF via llama-cpp-python, offline; ``openai:MODEL@URL`` for an OpenAI-compatible
  server).

Output: with ``--question TEXT`` the ASP query on one line; with ``--questions FILE.jsonl`` (one
``{"question": ...}`` object per line, other keys kept) one JSON object per input line on stdout, the
input with ``"asp_query"`` added (``null`` plus ``"error"`` when the question could not be parsed), all in
one process (the model is loaded once). A summary goes to stderr. Every query printed has passed
:func:`~clevr_poc.reasoning.sanitize_query`.

Bad inputs (missing file, a line that is not a JSON object with a ``question``, an unknown parser, a
broken checkpoint, an unreachable server) end with one ``error: ...`` line and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from clevr_poc.commands.shared import Subparsers, add_command
from clevr_poc.errors import ClevrPocError, FormatError, UnsafeProgramError

_EPILOG = """examples:
  python -m clevr_poc parse --parser llm --question "What color is the big cube left of the red sphere?"
  python -m clevr_poc parse --parser llm --backend openai:qwen2.5-7b@http://127.0.0.1:8000/v1 \\
      --questions questions.jsonl > parsed.jsonl
  python -m clevr_poc parse --parser runs/bilstm --questions questions.jsonl
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``parse`` sub-command (sets ``func=run``)."""
    parser = add_command(
        subparsers,
        "parse",
        help="translate questions into ASP queries (BiLSTM checkpoint or few-shot LLM)",
        description="Translate English questions about the hidden object into ASP queries\n"
                    "(missing(Q) :- hasProperty(X,<attribute>,Q), ...).",
        epilog=_EPILOG,
    )
    parser.add_argument("--parser", required=True, metavar="PATH|llm",
                        help="a BiLSTM parser folder (config.json, vocab.json, weights.pt) or 'llm'")
    parser.add_argument("--backend", metavar="SPEC",
                        help="chat backend of --parser llm: local (default; bundled SmolLM2 GGUF), smollm2, "
                             "gguf:PATH, openai:MODEL or openai:MODEL@URL")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--question", metavar="TEXT", help="one question; prints its ASP query")
    source.add_argument("--questions", metavar="FILE.jsonl",
                        help="one {\"question\": ...} object per line; prints one JSON line per question")
    llm = parser.add_argument_group("LLM parser options")
    llm.add_argument("--repair-rounds", type=int, default=1, metavar="N",
                     help="follow-up turns showing the model its error (default 1)")
    llm.add_argument("--max-tokens", type=int, default=None, metavar="N",
                     help="cap on generated tokens per reply (default 320)")
    llm.add_argument("--workers", type=int, default=1, metavar="N",
                     help="concurrent requests to an HTTP backend (default 1)")
    llm.add_argument("--examples", metavar="FILE.json",
                     help="few-shot examples to use instead of the packaged 28")
    parser.set_defaults(func=run)
    return parser


class _Parser:
    """What ``run`` parses with: a name and ``parse_batch(questions) -> [(asp_query | None, error | None)]``."""

    def __init__(self, name: str, parse_batch: Callable[[list[str]], list[tuple[str | None, str | None]]],
                 summary: Callable[[], str]):
        self.name = name
        self.parse_batch = parse_batch
        self.summary = summary


def _bilstm(path: str) -> _Parser:
    try:
        from clevr_poc.parsing import BiLSTMParser  # type: ignore[attr-defined]
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch":
            raise FormatError("the BiLSTM parser needs PyTorch (pip install '.[vision]' in the clevr_poc folder)",
                              field="--parser", value=path) from None
        try:
            from clevr_poc.parsing.seq2seq import BiLSTMParser
        except ImportError:
            raise FormatError("the BiLSTM parser is not available in this installation", field="--parser",
                              value=path) from None
    from clevr_poc.parsing.question_words import UnreadableQuestionError, check_question_words

    model = BiLSTMParser.from_pretrained(path)
    read: list = []  # QuestionWords of the questions parsed so far

    def parse_batch(questions: list[str]) -> list[tuple[str | None, str | None]]:
        from clevr_poc.reasoning import sanitize_query

        results: list[tuple[str | None, str | None]] = [(None, None)] * len(questions)
        readable = []
        for i, question in enumerate(questions):
            try:  # too long, or mostly words the parser never saw: refused, not guessed
                read.append(check_question_words(model.vocabulary, question,
                                                 max_words=model.config.max_question_words))
                readable.append(i)
            except UnreadableQuestionError as exc:
                results[i] = (None, str(exc))
        for i, text in zip(readable, model.parse_batch([questions[i] for i in readable])):
            try:
                results[i] = (sanitize_query(text).text, None)
            except UnsafeProgramError as exc:  # the grammar-constrained decoder should rule this out
                results[i] = (None, str(exc))
        return results

    def summary() -> str:
        unknown = [w for w in read if w.unknown]
        if len(read) == 1:
            return read[0].describe()
        return (f"{len(unknown)} question(s) with words the parser did not know "
                f"({sum(len(w.unknown) for w in unknown)} of {sum(w.words for w in read)} words)") if unknown else ""

    return _Parser(f"bilstm:{path}", parse_batch, summary)


def _llm(args: argparse.Namespace) -> _Parser:
    from clevr_poc.parsing.llm_parser import DEFAULT_MAX_TOKENS, LLMParser

    if args.repair_rounds < 0:
        raise FormatError("must be >= 0", field="--repair-rounds", value=args.repair_rounds)
    max_tokens = DEFAULT_MAX_TOKENS if args.max_tokens is None else args.max_tokens
    if max_tokens < 1:
        raise FormatError("must be >= 1", field="--max-tokens", value=args.max_tokens)
    if args.workers < 1:
        raise FormatError("must be >= 1", field="--workers", value=args.workers)
    parser = LLMParser(args.backend or "local", examples=args.examples, repair_rounds=args.repair_rounds,
                       max_tokens=max_tokens)

    def parse_batch(questions: list[str]) -> list[tuple[str | None, str | None]]:
        return [(r.asp_query, r.error) for r in parser.parse_batch(questions, workers=args.workers)]

    def summary() -> str:
        s = parser.stats
        return f"{s.requests} requests, {s.repaired} repaired, {s.failures} unparseable"

    return _Parser(f"llm:{getattr(parser.backend, 'name', args.backend)}", parse_batch, summary)


def make_parser(args: argparse.Namespace) -> _Parser:
    """The parser named by ``--parser``.

    Raises:
        FormatError: neither ``llm`` nor an existing folder, ``--backend``/LLM options with a BiLSTM
            parser, a broken checkpoint or a missing optional dependency.
    """
    if args.parser == "llm":
        return _llm(args)
    if not Path(args.parser).exists():
        raise FormatError("unknown parser: expected 'llm' or the folder of a BiLSTM parser (not found)",
                          field="--parser", value=args.parser)
    llm_only = [flag for flag, given in (("--backend", args.backend), ("--examples", args.examples),
                                         ("--max-tokens", args.max_tokens)) if given is not None]
    if llm_only:
        raise FormatError(f"{', '.join(llm_only)} only apply to --parser llm", field="--parser", value=args.parser)
    return _bilstm(args.parser)


def run(args: argparse.Namespace) -> int:
    """Parse ``--question`` or every line of ``--questions``; returns the exit status (0, or 1 when the
    single ``--question`` could not be parsed)."""
    from clevr_poc.parsing.llm_parser import read_questions_jsonl

    if args.question is not None:
        if not args.question.strip():
            raise FormatError("empty question", field="--question")
        from clevr_poc.parsing.question_words import MAX_QUESTION_CHARS

        if len(args.question) > MAX_QUESTION_CHARS:
            raise FormatError(f"{len(args.question):,} characters is over the {MAX_QUESTION_CHARS:,} a question "
                              "may have", field="--question")
        rows = [{"question": args.question}]
    else:
        rows = read_questions_jsonl(args.questions)  # every line is checked before a model is loaded
    parser = make_parser(args)
    results = parser.parse_batch([row["question"] for row in rows])
    if args.question is not None:
        asp_query, error = results[0]
        if asp_query is None:
            raise ClevrPocError(f"could not parse the question: {error}")
        note = parser.summary()
        if note and parser.name.startswith("bilstm:"):
            print(f"note: {note}", file=sys.stderr)
        print(asp_query)
        return 0
    failures = 0
    for row, (asp_query, error) in zip(rows, results):
        out = {**row, "asp_query": asp_query}
        if asp_query is None:
            failures += 1
            out["error"] = error
        else:
            out.pop("error", None)
        sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    extra = parser.summary()
    print(f"parsed {len(rows)} question(s) with {parser.name}: {len(rows) - failures} ok, {failures} failed"
          + (f" ({extra})" if extra else ""), file=sys.stderr)
    return 0
