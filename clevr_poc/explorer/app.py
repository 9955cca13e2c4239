"""The explorer's web page (Gradio): a thin layout over :mod:`.catalog` and :mod:`.case_runner`.

Every callback returns what a :class:`~clevr_poc.explorer.case_runner.CaseView` holds; failures are the
view's one-line ``error`` shown on the page (element ``#error``), never an exception. Element ids the
browser test reads: ``#run-example``, ``#run-upload``, ``#answer``, ``#score``, ``#query``, ``#error``,
``#explanation``, ``#upload-image``, ``#upload-environment``.
"""

from __future__ import annotations

from typing import Any

from clevr_poc.explorer.case_runner import QUERY_SOURCES, SCENE_SOURCES, CaseView, Models, error_line, run_example, \
    run_upload
from clevr_poc.explorer.catalog import OUTCOMES, Catalog, choice_titles, family_value

TITLE = "clevr_poc explorer"
_INTRO = ("Answers from pixels and their reasons: the perceived objects on the image (yellow; the gold partial "
          "scene in cyan beside it), the environment's constraints, the parsed query, the answer set, the gold "
          "answer with exact / Jaccard, and which constraint removes which value.")


def view_outputs(view: CaseView) -> tuple[Any, ...]:
    """The page's output values for ``view``, in the order of :func:`build_app`'s outputs."""
    return (
        view.error or "", view.title, view.image, view.gold_image, view.answer_text, view.score_text,
        view.question, view.query, view.gold_query, "\n".join(view.perceived), "\n".join(view.gold_objects),
        "\n".join(view.constraints_english), "\n\n".join(view.constraints_asp), view.explanation,
        "\n".join(view.notes),
    )


def build_app(catalog: Catalog | None, models: Models) -> Any:
    """The ``gradio.Blocks`` page: a "dataset example" tab (when ``catalog`` is given) and an "upload" tab."""
    import gradio as gr

    def pick(split: str, family: str, outcome: str) -> Any:
        try:
            choices = choice_titles(catalog.filter(split, family_value(family), outcome)) if catalog else []
            return gr.update(choices=choices, value=choices[0][1] if choices else None), ""
        except Exception as exc:  # noqa: BLE001 - shown on the page
            return gr.update(), error_line(exc)

    def answer_example(index: Any, scene_source: str, query_source: str, typed: str) -> tuple[Any, ...]:
        if catalog is None or index is None:
            return view_outputs(CaseView(error="error: choose an example first"))
        try:
            return view_outputs(run_example(catalog, int(index), models=models, scene_source=scene_source,
                                            query_source=query_source, typed_query=typed or ""))
        except Exception as exc:  # noqa: BLE001 - run_example returns errors; this is the last guard
            return view_outputs(CaseView(error=error_line(exc)))

    def answer_upload(image: Any, environment: Any, question: str, query_source: str, typed: str) -> tuple[Any, ...]:
        try:
            return view_outputs(run_upload(image, environment, question or "", models=models,
                                           query_source=query_source, typed_query=typed or ""))
        except Exception as exc:  # noqa: BLE001
            return view_outputs(CaseView(error=error_line(exc)))

    with gr.Blocks(title=TITLE, analytics_enabled=False) as app:
        gr.Markdown(f"# {TITLE}\n{_INTRO}")
        with gr.Tab("Dataset example", visible=catalog is not None):
            first = choice_titles(catalog.filter()) if catalog else []
            with gr.Row():
                split = gr.Dropdown(["all", *(catalog.splits if catalog else [])], value="all", label="split")
                family = gr.Dropdown(["all", *(str(f) for f in (catalog.families if catalog else []))], value="all",
                                     label="question family")
                outcome = gr.Dropdown(["all", *OUTCOMES], value="all", label="outcome (with --predictions)")
            example = gr.Dropdown(first, value=first[0][1] if first else None, label="example (wrong answers first)",
                                  elem_id="example")
            with gr.Row():
                scene_source = gr.Radio(list(SCENE_SOURCES), value="perception", label="scene", elem_id="scene-source")
                query_source = gr.Radio(list(QUERY_SOURCES), value="bilstm", label="query", elem_id="query-source")
            typed = gr.Textbox(label="ASP query (query source asp)", placeholder="missing(Q) :- hasProperty(X,size,Q).")
            run = gr.Button("Answer this example", variant="primary", elem_id="run-example")
        with gr.Tab("Upload"):
            with gr.Row():
                image = gr.File(label="image of the partial scene (PNG)", type="filepath", elem_id="upload-image")
                environment = gr.File(label="environment (.lp)", type="filepath", elem_id="upload-environment")
            question = gr.Textbox(label="question", placeholder="What size is the red rubber object?",
                                  elem_id="upload-question")
            upload_query = gr.Radio(["bilstm", "llm", "asp"], value="bilstm", label="query", elem_id="upload-query")
            upload_typed = gr.Textbox(label="ASP query (query source asp)")
            run_up = gr.Button("Answer the upload", variant="primary", elem_id="run-upload")
        error = gr.Markdown(elem_id="error")
        title = gr.Markdown(elem_id="title")
        with gr.Row():
            perceived_image = gr.Image(label="perceived objects", type="numpy", interactive=False, elem_id="perceived")
            gold_image = gr.Image(label="gold partial scene", type="numpy", interactive=False, elem_id="gold")
        with gr.Row():
            answer = gr.Textbox(label="answer set", elem_id="answer")
            score = gr.Textbox(label="gold answer and score", elem_id="score")
        shown_question = gr.Textbox(label="question", elem_id="question")
        with gr.Row():
            query = gr.Textbox(label="parsed query (the one that ran)", elem_id="query")
            gold_query = gr.Textbox(label="gold query", elem_id="gold-query")
        with gr.Row():
            perceived = gr.Textbox(label="scene used", lines=4, elem_id="perceived-objects")
            gold_objects = gr.Textbox(label="gold partial scene", lines=4, elem_id="gold-objects")
        with gr.Row():
            english = gr.Textbox(label="constraints (English)", lines=6, elem_id="constraints-english")
            asp = gr.Textbox(label="constraints (ASP)", lines=6, elem_id="constraints-asp")
        explanation = gr.Textbox(label="explanation: which constraint removes which value", lines=8,
                                 elem_id="explanation")
        notes = gr.Textbox(label="notes", elem_id="notes")
        outputs = [error, title, perceived_image, gold_image, answer, score, shown_question, query, gold_query,
                   perceived, gold_objects, english, asp, explanation, notes]
        for control in (split, family, outcome):
            control.change(pick, [split, family, outcome], [example, error])
        run.click(answer_example, [example, scene_source, query_source, typed], outputs)
        run_up.click(answer_upload, [image, environment, question, upload_query, upload_typed], outputs)
    return app
