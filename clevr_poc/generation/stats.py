"""Dataset statistics, plots (paper Appendix B, Fig. 6-7) and the dataset card of a generated dataset.

Everything is computed from the files on disk (so a resumed run reports the whole dataset) and is
deterministic: ``stats.json``, ``figures/*.png`` and ``README.md`` are byte-identical for the same
settings. Timings are not written (they are in :class:`~clevr_poc.generation.dataset_writer.DatasetSummary`).

``stats.json`` keys:

- ``examples``, ``environments``, ``splits`` (split -> count), ``per_environment`` (id -> split -> count);
- ``query_attributes`` (``"all"`` and each split -> attribute -> count), ``query_attribute_shares``
  (attribute -> share over all questions), ``configured_query_shares``, ``query_attribute_fallbacks``
  (questions whose attribute differs from the planned one);
- ``families`` (template file -> count), ``templates`` (``"<file>#<index>"`` -> count, every packaged
  template listed, zeros included), ``templates_missing`` (templates never used);
- ``answers`` (attribute -> ``"v1,v2"`` sorted answer set -> count, Fig. 7b-e), ``answer_sizes``
  (attribute -> \\|answer\\| -> count);
- ``objects_per_scene`` (N -> count; N counts the hidden object), ``query_attribute_by_objects``
  (N -> attribute -> count, Fig. 6b).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from clevr_poc import domain
from clevr_poc._io import atomic_open, atomic_write_json, atomic_write_text, read_json
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError

if TYPE_CHECKING:
    from clevr_poc.generation.dataset_config import DatasetConfig
    from clevr_poc.generation.example_plan import ExampleSpec

#: Plot files written under ``figures/``.
FIGURES: tuple[str, ...] = (
    "question_families.png", "query_attributes.png", "query_attribute_by_objects.png",
    "answers_color.png", "answers_shape.png", "answers_size.png", "answers_material.png", "objects_per_scene.png",
)


def _sorted_counts(counter: Mapping[Any, int], key=None) -> dict[str, int]:
    return {str(k): counter[k] for k in sorted(counter, key=key)}


@dataclass(frozen=True)
class DatasetStats:
    """The statistics of a generated dataset: the keys of ``stats.json`` (module doc), in file order.

    ``str`` keys throughout (as written to JSON): environment ids, object counts N and answer-set sizes are
    decimal strings.
    """

    examples: int
    environments: int
    splits: dict[str, int]
    per_environment: dict[str, dict[str, int]]
    query_attributes: dict[str, dict[str, int]]
    query_attribute_shares: dict[str, float]
    configured_query_shares: dict[str, float]
    query_attribute_fallbacks: int
    families: dict[str, int]
    templates: dict[str, int]
    templates_missing: list[str]
    answers: dict[str, dict[str, int]]
    answer_sizes: dict[str, dict[str, int]]
    objects_per_scene: dict[str, int]
    query_attribute_by_objects: dict[str, dict[str, int]]

    def to_json(self) -> dict[str, Any]:
        """The ``stats.json`` object (without the ``generation`` section the dataset writer adds)."""
        return asdict(self)


def compute_stats(out_dir: Path, config: DatasetConfig, environments: Sequence[Environment],
                  specs: Sequence[ExampleSpec]) -> DatasetStats:
    """Read every question file of the plan and count (see the module docstring for the keys).

    Raises:
        FormatError: a question file is missing or malformed.
    """
    from clevr_poc.generation.template_files import load_templates
    from clevr_poc.question import Question

    by_attribute: dict[str, Counter[str]] = {"all": Counter()}
    families: Counter[str] = Counter()
    templates: Counter[str] = Counter({t.id: 0 for t in load_templates()})
    answers: dict[str, Counter[str]] = {a: Counter() for a in domain.ATTRIBUTES}
    sizes: dict[str, Counter[int]] = {a: Counter() for a in domain.ATTRIBUTES}
    objects: Counter[int] = Counter()
    by_objects: dict[int, Counter[str]] = {}
    per_env: dict[int, Counter[str]] = {env.id: Counter() for env in environments}
    splits: Counter[str] = Counter({name: 0 for name in config.split_names})
    fallbacks = 0
    for spec in specs:
        path = out_dir / "incomplete" / "questions" / spec.split / spec.file_name
        question = Question.from_file(path)
        attribute = question.query_attribute
        if attribute is None or question.answer is None:
            raise FormatError("generated question without query attribute or answer", source=path)
        n = environments[spec.environment_id].num_objects
        splits[spec.split] += 1
        per_env[spec.environment_id][spec.split] += 1
        by_attribute["all"][attribute] += 1
        by_attribute.setdefault(spec.split, Counter())[attribute] += 1
        fallbacks += attribute != spec.query_attribute
        families[question.template_filename or "unknown"] += 1
        templates[f"{question.template_filename}#{question.question_family_index}"] += 1
        answers[attribute][",".join(sorted(question.answer))] += 1
        sizes[attribute][len(question.answer)] += 1
        objects[n] += 1
        by_objects.setdefault(n, Counter())[attribute] += 1
    total = sum(splits.values())
    all_attributes = by_attribute["all"]
    order = {a: i for i, a in enumerate(domain.ATTRIBUTES)}
    attr_key = lambda a: order.get(a, 99)  # noqa: E731
    return DatasetStats(
        examples=total,
        environments=len(environments),
        splits=dict(splits),
        per_environment={str(e): {s: c[s] for s in config.split_names} for e, c in sorted(per_env.items())},
        query_attributes={name: {a: c.get(a, 0) for a in domain.ATTRIBUTES} for name, c in by_attribute.items()},
        query_attribute_shares={a: round(all_attributes.get(a, 0) / total, 6) if total else 0.0
                                for a in domain.ATTRIBUTES},
        configured_query_shares={a: round(s, 6) for a, s in sorted(config.query_shares, key=lambda p: attr_key(p[0]))},
        query_attribute_fallbacks=fallbacks,
        families=_sorted_counts(families),
        templates=_sorted_counts(templates, key=lambda t: (t.split("#")[0], int(t.split("#")[1]) if t.split("#")[1].isdigit() else 0)),
        templates_missing=sorted(t for t, c in templates.items() if c == 0),
        answers={a: dict(sorted(answers[a].items(), key=lambda kv: (-kv[1], kv[0]))) for a in domain.ATTRIBUTES},
        answer_sizes={a: _sorted_counts(sizes[a]) for a in domain.ATTRIBUTES},
        objects_per_scene=_sorted_counts(objects),
        query_attribute_by_objects={str(n): {a: by_objects[n].get(a, 0) for a in domain.ATTRIBUTES}
                                    for n in sorted(by_objects)},
    )


# ---------------------------------------------------------------------- plots
def write_figures(out_dir: Path, stats: DatasetStats) -> list[Path]:
    """The plots of paper Appendix B (Fig. 6a/b, 7a-e) and objects per scene, as PNG under ``figures/``."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    folder = out_dir / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig, name: str) -> None:
        path = folder / name
        fig.tight_layout()
        with atomic_open(path) as handle:  # temp file, fsync, rename, the umask's mode
            fig.savefig(handle, dpi=100, format="png", metadata={"Software": None})
        plt.close(fig)
        written.append(path)

    # Fig. 6a: questions per template, coloured by family
    templates = stats.templates
    families = sorted({t.split("#")[0] for t in templates})
    colours = {f: plt.get_cmap("tab10")(i % 10) for i, f in enumerate(families)}
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(templates) + 2), 4))
    names = list(templates)
    ax.bar(range(len(names)), [templates[t] for t in names], color=[colours[t.split("#")[0]] for t in names])
    ax.set_xticks(range(len(names)), [t.replace(".json", "") for t in names], rotation=90, fontsize=7)
    ax.set_ylabel("questions")
    ax.set_title("Questions per template (colour: family)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[f]) for f in families]
    ax.legend(handles, [f.replace(".json", "") for f in families], fontsize=7, ncol=3)
    save(fig, "question_families.png")

    # Fig. 7a: query attributes
    shares = stats.query_attributes["all"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    attributes = list(domain.ATTRIBUTES)
    ax.bar(attributes, [shares[a] for a in attributes], color="tab:blue", label="generated")
    configured = stats.configured_query_shares
    ax.plot(attributes, [configured.get(a, 0) * stats.examples for a in attributes], "k_", markersize=30,
            label="configured")
    ax.set_ylabel("questions")
    ax.set_title("Query attributes")
    ax.legend(fontsize=8)
    save(fig, "query_attributes.png")

    # Fig. 6b: query attribute by number of objects
    by_objects = stats.query_attribute_by_objects
    ns = list(by_objects)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / len(attributes)
    for i, a in enumerate(attributes):
        ax.bar([k + i * width for k in range(len(ns))], [by_objects[n][a] for n in ns], width, label=a)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(ns))], ns)
    ax.set_xlabel("objects in the complete scene (N)")
    ax.set_ylabel("questions")
    ax.set_title("Query attribute by number of objects")
    ax.legend(fontsize=8)
    save(fig, "query_attribute_by_objects.png")

    # Fig. 7b-e: answer sets per attribute (the 30 most frequent for color)
    for a in attributes:
        counts = stats.answers[a]
        items = list(counts.items())[:30]
        fig, ax = plt.subplots(figsize=(max(4, 0.3 * len(items) + 2), 4))
        ax.bar(range(len(items)), [c for _, c in items], color="tab:green")
        ax.set_xticks(range(len(items)), ["{" + k + "}" for k, _ in items], rotation=90, fontsize=7)
        ax.set_ylabel("questions")
        more = f" (30 most frequent of {len(counts)})" if len(counts) > 30 else ""
        ax.set_title(f"Answer sets, query attribute {a}{more}")
        save(fig, f"answers_{a}.png")

    # objects per scene
    objects = stats.objects_per_scene
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.bar(list(objects), list(objects.values()), color="tab:gray")
    ax.set_xlabel("objects in the complete scene (N)")
    ax.set_ylabel("scenes")
    ax.set_title("Objects per scene")
    save(fig, "objects_per_scene.png")
    return written


# ---------------------------------------------------------------------- dataset card
def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def dataset_card(config: DatasetConfig, stats: DatasetStats) -> str:
    """The ``README.md`` of a generated dataset (settings, layout, counts, how to load it)."""
    from clevr_poc import __version__

    splits = ",".join(f"{name}={share:g}" for name, share in config.splits)
    command = (f"python -m clevr_poc generate --out DIR --environments {config.environments} "
               f"--scenes-per-environment {config.scenes_per_environment} --seed {config.seed} --splits {splits}")
    total = stats.examples or 1
    attribute_rows = [(a, stats.query_attributes["all"][a], f"{100 * stats.query_attributes['all'][a] / total:.1f} %",
                       f"{100 * stats.configured_query_shares.get(a, 0):.1f} %") for a in domain.ATTRIBUTES]
    family_rows = sorted(stats.families.items())
    answer_rows = [(a, len(stats.answers[a]),
                    ", ".join(f"{k}: {v}" for k, v in stats.answer_sizes[a].items())) for a in domain.ATTRIBUTES]
    parts = [
        "# CLEVR-POC dataset (generated by clevr_poc)",
        "",
        "Reasoning-intensive visual question answering under partial observability (CLEVR-POC, paper §3): each "
        "example is an environment (a set of ASP constraints), a partial scene in which one object is hidden, and a "
        "question about the hidden object whose answer is the **set** of values consistent with the environment, "
        "the visible objects and the question.",
        "",
        f"Generated with clevr_poc {__version__}, format version {config.format_version}:",
        "",
        "```",
        command,
        "```",
        "",
        "The same command (any `--workers`, `--executor`) regenerates these files byte for byte, and resumes an "
        "interrupted run. The settings are in `dataset.json`; all counts below are in `stats.json`.",
        "",
        "## Layout",
        "",
        "```",
        "environments/<id>.lp                         environment program (background + object(0..N-1) + constraints)",
        "complete/scenes/<split>/CLEVR_%06d.json      complete scene graph (N objects, layout, relationships)",
        "incomplete/scenes/<split>/CLEVR_%06d.json    partial scene graph (the hidden object removed, N-1 objects)",
        "incomplete/questions/<split>/CLEVR_%06d.json question (text, CLEVR program, ASP query, answer set)",
        "incomplete/images/<split>/CLEVR_<split>_%06d.png  rendered partial scene (written by the renderer)",
        "figures/*.png                                statistics plots (paper Appendix B, Fig. 6-7)",
        "```",
        "",
        "Question keys: `split, image_filename, image_index, question, program, asp_query, answer, object_interest, "
        "template_filename, question_family_index, question_index, constraint_type_index` (the environment id). "
        "Load with `clevr_poc.dataset_reader.load_dataset(path, split)`.",
        "",
        "## Counts",
        "",
        f"{stats.examples} questions (one per scene) over {stats.environments} environments "
        f"({config.scenes_per_environment} scenes each).",
        "",
        _table(("split", "questions"), stats.splits.items()),
        "",
        "Query attributes (paper Appendix B):",
        "",
        _table(("attribute", "questions", "share", "configured"), attribute_rows),
        "",
        f"Questions whose attribute had to differ from the plan (no valid question found): "
        f"{stats.query_attribute_fallbacks}.",
        "",
        "Question families:",
        "",
        _table(("template file", "questions"), family_rows),
        "",
        f"Templates never used: {', '.join(stats.templates_missing) or 'none'}.",
        "",
        "Answer sets (every answer has 1 <= |answer| < |domain of the attribute|):",
        "",
        _table(("attribute", "distinct answer sets", "questions by answer size"), answer_rows),
        "",
        "Objects per complete scene (hidden object included): "
        + ", ".join(f"N={n}: {c}" for n, c in stats.objects_per_scene.items()) + ".",
        "",
        "## Semantics",
        "",
        "The answer is the union of `missing/1` over all answer sets of environment + partial scene + question "
        "(clingo brave consequences), as in the official CLEVR-POC release.",
        "",
    ]
    return "\n".join(parts)


def write_report(out_dir: Path, config: DatasetConfig, environments: Sequence[Environment],
                 specs: Sequence[ExampleSpec]) -> DatasetStats:
    """Compute the statistics and write ``stats.json``, ``figures/*.png`` and ``README.md``; returns the stats."""
    stats = compute_stats(out_dir, config, environments, specs)
    atomic_write_json(out_dir / "stats.json", stats.to_json(), indent=2)
    write_figures(out_dir, stats)
    atomic_write_text(out_dir / "README.md", dataset_card(config, stats))
    return stats


def current_stats(out_dir: str | Path, config: "DatasetConfig", examples: int) -> dict[str, Any] | None:
    """``stats.json`` of an earlier run on ``out_dir`` when it is complete and still true, else None.

    Used when a resumed run generated nothing (the question files, hence the statistics, are those the
    earlier run counted). Complete: the dataset writer's last write, with the ``generation`` section of
    ``config``'s visibility settings, every :class:`DatasetStats` key, ``examples`` examples over
    ``config.environments`` environments, and ``README.md`` (written before it) present.
    """
    out_dir = Path(out_dir)
    try:
        stats = read_json(out_dir / "stats.json")
    except FormatError:
        return None
    if not isinstance(stats, dict) or not (out_dir / "README.md").is_file():
        return None
    generation = stats.get("generation")
    if not isinstance(generation, Mapping) or generation.get("visibility") != config.visibility_json():
        return None
    if any(name not in stats for name in DatasetStats.__dataclass_fields__):
        return None
    if stats["examples"] != examples or stats["environments"] != config.environments:
        return None
    return stats


def read_stats(out_dir: str | Path) -> dict[str, Any]:
    """``stats.json`` of a generated dataset."""
    return read_json(Path(out_dir) / "stats.json")
