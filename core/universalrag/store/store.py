"""The Store: owns the engine and every SQL statement; translates driver errors into typed store errors."""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import JSONB

from ..config import Settings, redact_url, validate_schema_name
from ..errors import (
    CorpusNotFoundError,
    InvalidInputError,
    StoreError,
)
from ..types import BUILTIN_CORPORA, CorpusSpec, Hit, Partitioning
from . import federation, migrate, queries
from .corpus_search import CorpusQuery, hit_from_row
from .engine import make_engine
from .member_servers import ServerPool
from .partitions import partitioning_refused
from .placement import Placement
from .schema import Tables
from .search_methods import Searching
from .sources import Sources, WriteResult
from .translate import INSUFFICIENT_PRIVILEGE, sqlstate, store_error
from .vector_index import VectorIndexes
from .vectors import vector_index_of

__all__ = ["MIN_PGVECTOR", "REGISTRY_TTL_S", "CorpusQuery", "ServerInfo", "Store", "WriteResult"]

_T = TypeVar("_T")

MIN_PGVECTOR = (0, 7, 0)
#: How long (seconds) the corpus registry is reused before it is read again: a long-lived process (``universalrag
#: serve``, an agent) sees a corpus that another process created, or an index check it measured, within this time.
REGISTRY_TTL_S = 2.0


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("-")[0].split(".")[:3] if p.isdigit())


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the connected server runs."""

    url: str  # password redacted
    postgres: str
    pgvector: str | None


def _disposed_with(owner: object, engine: sa.Engine) -> sa.Engine:
    """``engine``, disposed when ``owner`` is collected or the interpreter exits (whichever comes first), so that a
    script that never calls :meth:`Store.close` ends without psycopg's "deleted while still open" warnings, one per
    pooled connection (an agent user's script printed four)."""
    weakref.finalize(owner, engine.dispose)
    return engine


class Store(Placement, Sources, Searching, VectorIndexes):
    """Corpora, sources and units in one Postgres schema.

    ``url=None`` starts (or joins) the embedded server under ``settings.home_dir`` on the first call that
    needs the database (or :meth:`resolve_url`). The constructor does no I/O; nor does any property.

    Scale-out (docs/scaling.md): with ``read_url`` (default ``settings.read_database_url``, a replica) searches
    and unit reads go there while writes and the registry stay on the primary. A corpus created with
    ``create_corpus(spec, server="alias")`` lives on another server (``settings.servers``); every method sends
    that corpus's reads and writes to the :meth:`member` store of its server, so callers see one store.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        schema: str | None = None,
        settings: Settings | None = None,
        engine: sa.Engine | None = None,
        read_url: str | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self._url = url if url is not None else self.settings.database_url
        self._embedded = False  # whether _url is the embedded server's (set by resolve_url)
        self._read_url = read_url if read_url is not None else self.settings.read_database_url
        self._read_engine: sa.Engine | None = None
        self._where: dict[str, str] = {}  # remote corpus -> server alias (from the registry), see Placement
        self._members: ServerPool[Store] = ServerPool(self._member_store, Store.close)
        self.schema = validate_schema_name(schema or self.settings.schema)
        self.tables = Tables(self.schema)
        self._engine = engine
        self._owns_engine = engine is None
        self._specs: dict[str, CorpusSpec] | None = None
        self._specs_read = 0.0  # when the registry was last read (time.monotonic())
        self._pgvector: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"Store(url={self.url_redacted!r}, schema={self.schema!r})"

    # -- connection -----------------------------------------------------------------------------------------
    @property
    def url(self) -> str | None:
        """The database URL: the configured one, or the embedded server's once :meth:`resolve_url` (or the
        first connection) has started it; ``None`` before that. Never starts anything itself."""
        return self._url

    def resolve_url(self) -> str:
        """The database URL, starting (or joining) the embedded server when none is configured."""
        if self._url is None:
            from .embedded import embedded_url

            self._url = embedded_url(self.settings.home_dir)
            self._embedded = True
        return self._url

    @property
    def url_redacted(self) -> str:
        """The URL with its password hidden (safe to print). The embedded server's is shown whole: it holds no
        password, and its socket directory is what another client needs to reach it."""
        if self._embedded and self._url is not None:
            return self._url
        return redact_url(self._url) or "embedded"

    @property
    def engine(self) -> sa.Engine:
        """The SQLAlchemy engine (created on first use)."""
        if self._engine is None:
            self._engine = _disposed_with(
                self, make_engine(self.resolve_url(), connect_timeout=self.settings.connect_timeout)
            )
        return self._engine

    @property
    def read_engine(self) -> sa.Engine:
        """The engine for searches: the read-only URL's (a replica) when one is configured, else :attr:`engine`."""
        if self._read_url is None:
            return self.engine
        if self._read_engine is None:
            self._read_engine = _disposed_with(
                self, make_engine(self._read_url, connect_timeout=self.settings.connect_timeout)
            )
        return self._read_engine

    def close(self) -> None:
        """Release pooled connections (the embedded server stops when the last process using it exits)."""
        self._members.close()
        if self._read_engine is not None:
            self._read_engine.dispose()
            self._read_engine = None
        if self._engine is not None and self._owns_engine:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _translate(self, action: str, url: str | None = None) -> Iterator[None]:
        try:
            yield
        except (sa_exc.DBAPIError, psycopg.Error) as e:  # psycopg's own errors come from COPY
            self._specs = None  # a corpus may have been dropped behind our back: re-read the registry next time
            shown = redact_url(url) if url else self.url_redacted
            if isinstance(getattr(e, "orig", e), psycopg.errors.ConnectionTimeout):
                raise StoreError(
                    f"Could not {action}: the database at {shown} did not answer within "
                    f"{self.settings.connect_timeout:g} s (UNIVERSALRAG_CONNECT_TIMEOUT); check that the server is "
                    "running and that UNIVERSALRAG_DATABASE_URL names it."
                ) from e
            raise store_error(e, action, shown) from e

    def _read(self, action: str, fn: Callable[[sa.Connection], _T], *, read_only: bool = False) -> _T:
        """``fn(conn)`` in one read transaction, run once more when the connection died under it (a server
        restart or failover ends every open connection; the pool's pre-ping then opens a fresh one). Reads
        only: a write is never repeated behind the caller's back. ``read_only`` as for :meth:`transaction`."""
        try:
            with self.transaction(action, read_only=read_only) as conn:
                return fn(conn)
        except StoreError as e:
            if not (isinstance(e.__cause__, sa_exc.DBAPIError) and e.__cause__.connection_invalidated):
                raise
        with self.transaction(action, read_only=read_only) as conn:
            return fn(conn)

    @contextlib.contextmanager
    def transaction(self, action: str = "run a query", *, read_only: bool = False) -> Iterator[sa.Connection]:
        """A connection inside one transaction (committed on success, rolled back on error); driver errors
        become :class:`StoreError` saying what ``action`` failed. ``read_only=True`` runs it on the read URL
        (a replica) when one is configured: only for statements that write nothing."""
        replica = read_only and self._read_url is not None
        with (
            self._translate(action, self._read_url if replica else None),
            (self.read_engine if replica else self.engine).begin() as conn,
        ):
            yield conn

    def ensure_schema(self) -> None:
        """Check pgvector and migrate the schema to the newest revision (no built-in corpora are created)."""
        with self.transaction() as conn:
            self._check_pgvector(conn)
        try:
            with self.transaction("migrate the schema") as conn:
                migrate.upgrade(conn, self.schema)
        except StoreError as e:
            if sqlstate(e) == INSUFFICIENT_PRIVILEGE:
                raise StoreError(
                    f"{e} This database user lacks a privilege the schema needs: creating the pgvector extension "
                    "takes a superuser (ask one to run `CREATE EXTENSION vector;` in this database), creating the "
                    "schema takes CREATE on the database. Then run `universalrag init` again."
                ) from e
            raise
        self._engine_register_vector()

    # -- schema ---------------------------------------------------------------------------------------------
    def server_info(self) -> ServerInfo:
        """PostgreSQL and pgvector versions of the connected server."""

        def read(conn: sa.Connection) -> tuple[Any, Any]:
            postgres = conn.execute(sa.select(sa.func.current_setting("server_version"))).scalar_one()
            vector = conn.execute(
                sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            ).scalar_one_or_none()
            return postgres, vector

        postgres, vector = self._read("read the server's version", read)
        return ServerInfo(url=self.url_redacted, postgres=str(postgres), pgvector=vector)

    def _check_pgvector(self, conn: sa.Connection) -> None:
        row = conn.execute(
            sa.text("SELECT default_version, installed_version FROM pg_available_extensions WHERE name = 'vector'")
        ).first()
        if row is None:
            raise StoreError(
                "The PostgreSQL server has no pgvector extension; install pgvector 0.7 or newer on the server "
                "(or unset UNIVERSALRAG_DATABASE_URL to use the embedded server, which includes it)."
            )
        version = row.installed_version or row.default_version
        if _version_tuple(version) < MIN_PGVECTOR:
            raise StoreError(
                f"The server's pgvector is {version}, older than 0.7; upgrade it (ALTER EXTENSION vector UPDATE)."
            )

    def init(self, *, embedder: str, dimension: int) -> list[str]:
        """Migrate the schema to the newest revision, create the built-in corpora that are missing, give the knowledge
        graph's vector columns the text embedder's width ``dimension`` (when they have none yet) and settle the
        corpora's full-text indexes (:meth:`settle`: a schema written by an earlier version may hold pending entries
        that no autovacuum will merge).

        Idempotent. Returns the names of the corpora it created.
        """
        self.ensure_schema()
        created = []
        existing = self.corpora(refresh=True)
        parents_first = sorted(BUILTIN_CORPORA, key=lambda c: c[3] is not None)
        for name, modality, granularity, parent, multi, description in parents_first:
            if name not in existing:
                self.create_corpus(
                    CorpusSpec(
                        name=name,
                        modality=modality,
                        granularity=granularity,
                        description=description,
                        dimension=dimension,
                        embedder=embedder,
                        parent=parent,
                        multi_vector=multi,
                        builtin=True,
                    )
                )
                created.append(name)
        with self.transaction("give the knowledge graph's vectors the text embedder's width") as conn:
            conn.execute(sa.select(getattr(sa.func, self.schema).graph_set_dimension(dimension)))
        self.settle(existing)
        return created

    def _engine_register_vector(self) -> None:
        # Connections opened before the extension existed lack pgvector's binary dumpers.
        if self._engine is not None and self._owns_engine:
            self._engine.dispose()

    def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to ``revision``."""
        with self.transaction() as conn:
            migrate.upgrade(conn, self.schema, revision)
        self._specs = None

    def downgrade(self, revision: str = "base") -> None:
        """Downgrade the schema to ``revision`` (``base`` drops every corpus, source and function)."""
        with self.transaction() as conn:
            migrate.downgrade(conn, self.schema, revision)
        self._specs = None

    def revision(self) -> str | None:
        """The schema's migration revision (``None`` before ``init``)."""
        with self.transaction() as conn:
            return migrate.current_revision(conn, self.schema)

    # -- corpora --------------------------------------------------------------------------------------------
    def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]:
        """Every registered corpus by name (read from the registry, cached for :data:`REGISTRY_TTL_S` seconds or
        until ``refresh``: a corpus another process creates is searched here within seconds)."""
        if self._specs is None or refresh or time.monotonic() - self._specs_read > REGISTRY_TTL_S:
            read_at = time.monotonic()
            c = self.tables.corpora

            def read(conn: sa.Connection) -> Sequence[Any]:
                revision = migrate.current_revision(conn, self.schema)
                if revision is None:
                    raise StoreError(f"The schema {self.schema!r} is not initialised; run `universalrag init` first.")
                if not migrate.is_current(revision):
                    raise StoreError(
                        f"The schema {self.schema!r} is at revision {revision}, this version of universalrag uses "
                        f"{migrate.SHIPPED_HEAD}; run `universalrag init` (or UniversalRAG.init()) to upgrade it — "
                        "upgrading keeps every corpus and source."
                    )
                return conn.execute(sa.select(c).order_by(c.c.created_at, c.c.name)).mappings().all()

            rows = self._read("read the corpus registry", read)
            self._where = {r["name"]: r["server"] for r in rows if r["server"] is not None}
            self._specs = {
                r["name"]: CorpusSpec(
                    name=r["name"],
                    modality=r["modality"],
                    granularity=r["granularity"],
                    description=r["description"],
                    dimension=r["dimension"],
                    embedder=r["embedder"],
                    parent=r["parent"],
                    multi_vector=r["multi_vector"],
                    builtin=r["builtin"],
                    metadata=dict(r["metadata"] or {}),
                    visual_encoder=r["visual_encoder"],
                    visual_dimension=r["visual_dimension"],
                    partition=Partitioning.from_dict(r["partitioning"]) if r["partitioning"] else None,
                    vector_index=vector_index_of(r["vector_index"], r["dimension"]),
                )
                for r in rows
            }
            self._specs_read = read_at
        return dict(self._specs)

    def corpus(self, name: str) -> CorpusSpec:
        """The registered corpus ``name`` (refreshing the cache once when it is not known)."""
        spec = self.corpora().get(name) or self.corpora(refresh=True).get(name)
        if spec is None:
            raise CorpusNotFoundError(name, list(self.corpora()))
        return spec

    def create_corpus(self, spec: CorpusSpec, *, server: str | None = None) -> CorpusSpec:
        """Create a corpus (its table and indexes) through the schema's ``create_corpus`` SQL function.

        Its vectors are indexed as ``spec.vector_index`` says, else as ``settings.vector_index`` does (``auto``: the
        default for the width, changed as the corpus grows; docs/database.md, "How vectors are stored").

        ``server``: the alias (``settings.servers``) of the PostgreSQL server that holds the corpus; it is
        created there (an identical corpus already there is adopted) and registered here under that alias.
        """
        if server is not None:
            try:
                return federation.create_remote_corpus(self, spec, server)
            finally:
                self._specs = None
        refused = partitioning_refused(spec, self.corpora(refresh=True)) if spec.parent is not None else None
        if refused:
            raise InvalidInputError(refused)
        if spec.parent is not None and self.server_of(spec.parent) is not None:
            raise InvalidInputError(
                f"Corpus {spec.name!r} must live on server {self.server_of(spec.parent)!r} "
                f"with its parent {spec.parent!r}; pass server= to create_corpus."
            )
        fn = getattr(sa.func, self.schema).create_corpus
        call = fn(
            spec.name,
            str(spec.modality),
            str(spec.granularity),
            spec.dimension,
            spec.description,
            spec.embedder,
            spec.parent,
            spec.multi_vector,
            spec.builtin,
            sa.cast(
                sa.literal(dict(spec.metadata), type_=self.tables.corpora.c.metadata.type),
                self.tables.corpora.c.metadata.type,
            ),
        )
        kind = spec.vector_index or self.settings.vector_index
        with self.transaction(f"create corpus {spec.name!r}") as conn:
            conn.execute(sa.select(call))
            if kind != "auto":  # the default index was built on the empty table: built again as asked (instant)
                conn.execute(sa.select(getattr(sa.func, self.schema).set_vector_index(spec.name, kind)))
            if spec.partition is not None:  # the table just made becomes a partitioned one, in the same transaction
                conn.execute(self._partition_call(spec.name, spec.partition))
        self._specs = None
        return spec

    def partition_corpus(self, name: str, partition: Partitioning) -> CorpusSpec:
        """Partition the corpus ``name``, which must hold no unit yet: one made by ``attach_table`` before the worker
        ran, or by an older version of a program. Returns its spec as now registered."""
        spec = self.corpus(name)
        if self.owner(name) is not self:
            raise InvalidInputError(
                f"Corpus {name!r} lives on server {self.server_of(name)!r}; partition it there, on a store of that "
                "server."
            )
        if not isinstance(partition, Partitioning):
            raise InvalidInputError(f"partition must be a Partitioning, got {type(partition).__name__}.")
        with self.transaction(f"partition corpus {name!r}") as conn:
            conn.execute(self._partition_call(spec.name, partition))
        self._specs = None
        return self.corpus(name)

    def _partition_call(self, name: str, partition: Partitioning) -> sa.Select[Any]:
        declaration = sa.cast(sa.literal(partition.as_dict(), JSONB), JSONB)
        return sa.select(getattr(sa.func, self.schema).partition_corpus(name, declaration))

    def attach_corpus(self, name: str, *, server: str) -> CorpusSpec:
        """Register here the corpus ``name`` that already exists on server ``server`` (e.g. made by another
        deployment); its spec is read from that server's registry."""
        try:
            return federation.attach_remote_corpus(self, name, server)
        finally:
            self._specs = None

    def drop_corpus(self, name: str) -> bool:
        """Drop a corpus and its rows (on its server, when remote); ``False`` when it did not exist."""
        if name in self.corpora(refresh=True) and self.server_of(name) is not None:
            self.owner(name).drop_corpus(name)
        fn = getattr(sa.func, self.schema).drop_corpus
        with self.transaction(f"drop corpus {name!r}") as conn:
            dropped = bool(conn.execute(sa.select(fn(name))).scalar_one())
        self._specs = None
        return dropped

    def add_visual_channel(self, name: str, *, dimension: int, encoder: str) -> bool:
        """Give corpus ``name`` a ``visual`` vector column (with its HNSW index) for ``encoder``'s space.

        Idempotent for the same encoder and dimension (returns ``False``); another encoder is refused.
        """
        owner = self.owner(name)
        if owner is not self:
            added = owner.add_visual_channel(name, dimension=dimension, encoder=encoder)
            federation.mirror_visual_channel(self, name, dimension=dimension, encoder=encoder)
            self._specs = None
            return added
        fn = getattr(sa.func, self.schema).add_visual_channel
        with self.transaction(f"add a visual channel to corpus {name!r}") as conn:
            added = bool(conn.execute(sa.select(fn(name, int(dimension), encoder))).scalar_one())
        self._specs = None
        return added

    def counts(self) -> dict[str, int]:
        """Rows per corpus."""
        names = list(self.corpora(refresh=True))
        out: dict[str, int] = {}
        for owner, group in self._owners(names).items():
            out.update(owner._read("count units", partial(_count_units, owner, group), read_only=True))
        return {name: out[name] for name in names}

    def part_counts(self) -> dict[str, int]:
        """Part vectors (a table's rows, a document's chunks) per corpus that has them (multi-vector corpora)."""
        names = list(self.corpora())
        out: dict[str, int] = {}
        for owner, group in self._owners(names).items():

            def read(conn: sa.Connection, owner: Store = owner, group: list[str] = group) -> dict[str, int]:
                found = {}
                for name in group:
                    parts = owner.tables.corpus(owner.corpus(name)).parts
                    if parts is not None:
                        found[name] = int(conn.execute(sa.select(sa.func.count()).select_from(parts)).scalar_one())
                return found

            out.update(owner._read("count part vectors", read, read_only=True))
        return {name: out[name] for name in names if name in out}

    def nonempty(self) -> list[str]:
        """The corpora that hold at least one unit (an index probe per corpus, not a count), on every server
        (the corpora of a member server that cannot be reached are left out, with a logged warning)."""
        names = list(self.corpora())
        found: set[str] = set()
        for owner, group in self._owners(names).items():
            try:
                with owner.transaction("list non-empty corpora", read_only=True) as conn:
                    found.update(
                        name
                        for name in group
                        if conn.execute(
                            sa.select(
                                sa.exists(
                                    sa.select(sa.literal(1)).select_from(owner.tables.corpus(owner.corpus(name)).units)
                                )
                            )
                        ).scalar_one()
                    )
            except StoreError as e:  # a member server that is down: its corpora are left out (logged)
                self.skip_unreachable(owner, group, e)
        return [name for name in names if name in found]

    @contextlib.contextmanager
    def connection(self, action: str = "run a query") -> Iterator[sa.Connection]:
        """A pooled connection outside any transaction (for session-level advisory locks); driver errors become
        :class:`StoreError` saying what ``action`` failed. Commit what you run on it."""
        with self._translate(action), self.engine.connect() as conn:
            yield conn

    def get_units(self, corpus: str, ids: Sequence[str]) -> list[Hit]:
        """Units of ``corpus`` by id, in the order asked (missing ids are left out); ``score`` is 1.0."""
        if self.owner(corpus) is not self:
            return self.owner(corpus).get_units(corpus, ids)
        spec = self.corpus(corpus)
        tables = self.tables.corpus(spec)
        rows = self._read(
            f"read units of {corpus!r}",
            lambda conn: {str(r["id"]): r for r in conn.execute(queries.units_by_id(tables, list(ids))).mappings()},
            read_only=True,
        )
        return [hit_from_row(spec, rows[i], 1.0) for i in ids if i in rows]


def _count_units(store: Store, names: Sequence[str], conn: sa.Connection) -> dict[str, int]:
    """Rows of each of ``names``, corpora of ``store``, counted on ``conn``."""
    return {
        name: int(
            conn.execute(
                sa.select(sa.func.count()).select_from(store.tables.corpus(store.corpus(name)).units)
            ).scalar_one()
        )
        for name in names
    }
