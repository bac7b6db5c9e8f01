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


def test_docs_document_every_variable_and_ci_runs_the_readme_test_command() -> None:
    # the configuration page's table is made from ENV_VARS at build time (docs/_ext/envtable.py); test_docs.py
    # checks that every variable appears in the built page
    assert "```{envtable}" in (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert ENV_VARS
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.+?)\n```", readme)
    assert len(commands) >= 2 and "torch==2.13.0" in commands[0] and "demo" in commands[0]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines()


# -- the three distributions built from this repository ------------------------------------------------------------
DISTRIBUTIONS = {
    "universalrag-postgres": (REPO / "pyproject.toml", CORE),
    "langchain-universalrag": (
        REPO / "integrations" / "langchain" / "pyproject.toml",
        REPO / "integrations" / "langchain" / "langchain_universalrag",
    ),
    "llama-index-retrievers-universalrag": (
        REPO / "integrations" / "llamaindex" / "pyproject.toml",
        REPO / "integrations" / "llamaindex" / "llama_index" / "retrievers" / "universalrag",
    ),
}
FRAMEWORKS = ("langchain-core", "langchain", "langgraph", "llama-index-core", "mcp", "langchain-mcp-adapters")


def _project(pyproject: Path) -> dict:
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))


def _requirements(project: dict) -> list[str]:
    meta = project["project"]
    return [
        *meta.get("dependencies", []),
        *(r for extra in meta.get("optional-dependencies", {}).values() for r in extra),
    ]


def test_the_three_distributions_move_in_step() -> None:
    versions = {name: _project(pyproject)["project"]["version"] for name, (pyproject, _) in DISTRIBUTIONS.items()}
    assert set(versions.values()) == {universalrag.__version__}, versions
    for name in ("langchain-universalrag", "llama-index-retrievers-universalrag"):
        [core] = [
            r for r in _project(DISTRIBUTIONS[name][0])["project"]["dependencies"] if "universalrag-postgres" in r
        ]
        assert f">={universalrag.__version__}," in core and ",<" in core, (name, core)  # this release, not the next


def test_every_distribution_is_typed_and_names_itself() -> None:
    for name, (pyproject, package) in DISTRIBUTIONS.items():
        project = _project(pyproject)
        assert project["project"]["name"] == name
        assert (package / "py.typed").is_file(), package
        data = project["tool"]["setuptools"]["package-data"]
        assert any("py.typed" in files for files in data.values()), name
        assert (pyproject.parent / project["project"]["readme"]).is_file(), name


def test_frameworks_are_bounded_below_their_next_major_version() -> None:
    for name, (pyproject, _) in DISTRIBUTIONS.items():
        for requirement in _requirements(_project(pyproject)):
            package = re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0]
            if package in FRAMEWORKS:
                assert "<" in requirement, (name, requirement)


def test_the_core_ships_no_adapter() -> None:
    project = _project(REPO / "pyproject.toml")
    packages = project["tool"]["setuptools"]["packages"]
    assert all(p == "universalrag" or p.startswith("universalrag.") for p in packages), packages
    assert not {"langchain", "langgraph", "llamaindex"} & set(project["project"]["optional-dependencies"])
    assert not any("universalrag" in r for r in project["project"]["dependencies"])
