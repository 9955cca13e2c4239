"""The 11 CLEVR-POC constraint templates as first-class objects (paper §3.1, Table 1).

Each template has named parameters, an ASP rendering (read from ``asp/templates/NN_<name>.lp``; Python
only fills in parameters) and a natural-language rendering that says exactly what the ASP says.

Parameters: ``r`` / ``r1`` / ``r2`` region ids 0..3; ``p1`` / ``p2`` attribute names; ``v1`` / ``v2``
values of those attributes; ``n`` a non-negative integer.

Pair counting. ``#count{X1,X2: sameProperty(X1,X2,P), at(X1,R1), at(X2,R2), ...}`` counts *ordered*
pairs of different objects with X1 in R1 and X2 in R2. With R1 != R2 that is the number of unordered
pairs with one object in each region; with R1 == R2 every unordered pair is counted twice. The English
renderings below say so (the official release's renderings do not).
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.knowledge import read_asp, strip_comments
from clevr_poc.solver.rules import ASTType, parse_statements

_PLACEHOLDER = re.compile(r"\{(r|r1|r2|p1|v1|p2|v2|n)\}")


def _fill(text: str, params: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda m: str(params[m.group(1)]), text)


def _noun(attribute: str, value: str) -> str:
    return f"{attribute} {value}"


def _pairs_text(p: Mapping[str, Any], at_least: bool) -> str:
    n = p["n"] if at_least else p["n"] - 1
    qualifier = f" with {p['p2']} {p['v2']}" if "p2" in p else ""
    objects = f"objects{qualifier}"
    if p["r1"] == p["r2"]:
        unit = "ordered pair" if n == 1 else "ordered pairs"
        body = (f"of two different {objects} in region {p['r1']} that have the same {p['p1']} "
                f"(each unordered pair counts twice)")
    else:
        unit = "pair" if n == 1 else "pairs"
        body = (f"of {objects}, one in region {p['r1']} and the other in region {p['r2']}, "
                f"that have the same {p['p1']}")
    verb = "is" if n == 1 else "are"
    if at_least:
        return f"There {verb} at least {n} {unit} {body}."
    if n < 0:
        return "This constraint can never be satisfied (at most -1 pairs)."
    if n == 0:
        if p["r1"] == p["r2"]:
            return f"No two different {objects} in region {p['r1']} have the same {p['p1']}."
        return (f"No object{qualifier} in region {p['r1']} has the same {p['p1']} as an object{qualifier} "
                f"in region {p['r2']}.")
    return f"There {verb} at most {n} {unit} {body}."


@dataclass(frozen=True)
class ConstraintTemplate:
    """One of the 11 templates.

    Attributes:
        index: 1..11, the official template order (``constraint_templates.txt``).
        name: snake_case name, also the ``asp/templates`` file stem.
        params: parameter names in order.
        kind: ``"region"`` (one region ``r``), ``"across"`` (two regions ``r1``, ``r2``) or ``"global"``.
        describe: params -> English sentence.
        optional: parameters that may be omitted (the one-value form of value restriction).
    """

    index: int
    name: str
    params: tuple[str, ...]
    kind: str
    describe: Callable[[Mapping[str, Any]], str]
    optional: tuple[str, ...] = ()

    @property
    def rules(self) -> tuple[str, ...]:
        """The template's ASP rules with ``{param}`` placeholders, one per rule."""
        return _template_rules(self.index, self.name)


@lru_cache(maxsize=None)
def _template_rules(index: int, name: str) -> tuple[str, ...]:
    body = strip_comments(read_asp(f"templates/{index:02d}_{name}.lp"))
    return tuple(line.strip() for line in body.splitlines() if line.strip())


def _value_restriction(p: Mapping[str, Any]) -> str:
    if "p2" in p:
        return f"All objects in region {p['r']} have {p['p1']} {p['v1']} and {p['p2']} {p['v2']}."
    return f"All objects in region {p['r']} have {p['p1']} {p['v1']}."


TEMPLATES: tuple[ConstraintTemplate, ...] = (
    ConstraintTemplate(1, "value_restriction", ("r", "p1", "v1", "p2", "v2"), "region", _value_restriction,
                       optional=("p2", "v2")),
    ConstraintTemplate(2, "negation_two", ("r", "p1", "v1", "p2", "v2"), "region",
                       lambda p: f"No object in region {p['r']} has {p['p1']} {p['v1']}, and no object in region "
                                 f"{p['r']} has {p['p2']} {p['v2']}."),
    ConstraintTemplate(3, "negation_same_property", ("r", "p1", "v1", "v2"), "region",
                       lambda p: f"No object in region {p['r']} has {p['p1']} {p['v1']} or {p['p1']} {p['v2']}."),
    ConstraintTemplate(4, "or", ("r", "p1", "v1", "p2", "v2"), "region",
                       lambda p: f"Every object in region {p['r']} has {p['p1']} {p['v1']} or {p['p2']} {p['v2']} "
                                 f"(or both)."),
    ConstraintTemplate(5, "negation", ("r", "p1", "v1"), "region",
                       lambda p: f"No object in region {p['r']} has {p['p1']} {p['v1']}."),
    ConstraintTemplate(6, "exactly_n", ("r", "p1", "v1", "n"), "region",
                       lambda p: f"Exactly {p['n']} object{'s' if p['n'] != 1 else ''} in region {p['r']} "
                                 f"{'have' if p['n'] != 1 else 'has'} {p['p1']} {p['v1']}."),
    ConstraintTemplate(7, "at_least_pairs", ("r1", "r2", "p1", "n"), "across", lambda p: _pairs_text(p, True)),
    ConstraintTemplate(8, "at_least_pairs_with_value", ("r1", "r2", "p1", "p2", "v2", "n"), "across",
                       lambda p: _pairs_text(p, True)),
    ConstraintTemplate(9, "at_most_pairs", ("r1", "r2", "p1", "n"), "across", lambda p: _pairs_text(p, False)),
    ConstraintTemplate(10, "at_most_pairs_with_value", ("r1", "r2", "p1", "p2", "v2", "n"), "across",
                       lambda p: _pairs_text(p, False)),
    ConstraintTemplate(11, "generic", ("p1", "v1"), "global",
                       lambda p: f"No object anywhere in the scene has {p['p1']} {p['v1']}."),
)

TEMPLATES_BY_NAME: Mapping[str, ConstraintTemplate] = {t.name: t for t in TEMPLATES}


@dataclass(frozen=True)
class Constraint:
    """An instantiated template.

    Attributes:
        template: the template's name (a key of :data:`TEMPLATES_BY_NAME`).
        params: parameter values (region ids and ``n`` as int, attributes/values as str).

    Raises:
        FormatError: unknown template, missing/extra parameters or out-of-domain values.
    """

    template: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        spec = TEMPLATES_BY_NAME.get(self.template)
        if spec is None:
            raise FormatError(f"unknown constraint template; expected one of {sorted(TEMPLATES_BY_NAME)}",
                              field="template", value=self.template)
        params = dict(self.params)
        required = [k for k in spec.params if k not in spec.optional]
        missing = [k for k in required if k not in params]
        extra = [k for k in params if k not in spec.params]
        if missing or extra:
            raise FormatError(f"template {self.template} takes parameters {list(spec.params)}",
                              field="params", value=sorted(params))
        if any(k in params for k in spec.optional) and not all(k in params for k in spec.optional):
            raise FormatError(f"give all or none of {list(spec.optional)}", field="params", value=sorted(params))
        if self.template == "negation_two" and params["p1"] == params["p2"]:
            # its rules would be read back as negation_same_property (the same ASP)
            raise FormatError("negation_two takes two different attributes; use negation_same_property",
                              field="p2", value=params["p2"])
        for key in ("r", "r1", "r2"):
            if key in params and params[key] not in domain.REGIONS:
                raise FormatError("region must be 0..3", field=key, value=params[key])
        for pk, vk in (("p1", "v1"), ("p2", "v2")):
            if pk in params and params[pk] not in domain.ATTRIBUTES:
                raise FormatError(f"not an attribute; expected one of {list(domain.ATTRIBUTES)}",
                                  field=pk, value=params[pk])
        # value keys: v1 belongs to p1; v2 to p2, or to p1 for negation_same_property
        if "v1" in params and params["v1"] not in domain.DOMAINS[params["p1"]]:
            raise FormatError(f"not a {params['p1']}", field="v1", value=params["v1"])
        if "v2" in params:
            owner = params.get("p2", params.get("p1"))
            if params["v2"] not in domain.DOMAINS[owner]:
                raise FormatError(f"not a {owner}", field="v2", value=params["v2"])
        if "n" in params and (not isinstance(params["n"], int) or isinstance(params["n"], bool)
                              or not 0 <= params["n"] <= 100):
            raise FormatError("n must be an integer in 0..100", field="n", value=params["n"])
        object.__setattr__(self, "params", params)

    @property
    def spec(self) -> ConstraintTemplate:
        return TEMPLATES_BY_NAME[self.template]

    @property
    def regions(self) -> tuple[int, ...]:
        """Regions the constraint is about (empty for the generic template)."""
        return tuple(sorted({self.params[k] for k in ("r", "r1", "r2") if k in self.params}))

    def asp_rules(self) -> tuple[str, ...]:
        """The ASP rules (one or two), parameters filled in."""
        cached = self.__dict__.get("_asp_rules")
        if cached is not None:
            return cached
        rules = self.spec.rules
        if self.template == "value_restriction" and "p2" not in self.params:
            rules = rules[:1]
        result = tuple(_fill(rule, self.params) for rule in rules)
        self.__dict__["_asp_rules"] = result
        return result

    def to_asp(self) -> str:
        """The rules on one line (the official environment-file layout puts a template's rules together)."""
        return " ".join(self.asp_rules())

    def describe(self) -> str:
        """English sentence saying exactly what :meth:`to_asp` says."""
        return self.spec.describe(self.params)

    def __hash__(self) -> int:
        return hash((self.template, tuple(sorted(self.params.items()))))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Constraint) and self.template == other.template and dict(self.params) == dict(other.params)

    def to_json(self) -> dict[str, Any]:
        return {"template": self.template, "params": dict(self.params)}


# ---------------------------------------------------------------------- parsing rules back into constraints
# Rules are compared in clingo's canonical form (``str`` of the parsed statement), so layout, comments
# and ``,`` vs ``;`` do not matter, while tokens stay apart ("not hasProperty" is not "nothasProperty").
_TOKEN = {"r": r"\d+", "r1": r"\d+", "r2": r"\d+", "n": r"\d+",
          "p1": r"[a-z]+", "p2": r"[a-z]+", "v1": r"[a-z]+", "v2": r"[a-z]+"}
#: Stand-ins for the placeholders while a template rule is put in canonical form.
_SENTINEL = {"r": "7000001", "r1": "7000002", "r2": "7000003", "n": "7000004",
             "p1": "zqzpone", "v1": "zqzvone", "p2": "zqzptwo", "v2": "zqzvtwo"}
#: Directives other than these make a text no template rule (and are never handed to the parser,
#: which would open ``#include``d files).
_DIRECTIVE = re.compile(r"#(?!count\b|false\b)")


def _canonical(rule: str) -> str | None:
    """clingo's canonical text of a single rule, or None when ``rule`` is not exactly one rule."""
    if _DIRECTIVE.search(rule) or not rule.isascii():  # non-ASCII: clingo's logger would abort the interpreter
        return None
    try:
        statements = parse_statements(rule)
    except RuntimeError:
        return None
    rules = [s for s in statements if s.ast_type == ASTType.Rule]
    others = [s for s in statements if s.ast_type not in (ASTType.Rule, ASTType.Program,
                                                           ASTType.Comment)]
    if len(rules) != 1 or others:
        return None
    return str(rules[0])


def _rule_regex(rule: str) -> tuple[re.Pattern[str], list[str]]:
    canonical = _canonical(_fill(rule, _SENTINEL))
    if canonical is None:  # pragma: no cover - the shipped templates are valid ASP
        raise FormatError("template rule is not valid ASP", field="rule", value=rule)
    by_sentinel = {v: k for k, v in _SENTINEL.items()}
    token = re.compile("|".join(re.escape(v) for v in _SENTINEL.values()))
    names: list[str] = []
    pattern = ""
    pos = 0
    for m in token.finditer(canonical):
        pattern += re.escape(canonical[pos:m.start()])
        name = by_sentinel[m.group(0)]
        if name in names:
            pattern += f"(?P={name})"
        else:
            pattern += f"(?P<{name}>{_TOKEN[name]})"
            names.append(name)
        pos = m.end()
    pattern += re.escape(canonical[pos:])
    return re.compile("^" + pattern + "$"), names


@lru_cache(maxsize=1)
def _rule_patterns() -> tuple[tuple[str, int, re.Pattern[str]], ...]:
    patterns = []
    for spec in TEMPLATES:
        for i, rule in enumerate(spec.rules):
            regex, _ = _rule_regex(rule)
            patterns.append((spec.name, i, regex))
    return tuple(patterns)


def match_rule(rule: str) -> tuple[str, int, dict[str, Any]] | None:
    """Match one ASP rule (text ending in ``.``) against the templates' rules.

    The comparison is on clingo's canonical form of the rule, so whitespace, line breaks, comments
    and ``;`` vs ``,`` in the body do not matter. Text holding a directive other than ``#count`` (e.g.
    ``#include``, ``#script``) is never parsed and matches nothing.

    Returns ``(template name, rule position, params)`` for the first match (templates 2, 3 and 5
    share their rule shapes, as do both forms of value restriction; :func:`constraint_from_rules`
    regroups them), or None when the rule is in no template's language.
    """
    canonical = _canonical(rule)
    if canonical is None:
        return None
    for name, position, regex in _rule_patterns():
        m = regex.match(canonical)
        if m:
            params = {k: (int(v) if k in ("r", "r1", "r2", "n") else v) for k, v in m.groupdict().items()}
            return name, position, params
    return None


def constraint_from_rules(rules: list[str], *, source: object = None, line: object = None,
                          quote: list[str] | None = None) -> Constraint:
    """Turn the rules of one template instance (one or two rules) into a :class:`Constraint`.

    Args:
        rules: the rule texts (any layout; compared in clingo's canonical form).
        source, line: where the rules come from, for error messages.
        quote: the texts to quote in error messages instead of ``rules`` (e.g. the file's own text).

    Raises:
        FormatError: a rule is not in any template's language, or two rules do not form one template.
    """
    shown = [" ".join(t.split()) for t in (quote if quote is not None else rules)]
    matches = []
    for rule, text in zip(rules, shown):
        m = match_rule(rule)
        if m is None:
            raise FormatError("not an instance of any of the 11 constraint templates",
                              source=source, field=line, value=text)
        matches.append(m)
    try:
        if len(matches) == 1:
            name, _, p = matches[0]
            if name in ("value_restriction", "negation_two", "negation_same_property", "negation"):
                kind = "value_restriction" if name == "value_restriction" else "negation"
                if kind == "value_restriction":
                    return Constraint("value_restriction", {"r": p["r"], "p1": p["p1"], "v1": p["v1"]})
                return Constraint("negation", {"r": p["r"], "p1": p["p1"], "v1": p["v1"]})
            return Constraint(name, p)
        if len(matches) == 2:
            (n1, _, a), (n2, _, b) = matches
            positive = {"value_restriction"}
            negative = {"negation_two", "negation_same_property", "negation"}
            if "r" in a and a["r"] == b.get("r") and n1 in positive and n2 in positive:
                return Constraint("value_restriction",
                                  {"r": a["r"], "p1": a["p1"], "v1": a["v1"], "p2": b["p1"], "v2": b["v1"]})
            if "r" in a and a["r"] == b.get("r") and n1 in negative and n2 in negative:
                if a["p1"] == b["p1"]:
                    return Constraint("negation_same_property",
                                      {"r": a["r"], "p1": a["p1"], "v1": a["v1"], "v2": b["v1"]})
                return Constraint("negation_two",
                                  {"r": a["r"], "p1": a["p1"], "v1": a["v1"], "p2": b["p1"], "v2": b["v1"]})
    except FormatError as exc:
        raise FormatError(f"parameter {exc.field}: {exc.message}", source=source, field=line, value=exc.value) from None
    raise FormatError("these rules do not form one template instance", source=source, field=line,
                      value=" ".join(shown))
