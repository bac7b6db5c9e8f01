"""The shape of ingestion, checked from the source: media below ingest, no cycles, no private imports."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core" / "universalrag"


def _module(path: Path) -> str:
    parts = ("universalrag", *path.relative_to(CORE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import of ``path``, relative ones resolved."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.append((module, [a.name for a in node.names]))
    return out


INGEST = sorted((CORE / "ingest").rglob("*.py"))
MODULES = {_module(p): p for p in [*INGEST, CORE / "media.py", CORE / "evidence.py"]}


def _edges(module: str) -> set[str]:
    found = set()
    for target, names in _imports(MODULES[module]):
        found.update(t for t in [target, *(f"{target}.{n}" for n in names)] if t in MODULES and t != module)
    return found


def test_media_and_evidence_import_nothing_from_ingest() -> None:
    for name in ("universalrag.media", "universalrag.evidence"):
        imported = [m for m, _ in _imports(MODULES[name])]
        assert not [m for m in imported if m.startswith("universalrag.ingest")], name
    assert {m for m, _ in _imports(MODULES["universalrag.media"]) if m.startswith("universalrag")} == {
        "universalrag.errors"
    }


def test_no_private_name_is_imported_across_modules() -> None:
    for path in [*INGEST, CORE / "media.py", CORE / "evidence.py"]:
        for module, names in _imports(path):
            if module.startswith("universalrag"):
                assert not [n for n in names if n.startswith("_")], (path, module)


def test_ingest_modules_form_no_import_cycle() -> None:
    graph = {m: _edges(m) for m in MODULES}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, " -> ".join([*trail, node, nxt])
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
