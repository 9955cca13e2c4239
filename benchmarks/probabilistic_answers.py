"""Answers with probabilities from pixels (issue #24): calibration, answer rules, selective answering and
the cost of k scenes against the MAP decode, in one run.

For every question of a rendered split (gold ASP query, so that only perception is unsure): detect once,
then time (a) the MAP decode (``Perception.decode``, constraint-aware) plus one Reasoner call, and (b) the
k-best decode (``Perception.decode_distribution``) plus one Reasoner call per scene; record each scene's
answer set and probability. The summary scores the three answer rules on the same scenes (exact accuracy,
Jaccard), given that the question has an answer (the default) and without that presupposition, the ECE and Brier score of ``P(value in answer set)``, the accuracy-coverage curve (90 %-coverage
threshold) and the cost ratio (b)/(a) per question. Resumable (``--records`` JSON lines; questions already
there are skipped); ``--wait`` waits for images a running ``render`` has not written yet. Usage::

    python benchmarks/probabilistic_answers.py --dataset DIR --split test --records runs/h24.jsonl [--k 16]
        [--limit N] [--wait] [--summary-only] [--out DIR]   # --out: summary.json + reliability/coverage PNGs
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from clevr_poc.dataset_reader import load_dataset  # noqa: E402
from clevr_poc.evaluation.calibration import calibration_report  # noqa: E402
from clevr_poc.evaluation.report import ExampleResult  # noqa: E402
from clevr_poc.evaluation.metrics import exact_match, jaccard_index  # noqa: E402
from clevr_poc.probabilistic_answer import AnswerRule  # noqa: E402
from clevr_poc.reasoning import Reasoner  # noqa: E402
from clevr_poc.reasoning.answer_distribution import choose, conditioned, set_probabilities  # noqa: E402


def _record(perception, reasoner: Reasoner, example, k: int, timed: bool = True) -> dict:
    from clevr_poc.perception.cameras import camera_spec

    camera = camera_spec(example.partial_scene, "auto", source=getattr(example, "scene_path", None) or example.image_path)
    array, cam = perception.camera_for(example.image_path, camera)
    started = time.perf_counter()
    detections = perception.detect(array, cam)
    detect_s = time.perf_counter() - started
    env, query = example.environment, example.question.asp_query
    if not timed:      # the crisp answer is that of the first (MAP) scene, without the presupposition
        distribution = perception.decode_distribution(detections, cam, env, k=k)
        result = reasoner.answer_distribution(env, distribution, query, presuppose_answer=False)
        return {"key": example.question.image_filename, "gold": sorted(example.question.answer),
                "attribute": result.answer.attribute, "crisp": sorted(result.scene_answers[0]),
                "answers": [sorted(a) for a in result.scene_answers],
                "probabilities": list(result.scene_probabilities), "values": [m.value for m in result.marginals],
                "complete": distribution.complete, "detect_s": detect_s}
    times = [time.perf_counter()]
    scene = perception.decode(detections, cam, env)
    times.append(time.perf_counter())
    reasoner.answer(env, scene, query)      # warm-up: the environment's compiled program is grounded once
    times.append(time.perf_counter())
    crisp = reasoner.answer(env, scene, query)
    times.append(time.perf_counter())
    distribution = perception.decode_distribution(detections, cam, env, k=k)
    times.append(time.perf_counter())
    result = reasoner.answer_distribution(env, distribution, query, presuppose_answer=False)
    times.append(time.perf_counter())
    map_decode_s, map_answer_s = times[1] - times[0], times[3] - times[2]
    topk_decode_s, topk_answer_s = times[4] - times[3], times[5] - times[4]
    map_s, topk_s = map_decode_s + map_answer_s, topk_decode_s + topk_answer_s
    return {"key": example.question.image_filename, "gold": sorted(example.question.answer),
            "attribute": result.answer.attribute, "crisp": sorted(crisp.values),
            "answers": [sorted(a) for a in result.scene_answers], "probabilities": list(result.scene_probabilities),
            "values": [m.value for m in result.marginals], "complete": distribution.complete,
            "detect_s": detect_s, "map_s": map_s, "topk_s": topk_s, "map_decode_s": map_decode_s,
            "map_answer_s": map_answer_s, "topk_decode_s": topk_decode_s, "topk_answer_s": topk_answer_s}


def _results(records: list[dict], rule: AnswerRule, presuppose: bool = True) -> list[ExampleResult]:
    out = []
    for r in records:
        answers = [frozenset(a) for a in r["answers"]]
        weights = conditioned(answers, r["probabilities"])[0] if presuppose else r["probabilities"]
        chosen = choose(rule, answers, weights)
        confidence = next((s.probability for s in set_probabilities(answers, weights) if s.values == chosen), 0.0)
        marginals = tuple((v, min(1.0, sum(w for a, w in zip(answers, weights) if v in a))) for v in r["values"])
        gold = frozenset(r["gold"])
        out.append(ExampleResult(r["key"], gold, chosen, exact_match(gold, chosen), jaccard_index(gold, chosen),
                                 attribute=r["attribute"] or "unknown", confidence=confidence, marginals=marginals))
    return out


def summary(records: list[dict]) -> dict:
    """Scores per rule, calibration (MAP rule's confidence; marginals do not depend on the rule) and costs."""
    out: dict = {"questions": len(records), "rules": {}}
    for rule, presuppose in [(rule, p) for p in (True, False) for rule in AnswerRule]:
        results = _results(records, rule, presuppose)
        calibration = calibration_report(results)
        out["rules"][rule.value + ("" if presuppose else " (no presupposition)")] = {
            "exact_accuracy": sum(r.exact for r in results) / len(results),
            "jaccard": sum(r.jaccard for r in results) / len(results),
            "calibration": calibration.to_json() if calibration else None}
    timed = [r for r in records if "map_decode_s" in r]     # records with the warmed-up timing
    out["by_k"] = {}
    for k in (1, 2, 4, 8, 16):       # the k best are a prefix of the 16 best: truncate and renormalise
        truncated = [{**r, "answers": r["answers"][:k], "probabilities": [p / sum(r["probabilities"][:k])
                                                                          for p in r["probabilities"][:k]]}
                     for r in records]
        results = _results(truncated, AnswerRule.MAP)
        calibration = calibration_report(results)
        out["by_k"][k] = {"exact_accuracy": sum(r.exact for r in results) / len(results), "ece": calibration.ece,
                          "at_90_coverage_exact": calibration.at_coverage.exact_accuracy}
    ratios = [r["topk_s"] / r["map_s"] for r in timed if r["map_s"] > 0]
    out["questions_timed"] = len(timed)
    out["crisp_exact_accuracy"] = sum(exact_match(r["gold"], r["crisp"]) for r in records) / len(records)
    out["scenes_per_question"] = statistics.mean(len(r["answers"]) for r in records)
    out["uncertain_questions"] = sum(1 for r in records if len({tuple(a) for a in r["answers"]}) > 1)
    out["incomplete_enumerations"] = sum(1 for r in records if not r["complete"])
    if timed:
        out["seconds"] = {"questions_timed": len(timed),
                          **{f"{name}_median": statistics.median(r[name] for r in timed) for name in
                             ("detect_s", "map_decode_s", "map_answer_s", "topk_decode_s", "topk_answer_s")},
                          "ratio_median": statistics.median(ratios), "ratio_of_totals":
                          sum(r["topk_s"] for r in timed) / sum(r["map_s"] for r in timed)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--records", required=True, help="JSON-lines file of per-question records (resumable)")
    parser.add_argument("--model", default="models/perception")
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--wait", action="store_true", help="wait for images not rendered yet")
    parser.add_argument("--shard", default="0/1", metavar="I/N", help="only the questions whose index is I mod N")
    parser.add_argument("--time-every", type=int, default=1, metavar="T",
                        help="time the MAP decode against the k-best decode on every T-th question only")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--out", help="folder for summary.json and the plots")
    args = parser.parse_args()
    records_path = Path(args.records)
    records = [json.loads(line) for line in records_path.read_text().splitlines()] if records_path.exists() else []
    done = {r["key"] for r in records}
    if not args.summary_only:
        import torch

        from clevr_poc.perception import Perception

        torch.set_num_threads(1)
        perception = Perception.from_pretrained(args.model, device="cpu")
        reasoner = Reasoner()
        dataset = load_dataset(args.dataset, args.split)
        records_path.parent.mkdir(parents=True, exist_ok=True)
        with records_path.open("a") as handle:
            shard, shards = (int(x) for x in args.shard.split("/"))
            for index in range(min(len(dataset), args.limit or len(dataset))):
                if index % shards != shard:
                    continue
                example = dataset[index]
                if example.question.image_filename in done:
                    continue
                while args.wait and (example.image_path is None or not Path(example.image_path).exists()):
                    time.sleep(10)
                    example = load_dataset(args.dataset, args.split)[index]
                if example.image_path is None:
                    continue
                record = _record(perception, reasoner, example, args.k, timed=index % args.time_every == 0)
                records.append(record)
                handle.write(json.dumps(record) + "\n")
                handle.flush()
    result = summary(records)
    print(json.dumps({k: v for k, v in result.items() if k != "rules"}, indent=1))
    for rule, scores in result["rules"].items():
        c = scores["calibration"]
        print(f"{rule:38s} exact {scores['exact_accuracy']:.4f}  jaccard {scores['jaccard']:.4f}  ECE {c['ece']:.4f}  "
              f"Brier {c['brier']:.4f}  90%-coverage: t={c['at_coverage']['threshold']:.4f} "
              f"coverage {c['at_coverage']['coverage']:.3f} exact {c['at_coverage']['exact_accuracy']:.4f}")
    print(f"load: {os.getloadavg()}")
    if args.out:
        from clevr_poc._io import atomic_write_json
        from clevr_poc.evaluation.calibration_plots import plot_coverage, plot_reliability

        out = Path(args.out)
        atomic_write_json(out / "summary.json", result, indent=1)
        calibration = calibration_report(_results(records, AnswerRule.MOST_PROBABLE_SET))
        plot_reliability(calibration, out / "reliability.png")
        plot_coverage(calibration, out / "coverage.png")


if __name__ == "__main__":
    main()
