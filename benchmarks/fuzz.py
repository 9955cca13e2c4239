"""Long fuzz run of the untrusted-ASP gates: the query sanitizer + Reasoner and the environment-file check.

Inputs (``--queries`` + ``--environments`` + ``--heavy``, >= 10,000 by default):

- queries: valid queries (every official family's shape) with 1-5 random edits: a hostile fragment
  inserted (``#include``, ``#script``, nested and unclosed block comments, ``#!``, strings with escapes,
  non-ASCII and control characters, ``@`` calls, intervals, pools, ``not``, hex numbers, primes, ...),
  random Unicode text inserted, a slice deleted or repeated, two tokens swapped;
- heavy queries: 1-40 object variables (``hasProperty(Xi,color,Q)`` chains, relation chains) and
  attribute/value variables, meant to explode grounding;
- environment files: the shipped examples and sampled environments (official layout) with the same
  kinds of edits, plus environment fragments (``object(0..100)``, foreign rules, ``#external``, ...).

Every accepted query is answered in both modes (``--time-limit`` seconds, default 1) on one of the
examples or an empty 9- or 12-object environment. Everything handed to clingo is recorded
(:func:`clevr_poc.reasoning.audit.recording_clingo_inputs`) and checked independently of the
sanitizer: the direct program must be the trusted program with the query on its last line inside the
query language (clingo's own parse tree, :func:`~clevr_poc.reasoning.audit.query_violation`); compiled
mode must ground only the environment; environment code must hold no comment, string, script, foreign
directive or non-ASCII text (:func:`~clevr_poc.reasoning.audit.environment_code_violation`).

Reported: inputs, accepted/rejected, programs reaching clingo outside the language (must be 0), uncaught
exceptions (anything but a one-line :class:`~clevr_poc.errors.ClevrPocError`; must be 0), calls over the
time limit + 1 s (must be 0), the slowest call, and the rate. Usage::

    python benchmarks/fuzz.py [--queries 7000] [--environments 3000] [--heavy 40] [--seed 0]
                              [--time-limit 1.0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter

from clevr_poc.environments import Environment
from clevr_poc.environments.sampler import sample_environments
from clevr_poc.errors import ClevrPocError
from clevr_poc.examples import load_example
from clevr_poc.reasoning import Reasoner, sanitize_query
from clevr_poc.reasoning.audit import (clingo_input_violation, environment_code_violation, query_violation,
                                      recording_clingo_inputs)
from clevr_poc.scene import Scene

QUERIES = [
    "missing(Q):-hasProperty(X,color,Q),hasProperty(X,shape,cone).",
    "missing(Q):-hasProperty(X,color,Q),hasProperty(Y,material,rubber),hasProperty(X,shape,cone),left(Y,X),X!=Y.",
    "missing(Q):-hasProperty(X,size,Q),same_color(Y,X),X!=Y,hasProperty(Y,shape,sphere).",
    "missing(Q):-hasProperty(X,shape,Q),hasProperty(Y2,size,medium),hasProperty(Y1,shape,cube),"
    "hasProperty(X,color,brown),front(Y1,X),behind(Y2,Y1),X!=Y1,Y1!=Y2,X!=Y2.",
    "missing(Q):-hasProperty(X,material,Q),hasProperty(Y1,color,red),hasProperty(Y2,size,small),right(Y1,X),"
    "left(Y2,X),X!=Y1,Y1!=Y2,X!=Y2.",
    "missing(Q):-hasProperty(X,color,Q),hasProperty(Y1,shape,cube),hasProperty(Y2,color,gray),"
    "hasProperty(Y3,material,metal),left(Y1,X),front(Y2,Y1),behind(Y3,Y2),X!=Y1,Y1!=Y2,Y2!=Y3,X!=Y2,X!=Y3,Y1!=Y3.",
    "missing(Q) :- hasProperty(X,size,Q), at(X,2), object(X), sameProperty(X,Y,shape), hasProperty(3,color,red).",
    "query(V) :- hasProperty(0,shape,V).",
]
HOSTILE = [
    '#include "/nonexistent/fuzz.lp".', "#include <incmode>.", "#script (python)\nimport os\n#end.",
    "#script(lua) os.exit() #end.", "%", "%*", "*%", "%* %* *% x *%", '%* %* *% "\\\n*% ', "#!", "\n", "\r", "\t",
    '"', '"a\\"b"', '"\\n"', "\\", "é", "\u0663", "\x00", "\x0c", "@f(X)", "not ", "..", ";", "|", "{", "}",
    ":~", "0x1F", "0o7", "01", "X'", "'a", "_", "_X", "(", ")", ",", ".", ":-", "!=", "<>", "=", "-", "#count{X:object(X)}",
    "#const n=1.", "#external a.", "#program p.", "#show.", "#foo", "$", "hasProperty(X9,color,Q),", "X != not",
    "X != foo", "missing(Q) :- object(Q).",
]
#: Edits that keep a query valid (blanks, comments of every kind, more literals): half of the fragments
#: drawn, so that many mutated queries pass the sanitizer and reach the solver.
BENIGN = [" ", "\n", "  ", "% a comment\n", "%* block *%", "%* %* nested *% *%", "#! shebang comment\n",
          "% %* not a block\n", "hasProperty(Y,size,large),", "X!=Y,", "object(X),", "at(X,1),", "left(Y,X),",
          "same_shape(X,Y),", "hasProperty(X,material,metal),", "hasProperty(2,color,red),", "front(Z,X),"]
ENVIRONMENT_FRAGMENTS = HOSTILE + [
    "object(0..4).", "object(0..100).", "object(0..0).", "p(é).", ":- foo(X).", "#show X : p(X).",
    "hasProperty(0,size,small).", "larg", "100000", ":- object(X), at(X, 0), hasProperty(X, color, red).\n",
    " :- object(X), at(X, 0), hasProperty(X, color, blue).\n", "exceed_region_capacity(R) :- region(R).",
]
ENVIRONMENT_BENIGN = [" ", "\n", "% a comment\n", "%* a block\n comment *%", "%* %* nested *% *%\n", "\r\n",
                      ":- object(X), at(X, 2), hasProperty(X, shape, cone).\n",
                      ":- #count{X: hasProperty(X, color, red), object(X), at(X, 1)}!=1.\n"]


def mutate(rng: random.Random, text: str, fragments: list[str], edits: int) -> str:
    """``text`` with ``edits`` random edits; with the benign fragment lists only insertions at token
    boundaries (after ``),``, ``:-`` or a newline), so that the text mostly stays valid."""
    benign = fragments is BENIGN or fragments is ENVIRONMENT_BENIGN
    for _ in range(edits):
        at = rng.randint(0, len(text))
        if benign:
            stops = [i + 1 for i, ch in enumerate(text) if ch == "\n" or (ch in ",-" and text[i - 1] in "):")]
            at = rng.choice(stops or [len(text)])
            text = text[:at] + rng.choice(fragments) + text[at:]
            continue
        edit = rng.random()
        if edit < 0.45:
            text = text[:at] + rng.choice(fragments) + text[at:]
        elif edit < 0.6:
            text = text[:at] + "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x2FFF)]))
                                       for _ in range(rng.randint(1, 4))) + text[at:]
        elif edit < 0.8:
            end = min(len(text), at + rng.randint(1, 30))
            text = text[:at] + text[end:]
        elif edit < 0.9:
            end = min(len(text), at + rng.randint(1, 60))
            text = text[:end] + text[at:end] + text[end:]
        else:
            parts = text.split(",")
            if len(parts) > 2:
                i, j = rng.sample(range(len(parts)), 2)
                parts[i], parts[j] = parts[j], parts[i]
                text = ",".join(parts)
    return text


def heavy_query(rng: random.Random) -> str:
    k = rng.choice([2, 4, 5, 6, 6, 6, 7, 8, 12, 20, 40])
    shape = rng.random()
    if shape < 0.5:  # the probe: k object variables, all sharing the answer variable
        body = [f"hasProperty(X{i},color,Q)" for i in range(k)]
    elif shape < 0.8:  # a relation chain
        body = ["hasProperty(X0,size,Q)"] + [f"left(X{i},X{i + 1})" for i in range(k - 1)]
    else:  # one object, many attribute/value variables
        body = ["hasProperty(X,color,Q)"] + [f"hasProperty(X,A{i},V{i})" for i in range(min(k, 19))]
    return f"missing(Q) :- {', '.join(body)}."


class Tally:
    def __init__(self, time_limit: float) -> None:
        self.time_limit = time_limit
        self.counts: Counter = Counter()
        self.violations: list[str] = []
        self.uncaught: list[str] = []
        self.slowest = 0.0
        self.over_limit: list[str] = []

    def call(self, what: str, function, *args):
        """Run one gate call; a typed one-line error is an outcome, anything else is counted uncaught."""
        started = time.monotonic()
        try:
            result = function(*args)
            outcome = "ok"
        except ClevrPocError as error:
            result = None
            outcome = type(error).__name__
            if "\n" in str(error) or not str(error):
                self.uncaught.append(f"{what}: multi-line or empty {outcome}: {str(error)[:200]!r}")
        except Exception as error:  # noqa: BLE001 - counting them is the point
            result = None
            outcome = "uncaught"
            self.uncaught.append(f"{what}: {type(error).__name__}: {str(error)[:200]} <- {args[-1]!r:.200}")
        elapsed = time.monotonic() - started
        self.counts[f"{what}:{outcome}"] += 1
        if what.startswith("answer"):
            self.slowest = max(self.slowest, elapsed)
            if elapsed > self.time_limit + 1.0:
                self.over_limit.append(f"{what}: {elapsed:.2f} s <- {args[-1]!r:.200}")
        return result


def check_reasoner_inputs(seen, environment: Environment, tally: Tally) -> None:
    for where, program in seen:
        problem = clingo_input_violation(where, program)
        if problem is None and where == "environment" and program != environment.constraints_asp():
            problem = "the program holds constraints other than the environment's"
        if problem is not None:
            tally.violations.append(f"{where}: {problem}: {program[-200:]!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--environments", type=int, default=3000)
    parser.add_argument("--heavy", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    tally = Tally(args.time_limit)
    reasoners = {mode: Reasoner(mode=mode, time_limit=args.time_limit) for mode in Reasoner.MODES}
    worlds = [load_example("appendix_a")[:2], load_example("appendix_c1")[:2], (Environment((), 9), Scene(())),
              (Environment((), 12), Scene(()))]
    started = time.monotonic()

    def answer(text: str) -> None:
        environment, scene = rng.choice(worlds)
        for mode, reasoner in reasoners.items():
            with recording_clingo_inputs() as seen:
                tally.call(f"answer-{mode}", reasoner.answer, environment, scene, text)
            check_reasoner_inputs(seen, environment, tally)

    def edits() -> int:
        return rng.choice([1, 1, 2, 2, 3, 5])

    queries = [mutate(rng, rng.choice(QUERIES), rng.choice([HOSTILE, BENIGN]), edits()) for _ in range(args.queries)]
    queries += [heavy_query(rng) for _ in range(args.heavy)]
    for text in queries:
        checked = tally.call("sanitize", sanitize_query, text)
        if checked is not None:
            if query_violation(checked.text) is not None:
                tally.violations.append(f"sanitizer output: {query_violation(checked.text)}: {checked.text!r}")
            answer(text)
    query_seconds = time.monotonic() - started

    bases = [load_example("appendix_a")[0].to_asp(), load_example("appendix_c1")[0].to_asp()]
    bases += [env.to_asp() for env in sample_environments(4, args.seed)]
    started_env = time.monotonic()
    for _ in range(args.environments):
        text = mutate(rng, rng.choice(bases), rng.choice([ENVIRONMENT_FRAGMENTS, ENVIRONMENT_BENIGN]), edits())
        with recording_clingo_inputs() as seen:
            tally.call("environment", lambda t: Environment.from_asp(t, source="fuzz.lp"), text)
        for where, code in seen:
            problem = environment_code_violation(code)
            if problem is not None:
                tally.violations.append(f"environment {where}: {problem}: {code[:200]!r}")
    environment_seconds = time.monotonic() - started_env

    inputs = len(queries) + args.environments
    result = {
        "inputs": inputs, "queries": args.queries, "heavy_queries": args.heavy, "environment_files": args.environments,
        "outcomes": dict(sorted(tally.counts.items())), "violations": len(tally.violations),
        "uncaught_exceptions": len(tally.uncaught), "calls_over_limit_plus_1s": len(tally.over_limit),
        "slowest_answer_s": round(tally.slowest, 3), "time_limit_s": args.time_limit,
        "query_part_s": round(query_seconds, 1), "environment_part_s": round(environment_seconds, 1),
        "inputs_per_s": round(inputs / (query_seconds + environment_seconds), 1), "seed": args.seed,
        "load_average_1min_end": os.getloadavg()[0], "examples": {
            "violations": tally.violations[:5], "uncaught": tally.uncaught[:5], "over_limit": tally.over_limit[:5]},
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{inputs} inputs: {len(queries)} queries ({args.heavy} heavy), {args.environments} environment files "
              f"(seed {args.seed}, time limit {args.time_limit:g} s)")
        for key, value in result["outcomes"].items():
            print(f"  {key:40s} {value:6d}")
        print(f"programs reaching clingo outside the language: {len(tally.violations)}")
        print(f"uncaught exceptions:                           {len(tally.uncaught)}")
        print(f"calls over the time limit + 1 s:               {len(tally.over_limit)} "
              f"(slowest answer {tally.slowest:.2f} s)")
        print(f"time: queries {query_seconds:.1f} s, environment files {environment_seconds:.1f} s "
              f"({result['inputs_per_s']} inputs/s; load average {result['load_average_1min_end']:.1f})")
        for line in tally.violations[:5] + tally.uncaught[:5] + tally.over_limit[:5]:
            print("  " + line)
    bad = len(tally.violations) + len(tally.uncaught) + len(tally.over_limit)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
