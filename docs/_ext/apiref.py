"""Where the API reference describes each object, and how docstrings' references find it.

- An object re-exported by several documented modules is described once, on the page of the first module of
  ``apiref_modules`` that lists it in ``__all__``; the other pages leave it out (``autodoc-skip-member``).
- A Python reference that Sphinx cannot resolve by itself (``missing-reference``) is resolved through Python's
  imports: a name given by its defining module (``universalrag.store.Store``), a bare name (``ConfigError``), a
  method inherited from a documented base, or a name imported only under ``TYPE_CHECKING``. A reference to an
  internal module of ``apiref_packages`` (or to what it defines) is shown as text, and only when the name exists,
  so a misspelt reference still fails a build run with ``-W``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

from docutils.utils import get_source_line

_HOME: dict[int, str] = {}
_PACKAGES: list[tuple[str, ...]] = [()]


def _home_of_every_object(app: Any) -> None:
    _PACKAGES[0] = tuple(app.config.apiref_packages)
    for name in app.config.apiref_modules:
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
        if full.startswith(tuple(p + "." for p in _PACKAGES[0])) and _exists(full):
            return contnode
    if "." not in target and target in _defined_names():  # an annotation naming one of our internal classes
        return contnode
    return None


@functools.cache
def _type_checking_imports() -> dict[str, str]:
    """``{name: dotted path}`` of what our modules import under ``if TYPE_CHECKING:`` (an annotation may name such
    an import, which does not exist at run time), when every module agrees on what the name stands for."""
    found: dict[str, set[str]] = {}
    for package in _PACKAGES[0]:
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
    for package in _PACKAGES[0]:
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


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("apiref_modules", [], "env")
    app.add_config_value("apiref_packages", [], "env")
    app.connect("builder-inited", _home_of_every_object)
    app.connect("autodoc-skip-member", _skip_described_elsewhere)
    app.connect("missing-reference", _resolve_elsewhere)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
