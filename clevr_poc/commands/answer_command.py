"""``python -m clevr_poc answer``: every value of the hidden object's attribute consistent with the inputs.

Inputs are an environment (official ``.lp``), a partial scene (official scene JSON) and a question (an ASP
query, given as ``--query`` or read from an official question JSON with ``--question``), or a shipped
example (``--example appendix_a``, see :mod:`clevr_poc.examples`); options given next to ``--example``
replace that part of the example. The answer is computed by :class:`~clevr_poc.reasoning.Reasoner`
(official semantics: brave consequences of environment + scene + query, paper §3.4 / SEMANTICS).

Output: human-readable lines, or with ``--json`` exactly one JSON object on stdout::

    {"answer": ["medium", "small"], "attribute": "size", "satisfiable": true, "query": "missing(Q) :- ...",
     "question": "...", "replaced_question": null, "expected": ["medium", "small"],
     "matches_expected": true, "mode": "compiled", "example": "appendix_a",
     "explanation": {...}}      # explanation only with --explain

With ``--query`` next to ``--example`` or ``--question``, the query given replaces the question's: the
outputs show that query, ``"question"`` is null and ``"replaced_question"`` holds the replaced question's
text (the human-readable lines say so on a ``note:`` line), and there is no expected answer.

Every bad input (missing or unreadable file, malformed JSON, a bad scene field, a query outside the query
language, a scene with more objects than the environment declares, a solve over the time limit) raises a
:class:`~clevr_poc.errors.ClevrPocError`, which the CLI prints as one ``error: ...`` line (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from clevr_poc import domain
from clevr_poc.answer import Answer
from clevr_poc.commands.shared import Subparsers, add_command
from clevr_poc.environments import Environment
from clevr_poc.errors import ClevrPocError, FormatError, UnsafeProgramError
from clevr_poc.examples import EXAMPLES, load_example
from clevr_poc.queries.sanitizer import ENGLISH_HINT, looks_like_english
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner, ReasonerMode
from clevr_poc.scene import Scene

DEFAULT_TIME_LIMIT = 10.0

_T = TypeVar("_T")

_EPILOG = """examples:
  python -m clevr_poc answer --example appendix_a --explain
  python -m clevr_poc answer --environment env.lp --scene scene.json \\
      --query 'missing(Q) :- hasProperty(X,size,Q), hasProperty(X,color,red).' --json
  python -m clevr_poc answer --environment env.lp --scene scene.json --question question.json
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``answer`` sub-command (sets ``func=run``)."""
    parser = add_command(
        subparsers,
        "answer",
        help="answer a question about the hidden object of a partial scene (clingo)",
        description="Every value of the queried attribute of the hidden object that is consistent with\n"
                    "the environment's constraints, the partial scene and the question.",
        epilog=_EPILOG,
    )
    inputs = parser.add_argument_group("inputs (an --example, or --environment, --scene and a query)")
    inputs.add_argument("--example", metavar="NAME",
                        help=f"a shipped example: {', '.join(EXAMPLES)} (other inputs override its parts)")
    inputs.add_argument("--environment", metavar="ENV.lp", help="environment program (official .lp layout)")
    inputs.add_argument("--scene", metavar="SCENE.json", help="partial scene (official scene JSON)")
    inputs.add_argument("--query", metavar="ASP",
                        help="the question in ASP: 'missing(Q) :- hasProperty(X,<attribute>,Q), ...'")
    inputs.add_argument("--question", metavar="Q.json",
                        help="official question JSON (its asp_query is used unless --query is given; its "
                             "answer, if any, is shown as the expected answer)")
    output = parser.add_argument_group("output and solving")
    output.add_argument("--explain", action="store_true",
                        help="say why each value is kept (a witness) or eliminated (the constraints)")
    output.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    output.add_argument("--mode", default="compiled", metavar="{compiled,direct}",
                        help="compiled: ground the environment once, the question as assumptions "
                             "(default); direct: ground the whole program per question")
    output.add_argument("--time-limit", default=str(DEFAULT_TIME_LIMIT), metavar="S",
                        help=f"seconds allowed for one solver call (default {DEFAULT_TIME_LIMIT:g})")
    parser.set_defaults(func=run)
    return parser


@dataclass(frozen=True)
class AnswerInputs:
    """What one ``answer`` run works on.

    Attributes:
        environment, scene: the environment and the partial scene.
        query: the ASP query text (untrusted; the Reasoner sanitizes it).
        question: the question file's (or example's) question, when there is one.
        expected: the gold answer, when the query is the question's own and the question has one.
        example: the example name, when ``--example`` was given.
        replaced: where ``question`` came from (``"example's"`` or ``"question file's"``) when ``--query``
            replaced its query, else None: the outputs then show the query answered and say the question
            was replaced, never the question as what was answered.
    """

    environment: Environment
    scene: Scene
    query: str
    question: Question | None = None
    expected: frozenset[str] | None = None
    example: str | None = None
    replaced: str | None = None


def _read(path: str, reader: Callable[[Path], _T]) -> _T:
    """``reader(path)`` with operating-system errors (permissions, ...) turned into FormatError."""
    try:
        return reader(Path(path))
    except OSError as exc:
        raise FormatError(f"cannot read ({exc.strerror or exc.__class__.__name__})", source=path) from None


def parse_time_limit(text: str) -> float:
    """``--time-limit`` as seconds; raises FormatError unless it is a positive finite number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise FormatError("must be a positive number of seconds", field="--time-limit", value=text)
    return value


def parse_mode(text: str) -> ReasonerMode:
    """``--mode`` as a :class:`ReasonerMode`; raises FormatError unless it is one of :attr:`Reasoner.MODES`."""
    if text not in Reasoner.MODES:
        raise FormatError(f"expected one of {list(Reasoner.MODES)}", field="--mode", value=text)
    return ReasonerMode(text)


def load_inputs(args: argparse.Namespace) -> AnswerInputs:
    """Read the inputs named on the command line (an example, overridden part by part).

    Raises:
        FormatError: unknown example, a missing input, or any file that cannot be read or parsed.
    """
    environment: Environment | None = None
    scene: Scene | None = None
    question: Question | None = None
    if args.example is not None:
        if args.example not in EXAMPLES:
            raise FormatError(f"unknown example; expected one of {list(EXAMPLES)}", field="--example", value=args.example)
        environment, scene, question = load_example(args.example)
    if args.environment is not None:
        environment = _read(args.environment, Environment.from_lp)
    if args.scene is not None:
        scene = _read(args.scene, Scene.from_file)
    if args.question is not None:
        question = _read(args.question, Question.from_file)
    missing = [flag for flag, value in (("--environment", environment), ("--scene", scene)) if value is None]
    if args.query is None and question is None:
        missing.append("--query (or --question)")
    if missing:
        raise FormatError(f"missing input {', '.join(missing)}; give them, or --example NAME "
                          f"(one of {', '.join(EXAMPLES)})")
    if args.query is not None and looks_like_english(args.query):
        raise UnsafeProgramError(f"rejected ASP query: {ENGLISH_HINT}: --query takes an ASP query; "
                                 f"`python -m clevr_poc parse --parser llm --question TEXT` turns a question "
                                 f"into one: {args.query.strip()[:120]!r}")
    query = args.query if args.query is not None else question.asp_query
    expected = question.answer if question is not None and args.query is None else None
    replaced = None
    if question is not None and args.query is not None:
        replaced = "question file's" if args.question is not None else "example's"
    return AnswerInputs(environment, scene, query, question, expected, args.example, replaced)


def solve(inputs: AnswerInputs, *, mode: ReasonerMode | str = ReasonerMode.COMPILED,
          time_limit: float = DEFAULT_TIME_LIMIT,
          explain: bool = False) -> Answer:
    """Answer (and with ``explain`` explain) the question of ``inputs``; see :func:`solve_with_mode`."""
    return solve_with_mode(inputs, mode=mode, time_limit=time_limit, explain=explain)[0]


def solve_with_mode(inputs: AnswerInputs, *, mode: ReasonerMode | str = ReasonerMode.COMPILED,
                    time_limit: float = DEFAULT_TIME_LIMIT, explain: bool = False) -> tuple[Answer, ReasonerMode]:
    """Answer (and with ``explain`` explain) the question of ``inputs``.

    Returns:
        ``(answer, mode used)``: ``"direct"`` when ``mode="compiled"`` fell back to the direct encoding
        (a query outside the compiled fragment), else ``mode``.

    Raises:
        UnsafeProgramError: the query is outside the query language.
        FormatError: the scene does not fit the environment.
        SolverTimeoutError: a solver call took longer than ``time_limit`` seconds.
        ClevrPocError: explanations are not available, or clingo failed.
    """
    reasoner = Reasoner(mode=mode, time_limit=time_limit)

    def used() -> ReasonerMode:
        compiled = reasoner.mode is ReasonerMode.COMPILED and reasoner.counts.get(ReasonerMode.COMPILED, 0) > 0
        return ReasonerMode.COMPILED if compiled else ReasonerMode.DIRECT

    try:
        if not explain:
            answer = reasoner.answer(inputs.environment, inputs.scene, inputs.query)
            return answer, used()
        try:
            answer = reasoner.explain(inputs.environment, inputs.scene, inputs.query)
            return answer, used()
        except ModuleNotFoundError as exc:
            if exc.name != "clevr_poc.reasoning.explanations":
                raise
            raise ClevrPocError("--explain is not available: clevr_poc.reasoning.explanations is "
                                "missing from this installation") from None
    except RuntimeError as exc:  # clingo reports its own failures as RuntimeError
        detail = str(exc).strip().splitlines()
        raise ClevrPocError(f"clingo failed: {detail[0] if detail else exc.__class__.__name__}") from None


def _in_domain_order(values: frozenset[str], attribute: str | None) -> list[str]:
    order = domain.DOMAINS.get(attribute or "", ())
    return sorted(values, key=lambda v: (order.index(v) if v in order else len(order), v))


def _braces(values: frozenset[str], attribute: str | None) -> str:
    return "{" + ", ".join(_in_domain_order(values, attribute)) + "}"


def to_json(answer: Answer, inputs: AnswerInputs, mode: ReasonerMode | str) -> dict[str, Any]:
    """The ``--json`` document: :meth:`Answer.to_json` plus question, expected answer, the mode that
    answered (``mode``: give the mode used, :func:`solve_with_mode`), example."""
    data = answer.to_json()
    data["question"] = inputs.question.text if inputs.question is not None and not inputs.replaced else None
    data["replaced_question"] = inputs.question.text if inputs.question is not None and inputs.replaced else None
    data["expected"] = sorted(inputs.expected) if inputs.expected is not None else None
    data["matches_expected"] = None if inputs.expected is None else answer.values == inputs.expected
    data["mode"] = mode
    data["example"] = inputs.example
    return data


def to_text(answer: Answer, inputs: AnswerInputs) -> str:
    """Human-readable lines: question, query, answer (values in the attribute's domain order), expected
    answer, and the explanation when there is one."""
    lines = []
    if inputs.example is not None:
        lines.append(f"example:  {inputs.example}")
    if inputs.question is not None and inputs.replaced:
        lines.append(f"note:     --query replaced the {inputs.replaced} question ({inputs.question.text})")
    elif inputs.question is not None:
        lines.append(f"question: {inputs.question.text}")
    lines.append(f"query:    {answer.query}")
    answer_line = f"answer:   {_braces(answer.values, answer.attribute)}"
    if answer.attribute:
        answer_line += f"  ({answer.attribute} of the object the question asks about)"
    lines.append(answer_line)
    if not answer.satisfiable and answer.reason:
        lines.append(f"          {answer.reason}")
    if inputs.expected is not None:
        verdict = "matches" if answer.values == inputs.expected else "DIFFERS"
        lines.append(f"expected: {_braces(inputs.expected, answer.attribute)}  ({verdict})")
    if answer.explanation is not None:
        lines.append("explanation:")
        lines += ["  " + line for line in answer.explanation.describe().splitlines()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``python -m clevr_poc answer``; returns the exit status (0)."""
    try:
        mode = parse_mode(args.mode)
        time_limit = parse_time_limit(args.time_limit)
        inputs = load_inputs(args)
        answer, mode = solve_with_mode(inputs, mode=mode, time_limit=time_limit, explain=args.explain)
    except ClevrPocError as exc:
        # some messages quote clingo, whose messages can span lines; the CLI prints exactly one line
        message = str(exc)
        if "\n" in message:
            raise ClevrPocError(" ".join(message.split())) from None
        raise
    if args.json:
        print(json.dumps(to_json(answer, inputs, mode), ensure_ascii=False))
    else:
        print(to_text(answer, inputs))
    return 0


__all__ = ["AnswerInputs", "add_parser", "load_inputs", "parse_mode", "parse_time_limit", "run", "solve",
           "solve_with_mode", "to_json", "to_text"]
