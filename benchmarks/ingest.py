"""Text ingestion throughput against the raw encoder and against two peer libraries: same texts, same encoder
(the bundled MiniLM), same server, one run.

    python benchmarks/ingest.py [--quick] [--copies 6] [--table-rows 20000] [--no-peers]
    python benchmarks/ingest.py --pages 20 --no-peers --no-torch    # real pages, thousands of texts

1. universalrag: ``ingest_paths`` on ``--copies`` copies of the 7-file test corpus (Markdown, text, HTML with
   tables) into a fresh schema (parse, split, embed, COPY, HNSW indexes maintained, one transaction per file),
   the encoder wrapped to record every text it is given (chunks, paragraphs, rows of the tables in the HTML
   pages). Those texts are what every other contender embeds. It runs first and again last (into another
   fresh schema); the mean of the two counts.
2. Raw encoder: ``embed(texts)`` in one call, before and after the peers (the mean is the baseline, to even
   out a machine whose load drifts), on the backend our ingestion uses (by default ONNX Runtime's bulk session;
   the line states it): the like-for-like baseline for the >= 0.95 goal. The same call on torch
   (``UNIVERSALRAG_INFERENCE=torch``: transformers' ``BertModel`` and mean pooling, what sentence-transformers
   computes) is a second row, what ingestion cost before ONNX Runtime embedded bulk calls. Every contender
   starts with the encoder warmed up on the corpus's text (bulk session or torch model built).
3. langchain-postgres ``PGVectorStore``, as its documentation shows: ``PGEngine.from_connection_string``,
   ``init_vectorstore_table``, ``PGVectorStore.create_sync``, ``add_texts``, then ``apply_vector_index(HNSWIndex())``
   (our tables have HNSW indexes too).
4. llama-index-vector-stores-postgres ``PGVectorStore``, as its documentation shows: ``from_params(...,
   hnsw_kwargs=...)``, ``StorageContext.from_defaults(vector_store=...)``, ``VectorStoreIndex(nodes, ...)`` with
   one ``TextNode`` per text (LlamaIndex's default ``embed_batch_size`` of 10 applies).

Each peer runs twice, with two encoders over the same MiniLM weights:
- *our encoder object* (``langchain_universalrag.UniversalRAGEmbeddings``; for LlamaIndex a ``BaseEmbedding``
  subclass, its documented custom-embedding pattern): the peers then embed on ONNX Runtime's bulk path too, so
  the ratio measures storage paths alone (``ratio_vs_langchain_postgres``, ``ratio_vs_llamaindex``);
- *the framework's documented local encoder* (``langchain_huggingface.HuggingFaceEmbeddings`` and
  ``llama_index.embeddings.huggingface.HuggingFaceEmbedding``, both sentence-transformers on torch, pointed at the
  bundled weights): what a user who follows the peer's documentation runs (``..._documented`` keys).
Every encoder is built and warmed up before its contender's clock starts.

``--pages N`` ingests the first N Wikipedia pages of the shared WikiTableQuestions set instead of the test corpus
(real HTML with tables: ~150 texts a page), ``--no-torch`` leaves out the torch rows.

rows/s = texts embedded and stored per second. Ratios: ours against the raw encoder (goal >= 0.95), against the
raw torch encoder, and against each peer run (goal >= 3). The peers and their documented encoders are the ``bench``
extra; a run whose packages are missing has a null ratio.
Beside wall times it prints each contender's CPU seconds in this process (encoder threads included, the database
server's work not) and ours against the raw encoder in CPU terms: steadier than wall time on a shared machine; and
each one's CPU share, CPU seconds over wall seconds (2.0 on two cores: both saturated by this process).
The recorded texts are written to ``<out>/ingest_texts.json`` (``encoder_backends.py --bulk`` reads them).
With ``--table-rows N`` it also ingests an N-row CSV and prints rows/s and the peak Python memory (tracemalloc).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from machine import REPO, figure, finish, log, machine_line, parser, save_png, scratch_store, timed

DIM = 384
WIKI_PAGES = REPO.parent / "shared" / "data" / "wikitables" / "pages"


def copy_pages(folder: Path, n: int) -> list[Path]:
    """The first ``n`` pages of the shared Wikipedia set, copied into ``folder``."""
    if not WIKI_PAGES.is_dir():
        raise SystemExit(f"--pages needs {WIKI_PAGES} (the shared WikiTableQuestions pages)")
    files = []
    for page in sorted(WIKI_PAGES.glob("*.html"))[:n]:
        files.append(folder / page.name)
        files[-1].write_bytes(page.read_bytes())
    return files


def make_corpus(folder: Path, copies: int, n_files: int | None = None) -> list[Path]:
    """``copies`` copies of the test corpus (its first ``n_files`` files), each file made unique by one line."""
    files = []
    for i in range(copies):
        for src in sorted((REPO / "tests" / "data" / "corpus").iterdir())[:n_files]:
            dst = folder / f"{src.stem}_{i}{src.suffix}"
            text = src.read_text(encoding="utf-8")
            dst.write_text(
                text.replace("</body>", f"<p>Copy {i}.</p></body>")
                if src.suffix == ".html"
                else text + f"\n\nCopy {i}.\n",
                encoding="utf-8",
            )
            files.append(dst)
    return files


@contextlib.contextmanager
def inference(backend: str) -> Iterator[None]:
    """``UNIVERSALRAG_INFERENCE=backend`` for the body (the embedder reads it on every call)."""
    before = os.environ.get("UNIVERSALRAG_INFERENCE")
    os.environ["UNIVERSALRAG_INFERENCE"] = backend
    try:
        yield
    finally:
        if before is None:
            del os.environ["UNIVERSALRAG_INFERENCE"]
        else:
            os.environ["UNIVERSALRAG_INFERENCE"] = before


#: CPU seconds of this process (the encoder's threads included, the database server's work not) by contender.
CPU: dict[str, list[float]] = {}
#: Wall seconds by contender (beside CPU: the CPU share).
WALL: dict[str, list[float]] = {}


def clocked(label: str, fn: Any, /, *args: Any) -> tuple[float, Any]:
    """:func:`machine.timed`, also adding the call's CPU time of this process to ``CPU[label]``: steadier than the
    wall time on a shared machine, and it shows what a contender costs besides the encoder."""
    started = time.process_time()
    seconds, result = timed(fn, *args)
    CPU.setdefault(label, []).append(time.process_time() - started)
    WALL.setdefault(label, []).append(seconds)
    return seconds, result


class Recording:
    """Delegates to an embedder and records the texts it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, []
        self.name, self.dimension = inner.name, inner.dimension

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return self.inner.embed(texts)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.inner.embed_query(text)


def run_langchain(url: str, schema: str, embedding: Any, texts: list[str], table: str) -> None:
    """langchain-postgres v2 as documented: engine, table, store, ``add_texts``, HNSW index."""
    from langchain_postgres import PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex
    from sqlalchemy.engine import make_url

    psycopg_url = make_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    engine = PGEngine.from_connection_string(url=psycopg_url)  # its pool ends with the process
    engine.init_vectorstore_table(table_name=table, vector_size=DIM, schema_name=schema)
    store = PGVectorStore.create_sync(engine=engine, table_name=table, schema_name=schema, embedding_service=embedding)
    store.add_texts(texts)
    store.apply_vector_index(HNSWIndex())


def run_llamaindex(url: str, schema: str, embedding: Any, texts: list[str], table: str) -> None:
    """llama-index-vector-stores-postgres as documented: store with HNSW, storage context, index over nodes."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.postgres import PGVectorStore
    from sqlalchemy.engine import make_url

    base = make_url(url)
    store = PGVectorStore.from_params(
        connection_string=base.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False),
        async_connection_string=base.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False),
        schema_name=schema,
        table_name=table,
        embed_dim=DIM,
        hnsw_kwargs={
            "hnsw_m": 16,
            "hnsw_ef_construction": 64,
            "hnsw_ef_search": 40,
            "hnsw_dist_method": "vector_cosine_ops",
        },
    )
    storage_context = StorageContext.from_defaults(vector_store=store)
    VectorStoreIndex([TextNode(text=t) for t in texts], storage_context=storage_context, embed_model=embedding)


def langchain_ours(embedder: Any) -> Any:
    """Our encoder object as LangChain ``Embeddings``."""
    from langchain_universalrag import UniversalRAGEmbeddings

    return UniversalRAGEmbeddings(embedder)


def llamaindex_ours(embedder: Any) -> Any:
    """Our encoder object as a LlamaIndex ``BaseEmbedding`` (the documented custom-embedding pattern)."""
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.embed_query(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.embed([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed(texts).tolist()

    return MiniLM(model_name=embedder.name)


def langchain_documented(embedder: Any) -> Any:
    """LangChain's documented local encoder (sentence-transformers) on the bundled MiniLM weights."""
    from langchain_huggingface import HuggingFaceEmbeddings

    from universalrag.routing.encoder import base_model_path

    return HuggingFaceEmbeddings(model_name=str(base_model_path()), model_kwargs={"device": "cpu"})


def llamaindex_documented(embedder: Any) -> Any:
    """LlamaIndex's documented local encoder (sentence-transformers) on the bundled MiniLM weights."""
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from universalrag.routing.encoder import base_model_path

    return HuggingFaceEmbedding(model_name=str(base_model_path()), device="cpu")


def warm_up(embedding: Any, texts: list[str]) -> None:
    """One batch through a framework encoder before its clock starts (model loaded, kernels chosen)."""
    if hasattr(embedding, "embed_documents"):
        embedding.embed_documents(texts)
    else:
        embedding.get_text_embedding_batch(texts)


#: name -> (how the peer stores, how its encoder is built, the table it writes (LlamaIndex prefixes "data_")).
PEERS: dict[str, tuple[Any, Any, str]] = {
    "langchain_postgres": (run_langchain, langchain_ours, "lc_bench"),
    "llamaindex": (run_llamaindex, llamaindex_ours, "li_bench"),
    "langchain_postgres_documented": (run_langchain, langchain_documented, "lc_bench_hf"),
    "llamaindex_documented": (run_llamaindex, llamaindex_documented, "li_bench_hf"),
}


def written_table(run: Any, table: str) -> str:
    """The table a peer run really wrote: LlamaIndex prefixes its table names with ``data_``."""
    return f"data_{table}" if run is run_llamaindex else table


def stored_rows(store: Any, table: str) -> int:
    """Rows in ``table`` of the store's schema (what a peer wrote)."""
    from psycopg import sql

    with store.transaction("count a peer's rows") as conn:
        raw = conn.connection.driver_connection
        query = sql.SQL("SELECT count(*) FROM {}.{}").format(sql.Identifier(store.schema), sql.Identifier(table))
        return int(raw.execute(query).fetchone()[0])


def table_rows(store: Any, embedder: Any, tmp: Path, n: int) -> None:
    """Ingest an ``n``-row CSV; print rows/s and the peak Python memory."""
    from universalrag.ingest.pipeline import ingest_paths

    path = tmp / "big.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "city", "product", "quantity", "price", "note"])
        for i in range(n):
            w.writerow([i, f"city {i % 97}", f"product {i % 31}", i % 13, f"{(i % 500) / 7:.2f}", f"order number {i}"])
    tracemalloc.start()
    seconds, report = timed(ingest_paths, store, embedder, [path])
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert report.ok, report.failed
    log(
        f"table       : {n / seconds:8.1f} rows/s ({seconds:.1f} s), peak Python memory {peak:.1f} MiB, "
        f"size on disk {path.stat().st_size / 2**20:.1f} MiB"
    )


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--copies", type=int, help="copies of the 7-file test corpus (default 6; --quick 1)")
    ap.add_argument("--files", type=int, help="use only the first N files of the test corpus")
    ap.add_argument("--table-rows", type=int, default=0, help="also ingest a CSV of this many rows")
    ap.add_argument("--no-peers", action="store_true", help="skip langchain-postgres and LlamaIndex")
    ap.add_argument("--no-torch", action="store_true", help="skip the raw torch encoder")
    ap.add_argument("--pages", type=int, default=0, help="ingest N shared Wikipedia pages instead of the test corpus")
    args = ap.parse_args()
    copies = args.copies or (1 if args.quick else 6)
    log(machine_line())
    from universalrag.embed import TransformersEmbedder, bundled_minilm
    from universalrag.embed.transformers_encoder import BULK_TEXTS
    from universalrag.ingest.pipeline import ingest_paths

    embedder = bundled_minilm()
    torch_embedder = TransformersEmbedder.bundled_minilm(device="cpu")  # used only under inference("torch")
    peers = {} if args.no_peers else PEERS
    seconds: dict[str, float | None] = {}
    stored: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        files = copy_pages(folder, args.pages) if args.pages else make_corpus(folder, copies, args.files)
        # warm-up on real text of every length, in a bulk call (the bulk session, or torch, is built here)
        warm = [
            p for f in files[:7] for p in f.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip()
        ]
        warm = (warm * (BULK_TEXTS // max(1, len(warm)) + 1))[:BULK_TEXTS]
        embedder.embed(warm)
        bulk_backend = embedder.bulk_backend
        if not args.no_torch:
            with inference("torch"):
                torch_embedder.embed(warm[:8])
        with scratch_store(args.database_url, "ingest") as store, scratch_store(args.database_url, "ingest2") as again:
            store.init(embedder=embedder.name, dimension=embedder.dimension)
            again.init(embedder=embedder.name, dimension=embedder.dimension)
            recording = Recording(embedder)  # one list.extend per batch: no measurable cost
            ours_first, report = clocked("universalrag", ingest_paths, store, recording, [folder])
            assert report.ok, report
            texts = recording.texts
            log(f"files: {len(files)}, texts embedded per contender: {len(texts)}")
            args.out.mkdir(parents=True, exist_ok=True)  # for encoder_backends.py --bulk: the same texts
            (args.out / "ingest_texts.json").write_text(json.dumps(texts), encoding="utf-8")
            raw_before, _ = clocked("raw encoder", embedder.embed, texts)
            torch_before = torch_after = float("nan")
            if not args.no_torch:
                with inference("torch"):
                    torch_before, _ = clocked("raw encoder (torch)", torch_embedder.embed, texts)
            url = store.resolve_url()
            for name, (run, encoder, table) in peers.items():
                try:
                    embedding = encoder(embedder)
                    warm_up(embedding, warm[:64])
                    seconds[name], _ = clocked(name, run, url, store.schema, embedding, texts, table)
                    stored[name] = stored_rows(store, written_table(run, table))
                except ImportError as e:
                    log(f"{name}: not installed ({e.name}); install the bench extra")
                    seconds[name] = None
            if not args.no_torch:
                with inference("torch"):
                    torch_after, _ = clocked("raw encoder (torch)", torch_embedder.embed, texts)
            raw_after, _ = clocked("raw encoder", embedder.embed, texts)
            # first and last: drift evens out
            ours_again, report = clocked("universalrag", ingest_paths, again, embedder, [folder])
            assert report.ok, report
            if args.table_rows:
                table_rows(store, embedder, Path(tmp), args.table_rows)
    seconds["universalrag"] = (ours_first + ours_again) / 2
    seconds["raw encoder"] = (raw_before + raw_after) / 2
    seconds["raw encoder (torch)"] = (torch_before + torch_after) / 2
    rates = {k: (len(texts) / v if v else None) for k, v in seconds.items()}
    ours = rates["universalrag"]
    log(
        f"raw encoder      : {rates['raw encoder']:8.1f} texts/s ({raw_before:.2f} s, then {raw_after:.2f} s) "
        f"on {bulk_backend}, the backend our ingestion used"
    )
    log(
        f"raw torch encoder: {rates['raw encoder (torch)']:8.1f} texts/s ({torch_before:.2f} s, then "
        f"{torch_after:.2f} s); universalrag / it = {ours / rates['raw encoder (torch)']:.2f}"
    )
    log(f"universalrag runs: {ours_first:.2f} s first, {ours_again:.2f} s last")
    cpu = {k: sum(v) / len(v) for k, v in CPU.items()}
    share = {k: sum(CPU[k]) / sum(WALL[k]) for k in CPU}
    log("CPU share of this process (CPU s / wall s): " + ", ".join(f"{k} {v:.2f}" for k, v in share.items()))
    log(
        "CPU seconds of this process (mean): "
        + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
        + f"; universalrag / raw encoder in CPU terms: {cpu['raw encoder'] / cpu['universalrag']:.3f}"
    )
    for name in ("universalrag", *peers):
        if rates.get(name):
            log(
                f"{name:17}: {rates[name]:8.1f} texts/s ({seconds[name]:.2f} s); universalrag / it = "
                f"{ours / rates[name]:.2f}"
            )
    ratio = {name: (round(ours / rates[name], 3) if rates.get(name) else None) for name in peers}
    log(
        f"ratio vs raw encoder ({bulk_backend}): {ours / rates['raw encoder']:.3f} (goal >= 0.95); vs raw torch "
        f"encoder: {ours / rates['raw encoder (torch)']:.3f}; vs peers: {ratio} (goal >= 3)"
    )
    log(machine_line())
    fig, ax = figure(size=(6.4, 4))
    shown = {k: v for k, v in rates.items() if v}
    ax.bar(list(shown), list(shown.values()), color=["C0" if k == "universalrag" else "C7" for k in shown])
    ax.set_ylabel("texts embedded and stored per second")
    ax.tick_params(axis="x", labelsize=7, labelrotation=20)
    save_png(fig, args.out / "ingest.png", title=f"Ingestion, {len(texts)} texts, bundled MiniLM, same server")
    finish(
        "ingest",
        {
            "rows_per_s": round(ours, 2),
            "ratio_vs_encoder": round(ours / rates["raw encoder"], 3),
            "encoder_backend": bulk_backend,
            "ratio_vs_encoder_torch": round(ours / rates["raw encoder (torch)"], 3),
            "cpu_ratio_vs_encoder": round(cpu["raw encoder"] / cpu["universalrag"], 3),
            "cpu_s_by_contender": {k: round(v, 2) for k, v in cpu.items()},
            "cpu_share_by_contender": {k: round(v, 2) for k, v in share.items()},
            "ratio_vs_langchain_postgres": ratio.get("langchain_postgres"),
            "ratio_vs_llamaindex": ratio.get("llamaindex"),
            "ratio_vs_langchain_postgres_documented": ratio.get("langchain_postgres_documented"),
            "ratio_vs_llamaindex_documented": ratio.get("llamaindex_documented"),
            "rows_per_s_by_contender": {k: (round(v, 2) if v else None) for k, v in rates.items()},
            "texts": len(texts),
            "stored_by_peer": stored,
            "files": len(files),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
