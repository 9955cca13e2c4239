"""Baseline models of the paper (§4.1), all with the evaluator's model protocol
(``predict(example) -> set[str] | None``, see :mod:`clevr_poc.evaluation`):

- :class:`~clevr_poc.baselines.ns_vqa.NSVQA`: neuro-symbolic VQA with an ASP solver (§4.1.2); scene and
  query sources selectable (gold or learned/LLM);
- :class:`~clevr_poc.baselines.llm_standalone.LLMStandalone`: the stand-alone LLM (§4.1.3, App. C.1);
- :class:`~clevr_poc.baselines.vlm.VLMBaseline`: a vision-language model on the rendered image (ours).
"""

from clevr_poc.baselines.llm_standalone import LLMStandalone, build_messages, parse_reply, worked_examples
from clevr_poc.baselines.ns_vqa import GOLD, NSVQA, ParserFailed, ParserSource
from clevr_poc.baselines.vlm import VLMBaseline

__all__ = ["GOLD", "LLMStandalone", "NSVQA", "ParserFailed", "ParserSource", "VLMBaseline", "build_messages", "parse_reply",
           "worked_examples"]
