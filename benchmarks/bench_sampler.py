"""Environments per second of the environment sampler (clevr_poc.environments.sampler).

Usage: python benchmarks/bench_sampler.py [--count 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import time

from clevr_poc.environments.sampler import sample_environments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    environments = sample_environments(args.count, args.seed)
    elapsed = time.perf_counter() - start
    templates = collections.Counter(c.template for e in environments for c in e.constraints)
    sizes = [len(e.constraints) for e in environments]
    print(f"{args.count} environments in {elapsed:.2f} s: {args.count / elapsed:.2f} environments/s")
    print(f"constraints per environment: min {min(sizes)}, mean {sum(sizes) / len(sizes):.1f}, max {max(sizes)}")
    print("template use:", dict(sorted(templates.items())))


if __name__ == "__main__":
    main()
