"""Sphinx configuration of the documentation site: the user guide (Markdown, read by MyST-Parser) and the API
reference (autodoc, from the docstrings of the public API).

Build it as CI does: ``sphinx-build -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

from docutils.utils import get_source_line

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
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
nitpicky = True  # every cross-reference must resolve (see nitpick_ignore_regex and _resolve_elsewhere below)
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

#: The modules the API reference documents, in the order that decides where an object re-exported by several of
#: them is described (the first that lists it in ``__all__``); the others leave it out and link to it.
API_MODULES = [
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

_HOME: dict[int, str] = {}

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


def _home_of_every_object() -> None:
    for name in API_MODULES:
        module = importlib.import_module(name)
        for member in getattr(module, "__all__", ()):
            obj = getattr(module, member, None)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                _HOME.setdefault(id(obj), name)


def _skip_described_elsewhere(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """Describe an object re-exported by several modules once, on the page of the first module in API_MODULES."""
    if what != "module" or id(obj) not in _HOME:
        return None
    docname = app.env.docname  # the API pages are named after the module they describe: api/<module>
    documenting = docname.split("/", 1)[1] if docname.startswith("api/") else None
    if documenting and _HOME[id(obj)] != documenting:
        return True
    return None


def _import(dotted: str) -> tuple[Any, list[str]] | None:
    """The outermost class or function that ``dotted`` names through Python's imports, and the attributes after it
    (``universalrag.store.Store.settle`` -> Store, ["settle"])."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - a module that fails to import is not described here
            continue
        for i, part in enumerate(parts[cut:], start=cut):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
            if inspect.isclass(obj) or inspect.isfunction(obj):
                return obj, parts[i + 1 :]
        return None
    return None


#: The packages this reference describes; their other modules are internal.
OURS = ("universalrag", "langchain_universalrag", "llama_index.retrievers.universalrag")


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` names a module or an attribute reached from one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - a module that fails to import is not described here
            continue
        for part in parts[cut:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def _internal_as_text(node: Any, target: str, prefixes: list[str], contnode: Any) -> Any:
    """A reference to an internal module of ours (or to what it defines) is shown as text: those modules are
    described in their source, not here. The name must exist, so a misspelt reference still fails the build."""
    source = re.search(r"docstring of ([\w.]+)", str(get_source_line(node)[0] or ""))
    defining = source[1].split(".") if source else []
    prefixes = prefixes + [".".join(defining[:i]) + "." for i in range(len(defining), 0, -1)]
    for prefix in prefixes:
        full = prefix + target
        if full.startswith(tuple(p + "." for p in OURS)) and _exists(full):
            return contnode
    if "." not in target and target in _defined_names():  # an annotation naming one of our internal classes
        return contnode
    return None


@functools.cache
def _type_checking_imports() -> dict[str, str]:
    """``{name: dotted path}`` of what our modules import under ``if TYPE_CHECKING:`` (an annotation may name such
    an import, which does not exist at run time), when every module agrees on what the name stands for."""
    found: dict[str, set[str]] = {}
    for package in OURS:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            spec = importlib.util.find_spec(info.name)
            if spec is None or not spec.origin or not spec.origin.endswith(".py"):
                continue
            tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
            base = info.name if info.ispkg else info.name.rpartition(".")[0]
            for block in ast.walk(tree):
                if not (isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)):
                    continue
                for node in block.body:
                    if isinstance(node, ast.ImportFrom):
                        module = node.module or ""
                        if node.level:
                            parent = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                            module = f"{parent}.{module}" if module else parent
                        for alias in node.names:
                            found.setdefault(alias.asname or alias.name, set()).add(f"{module}.{alias.name}")
    return {name: next(iter(paths)) for name, paths in found.items() if len(paths) == 1}


@functools.cache
def _defined_names() -> frozenset[str]:
    """Names our modules bind at their top level (classes, functions, type aliases, constants), left out what they
    import from other libraries; only the modules that import without an extra."""
    names: set[str] = set()
    for package in OURS:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if info.name.endswith(".__main__"):  # running it is what importing it does
                continue
            try:
                module = importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - a module that fails to import is not described here
                continue
            names.update(
                name
                for name, obj in vars(module).items()
                if not inspect.ismodule(obj)
                and getattr(obj, "__module__", module.__name__) in (module.__name__, "typing", "collections.abc")
            )
    return frozenset(names)


def _resolve_elsewhere(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a Python reference to the page that describes the object it names.

    A docstring may name an object by the module that defines it (``universalrag.store.Store``) or by its bare
    name (``ConfigError``); the reference describes it once, under the module that exports it. First the name is
    imported and looked up where the object is described; else a bare name is resolved when exactly one described
    object bears it.
    """
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"].lstrip("~.")
    context = [node.get("py:module"), node.get("py:class")]
    prefixes = [""] + [p + "." for p in filter(None, [context[0], ".".join(filter(None, context))])]
    candidates: list[str] = []
    if target in _type_checking_imports():  # an annotation naming what a module imports only for type checkers
        target = _type_checking_imports()[target]
    for prefix in prefixes:
        found = _import(prefix + target)
        if found is not None:
            obj, rest = found
            owners = [obj]
            if rest and inspect.isclass(obj):  # a method is described on the class that defines it
                owners = [c for c in obj.__mro__ if rest[0] in vars(c)] + owners
            for owner in owners:
                home = _HOME.get(id(owner))
                if home is not None:
                    candidates.append(".".join([home, owner.__name__, *rest]))
    kinds = domain.objtypes_for_role(node["reftype"]) or []
    candidates = [name for name in candidates if name in domain.objects and domain.objects[name].objtype in kinds]
    if not candidates:
        ends = {
            (e.docname, e.node_id): name
            for name, e in domain.objects.items()
            if name.endswith("." + target) and not e.aliased and e.objtype in kinds
        }
        if len(ends) == 1:
            candidates = list(ends.values())
    if not candidates:
        return _internal_as_text(node, target, prefixes, contnode)
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], candidates[0], node, contnode)


def setup(app: Any) -> None:
    _home_of_every_object()
    app.connect("autodoc-skip-member", _skip_described_elsewhere)
    app.connect("missing-reference", _resolve_elsewhere)
