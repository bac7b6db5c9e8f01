"""Every HNSW index of the corpora is built with a candidate list of 128 (migration 0011).

Real PostgreSQL + pgvector: the built-in corpora of a new schema (units and parts), a corpus created straight from
SQL, a visual channel; indexes that existed before the upgrade get the option, and a downgrade takes it back.
"""

from __future__ import annotations

import numpy as np
import sqlalchemy as sa

from universalrag.store import Store
from universalrag.types import CorpusSpec, Unit

MIGRATION = __import__("importlib").import_module("universalrag.migrations.versions.0011_hnsw_build")


def _hnsw_options(store: Store) -> dict[str, str | None]:
    """``{index name: its reloptions joined, or None}`` for every HNSW index of the store's schema."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT c.relname, array_to_string(c.reloptions, ',') FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
                "WHERE n.nspname = :s AND a.amname = 'hnsw'"
            ),
            {"s": store.schema},
        ).all()
    return dict(rows)  # type: ignore[arg-type]


WIDE = f"ef_construction={MIGRATION.EF_CONSTRUCTION}"


def test_new_corpora_build_every_hnsw_index_with_the_wider_list(store: Store) -> None:
    with store.engine.connect() as conn, conn.begin():
        conn.execute(
            sa.text(f'SELECT "{store.schema}".create_corpus(:n, :m, :g, :d, p_multi_vector => true)'),
            {"n": "handbooks", "m": "text", "g": "document", "d": 8},
        )
    store.add_visual_channel("image", dimension=4, encoder="tiny")
    options = _hnsw_options(store)
    expected = {
        "corpus_paragraph_hnsw",
        "corpus_table_parts_hnsw",
        "corpus_handbooks_hnsw",
        "corpus_handbooks_parts_hnsw",
        "corpus_image_visual_hnsw",
    }
    assert expected <= set(options), sorted(options)
    assert MIGRATION.EF_CONSTRUCTION > 64  # wider than pgvector's default
    assert {name: value for name, value in options.items() if value != WIDE} == {}


def test_an_upgrade_gives_existing_indexes_the_option_and_a_downgrade_takes_it_back(store: Store) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3, 384)).astype(np.float32)
    store.add_units(
        [
            Unit(id=f"00000000-0000-0000-0000-00000000000{i}", corpus="paragraph", content=f"row {i}", embedding=v)
            for i, v in enumerate(vectors)
        ]
    )
    store.downgrade("0010")
    assert set(_hnsw_options(store).values()) == {None}  # as pgvector's default builds them
    store.create_corpus(CorpusSpec(name="notes", modality="text", granularity="paragraph", dimension=384))
    assert _hnsw_options(store)["corpus_notes_hnsw"] is None  # the function of revision 0010: the default list
    store.migrate()
    options = _hnsw_options(store)
    assert "corpus_notes_hnsw" in options and set(options.values()) == {WIDE}
    hits = store.search("paragraph", vectors[1].tolist(), k=1)  # the index still answers (nothing was rebuilt)
    assert [h.content for h in hits] == ["row 1"]
    with store.engine.connect() as conn:  # the replaced functions kept their own search_path (revision 0010)
        config = conn.execute(
            sa.text(
                "SELECT array_to_string(p.proconfig, ',') FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = :s AND p.proname = 'create_corpus'"
            ),
            {"s": store.schema},
        ).scalar_one()
    assert config.startswith("search_path=") and config.endswith("pg_catalog, pg_temp"), config
