"""The Reasoner: every answer consistent with an environment, a partial scene and a question.

Program solved (official semantics; ``docs/concepts.md``): background theory + ``object(0..N-1)`` + the
environment's constraints + the scene facts + the (sanitized) query + ``asp/answering.lp``. The answer is
the union of ``missing/1`` over all answer sets, computed as clingo's *brave consequences* (one solver
call, no enumeration of every model), in process.

Two modes give the same answers:

- ``"direct"``: the program above as text, grounded and solved per question (about 20 ms of CPU) in a
  worker process that is killed at the time limit (:mod:`clevr_poc.reasoning.isolated`: grounding cannot
  be interrupted in process);
- ``"compiled"`` (default): the environment is grounded once and each question is a set of
  assumptions (:mod:`clevr_poc.reasoning.compiled`, 0.7-1.2 ms of CPU for 5-9 objects, see
  ``docs/benchmarks.md``); queries outside the compiled
  fragment fall back to ``"direct"``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from dataclasses import dataclass
from enum import StrEnum
from typing import Iterable

from clevr_poc.answer import Answer, deferred_scene_facts
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError, SolverTimeoutError, UnsatisfiableError
from clevr_poc.question import Question
from clevr_poc.reasoning.compiled import MAX_SLOTS, CompiledQuery, EnvironmentSolver, compile_query
from clevr_poc.reasoning.isolated import solve_brave_isolated
from clevr_poc.queries.query import MAX_QUERY_OBJECT_VARIABLES, SanitizedQuery
from clevr_poc.queries.sanitizer import sanitize_query
from clevr_poc.scene import Scene
from clevr_poc.solver.control import make_control, missing_values
from clevr_poc.solver.programs import Program, environment_program, scene_symbols
from clevr_poc.solver.watchdog import solve_brave

QueryLike = str | Question | SanitizedQuery

#: Fewest query variables a compiled program is grounded for: a 1-slot program solves no faster than
#: a 2-slot one, so one- and two-variable questions share it.
MIN_SLOTS = 2
#: Query variables of an environment's first compiled program: CLEVR-POC's questions use 1-4 (three-hop
#: questions 4), so one grounding (about 17 ms) serves every question of an environment; a question with
#: fewer variables solves about 0.1 ms slower on it than on a program of its own size (issue 27).
FIRST_SLOTS = 4
#: Questions of one size an environment answers on a larger program before it grounds one of that size
#: (a Reasoner's default ``own_program_after``). A grounding costs about 18 ms of CPU (program and atom
#: tables 13 ms, the first solve's preparation 4.3 ms); a borrowed program about 0.07 ms more per question
#: and unused variable (0.10-0.15 ms for a 2-variable question on the 4-variable program). Evaluation sets
#: have about 8 questions per environment, so they stay on the first program; a long session (an
#: evaluation run answered again and again, a benchmark) gets exact-size programs soon: 128 instead of 16
#: left ``benchmarks/reasoner_ab.py``'s warm passes x0.84 median (issue 27, 5 Dec 2026).
OWN_PROGRAM_AFTER = 16
#: ``own_program_after`` of the question generator's Reasoner: a program of its own pays off after
#: 130-300 questions of one size, more than a generation worker asks per environment (about 100 on
#: ``benchmarks/generation.py``'s 2,000 questions with 2 workers). At 16 those workers grounded 3 programs
#: per environment, at 128 one: the recorded label calls of the 2,000 examples, replayed as the 2
#: workers get them, took x1.36-1.47 less CPU (60 -> 20 programs); the benchmark x1.10 per CPU second,
#: same files (issue 27).
GENERATOR_OWN_PROGRAM_AFTER = 128
#: Query texts whose checked value (and compiled form) a Reasoner keeps (LRU): a dataset's questions are
#: answered again and again (evaluation runs, benchmarks) and the same text always gives the same value.
QUERY_CACHE_SIZE = 4096


class ReasonerMode(StrEnum):
    """How the Reasoner solves (module doc); the values are those of ``answer --mode``."""

    COMPILED = "compiled"
    DIRECT = "direct"


@dataclass(frozen=True)
class SolveResult:
    satisfiable: bool
    values: frozenset[str]


class Reasoner:
    """Answer CLEVR-POC questions with clingo (official semantics, brave consequences).

    Args:
        time_limit: seconds allowed for one question (default 10.0): the solve call in compiled mode
            (the environment's grounding, bounded by its size, is not counted); grounding and solving
            in direct mode, whose worker process is killed when it has not answered within
            ``time_limit`` + :data:`~clevr_poc.reasoning.isolated.GRACE_SECONDS`. Exceeding it raises
            :class:`~clevr_poc.errors.SolverTimeoutError`.
        rename_head: accept ``query(Q)`` / ``unknown(Q)`` heads (see :func:`sanitize_query`).
        isolate: run direct mode in a worker process (default True); False grounds in process, where
            the time limit cannot stop grounding (only for trusted, small queries).
        max_object_variables: most distinct object variables a query may use (default
            :data:`~clevr_poc.queries.query.MAX_QUERY_OBJECT_VARIABLES` = 6).
        own_program_after: questions of one size an environment answers on a larger compiled program
            before one of that size is grounded (>= 0; default :data:`OWN_PROGRAM_AFTER` = 16; the question
            generator's Reasoner uses :data:`GENERATOR_OWN_PROGRAM_AFTER` = 128). Answers do not depend
            on it, only the number of groundings and the time per question (:meth:`covering_solver`).

    Every query text goes through :func:`~clevr_poc.queries.sanitizer.sanitize_query` (the values of
    the last :data:`QUERY_CACHE_SIZE` texts are kept); a :class:`SanitizedQuery` is used as it is (it
    was checked when it was made, from text or from typed parts), its object variables counted against
    ``max_object_variables``; environments come as :class:`~clevr_poc.environments.Environment` objects
    (files are checked when read).
    """

    MODES: tuple[str, ...] = tuple(mode.value for mode in ReasonerMode)

    def __init__(self, *, time_limit: float = 10.0, rename_head: bool = True,
                 mode: ReasonerMode | str = ReasonerMode.COMPILED,
                 cache_size: int = 64, isolate: bool = True,
                 max_object_variables: int = MAX_QUERY_OBJECT_VARIABLES,
                 own_program_after: int = OWN_PROGRAM_AFTER) -> None:
        if time_limit <= 0:
            raise ValueError(f"time_limit must be positive, got {time_limit}")
        if mode not in self.MODES:
            raise ValueError(f"mode must be one of {self.MODES}, got {mode!r}")
        mode = ReasonerMode(mode)
        self.time_limit = float(time_limit)
        self.rename_head = rename_head
        self.mode = mode
        self.isolate = isolate
        self.max_object_variables = max_object_variables
        self.cache_size = cache_size
        if isinstance(own_program_after, bool) or not isinstance(own_program_after, int) or own_program_after < 0:
            raise ValueError(f"own_program_after must be an integer >= 0, got {own_program_after!r}")
        self.own_program_after = own_program_after
        self._solvers: OrderedDict[tuple[int, str], dict[int, EnvironmentSolver]] = OrderedDict()
        self._solvers_lock = threading.Lock()
        #: (environment key, slots) -> questions of that size answered on a larger program
        self._borrowed: dict[tuple[tuple[int, str], int], int] = {}
        #: how many questions went through each mode (for benchmarks and diagnostics)
        self.counts = {"compiled": 0, "direct": 0}
        self._sanitize_text = lru_cache(maxsize=QUERY_CACHE_SIZE)(self._sanitize_uncached)
        self._compile = lru_cache(maxsize=QUERY_CACHE_SIZE)(compile_query)

    # ------------------------------------------------------------------ public API
    def sanitize(self, query: QueryLike) -> SanitizedQuery:
        """The checked form of ``query``: a string or a :class:`Question`'s ``asp_query`` through
        :func:`sanitize_query` (with this reasoner's ``rename_head`` and ``max_object_variables``); a
        :class:`SanitizedQuery` as it is, when it has at most ``max_object_variables`` object variables.

        Raises:
            UnsafeProgramError: the query is outside the query language or over the bound.
        """
        if isinstance(query, SanitizedQuery):
            return query.within(self.max_object_variables)
        if isinstance(query, Question):
            query = query.asp_query
        if not isinstance(query, str):
            return self._sanitize_uncached(query)  # raises: not a string
        return self._sanitize_text(query)

    def _sanitize_uncached(self, text: str) -> SanitizedQuery:
        return sanitize_query(text, rename_head=self.rename_head, max_object_variables=self.max_object_variables)

    def answer(self, environment: Environment, scene: Scene, query: QueryLike, *, strict: bool = False) -> Answer:
        """All values of the queried attribute consistent with environment + scene + query.

        Args:
            environment: constraints and N (objects, hidden one included).
            scene: the partial scene (at most N-1 visible objects; N objects is allowed and means
                nothing is hidden).
            query: ``missing(Q) :- ...`` (untrusted text is fine: it is sanitized).
            strict: raise :class:`UnsatisfiableError` instead of returning an empty answer when the
                program has no answer set.

        Returns:
            :class:`Answer` with ``values`` (frozenset of attribute values, possibly empty),
            ``satisfiable`` and ``reason``.

        Raises:
            UnsafeProgramError: the query is outside the query language.
            FormatError: the scene has more objects than the environment declares.
            SolverTimeoutError: solving took longer than ``time_limit``.
        """
        checked = self.sanitize(query)
        self._check_scene_size(environment, scene)
        facts = deferred_scene_facts(scene)  # Answer.scene_facts: printed when first read
        result = None
        if self.mode is ReasonerMode.COMPILED:
            result = self._solve_compiled(environment, scene, checked)
        if result is None:
            self.counts["direct"] += 1
            result = self._solve(self.program(environment, scene, checked))
        if not result.satisfiable:
            reason = ("no answer set: the scene, the question and the environment's constraints are "
                      "inconsistent (or nothing can match the question)")
            if strict:
                raise UnsatisfiableError(reason)
            return Answer(frozenset(), checked.attribute, False, reason, None, checked.text, facts)
        return Answer(result.values, checked.attribute, True, None, None, checked.text, facts)

    def answer_many(self, items: Iterable[tuple[Environment, Scene, QueryLike]]) -> list[Answer]:
        """:meth:`answer` over (environment, scene, query) triples, in order."""
        return [self.answer(env, scene, query) for env, scene, query in items]

    def explain(self, environment: Environment, scene: Scene, query: QueryLike):
        """The answer with an :class:`~clevr_poc.answer.Explanation` (see :mod:`.explanations`)."""
        from clevr_poc.reasoning.explanations import explain

        return explain(self, environment, scene, query)

    def answer_distribution(self, environment: Environment, distribution, query: QueryLike, rule="map", *,
                            presuppose_answer: bool = True):
        """The answer over a :class:`~clevr_poc.scene_distribution.SceneDistribution`: ``P(value in
        answer set)`` per value, the probability of each answer set and the set ``rule``
        (:class:`~clevr_poc.probabilistic_answer.AnswerRule` or its name) picks, given that the question
        has an answer unless ``presuppose_answer=False``
        (:func:`~clevr_poc.reasoning.answer_distribution.answer_distribution`)."""
        from clevr_poc.reasoning.answer_distribution import answer_distribution

        return answer_distribution(self, environment, distribution, query, rule, presuppose_answer=presuppose_answer)

    def explain_distribution(self, environment: Environment, distribution, query: QueryLike, rule="map"):
        """:meth:`answer_distribution` with the :class:`~clevr_poc.answer.Explanation` of the most probable
        scene that answers the question and the perceived facts the answer hangs on (``alternatives``,
        :func:`~clevr_poc.reasoning.answer_distribution.perceived_alternatives`)."""
        from dataclasses import replace

        from clevr_poc.reasoning.answer_distribution import answer_distribution, perceived_alternatives

        result = answer_distribution(self, environment, distribution, query, rule)
        first = next((i for i, w in enumerate(result.scene_probabilities) if w > 0), 0)   # MAP after conditioning
        explained = self.explain(environment, distribution.scenes[first], query)
        return replace(result, answer=replace(result.answer, explanation=explained.explanation),
                       alternatives=perceived_alternatives(distribution, result))

    # ------------------------------------------------------------------ building blocks
    @staticmethod
    def scene_facts(environment: Environment, scene: Scene) -> str:
        """ASP facts of ``scene`` after checking it fits the environment."""
        Reasoner._check_scene_size(environment, scene)
        return scene.to_asp_facts()

    @staticmethod
    def _check_scene_size(environment: Environment, scene: Scene) -> None:
        """Raises FormatError when ``scene`` has more objects than ``environment`` declares."""
        if len(scene) > environment.num_objects:
            raise FormatError(
                f"the scene has {len(scene)} objects but the environment declares only "
                f"{environment.num_objects} (object(0..{environment.num_objects - 1}))",
                field="objects", value=len(scene))

    @staticmethod
    def program(environment: Environment, scene: Scene, query: SanitizedQuery) -> Program:
        """The direct program (:mod:`clevr_poc.solver.programs`): background, answering rules,
        ``objects(N)``, constraints, the scene's facts as symbols, the query
        (``program.to_text()`` is the same program as one text, for plain ``clingo``)."""
        return (environment_program(environment.num_objects, environment.constraints_asp(), knowledge=("answering.lp",))
                .with_facts(scene_symbols(scene)).with_query(query.text))

    def solver_for(self, environment: Environment, slots: int = MAX_SLOTS) -> EnvironmentSolver:
        """The grounded :class:`EnvironmentSolver` of ``environment`` with room for ``slots`` query
        variables (1..:data:`~clevr_poc.reasoning.compiled.MAX_SLOTS`).

        Each environment keeps one program per slot count it was asked for (a question pays for the
        slots it uses: each unused one costs about 15% more solving time), at most 1-3 MiB each; the
        ``cache_size`` most recently used environments are kept (LRU).
        """
        key = (environment.num_objects, environment.constraints_asp())
        with self._solvers_lock:
            variants = self._solvers.get(key)
            if variants is not None:
                self._solvers.move_to_end(key)
                solver = variants.get(slots)
                if solver is not None:
                    return solver
        solver = EnvironmentSolver(environment.num_objects, key[1], slots=slots)
        with self._solvers_lock:
            variants = self._solvers.setdefault(key, {})
            solver = variants.setdefault(slots, solver)
            self._solvers.move_to_end(key)
            while len(self._solvers) > self.cache_size:
                evicted, _ = self._solvers.popitem(last=False)
                for size in range(MAX_SLOTS + 1):
                    self._borrowed.pop((evicted, size), None)
        return solver

    def covering_solver(self, environment: Environment, slots: int) -> EnvironmentSolver:
        """A grounded :class:`EnvironmentSolver` of ``environment`` with room for at least ``slots`` query
        variables (the same answers as one of exactly ``slots``: unused slots are externals assumed
        false): the program of that size if the environment has one; else the smallest larger one it
        has, until ``own_program_after`` (default :data:`OWN_PROGRAM_AFTER`) questions of that size have used it; else a new program, of
        ``max(slots, FIRST_SLOTS)`` variables when it is the environment's first. An environment's
        questions thus cost one grounding, not one per size, unless it answers many of one size."""
        key = (environment.num_objects, environment.constraints_asp())
        with self._solvers_lock:
            variants = self._solvers.get(key)
            if variants is not None:
                self._solvers.move_to_end(key)
                if slots in variants:
                    return variants[slots]
                larger = [size for size in variants if size > slots]
                borrowed = self._borrowed.get((key, slots), 0)
                if larger and borrowed < self.own_program_after:
                    self._borrowed[(key, slots)] = borrowed + 1
                    return variants[min(larger)]
        return self.solver_for(environment, slots if variants else max(slots, FIRST_SLOTS))

    def _solve_compiled(self, environment: Environment, scene: Scene, query: SanitizedQuery) -> SolveResult | None:
        compiled: CompiledQuery | None = self._compile(query)
        if compiled is None:
            return None
        solver = self.covering_solver(environment, max(MIN_SLOTS, compiled.slots))
        assumptions = solver.assumptions(scene, compiled)
        if assumptions is None:
            return None
        satisfiable, values, timed_out = solver.solve(assumptions, self.time_limit)
        if timed_out:
            raise SolverTimeoutError(f"clingo did not finish within {self.time_limit:g} s")
        self.counts["compiled"] += 1
        return SolveResult(satisfiable, values)

    def _solve(self, program: Program) -> SolveResult:
        if self.isolate:
            satisfiable, values, timed_out = solve_brave_isolated(program, self.time_limit)
            if timed_out:
                raise SolverTimeoutError(f"clingo did not finish within {self.time_limit:g} s")
            return SolveResult(satisfiable, values)
        control = program.load(make_control(["--models=0", "--enum-mode=brave"]))
        satisfiable, symbols, timed_out = solve_brave(control, (), self.time_limit)
        if timed_out:
            raise SolverTimeoutError(f"clingo did not finish within {self.time_limit:g} s")
        return SolveResult(satisfiable, missing_values(symbols))
