"""ScienceQA and M3CoT harness: loaders, prompt builders, answer extraction, metrics and a CLI.

``python -m clevr_poc.mcot run --benchmark m3cot|scienceqa --data PATH --method ... --backend SPEC --out FILE``
runs a (vision-)language chat backend (:mod:`clevr_poc.llm`) on the official prompts *with the images*
(``--images send``; ``caption``: ScienceQA's captions for text-only models; ``none``), resumable and
concurrent, and scores the official output files. ``python -m clevr_poc.mcot scienceqa|m3cot`` are the
text-only runs (ScienceQA ``--use-caption``) and, with ``--predictions FILE``, score existing outputs.
"""

from clevr_poc.mcot.mcot_data import (M3CoTRecord, ScienceQADataset, ScienceQAProblem, load_m3cot, load_scienceqa)
from clevr_poc.mcot.extraction import (Extraction, ExtractionMode, FailurePolicy, extract_m3cot, extract_scienceqa)
from clevr_poc.mcot.harness import run_m3cot, run_scienceqa, score_m3cot, score_scienceqa
from clevr_poc.mcot.prompts import (M3COT_STRATEGIES, SCIENCEQA_FORMATS, build_m3cot_plan, build_scienceqa_prompt)

__all__ = ["Extraction", "ExtractionMode", "FailurePolicy", "M3COT_STRATEGIES", "M3CoTRecord", "SCIENCEQA_FORMATS",
           "ScienceQADataset", "ScienceQAProblem", "build_m3cot_plan", "build_scienceqa_prompt", "extract_m3cot",
           "extract_scienceqa", "load_m3cot", "load_scienceqa", "run_m3cot", "run_scienceqa", "score_m3cot",
           "score_scienceqa"]
