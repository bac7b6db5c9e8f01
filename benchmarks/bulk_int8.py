"""The 8-bit bulk encoder against float32: speed, how far its vectors move, and retrieval on real questions.

    python benchmarks/bulk_int8.py [--quick] [--pages 40] [--rounds 2]

The 8-bit encoder is the bundled MiniLM on ONNX Runtime with its linear layers quantized by ONNX Runtime's
``quantize_dynamic`` (weights per output channel, activations per call; ``OnnxBert(dynamic_int8=True)``); float32
is the bulk session ingestion uses by default. Both run a thread per core, batches of ``BULK_BATCH``, longest first.

1. Speed: the same passages through both, interleaved round by round; wall and CPU seconds of this process.
2. Vectors: cosine of each 8-bit passage vector with its float32 one (mean, worst).
3. Retrieval: the texts ingestion embeds for the first ``--pages`` Wikipedia pages of the shared WikiTableQuestions
   set (documents, passages, table previews and rows; read by ``ingest_paths`` into a scratch schema), embedded by
   each encoder; every question of those pages (queries always float32, as a search embeds them) searched exactly
   (cosine over every text, no index); a hit when a text of the question's page is in the top k. Points of hit@1,
   @5, @10 with each encoder, and how many questions each loses. Then the same on the 7-file test corpus and its
   questions (``tests/data/corpus_questions.json``): a hit when the top-k passages hold the answer's phrase.

Nothing is tuned on these questions: the quantizer's one choice (per channel) was made on passage cosines (step 2).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from machine import REPO, figure, finish, log, machine_line, parser, save_png, scratch_store

WIKI = REPO.parent / "shared" / "data" / "wikitables"
CORPUS = REPO / "tests" / "data" / "corpus"


class Reader:
    """An embedder that only records what ingestion would embed (unit vectors from a hash): reading texts is all
    it is for."""

    def __init__(self, name: str, dimension: int) -> None:
        self.name, self.dimension, self.texts = name, dimension, []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        rng = np.random.default_rng(len(self.texts))
        out = rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def texts_by_file(files: list[Path], name: str, dimension: int, database_url: str | None) -> dict[str, list[str]]:
    """What ingestion embeds for each file (each ingested alone into a scratch schema)."""
    from universalrag.ingest.pipeline import ingest_paths

    out: dict[str, list[str]] = {}
    with scratch_store(database_url, "int8") as store:
        store.init(embedder=name, dimension=dimension)
        for path in files:
            reader = Reader(name, dimension)
            report = ingest_paths(store, reader, [path])
            assert report.ok, report.failed
            out[path.name] = reader.texts
    return out


def bulk(bert: Any, texts: list[str], limit: int) -> np.ndarray:
    """``texts`` through an ONNX encoder as the bulk path runs them: longest first, ``BULK_BATCH`` at a time."""
    from universalrag.embed.base import clip_to_tokens
    from universalrag.embed.transformers_encoder import BULK_BATCH

    texts = clip_to_tokens(texts, limit)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    out = np.empty((len(texts), bert.hidden_size), dtype=np.float32)
    for start in range(0, len(order), BULK_BATCH):
        idx = order[start : start + BULK_BATCH]
        ids, mask = bert.tokenize([texts[i] for i in idx], max_length=limit)
        out[idx] = bert.mean_pooled(ids, mask)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def hits(queries: np.ndarray, passages: np.ndarray, good: list[set[int]], ks: tuple[int, ...]) -> dict[int, list[bool]]:
    """For each k, whether each query's top k (exact cosine) holds one of its good passages."""
    order = np.argsort(-(queries @ passages.T), axis=1)[:, : max(ks)]
    return {k: [bool(set(row[:k].tolist()) & g) for row, g in zip(order, good, strict=True)] for k in ks}


def compare(label: str, f32: np.ndarray, q8: np.ndarray, queries: np.ndarray, good: list[set[int]]) -> dict[str, Any]:
    """Hit@k points with each encoder's passages and the questions each one loses."""
    ks = (1, 5, 10)
    a, b = hits(queries, f32, good, ks), hits(queries, q8, good, ks)
    result: dict[str, Any] = {"questions": len(good)}
    for k in ks:
        pa, pb = 100 * np.mean(a[k]), 100 * np.mean(b[k])
        lost = sum(x and not y for x, y in zip(a[k], b[k], strict=True))
        won = sum(y and not x for x, y in zip(a[k], b[k], strict=True))
        log(
            f"{label} hit@{k:<2}: float32 {pa:5.1f}  int8 {pb:5.1f}  ({pb - pa:+.2f} points; "
            f"int8 lost {lost}, won {won})"
        )
        result[f"hit@{k}"] = {"float32": round(pa, 2), "int8": round(pb, 2), "lost": lost, "won": won}
    return result


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--pages", type=int, help="Wikipedia pages (default 40; --quick 4)")
    ap.add_argument("--rounds", type=int, default=2, help="speed rounds, interleaved (default 2)")
    args = ap.parse_args()
    pages_n = args.pages or (4 if args.quick else 40)
    log(machine_line())
    from universalrag.embed import bundled_minilm
    from universalrag.embed.onnx_bert import OnnxBert, bulk_threads

    embedder = bundled_minilm()
    limit = 256  # the default max_length of TransformersEmbedder (the MiniLM reads up to 512 positions)
    f32 = OnnxBert.load(embedder.path, threads=bulk_threads())
    q8 = OnnxBert.load(embedder.path, threads=bulk_threads(), dynamic_int8=True)
    result: dict[str, Any] = {}

    # the test corpus: passages and questions (also the speed and cosine texts)
    files = sorted(CORPUS.iterdir())
    by_file = texts_by_file(files, embedder.name, embedder.dimension, args.database_url)
    texts = [t for f in files for t in by_file[f.name]]
    speed: dict[str, list[tuple[float, float]]] = {"float32": [], "int8": []}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(max(1, args.rounds)):
        for name, bert in (("float32", f32), ("int8", q8)):
            wall, cpu = time.perf_counter(), time.process_time()
            vectors[name] = bulk(bert, texts, limit)
            speed[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    cos = np.sum(vectors["float32"] * vectors["int8"], axis=1)
    for name, runs in speed.items():
        log(
            f"{name:8}: {len(texts)} texts, wall {[round(w, 2) for w, _ in runs]} s, "
            f"CPU {[round(c, 2) for _, c in runs]} s"
        )
    wall_ratio = np.median([w for w, _ in speed["float32"]]) / np.median([w for w, _ in speed["int8"]])
    cpu_ratio = np.median([c for _, c in speed["float32"]]) / np.median([c for _, c in speed["int8"]])
    log(
        f"int8 speed-up: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU; cosine with float32 mean {cos.mean():.4f}, "
        f"worst {cos.min():.4f}"
    )
    result.update(
        speed_up_wall=round(float(wall_ratio), 2),
        speed_up_cpu=round(float(cpu_ratio), 2),
        cosine_mean=round(float(cos.mean()), 4),
        cosine_min=round(float(cos.min()), 4),
        texts=len(texts),
    )
    questions = json.loads((REPO / "tests" / "data" / "corpus_questions.json").read_text(encoding="utf-8"))
    good = [{i for i, t in enumerate(texts) if q["answer_phrase"].lower() in t.lower()} for q in questions]
    asked = [q for q, g in zip(questions, good, strict=True) if g]
    queries = np.stack([embedder.embed_query(q["question"]) for q in asked])
    result["test_corpus"] = compare("test corpus", vectors["float32"], vectors["int8"], queries, [g for g in good if g])

    if WIKI.is_dir():
        pages = sorted((WIKI / "pages").glob("*.html"))[:pages_n]
        with tempfile.TemporaryDirectory() as tmp:  # the pages under short names (ingest keys sources by path)
            copies = []
            for page in pages:
                copies.append(Path(tmp) / page.name)
                copies[-1].write_bytes(page.read_bytes())
            wiki = texts_by_file(copies, embedder.name, embedder.dimension, args.database_url)
        owner = [name for name in wiki for _ in wiki[name]]
        all_texts = [t for name in wiki for t in wiki[name]]
        qs = [json.loads(line) for line in (WIKI / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
        qs = [q for q in qs if q["page"] in wiki]
        log(f"wikitables: {len(wiki)} pages, {len(all_texts)} texts, {len(qs)} questions")
        started = time.perf_counter()
        pf, pq = bulk(f32, all_texts, limit), bulk(q8, all_texts, limit)
        log(f"  embedded both in {time.perf_counter() - started:.0f} s")
        cos = np.sum(pf * pq, axis=1)
        log(f"  cosine with float32: mean {cos.mean():.4f}, worst {cos.min():.4f}")
        queries = np.stack([embedder.embed_query(q["query"]) for q in qs])
        good = [{i for i, o in enumerate(owner) if o == q["page"]} for q in qs]
        result["wikitables"] = compare("wikitables", pf, pq, queries, good) | {
            "pages": len(wiki),
            "texts": len(all_texts),
            "cosine_mean": round(float(cos.mean()), 4),
            "cosine_min": round(float(cos.min()), 4),
        }
    else:
        log(f"wikitables: {WIKI} is absent; only the test corpus was measured")
    log(machine_line())
    fig, ax = figure(size=(6.4, 4))
    sets = [k for k in ("test_corpus", "wikitables") if k in result]
    labels = [f"{k} hit@{n}" for k in sets for n in (1, 5, 10)]
    for j, precision in enumerate(("float32", "int8")):
        values = [result[k][f"hit@{n}"][precision] for k in sets for n in (1, 5, 10)]
        ax.bar([i + 0.4 * j for i in range(len(labels))], values, width=0.4, label=precision)
    ax.set_xticks([i + 0.2 for i in range(len(labels))], labels, fontsize=7, rotation=20)
    ax.set_ylabel("questions answered in the top k (%)")
    ax.legend()
    save_png(fig, args.out / "bulk_int8.png", title="8-bit bulk encoder against float32, exact search")
    finish("bulk_int8", result, args.out)


if __name__ == "__main__":
    main()
