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
from support.shared_data import ROUTING_TRAIN, reason

from universalrag.embed import TransformersEmbedder
from universalrag.embed.numpy_bert import INFERENCE_ENV
from universalrag.embed.onnx_bert import (
    ONNX_THREADS_ENV,
    ONNX_WEIGHTS_ENV,
    QUANT_BLOCK,
    OnnxBert,
    block_quantize,
    bulk_threads,
    onnx_available,
    query_backend,
    query_weights_quantized,
)
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
        pytest.skip(reason(ROUTING_TRAIN))
    return rows + EXTRA  # ~310 real queries of every route and source, then the odd ones


@pytest.fixture(scope="module")
def torch_vectors(queries: list[str]) -> np.ndarray:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(INFERENCE_ENV, "torch")
        reference = TransformersEmbedder.bundled_minilm(device="cpu")
        assert reference.backend == "torch"
        return reference.embed(queries + corpus_passages())


def test_onnx_encoder_matches_torch(
    queries: list[str], torch_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = queries + corpus_passages()
    monkeypatch.setenv(INFERENCE_ENV, "onnx")  # ONNX Runtime for every call, bulk ones too
    monkeypatch.delenv(ONNX_WEIGHTS_ENV, raising=False)  # float32 (8-bit query weights: the tests below)
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
def test_light_router_matches_torch(
    backend: str,
    queries: list[str],
    torch_routes: tuple[np.ndarray, list[tuple[str, ...]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    want, routes = torch_routes
    monkeypatch.setenv(INFERENCE_ENV, backend)
    monkeypatch.delenv(ONNX_WEIGHTS_ENV, raising=False)
    fast = TrainedRouter.default()
    got = fast.probabilities(queries)
    assert fast.backend == backend
    assert got.shape == want.shape == (len(queries), len(fast.routes))
    assert np.abs(got - want).max() <= 1e-4
    assert np.array_equal(got.argmax(axis=1), want.argmax(axis=1))
    for text in EXTRA:  # alone, unpadded: the same as in the batch
        np.testing.assert_allclose(fast.probabilities([text])[0], got[queries.index(text)], atol=1e-5)
    assert [fast.route(q).routes for q in queries[:40]] == routes


def test_block_quantize_keeps_each_weight_within_half_a_step() -> None:
    rng = np.random.default_rng(0)
    weight = rng.normal(0, 0.05, (48, 3 * QUANT_BLOCK)).astype(np.float32)
    weight[5, :QUANT_BLOCK] = 0.0  # an all-zero block
    weight[7, 3] = 2.5  # an outlier widens the step of its own block only
    codes, scales = block_quantize(weight)
    assert codes.dtype == np.uint8 and codes.shape == (48, 3, QUANT_BLOCK) and scales.shape == (48 * 3,)
    blocks = scales.reshape(48, 3)
    restored = ((codes.astype(np.float32) - 128) * blocks[:, :, None]).reshape(weight.shape)
    assert np.all(np.abs(restored - weight) <= blocks.repeat(QUANT_BLOCK, axis=1) / 2 + 1e-7)
    assert np.all(codes[5, 0] == 128) and codes.min() >= 1  # zero is code 128; ±127 steps, never -128
    assert blocks[7, 0] == pytest.approx(2.5 / 127) and blocks[7, 1] < 0.3 / 127


def test_query_weights_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ONNX_WEIGHTS_ENV, raising=False)
    assert not query_weights_quantized()  # float32 unless asked
    monkeypatch.setenv(ONNX_WEIGHTS_ENV, " INT8 ")
    assert query_weights_quantized()
    monkeypatch.setenv(ONNX_WEIGHTS_ENV, "int4")
    with pytest.raises(ConfigError, match=ONNX_WEIGHTS_ENV):
        query_weights_quantized()


def test_int8_queries_stay_near_torch_and_passages_stay_exact(
    queries: list[str], torch_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``UNIVERSALRAG_ONNX_WEIGHTS=int8`` the query session runs on 8-bit weights: its vectors keep a cosine of
    0.9995 on average with torch's on ~310 real queries and the long and non-ASCII ones (0.998 at worst); passages,
    even a batch of three in a process that holds the query session, come from the float32 weights, as torch
    computes them."""
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    monkeypatch.setenv(ONNX_WEIGHTS_ENV, "int8")
    embedder = TransformersEmbedder.bundled_minilm(device="cpu")
    got = np.stack([embedder.embed_query(q) for q in queries])
    session = embedder._numpy
    assert isinstance(session, OnnxBert) and session.quantized and session.threads == 1
    cosine = (got * torch_vectors[: len(queries)]).sum(axis=1)
    assert cosine.min() >= 0.998, f"worst cosine {cosine.min():.6f} for {queries[int(cosine.argmin())]!r}"
    assert cosine.mean() >= 0.9995  # (the worst: the one-letter query "x", 0.9989)
    assert cosine.min() < 0.99999  # the weights really are quantized: not the float32 vectors
    passages = corpus_passages()[:3]
    exact = embedder.embed(passages)
    assert embedder._bulk is not None and embedder._bulk is not session and not embedder._bulk.quantized
    want = torch_vectors[len(queries) : len(queries) + 3]
    assert float((exact * want).sum(axis=1).min()) >= 0.9999


def test_int8_router_agrees_with_torch(
    queries: list[str], torch_routes: tuple[np.ndarray, list[tuple[str, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The router on 8-bit weights picks torch's top route for nearly every real query, its probabilities within a
    few points."""
    want, _ = torch_routes
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    monkeypatch.setenv(ONNX_WEIGHTS_ENV, "int8")
    fast = TrainedRouter.default()
    got = fast.probabilities(queries)
    assert fast.backend == "onnx" and fast._numpy.bert.quantized  # type: ignore[union-attr]
    agree = float((got.argmax(axis=1) == want.argmax(axis=1)).mean())
    assert agree >= 0.98, f"top route agrees on {agree:.1%} of {len(queries)} queries"
    assert np.abs(got - want).max() <= 0.15 and np.quantile(np.abs(got - want), 0.99) <= 0.05


def test_auto_prefers_onnx_and_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    monkeypatch.delenv(ONNX_WEIGHTS_ENV, raising=False)
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


def test_bulk_embedding_runs_on_its_own_onnx_session(
    queries: list[str], torch_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    unsorted = sum(
        int(lengths[i : i + BULK_BATCH].max()) * len(lengths[i : i + BULK_BATCH])
        for i in range(0, len(texts), BULK_BATCH)
    )
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
    monkeypatch.setenv(ONNX_THREADS_ENV, "1")  # every session on one thread: no need for a second one ...
    monkeypatch.delenv(ONNX_WEIGHTS_ENV, raising=False)  # ... when queries run on the passages' weights
    embedder = TransformersEmbedder.bundled_minilm(device="cpu")
    first = embedder.embed_query(queries[0])
    bulk = embedder.embed(queries[:BULK_TEXTS])
    assert embedder._bulk is embedder._numpy and bulk_threads() == 1
    np.testing.assert_allclose(bulk[0], first, atol=1e-5)
    monkeypatch.setenv(ONNX_WEIGHTS_ENV, "int8")
    quantized = TransformersEmbedder.bundled_minilm(device="cpu")
    quantized.embed_query(queries[0])
    np.testing.assert_allclose(quantized.embed(queries[:2]), bulk[:2], atol=1e-5)  # a session of its own
    assert quantized._bulk is not quantized._numpy and quantized._numpy.quantized  # type: ignore[union-attr]
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
