"""Questions/second of the Reasoner vs the official approach, on generated-like inputs.

Inputs: environments from the sampler (5-9 objects, up to 15 constraints), complete scenes from the
scene sampler with a 3D layout, one hidden object, and questions of every family from the question
generator (labelled by the direct mode, so generation time is not counted).

Measured in the same run on the same inputs:
- ``Reasoner(mode="compiled")`` (default) and ``Reasoner(mode="direct")``, one process;
- the official approach: write the program to a file, run ``python -m clingo 0 FILE`` in a subprocess,
  take the union of ``missing/1`` over all printed models (a sample of the questions: it is slow).

Every mode's answers are checked against each other and against the stored labels. Each figure is
given as wall-clock questions/s and as questions per CPU second of this process (``time.process_time``,
all its threads): the second one barely moves when other jobs share the cores, the first one does. The
load average (1 min) before and after each timed part is printed next to it. The warm compiled pass is
repeated ``--repeat`` times (best and median reported). Usage::

    python benchmarks/reasoner.py [--environments 10] [--questions 600] [--official 60] [--seed 0]
                                  [--repeat 3] [--json]
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
from clevr_poc.generation.question_generator import QuestionGenerator
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.generation.partial_scenes import choose_hidden, make_partial
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


def time_reasoner(reasoner: Reasoner, items) -> tuple[float, list[frozenset[str]], float]:
    """``(wall seconds, answers, CPU seconds of this process)`` of answering ``items`` in order."""
    start, cpu = time.perf_counter(), time.process_time()
    answers = [reasoner.answer(env, scene, q.asp_query).values for env, scene, q in items]
    return time.perf_counter() - start, answers, time.process_time() - cpu


def load_average() -> float:
    """The 1-minute load average (runnable processes; 2 cores are saturated at 2.0)."""
    return os.getloadavg()[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--official", type=int, default=60, help="questions run the official way")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="warm compiled passes (best and median reported)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    items = build_inputs(args.environments, args.questions, args.seed)
    families = Counter(q.template_filename for _, _, q in items)

    compiled = Reasoner(mode="compiled")
    # first pass grounds each environment once (reported separately), later passes are the steady state
    load = {"start": load_average()}
    cold, _, cold_cpu = time_reasoner(compiled, items)
    passes = []
    for _ in range(max(1, args.repeat)):
        wall, compiled_answers, cpu = time_reasoner(compiled, items)
        passes.append((wall, cpu))
    load["after_compiled"] = load_average()
    walls = sorted(w for w, _ in passes)
    warm, warm_median = walls[0], walls[len(walls) // 2]
    warm_cpu = min(c for _, c in passes)
    direct_time, direct_answers, direct_cpu = time_reasoner(Reasoner(mode="direct"), items)
    load["after_direct"] = load_average()
    assert compiled_answers == direct_answers, "compiled and direct answers differ"
    for (_, _, q), answer in zip(items, direct_answers):
        assert answer == q.answer, "stored answer differs"

    sample = items[: args.official]
    reasoner = Reasoner(mode="direct")
    start = time.perf_counter()
    official = [official_answer(reasoner.program(env, scene, reasoner.sanitize(q.asp_query)).to_text())
                for env, scene, q in sample]
    official_time = time.perf_counter() - start
    load["after_official"] = load_average()
    assert official == direct_answers[: len(sample)], "official approach disagrees"

    n = len(items)
    result = {
        "questions": n, "environments": args.environments, "families": dict(families),
        "compiled_qps_warm": n / warm, "compiled_qps_warm_median": n / warm_median,
        "compiled_qps_warm_cpu": n / warm_cpu, "compiled_qps_cold": n / cold,
        "compiled_qps_cold_cpu": n / cold_cpu, "direct_qps": n / direct_time, "direct_qps_cpu": n / direct_cpu,
        "official_qps": len(sample) / official_time, "official_questions": len(sample),
        "compiled_share": compiled.counts["compiled"] / max(1, sum(compiled.counts.values())),
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "load_average_1min": load,
    }
    result["ratio_compiled_vs_official"] = result["compiled_qps_warm"] / result["official_qps"]
    result["ratio_direct_vs_official"] = result["direct_qps"] / result["official_qps"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{n} questions over {args.environments} environments; families: {dict(families)}")
        print(f"load average (1 min): {load['start']:.2f} at start, {load['after_compiled']:.2f} after compiled, "
              f"{load['after_direct']:.2f} after direct, {load['after_official']:.2f} after official "
              f"({os.cpu_count()} CPUs)")
        print(f"Reasoner compiled (warm):  {result['compiled_qps_warm']:8.1f} questions/s (best of {len(passes)}; "
              f"median {result['compiled_qps_warm_median']:.1f}); {result['compiled_qps_warm_cpu']:.1f} per CPU second")
        print(f"Reasoner compiled (cold):  {result['compiled_qps_cold']:8.1f} questions/s (incl. grounding each environment "
              f"once); {result['compiled_qps_cold_cpu']:.1f} per CPU second")
        print(f"Reasoner direct:           {result['direct_qps']:8.1f} questions/s; {result['direct_qps_cpu']:.1f} per CPU second")
        print(f"official (clingo 0 FILE):  {result['official_qps']:8.1f} questions/s on {len(sample)} questions")
        print(f"ratio compiled/official:   {result['ratio_compiled_vs_official']:8.1f}x")
        print(f"ratio direct/official:     {result['ratio_direct_vs_official']:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
