"""Question parsers: English CLEVR-POC questions -> ASP queries (paper §4.1.2, §4.3 RQ2, Table 3).

- :mod:`.query_parser` -- the parser seam: :class:`QueryParser` (``name``, ``parse_queries(questions) ->
  list[ParseResult]``, implemented by both parsers), :class:`ParseResult`, :class:`FunctionParser`;
- :mod:`.equivalence` -- program accuracy, literal (:func:`programs_equal`, :func:`program_accuracy`: the
  paper's measure) and semantic (:func:`semantic_program_accuracy`: same answer set) (torch-free);
- :func:`to_official_form` -- the official generator's query form (re-exported from
  :mod:`clevr_poc.queries.official_form`, where it lives beside the sanitizer);
- :mod:`.vocabulary` -- question tokens and the query token set (torch-free);
- :mod:`.grammar` -- the query grammar automaton used for constrained decoding;
- :mod:`.seq2seq` -- the NS-VQA BiLSTM seq2seq parser, :class:`BiLSTMParser`
  (``from_pretrained(path)``, ``parse(question)``, ``parse_batch(questions)``);
- :mod:`.supervised_training`, :mod:`.reinforce`, :mod:`.training_run` -- supervised pretraining, REINFORCE and the
  ``python -m clevr_poc.train_parser`` run.

The torch-based names are imported lazily, so ``from clevr_poc.parsing import programs_equal`` works
without torch.
"""

from __future__ import annotations

from typing import Any

from clevr_poc.parsing.equivalence import program_accuracy, programs_equal, semantic_program_accuracy
from clevr_poc.parsing.query_parser import FunctionParser, ParseResult, QueryParser
from clevr_poc.queries.official_form import to_official_form

__all__ = ["FunctionParser", "ParseResult", "QueryParser", "programs_equal", "program_accuracy", "semantic_program_accuracy", "to_official_form", "BiLSTMParser", "ParserConfig", "QuestionVocabulary",
           "question_tokens", "query_tokens"]

_LAZY = {
    "BiLSTMParser": "clevr_poc.parsing.seq2seq",
    "ParserConfig": "clevr_poc.parsing.seq2seq",
    "QuestionVocabulary": "clevr_poc.parsing.vocabulary",
    "question_tokens": "clevr_poc.parsing.vocabulary",
    "query_tokens": "clevr_poc.parsing.vocabulary",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'clevr_poc.parsing' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
