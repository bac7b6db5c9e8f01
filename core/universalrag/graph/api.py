"""The knowledge graph as users see it (``UniversalRAG.graph``, ``universalrag graph``): look things up by
name, walk their neighbourhood, find how two are joined, read the units that name them, count, rebuild, export.

Exports go through networkx (the ``graph`` extra): :meth:`Graph.to_networkx` builds a ``MultiDiGraph`` of a
neighbourhood (or of the first entities of the whole graph, bounded), :meth:`Graph.to_graphml` writes it for Gephi,
Cytoscape or yEd, and :meth:`Graph.draw` draws it to a PNG with matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ..embed.base import Embedder
from ..errors import InvalidInputError, MissingDependencyError
from ..store import Store
from ..types import Hit
from .align import AlignReport
from .model import Extractor
from .records import BuildReport, Entity, GraphStats, Neighbour, WriteCounts
from .records import Path as GraphPath
from .store import GraphStore

__all__ = ["Graph"]

#: Most entities an export holds.
MAX_EXPORT = 5000


def _networkx() -> Any:
    try:
        import networkx  # type: ignore[import-untyped]
    except ImportError as e:
        raise MissingDependencyError("networkx", "graph", feature="exporting the knowledge graph") from e
    return networkx


class Graph:
    """The knowledge graph of a store's schema. The constructor does no I/O."""

    def __init__(self, store: Store, embedder: Embedder | None = None) -> None:
        self.graph_store = GraphStore(store, embedder)

    def entity(self, name: str) -> Entity | None:
        """The entity called ``name`` (by its alignment key or an alias), or ``None``."""
        return self.graph_store.entity(name)

    def entities(self, query: str, *, limit: int = 10) -> list[Entity]:
        """Entities for ``query``: the one named so first, then those whose name holds its words."""
        return self.graph_store.entities(query, limit=limit)

    def neighbours(
        self, name: str | int | Entity, *, hops: int = 1, max_fanout: int = 50, limit: int = 200
    ) -> list[Neighbour]:
        """Entities within ``hops`` (1 to 3) relations of ``name``, nearest first (``[]`` when nothing is called so)."""
        return self.graph_store.neighbours(name, hops=hops, max_fanout=max_fanout, limit=limit)

    def paths(
        self, a: str | int | Entity, b: str | int | Entity, *, max_hops: int = 3, limit: int = 5
    ) -> list[GraphPath]:
        """The shortest chains of relations from ``a`` to ``b``."""
        return self.graph_store.paths(a, b, max_hops=max_hops, limit=limit)

    def units(self, name: str | int | Entity, *, limit: int = 20) -> list[Hit]:
        """The units that are or mention ``name``."""
        entity = name if isinstance(name, Entity) else None
        if entity is None:
            found = self.graph_store.by_ids([name]) if isinstance(name, int) else [self.entity(str(name))]
            entity = found[0] if found and found[0] is not None else None
        return [] if entity is None else self.graph_store.units([entity.id], limit=limit)

    def stats(self) -> GraphStats:
        """How many entities (by type), relations (by kind), mentions and sources the graph holds."""
        return self.graph_store.stats()

    def build(
        self,
        *,
        extractor: Extractor | None = None,
        uris: Iterable[str] | None = None,
        on_source: Callable[[str, WriteCounts], None] | None = None,
        vectors: bool = True,
        align: bool = True,
    ) -> BuildReport:
        """(Re)build the graph of stored sources from their units (default: the structural extractor), then
        (``vectors``) compute the entity vectors that are missing, then (``align``) merge the entities of one type
        whose names mean the same thing (docs/graph.md, "Alignment"; the report's ``merged`` counts them)."""
        from .structural import StructuralExtractor

        return self.graph_store.rebuild(
            extractor or StructuralExtractor(), uris=uris, on_source=on_source, vectors=vectors, align=align
        )

    def align(self) -> AlignReport:
        """Merge the entities of one type whose names mean the same thing (:func:`universalrag.graph.align.same_entity`,
        docs/graph.md "Alignment"); returns what was merged into what."""
        return self.graph_store.align()

    def embed(self, *, limit: int | None = None) -> int:
        """Compute the vectors of the entities that have none (ingestion leaves them to this); returns how many."""
        return self.graph_store.embed_missing(limit=limit)

    # -- export ---------------------------------------------------------------------------------------------
    def _subgraph(self, name: str | int | Entity | None, hops: int, limit: int) -> tuple[list[Entity], int | None]:
        if not 1 <= limit <= MAX_EXPORT:
            raise InvalidInputError(f"limit must be from 1 to {MAX_EXPORT}, got {limit!r}.")
        if name is None:
            e = self.graph_store.tables.entities
            query = sa.select(e.c.id).order_by(e.c.id).limit(limit)
            with self.graph_store.store.transaction("read graph entities", read_only=True) as conn:
                ids = [int(i) for i in conn.execute(query).scalars()]
            return self.graph_store.by_ids(ids), None
        start = name if isinstance(name, Entity) else None
        if start is None:
            found = self.graph_store.by_ids([name]) if isinstance(name, int) else [self.entity(str(name))]
            start = found[0] if found and found[0] is not None else None
        if start is None:
            raise InvalidInputError(f"No entity is called {name!r}; `universalrag graph show` lists near names.")
        reached = self.graph_store.neighbours(start, hops=hops, limit=max(1, limit - 1))
        return [start, *(n.entity for n in reached)], start.id

    def to_networkx(self, name: str | int | Entity | None = None, *, hops: int = 1, limit: int = 500) -> Any:
        """A ``networkx.MultiDiGraph`` of ``name``'s neighbourhood within ``hops`` (or, without ``name``, of the first
        ``limit`` entities), with the relations among its entities: nodes are entity ids with ``name``, ``type``,
        ``description`` and ``centre`` (the entity asked for); edges carry ``keywords`` and ``weight``."""
        nx = _networkx()
        entities, centre = self._subgraph(name, hops, limit)
        out = nx.MultiDiGraph()
        for en in entities:
            out.add_node(en.id, name=en.name, type=en.type, description=en.description, centre=en.id == centre)
        ids = {en.id for en in entities}
        for rel in self.graph_store.relations(sorted(ids), limit=min(10_000, 20 * len(ids))):
            if rel.source in ids and rel.target in ids:
                out.add_edge(rel.source, rel.target, keywords=rel.keywords, weight=rel.weight)
        return out

    def to_graphml(
        self, path: str | Path, name: str | int | Entity | None = None, *, hops: int = 1, limit: int = 500
    ) -> Path:
        """Write :meth:`to_networkx` as GraphML to ``path``; returns the path."""
        nx = _networkx()
        target = Path(path)
        nx.write_graphml(self.to_networkx(name, hops=hops, limit=limit), target)
        return target

    def draw(self, path: str | Path, name: str | int | Entity, *, hops: int = 1, limit: int = 60) -> Path:
        """Draw ``name``'s neighbourhood to a PNG at ``path`` (matplotlib, off-screen); returns the path."""
        nx = _networkx()
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise MissingDependencyError("matplotlib", "graph", feature="drawing the knowledge graph") from e
        g = self.to_networkx(name, hops=hops, limit=limit)
        fig, ax = plt.subplots(figsize=(9, 7))
        pos = nx.spring_layout(nx.Graph(g), seed=7)
        centre = [n for n, d in g.nodes(data=True) if d["centre"]]
        nx.draw_networkx_nodes(g, pos, ax=ax, node_size=260, node_color="#9ecae1")
        nx.draw_networkx_nodes(g, pos, nodelist=centre, ax=ax, node_size=420, node_color="#fd8d3c")
        nx.draw_networkx_edges(g, pos, ax=ax, alpha=0.5, arrows=True, arrowsize=8)
        labels = {n: (d["name"] if len(d["name"]) <= 32 else d["name"][:30] + "…") for n, d in g.nodes(data=True)}
        nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7)
        edge_labels = {(a, b): d["keywords"] for a, b, d in g.edges(data=True) if d["keywords"] != "co_occurs"}
        nx.draw_networkx_edge_labels(g, pos, edge_labels=edge_labels, ax=ax, font_size=6)
        ax.set_axis_off()
        fig.tight_layout()
        target = Path(path)
        fig.savefig(target, dpi=110)
        plt.close(fig)
        return target
