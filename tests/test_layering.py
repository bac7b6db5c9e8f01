"""Guards on the shape of the code: imports point one way (DESIGN: types/errors ← store, embed, generate ←
routing, ingest, retrieve ← pipeline ← cli), no import cycle anywhere in the core or the adapters, the core never
imports an LLM framework, and no private helper is imported across modules.

Every import counts — module level and inside functions (a lazy import still couples two modules); imports
under ``if TYPE_CHECKING:`` count for cycles but not for the direction of layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = {
    "universalrag": REPO / "core" / "universalrag",
    "langchain_universalrag": REPO / "integrations" / "langchain" / "langchain_universalrag",
    "llama_index.retrievers.universalrag": REPO
    / "integrations"
    / "llamaindex"
    / "llama_index"
    / "retrievers"
    / "universalrag",
}

#: The rank of each top-level part of the core. A module may import parts of a lower rank, and its own part;
#: never a part of the same or a higher rank. ``universalrag/__init__.py`` only re-exports and is exempt.
RANK: dict[str, float] = {
    "errors": 0,
    "types": 1,
    "dates": 1,
    "framing": 1,  # retrieved text framed as data for a model
    "config": 2,
    "fusion": 2,
    "exact_terms": 2,
    "spelling": 2,
    "openai_client": 3,
    "media": 3,
    "store": 3,
    "embed": 4,
    "decision_log": 4,
    "generate": 4,
    "plan": 5,
    "evidence": 5,
    "ingest": 6,
    "routing": 6,
    "graph": 6.5,  # the knowledge graph: above ingest and routing, below retrieve and the facade
    "retrieve": 7,
    "adapt": 7,
    "pipeline": 8,
    "sync": 9,
    "demo": 9,
    "eval": 9,
    "serve": 10,
    "mcp": 10,  # universalrag mcp's server: the facade's tools for MCP clients
    "cli": 11,
}


def _module_name(root: str, base: Path, path: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([root, *parts])


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for root, base in ROOTS.items():
        for path in base.rglob("*.py"):
            out[_module_name(root, base, path)] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, *, typing_only: bool) -> Iterator[ast.AST]:
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not typing_only and isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def imports_of(name: str, *, typing_only: bool = False) -> set[tuple[str, tuple[str, ...]]]:
    """(module imported, names taken from it) for every runtime import in module ``name`` (with
    ``typing_only``, also those under ``if TYPE_CHECKING:``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[tuple[str, tuple[str, ...]]] = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8")), typing_only=typing_only):
        if isinstance(node, ast.Import):
            out.update((a.name, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add((target, tuple(a.name for a in node.names)))
    return out


def _edges(name: str, *, typing_only: bool = False) -> set[str]:
    """The project modules that importing ``name`` executes directly (a submodule named in ``from pkg import
    sub`` counts as that submodule)."""
    out: set[str] = set()
    for target, names in imports_of(name, typing_only=typing_only):
        subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
        if subs:
            out.update(subs)
            if len(subs) < len(names) and target in MODULES:
                out.add(target)
        elif target in MODULES:
            out.add(target)
    out.discard(name)
    return out


GRAPH = {name: _edges(name) for name in MODULES}
#: With the imports that only type checkers run: two modules that name each other's types are one unit too.
TYPED_GRAPH = {name: _edges(name, typing_only=True) for name in MODULES}


def _part(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "universalrag" and len(parts) > 1 else None


def test_every_top_level_part_of_the_core_has_a_rank() -> None:
    parts = {p for name in MODULES if (p := _part(name)) is not None}
    assert parts <= set(RANK), f"give these a rank in RANK: {sorted(parts - set(RANK))}"


def test_imports_point_one_way() -> None:
    wrong = []
    for name, targets in GRAPH.items():
        part = _part(name)
        if part is None:
            continue
        for target in targets:
            other = _part(target)
            if other is None or other == part:
                continue
            if RANK[other] >= RANK[part]:
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over the module graph, type-checking imports included; any
    component of two or more is a cycle. A package's ``__init__`` importing its own submodules is not a cycle
    unless a submodule imports the package back."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # recursion depth is bounded by the module count (~150)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in TYPED_GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in TYPED_GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)


def test_the_core_never_imports_an_llm_framework() -> None:
    for name in MODULES:
        if not name.startswith("universalrag"):
            continue
        for target, _ in imports_of(name):
            assert not target.startswith(("langchain", "llama_index", "langgraph")), (name, target)


def test_adapters_import_only_the_public_api() -> None:
    """The adapters use what ``universalrag`` and its documented subpackages export, never a private name."""
    for name in MODULES:
        if name.startswith("universalrag"):
            continue
        for target, names in imports_of(name):
            if target.startswith("universalrag"):
                assert not any(n.startswith("_") for n in names), (name, target, names)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_helper_is_imported_across_modules(name: str) -> None:
    own_package = name.rpartition(".")[0]
    for target, names in imports_of(name):
        if not target.startswith(("universalrag", "langchain_universalrag", "llama_index.retrievers.universalrag")):
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        # a package's own __init__ may gather private names of its modules; nobody else may
        assert not private or (MODULES[name].name == "__init__.py" and target.startswith(own_package)), (
            f"{name} imports private {private} from {target}"
        )
