"""The ONNX Runtime inference path (query embedding and the trained router, graph built from the safetensors
weights) against the torch path, on real queries from the shared routing data, long (truncated) and non-ASCII
texts and real passages; and which backend ``UNIVERSALRAG_INFERENCE`` picks when ONNX Runtime is or is not
importable."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from support.inference_texts import corpus_passages, routing_queries
from universalrag.embed import TransformersEmbedder
from universalrag.embed.numpy_bert import INFERENCE_ENV
from universalrag.embed.onnx_bert import ONNX_THREADS_ENV, OnnxBert, bulk_threads, onnx_available, query_backend
from universalrag.embed.transformers_encoder import BULK_BATCH, BULK_TEXTS
from universalrag.errors import ConfigError
from universalrag.routing import TrainedRouter
from universalrag.routing.encoder import base_model_path

pytest.importorskip("onnxruntime")

#: Texts the shared data lacks: longer than both token limits (truncated alike), non-ASCII scripts, odd spacing.
EXTRA = [
    " ".join(["lighthouse keepers recorded the storm"] * 80),  # ~400 tokens: beyond 64 and 256
    " ".join(["naïve café 北京 Ünïcödé—dashes…"] * 60),
    "Какая самая высокая гора в Европе?",
    "東京タワーの高さは何メートルですか？",
    "¿Cuántos habitantes tiene Buenos Aires?",
    "   what   is\tthe  boiling point of water  ",
    "x",
]


@pytest.fixture(scope="module")
def queries() -> list[str]:
    rows = routing_queries()
    if rows is None:
        pytest.skip("shared routing data (shared/data/routing/train.jsonl) not found")
    return rows + EXTRA  # ~310 real queries of every route and source, then the odd ones


@pytest.fixture(scope="module")
def torch_vectors(queries: list[str]) -> np.ndarray:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(INFERENCE_ENV, "torch")
        reference = TransformersEmbedder.bundled_minilm(device="cpu")
        assert reference.backend == "torch"
        return reference.embed(queries + corpus_passages())


def test_onnx_encoder_matches_torch(queries: list[str], torch_vectors: np.ndarray,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    texts = queries + corpus_passages()
    monkeypatch.setenv(INFERENCE_ENV, "onnx")  # ONNX Runtime for every call, bulk ones too
    fast = TransformersEmbedder.bundled_minilm(device="cpu")
    got = fast.embed(texts)
    assert fast.backend == "onnx" and fast._model is None
    assert got.dtype == np.float32 and got.shape == torch_vectors.shape == (len(texts), 384)
    cosine = (got * torch_vectors).sum(axis=1)
    assert cosine.min() >= 0.9999, f"worst cosine {cosine.min():.6f} for {texts[int(cosine.argmin())]!r}"
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # one query at a time (no padding) gives what the padded batch gave, the long and non-ASCII ones too
    for i in [0, 1, *range(len(queries) - len(EXTRA), len(queries))]:
        single = fast.embed_query(texts[i])
        assert float(single @ torch_vectors[i]) >= 0.9999, texts[i]
        assert np.allclose(single, got[i], atol=1e-5), texts[i]


@pytest.fixture(scope="module")
def torch_routes(queries: list[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(INFERENCE_ENV, "torch")
        reference = TrainedRouter.default()
        probabilities = reference.probabilities(queries)
        assert reference.backend == "torch"
        return probabilities, [reference.route(q).routes for q in queries[:40]]


@pytest.mark.parametrize("backend", ["onnx", "numpy"])
def test_light_router_matches_torch(backend: str, queries: list[str],
                                    torch_routes: tuple[np.ndarray, list[tuple[str, ...]]],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    want, routes = torch_routes
    monkeypatch.setenv(INFERENCE_ENV, backend)
    fast = TrainedRouter.default()
    got = fast.probabilities(queries)
    assert fast.backend == backend
    assert got.shape == want.shape == (len(queries), len(fast.routes))
    assert np.abs(got - want).max() <= 1e-4
    assert np.array_equal(got.argmax(axis=1), want.argmax(axis=1))
    for text in EXTRA:  # alone, unpadded: the same as in the batch
        np.testing.assert_allclose(fast.probabilities([text])[0], got[queries.index(text)], atol=1e-5)
    assert [fast.route(q).routes for q in queries[:40]] == routes


def test_auto_prefers_onnx_and_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    assert onnx_available() and query_backend() == "onnx"
    embedder, router = TransformersEmbedder.bundled_minilm(device="cpu"), TrainedRouter.default()
    assert embedder.backend == router.backend == "onnx"
    assert TransformersEmbedder.bundled_minilm(device="cuda").backend == "torch"  # GPUs stay with torch
    with_onnx = embedder.embed_query("Which planet has the most moons?")
    routed = router.probabilities(["Which planet has the most moons?"])

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed: import fails
    assert not onnx_available() and query_backend() == "numpy"
    embedder, router = TransformersEmbedder.bundled_minilm(device="cpu"), TrainedRouter.default()
    assert embedder.backend == router.backend == "numpy"
    assert float(embedder.embed_query("Which planet has the most moons?") @ with_onnx) >= 0.9999
    assert embedder.backend == "numpy"  # it loaded NumPy, not ONNX Runtime
    np.testing.assert_allclose(router.probabilities(["Which planet has the most moons?"]), routed, atol=1e-4)

    monkeypatch.setenv(INFERENCE_ENV, "onnx")  # asked for explicitly, but missing: a ConfigError that says so
    with pytest.raises(ConfigError, match="onnxruntime"):
        TransformersEmbedder.bundled_minilm(device="cpu").embed_query("anything")
    with pytest.raises(ConfigError, match="onnxruntime"):
        TrainedRouter.default().route("anything")


def test_onnx_threads_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    path = base_model_path()
    one = OnnxBert.load(path)
    ids, mask = one.tokenize(["When did the Apollo 11 crew land on the Moon?", "Hi"], max_length=64)
    monkeypatch.setenv(ONNX_THREADS_ENV, "2")
    two = OnnxBert.load(path)
    np.testing.assert_allclose(two.mean_pooled(ids, mask), one.mean_pooled(ids, mask), atol=1e-5)
    with pytest.raises(ConfigError, match="has no head|without a head"):
        one.logits(ids, mask)
    for bad in ("0", "many"):
        monkeypatch.setenv(ONNX_THREADS_ENV, bad)
        with pytest.raises(ConfigError, match=ONNX_THREADS_ENV):
            OnnxBert.load(path)


def test_bulk_embedding_runs_on_its_own_onnx_session(queries: list[str], torch_vectors: np.ndarray,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The default for ingestion: a bulk call runs on an ONNX Runtime session with a thread per core, in small
    length-sorted batches, never loads torch, and gives torch's vectors; later passages of the same process
    reuse that session, while a query still gets the one-thread session it always had."""
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    monkeypatch.delenv(ONNX_THREADS_ENV, raising=False)
    texts = queries + corpus_passages()
    embedder = TransformersEmbedder.bundled_minilm(device="cpu")
    assert embedder.bulk_backend == "onnx" and len(texts) >= BULK_TEXTS
    session = embedder._bulk_session()
    assert session.threads == bulk_threads() == len(os.sched_getaffinity(0))
    shapes: list[tuple[int, int]] = []
    run = session.mean_pooled

    def recording(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        shapes.append(ids.shape)
        return run(ids, mask)

    monkeypatch.setattr(session, "mean_pooled", recording)
    got = embedder.embed(texts)
    assert embedder._model is None and embedder._numpy is None  # neither torch nor the query session loaded
    cosine = (got * torch_vectors).sum(axis=1)
    assert cosine.min() >= 0.9999, f"worst cosine {cosine.min():.6f} for {texts[int(cosine.argmin())]!r}"
    assert sum(rows for rows, _ in shapes) == len(texts) and max(rows for rows, _ in shapes) <= BULK_BATCH
    # longest first: far less padding than the same batches in input order
    lengths = session.tokenize(texts, max_length=256)[1].sum(axis=1)  # tokens of each text
    unsorted = sum(int(lengths[i:i + BULK_BATCH].max()) * len(lengths[i:i + BULK_BATCH])
                   for i in range(0, len(texts), BULK_BATCH))
    assert sum(rows * width for rows, width in shapes) < 0.9 * unsorted

    shapes.clear()
    few = embedder.embed(texts[:3])  # passages after a bulk call: the same session, no second one
    assert len(shapes) == 1 and embedder._numpy is None
    np.testing.assert_allclose(few, got[:3], atol=1e-5)
    query = embedder.embed_query(texts[0])  # a query: the one-thread query session, as before
    assert len(shapes) == 1 and isinstance(embedder._numpy, OnnxBert) and embedder._numpy.threads == 1
    np.testing.assert_allclose(query, got[0], atol=1e-5)


def test_bulk_session_is_the_query_session_on_one_thread(queries: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    monkeypatch.setenv(ONNX_THREADS_ENV, "1")  # every session on one thread: no need for a second one
    embedder = TransformersEmbedder.bundled_minilm(device="cpu")
    first = embedder.embed_query(queries[0])
    bulk = embedder.embed(queries[:BULK_TEXTS])
    assert embedder._bulk is embedder._numpy and bulk_threads() == 1
    np.testing.assert_allclose(bulk[0], first, atol=1e-5)
    monkeypatch.setenv(ONNX_THREADS_ENV, "3")
    assert bulk_threads() == 3
    monkeypatch.setenv(ONNX_THREADS_ENV, "none")
    with pytest.raises(ConfigError, match=ONNX_THREADS_ENV):
        bulk_threads()


def test_onnx_rejects_a_directory_it_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta", "hidden_size": 8}))
    with pytest.raises(ConfigError, match="UNIVERSALRAG_INFERENCE=torch"):
        OnnxBert.load(tmp_path)


def test_onnx_backend_is_safe_to_share_between_threads(queries: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv(INFERENCE_ENV, "onnx")
    embedder, router = TransformersEmbedder.bundled_minilm(device="cpu"), TrainedRouter.default()
    texts = queries[:24]
    vectors, probabilities = embedder.embed(texts), router.probabilities(texts)
    with ThreadPoolExecutor(max_workers=6) as pool:  # one session and one tokenizer each, called from six threads
        got_vectors = list(pool.map(embedder.embed_query, texts))
        got_probabilities = list(pool.map(lambda q: router.probabilities([q])[0], texts))
    np.testing.assert_allclose(np.stack(got_vectors), vectors, atol=1e-5)
    np.testing.assert_allclose(np.stack(got_probabilities), probabilities, atol=1e-5)
