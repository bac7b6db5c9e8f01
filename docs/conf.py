"""Sphinx configuration of the documentation site: the user guide (Markdown, read by MyST-Parser) and the API
reference (autodoc, from the docstrings of the public API).

Build it as CI does: ``sphinx-build -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "UniversalRAG for Postgres"
author = "The UniversalRAG for Postgres authors"
copyright = "2026, the UniversalRAG for Postgres authors"  # noqa: A001 - Sphinx's name

try:
    from universalrag import __version__ as release
except ImportError:  # the guide still builds without the package; the API pages then fail loudly
    release = "unknown"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "envtable",
    "apiref",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
nitpicky = True  # every cross-reference must resolve (see nitpick_ignore_regex below and docs/_ext/apiref.py)
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = "UniversalRAG for Postgres"
html_static_path: list[str] = []

# -- API reference -----------------------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "show-inheritance": True}
python_use_unqualified_type_names = True

#: The modules the API reference documents (docs/api/<module>.md), in the order that decides where an object
#: re-exported by several of them is described: the first that lists it in ``__all__`` (docs/_ext/apiref.py).
apiref_modules = [
    "universalrag",
    "universalrag.types",
    "universalrag.errors",
    "universalrag.config",
    "universalrag.plan",
    "universalrag.evidence",
    "universalrag.fusion",
    "universalrag.spelling",
    "universalrag.exact_terms",
    "universalrag.adapt",
    "universalrag.store",
    "universalrag.embed",
    "universalrag.ingest",
    "universalrag.routing",
    "universalrag.retrieve",
    "universalrag.generate",
    "universalrag.eval",
    "universalrag.sync",
    "universalrag.graph",
    "universalrag.mcp",
    "langchain_universalrag",
    "langchain_universalrag.graph",
    "llama_index.retrievers.universalrag",
]

#: The packages the reference describes; their other modules are internal (named as text, never linked).
apiref_packages = ["universalrag", "langchain_universalrag", "llama_index.retrievers.universalrag"]

# Types of other libraries have no inventory here (the build is offline), so references to them are not links;
# each pattern names one library.
nitpick_ignore_regex = [
    ("py:.*", r"(collections\.abc|abc|_thread|pathlib|enum|concurrent\.futures|typing|datetime|threading|asyncio)\..*"),
    (
        "py:.*",
        r"(numpy|np|sqlalchemy|sa|psycopg|langchain_core|langchain|langgraph|llama_index\.core|PIL|PILImage)\..*",
    ),
    ("py:.*", r"(Path|Callable|Iterator|Iterable|Sequence|Mapping|Any)"),
    # the frameworks' own classes, as the adapters' signatures name them
    ("py:class", r"(BaseModel|Embeddings|BaseChatModel|MetadataFilters|CallbackManager)"),
    # private names (a leading underscore) are not part of the documented API
    ("py:.*", r"(.*\.)?_[A-Za-z]\w*"),
]
