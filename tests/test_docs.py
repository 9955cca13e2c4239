"""The documentation site builds with ``mkdocs build --strict`` (broken links, missing pages and docstring
problems are errors) and lists every page in its navigation."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

needs_mkdocs = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python",
                                                       "material")),
    reason="needs mkdocs, mkdocs-material and mkdocstrings[python]")


def _nav_pages(nav) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += _nav_pages(value)
        else:
            pages.append(value)
    return pages


def _config() -> dict:
    yaml = pytest.importorskip("yaml")

    class Loader(yaml.SafeLoader):  # mkdocs.yml may use !!python/name tags; ignore them
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


def test_every_page_is_in_the_nav():
    pytest.importorskip("yaml")
    nav = _nav_pages(_config()["nav"])
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(set(pages) - set(nav)) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(set(nav) - set(pages)) == [], "nav entries without a page"
    for required in ("index.md", "concepts.md", "benchmarks.md", "differences.md", "tutorials/quickstart.md",
                     "tutorials/generating.md", "tutorials/answering.md", "tutorials/evaluating.md",
                     "api/pipeline.md"):
        assert required in nav


@needs_mkdocs
def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # the API reference is generated from the docstrings
    pipeline_page = (site / "api" / "pipeline" / "index.html").read_text(encoding="utf-8")
    for name in ("Pipeline", "from_pretrained", "answer_batch", "CheckpointNotFoundError"):
        assert name in pipeline_page
    assert ":class:" not in pipeline_page and "<code>~" not in pipeline_page  # Sphinx roles cleaned by the hook
    reasoner_page = (site / "api" / "reasoning" / "index.html").read_text(encoding="utf-8")
    assert "brave consequences" in reasoner_page
    assert (site / "tutorials" / "quickstart" / "index.html").is_file()
    # images referenced by the guides are copied
    assert (site / "images" / "rendering_engines.png").is_file()
