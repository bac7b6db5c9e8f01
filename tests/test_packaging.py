"""Project invariants: public API, package list, README/CI consistency (import direction: test_layering.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import universalrag
from universalrag.config import ENV_VARS

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "core" / "universalrag"


def test_public_api_is_pinned() -> None:
    assert sorted(universalrag.__all__) == sorted(
        [
            "ConfigError",
            "CorpusExistsError",
            "CorpusNotFoundError",
            "CorpusSpec",
            "DimensionMismatchError",
            "Embedder",
            "EmbeddingError",
            "FileOutcome",
            "FilterError",
            "GenerationError",
            "Granularity",
            "Hit",
            "IngestError",
            "IngestReport",
            "MissingDependencyError",
            "Modality",
            "RouteDecision",
            "RoutingError",
            "Settings",
            "SourceRecord",
            "Store",
            "StoreError",
            "Unit",
            "UniversalRAGError",
            "__version__",
            "ingest_paths",
            "make_embedder",
            "search_corpus",
            "Router",
            "TrainedRouter",
            "LLMRouter",
            "EnsembleRouter",
            "ExampleRouter",
            "routing_candidates",
            "Answer",
            "Evidence",
            "EvidenceBudget",
            "IngestOptions",
            "UniversalRAG",
        ]
    )
    for name in universalrag.__all__:
        assert hasattr(universalrag, name), name


def test_every_error_derives_from_the_root() -> None:
    for name in universalrag.__all__:
        obj = getattr(universalrag, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, universalrag.UniversalRAGError), name


def test_every_package_directory_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        "universalrag." + ".".join(p.parent.relative_to(CORE).parts) if p.parent != CORE else "universalrag"
        for p in CORE.rglob("__init__.py")
    }
    assert found <= listed, found - listed


def test_readme_documents_every_variable_and_ci_runs_its_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for var in ENV_VARS:
        assert f"`{var}`" in readme, var
    commands = re.findall(r"```bash\n(.+?)\n```", readme)
    assert len(commands) >= 2 and "torch==2.13.0" in commands[0] and "demo" in commands[0]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines()
