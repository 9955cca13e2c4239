"""Complete scene graphs/s and layouts/s of clevr_poc.generation, with uniformity figures and the
official "enumerate K models and subsample" baseline.

Sections (all on environments from :func:`clevr_poc.environments.sampler.sample_environments`):

1. per environment: N, the sampler's method (exact rejection or Gibbs), calibrated acceptance rate,
   construction time (calibration; Gibbs pool included);
2. complete scene graphs/s: one process (per CPU-second, unaffected by other load) and ``--workers``
   processes (wall clock, sampler construction in each worker included);
3. layouts/s of :func:`~clevr_poc.generation.layout.place_objects` with rejection statistics;
4. the baseline: clingo's first ``--baseline-models`` models of one enumeration, subsampled (the official
   generator keeps the first 10^6 models): models/s, and how far its marginals are from ours
   (total variation of the region-occupancy vector and of the object type);
5. exact uniformity on a small environment whose 1824 complete scenes are enumerated: total variation
   and chi-square against uniform for rejection, Gibbs and the baseline, next to the noise floor of an
   ideal uniform sampler with the same number of draws;
6. (``--gibbs-check``) Gibbs against exact rejection samples on one sampled environment.

Usage::

    python benchmarks/scenes.py [--environments 10] [--samples 300] [--workers 2] [--seed 0]
                                [--baseline-models 20000] [--draws 3800] [--gibbs-check ENV_INDEX]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from clevr_poc.environments import Environment
from clevr_poc.environments.sampler import sample_environments
from clevr_poc.executors import map_ordered
from clevr_poc.generation.layout import PlacementError, place_objects
from clevr_poc.generation.object_types import FIELD_VALUE, type_id
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.generation.scene_programs import enumerate_scenes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from uniformity_reference import chi_square_p_value, small_environment  # noqa: E402  (tests/uniformity_reference.py)

_SAMPLERS: dict = {}


def _sampler(environment: Environment) -> SceneSampler:
    key = (environment.id, environment.num_objects, environment.constraints_asp())
    if key not in _SAMPLERS:
        _SAMPLERS[key] = SceneSampler(environment)
    return _SAMPLERS[key]


def _worker(task) -> tuple[int, float]:
    environment, seed, count = task
    started = time.process_time()
    sampler = _sampler(environment)
    rng = random.Random(seed)
    for _ in range(count):
        sampler.sample(rng)
    return count, time.process_time() - started


def _tv(a, b) -> float:
    ca, cb = Counter(a), Counter(b)
    na, nb = sum(ca.values()), sum(cb.values())
    return 0.5 * sum(abs(ca[k] / na - cb[k] / nb) for k in set(ca) | set(cb))


def _marginals(rows) -> tuple[list, list]:
    rows = np.asarray(rows)
    occupancy = [tuple(np.bincount(FIELD_VALUE["region"][r], minlength=4)) for r in rows]
    return occupancy, rows.ravel().tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--samples", type=int, default=300, help="scene graphs per environment")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-models", type=int, default=5_000)
    parser.add_argument("--draws", type=int, default=3800, help="draws for the exact-uniformity check")
    parser.add_argument("--gibbs-check", type=int, default=None, metavar="ENV_INDEX",
                        help="compare Gibbs with exact rejection samples on this environment (slow)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f}")

    environments = sample_environments(args.environments, args.seed)

    # 1 + 2: one process
    print("\n== 1-2. complete scene graphs, one process ==")
    print(" env  N  constraints  method     acceptance  construct_s   ms/scene  ms/scene(sample_many)"
          "   (clingo check included)")
    samples: dict[int, np.ndarray] = {}
    total_cpu = total_many = total_scenes = construct_cpu = 0.0
    methods = Counter()
    for env in environments:
        started = time.process_time()
        sampler = SceneSampler(env)
        if sampler.method == "mcmc":
            sampler.pool()
        construct = time.process_time() - started
        rng = random.Random(args.seed * 1000 + env.id)
        started = time.process_time()
        rows = [sampler.sample_types(rng) for _ in range(args.samples)]
        cpu = time.process_time() - started
        samples[env.id] = np.array(rows)
        started = time.process_time()
        sampler.sample_types_many(rng, args.samples)
        many_cpu = time.process_time() - started
        total_many += many_cpu
        total_cpu += cpu
        total_scenes += args.samples
        construct_cpu += construct
        methods[sampler.method] += 1
        print(f" {env.id:3d}  {env.num_objects}  {len(env.constraints):11d}  {sampler.method:9s}  "
              f"{sampler.acceptance_rate:10.2g}  {construct:11.2f}  {1e3 * cpu / args.samples:9.2f}"
              f"  {1e3 * many_cpu / args.samples:9.2f}")
    print(f"methods: {dict(methods)}")
    print(f"one process: {total_scenes / total_cpu:.0f} scene graphs per CPU-second "
          f"({1e3 * total_cpu / total_scenes:.2f} ms each); construction {construct_cpu:.1f} CPU-s in all "
          f"({construct_cpu / len(environments):.2f} s per environment); sample_many: "
          f"{total_scenes / total_many:.0f} per CPU-second")

    tasks = [(env, args.seed + k, args.samples) for env in environments for k in range(2)]
    started = time.perf_counter()
    count = cpu = 0
    for done, seconds in map_ordered(_worker, tasks, workers=args.workers, chunksize=1):
        count += done
        cpu += seconds
    wall = time.perf_counter() - started
    print(f"{args.workers} workers: {count} scene graphs in {wall:.1f} s wall = {count / wall:.0f} scene graphs/s "
          f"(sampler construction in every worker included; {count / cpu:.0f} per worker CPU-second)")

    # 3: layouts
    print("\n== 3. layouts ==")
    layout_rng = random.Random(args.seed)
    from clevr_poc.generation.object_types import scene_from_types

    rejections, restarts, region_restarts, reasons = [], 0, 0, Counter()
    failures = 0
    started = time.process_time()
    for rows in samples.values():
        for row in rows:
            try:
                result = place_objects(scene_from_types(row), layout_rng)
            except PlacementError:
                failures += 1
                continue
            rejections.append(result.rejections)
            restarts += result.restarts
            region_restarts += result.region_restarts
            reasons.update(result.rejections_by_reason)
    cpu = time.process_time() - started
    attempts = len(rejections) + failures
    print(f"{attempts} layouts in {cpu:.2f} CPU-s = {attempts / cpu:.0f} layouts per CPU-second; "
          f"failures (PlacementError) {failures} ({100 * failures / attempts:.2f}%)")
    print(f"rejected positions per layout: mean {np.mean(rejections):.1f}, median {np.median(rejections):.0f}, "
          f"p99 {np.percentile(rejections, 99):.0f}, max {max(rejections)}; by reason {dict(reasons)}")
    print(f"region refills per layout {region_restarts / len(rejections):.3f}, "
          f"whole restarts per layout {restarts / len(rejections):.3f}")

    # 4: baseline
    print(f"\n== 4. baseline: first {args.baseline_models} models of one enumeration, subsampled ==")
    print(" env  models/s   TV(occupancy) TV(type)   [baseline vs our samples; ours vs ours (noise)]")
    tvs = []
    for env in environments:
        started = time.perf_counter()
        first = [[type_id(o) for o in s.objects] for s in enumerate_scenes(env, args.baseline_models)]
        seconds = time.perf_counter() - started
        pick = np.random.default_rng(args.seed).choice(len(first), size=args.samples)
        baseline = np.array([first[i] for i in pick])
        ours = samples[env.id]
        half = len(ours) // 2
        o1, t1 = _marginals(ours)
        ob, tb = _marginals(baseline)
        oh1, th1 = _marginals(ours[:half])
        oh2, th2 = _marginals(ours[half:])
        tvs.append((_tv(o1, ob), _tv(t1, tb), _tv(oh1, oh2), _tv(th1, th2)))
        print(f" {env.id:3d}  {len(first) / seconds:8.0f}   {tvs[-1][0]:.3f}         {tvs[-1][1]:.3f}      "
              f"[noise {tvs[-1][2]:.3f} {tvs[-1][3]:.3f}]")
    mean = np.mean(tvs, axis=0)
    print(f"mean: TV(occupancy) {mean[0]:.3f}, TV(type) {mean[1]:.3f} "
          f"(two halves of our own samples: {mean[2]:.3f}, {mean[3]:.3f})")

    # 5: exact uniformity
    print(f"\n== 5. exact uniformity: small environment, {args.draws} draws ==")
    env = small_environment()
    solutions = Counter(tuple(sorted(type_id(o) for o in s.objects)) for s in enumerate_scenes(env))
    keys = list(solutions)
    M = len(keys)

    def report(name: str, counts: Counter, draws: int) -> None:
        tv = 0.5 * sum(abs(counts[k] / draws - 1 / M) for k in keys)
        outside = sum(v for k, v in counts.items() if k not in solutions)
        p = chi_square_p_value([counts[k] for k in keys], draws / M)
        print(f"  {name:44s} TV {tv:.3f}  chi-square p {p:.3g}  reached {sum(1 for k in keys if counts[k])}/{M}"
              f"{'  NOT SCENES: ' + str(outside) if outside else ''}")

    print(f"{sum(solutions.values())} complete scenes = {M} sets of 4 objects")
    ideal = np.random.default_rng(args.seed).integers(0, M, args.draws)
    report("ideal uniform sampler (noise floor)", Counter(keys[i] for i in ideal), args.draws)
    for method in ("rejection", "mcmc"):
        sampler = SceneSampler(env, method=method, verify=False)
        rng = random.Random(args.seed)
        counts = Counter(tuple(sorted(int(t) for t in sampler.sample_types(rng))) for _ in range(args.draws))
        report(f"SceneSampler method={method}", counts, args.draws)
    for k in (200, 1000):
        first = [tuple(sorted(type_id(o) for o in s.objects)) for s in enumerate_scenes(env, k)]
        pick = np.random.default_rng(args.seed).choice(len(first), size=args.draws)
        report(f"first {k} models of one enumeration, subsampled", Counter(first[i] for i in pick), args.draws)

    # 6: Gibbs against exact rejection on one environment
    if args.gibbs_check is not None:
        env = environments[args.gibbs_check]
        print(f"\n== 6. Gibbs vs exact rejection, environment {env.id} ==")
        exact = SceneSampler(env, method="rejection", verify=False, max_proposals=10 ** 9)
        gibbs = SceneSampler(env, method="mcmc", verify=False)
        rng = random.Random(args.seed)
        n = args.draws
        started = time.process_time()
        ref = np.array([exact.sample_types(rng) for _ in range(2 * n)])
        exact_ms = 1e3 * (time.process_time() - started) / (2 * n)
        started = time.process_time()
        out = np.array([gibbs.sample_types(rng) for _ in range(n)])
        gibbs_ms = 1e3 * (time.process_time() - started) / n
        o1, t1 = _marginals(ref[:n])
        o2, t2 = _marginals(ref[n:])
        og, tg = _marginals(out)
        print(f"acceptance {exact.acceptance_rate:.2g}; exact {exact_ms:.2f} ms/scene, Gibbs {gibbs_ms:.2f} ms/scene")
        print(f"TV(occupancy): exact vs exact {_tv(o1, o2):.3f}, Gibbs vs exact {_tv(o1, og):.3f}")
        print(f"TV(type):      exact vs exact {_tv(t1, t2):.3f}, Gibbs vs exact {_tv(t1, tg):.3f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
