"""Cost and rejection rate of the generation-time visibility check (``generate``'s default).

1. *dataset*: :func:`~clevr_poc.generation.dataset_writer.generate_dataset` of ``--environments`` x ``--scenes``
   examples, with the check (scope ``both``, 40 px at 320 x 240) and without (``visibility_check="off"``):
   wall time per example, time spent in the check per example and per layout, layouts checked, rejected,
   scene graphs redrawn, offending objects by reason (from ``stats.json``);
2. *monotonicity* and *cheap bound*: on ``--layouts`` random layouts (CPU seconds of one check,
   unaffected by other load; the full ray-cast check next to the decision-only check ``generate`` runs,
   ``exact_pixels=False``, which tries the conservative pixel bound first: share of layouts it decides
   alone, and decisions that differ from the full check's -- must be 0),
   whether "every object visible in the complete image"
   ever holds while an object of a partial image (any hidden object) is under the minimum (the check
   relies on it never happening: removing an object only uncovers pixels);
3. *renderer agreement*: every scene of the dataset passes :func:`clevr_poc.rendering.check_visibility`
   from the seed the ``render`` command will use (:func:`clevr_poc.rendering.batch_render.plan_tasks`).

Usage::

    python benchmarks/visibility.py [--environments 10] [--scenes 10] [--layouts 300] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time

from clevr_poc.generation.dataset_writer import generate_dataset


def _dataset(root: str, args, check: str) -> dict:
    out = os.path.join(root, check)
    started = time.perf_counter()
    summary = generate_dataset(out, environments=args.environments, scenes_per_environment=args.scenes,
                               seed=args.seed, workers=1, progress=False, visibility_check=check)
    total = time.perf_counter() - started
    generation = dict(summary.stats["generation"])
    generation.pop("visibility")
    n = summary.generated
    row = {"examples": n, "examples_seconds": round(summary.examples_seconds, 2),
           "seconds_per_example": round(summary.examples_seconds / n, 4),
           "check_seconds_per_example": round(summary.visibility_seconds / n, 4),
           "check_seconds_per_layout": (round(summary.visibility_seconds / summary.layouts_checked, 4)
                                        if summary.layouts_checked else None),
           "total_seconds": round(total, 2), **generation}
    return row


def _monotonicity(args) -> dict:
    from clevr_poc.environments.sampler import sample_environment
    from clevr_poc.seeds import ENVIRONMENT, derive_seed
    from clevr_poc.generation.layout import PlacementError, VisibilityCheck, place_objects
    from clevr_poc.generation.scene_sampler import SceneSampler
    from clevr_poc.rendering import check_visibility

    check = VisibilityCheck("both")
    partial = VisibilityCheck("partial")
    rng = random.Random(args.seed)
    complete_ok = violations = partial_checks = decided_by_bound = disagreements = 0
    cpu = fast_cpu = 0.0
    samplers = [SceneSampler(sample_environment(derive_seed(ENVIRONMENT, args.seed + 1, k), env_id=k)) for k in range(3)]
    done = 0
    while done < args.layouts:
        sampler = samplers[done % len(samplers)]
        try:
            scene = place_objects(sampler.sample(rng), rng).scene
        except PlacementError:
            continue
        done += 1
        camera_seed = rng.getrandbits(32)
        started = time.process_time()
        outcome = check.check(scene, 0, camera_seed)
        cpu += time.process_time() - started
        started = time.process_time()
        fast = check.check(scene, 0, camera_seed, exact_pixels=False)
        fast_cpu += time.process_time() - started
        decided_by_bound += fast.pixels is None and fast.ok
        # the decision: ok, image, offending objects and reasons (an object its upper bound rejects has no count,
        # None; any count given must be the full check's)
        disagreements += ((fast.ok, fast.image, [(k, r) for k, _, r in fast.offending])
                          != (outcome.ok, outcome.image, [(k, r) for k, _, r in outcome.offending])
                          or any(p is not None and p != q for (_, p, _), (_, q, _) in zip(fast.offending,
                                                                                          outcome.offending)))
        if not outcome.ok:
            continue
        complete_ok += 1
        for hidden in range(len(scene.objects)):  # the partial image of every hidden object, ray-cast afresh
            partial_checks += 1
            violations += not check_visibility(scene.without_object(hidden), seed=camera_seed).ok
        assert partial.check(scene, 0, camera_seed).ok
    return {"layouts": done, "check_cpu_seconds_per_layout": round(cpu / done, 4),
            "decision_only_check_cpu_seconds_per_layout": round(fast_cpu / done, 4),
            "accepted_by_the_bound_alone": decided_by_bound, "decisions_differing_from_the_full_check": disagreements,
            "complete_image_ok": complete_ok, "partial_images_checked": partial_checks,
            "partial_images_failing_although_complete_ok": violations}


def _agreement(root: str) -> dict:
    from clevr_poc.rendering import check_visibility
    from clevr_poc.rendering.batch_render import plan_tasks
    from clevr_poc.scene import Scene

    tasks, _ = plan_tasks(os.path.join(root, "both"), complete=True)
    failing = [t.scene_path for t in tasks if not check_visibility(Scene.from_file(t.scene_path), seed=t.seed).ok]
    return {"scenes": len(tasks), "failing_renderer_check": len(failing)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--scenes", type=int, default=10, help="scenes per environment")
    parser.add_argument("--layouts", type=int, default=300, help="random layouts for the monotonicity check")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as root:
        # warm-up: the samplers and the question generator are cached per process; build them first so
        # that both timed runs measure the per-example cost only
        generate_dataset(os.path.join(root, "warm-up"), environments=args.environments, scenes_per_environment=1,
                         seed=args.seed, progress=False, visibility_check="off")
        report = {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "load_average_at_start": round(load, 2),
            "with_check": _dataset(root, args, "both"),
            "without_check": _dataset(root, args, "off"),
            "renderer_agreement": _agreement(root),
            "monotonicity": _monotonicity(args),
        }
    if args.json:
        print(json.dumps(report))
    else:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
