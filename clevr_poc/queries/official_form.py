"""The official CLEVR-POC query form: :func:`to_official_form` rewrites a query the way the official
generator writes ``asp_query``.

The official generator (read from its ``generate_questions.py`` and its 28-example GPT-4 prompt;
described in the project's reference notes, not copied) names object variables by hop from the queried
object and writes **every pairwise inequality of object variables**, also those a relation implies:

============  ================  ================================================================
family        variables         relation and inequality literals
============  ================  ================================================================
zero_hop      X                 --
one_hop       X, Y              ``R(Y,X), X!=Y``
same_relate   X, Y              ``X!=Y, same_P(Y,X)``
two_hop       X, Y1, Y2         ``R(Y1,X), R2(Y2,Y1), X!=Y1, Y1!=Y2, X!=Y2``
single_and    X, Y1, Y2         ``R(Y1,X), R2(Y2,X), X!=Y1, Y1!=Y2, X!=Y2``
three_hop     X, Y1, Y2, Y3     ``R(Y1,X), R2(Y2,Y1), R3(Y3,Y2), X!=Y1, Y1!=Y2, Y2!=Y3, X!=Y2, X!=Y3, Y1!=Y3``
============  ================  ================================================================

The non-adjacent inequalities (``X!=Y2``, ...) are not implied by the relations: without them the
queried object may be the same object as a farther reference, which can change the answer set. So
:func:`to_official_form` changes the meaning of a query that lacks them (it *adds* them: the official
meaning); a query that has them keeps its meaning (renaming and reordering only).

**The form written here** (deterministic; the official examples vary the literal order, the paper's
program accuracy does not depend on it): ``missing(Q) :- hasProperty(X,<attr>,Q)``, then the
descriptions ``hasProperty(V,<attr>,<value>)`` of the farthest reference first and of X last (as the
official examples: ``hasProperty(Y2,..), hasProperty(Y1,..), hasProperty(X,..)``), each object's in
CLEVR order size, color, material, shape; then the links of Y1, Y2, ... to their parent as written
(``X!=Y`` just before a ``same_P`` link, as in the paper's Appendix A); then the remaining
inequalities: consecutive variables first (``X!=Y1, Y1!=Y2, Y2!=Y3``), then the other pairs in order
(``X!=Y2, X!=Y3, Y1!=Y3``). The text uses the sanitizer's canonical spacing.

**Naming.** The links (relations ``left/right/front/behind`` and ``same_<P>``, either argument order)
must form a tree over the object variables that contains X; variables are numbered breadth-first from
X, siblings in order of their first link in the input (so the generator's order and a parser's
decoding order decide which reference of a ``single_and`` question is Y1). One reference is ``Y``,
several are ``Y1, Y2, ...``. Literal directions are kept (``left(X,Y)`` is not turned into
``right(Y,X)``).
"""

from __future__ import annotations

from itertools import combinations

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.queries.query import Atom, Constant, Inequality, Literal, SanitizedQuery, Variable
from clevr_poc.queries.sanitizer import sanitize_query

__all__ = ["MAX_OFFICIAL_OBJECT_VARIABLES", "OFFICIAL_VARIABLES", "official_query", "official_query_of_parts",
           "official_variables", "to_official_form"]

#: Most object variables a CLEVR-POC question query has (three_hop: X and three references); the
#: sanitizer's own bound (:data:`~clevr_poc.queries.query.MAX_QUERY_OBJECT_VARIABLES`, 6) is wider.
MAX_OFFICIAL_OBJECT_VARIABLES = 4
#: Official variable names for 1..4 object variables (SEMANTICS: X; X,Y; X,Y1,Y2; X,Y1,Y2,Y3).
OFFICIAL_VARIABLES: dict[int, tuple[str, ...]] = {
    1: ("X",), 2: ("X", "Y"), 3: ("X", "Y1", "Y2"), 4: ("X", "Y1", "Y2", "Y3"),
}
_LINKS = frozenset((*domain.RELATIONS, *(f"same_{a}" for a in domain.ATTRIBUTES)))
_DESCRIPTION_ORDER = ("size", "color", "material", "shape")
_ANSWER = Variable("Q")


def official_variables(count: int) -> tuple[str, ...]:
    """The official names of ``count`` object variables (1 <= count <= 4), X first.

    Raises:
        FormatError: ``count`` outside 1..4.
    """
    if count not in OFFICIAL_VARIABLES:
        raise FormatError(f"CLEVR-POC queries have 1 to {MAX_OFFICIAL_OBJECT_VARIABLES} object variables",
                          field="object_variables", value=count)
    return OFFICIAL_VARIABLES[count]


def _fail(reason: str, query: str | SanitizedQuery) -> FormatError:
    text = query if isinstance(query, str) else query.text
    return FormatError(f"not a CLEVR-POC question query ({reason})", field="asp_query", value=text)


def to_official_form(query: str | SanitizedQuery) -> str:
    """The text of :func:`official_query`: e.g. ``missing(Q) :- hasProperty(X,color,Q),
    hasProperty(Y,shape,cube), left(Y,X), X!=Y.``; idempotent
    (``to_official_form(to_official_form(q)) == to_official_form(q)``).

    Raises:
        UnsafeProgramError, FormatError: as :func:`official_query`.
    """
    return official_query(query).text


def official_query(query: str | SanitizedQuery) -> SanitizedQuery:
    """The query in the official form (see the module docstring).

    Args:
        query: an ASP query text (untrusted: it goes through :func:`~clevr_poc.reasoning.sanitize_query`)
            or a sanitized query.

    Returns:
        The official-form :class:`~clevr_poc.queries.query.SanitizedQuery` (head ``Q``).

    Raises:
        UnsafeProgramError: the text is not a query the sanitizer accepts.
        FormatError: the query is outside the six CLEVR-POC question structures: no single answer literal
            ``hasProperty(V,<attribute>,Q)``, object ids or other constants as objects, predicates other
            than ``hasProperty``, the four relations, ``same_<P>`` and ``!=`` between object variables,
            links that do not form a tree through X, or more than 4 object variables.
    """
    checked = query if isinstance(query, SanitizedQuery) else sanitize_query(query)
    return _rewrite(checked.head, checked.body, checked.variables, checked)


def official_query_of_parts(head: Variable, body: tuple[Literal, ...]) -> SanitizedQuery:
    """:func:`official_query` of ``missing(head) :- body`` given as typed parts that the caller builds
    itself from the query language's own vocabulary (the question generator's literals), without first
    making them a :class:`~clevr_poc.queries.query.SanitizedQuery`: the parts are not checked as a query
    before the rewrite (issue 27: that check ran twice per generated question); the result is, as every
    :class:`~clevr_poc.queries.query.SanitizedQuery` made from parts, so nothing unchecked reaches the
    solver. It equals ``official_query(SanitizedQuery(head, body))``, errors included: when the rewrite
    fails, that is what runs (and raises).

    Raises:
        UnsafeProgramError, FormatError: as ``official_query(SanitizedQuery(head, body))``.
    """
    try:
        variables = frozenset(t for literal in body for t in literal.terms if type(t) is Variable)
        return _rewrite(head, body, variables, _Parts(head, body))
    except Exception:  # outside the query language or the six structures: the checked path says which
        return official_query(SanitizedQuery(head, body))


class _Parts:
    """The text of unchecked parts, printed only for an error message."""

    def __init__(self, head: Variable, body: tuple[Literal, ...]) -> None:
        self.head, self.body = head, body

    @property
    def text(self) -> str:
        return f"missing({self.head}) :- {', '.join(map(str, self.body))}."


def _rewrite(head: Variable, body: tuple[Literal, ...], variables: frozenset[Variable],
             text: SanitizedQuery | _Parts) -> SanitizedQuery:
    """The official form of ``missing(head) :- body`` (``variables``: every variable of the body;
    ``text``: what an error message prints, its ``.text`` read only then)."""
    answer_literals = [atom for atom in body if type(atom) is Atom and atom.predicate == "hasProperty"
                       and atom.terms[2] == head]
    if len(answer_literals) != 1 or not isinstance(answer_literals[0].terms[0], Variable) \
            or isinstance(answer_literals[0].terms[1], Variable):
        raise _fail("expected exactly one answer literal hasProperty(V,<attribute>,Q)", text)
    answer = answer_literals[0]
    x, attribute, _ = answer.terms
    descriptions: dict[Variable, dict[str, Constant]] = {}
    links: list[Atom] = []
    for literal in body:
        args = literal.terms
        if head in args:
            if literal != answer:
                raise _fail(f"the answer variable {head} occurs outside the answer literal", text)
            continue
        if isinstance(literal, Inequality):
            if not all(isinstance(a, Variable) for a in args) or args[0] == args[1]:
                raise _fail(f"unexpected comparison {literal}", text)
        elif literal.predicate == "hasProperty":
            obj, attr, value = args
            if not isinstance(obj, Variable) or attr not in domain.DOMAINS or value not in domain.DOMAINS[attr]:
                raise _fail(f"unexpected description {literal}", text)
            if descriptions.setdefault(obj, {}).setdefault(attr, value) != value:
                raise _fail(f"two values of {attr} for {obj}", text)
        elif literal.predicate in _LINKS and len(args) == 2 and all(isinstance(a, Variable) for a in args) \
                and args[0] != args[1]:
            if literal not in links:
                links.append(literal)
        else:
            raise _fail(f"unexpected literal {literal}", text)
    variables = variables - {head}
    if len(variables) > MAX_OFFICIAL_OBJECT_VARIABLES:
        raise _fail(f"{len(variables)} object variables (at most {MAX_OFFICIAL_OBJECT_VARIABLES})", text)

    # breadth-first numbering from X; siblings in order of their first link
    order = [x]
    parent: dict[Variable, tuple[Variable, list[Atom]]] = {}
    for v in order:  # grows while iterating
        for link in links:
            if v in link.terms:
                a, b = link.terms
                other = b if a == v else a
                if other not in parent and other != x:
                    parent[other] = (v, [])
                    order.append(other)
    for link in links:
        a, b = link.terms
        if b in parent and parent[b][0] == a:
            parent[b][1].append(link)
        elif a in parent and parent[a][0] == b:
            parent[a][1].append(link)
        else:  # a second path between two objects, or a link outside X's component
            raise _fail(f"the links must form a tree through {x}", text)
    if set(order) != variables:
        raise _fail(f"every object variable must be linked to {x}", text)
    names = {v: Variable(name) for v, name in zip(order, official_variables(len(order)))}

    def renamed(atom: Atom) -> Atom:
        return Atom(atom.predicate, tuple(names.get(t, t) for t in atom.terms))

    body: list[Atom | Inequality] = [Atom("hasProperty", (names[x], attribute, _ANSWER))]
    for v in reversed(order):
        for attr in _DESCRIPTION_ORDER:
            if attr in descriptions.get(v, {}):
                body.append(Atom("hasProperty", (names[v], Constant(attr), descriptions[v][attr])))
    official = [names[v] for v in order]
    written: set[frozenset[Variable]] = set()
    for v in order[1:]:
        up, own = parent[v]
        for link in own:
            pair = frozenset((names[up], names[v]))
            if link.predicate.startswith("same_") and pair not in written:
                first, second = sorted(pair, key=official.index)
                body.append(Inequality(first, second))
                written.add(pair)
            body.append(renamed(link))
    pairs = list(zip(official, official[1:]))
    pairs += [p for p in combinations(official, 2) if p not in pairs]
    body += [Inequality(a, b) for a, b in pairs if frozenset((a, b)) not in written]
    return SanitizedQuery(_ANSWER, tuple(body))
