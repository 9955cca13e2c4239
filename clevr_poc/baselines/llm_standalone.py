"""The stand-alone LLM baseline (paper §4.1.3 "Stand-alone LLM", prompt format of Appendix C.1).

The language model gets, as chat messages:

1. a *task description* (system message): answer questions about a hidden object from a scene graph and
   the scene's constraints; what the scene-graph JSON keys mean; the answer format;
2. two *worked examples* (user turn + assistant answer each), built here from small hand-made
   environments and scenes; their answers are computed by the :class:`~clevr_poc.reasoning.Reasoner`
   (never typed in by hand), see :func:`worked_examples`;
3. the question: the partial scene graph as JSON (objects with color, shape, size, material, region;
   relationships left/right/front/behind), the constraints in English (the background theory,
   :data:`~clevr_poc.environments.environment.BACKGROUND_DESCRIPTION`, then
   :meth:`Environment.describe`), and the question text.

As in the paper, the scene graph is the gold partial scene ("we assume as done in NS-VQA that the scene
graphs are accurate", §4.1.3). The answer format is ``###{value1, value2}###``.

Reply parsing (:func:`parse_reply`): the last ``###{...}###`` block of the reply is read (else the last
``###...###`` block, e.g. the ``###['gray']###`` of the official notebook); braces, brackets,
quotes and the words "or"/"and" are separators; values are matched case-insensitively, with the CLEVR
synonyms (``big`` -> large, ``ball`` -> sphere, ``shiny`` -> metal, ``matte`` -> rubber, ``grey`` ->
gray, ...), and must belong to the queried attribute's domain. Anything else — no block, an unknown
word, a value of another attribute — is a parse failure (prediction None, counted by the evaluator and
scored wrong by default). ``###{}###`` is a valid, empty prediction.

The chat backend is any object with ``complete(messages, *, max_tokens, temperature, stop, seed) -> str``
(:class:`clevr_poc.llm.base.ChatBackend`) or a spec string for ``clevr_poc.llm.make_backend``; a local GGUF
spec (``local``, ``smollm2``, ``gguf:PATH``) gets a context window of :data:`LOCAL_N_CTX` tokens, since the
prompt is longer than the backend's default 2,048. A prompt that still does not fit
(:class:`~clevr_poc.llm.base.PromptTooLongError`) is a parse failure of that question; every other backend
error stops the run.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

from clevr_poc import domain
from clevr_poc.environments import Constraint, Environment
from clevr_poc.environments.environment import BACKGROUND_DESCRIPTION
from clevr_poc.evaluation.model_protocol import ExampleModel
from clevr_poc.evaluation.report import Prediction
from clevr_poc.scene import Scene, SceneObject, compute_relationships

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example
    from clevr_poc.llm.base import ChatBackend

TASK_DESCRIPTION = (
    "You are a helpful assistant who answers questions about a hidden object based on a scene description "
    "and the constraints the scene satisfies.\n"
    "The scene graph is in JSON format with two keys. The key \"objects\" is the list of the visible objects "
    "of the scene; the index of an object in this list is its id. Every object has a color, a shape, a size, "
    "a material and a region (one of the regions 0, 1, 2, 3). The key \"relationships\" holds the spatial "
    "relationships between objects: it has the sub-fields \"left\", \"right\", \"front\" and \"behind\", each "
    "a list with one entry per object, and the entry of an object lists the ids of the objects that have that "
    "relationship with it. For example, relationships[\"front\"][0] lists the objects that are in front of "
    "object 0.\n"
    "The scene has one more object that is hidden: it is not in the scene graph. The question asks about an "
    "attribute of an object that may be the hidden one. Give every value of the asked attribute that is "
    "possible under the constraints, and only those.\n"
    "Answer with the values between ###{ and }###, separated by commas, for example ###{red, blue}### or "
    "###{cube}###."
)

#: Context window (tokens) of a local GGUF backend built from a spec string: the prompt (task, two worked
#: examples, scene graph, constraints) is 2,394-2,868 SmolLM2 tokens on the first 50 test questions of a
#: 30-environment dataset (measured), plus up to ``max_tokens`` (default 256) of reply.
LOCAL_N_CTX = 4096

QUESTION_PREFIX = ("Answer the following question about the hidden object. The solution should satisfy the "
                   "constraints.")

#: Words accepted for a value besides the value itself (CLEVR synonyms of :data:`clevr_poc.domain.SYNONYMS`
#: and British "grey").
VALUE_WORDS: dict[str, str] = {
    **{value: value for value in domain.ATTRIBUTE_OF_VALUE},
    **{word: value for value, words in domain.SYNONYMS.items() if value in domain.ATTRIBUTE_OF_VALUE
       for word in words},
    "grey": "gray",
}

_BRACED_BLOCK = re.compile(r"###\s*\{(.*?)\}\s*###", re.DOTALL)
_BLOCK = re.compile(r"###(.*?)###", re.DOTALL)
_SEPARATORS = re.compile(r"[,;/|&\n]|\s+(?:or|and)\s+", re.IGNORECASE)
_STRIP = " \t\r\n{}[]()'\"`.*:"


# ---------------------------------------------------------------------------- prompt pieces
def scene_graph_json(scene: Scene) -> str:
    """The partial scene as the prompt's JSON: ``{"objects": [...], "relationships": {...}}``.

    Objects keep only color, shape, size, material and region (as the string "0".."3", as in the
    official files); coordinates and rendering details are left out.
    """
    objects = [{"color": o.color, "shape": o.shape, "size": o.size, "material": o.material,
                "region": str(o.region)} for o in scene.objects]
    relationships = {rel: [list(row) for row in scene.relationships.get(rel, ())] for rel in domain.RELATIONS
                     if rel in scene.relationships}
    return json.dumps({"objects": objects, "relationships": relationships})


def constraints_text(environment: Environment) -> str:
    """The constraints in English: the background theory, then the environment's own constraints
    (:meth:`Environment.describe`, which starts with the number of objects), one sentence per line."""
    return "\n".join((*BACKGROUND_DESCRIPTION, environment.describe()))


def format_answer(values: Sequence[str] | frozenset[str]) -> str:
    """``###{v1, v2}###`` with the values in the attribute-domain order of :mod:`clevr_poc.domain`."""
    order = {v: i for attribute in domain.ATTRIBUTES for i, v in enumerate(domain.DOMAINS[attribute])}
    ordered = sorted(set(values), key=lambda v: (domain.ATTRIBUTE_OF_VALUE.get(v, ""), order.get(v, 99), v))
    return "###{" + ", ".join(ordered) + "}###"


def user_turn(environment: Environment, scene: Scene, question: str) -> str:
    """One user message: scene graph, constraints and question (Appendix C.1 layout)."""
    return (
        "Scene observed: the following is the scene graph:\n"
        f"{scene_graph_json(scene)}\n\n"
        "Constraints: the scene contains several visible objects and one additional object that is hidden. "
        "The scene must conform to the following constraints.\n"
        f"{constraints_text(environment)}\n\n"
        f"Question: {QUESTION_PREFIX} {question.strip()}\n"
        "Answer:"
    )


# ---------------------------------------------------------------------------- worked examples
@dataclass(frozen=True)
class WorkedExample:
    """A solved example shown to the model before the question.

    Attributes:
        environment: a small hand-made environment.
        scene: the partial scene (hand-made objects, relationships from their positions).
        question: question text.
        asp_query: the question in ASP (used only to compute ``answer``).
        answer: the answer set computed by the Reasoner.
    """

    environment: Environment
    scene: Scene
    question: str
    asp_query: str
    answer: frozenset[str]

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": user_turn(self.environment, self.scene, self.question)},
                {"role": "assistant", "content": format_answer(self.answer)}]


def _scene(objects: Sequence[SceneObject]) -> Scene:
    return Scene(tuple(objects), compute_relationships([o.coords_3d[:2] for o in objects]))


def _example_specs() -> list[tuple[Environment, Scene, str, str]]:
    """The two hand-made examples (environment, partial scene, question, ASP query)."""
    C, O = Constraint, SceneObject
    # 1. Only region 0 can hold a small metal object (region 1 has no small objects, region 3 only large
    #    ones, region 2 no metal ones) and region 0 holds only cubes: the answer is {cube}.
    env1 = Environment((
        C("value_restriction", {"r": 0, "p1": "shape", "v1": "cube"}),
        C("negation", {"r": 0, "p1": "color", "v1": "blue"}),
        C("negation", {"r": 1, "p1": "size", "v1": "small"}),
        C("or", {"r": 1, "p1": "material", "v1": "metal", "p2": "color", "v2": "red"}),
        C("negation_two", {"r": 2, "p1": "shape", "v1": "sphere", "p2": "material", "v2": "metal"}),
        C("negation", {"r": 2, "p1": "size", "v1": "large"}),
        C("negation_same_property", {"r": 3, "p1": "color", "v1": "yellow", "v2": "green"}),
        C("value_restriction", {"r": 3, "p1": "size", "v1": "large"}),
    ), 5)
    scene1 = _scene([
        O("red", "cylinder", "large", "metal", 1, (3.0, 2.5, 1.0)),
        O("green", "cube", "small", "rubber", 0, (-2.5, 1.5, 0.39)),
        O("yellow", "cylinder", "medium", "rubber", 2, (-3.0, -2.0, 0.58)),
        O("blue", "sphere", "large", "metal", 3, (2.5, -3.0, 1.0)),
    ])
    q1 = "What shape is the small metal thing?"
    a1 = "missing(Q) :- hasProperty(X,shape,Q), hasProperty(X,size,small), hasProperty(X,material,metal)."
    # 2. Cones can only be in region 1 (forbidden in 0, 2 and 3); region 1 forbids gray, and no object of
    #    region 1 may share its color with one of region 3 (gray, yellow): every color but gray and yellow.
    env2 = Environment((
        C("negation", {"r": 0, "p1": "shape", "v1": "cone"}),
        C("negation", {"r": 0, "p1": "material", "v1": "metal"}),
        C("negation", {"r": 1, "p1": "size", "v1": "large"}),
        C("negation", {"r": 1, "p1": "color", "v1": "gray"}),
        C("negation", {"r": 2, "p1": "shape", "v1": "cone"}),
        C("value_restriction", {"r": 2, "p1": "size", "v1": "large"}),
        C("negation", {"r": 3, "p1": "shape", "v1": "cone"}),
        C("negation", {"r": 3, "p1": "material", "v1": "rubber"}),
        C("at_most_pairs", {"r1": 1, "r2": 3, "p1": "color", "n": 1}),
    ), 6)
    scene2 = _scene([
        O("purple", "cube", "large", "rubber", 2, (-3.0, -2.5, 1.0)),
        O("cyan", "sphere", "small", "rubber", 0, (-2.0, 3.0, 0.39)),
        O("brown", "cone", "medium", "metal", 1, (2.0, 2.0, 0.58)),
        O("gray", "cylinder", "medium", "metal", 3, (3.5, -1.5, 0.58)),
        O("yellow", "sphere", "large", "metal", 3, (1.5, -3.5, 1.0)),
    ])
    q2 = "There is a small cone to the right of the cyan sphere; what color is it?"
    a2 = ("missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cone), hasProperty(X,size,small), "
          "hasProperty(Y,color,cyan), hasProperty(Y,shape,sphere), right(Y,X).")
    return [(env1, scene1, q1, a1), (env2, scene2, q2, a2)]


@lru_cache(maxsize=1)
def worked_examples() -> tuple[WorkedExample, ...]:
    """The two worked examples of the prompt, answers computed by the Reasoner (cached)."""
    from clevr_poc.reasoning import Reasoner

    reasoner = Reasoner()
    examples = []
    for environment, scene, question, query in _example_specs():
        answer = reasoner.answer(environment, scene, query, strict=True)
        examples.append(WorkedExample(environment, scene, question, query, answer.values))
    return tuple(examples)


def build_messages(environment: Environment, scene: Scene, question: str, *,
                   examples: Sequence[WorkedExample] | None = None) -> list[dict[str, str]]:
    """The chat messages for one question: task description (system), worked examples, the question.

    Args:
        environment: the example's environment (its constraints are described in English).
        scene: the partial scene shown to the model.
        question: the question text.
        examples: worked examples (default: :func:`worked_examples`, two of them; ``[]`` for zero-shot).

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", ...}, ..., {"role": "user", ...}]``.
    """
    shots = worked_examples() if examples is None else examples
    messages = [{"role": "system", "content": TASK_DESCRIPTION}]
    for shot in shots:
        messages += shot.messages()
    messages.append({"role": "user", "content": user_turn(environment, scene, question)})
    return messages


# ---------------------------------------------------------------------------- reply parsing
def parse_reply(reply: str | None, attribute: str | None) -> Prediction:
    """Read the answer set from a model reply (rules in the module docstring).

    Args:
        reply: the model's text.
        attribute: the queried attribute; values must be in its domain. None accepts any of the 17
            labels.

    Returns:
        :class:`Prediction` with ``values`` (a frozenset, possibly empty) or ``values=None`` and an
        ``error`` saying why the reply is unparseable; ``raw`` is the reply.
    """
    if reply is None:
        return Prediction(None, "empty reply", None)
    blocks = _BRACED_BLOCK.findall(reply) or _BLOCK.findall(reply)
    if not blocks:
        return Prediction(None, "no ###{...}### block in the reply", reply)
    body = blocks[-1].strip().strip(_STRIP)
    values: set[str] = set()
    allowed = domain.DOMAINS.get(attribute) if attribute else tuple(domain.ATTRIBUTE_OF_VALUE)
    if attribute is not None and allowed is None:
        raise ValueError(f"unknown attribute {attribute!r}; expected one of {domain.ATTRIBUTES}")
    for token in _SEPARATORS.split(body):
        word = token.strip(_STRIP).lower()
        if not word:
            continue
        value = VALUE_WORDS.get(word)
        if value is None:
            return Prediction(None, "unknown value in the answer", reply)
        if value not in allowed:
            return Prediction(None, f"value of another attribute than {attribute}", reply)
        values.add(value)
    return Prediction(frozenset(values), None, reply)


# ---------------------------------------------------------------------------- the model
class ChatAnsweringModel(ExampleModel):
    """What the chat baselines (:class:`LLMStandalone`, :class:`clevr_poc.baselines.vlm.VLMBaseline`) share:
    ask ``backend`` with the messages of :meth:`messages_for` and read the answer set from the reply with
    :func:`parse_reply`.

    A subclass sets ``backend`` (``complete(messages, max_tokens=, temperature=, stop=, seed=) -> str``),
    ``max_tokens``, ``temperature``, ``seed`` and ``workers`` (parallel requests, >= 1) and defines
    :meth:`messages_for`.
    """

    backend: ChatBackend
    max_tokens: int
    temperature: float
    seed: int | None
    workers: int

    def messages_for(self, example: Example) -> list[dict[str, Any]]:  # pragma: no cover - defined by subclasses
        raise NotImplementedError

    def predict_detailed(self, example: Example) -> Prediction:
        """Ask the backend and parse the reply (``raw`` = the reply); a prompt longer than the model's
        context is a parse failure (other backend errors propagate and stop the run)."""
        from clevr_poc.llm.base import PromptTooLongError

        try:
            reply = self.backend.complete(self.messages_for(example), max_tokens=self.max_tokens,
                                          temperature=self.temperature, stop=None, seed=self.seed)
        except PromptTooLongError as exc:
            return Prediction(None, f"prompt too long for the model: {str(exc)[:200]}")
        return parse_reply(reply, example.question.query_attribute)

    def predict_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        """:meth:`predict_detailed` over ``examples`` with ``workers`` parallel requests, in order."""
        if self.workers == 1 or len(examples) <= 1:
            return [self.predict_detailed(e) for e in examples]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(self.predict_detailed, examples))


class LLMStandalone(ChatAnsweringModel):
    """The stand-alone LLM baseline: prompt (App. C.1) -> chat backend -> parsed answer set.

    Args:
        backend: a chat backend (``complete(messages, *, max_tokens, temperature, stop, seed) -> str``)
            or a spec string for ``clevr_poc.llm.make_backend``.
        examples: worked examples (default: the two of :func:`worked_examples`; ``[]`` for zero-shot).
        max_tokens: reply length limit (tokens, >= 1).
        temperature: sampling temperature (0: greedy).
        seed: sampling seed passed to the backend.
        workers: parallel requests in :meth:`predict_batch` (threads; >= 1).
        name: model name in reports (default ``"LLM (<backend name>)"``).

    Backend errors (:class:`~clevr_poc.errors.ClevrPocError`, e.g. ``LLMBackendError``) are not
    swallowed: a broken connection stops the evaluation instead of silently scoring zeros.
    """

    def __init__(self, backend: ChatBackend | str, *, examples: Sequence[WorkedExample] | None = None, max_tokens: int = 256,
                 temperature: float = 0.0, seed: int | None = 0, workers: int = 1, name: str | None = None) -> None:
        if isinstance(backend, str):
            from clevr_poc.parsing.llm_parser import make_parser_backend  # local specs with a wider context

            backend = make_parser_backend(backend, n_ctx=LOCAL_N_CTX)
        if not callable(getattr(backend, "complete", None)):
            raise TypeError(f"backend must have a complete(messages, ...) method, got {type(backend).__name__}")
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.backend = backend
        self.examples = None if examples is None else tuple(examples)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.workers = workers
        self.name = name or f"LLM ({getattr(backend, 'name', type(backend).__name__)})"

    def __repr__(self) -> str:
        return f"LLMStandalone(name={self.name!r})"

    def messages_for(self, example: Example) -> list[dict[str, str]]:
        """The chat messages for ``example`` (gold partial scene, environment, question text)."""
        return build_messages(example.environment, example.partial_scene, example.question.text,
                              examples=self.examples)



__all__ = [
    "ChatAnsweringModel", "LLMStandalone", "LOCAL_N_CTX", "TASK_DESCRIPTION", "VALUE_WORDS", "WorkedExample", "build_messages", "constraints_text",
    "format_answer", "parse_reply", "scene_graph_json", "user_turn", "worked_examples",
]
