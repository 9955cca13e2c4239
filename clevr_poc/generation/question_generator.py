"""Question generation: CLEVR-style templates instantiated on the complete scene, labelled by the Reasoner.

Paper §3.4-3.5 and Appendix A/B. One question per partial scene, always about the hidden object:

1. the *query attribute* is given by the caller or drawn with :data:`QUERY_ATTRIBUTE_SHARES`
   (paper Appendix B: 40 % color, 40 % shape, 10 % size, 10 % material);
2. a template querying that attribute is drawn: a family uniformly among the families that have one
   (kept for the first half of the tries, so that families that rarely give narrow answers are not
   crowded out; then drawn anew each try), then a template of that family uniformly;
3. the template is instantiated **on the complete scene**, CLEVR style, starting from the hidden object:
   each relation ``<R>`` is drawn at random among the relations for which some other object has the hidden
   (or current) object in ``relationships[R][ref]`` ("X is R of ref"), and the reference object is drawn
   among those objects (paper §3.5); ``same_<P>`` references are other objects with the same P value.
   All objects of one question are different objects, and every one except the hidden object is visible.
4. descriptions (``<Z> <C> <M> <S>`` slots) are random subsets of the allowed attributes (never a
   ``NULL``-constrained one), grown until every ``filter_unique`` of the program yields exactly its object
   **in the complete scene** (CLEVR's uniqueness rule); the hidden object's known attributes are thus
   "randomly selected" as in §3.5;
5. the question is labelled with :meth:`~clevr_poc.reasoning.Reasoner.answer` on the *partial* scene and
   kept only when ``1 <= |answer| < |domain|`` (§3.4); an optional :class:`AnswerBalancer` rejects
   over-represented answer sets (Appendix B, Fig. 7).

**Uniqueness under partial observability (our choice).** The official semantics binds
the query variables to *any* object (SEMANTICS.md): a visible object, or the hidden object standing in
for a reference, can add values the question does not mean. Complete-scene uniqueness (step 4) already
rules out a visible object in the query object's role with the true references. With
``require_unambiguous=True`` (default) we also compare the official answer with the *intended* answer
(the same question with every reference pinned to its object id, see :meth:`QuestionGenerator.intended_query`)
and keep the question only when they are equal, so the gold answer is exactly the set of values the
hidden object can take. Official queries still name references by attributes only.

**Query form.** ``asp_query`` is written in the official form (:mod:`clevr_poc.queries.official_form`):
variables X, then Y (one reference) or Y1, Y2, Y3 by hop from X, and every pairwise inequality of
object variables, also the non-adjacent ones (``X!=Y2``) that no relation implies; they can narrow the
answer (the queried object may otherwise be a farther reference), and the label is computed from this
very query.

**Cost.** The Reasoner call (milliseconds for 8-9 objects) dominates; most drawn instantiations of a
weakly constrained environment would be answered by the whole domain. :func:`hidden_candidates` (one
clingo call per partial scene) lists every (color, shape, size, material, region) the hidden object can
take; from it the *intended* answer of an instantiation is computed in Python
(:meth:`QuestionGenerator.possible_values`, equal to the Reasoner's answer of the pinned query, which the
tests check), and an instantiation whose intended answer is already the whole domain is dropped without
calling the Reasoner (the official answer contains the intended one). When even the candidates sharing
all of the hidden object's other attributes and its region fill the domain, no template can succeed and
``generate`` returns None at once. Gold answers always come from the Reasoner.

**The Python around the Reasoner (issue 27, question path).** ``prepare`` makes the partial scene only
for questions that are not hopeless and tests hopelessness by look-ups; the official query is filled
into a plan made once per (template, variables) (:func:`~clevr_poc.generation.question_instance.official_asp_query`);
the intended answer is a few integer ANDs over object-type bit sets; instantiation
(:mod:`clevr_poc.generation.instantiation`) runs a template's reference choices unrolled once per
template (:mod:`clevr_poc.generation.template_shape`) and grows descriptions on per-(object,
candidates) tables of the attribute masks that single an object out
(:meth:`SceneIndex.sufficient <clevr_poc.generation.scene_index.SceneIndex.sufficient>`). The same
draws, Questions and files; ``prepare`` + ``ask`` without clingo's solves take 0.77-0.82 of the
previous code's CPU time (issue 27's first pass), then ``ask`` without ``Control.solve`` 0.67
and ``prepare`` + ``ask`` 0.76 of that (third pass: whole benchmark examples, 8 alternated rounds of
600 in one process, per-round medians 0.65 and 0.74, load 0.1-1.1; docs/benchmarks.md).

**Two halves.** ``generate`` is :meth:`QuestionGenerator.prepare` (checks, candidates, the hopeless
test: no reasoner call) then :meth:`QuestionGenerator.ask` (the tries). The example generator checks a
layout's visibility between the two, and runs the tries of a rejected layout with Python verdicts
(:mod:`clevr_poc.reasoning.candidate_answers`, the same answers without clingo): it only needs the
random draws they make, since that question is thrown away (issue 27).

Templates: :mod:`clevr_poc.generation.template_files`; answer balancing:
:mod:`clevr_poc.generation.answer_balancer`; the hidden object's candidates:
:mod:`clevr_poc.generation.candidate_objects`.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from clevr_poc import domain
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.generation.answer_balancer import AnswerBalancer
from clevr_poc.generation.candidate_objects import (
    CANDIDATE_FIELD, Candidate, candidate_bits, candidates_of_visible, hidden_candidates,
)
from clevr_poc.generation.instantiation import (  # noqa: F401 (_matches, _other_matches, _describe_indexed: tests)
    TemplateNotApplicable, _describe_indexed, _matches, _other_matches, describe, instantiate,
)
from clevr_poc.generation.question_instance import (
    VARIABLES, Instance, asp_query, functional_program, intended_query, official_asp_query, possible_values,
    question_text,
)
from clevr_poc.generation.template_files import QuestionTemplate, TemplateNode, load_templates
from clevr_poc.generation.template_shape import TemplateShape as _TemplateShape, choose, node_distance
from clevr_poc.question import Question
from clevr_poc.scene import Scene

#: Default shares of query attributes (paper Appendix B: 40/40/10/10 for color/shape/size/material).
QUERY_ATTRIBUTE_SHARES: Mapping[str, float] = {"color": 0.4, "shape": 0.4, "size": 0.1, "material": 0.1}



@dataclass(frozen=True)
class PreparedQuestion:
    """What :meth:`QuestionGenerator.prepare` hands :meth:`QuestionGenerator.ask`: one (complete scene,
    hidden object, query attribute) with the templates to draw from and the hidden object's candidates.

    Attributes:
        environment: the scene's environment.
        scene: the complete scene (with relationships).
        hidden_index: the hidden object's index in ``scene`` (its id in ``partial`` is N-1).
        attribute: the query attribute.
        by_family: family -> its templates querying ``attribute`` (in template order).
        partial: ``scene`` without the hidden object.
        hidden_value: the hidden object's value of ``attribute``.
        candidates: :func:`hidden_candidates` of ``partial``.
    """

    environment: Environment
    scene: Scene
    hidden_index: int
    attribute: str
    by_family: Mapping[str, list[QuestionTemplate]]
    partial: Scene
    hidden_value: str
    candidates: frozenset[Candidate]


class InconsistentSceneError(ClevrPocError):
    """The complete scene is not a model of its environment: the hidden object's true value is not in
    the reasoner's answer (a bug in the scene, its relationships or the environment)."""


def _partial_world(partial: Scene, candidates: frozenset[Candidate]):
    """:func:`~clevr_poc.reasoning.candidate_answers.partial_world` (imported on first use, as the
    Reasoner is), given the candidates' :func:`candidate_bits` where they number the looks alike
    (issue 27: kept since :func:`candidates_of_visible` made them)."""
    global _LOOKS_ARE_TYPES
    from clevr_poc.reasoning.candidate_answers import LOOKS, partial_world

    bits = None
    if type(candidates) is frozenset:
        if _LOOKS_ARE_TYPES is None:
            from clevr_poc.generation.object_types import TYPE_TUPLES

            _LOOKS_ARE_TYPES = tuple(TYPE_TUPLES) == LOOKS
        if _LOOKS_ARE_TYPES:
            bits = candidate_bits(candidates)
    return partial_world(partial, candidates, look_bits=bits)


#: Whether candidate_answers' LOOKS are the object types in type-id order (None: not checked yet).
_LOOKS_ARE_TYPES: bool | None = None


def _python_verdict(world, query, hidden_value: str) -> frozenset[str] | None:
    """:func:`~clevr_poc.reasoning.candidate_answers.candidate_answer` of ``query`` (a sanitized query)
    on ``world``, or None when clingo must answer: outside that reading, or without the hidden object's
    value (clingo then confirms it, and :meth:`QuestionGenerator.ask` raises as it always did)."""
    from clevr_poc.reasoning.candidate_answers import candidate_answer
    from clevr_poc.reasoning.compiled import compile_query

    compiled = compile_query(query)
    answer = None if compiled is None else candidate_answer(world, compiled)
    return answer if answer is not None and hidden_value in answer else None


class QuestionGenerator:
    """Generate labelled CLEVR-POC questions about the hidden object of a partial scene.

    Args:
        reasoner: labels questions (default: a new compiled-mode :class:`~clevr_poc.reasoning.Reasoner`).
        templates: the templates (default: :func:`load_templates`).
        attribute_shares: query-attribute shares used when ``generate`` gets no ``query_attribute``
            (default :data:`QUERY_ATTRIBUTE_SHARES`, paper Appendix B).
        require_unambiguous: keep only questions whose official answer equals the intended answer
            (references pinned to their objects); see the module docstring.

    Attributes:
        rejections: Counter of why attempts were rejected (``"no_instance"``, ``"answer_size"``,
            ``"ambiguous"``, ``"balance"``) - for diagnostics and benchmarks.
    """

    def __init__(self, reasoner=None, templates: Sequence[QuestionTemplate] | None = None, *,
                 attribute_shares: Mapping[str, float] | None = None, require_unambiguous: bool = True) -> None:
        if reasoner is None:
            from clevr_poc.reasoning.reasoner import GENERATOR_OWN_PROGRAM_AFTER, Reasoner

            reasoner = Reasoner(own_program_after=GENERATOR_OWN_PROGRAM_AFTER)
        self.reasoner = reasoner
        self.templates = tuple(load_templates() if templates is None else templates)
        if not self.templates:
            raise ValueError("no question templates")
        shares = dict(QUERY_ATTRIBUTE_SHARES if attribute_shares is None else attribute_shares)
        for attribute, share in shares.items():
            if attribute not in domain.ATTRIBUTES or share < 0:
                raise ValueError(f"bad attribute share {attribute!r}: {share!r}")
        if sum(shares.values()) <= 0:
            raise ValueError("attribute shares must not all be zero")
        self.attribute_shares = shares
        self.require_unambiguous = require_unambiguous
        self.rejections: Counter[str] = Counter()
        self._shapes: dict[int, tuple[QuestionTemplate, _TemplateShape]] = {}
        self._templates_for: dict[tuple[str, str | None], tuple[tuple, tuple[QuestionTemplate, ...]]] = {}

    # ------------------------------------------------------------------ public API
    def templates_for(self, attribute: str, family: str | None = None) -> list[QuestionTemplate]:
        """Templates querying ``attribute`` (optionally of one family): a new list each call, made from
        one kept per (attribute, family) (issue 27: ``prepare`` asks on every call; ``templates`` is a
        tuple)."""
        try:
            found = self._templates_for.get((attribute, family))
        except TypeError:  # unhashable arguments: no look-up
            found = None
        if found is None or found[0] is not self.templates:
            found = (self.templates, tuple(t for t in self.templates if t.query_attribute == attribute
                                           and (family is None or t.family == family)))
            try:
                self._templates_for[(attribute, family)] = found
            except TypeError:
                pass
        return list(found[1])

    def choose_attribute(self, rng: random.Random, family: str | None = None) -> str:
        """Draw a query attribute with :attr:`attribute_shares`, among attributes some template (of
        ``family``, when given) asks about.

        Raises:
            ValueError: no template of ``family`` asks about an attribute with a positive share.
        """
        attributes = [a for a in domain.ATTRIBUTES
                      if self.attribute_shares.get(a, 0) > 0 and self.templates_for(a, family)]
        if not attributes:
            raise ValueError(f"no template{' of family ' + repr(family) if family else ''} asks about an "
                             f"attribute with a positive share {self.attribute_shares}")
        return rng.choices(attributes, weights=[self.attribute_shares[a] for a in attributes])[0]

    def generate(self, environment: Environment, complete_scene: Scene, hidden_index: int, rng: random.Random, *,
                 query_attribute: str | None = None, max_tries: int = 50, family: str | None = None,
                 balancer: AnswerBalancer | None = None) -> Question | None:
        """One labelled question about object ``hidden_index`` of ``complete_scene``, or None.

        Args:
            environment: the scene's environment (``num_objects`` must equal ``len(complete_scene)``).
            complete_scene: the complete scene with its ``relationships``.
            hidden_index: the object removed to make the partial scene (its id there is ``N-1``).
            rng: the only source of randomness (same rng state -> same question).
            query_attribute: the attribute to ask about; drawn with the shares when None.
            max_tries: instantiation attempts before giving up (returns None).
            family: restrict to one template family (e.g. ``"same_relate"``).
            balancer: when given, over-represented answer sets are rejected (and kept ones recorded).

        Returns:
            :class:`~clevr_poc.question.Question` with ``text``, ``asp_query``, ``answer``, ``program``,
            ``template_filename``, ``question_family_index`` (index within the file), ``object_interest``
            (hidden object's JSON), ``environment_id`` and the scene's split/image fields; or None.

        Raises:
            FormatError: scene/environment object counts differ, or the scene lacks relationships.
            IndexError: ``hidden_index`` out of range.
            ValueError: unknown attribute/family or no template for them.
            InconsistentSceneError: the hidden object's true value is not in the answer.
        """
        prepared = self.prepare(environment, complete_scene, hidden_index, rng, query_attribute=query_attribute,
                                family=family)
        if prepared is None:
            return None
        return self.ask(prepared, rng, max_tries=max_tries, balancer=balancer)

    def prepare(self, environment: Environment, complete_scene: Scene, hidden_index: int, rng: random.Random, *,
                query_attribute: str | None = None, family: str | None = None) -> PreparedQuestion | None:
        """The first half of :meth:`generate` (same arguments, same errors): checks, the query attribute
        (drawn with ``rng`` only when ``query_attribute`` is None), the eligible templates and the hidden
        object's candidates; None when no template can succeed (the hopeless test of the module
        docstring). Cheap (no reasoner call); :meth:`ask` then runs the tries."""
        if len(complete_scene) != environment.num_objects:
            raise FormatError(f"the complete scene has {len(complete_scene)} objects but the environment declares "
                              f"{environment.num_objects}", field="num_objects", value=len(complete_scene))
        count = len(complete_scene)
        missing = [r for r in domain.RELATIONS if len(complete_scene.relationships.get(r, ())) != count]
        if missing:
            raise FormatError("the complete scene needs relationships for every object", field="relationships",
                              value=missing)
        if not 0 <= hidden_index < len(complete_scene):
            raise IndexError(f"object {hidden_index} not in a scene of {len(complete_scene)} objects")
        attribute = query_attribute if query_attribute is not None else self.choose_attribute(rng, family)
        if attribute not in domain.ATTRIBUTES:
            raise ValueError(f"unknown query attribute {attribute!r}; expected one of {domain.ATTRIBUTES}")
        eligible = self.templates_for(attribute, family)
        if not eligible:
            raise ValueError(f"no template asks about {attribute!r}" + (f" in family {family!r}" if family else ""))
        by_family: dict[str, list[QuestionTemplate]] = {}
        for template in eligible:
            by_family.setdefault(template.family, []).append(template)
        hidden_object = complete_scene.objects[hidden_index]
        hidden_value = hidden_object.attribute(attribute)
        # the partial scene is made once the question is not hopeless (issue 27: 40% of the benchmark's
        # calls are); its objects are all the candidates need (the scene check always applies here)
        objects = complete_scene.objects
        candidates = candidates_of_visible(environment, objects[:hidden_index] + objects[hidden_index + 1:])
        partial = None
        if candidates is None:
            partial = complete_scene.without_object(hidden_index)
            candidates = hidden_candidates(environment, partial, reasoner=self.reasoner,
                                           time_limit=getattr(self.reasoner, "time_limit", 10.0))
        truth = (hidden_object.color, hidden_object.shape, hidden_object.size, hidden_object.material,
                 hidden_object.region)
        if truth not in candidates:
            raise InconsistentSceneError(
                f"object {hidden_index} ({hidden_object.describe()}) is not a possible hidden object of its own "
                f"partial scene: the complete scene does not satisfy environment {environment.id}")
        # every question's intended answer contains the values of the candidates that share the hidden
        # object's other three attributes and its region: if those already fill the domain, give up now
        # (issue 27: one look-up per value of the domain, not a pass over the candidates)
        position = CANDIDATE_FIELD[attribute]
        floor = [value for value in domain.DOMAINS[attribute]
                 if truth[:position] + (value,) + truth[position + 1:] in candidates]
        if len(floor) >= len(domain.DOMAINS[attribute]):
            self.rejections["hopeless"] += 1
            return None
        if partial is None:
            partial = complete_scene.without_object(hidden_index)
        return PreparedQuestion(environment, complete_scene, hidden_index, attribute, by_family, partial,
                                hidden_value, candidates)

    def ask(self, prepared: PreparedQuestion, rng: random.Random, *, max_tries: int = 50,
            balancer: AnswerBalancer | None = None, verdicts: str = "clingo") -> Question | None:
        """The second half of :meth:`generate`: draw and label instantiations of ``prepared`` (from
        :meth:`prepare`) until one is accepted (the Question) or ``max_tries`` are used (None).

        ``verdicts="python"`` answers each question with
        :func:`~clevr_poc.reasoning.candidate_answers.candidate_answer` (the official semantics read in
        Python from the candidates; clingo where that reading cannot decide, or where the Python answer
        lacks the hidden object's value, so that clingo raises exactly as it would): the same answers, hence the
        same accepted try, the same draws from ``rng`` and the same Question, without clingo. The
        example generator uses it for layouts the visibility check has rejected, whose question is
        thrown away; gold labels of kept questions always come from the Reasoner (``"clingo"``).
        """
        if verdicts not in ("clingo", "python"):
            raise ValueError(f"verdicts must be 'clingo' or 'python', got {verdicts!r}")
        environment, complete_scene, hidden_index = prepared.environment, prepared.scene, prepared.hidden_index
        attribute, by_family, partial = prepared.attribute, prepared.by_family, prepared.partial
        hidden_value, candidates = prepared.hidden_value, prepared.candidates
        families = list(by_family)
        answers: dict[str, frozenset[str]] = {}
        world = None  # the PartialWorld of the Python verdicts, built at the first one (False: outside it)
        # the first half of the tries stays with one family drawn uniformly, so that families whose
        # questions are rarely narrow enough (zero_hop) are not crowded out by the others; then any family
        first_family = choose(rng, families)
        for attempt in range(max_tries):
            family_now = first_family if attempt < max_tries // 2 else choose(rng, families)
            template = choose(rng, by_family[family_now])
            try:
                instance = self.instantiate(template, complete_scene, hidden_index, rng)
            except TemplateNotApplicable:
                self.rejections["no_instance"] += 1
                continue
            intended = self.possible_values(instance, candidates, complete_scene)
            if len(intended) >= len(domain.DOMAINS[attribute]):
                self.rejections["answer_size"] += 1  # the intended answer is already the whole domain
                continue
            checked = official_asp_query(instance)  # the typed query: the Reasoner need not parse its text
            asp_query = checked.text
            answer = answers.get(asp_query)
            if answer is None:  # the same instantiation often comes up again within one call
                if verdicts == "python":
                    if world is None:
                        world = _partial_world(partial, candidates) or False
                    answer = _python_verdict(world, checked, hidden_value) if world else None
                if answer is None:
                    answer = self.reasoner.answer(environment, partial, checked).values
                answers[asp_query] = answer
            if hidden_value not in answer:
                raise InconsistentSceneError(
                    f"the hidden object's {attribute} {hidden_value!r} is not in the answer {sorted(answer)} of "
                    f"{asp_query!r}: the complete scene does not satisfy environment {environment.id}")
            if not 1 <= len(answer) < len(domain.DOMAINS[attribute]):
                self.rejections["answer_size"] += 1
                continue
            if self.require_unambiguous:
                # the intended answer (references pinned to their objects) equals the reasoner's answer
                # of :meth:`intended_query`; computed from the candidates (tests compare the two)
                if intended != answer:
                    self.rejections["ambiguous"] += 1
                    continue
            if balancer is not None and not balancer.offer(attribute, answer, rng):
                self.rejections["balance"] += 1
                continue
            return Question(
                text=self.render_text(instance, rng), asp_query=asp_query, answer=frozenset(answer),
                program=tuple(self.program(instance)), image_filename=complete_scene.image_filename,
                image_index=complete_scene.image_index, split=complete_scene.split,
                object_interest=complete_scene.objects[hidden_index].to_json(),
                template_filename=template.filename, question_family_index=template.index,
                environment_id=environment.id,
            )
        return None

    # ------------------------------------------------------------------ instantiation on the complete scene
    def instantiate(self, template: QuestionTemplate, scene: Scene, hidden_index: int,
                    rng: random.Random) -> Instance:
        """Choose relations, reference objects and descriptions (steps 3-4 of the module docstring):
        :func:`~clevr_poc.generation.instantiation.instantiate` with the template's shape (computed once
        per template).

        Raises:
            TemplateNotApplicable: no reference object / no unique description / an ``OUT_NEQ`` constraint fails.
        """
        return instantiate(template, self._shape(template), scene, hidden_index, rng)

    def _shape(self, template: QuestionTemplate) -> "_TemplateShape":
        """The :class:`_TemplateShape` of ``template`` (made once per template object)."""
        entry = self._shapes.get(id(template))
        if entry is None or entry[0] is not template:
            if len(self._shapes) >= 4096:
                self._shapes.clear()
            entry = self._shapes[id(template)] = (template, _TemplateShape(template))
        return entry[1]

    @staticmethod
    def _distance(nodes: Sequence[TemplateNode], consumer: Mapping[int, int], node: int, target: int) -> int:
        """:func:`~clevr_poc.generation.template_shape.node_distance`."""
        return node_distance(nodes, consumer, node, target)

    @staticmethod
    def _describe(scene: Scene, obj: int, candidates: frozenset[int], allowed: list[str],
                  rng: random.Random) -> dict[str, str]:
        """:func:`clevr_poc.generation.instantiation.describe`."""
        return describe(scene, obj, candidates, allowed, rng)

    # ------------------------------------------------------------------ renderings (question_instance)
    def asp_query(self, instance: Instance) -> str:
        """:func:`clevr_poc.generation.question_instance.asp_query`."""
        return asp_query(instance)

    def intended_query(self, instance: Instance, hidden_index: int) -> str:
        """:func:`clevr_poc.generation.question_instance.intended_query`."""
        return intended_query(instance, hidden_index)

    def possible_values(self, instance: Instance, candidates: Iterable[Candidate], scene: Scene) -> frozenset[str]:
        """:func:`clevr_poc.generation.question_instance.possible_values`."""
        return possible_values(instance, candidates, scene)

    def program(self, instance: Instance) -> list[dict[str, Any]]:
        """:func:`clevr_poc.generation.question_instance.functional_program`."""
        return functional_program(instance)

    def render_text(self, instance: Instance, rng: random.Random) -> str:
        """:func:`clevr_poc.generation.question_instance.question_text`."""
        return question_text(instance, rng)
