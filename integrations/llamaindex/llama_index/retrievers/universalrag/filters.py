"""LlamaIndex ``MetadataFilters`` → the core's filter mapping, so a LlamaIndex user's filters work unchanged.

LlamaIndex code builds filters as ``MetadataFilters(filters=[MetadataFilter(key=..., value=..., operator=...)])``
(``ExactMatchFilter`` is the same class); the core reads a Mongo-style mapping
(:mod:`universalrag.store.filters`). The operators map one to one where the core has an equivalent:

==========================  ==========================================  ==========================================
LlamaIndex                  core                                        note
==========================  ==========================================  ==========================================
``EQ NE GT GTE LT LTE``     ``$eq $ne $gt $gte $lt $lte``               ``$ne`` also keeps units without the key
``IN NIN``                  ``$in $nin``
``CONTAINS``                ``$contains``                               an array field holds the value
``ALL``                     ``$contains`` with the list                 the array field holds every value
``ANY``                     ``$or`` of one ``$contains`` per value      the array field holds one of them
``TEXT_MATCH``              ``$like "%value%"``                         a substring, ``%``/``_`` matched literally
``TEXT_MATCH_INSENSITIVE``  ``$ilike "%value%"``                        the same, ignoring case
``AND OR NOT`` conditions   ``$and $or``, ``$not`` of their ``$and``    as LlamaIndex's Postgres store reads NOT
==========================  ==========================================  ==========================================

``IS_EMPTY`` (and any operator added later) has no equivalent and raises the core's
:class:`~universalrag.errors.FilterError` naming it. A mapping passes through unchanged, but for one key in either
form: ``file_path`` and ``file_name``, which a node shows as its file's path and name, filter on the unit's URI
(:func:`~universalrag.store.filters.paths_as_uris`: a file name matches that file in any folder).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from universalrag.errors import FilterError
from universalrag.store.filters import paths_as_uris

__all__ = ["to_core_filter"]

_SAME: dict[FilterOperator, str] = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.CONTAINS: "$contains",
    FilterOperator.ALL: "$contains",
}


def to_core_filter(filter: Mapping[str, Any] | MetadataFilters | MetadataFilter | None) -> Mapping[str, Any] | None:
    """The core filter mapping for ``filter``: a mapping as it is, LlamaIndex filters converted (module docstring);
    anything else is a :class:`FilterError` saying what is accepted."""
    if filter is None:
        return None
    if isinstance(filter, Mapping):
        return _shown_paths(filter)
    if isinstance(filter, (MetadataFilters, MetadataFilter)):
        return _shown_paths(_filters(filter) if isinstance(filter, MetadataFilters) else _one(filter))
    raise FilterError(
        f"A filter must be a mapping in the core's syntax or LlamaIndex MetadataFilters, got {type(filter).__name__}."
    )


def _shown_paths(filter: Mapping[str, Any]) -> Mapping[str, Any]:
    """``file_path`` and ``file_name``, as nodes show them (:func:`~.base.hit_to_metadata`), as conditions on the
    unit's URI."""
    return paths_as_uris(paths_as_uris(filter, "file_path"), "file_name")


def _filters(filters: MetadataFilters) -> dict[str, Any]:
    parts = [_filters(f) if isinstance(f, MetadataFilters) else _one(f) for f in filters.filters]
    condition = filters.condition or FilterCondition.AND
    if not parts:
        if condition is FilterCondition.NOT:
            raise FilterError("MetadataFilters with condition NOT needs at least one filter to negate.")
        return {}
    if condition is FilterCondition.AND:
        return parts[0] if len(parts) == 1 else {"$and": parts}
    if condition is FilterCondition.OR:
        return parts[0] if len(parts) == 1 else {"$or": parts}
    if condition is FilterCondition.NOT:
        return {"$not": parts[0] if len(parts) == 1 else {"$and": parts}}
    raise FilterError(
        f"The filter condition {condition!r} has no equivalent in universalrag filters; use AND, OR or NOT."
    )


def _one(item: MetadataFilter) -> dict[str, Any]:
    op, key, value = FilterOperator(item.operator), item.key, item.value
    if op in _SAME:
        return {key: {_SAME[op]: value}}
    if op is FilterOperator.ANY:
        values = value if isinstance(value, list) else [value]
        if not values:
            raise FilterError(f"Operator {op.name} on {key!r} needs a non-empty list of values.")
        return {"$or": [{key: {"$contains": v}} for v in values]}
    if op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
        if not isinstance(value, str):
            raise FilterError(f"Operator {op.name} on {key!r} needs a string, got {type(value).__name__}.")
        pattern = "%" + value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return {key: {"$like" if op is FilterOperator.TEXT_MATCH else "$ilike": pattern}}
    raise FilterError(
        f"The LlamaIndex filter operator {op.name} ({op.value!r}) on {key!r} has no equivalent in "
        "universalrag filters; supported: EQ, NE, GT, GTE, LT, LTE, IN, NIN, CONTAINS, ANY, ALL, "
        "TEXT_MATCH, TEXT_MATCH_INSENSITIVE."
    )
