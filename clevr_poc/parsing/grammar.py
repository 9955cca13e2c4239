"""The query grammar as a token automaton: which tokens may come next (constrained decoding).

Every sequence the automaton accepts is a query :func:`~clevr_poc.reasoning.sanitize_query` accepts,
and decoding (greedy or sampled) can always finish within :data:`MAX_LITERALS` literals::

    query   := "missing" "(" "Q" ")" ":-" first ("," literal)* "."
    first   := "hasProperty" "(" obj "," attr "," "Q" ")"            -- the answer literal comes first
    literal := "hasProperty" "(" obj "," attr "," value-of-attr ")"
             | rel "(" obj "," obj' ")"        rel in left/right/front/behind
             | same "(" obj "," obj' ")"       same in same_color/size/shape/material
             | obj "!=" obj'
    obj     := an object variable already used, or the next new one (X, then Y, then Z, ...)
    obj'    := obj, different from the literal's first object

- the value of ``hasProperty(_, A, _)`` is restricted to A's domain (``hasProperty(X,color,cube)`` is
  not allowed), and ``Q`` appears only in the first literal: the head variable occurs in the body
  exactly once, as the answer;
- object variables are introduced in order (X, Y, Z, W, V, U; :data:`~.vocabulary.OBJECT_VARIABLES`):
  the targets are renamed the same way (:func:`~.vocabulary.query_tokens`);
- *safety*: a variable first met in ``X != Y`` must later occur in an atom (the sanitizer rejects
  variables that occur only in comparisons). ``.`` is allowed only when no such variable is pending, a
  comparison is allowed only when enough literals remain to cover what it may leave pending, and when
  the remaining literals are just enough, the next literal must be an atom whose first object is a
  pending variable. Hence ``.`` is always reachable.

:class:`QueryGrammar` holds the static token classes; :class:`GrammarState` is the state of one
sequence (``allowed()`` -> token indices, ``advance(token)``); :func:`allowed_mask_sequence` gives the
masks along a gold sequence (for masked training losses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from clevr_poc import domain
from clevr_poc.parsing.vocabulary import (
    HEAD_VARIABLE, OBJECT_VARIABLES, QUERY_INDEX, QUERY_TOKENS, RELATION_PREDICATES, SAME_PREDICATES,
)

__all__ = ["MAX_LITERALS", "MAX_QUERY_TOKENS", "GrammarError", "GrammarState", "QueryGrammar",
           "allowed_mask_sequence"]

#: Most body literals the decoder may write (an official-form three-hop query has at most 26: the answer,
#: 3 + 3 * 4 descriptions, 3 relations, 6 inequalities, plus slack; the sanitizer allows 40).
MAX_LITERALS = 32
#: Longest token sequence the grammar allows: head (5) + literals (at most 8 tokens + separator each).
MAX_QUERY_TOKENS = 5 + 9 * MAX_LITERALS

_HEAD = ("missing", "(", HEAD_VARIABLE, ")", ":-")
_I = QUERY_INDEX
_ATTRIBUTE_IDS = tuple(_I[a] for a in domain.ATTRIBUTES)
_VALUE_IDS = {a: tuple(_I[v] for v in domain.DOMAINS[a]) for a in domain.ATTRIBUTES}
_VARIABLE_IDS = tuple(_I[v] for v in OBJECT_VARIABLES)
_BINARY_IDS = tuple(_I[p] for p in (*RELATION_PREDICATES, *SAME_PREDICATES))
_HAS = _I["hasProperty"]


class GrammarError(ValueError):
    """A token the automaton does not allow in the current state (a gold sequence outside the grammar)."""


@dataclass
class GrammarState:
    """The automaton's state for one sequence being decoded.

    Attributes:
        tokens: token indices so far.
        done: True after the final ``.``.
    """

    tokens: list[int] = field(default_factory=list)
    done: bool = False
    # private automaton registers
    _phase: str = "head"          # head | literal_start | atom | compare | after_literal | done
    _predicate: int = -1
    _args: list[int] = field(default_factory=list)
    _expect: str = ""             # open | arg | comma | close | neq | right
    _literals: int = 0
    _variables: int = 0           # object variables introduced so far
    _in_atoms: set[int] = field(default_factory=set)    # variables occurring in some atom
    _pending: set[int] = field(default_factory=set)     # variables met only in comparisons so far
    _cover: bool = False          # this literal must cover a pending variable

    # ------------------------------------------------------------------ helpers
    def _objects(self, exclude: int = -1) -> list[int]:
        """Object variables that may come now: those introduced, plus the next new one."""
        count = min(self._variables + 1, len(_VARIABLE_IDS))
        return [v for v in _VARIABLE_IDS[:count] if v != exclude]

    def _remaining(self) -> int:
        """Literals that may still be written after the current one."""
        return MAX_LITERALS - self._literals

    def allowed(self) -> list[int]:
        """Indices of the tokens allowed next (empty once done)."""
        if self.done:
            return []
        phase = self._phase
        if phase == "head":
            return [_I[_HEAD[len(self.tokens)]]]
        if phase == "literal_start":
            if self._literals == 0:
                return [_HAS]
            remaining = self._remaining()          # including this one
            options = [_HAS, *_BINARY_IDS]
            # a comparison may leave two new pending variables; only if enough literals remain after it
            if remaining - 1 >= len(self._pending) + 2:
                options += self._objects()
            return options
        if phase == "after_literal":
            options = []
            if self._remaining() > 0:
                options.append(_I[","])
            if not self._pending:
                options.append(_I["."])
            return options
        if phase == "compare":
            if self._expect == "neq":
                return [_I["!="]]
            return self._objects(exclude=self._args[0])
        # inside an atom
        expect = self._expect
        if expect in ("open", "comma", "close"):
            return [_I[{"open": "(", "comma": ",", "close": ")"}[expect]]]
        position = len(self._args)
        if self._predicate == _HAS:
            if position == 0:
                return self._first_object()
            if position == 1:
                return list(_ATTRIBUTE_IDS)
            if self._literals == 0:
                return [_I[HEAD_VARIABLE]]
            return list(_VALUE_IDS[QUERY_TOKENS[self._args[1]]])
        if position == 0:
            return self._first_object()
        return self._objects(exclude=self._args[0])

    def _first_object(self) -> list[int]:
        if self._cover:
            return sorted(self._pending)
        return self._objects()

    def advance(self, token: int) -> None:
        """Consume ``token`` (an index into :data:`~.vocabulary.QUERY_TOKENS`).

        Raises:
            GrammarError: the token is not allowed here.
        """
        allowed = self.allowed()
        if token not in allowed:
            raise GrammarError(f"token {QUERY_TOKENS[token]!r} not allowed after "
                               f"{' '.join(QUERY_TOKENS[t] for t in self.tokens)!r} "
                               f"(allowed: {[QUERY_TOKENS[t] for t in allowed]})")
        self.tokens.append(token)
        phase = self._phase
        if phase == "head":
            if len(self.tokens) == len(_HEAD):
                self._phase = "literal_start"
            return
        if phase == "literal_start":
            remaining = self._remaining()
            self._cover = bool(self._pending) and remaining <= len(self._pending)
            self._args = []
            if token in _VARIABLE_IDS:
                self._phase, self._expect = "compare", "neq"
                self._introduce(token)
                self._args.append(token)
            else:
                self._phase, self._expect, self._predicate = "atom", "open", token
            return
        if phase == "after_literal":
            if token == _I["."]:
                self._phase, self.done = "done", True
            else:
                self._phase = "literal_start"
            return
        if phase == "compare":
            if self._expect == "neq":
                self._expect = "right"
                return
            self._introduce(token)
            self._args.append(token)
            for v in self._args:
                if v not in self._in_atoms:
                    self._pending.add(v)
            self._end_literal()
            return
        # atom
        expect = self._expect
        if expect == "open":
            self._expect = "arg"
        elif expect == "comma":
            self._expect = "arg"
        elif expect == "close":
            self._end_literal()
        else:
            if token in _VARIABLE_IDS:
                self._introduce(token)
                self._in_atoms.add(token)
                self._pending.discard(token)
            self._args.append(token)
            arity = 3 if self._predicate == _HAS else 2
            self._expect = "close" if len(self._args) == arity else "comma"

    def _introduce(self, variable: int) -> None:
        index = _VARIABLE_IDS.index(variable)
        if index == self._variables:
            self._variables += 1

    def _end_literal(self) -> None:
        self._literals += 1
        self._phase = "after_literal"
        self._cover = False


class QueryGrammar:
    """Static view of the grammar: token count and a mask builder over :class:`GrammarState` objects."""

    size = len(QUERY_TOKENS)

    @staticmethod
    def start() -> GrammarState:
        return GrammarState()

    @staticmethod
    def masks(states: Sequence[GrammarState]) -> torch.Tensor:
        """``(batch, vocab)`` bool tensor: True where a token is allowed. A finished state allows only
        padding (index 0), so finished rows can keep being fed to the decoder."""
        rows = []
        for state in states:
            key = tuple(state.allowed()) or (0,)
            row = _ROWS.get(key)
            if row is None:
                row = _ROWS[key] = np.zeros(len(QUERY_TOKENS), dtype=bool)
                row[list(key)] = True
            rows.append(row)
        return torch.from_numpy(np.stack(rows))


#: allowed-token tuple -> bool row (a few hundred distinct rows exist)
_ROWS: dict[tuple[int, ...], np.ndarray] = {}


def allowed_mask_sequence(tokens: Sequence[int]) -> torch.Tensor:
    """``(len(tokens), vocab)`` bool masks along a gold sequence: row t = tokens allowed at step t.

    Raises:
        GrammarError: the sequence leaves the grammar.
    """
    state = GrammarState()
    rows = torch.zeros(len(tokens), len(QUERY_TOKENS), dtype=torch.bool)
    for t, token in enumerate(tokens):
        rows[t, state.allowed()] = True
        state.advance(token)
    if not state.done:
        raise GrammarError("sequence ends before the final '.'")
    return rows
