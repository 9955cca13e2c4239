"""Questions/second of the Reasoner vs the official approach, on generated-like inputs.

Inputs: environments from the sampler (5-9 objects, up to 15 constraints), complete scenes from the
scene sampler with a 3D layout, one hidden object, and questions of every family from the question
generator (labelled by the direct mode, so generation time is not counted).

Measured in the same run on the same inputs:
- ``Reasoner(mode="compiled")`` (default) and ``Reasoner(mode="direct")``, one process;
- the official approach: write the program to a file, run ``python -m clingo 0 FILE`` in a subprocess,
  take the union of ``missing/1`` over all printed models (a sample of the questions: it is slow).

Every mode's answers are checked against each other. Usage::

    python benchmarks/reasoner.py [--environments 10] [--questions 600] [--official 60] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter

from clevr_poc.environments.sampler import sample_environments
from clevr_poc.generation.layout import PlacementError, place_objects
from clevr_poc.generation.questions import QuestionGenerator
from clevr_poc.generation.scenes import SceneSampler, choose_hidden, make_partial
from clevr_poc.reasoning import Reasoner

_MISSING = re.compile(r"missing\(([a-z]+)\)")


def build_inputs(n_envs: int, n_questions: int, seed: int):
    """``[(environment, partial scene, question)]``, spread over ``n_envs`` environments."""
    rng = random.Random(seed)
    environments = sample_environments(n_envs, seed)
    generator = QuestionGenerator(Reasoner(mode="direct"))
    samplers = [SceneSampler(env) for env in environments]
    attributes = ["color", "shape", "size", "material"]
    items = []
    while len(items) < n_questions:
        k = len(items) % n_envs
        env, sampler = environments[k], samplers[k]
        complete = sampler.sample(rng)
        try:
            complete = place_objects(complete, rng).scene
        except PlacementError:
            continue
        hidden = choose_hidden(complete, rng)
        question = generator.generate(env, complete, hidden, rng, query_attribute=attributes[len(items) % 4])
        if question is None:
            continue
        partial, _ = make_partial(complete, hidden)
        items.append((env, partial, question))
    return items


def official_answer(program: str) -> frozenset[str]:
    """The official executor: ``clingo 0`` on a file, union of missing/1 over every model."""
    with tempfile.NamedTemporaryFile("w", suffix=".lp", delete=False) as handle:
        handle.write(program)
        path = handle.name
    try:
        out = subprocess.run([sys.executable, "-m", "clingo", "0", path], capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    values: set[str] = set()
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Answer:") and i + 1 < len(lines):
            values.update(_MISSING.findall(lines[i + 1]))
    return frozenset(values)


def time_reasoner(reasoner: Reasoner, items) -> tuple[float, list[frozenset[str]]]:
    start = time.perf_counter()
    answers = [reasoner.answer(env, scene, q.asp_query).values for env, scene, q in items]
    return time.perf_counter() - start, answers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--official", type=int, default=60, help="questions run the official way")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    items = build_inputs(args.environments, args.questions, args.seed)
    families = Counter(q.template_filename for _, _, q in items)

    compiled = Reasoner(mode="compiled")
    # first pass grounds each environment once (reported separately), second pass is the steady state
    cold, _ = time_reasoner(compiled, items)
    warm, compiled_answers = time_reasoner(compiled, items)
    direct_time, direct_answers = time_reasoner(Reasoner(mode="direct"), items)
    assert compiled_answers == direct_answers, "compiled and direct answers differ"
    for (_, _, q), answer in zip(items, direct_answers):
        assert answer == q.answer, "stored answer differs"

    sample = items[: args.official]
    reasoner = Reasoner(mode="direct")
    start = time.perf_counter()
    official = [official_answer(reasoner.program(env, reasoner.scene_facts(env, scene), reasoner.sanitize(q.asp_query)))
                for env, scene, q in sample]
    official_time = time.perf_counter() - start
    assert official == direct_answers[: len(sample)], "official approach disagrees"

    n = len(items)
    result = {
        "questions": n, "environments": args.environments, "families": dict(families),
        "compiled_qps_warm": n / warm, "compiled_qps_cold": n / cold, "direct_qps": n / direct_time,
        "official_qps": len(sample) / official_time, "official_questions": len(sample),
        "compiled_share": compiled.counts["compiled"] / max(1, sum(compiled.counts.values())),
        "python": platform.python_version(), "cpu_count": os.cpu_count(),
    }
    result["ratio_compiled_vs_official"] = result["compiled_qps_warm"] / result["official_qps"]
    result["ratio_direct_vs_official"] = result["direct_qps"] / result["official_qps"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{n} questions over {args.environments} environments; families: {dict(families)}")
        print(f"Reasoner compiled (warm):  {result['compiled_qps_warm']:8.1f} questions/s")
        print(f"Reasoner compiled (cold):  {result['compiled_qps_cold']:8.1f} questions/s (incl. grounding each environment once)")
        print(f"Reasoner direct:           {result['direct_qps']:8.1f} questions/s")
        print(f"official (clingo 0 FILE):  {result['official_qps']:8.1f} questions/s on {len(sample)} questions")
        print(f"ratio compiled/official:   {result['ratio_compiled_vs_official']:8.1f}x")
        print(f"ratio direct/official:     {result['ratio_direct_vs_official']:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
