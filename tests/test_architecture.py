"""Structural rules of the package source (docs/architecture.md), checked on the source text with :mod:`ast`:
nothing of clevr_poc is imported, so these tests need neither clingo, torch nor bpy.

- every module under ``clevr_poc/`` has at most 600 lines;
- module basenames are unique (``__init__.py`` and ``__main__.py`` excepted);
- there is no import cycle between folders;
- the inference modules never import a training module, not even through other clevr_poc modules.

What counts as an import: every ``import`` / ``from ... import`` statement anywhere in a module (top level,
inside functions, under ``if TYPE_CHECKING:``), relative imports resolved against the module's package.
``from package import name`` depends on ``package.name`` when that is a module, else on ``package``.
Imports made by name at run time (``importlib.import_module`` in the lazy ``__getattr__`` of a package) are
not seen. ``__main__.py`` files are entry points that nothing imports; they are left out of the graph.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clevr_poc"
MAX_LINES = 600
ENTRY_FILES = ("__main__.py",)

#: Modules that answer questions, and the training code they must never pull in.
INFERENCE = ("clevr_poc.perception.perceiver", "clevr_poc.pipeline", "clevr_poc.parsing.seq2seq")
TRAINING = ("clevr_poc.perception.perception_training", "clevr_poc.perception.answer_training",
            "clevr_poc.parsing.supervised_training",
            "clevr_poc.parsing.reinforce", "clevr_poc.parsing.training_run",
            "clevr_poc.baselines.clip.clip_training")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


#: dotted module name -> file, for every module of the package except the entry files
MODULES: dict[str, Path] = {_module_name(p): p for p in _source_files() if p.name not in ENTRY_FILES}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _known(name: str) -> str | None:
    """The clevr_poc module ``name`` stands for: itself, else its longest prefix that is a module; None when
    it is outside clevr_poc."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def imports_of(name: str) -> dict[str, int]:
    """The clevr_poc modules that module ``name`` imports, each with the line of its first import."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))
    package = name if _is_package(name) else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                       for alias in node.names]
        for target in targets:
            module = _known(target)
            if module is not None and module != name:
                found.setdefault(module, node.lineno)
    return found


GRAPH: dict[str, dict[str, int]] = {name: imports_of(name) for name in MODULES}


def folder_of(name: str) -> str:
    """The folder node of a module: its package (``clevr_poc.reasoning`` for ``clevr_poc/reasoning/*.py``).

    A top-level module of ``clevr_poc/`` (``scene.py``, ``pipeline.py``, ...) is a node of its own: those
    modules are the shared value objects and helpers that every folder builds on, and lumping them into one
    ``clevr_poc`` node would make a cycle of every folder that uses ``Scene`` and is used by ``pipeline.py``.
    ``clevr_poc/__init__.py`` is the node ``clevr_poc``. A sub-folder (``baselines/clip``) is a node apart
    from its parent folder.
    """
    if _is_package(name) or name.count(".") == 1:
        return name
    return name.rpartition(".")[0]


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the components with more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def folder_cycles() -> list[tuple[list[str], list[str]]]:
    """Each import cycle between folders: its folders and, per folder edge inside it, one module import
    that makes it (``"a.x -> b.y (line 12)"``)."""
    edges: dict[str, set[str]] = collections.defaultdict(set)
    witness: dict[tuple[str, str], str] = {}
    for module, imported in sorted(GRAPH.items()):
        for target, line in sorted(imported.items()):
            a, b = folder_of(module), folder_of(target)
            if a != b:
                edges[a].add(b)
                witness.setdefault((a, b), f"{module} -> {target} (line {line})")
    cycles = []
    for component in _strongly_connected(edges):
        inside = set(component)
        cycles.append((component, sorted(witness[a, b] for a in component for b in edges[a] if b in inside)))
    return cycles


def _packages_above(name: str) -> list[str]:
    """The packages Python runs before module ``name`` (``a.b.c`` -> ``a``, ``a.b``)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in MODULES]


def import_chain(start: str, goals: set[str]) -> list[str] | None:
    """The shortest chain of clevr_poc imports from ``start`` to a module of ``goals`` (importing a module
    runs its parent packages' ``__init__`` too), or None when there is none."""
    parent: dict[str, str | None] = {start: None}
    queue = collections.deque([start])
    while queue:
        module = queue.popleft()
        if module in goals:
            chain = []
            while module is not None:
                chain.append(module)
                module = parent[module]
            return chain[::-1]
        for target in sorted(GRAPH[module]) + _packages_above(module):
            if target not in parent:
                parent[target] = module
                queue.append(target)
    return None


# ---------------------------------------------------------------------------------------------- tests
def test_the_graph_sees_the_package():
    # the analysis itself: known modules, relative imports resolved, entry files left out
    assert len(MODULES) > 100
    assert "clevr_poc.solver.control" in MODULES and "clevr_poc.perception.__main__" not in MODULES
    assert "clevr_poc.reasoning.reasoner" in GRAPH["clevr_poc.reasoning"]
    assert "clevr_poc.domain" in GRAPH["clevr_poc.solver.programs"]  # from clevr_poc import domain
    assert folder_of("clevr_poc.reasoning.reasoner") == "clevr_poc.reasoning"
    assert folder_of("clevr_poc.reasoning") == "clevr_poc.reasoning"
    assert folder_of("clevr_poc.scene") == "clevr_poc.scene"
    assert set(TRAINING) | set(INFERENCE) <= set(MODULES), "a module named by this test no longer exists"
    # the training run does import REINFORCE, so the chain search finds what is there
    assert import_chain("clevr_poc.parsing.training_run", {"clevr_poc.parsing.reinforce"}) == [
        "clevr_poc.parsing.training_run", "clevr_poc.parsing.reinforce"]
    # importing a module runs its parent packages: clevr_poc.reasoning (its __init__) is reached from a leaf
    assert import_chain("clevr_poc.reasoning.compiled", {"clevr_poc.reasoning"}) == [
        "clevr_poc.reasoning.compiled", "clevr_poc.reasoning"]


def test_cycle_search_on_a_small_graph():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert _strongly_connected(edges) == [["a", "b", "c"]]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_over_600_lines():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in _source_files()}
    too_long = {path: n for path, n in sorted(lengths.items()) if n > MAX_LINES}
    assert too_long == {}, f"modules over {MAX_LINES} lines (split them by job): {too_long}"


def test_module_basenames_are_unique():
    by_name: dict[str, list[str]] = collections.defaultdict(list)
    for path in _source_files():
        if path.name not in ("__init__.py", "__main__.py"):
            by_name[path.name].append(str(path.relative_to(ROOT)))
    repeated = {name: paths for name, paths in sorted(by_name.items()) if len(paths) > 1}
    assert repeated == {}, f"module names used more than once (give each a self-explaining name): {repeated}"


def test_no_import_cycle_between_folders():
    cycles = folder_cycles()
    message = "\n".join(f"cycle between {', '.join(folders)}:\n    " + "\n    ".join(edges)
                        for folders, edges in cycles)
    assert cycles == [], f"import cycles between folders:\n{message}"


def test_inference_never_imports_training():
    chains = {start: import_chain(start, set(TRAINING)) for start in INFERENCE}
    offending = {start: " -> ".join(chain) for start, chain in chains.items() if chain is not None}
    assert offending == {}, f"inference modules that import training code: {offending}"


def test_the_architecture_page_names_every_folder_and_knowledge_file():
    # docs/architecture.md is the map of the house: a new folder or .lp file must appear on it
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    folders = sorted(str(p.parent.relative_to(ROOT)) + "/" for p in PACKAGE.rglob("__init__.py")
                     if p.parent != PACKAGE)
    knowledge = sorted(f"asp/{p.name}" for p in (ROOT / "asp").glob("*.lp"))
    # a folder may be named in full (`clevr_poc/baselines/`) or within its parent (`baselines/clip/`)
    missing = [name for name in folders if f"`{name}" not in page and f"`{name.removeprefix('clevr_poc/')}"
               not in page] + [name for name in knowledge if f"`{name}`" not in page]
    assert missing == [], f"folders / knowledge files not on docs/architecture.md: {missing}"
    assert "](images/architecture.svg)" in page and (ROOT / "docs" / "images" / "architecture.svg").is_file()
