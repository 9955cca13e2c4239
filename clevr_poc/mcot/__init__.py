"""ScienceQA and M3CoT harness: loaders, prompt builders, answer extraction, metrics and a CLI.

``python -m clevr_poc.mcot scienceqa|m3cot --data PATH [--backend ...] [--prompt ...]`` runs a chat backend
(:mod:`clevr_poc.llm`); ``--predictions FILE`` scores existing outputs. Text only: images are not sent to
the model (ScienceQA can use captions as context, ``--use-caption``).
"""

from clevr_poc.mcot.data import (M3CoTRecord, ScienceQADataset, ScienceQAProblem, load_m3cot, load_scienceqa)
from clevr_poc.mcot.extraction import (Extraction, ExtractionMode, FailurePolicy, extract_m3cot, extract_scienceqa)
from clevr_poc.mcot.harness import run_m3cot, run_scienceqa, score_m3cot, score_scienceqa
from clevr_poc.mcot.prompts import (M3COT_STRATEGIES, SCIENCEQA_FORMATS, build_m3cot_plan, build_scienceqa_prompt)

__all__ = ["Extraction", "ExtractionMode", "FailurePolicy", "M3COT_STRATEGIES", "M3CoTRecord", "SCIENCEQA_FORMATS",
           "ScienceQADataset", "ScienceQAProblem", "build_m3cot_plan", "build_scienceqa_prompt", "extract_m3cot",
           "extract_scienceqa", "load_m3cot", "load_scienceqa", "run_m3cot", "run_scienceqa", "score_m3cot",
           "score_scienceqa"]
