"""The one place that builds solver programs, with clingo's own means.

A :class:`Program` is a value: text parts (knowledge files from ``asp/``, an environment's checked
constraints, a sanitized query, rules made with :mod:`clingo.ast`), facts as ``clingo.Symbol`` (added
through the backend, never formatted as text), and the ``#program`` parts to ground with their
parameters (``asp/objects.lp``: ``objects(n)``, ``slots(s)``, ``hidden(h)``). Usage::

    program = (environment_program(environment.num_objects, environment.constraints_asp(),
                                   knowledge=("answering.lp",))
               .with_facts(scene_symbols(scene))
               .with_query(checked.text))
    control = make_control(["--models=0", "--enum-mode=brave"])
    program.load(control)          # add the parts, add the facts, ground base + objects(N)

Every text and fact batch handed to clingo through :meth:`Program.load` (and, by
:mod:`clevr_poc.reasoning.isolated`, to the direct-mode worker) is first passed to the observers of
:func:`observing` (``(source, text)``: ``"asp/<file>"``, ``"environment"``, ``"query"``, ``"rules"``,
``"facts"``), which :mod:`clevr_poc.reasoning.audit` uses to check what reaches clingo.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Sequence

import clingo
import clingo.ast as clingo_ast

from clevr_poc import domain
from clevr_poc.errors import UnsafeProgramError
from clevr_poc.knowledge import read_asp
from clevr_poc.solver.control import load_program
from clevr_poc.solver.rules import parse_statements

#: Sources of a part whose text is trusted as written: the knowledge files (``"asp/<name>"``).
KNOWLEDGE_PREFIX = "asp/"

_OBSERVERS: list[Callable[[str, str], None]] = []
_OBSERVERS_LOCK = threading.Lock()


@contextmanager
def observing(observer: Callable[[str, str], None]) -> Iterator[None]:
    """Call ``observer(source, text)`` for every part and fact batch handed to clingo while the block
    runs (every thread of this process)."""
    with _OBSERVERS_LOCK:
        _OBSERVERS.append(observer)
    try:
        yield
    finally:
        with _OBSERVERS_LOCK:
            _OBSERVERS.remove(observer)


def notify(source: str, text: str) -> None:
    """Tell the observers of :func:`observing` that ``text`` (from ``source``) goes to clingo."""
    for observer in list(_OBSERVERS):
        observer(source, text)


@dataclass(frozen=True)
class Part:
    """One text handed to ``Control.add``.

    Attributes:
        source: where the text comes from: ``"asp/<file>"`` (a knowledge file), ``"environment"``
            (constraints checked by :mod:`clevr_poc.environments.environment`), ``"query"`` (a sanitized
            query), ``"rules"`` (rules printed from :mod:`clingo.ast` trees).
        text: ASCII ASP text.
        name: the ``#program`` part it starts in (default ``"base"``).
    """

    source: str
    text: str
    name: str = "base"


def facts_text(symbols: Iterable[clingo.Symbol]) -> str:
    """``symbols`` as fact text, ``"p(1). q(a)."`` (for the audit and :meth:`Program.to_text`)."""
    return " ".join(f"{s}." for s in symbols)


@dataclass(frozen=True)
class Program:
    """A solver program: text parts, facts as symbols and the parts to ground (see module doc).

    Attributes:
        parts: the texts, in the order they are added.
        facts: facts added through ``Control.backend()`` before grounding.
        ground: ``(part name, integer arguments)`` grounded together, e.g. ``(("base", ()),
            ("objects", (7,)))``.
        ascii_facts: how many of the first ``facts`` are known to be ASCII (built from domain names and
            integers, :meth:`with_facts` ``ascii=True``): :meth:`check_ascii` skips them (issue 27: writing
            each symbol out costs about 5 microseconds, ~1 ms for one image's decoding facts).
    """

    parts: tuple[Part, ...] = ()
    facts: tuple[clingo.Symbol, ...] = ()
    ground: tuple[tuple[str, tuple[int, ...]], ...] = (("base", ()),)
    ascii_facts: int = 0

    # ------------------------------------------------------------------ building
    def with_knowledge(self, *names: str) -> "Program":
        """Add the files ``asp/<name>`` (their own ``#program`` directives apply)."""
        return replace(self, parts=self.parts + tuple(Part(KNOWLEDGE_PREFIX + n, read_asp(n)) for n in names))

    def with_text(self, source: str, text: str, *, part: str = "base") -> "Program":
        """Add ``text`` labelled ``source`` (``"environment"``, ``"query"``, ``"rules"``) to the
        ``#program`` part ``part``."""
        return replace(self, parts=self.parts + (Part(source, text, part),)) if text else self

    def with_constraints(self, constraints: str) -> "Program":
        """Add an environment's constraints (:meth:`Environment.constraints_asp`, checked text)."""
        return self.with_text("environment", constraints)

    def with_query(self, query: str) -> "Program":
        """Add a sanitized query's text (:attr:`SanitizedQuery.text`)."""
        return self.with_text("query", query)

    def with_rules(self, rules: Iterable[clingo_ast.AST], *, part: str = "base") -> "Program":
        """Add rules built with :mod:`clingo.ast` (printed in clingo's canonical form) to ``part``."""
        return self.with_text("rules", "\n".join(str(rule) for rule in rules), part=part)

    def with_facts(self, symbols: Iterable[clingo.Symbol], *, ascii: bool = False) -> "Program":
        """Add facts given as symbols (``clingo.Function``); ``ascii=True``: the caller built them from
        ASCII names and integers only, so :meth:`check_ascii` need not write them out (it still checks
        every fact added without it, and every fact after one)."""
        facts = self.facts + tuple(symbols)
        known = len(facts) if ascii and self.ascii_facts == len(self.facts) else self.ascii_facts
        return replace(self, facts=facts, ascii_facts=known)

    def grounding(self, name: str, *arguments: int) -> "Program":
        """Also ground part ``name`` with ``arguments`` (e.g. ``grounding("slots", 4)``)."""
        return replace(self, ground=self.ground + ((name, tuple(int(a) for a in arguments)),))

    # ------------------------------------------------------------------ using
    def check_ascii(self) -> None:
        """Raise :class:`~clevr_poc.errors.UnsafeProgramError` when a part (other than a shipped
        knowledge file, whose comments may hold non-ASCII text) or a fact is not ASCII (clingo's logger
        aborts the interpreter on non-ASCII messages)."""
        if not all(p.text.isascii() for p in self.parts if not p.source.startswith(KNOWLEDGE_PREFIX)) \
                or not all(str(s).isascii() for s in self.facts[self.ascii_facts:]):
            raise UnsafeProgramError("rejected ASP program: non-ASCII text")

    def announce(self) -> None:
        """Pass every part and the facts to the :func:`observing` observers."""
        if _OBSERVERS:
            for part in self.parts:
                notify(part.source, part.text)
            if self.facts:
                notify("facts", facts_text(self.facts))

    def load(self, control: clingo.Control) -> clingo.Control:
        """Add the parts and facts to ``control`` and ground; returns ``control``.

        Raises:
            UnsafeProgramError: non-ASCII text.
            RuntimeError: clingo rejects the program.
        """
        self.check_ascii()
        self.announce()
        load_program(control, ((p.name, (), p.text) for p in self.parts), self.facts, self.ground)
        return control

    def to_message(self) -> dict:
        """The program as JSON-ready data for the worker process (facts as their text)."""
        return {"parts": [[p.name, [], p.text] for p in self.parts], "facts": [str(s) for s in self.facts],
                "ground": [[name, list(args)] for name, args in self.ground]}

    def to_text(self) -> str:
        """One program text that plain ``clingo`` grounds to the same answer sets (its ``#program``
        parts with parameters instantiated with :mod:`clingo.ast`; for the official executor in
        ``benchmarks/reasoner.py`` and for reading)."""
        wanted = {name: args for name, args in self.ground}
        out: list[str] = []
        for part in self.parts:
            statements = parse_statements(part.text)
            current: tuple[str, dict[str, clingo.Symbol]] | None = (part.name, {})
            for statement in statements:
                if statement.ast_type == clingo_ast.ASTType.Program:
                    args = wanted.get(statement.name)
                    current = None if args is None else (statement.name, {
                        p.name: clingo.Number(a) for p, a in zip(statement.parameters, args)})
                    continue
                if current is not None and current[0] in wanted:
                    out.append(str(_Instantiate(current[1])(statement)) if current[1] else str(statement))
        out.append(facts_text(self.facts))
        return "\n".join(out) + "\n"


class _Instantiate(clingo_ast.Transformer):
    """Replace the constants named in ``values`` (a part's parameters) by their numbers."""

    def __init__(self, values: dict[str, clingo.Symbol]) -> None:
        self.values = values

    def visit_SymbolicTerm(self, node: clingo_ast.AST) -> clingo_ast.AST:
        symbol = node.symbol
        if symbol.type == clingo.SymbolType.Function and not symbol.arguments and symbol.name in self.values:
            return node.update(symbol=self.values[symbol.name])
        return node


def environment_program(num_objects: int, constraints: str = "", *, knowledge: Sequence[str] = ()) -> Program:
    """``background.lp`` + ``object(0..N-1)`` (part ``objects(N)`` of ``asp/objects.lp``) + the
    environment's ``constraints`` text + the files ``knowledge`` (e.g. ``("answering.lp",)``): the
    program of the complete scenes of an environment (paper §3.3) and the base of every solver program.

    Args:
        num_objects: N >= 1, objects of a complete scene (hidden one included).
        constraints: the environment's constraints (``Environment.constraints_asp()``), may be empty.
        knowledge: further ``asp/`` files, added after the background theory.
    """
    if num_objects < 1:
        raise ValueError(f"num_objects must be at least 1, got {num_objects}")
    return (Program().with_knowledge("background.lp", *knowledge, "objects.lp").with_constraints(constraints)
            .grounding("objects", num_objects))


_OBJECT_FACTS = " ".join([f"hasProperty({{0}},{attribute},{{{k + 1}}})." for k, attribute in enumerate(domain.ATTRIBUTES)]
                         + [f"at({{0}},{{{len(domain.ATTRIBUTES) + 1}}})."])
_CONSTANTS: dict[str, clingo.Symbol] = {}
_NUMBERS = [clingo.Number(i) for i in range(256)]


def _constant(name: str) -> clingo.Symbol:
    """``clingo.Function(name)``, made once per name (a clingo call costs more than the dict look-up)."""
    symbol = _CONSTANTS.get(name)
    if symbol is None:
        symbol = clingo.Function(name)
        if len(_CONSTANTS) < 1024:  # the domain's values; a stranger value is made each time
            _CONSTANTS[name] = symbol
    return symbol


def _number(i: int) -> clingo.Symbol:
    return _NUMBERS[i] if 0 <= i < len(_NUMBERS) else clingo.Number(i)


def scene_fact_groups(scene) -> list[tuple[clingo.Symbol, ...]]:
    """The facts of ``scene`` (a :class:`~clevr_poc.scene.Scene`) as symbols, in groups, one line each of
    :func:`scene_facts_text` (SEMANTICS: scene facts): for every object ``i`` its five facts
    ``hasProperty(i, attribute, value)`` for the four attributes (:data:`clevr_poc.domain.ATTRIBUTES`
    order) and ``at(i, region)``; then, for every relation and every ``i`` with a non-empty
    ``scene.relationships[rel][i]``, ``rel(i, j)`` for each j. ``object/1`` comes from the environment's
    ``objects(N)``."""
    function = clingo.Function
    attributes = [(attribute, _constant(attribute)) for attribute in domain.ATTRIBUTES]
    groups: list[tuple[clingo.Symbol, ...]] = []
    for i, obj in enumerate(scene.objects):
        o = _number(i)
        groups.append(tuple(function("hasProperty", [o, name, _constant(getattr(obj, attribute))])
                            for attribute, name in attributes) + (function("at", [o, _number(obj.region)]),))
    for rel in domain.RELATIONS:
        for i, row in enumerate(scene.relationships.get(rel, ())):
            if row:
                groups.append(tuple(function(rel, [_number(i), _number(j)]) for j in row))
    return groups


def scene_facts_text(scene) -> str:
    """The text of :func:`scene_fact_groups` (what ``facts_text`` prints of each group, one line each,
    every line ending in a newline; an empty scene: one newline), formatted from the scene's values
    directly: ``Scene.to_asp_facts()`` and :attr:`~clevr_poc.answer.Answer.scene_facts` need no symbols."""
    lines = [_OBJECT_FACTS.format(i, *(getattr(obj, a) for a in domain.ATTRIBUTES), obj.region)
             for i, obj in enumerate(scene.objects)]
    for rel in domain.RELATIONS:
        for i, row in enumerate(scene.relationships.get(rel, ())):
            if row:
                lines.append(" ".join([f"{rel}({i},{j})." for j in row]))
    return "\n".join(lines) + "\n"


def object_symbols(scene) -> list[clingo.Symbol]:
    """``hasProperty(i, attribute, value)`` for the four attributes and ``at(i, region)`` of every object
    ``i`` of ``scene`` (a :class:`~clevr_poc.scene.Scene`), as symbols (the first groups of
    :func:`scene_fact_groups`)."""
    return [symbol for group in scene_fact_groups(scene)[:len(scene.objects)] for symbol in group]


def scene_symbols(scene) -> list[clingo.Symbol]:
    """The facts of ``scene``: :func:`object_symbols` plus ``rel(i, j)`` for every j in
    ``scene.relationships[rel][i]`` (every group of :func:`scene_fact_groups`; ``Scene.to_asp_facts()``
    is their text)."""
    return [symbol for group in scene_fact_groups(scene) for symbol in group]
