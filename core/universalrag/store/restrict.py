"""Row-level restriction of a corpus: metadata keys every search must filter on (a tenant id, an ACL group).

A corpus whose registry metadata names ``require_filter`` keys (``attach_table(..., require_filter =>
ARRAY['tenant_id'])``) refuses a search whose filter does not pin each key to a value or a list of values, at the
top level or inside a top-level ``$and``. The filter itself is compiled into the search's SQL ``WHERE`` (on every
path: single-vector, multi-vector, visual fusion and full-text), and a filtered search runs with pgvector's
iterative index scan, so ``k`` permitted hits still come back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import FilterError
from ..types import CorpusSpec

__all__ = ["required_filter_keys", "check_required_filter"]


def required_filter_keys(spec: CorpusSpec) -> tuple[str, ...]:
    """The metadata keys a search of ``spec`` must filter on (none for most corpora)."""
    keys = (spec.metadata or {}).get("require_filter") or ()
    return tuple(str(k) for k in keys) if isinstance(keys, (list, tuple)) else (str(keys),)


def _pins(condition: Any) -> bool:
    if isinstance(condition, (str, int, float, bool)):
        return True
    if isinstance(condition, Mapping) and condition:
        eq = condition.get("$eq")
        values = condition.get("$in")
        return isinstance(eq, (str, int, float, bool)) or (
            isinstance(values, (list, tuple))
            and bool(values)
            and all(isinstance(v, (str, int, float, bool)) for v in values)
        )
    return False


def _pinned(filter: Mapping[str, Any], key: str) -> bool:
    if key in filter and _pins(filter[key]):
        return True
    parts = filter.get("$and")
    return isinstance(parts, (list, tuple)) and any(isinstance(p, Mapping) and _pinned(p, key) for p in parts)


def check_required_filter(spec: CorpusSpec, filter: Mapping[str, Any] | None) -> None:
    """Raise :class:`FilterError` unless ``filter`` pins every key ``spec`` requires."""
    for key in required_filter_keys(spec):
        if not isinstance(filter, Mapping) or not _pinned(filter, key):
            raise FilterError(
                f"Corpus {spec.name!r} is restricted by {key!r}: pass a filter that pins it, for example "
                f"filter={{{key!r}: VALUE}} or {{{key!r}: {{'$in': [VALUE, ...]}}}}."
            )
