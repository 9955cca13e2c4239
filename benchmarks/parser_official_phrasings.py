"""Program accuracy of a question parser, literal and semantic, on a split and on its questions re-worded.

For every question of ``--split`` of ``--dataset`` (a generated dataset: questions keep their ``program``
and template), the parser's query is compared with the gold ``asp_query`` (official form) two ways:

- **literal**: equal up to variable renaming and literal order (:func:`clevr_poc.parsing.programs_equal`,
  the paper's program accuracy);
- **semantic**: the same answer set on the example's gold partial scene (:func:`~clevr_poc.parsing.
  equivalence.answers_agree`, the Reasoner).

With ``--templates DIR`` (a CLEVR template folder, e.g. the official release's
``question_templates/CLEVR_POC_templates``, which is never copied here), every question is also re-worded
with every text variant of every template of the same structure (:mod:`clevr_poc.parsing.rewording`,
synonyms drawn with ``--seed``) and the re-worded questions are scored against the same gold programs.
The few wrong parses are printed. Usage::

    python benchmarks/parser_official_phrasings.py --dataset DIR [--split test] [--parser models/parser_bilstm]
        [--templates DIR] [--seed 0] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def score(parser, reasoner, items, label: str, show: int = 8) -> dict:
    """items: (question text, gold query, example); prints and returns the two accuracies."""
    from clevr_poc.parsing.equivalence import answers_agree, programs_equal

    started = time.perf_counter()
    parsed = parser.parse_batch([text for text, _, _ in items])
    literal = semantic = 0
    wrong = []
    for (text, gold, example), query in zip(items, parsed):
        same = programs_equal(query, gold)
        literal += same
        agree = same or answers_agree(query, gold, example.environment, example.partial_scene, reasoner=reasoner)
        semantic += agree
        if not same:
            wrong.append((text, query, gold, agree))
    n = len(items)
    result = {"questions": n, "literal_program_accuracy": literal / n if n else 0.0,
              "semantic_program_accuracy": semantic / n if n else 0.0, "literal_correct": literal,
              "semantic_correct": semantic, "seconds": round(time.perf_counter() - started, 1)}
    print(f"{label}: {n} questions, program accuracy literal {literal / n:.4f} ({literal}), "
          f"semantic {semantic / n:.4f} ({semantic}), {result['seconds']} s", flush=True)
    for text, query, gold, agree in wrong[:show]:
        print(f"  [{'same answer' if agree else 'other answer'}] {text}\n    parsed {query}\n    gold   {gold}")
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--split", default="test")
    p.add_argument("--parser", default="models/parser_bilstm")
    p.add_argument("--templates", default=None, metavar="DIR", help="template folder to re-word with")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    import torch

    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.generation.template_files import load_template_file
    from clevr_poc.parsing.rewording import by_structure, reword, source_template
    from clevr_poc.parsing.seq2seq import BiLSTMParser
    from clevr_poc.reasoning import Reasoner

    torch.set_num_threads(args.threads)
    examples = list(load_dataset(args.dataset, split=args.split))[:args.limit]
    parser = BiLSTMParser.from_pretrained(args.parser)
    reasoner = Reasoner()
    report = {"dataset": args.dataset, "split": args.split, "parser": args.parser, "seed": args.seed}
    report["original"] = score(parser, reasoner, [(e.question.text, e.question.asp_query, e) for e in examples],
                               f"{args.split} questions")
    if args.templates:
        files = sorted(glob.glob(os.path.join(args.templates, "*.json")))
        if not files:
            print(f"error: no template files in {args.templates}", file=sys.stderr)
            return 1
        targets = by_structure(t for f in files for t in load_template_file(f))
        rng = random.Random(args.seed)
        items, without = [], 0
        for e in examples:
            texts = reword(e.question, source_template(e.question), targets, rng)
            without += not texts
            items += [(text, e.question.asp_query, e) for text in texts]
        report["reworded"] = score(parser, reasoner, items, f"re-worded with {args.templates}")
        report["reworded"]["questions_without_a_template"] = without
        print(f"  ({without} of {len(examples)} questions have no template of the same structure there)")
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
