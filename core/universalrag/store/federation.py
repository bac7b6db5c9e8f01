"""Corpora on other PostgreSQL servers: registering one in the home registry, and what that row mirrors.

A remote corpus has two registry rows: the one on its server (where the corpus is local and its table, sources
and units live) and one in the home database with ``server = alias`` and the same description, embedder and
dimension, so routing can list and describe it without contacting that server. :class:`~universalrag.store.Store`
sends every read and write of the corpus to the member store; the functions here keep the two rows in step.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

import sqlalchemy as sa

from ..errors import InvalidInputError, StoreError
from ..types import CorpusSpec
from .schema import Tables


class HomeStore(Protocol):
    """What these functions use of :class:`universalrag.store.Store` (a protocol: no import cycle)."""

    tables: Tables

    def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]: ...
    def corpus(self, name: str) -> CorpusSpec: ...
    def server_of(self, corpus: str) -> str | None: ...
    def member(self, alias: str) -> HomeStore: ...
    def ensure_schema(self) -> None: ...
    def create_corpus(self, spec: CorpusSpec, *, server: str | None = None) -> CorpusSpec: ...
    def drop_corpus(self, name: str) -> bool: ...
    def transaction(
        self, action: str = ..., *, read_only: bool = ...
    ) -> contextlib.AbstractContextManager[sa.Connection]: ...


__all__ = ["HomeStore", "create_remote_corpus", "attach_remote_corpus", "mirror_visual_channel"]


def _same_space(a: CorpusSpec, b: CorpusSpec) -> bool:
    return (a.modality, a.granularity, a.dimension, a.embedder, a.multi_vector, a.parent) == (
        b.modality,
        b.granularity,
        b.dimension,
        b.embedder,
        b.multi_vector,
        b.parent,
    )


def _check_parent(home: HomeStore, spec: CorpusSpec, alias: str) -> None:
    if spec.parent is None:
        return
    parent_server = home.server_of(spec.parent)
    if parent_server != alias:
        raise InvalidInputError(
            f"Corpus {spec.name!r} would live on server {alias!r} but its parent {spec.parent!r} lives "
            f"{'in the home database' if parent_server is None else f'on server {parent_server!r}'}; a corpus and "
            "its parent must share a server (their rows reference each other)."
        )


def _insert_row(home: HomeStore, spec: CorpusSpec, alias: str) -> None:
    c = home.tables.corpora
    with home.transaction(f"register corpus {spec.name!r} on server {alias!r}") as conn:
        conn.execute(
            sa.insert(c).values(
                name=spec.name,
                modality=str(spec.modality),
                granularity=str(spec.granularity),
                description=spec.description,
                embedder=spec.embedder,
                dimension=spec.dimension,
                parent=spec.parent,
                multi_vector=spec.multi_vector,
                builtin=False,
                metadata=dict(spec.metadata),
                created_at=sa.func.now(),
                visual_encoder=spec.visual_encoder,
                visual_dimension=spec.visual_dimension,
                server=alias,
                vector_index=spec.vector_index,  # as the member server built it (read back from its registry)
                vector_index_auto=False,
            )
        )


def create_remote_corpus(home: HomeStore, spec: CorpusSpec, alias: str) -> CorpusSpec:
    """Create ``spec`` on the member server ``alias`` (migrating its schema first) and register it at home.

    A corpus of that name already on the server is adopted when it has the same shape (modality, granularity,
    dimension, embedder, parent); otherwise the call is refused. Nothing is registered at home when the server
    refuses, and the server's new corpus is dropped again when the home registration fails.
    """
    if spec.name in home.corpora(refresh=True):
        raise InvalidInputError(f"A corpus named {spec.name!r} is already registered; choose another name.")
    _check_parent(home, spec, alias)
    member = home.member(alias)
    member.ensure_schema()
    existing = member.corpora(refresh=True).get(spec.name)
    created = existing is None
    if existing is not None and not _same_space(existing, spec):
        raise InvalidInputError(
            f"Server {alias!r} already holds a corpus {spec.name!r} of another shape ({existing.modality}, "
            f"{existing.dimension} dimensions, embedder {existing.embedder!r}); choose another name or attach it "
            "with attach_corpus()."
        )
    if created:
        member.create_corpus(spec)
    try:
        _insert_row(home, existing or member.corpus(spec.name), alias)
    except StoreError:
        if created:
            member.drop_corpus(spec.name)
        raise
    return existing or member.corpus(spec.name)


def attach_remote_corpus(home: HomeStore, name: str, alias: str) -> CorpusSpec:
    """Register at home the corpus ``name`` that already exists on server ``alias`` (its spec is read there)."""
    if name in home.corpora(refresh=True):
        raise InvalidInputError(f"A corpus named {name!r} is already registered; choose another name.")
    spec = home.member(alias).corpus(name)
    _check_parent(home, spec, alias)
    _insert_row(home, spec, alias)
    return spec


def mirror_visual_channel(home: HomeStore, name: str, *, dimension: int, encoder: str) -> None:
    """Record in the home registry the visual channel just added to the remote corpus ``name``."""
    c = home.tables.corpora
    with home.transaction(f"register the visual channel of corpus {name!r}") as conn:
        conn.execute(
            sa.update(c).where(c.c.name == name).values(visual_encoder=encoder, visual_dimension=int(dimension))
        )
