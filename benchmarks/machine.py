"""What every benchmark in this folder shares: the machine line (CPU model, cores, load), the command-line options
every script takes, a throw-away schema on the embedded (or given) PostgreSQL, percentiles, the PNG and the final
JSON line. The scripts import it with ``benchmarks/`` on ``sys.path`` (``python benchmarks/x.py`` puts it there).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "out"


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's processor string)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load() -> float:
    """The one-minute load average (what is stated beside every timing: these machines are shared)."""
    return round(os.getloadavg()[0], 2)


def machine_line() -> str:
    """``CPU: <model>, <n> cores, load average <1, 5, 15 min>``."""
    one, five, fifteen = os.getloadavg()
    return f"CPU: {cpu_model()}, {os.cpu_count()} cores, load average {one:.1f} / {five:.1f} / {fifteen:.1f}"


def log(*parts: object) -> None:
    """Progress and figures on stdout, flushed (the last stdout line is the JSON summary)."""
    print(*parts, flush=True)


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes: ``--quick``, ``--database-url``, ``--out``."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes: finishes within about two minutes")
    ap.add_argument("--database-url", help="PostgreSQL URL (default: UNIVERSALRAG_DATABASE_URL, else embedded)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the JSON and PNG (default %(default)s)")
    return ap


@contextlib.contextmanager
def scratch_store(database_url: str | None, prefix: str, **overrides: Any) -> Iterator[Any]:
    """A :class:`~universalrag.store.Store` on a fresh schema ``bench_<prefix>_<random>`` (not initialised),
    dropped with everything in it on exit. ``database_url=None``: ``UNIVERSALRAG_DATABASE_URL``, else the
    embedded server; ``overrides``: fields of :class:`~universalrag.config.Settings` to set."""
    import sqlalchemy as sa

    schema = f"bench_{prefix}_{uuid.uuid4().hex[:8]}"
    with kept_store(database_url, schema, **overrides) as store:
        try:
            yield store
        finally:
            with store.engine.begin() as conn:
                conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))


@contextlib.contextmanager
def kept_store(database_url: str | None, schema: str, **overrides: Any) -> Iterator[Any]:
    """A :class:`~universalrag.store.Store` on schema ``schema`` (not initialised), kept on exit: what a later run
    reuses instead of loading its data again. ``database_url=None``: ``UNIVERSALRAG_DATABASE_URL``, else the
    embedded server; ``overrides``: fields of :class:`~universalrag.config.Settings` to set."""
    from universalrag.config import Settings
    from universalrag.store import Store

    settings = Settings.from_env()
    if database_url:
        settings = settings.with_(database_url=database_url)
    store = Store(settings=settings.with_(schema=schema, **overrides))
    try:
        yield store
    finally:
        store.close()


class ServerCPU:
    """CPU milliseconds of the server processes behind the connections of the engines it watches, read from
    ``/proc`` (a server on this machine, as the embedded one is; 0 for one elsewhere). A search's own CPU on both
    sides depends little on the load, where its wall time on a shared 2-core machine is mostly waiting. A backend
    that has exited keeps counting with its last reading, so the clock never runs backwards."""

    def __init__(self) -> None:
        self.pids: set[int] = set()
        self.last: dict[int, int] = {}  # pid -> utime + stime in ticks, at its last reading
        self.tick = os.sysconf("SC_CLK_TCK")

    def watch(self, engine: Any) -> None:
        """Follow the backend of every connection ``engine`` opens from now on."""
        import sqlalchemy as sa

        # libpq knows the pid: no query, no transaction left open
        sa.event.listen(engine, "connect", lambda dbapi, _record: self.pids.add(int(dbapi.info.backend_pid)))

    def ms(self) -> float:
        """The CPU milliseconds the watched backends have used so far."""
        for pid in list(self.pids):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited (its last reading stays), or not on this machine
                continue
            self.last[pid] = int(stat[11]) + int(stat[12])  # utime, stime
        return sum(self.last.values()) * 1000 / self.tick


def server_cpu(engine: Any) -> Callable[[], float]:
    """A clock of the CPU milliseconds the server processes behind ``engine``'s connections have used
    (:class:`ServerCPU`). The pool is emptied first, so every connection it hands out from now on is one the clock
    follows."""
    engine.dispose()
    clock = ServerCPU()
    clock.watch(engine)
    return clock.ms


def timed(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """``(seconds, result)`` of one call ``fn(*args, **kwargs)``."""
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - started, result


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100, linear interpolation) of ``values``."""
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else float("nan")


def recall(found: Sequence[str], truth: Sequence[str]) -> float:
    """The share of ``truth`` (the exact top-k) that ``found`` holds."""
    return len(set(found) & set(truth)) / len(truth) if truth else 1.0


def figure(ncols: int = 1, *, size: tuple[float, float] = (6.4, 4.2)) -> tuple[Any, Any]:
    """A matplotlib figure and its axes, drawn off-screen (the ``Agg`` backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, ncols, figsize=size)


def save_png(fig: Any, path: Path, *, title: str) -> Path:
    """Write ``fig`` with ``title`` and the machine line as its heading, then close it."""
    import matplotlib.pyplot as plt

    fig.suptitle(f"{title}\n{machine_line()}", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def finish(name: str, result: dict[str, Any], out: Path) -> None:
    """Write ``<out>/<name>.json`` and print the summary as the last stdout line (one JSON object, with the CPU
    and the load at the end of the run)."""
    summary = {
        **result,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load": load(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(summary, indent=2) + "\n")
    sys.stdout.flush()
    print(json.dumps(summary, separators=(",", ":")), flush=True)


def analyze(store: Any, *corpora: str) -> None:
    """``ANALYZE`` the unit tables of ``corpora`` (fresh planner statistics after a bulk load)."""
    from psycopg import sql

    from universalrag.store.schema import unit_table_name

    with store.transaction("analyze") as conn:
        raw = conn.connection.driver_connection
        for name in corpora:
            raw.execute(
                sql.SQL("ANALYZE {}.{}").format(sql.Identifier(store.schema), sql.Identifier(unit_table_name(name)))
            )


@contextlib.contextmanager
def index_after_load(store: Any, *corpora: str) -> Iterator[None]:
    """Drop the HNSW indexes of ``corpora``'s unit tables for a bulk load and build them again, with the same
    definitions (``pg_get_indexdef``), afterwards: one index build is several times faster than inserting
    every row into the graph, which matters for the large synthetic corpora only. The builds get the memory the
    library gives its own (:func:`universalrag.store.index_build.build_settings`) and every core but one as parallel
    workers, and log their progress every :data:`PROGRESS_EVERY_S` seconds."""
    from psycopg import sql

    from universalrag.store.index_build import build_settings, watch_build
    from universalrag.store.schema import unit_table_name

    tables = [unit_table_name(c) for c in corpora]
    with store.transaction("read index definitions") as conn:
        raw = conn.connection.driver_connection
        defs = raw.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = %s AND i.tablename = ANY(%s) "
            "AND i.indexdef ILIKE '%% USING hnsw %%'",
            (store.schema, tables),
        ).fetchall()
        for name, _ in defs:
            raw.execute(sql.SQL("DROP INDEX {}.{}").format(sql.Identifier(store.schema), sql.Identifier(name)))
    yield
    last = [0.0]

    def progress(reading: Any) -> None:
        if time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            last[0] = time.monotonic()
            log(f"  index of {reading.table}: {reading.phase}, {reading.done:,} of {reading.total:,} {reading.what}")

    with store.transaction("build HNSW indexes") as conn:
        raw = conn.connection.driver_connection
        # the library's memory for a build; every core but one as parallel workers (a bulk load owns the machine,
        # where the library keeps half the cores for the searches a server goes on serving)
        settings = {**build_settings(), "max_parallel_maintenance_workers": str(max((os.cpu_count() or 1) - 1, 0))}
        for setting, value in settings.items():
            raw.execute("SELECT set_config(%s, %s, true)", (setting, value))
        with watch_build(store.engine, int(raw.info.backend_pid), progress, every_s=5.0):
            for _, definition in defs:
                raw.execute(definition)  # the server's own rendering of the index it had
    analyze(store, *corpora)


#: How often :func:`index_after_load` logs a build's progress (seconds).
PROGRESS_EVERY_S = 60.0


def server_memory(engine: Any) -> int:
    """The resident memory of the PostgreSQL server behind ``engine`` (bytes): the proportional set size (shared
    pages divided among the processes that map them, so ``shared_buffers`` counts once) of the postmaster and every
    process it started, read from ``/proc``; 0 for a server on another machine."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        backend = int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())

    def parent(pid: int) -> int:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

    try:
        postmaster = parent(backend)
    except OSError:  # not on this machine
        return 0
    pids = [postmaster]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if parent(int(entry.name)) == postmaster:
                    pids.append(int(entry.name))
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
    return total


def schema_disk(store: Any) -> int:
    """The bytes on disk of every table of ``store``'s schema with its indexes and TOAST."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = :schema AND c.relkind IN ('r', 'm')"
                ),
                {"schema": store.schema},
            ).scalar_one()
        )


def prewarm(store: Any, *, mode: str = "read") -> int:
    """Read every table, index and TOAST table of ``store``'s schema once with ``pg_prewarm``: ``mode`` ``read``
    leaves the pages in the operating system's cache (as on a server that has answered searches for a while),
    ``buffer`` in PostgreSQL's own buffers as far as ``shared_buffers`` holds them. Returns the pages read. Creates
    the ``pg_prewarm`` extension (a contrib module of PostgreSQL) if missing."""
    import sqlalchemy as sa

    with store.engine.begin() as conn:
        conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_prewarm"))
        return int(
            conn.execute(
                sa.text(
                    "SELECT coalesce(sum(pg_prewarm(r.oid, :mode)), 0) FROM ("
                    "  SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    "  WHERE n.nspname = :schema AND c.relkind IN ('r', 'i', 'm')"
                    "  UNION ALL SELECT c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    "  WHERE n.nspname = :schema AND c.reltoastrelid <> 0) r"
                ),
                {"schema": store.schema, "mode": mode},
            ).scalar_one()
        )


def unit_rows(v: Any) -> Any:
    """``v`` (a vector or a matrix of row vectors) scaled to unit length, float32."""
    import numpy as np

    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def synthetic_vectors(rng: Any, n: int, *, dim: int = 384, topics: int = 12) -> Any:
    """``n`` unit vectors the way text embeddings cluster: ``topics`` topics around one base direction, units
    spread around their topic (cosine to it about 0.6), shape ``(n, dim)``."""
    base = unit_rows(rng.normal(size=dim))
    centers = unit_rows(base + unit_rows(rng.normal(size=(topics, dim))))
    return unit_rows(centers[rng.integers(0, topics, size=n)] + 1.2 * unit_rows(rng.normal(size=(n, dim))))


def text_like_vectors(
    rng: Any, n: int, *, dim: int = 384, topics: int = 24, subtopics: int = 64, decay: float = 0.7
) -> Any:
    """``n`` unit vectors shaped like real MiniLM text embeddings, shape ``(n, dim)``: topics around one base
    direction, subtopics within each, units around their subtopic, every offset drawn with variances falling as
    ``rank ** -decay`` along a random basis (text embeddings spread over a few dozen directions, not all 384).

    Calibrated on 25,145 MiniLM vectors of 250 real Wikipedia pages (passages, table rows, pages): the share of
    variance in the top 8 / 32 / 128 principal directions is 0.25 / 0.50 / 0.85 there and 0.26 / 0.56 / 0.80
    here (:func:`synthetic_vectors`: 0.21 / 0.32 / 0.53); for a query drawn by :func:`near`, the cosine of the
    10th and the 100th nearest is 0.66 and 0.48 there, 0.59 and 0.47 here (:func:`synthetic_vectors`: 0.45 and
    0.42 — its units sit in isotropic noise, where the 10th and the 100th neighbour are all but tied and top-10
    recall measures a coin toss among equals). Still a little harder than the real vectors."""
    import numpy as np

    basis = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    scale = np.sqrt(np.arange(1, dim + 1, dtype=float) ** -decay)
    scale *= np.sqrt(dim) / np.linalg.norm(scale)

    def offsets(m: int) -> Any:  # unit-scale directions with the falling variances
        return unit_rows((rng.normal(size=(m, dim)) * scale) @ basis.T)

    base = unit_rows(rng.normal(size=dim))
    centers = unit_rows(base + 1.5 * offsets(topics))
    subs = offsets(topics * subtopics)
    topic = rng.integers(0, topics, size=n)
    sub = topic * subtopics + rng.integers(0, subtopics, size=n)
    return unit_rows(centers[topic] + 0.8 * subs[sub] + 0.7 * offsets(n))


def near(rng: Any, x: Any, spread: float = 0.5) -> Any:
    """A query near the stored vector ``x`` (unit length)."""
    return unit_rows(x + spread * unit_rows(rng.normal(size=x.shape[-1])))


def load_synthetic(
    store: Any,
    corpora: dict[str, tuple[list[str], Any] | list[tuple[list[str], Any]]],
    *,
    metadata: Callable[[int], dict[str, Any]] | None = None,
    partition: dict[str, Any] | None = None,
    choose_index: bool = False,
) -> dict[str, float]:
    """Initialise ``store`` and write synthetic corpora: ``{name: (ids, vectors)}`` (or a list of such parts, written
    one after the other: a corpus too large to hold as one array), one single-vector text corpus each (embedder
    ``bench``; partitioned as ``partition[name]`` says, a ``Partitioning``), ``metadata(i)`` on unit ``i``; HNSW
    indexes built after the load. ``choose_index``: each corpus's index is the kind the library gives a corpus of
    that size (``Store.grow_vector_indexes`` told of the units to come, as the sync worker is before a backlog)
    instead of the kind of an empty corpus. Returns the seconds of the writes and of the index builds:
    ``{"write_s", "index_s"}``."""
    from universalrag.types import CorpusSpec, Granularity, Modality, SourceRecord, Unit

    parts = {name: value if isinstance(value, list) else [value] for name, value in corpora.items()}
    dim = parts[next(iter(parts))][0][1].shape[1]
    store.init(embedder="bench", dimension=dim)
    for name in parts:
        store.create_corpus(
            CorpusSpec(
                name=name,
                modality=Modality.TEXT,
                granularity=Granularity.PARAGRAPH,
                description=f"synthetic corpus {name}",
                dimension=dim,
                embedder="bench",
                partition=(partition or {}).get(name),
            )
        )
    if choose_index:
        store.grow_vector_indexes(list(parts), coming={name: sum(len(v) for _, v in p) for name, p in parts.items()})
    with index_after_load(store, *parts):
        started = time.perf_counter()
        for name, corpus_parts in parts.items():
            offset = 0
            for ids, vectors in corpus_parts:
                for start in range(0, len(vectors), 5000):
                    stop = min(start + 5000, len(vectors))
                    units = [
                        Unit(
                            id=ids[i],
                            corpus=name,
                            content=f"{name} unit {offset + i}",
                            embedding=vectors[i],
                            metadata=metadata(offset + i) if metadata else {},
                        )
                        for i in range(start, stop)
                    ]
                    store.write_source(
                        SourceRecord(
                            uri=f"bench://{name}/{offset + start}",
                            content_hash="h",
                            modality=Modality.TEXT,
                            corpora=(name,),
                        ),
                        units,
                    )
                offset += len(vectors)
        written = time.perf_counter()
    return {"write_s": written - started, "index_s": time.perf_counter() - written}


def new_ids(n: int) -> list[str]:
    """``n`` fresh unit ids."""
    return [str(uuid.uuid4()) for _ in range(n)]


def synthetic_setup(
    doc: str | None, *, units: tuple[int, int], queries: tuple[int, int], seed: int
) -> tuple[argparse.Namespace, Any, int, Any]:
    """Parse the options of a benchmark over one synthetic corpus (``--units``, ``--queries``: defaults given as
    ``(full, quick)``), print the machine line and draw the vectors: ``(args, vectors, n_queries, rng)``."""
    import numpy as np

    ap = parser(doc)
    ap.add_argument("--units", type=int, help=f"units in the corpus (default {units[0]}; --quick {units[1]})")
    ap.add_argument("--queries", type=int, help=f"queries (default {queries[0]}; --quick {queries[1]})")
    args = ap.parse_args()
    n = args.units or units[args.quick]
    log(machine_line())
    rng = np.random.default_rng(seed)
    return args, synthetic_vectors(rng, n), args.queries or queries[args.quick], rng
