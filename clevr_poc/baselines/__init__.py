"""Baseline models of the paper (§4.1), all with the evaluator's model protocol
(``predict(example) -> set[str] | None``, see :mod:`clevr_poc.evaluation`):

- :class:`~clevr_poc.baselines.llm_standalone.LLMStandalone`: the stand-alone LLM (§4.1.3, App. C.1);
- :class:`~clevr_poc.baselines.vlm.VLMBaseline`: a vision-language model on the rendered image (ours);
- the CLIP baselines (§4.1.1): :mod:`clevr_poc.baselines.clip`.

NS-VQA with an ASP solver (§4.1.2; scene and query gold, learned or from an LLM) is
:class:`clevr_poc.pipeline.Pipeline` (:meth:`~clevr_poc.pipeline.Pipeline.gold` for the gold partial scene).
"""

from clevr_poc.baselines.llm_standalone import LLMStandalone, build_messages, parse_reply, worked_examples
from clevr_poc.baselines.vlm import VLMBaseline

__all__ = ["LLMStandalone", "VLMBaseline", "build_messages", "parse_reply", "worked_examples"]
