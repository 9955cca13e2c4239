"""Token vocabularies of the seq2seq question parser: English questions in, ASP query tokens out.

**Questions** (:func:`question_tokens`): lower-cased, split into words and the punctuation ``? ; , .``
(as separate tokens), and CLEVR's one-word synonyms mapped to the value they stand for
(:data:`clevr_poc.domain.SYNONYMS`: ``big`` -> ``large``, ``ball`` -> ``sphere``, ``shiny`` -> ``metal``,
``object`` -> ``thing``, ``medium-sized`` -> ``medium``, ...), so that a parser trained on a few hundred
questions also reads the synonyms it has not seen. :class:`QuestionVocabulary` is built from training
questions (NS-VQA style); unseen words become ``<unk>``.

**Queries** (:data:`QUERY_TOKENS`): the fixed token set of the query language the parser writes --
``missing``, the body predicates, ``(`` ``)`` ``,`` ``:-`` ``.`` ``!=``, the head variable ``Q``, the
object variables ``X Y Z W V U`` and every attribute and value constant. :func:`query_tokens` turns a
query (the generator's ``missing(Q) :- hasProperty(X,color,Q), ...``) into that token sequence, with
the object variables renamed in order of first occurrence (X, Y, Z, ...) and the head variable named
``Q``: the name of a variable carries no meaning (program accuracy is up to renaming), and a canonical
naming lets the decoder introduce variables in a fixed order (:mod:`clevr_poc.parsing.grammar`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from clevr_poc import domain
from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.queries.query import Term, Variable
from clevr_poc.queries.sanitizer import sanitize_query

__all__ = [
    "PAD", "UNK", "START", "QUERY_TOKENS", "QUERY_INDEX", "HEAD_VARIABLE", "OBJECT_VARIABLES", "RELATION_PREDICATES",
    "SAME_PREDICATES", "WORD_SYNONYMS", "QuestionVocabulary", "question_tokens", "query_tokens", "tokens_to_query",
]

PAD = "<pad>"
UNK = "<unk>"
START = "<start>"

#: The answer variable of every query the parser writes.
HEAD_VARIABLE = "Q"
#: Object variables, in the order the decoder introduces them (CLEVR-POC questions use at most 4).
OBJECT_VARIABLES: tuple[str, ...] = ("X", "Y", "Z", "W", "V", "U")
RELATION_PREDICATES: tuple[str, ...] = tuple(domain.RELATIONS)
SAME_PREDICATES: tuple[str, ...] = tuple(f"same_{a}" for a in domain.ATTRIBUTES)
_VALUES: tuple[str, ...] = tuple(v for a in domain.ATTRIBUTES for v in domain.DOMAINS[a])

#: Output tokens; index 0 is padding and 1 the decoder's start symbol (neither is ever produced).
QUERY_TOKENS: tuple[str, ...] = (
    PAD, START, "missing", "(", ")", ",", ":-", ".", "!=", "hasProperty", *RELATION_PREDICATES, *SAME_PREDICATES,
    HEAD_VARIABLE, *OBJECT_VARIABLES, *domain.ATTRIBUTES, *_VALUES,
)
QUERY_INDEX: Mapping[str, int] = {token: i for i, token in enumerate(QUERY_TOKENS)}

#: One-word CLEVR synonyms -> the word the parser reads instead (from :data:`clevr_poc.domain.SYNONYMS`).
WORD_SYNONYMS: Mapping[str, str] = {
    synonym: value
    for value, synonyms in domain.SYNONYMS.items()
    for synonym in synonyms
    if " " not in synonym and synonym != value
}

_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*|[?;,.]")


def question_tokens(text: str) -> list[str]:
    """Lower-cased words and punctuation of a question, one-word synonyms normalised.

    >>> question_tokens("There is another red rubber object; what size is it?")
    ['there', 'is', 'another', 'red', 'rubber', 'thing', ';', 'what', 'size', 'is', 'it', '?']

    Raises:
        FormatError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise FormatError("a question must be a string", field="question", value=type(text).__name__)
    words = _WORD.findall(text.lower())
    return [WORD_SYNONYMS.get(w, w) for w in words]


@dataclass(frozen=True)
class QuestionVocabulary:
    """Question words <-> indices. Index 0 is ``<pad>``, 1 is ``<unk>``.

    Attributes:
        words: every word, position = index.
    """

    words: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.words[:2] != (PAD, UNK):
            raise FormatError(f"a question vocabulary starts with {PAD!r}, {UNK!r}", field="words",
                              value=list(self.words[:2]))
        if len(set(self.words)) != len(self.words):
            raise FormatError("duplicate words in the question vocabulary", field="words")
        object.__setattr__(self, "_index", {w: i for i, w in enumerate(self.words)})

    @classmethod
    def build(cls, questions: Iterable[str], *, min_count: int = 1) -> "QuestionVocabulary":
        """The words of ``questions`` (after :func:`question_tokens`) seen at least ``min_count`` times,
        most frequent first (ties alphabetical)."""
        counts = Counter(w for q in questions for w in question_tokens(q))
        words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        return cls((PAD, UNK, *words))

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, question: str) -> list[int]:
        """Word indices of a question (``<unk>`` = 1 for unseen words)."""
        index = self._index  # type: ignore[attr-defined]
        return [index.get(w, 1) for w in question_tokens(question)]

    def unknown_words(self, question: str) -> list[str]:
        """The words of ``question`` outside the vocabulary."""
        index = self._index  # type: ignore[attr-defined]
        return [w for w in question_tokens(question) if w not in index]

    def to_json(self) -> dict:
        return {"words": list(self.words)}

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "QuestionVocabulary":
        if not isinstance(data, dict) or not isinstance(data.get("words"), list) \
                or not all(isinstance(w, str) for w in data["words"]) or len(data["words"]) < 2:
            raise FormatError("expected {\"words\": [\"<pad>\", \"<unk>\", ...]}", source=source, field="words")
        return cls(tuple(data["words"]))


def query_tokens(query: str) -> list[str]:
    """The decoder's token sequence for a query, variables renamed canonically.

    The query is sanitized first; its literals are put in :func:`walk_order` (the answer literal
    ``hasProperty(_, A, Q)`` first, then object by object as the question mentions them), the head
    variable becomes ``Q`` and object variables become X, Y, Z, ... in order of first occurrence.

    >>> query_tokens("missing(Q) :- hasProperty(X,size,Q), X!=Y, same_shape(Y,X).")[:9]
    ['missing', '(', 'Q', ')', ':-', 'hasProperty', '(', 'X', ',']

    Raises:
        UnsafeProgramError: the query is not a valid query.
        FormatError: the query uses something the parser's token set has no token for (object ids,
            ``at/2``, ``sameProperty/3``, ``object/1``, a variable in an attribute position, more than
            :data:`OBJECT_VARIABLES` object variables, a head variable used other than once as the answer).
    """
    checked = sanitize_query(query)
    head = checked.head_variable
    names: dict[str, str] = {head: HEAD_VARIABLE}

    def term(arg: Term) -> str:
        if isinstance(arg, Variable):
            if arg not in names:
                if len(names) > len(OBJECT_VARIABLES):
                    raise FormatError(f"more than {len(OBJECT_VARIABLES)} object variables", field="query", value=query)
                names[arg] = OBJECT_VARIABLES[len(names) - 1]
            return names[arg]
        if str(arg) not in QUERY_INDEX:
            raise FormatError("constant outside the parser's token set", field="query", value=str(arg))
        return str(arg)

    atoms = [(literal.predicate, literal.terms) for literal in checked.body]
    answers = [k for k, (name, args) in enumerate(atoms)
               if name == "hasProperty" and args[2] == head and not isinstance(args[1], Variable)]
    uses = sum(arg == head for _, args in atoms for arg in args)
    if len(answers) != 1 or uses != 1:
        raise FormatError("the head variable must occur exactly once, as hasProperty(_, <attribute>, Q)",
                          field="query", value=query)
    atoms = walk_order(atoms, answers[0])
    tokens = ["missing", "(", HEAD_VARIABLE, ")", ":-"]
    for k, (name, args) in enumerate(atoms):
        if k:
            tokens.append(",")
        if name == "!=":
            tokens += [term(args[0]), "!=", term(args[1])]
            continue
        if name not in QUERY_INDEX:
            raise FormatError(f"predicate {name} is outside the parser's token set", field="query", value=query)
        if name == "hasProperty" and (isinstance(args[1], Variable) or args[0] == head):
            raise FormatError("a variable attribute (or the head variable as object) is outside the parser's "
                              "token set", field="query", value=query)
        tokens += [name, "("]
        for i, arg in enumerate(args):
            if i:
                tokens.append(",")
            tokens.append(term(arg))
        tokens.append(")")
    tokens.append(".")
    return tokens


def walk_order(atoms: Sequence[tuple[str, tuple[Term, ...]]], answer: int) -> list[tuple[str, tuple[Term, ...]]]:
    """The body literals in *walk order*: the answer literal ``atoms[answer]``, then object by object
    from its object, each object's descriptions (``hasProperty`` with a constant value) followed by,
    for each neighbour not yet visited (in order of first mention), the literals linking the two
    (relations, ``same_*``, ``!=``) and then that neighbour's own walk; literals not reached (other
    components) follow in their given order. Within each group the given order is kept.

    This follows the question text ("the <X> left of the <Y> behind the <Z>"), so a decoder reading the
    question left to right also writes the query left to right and meets the objects in text order.
    """
    variables = lambda args: [a for a in args if isinstance(a, Variable)]  # noqa: E731
    first = atoms[answer]
    rest = [a for k, a in enumerate(atoms) if k != answer]
    descriptions: dict[str, list[int]] = {}
    links: list[int] = []
    for k, (name, args) in enumerate(rest):
        if name == "hasProperty" and len(variables(args)) == 1 and isinstance(args[0], Variable):
            descriptions.setdefault(args[0], []).append(k)
        else:
            links.append(k)
    out: list[int] = []
    visited: set[str] = set()

    def visit(v: str) -> None:
        visited.add(v)
        out.extend(descriptions.pop(v, []))
        while True:
            neighbour = next((w for k in links if k not in out and v in variables(rest[k][1])
                              for w in variables(rest[k][1]) if w not in visited), None)
            if neighbour is None:
                break
            out.extend(k for k in links if k not in out and set(variables(rest[k][1])) <= {v, neighbour}
                       and neighbour in variables(rest[k][1]))
            visit(neighbour)
        # links to objects visited already (a cycle) follow the object's own walk
        out.extend(k for k in links if k not in out and v in variables(rest[k][1])
                   and set(variables(rest[k][1])) <= visited)

    visit(first[1][0])
    for k, (name, args) in enumerate(rest):
        for v in variables(args):
            if v not in visited and v != first[1][2]:
                visit(v)
        if k not in out:
            out.append(k)
    return [first] + [rest[k] for k in out]


def tokens_to_query(tokens: Sequence[str]) -> str:
    """Query text of a token sequence, e.g. ``missing(Q) :- hasProperty(X,color,Q),X!=Y.`` (padding dropped).

    The text is not checked here; :func:`~clevr_poc.reasoning.sanitize_query` checks it and re-prints it
    canonically (``, `` between literals).
    """
    return "".join(" :- " if t == ":-" else t for t in tokens if t not in (PAD, START))


def check_round_trip(query: str) -> str:
    """The canonical text of ``query`` after :func:`query_tokens` / :func:`tokens_to_query` (used in tests).

    Raises:
        UnsafeProgramError: the round trip does not give a valid query (a bug).
    """
    text = tokens_to_query(query_tokens(query))
    try:
        return sanitize_query(text).text
    except UnsafeProgramError as exc:  # pragma: no cover - would be a bug in query_tokens
        raise UnsafeProgramError(f"round trip of {query!r} failed: {exc}") from None
