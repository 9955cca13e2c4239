"""``python -m clevr_poc explore``: a local web page to look at answers and their reasons.

The logic is plain library code, testable without a browser: :mod:`.catalog` lists and filters the
examples of a dataset folder (wrong answers first with a ``predictions.json``), :mod:`.case_runner`
answers one example or one upload and returns a :class:`~clevr_poc.explorer.case_runner.CaseView` (every
piece the page shows, or a one-line typed error), :mod:`.drawing` draws objects on the image. The Gradio
layer (:mod:`.app`) only lays these out. See ``docs/explorer.md``.
"""
