"""Draw ``docs/images/architecture.svg``, the data-flow picture of ``docs/architecture.md``.

Run from the repository root after changing the picture (needs matplotlib, e.g. the ``generate`` extra)::

    python docs/images/make_architecture.py        # writes docs/images/architecture.svg

The SVG is committed; mkdocs only copies it (this script is excluded from the site in ``mkdocs.yml``).
Text stays text in the SVG (``svg.fonttype = none``: searchable, scales with the page), and the output is
the same bytes on every run of the same matplotlib version (fixed hash salt, no date).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().parent / "architecture.svg"

STAGE = "#e8f0fb"      # the six stages
MODEL = "#fdf3e1"      # the NS-VQA model around perceive, parse, reason
LAYER = "#eef5ea"      # the layers every stage stands on
EDGE = "#33415c"
VALUE = "#7a2e0e"      # the typed values on the arrows


def box(ax, x0, y0, x1, y1, title, lines=(), *, color=STAGE, style="round,pad=0.02,rounding_size=0.12",
        dashed=False, title_size=12.5, title_at=None):
    ax.add_patch(FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle=style, facecolor=color, edgecolor=EDGE,
                                linewidth=1.2, linestyle="--" if dashed else "-"))
    cx = (x0 + x1) / 2
    top = title_at if title_at is not None else (y0 + y1) / 2 + 0.13 * len(lines)
    ax.text(cx, top, title, ha="center", va="center", fontsize=title_size, fontweight="bold", color=EDGE)
    for i, line in enumerate(lines):
        ax.text(cx, top - 0.3 - 0.26 * i, line, ha="center", va="center", fontsize=9, family="monospace",
                color=EDGE)


def arrow(ax, points, label=None, *, at=None, below=False, dotted=False):
    """A polyline arrow through ``points``; ``label`` at ``at`` (default: middle of the first segment)."""
    for (xa, ya), (xb, yb) in zip(points[:-2], points[1:-1]):
        ax.plot([xa, xb], [ya, yb], color=EDGE, linewidth=1.3, linestyle=":" if dotted else "-")
    ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=14, color=EDGE,
                                 linewidth=1.3, linestyle=":" if dotted else "-", shrinkA=0, shrinkB=0))
    if label:
        (xa, ya), (xb, yb) = points[0], points[1]
        x, y = at if at is not None else ((xa + xb) / 2, (ya + yb) / 2)
        ax.text(x, y + (-0.2 if below else 0.2), label, ha="center", va="center", fontsize=9, color=VALUE,
                linespacing=1.25)


def draw() -> plt.Figure:
    fig = plt.figure(figsize=(14.5, 7.6))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 14.5)
    ax.set_ylim(-0.05, 7.55)
    ax.axis("off")

    # the command line over everything
    box(ax, 0.2, 6.85, 14.3, 7.45, "clevr_poc/commands/   python -m clevr_poc  generate | render | parse | answer "
        "| evaluate | demo     python -m clevr_poc.train_parser | .perception | .mcot | .baselines.clip",
        color=LAYER, style="round,pad=0.02,rounding_size=0.08", title_size=10)

    # the NS-VQA model: perceive + parse + reason
    box(ax, 6.35, 1.75, 11.7, 6.45, "", color=MODEL, dashed=True)
    ax.text(9.0, 6.2, "clevr_poc.pipeline.Pipeline  (the NS-VQA model)", ha="center", va="center",
            fontsize=11, fontweight="bold", color=EDGE)

    # the stages
    box(ax, 0.2, 1.95, 2.3, 5.7, "generate", ("generation/", "environments/", "", "generate_dataset",
                                               "SceneSampler", "QuestionGenerator"))
    box(ax, 3.3, 4.45, 5.0, 5.55, "render", ("rendering/", "render_scene"))
    box(ax, 6.6, 4.45, 8.4, 5.55, "perceive", ("perception/", "SceneSource"))
    box(ax, 6.6, 2.05, 8.4, 3.15, "parse", ("parsing/", "QueryParser:", "BiLSTM | LLM"), title_at=2.95)
    box(ax, 9.7, 1.95, 11.45, 5.7, "reason", ("reasoning/", "Reasoner", "", "brave", "consequences"))
    box(ax, 12.5, 1.95, 14.3, 4.35, "evaluate", ("evaluation/", "evaluate(Model)", "experiment.py", "exact acc.",
                                                 "Jaccard"))
    box(ax, 12.5, 5.0, 14.3, 6.45, "other models", ("baselines/", "CLIP, LLM, VLM"), title_size=11.5)

    # image lane: scene -> image -> perceived scene
    arrow(ax, [(2.3, 5.0), (3.3, 5.0)], "Scene\n(partial)", at=(2.8, 5.3))
    arrow(ax, [(5.0, 5.0), (6.6, 5.0)], "PNG +\nImageInfo", at=(5.65, 5.35))
    ax.text(5.65, 4.6, "Camera,\nRenderInfo", ha="center", va="center", fontsize=8, color=VALUE)
    arrow(ax, [(8.4, 5.0), (9.7, 5.0)], "Scene\n(perceived)", at=(9.05, 5.35))
    ax.text(9.05, 4.6, "+ Perception-\nInfo", ha="center", va="center", fontsize=8, color=VALUE)

    # environment lane, with the branch into constraint-aware decoding
    arrow(ax, [(2.3, 3.75), (9.7, 3.75)], "Environment  (environments/*.lp)", at=(4.3, 3.75))
    ax.plot([7.5], [3.75], marker="o", markersize=5, color=EDGE)
    arrow(ax, [(7.5, 3.75), (7.5, 4.45)])
    ax.text(7.62, 4.1, "constraint-aware\ndecoding", ha="left", va="center", fontsize=8, color=VALUE)

    # question lane
    arrow(ax, [(2.3, 2.6), (6.6, 2.6)], "Question.text", at=(4.3, 2.6))
    arrow(ax, [(8.4, 2.6), (9.7, 2.6)], "ParseResult\n.asp_query", at=(9.05, 2.95))
    ax.text(9.05, 2.3, "Question.query", ha="center", va="center", fontsize=7.5, color=VALUE)

    # answers and gold labels into evaluation
    arrow(ax, [(11.45, 3.75), (12.5, 3.75)], "Answer", at=(11.98, 3.75))
    ax.text(11.98, 3.35, "Prediction", ha="center", va="center", fontsize=8, color=VALUE)
    arrow(ax, [(13.4, 5.0), (13.4, 4.35)])
    ax.text(13.5, 4.68, "Prediction", ha="left", va="center", fontsize=8, color=VALUE)
    arrow(ax, [(0.75, 1.95), (0.75, 1.45), (13.4, 1.45), (13.4, 1.95)], "Question.answer  (the gold answer set)",
          at=(4.3, 1.45), below=True)

    # the layers under the stages
    box(ax, 0.2, 0.55, 14.3, 0.98, "clevr_poc/solver/  make_control · Program (#program objects(n), slots(s), "
        "hidden(h)) · rules (clingo.ast) · watchdog   queries/  sanitizer · official form   camera.py   asp/*.lp",
        color=LAYER,
        style="round,pad=0.02,rounding_size=0.08", title_size=10)
    for x, top in ((1.75, 1.95), (7.5, 2.05), (10.575, 1.95)):
        arrow(ax, [(x, 0.98), (x, top)], dotted=True)
    ax.text(1.85, 1.2, "clingo", ha="left", va="center", fontsize=8, color=EDGE)
    box(ax, 0.2, 0.0, 14.3, 0.4, "typed values:  Environment · Scene (ImageInfo, RenderInfo, PerceptionInfo) · "
        "Camera · Question (query: SanitizedQuery) · ParseResult · Answer · Prediction · ExperimentResult",
        color="#ffffff",
        style="round,pad=0.02,rounding_size=0.08", title_size=10)
    return fig


def main(out: Path = OUT) -> Path:
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "clevr_poc-architecture",
                         "font.family": "DejaVu Sans"})
    fig = draw()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
