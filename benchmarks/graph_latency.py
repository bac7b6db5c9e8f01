"""A synthetic knowledge graph over synthetic units, for timing route + retrieve with the graph at scale.

``routing_latency.py --graph`` calls :func:`fill_graph` after filling its corpora: one entity per ``units_per_entity``
units (named ``entity 1``, ``entity 2``, ...), plus one for each name the timed questions type ("Chelsea", "Carrow",
"coffee beans", ...), each mentioned by ``mentions_per_entity`` random units of the six corpora, and relations
between random entities (``relations_per_entity`` each, so a walk from a named entity reaches others and their units).
A question naming one of them is walked as the library walks any: the walk statement beside the probes, and the
reached units read when the rule chooses the graph. The lower-case single words among them ("moon", "glacier",
"rocket", "meteors") are entities the questions do not type as names (:func:`universalrag.graph.walk.typed_as_name`):
those questions pay for a walk that finds nothing, as a question naming no entity does. Rows are written through
SQLAlchemy Core in batches; a schema that holds a graph already keeps it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

#: Names the timed questions of ``routing_latency.py`` type, made entities of the synthetic graph.
QUESTION_NAMES = (
    "Chelsea",
    "Carrow",
    "March 2024",
    "moon",
    "glacier",
    "coffee beans",
    "library books",
    "rocket",
    "meteors",
    "night sky photography",
)


def fill_graph(
    store: Any,
    corpora: Sequence[str],
    *,
    units_per_entity: int = 5,
    mentions_per_entity: int = 4,
    relations_per_entity: int = 3,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> dict[str, int]:
    """Write the synthetic graph (see the module docstring) unless the schema holds one; its row counts."""
    import numpy as np
    import sqlalchemy as sa

    from universalrag.graph.model import normalise_key
    from universalrag.store.graph_tables import graph_tables

    t = graph_tables(store.schema)
    with store.transaction("count the graph") as conn:
        held = conn.execute(sa.select(sa.func.count()).select_from(t.mentions)).scalar_one()
    if held:
        return {"mentions": int(held)}
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    units: list[tuple[str, str]] = []
    with store.transaction("read unit ids") as conn:
        for corpus in corpora:
            table = store.tables.corpus(store.corpus(corpus)).units
            units += [(corpus, str(i)) for (i,) in conn.execute(sa.select(table.c.id))]
    n = max(len(QUESTION_NAMES), len(units) // units_per_entity)
    names = [*QUESTION_NAMES, *(f"entity {i}" for i in range(1, n - len(QUESTION_NAMES) + 1))]
    with store.transaction("write a synthetic graph") as conn:
        ids: list[int] = []
        for start in range(0, len(names), 5000):
            chunk = names[start : start + 5000]
            rows = conn.execute(
                sa.insert(t.entities)
                .values([{"key": normalise_key(x), "name": x, "type": "concept", "description": ""} for x in chunk])
                .returning(t.entities.c.id)
            )
            ids += [int(r[0]) for r in rows]
        picks = rng.integers(0, len(units), size=(len(ids), mentions_per_entity))
        mentions = [
            {"entity_id": e, "corpus": units[u][0], "unit_id": units[u][1], "role": "mention", "weight": 1.0}
            for e, row in zip(ids, picks.tolist(), strict=True)
            for u in row
        ]
        for start in range(0, len(mentions), 5000):
            conn.execute(sa.insert(t.mentions), mentions[start : start + 5000])
        others = rng.integers(0, len(ids), size=(len(ids), relations_per_entity))
        relations = [
            {"source_entity": e, "target_entity": ids[o], "keywords": "co_occurs", "description": "", "weight": 1.0}
            for e, row in zip(ids, others.tolist(), strict=True)
            for o in row
            if ids[o] != e
        ]
        for start in range(0, len(relations), 5000):
            conn.execute(sa.insert(t.relations), relations[start : start + 5000])
    counts = {"entities": len(ids), "mentions": len(mentions), "relations": len(relations)}
    log(f"wrote a synthetic graph in {time.perf_counter() - started:.0f} s: {counts}")
    return counts
