"""Compiled-mode questions/s of this checkout's Reasoner vs a baseline commit's, in one process.

The baseline's ``clevr_poc/reasoning/sanitizer.py``, ``watchdog.py``, ``compiled.py`` and ``reasoner.py`` are read with ``git show`` and
loaded under other module names (the rest of the package is this checkout's), so both Reasoners answer
the same questions (``benchmarks/reasoner.py``'s inputs) in alternating warm passes; the ratio of
their medians is robust to other jobs loading the machine. Also times ``sanitize_query`` alone. Usage::

    python benchmarks/reasoner_ab.py [--baseline a0e35d7] [--passes 12] [--questions 600] [--environments 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import timeit
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reasoner import build_inputs  # noqa: E402  (benchmarks/reasoner.py)

from clevr_poc.reasoning import Reasoner  # noqa: E402
from clevr_poc.queries import sanitizer as current_sanitizer  # noqa: E402


def baseline_modules(commit: str):
    """``(sanitizer, reasoner)`` modules of ``commit``."""
    root = Path(__file__).resolve().parent.parent

    def source(*paths: str) -> str:  # the first of ``paths`` that exists in ``commit`` (modules moved)
        for path in paths:
            done = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{path}"], capture_output=True, text=True)
            if done.returncode == 0:
                return done.stdout
        raise SystemExit(f"{commit} has none of {paths}")

    def load(name: str, text: str):
        module = types.ModuleType(name)
        module.__file__ = f"<{commit}:{name}>"
        sys.modules[name] = module
        exec(compile(text, module.__file__, "exec"), module.__dict__)
        return module

    def rebased(text: str) -> str:  # the baseline's own modules, not this checkout's
        for package in ("reasoning", "queries", "solver"):
            for module in ("sanitizer", "watchdog", "compiled"):
                text = text.replace(f"from clevr_poc.{package}.{module} import", f"from baseline_{module} import")
        return text

    # sanitizer: clevr_poc/queries/ since the typed-seams refactoring; watchdog: clevr_poc/solver/ since issue 16
    sanitizer = load("baseline_sanitizer", source("clevr_poc/queries/sanitizer.py", "clevr_poc/reasoning/sanitizer.py"))
    load("baseline_watchdog", source("clevr_poc/solver/watchdog.py", "clevr_poc/reasoning/watchdog.py"))
    load("baseline_compiled", rebased(source("clevr_poc/reasoning/compiled.py")))
    reasoner = load("baseline_reasoner", rebased(source("clevr_poc/reasoning/reasoner.py")))
    return sanitizer, reasoner


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="a0e35d7")
    parser.add_argument("--passes", type=int, default=12)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    old_sanitizer, old_reasoner = baseline_modules(args.baseline)
    items = build_inputs(args.environments, args.questions, args.seed)
    reasoners = {"baseline": old_reasoner.Reasoner(mode="compiled"), "current": Reasoner(mode="compiled")}

    def run(reasoner):
        cpu, wall = time.process_time(), time.perf_counter()
        answers = [reasoner.answer(env, scene, q.asp_query).values for env, scene, q in items]
        return time.process_time() - cpu, time.perf_counter() - wall, answers

    for reasoner in reasoners.values():
        run(reasoner)  # cold pass: grounds every environment
    passes: dict[str, list[tuple[float, float]]] = {name: [] for name in reasoners}
    for i in range(args.passes):
        for name in (("baseline", "current") if i % 2 == 0 else ("current", "baseline")):
            cpu, wall, answers = run(reasoners[name])
            assert answers == [q.answer for _, _, q in items], f"{name}: answers differ from the labels"
            passes[name].append((cpu, wall))
    n = len(items)
    for name, values in passes.items():
        cpus, walls = [c for c, _ in values], [w for _, w in values]
        print(f"{name:9s} questions per CPU second: median {n / statistics.median(cpus):7.1f}, best {n / min(cpus):7.1f}; "
              f"wall questions/s: median {n / statistics.median(walls):7.1f}, best {n / min(walls):7.1f}")
    median = statistics.median(c for c, _ in passes["baseline"]) / statistics.median(c for c, _ in passes["current"])
    best = min(c for c, _ in passes["baseline"]) / min(c for c, _ in passes["current"])
    print(f"current/baseline questions per CPU second: median {median:.3f}, best {best:.3f} "
          f"({args.passes} alternating passes of {n} questions each)")
    texts = sorted({q.asp_query for _, _, q in items}, key=len)
    texts = [texts[0], texts[len(texts) // 2], texts[-1]]
    best_us = {"baseline": [1e9] * 3, "current": [1e9] * 3}
    for i in range(25):
        for name, module in ((("baseline", old_sanitizer), ("current", current_sanitizer)) if i % 2 == 0 else
                             (("current", current_sanitizer), ("baseline", old_sanitizer))):
            for k, text in enumerate(texts):
                seconds = timeit.timeit(lambda: module.sanitize_query(text), number=300) / 300
                best_us[name][k] = min(best_us[name][k], seconds * 1e6)
    for name, values in best_us.items():
        print(f"{name:9s} sanitize_query (shortest, median, longest query): "
              + ", ".join(f"{v:.1f} us" for v in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
