"""Bulk embedding: which device and batch size a bulk call gets (CUDA chosen when torch sees it, large batches and
float16 there), and ingestion embedding ahead of the files it reads and writes, on a worker thread, with every
vector back in its row, a stop keeping what was embedded and an encoder failure failing only the files not written.

No GPU here: CUDA's presence is what torch reports (``torch.cuda.is_available``), patched; everything else is the
real bundled MiniLM and a real PostgreSQL.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

import universalrag.embed.devices as devices
import universalrag.embed.transformers_encoder as te
import universalrag.ingest.text_group as text_group
from universalrag.embed import TransformersEmbedder
from universalrag.embed.devices import (
    CPU_TORCH_BATCH,
    CUDA_BULK_BATCH,
    bulk_batch_size,
    cuda_wanted,
    half_precision,
    resolve_device,
    to_device,
)
from universalrag.embed.transformers_encoder import BULK_BATCH
from universalrag.errors import ConfigError, EmbeddingError
from universalrag.ingest.pipeline import IngestOptions, ingest_paths
from universalrag.store import Store


@pytest.fixture
def driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An NVIDIA driver file that is there (the machine looks like a GPU machine to the driver check)."""
    path = tmp_path / "nvidia-version"
    path.write_text("NVRM version: test\n")
    monkeypatch.setattr(devices, "NVIDIA_DRIVER", path)
    monkeypatch.setattr(te, "NVIDIA_DRIVER", path)
    return path


@pytest.fixture
def no_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "NVIDIA_DRIVER", tmp_path / "absent")
    monkeypatch.setattr(te, "NVIDIA_DRIVER", tmp_path / "absent")


def _cuda(monkeypatch: pytest.MonkeyPatch, present: bool) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: present)


def test_a_named_device_decides_and_an_unset_one_follows_torch(driver: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cuda_wanted("cuda") and cuda_wanted("cuda:1") and cuda_wanted(" CUDA:0 ")
    assert not cuda_wanted("cpu")
    _cuda(monkeypatch, True)
    assert cuda_wanted(None) and cuda_wanted("") and str(resolve_device(None)) == "cuda"
    assert not cuda_wanted("cpu") and str(resolve_device("cpu")) == "cpu"  # the setting says otherwise
    _cuda(monkeypatch, False)
    assert not cuda_wanted(None) and str(resolve_device(None)) == "cpu"
    with pytest.raises(ConfigError, match="Invalid torch device 'gpu7'"):
        resolve_device("gpu7")


def test_without_a_driver_torch_is_not_asked(no_driver: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _cuda(monkeypatch, True)  # would say CUDA, but no driver is loaded: the CPU, decided without torch
    assert not cuda_wanted(None)


def test_batch_size_and_precision_follow_the_device() -> None:
    import torch

    assert bulk_batch_size(torch.device("cuda:0")) == bulk_batch_size("cuda") == CUDA_BULK_BATCH
    assert bulk_batch_size(torch.device("cpu")) == bulk_batch_size("cpu") == CPU_TORCH_BATCH
    assert CUDA_BULK_BATCH > CPU_TORCH_BATCH > BULK_BATCH
    assert half_precision(torch.device("cuda:1")) and not half_precision("cpu")


def test_a_cuda_device_gets_large_batches_on_torch_and_an_explicit_size_wins(minilm: Any) -> None:
    on_gpu = TransformersEmbedder(minilm.path, device="cuda")
    assert on_gpu.bulk_backend == "torch" and on_gpu.bulk_batch() == CUDA_BULK_BATCH and not on_gpu.loaded
    assert TransformersEmbedder(minilm.path, device="cuda:1", batch_size=32).bulk_batch() == 32
    on_cpu = TransformersEmbedder(minilm.path, device="cpu")
    assert on_cpu.bulk_backend == "onnx" and on_cpu.bulk_batch() == BULK_BATCH
    assert TransformersEmbedder(minilm.path, device="cpu", batch_size=4).bulk_batch() == 4  # smaller: taken


def test_an_unset_device_uses_cuda_when_torch_sees_it_and_onnx_runtime_when_not(
    minilm: Any, driver: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cuda(monkeypatch, True)
    embedder = TransformersEmbedder(minilm.path)
    assert embedder.bulk_backend == "torch" and embedder.bulk_batch() == CUDA_BULK_BATCH
    _cuda(monkeypatch, False)  # a driver but no usable device (CPU-only torch): bulk stays on ONNX Runtime
    embedder = TransformersEmbedder(minilm.path)
    assert embedder.bulk_backend == "onnx" and embedder.bulk_batch() == BULK_BATCH


@pytest.mark.slow
def test_a_float16_model_pools_in_float32_and_matches_float32(minilm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What runs on CUDA (a float16 model), run on the CPU: the vectors stay those of float32."""
    monkeypatch.setenv("UNIVERSALRAG_INFERENCE", "torch")
    texts = ["The ferry to Holm leaves at 07:10.", "Mountain huts open in March. " * 30, "short"]
    embedder = TransformersEmbedder(minilm.path, device="cpu")
    reference = embedder.embed(texts)
    assert not embedder.half
    embedder._model = to_device(embedder._model, "cpu", what="embedding model", half=True)
    halved = embedder.embed(texts)
    assert halved.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(halved, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(reference * halved, axis=1))) > 0.999


# --- ingestion embeds ahead of reading and writing ---------------------------------------------------------------


#: Passages of each file :func:`_passages` writes (the splitter joins its short paragraphs two by two); each file
#: is embedded as its document and these.
PASSAGES = 2


def _passages(i: int) -> str:
    return "\n\n".join(
        f"Station {i}.{j} records the tide at harbour {i} every {j + 5} minutes; its keeper writes the level "
        f"in log book {i * 10 + j} and sends it to the coast office."
        for j in range(6)
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "notes"
    out.mkdir()
    for i in range(8):
        (out / f"n{i:02d}.txt").write_text(_passages(i), encoding="utf-8")
    return out


class Watching:
    """The real encoder, recording each call's thread and texts; ``gate`` (when set) holds the first call until it
    is set, or 60 s."""

    def __init__(self, inner: Any, gate: threading.Event | None = None, fail_on: int | None = None) -> None:
        self.inner, self.gate, self.fail_on = inner, gate, fail_on
        self.name, self.dimension = inner.name, inner.dimension
        self.calls: list[tuple[str, list[str]]] = []
        self.held = False

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.append((threading.current_thread().name, list(texts)))
        if self.gate is not None and len(self.calls) == 1:
            self.held = self.gate.wait(60)
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise EmbeddingError("the encoder's server went away.")
        return self.inner.embed(texts)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        return self.inner.embed_query(text)


def _stored(store: Store) -> dict[str, np.ndarray]:
    units = store.tables.corpus(store.corpus("paragraph")).units
    with store.transaction() as conn:
        return {r.content: np.asarray(r.embedding) for r in conn.execute(sa.select(units.c.content, units.c.embedding))}


def test_files_are_read_while_the_encoder_runs_and_every_vector_lands_in_its_row(
    store: Store, minilm: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_group, "EMBED_SLICE", 4)  # several calls for the group
    last_read = threading.Event()
    real_plan = text_group.plan_text_file

    def plan(run, path, uri, content_hash):  # type: ignore[no-untyped-def]
        planned = real_plan(run, path, uri, content_hash)
        if path.name == "n07.txt":
            last_read.set()
        return planned

    monkeypatch.setattr(text_group, "plan_text_file", plan)
    watching = Watching(minilm, gate=last_read)
    report = ingest_paths(store, watching, [folder])
    assert report.ok and [o.status for o in report.outcomes] == ["added"] * 8
    # the first call was still running when the last file was read: reading did not wait for the encoder
    assert watching.held
    assert {thread for thread, _ in watching.calls} == {"universalrag-embed_0"}
    assert len(watching.calls) >= 6 and all(len(texts) <= 4 for _, texts in watching.calls)
    stored = _stored(store)
    assert len(stored) == 8 * PASSAGES
    sent = [t for _, texts in watching.calls for t in texts]
    for content, vector in stored.items():  # each passage's own vector (of the text embedded for it), in its row
        own = min((t for t in sent if content in t), key=len)  # not its file's document, which holds it too
        assert float(np.dot(minilm.embed([own])[0], vector)) > 0.9999, content


def test_a_stop_keeps_the_files_embedded_and_the_next_run_adds_the_rest(
    store: Store, minilm: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_group, "EMBED_SLICE", 4)
    embedded: list[int] = []

    def on_progress(progress):  # type: ignore[no-untyped-def]
        if progress.stage == "embedded":
            embedded.append(progress.done)

    watching = Watching(minilm)
    options = IngestOptions(should_stop=lambda: len(embedded) >= 2)
    with pytest.raises(KeyboardInterrupt):
        ingest_paths(store, watching, [folder], options=options, on_progress=on_progress)
    kept = {Path(s["uri"]).name for s in store.sources()}
    # what was embedded when the stop came is written (whole files only), and not every call was made
    assert 0 < len(kept) < 8 and len(watching.calls) < 8 * (1 + PASSAGES) // 4
    assert kept == {f"n{i:02d}.txt" for i in range(len(kept))}
    assert len(_stored(store)) == PASSAGES * len(kept)  # no file half-written
    again = ingest_paths(store, minilm, [folder])
    assert [o.status for o in again.outcomes] == ["unchanged"] * len(kept) + ["added"] * (8 - len(kept))
    assert len(_stored(store)) == 8 * PASSAGES


def test_an_encoder_failure_fails_the_files_not_embedded_and_keeps_those_written(
    store: Store, minilm: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_group, "EMBED_SLICE", 2 * (1 + PASSAGES))  # two files a call
    watching = Watching(minilm, fail_on=3)
    report = ingest_paths(store, watching, [folder])
    assert all(len(texts) == 2 * (1 + PASSAGES) for _, texts in watching.calls)
    statuses = [o.status for o in report.outcomes]
    assert statuses == ["added"] * 4 + ["failed"] * 4, statuses
    assert all("server went away" in (o.error or "") for o in report.outcomes[4:])
    assert len(_stored(store)) == 4 * PASSAGES and len(store.sources()) == 4


# --- the 8-bit bulk encoder that was measured (benchmarks/bulk_int8.py) --------------------------------------------


@pytest.mark.slow
def test_the_measured_8_bit_encoder_stays_close_to_float32_and_ingestion_never_uses_it(minilm: Any) -> None:
    from universalrag.embed.onnx_bert import OnnxBert

    texts = [_passages(i) for i in range(3)] + ["short", "The ferry to Holm leaves at 07:10."]
    int8 = OnnxBert.load(minilm.path, threads=1, dynamic_int8=True)
    ids, mask = int8.tokenize(texts, max_length=256)
    pooled = int8.mean_pooled(ids, mask)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    reference = minilm.embed(texts)
    cosines = np.sum(pooled * reference, axis=1)
    assert float(cosines.min()) > 0.98 and float(cosines.max()) < 0.99999  # close, yet not the float32 vectors
    with pytest.raises(ConfigError, match="not both"):
        OnnxBert.load(minilm.path, threads=1, dynamic_int8=True, quantized=True)
    embedder = TransformersEmbedder(minilm.path, device="cpu")
    embedder.embed(texts * 20)  # a bulk call
    assert embedder._bulk is not None and not embedder._bulk.dynamic_int8 and not embedder._bulk.quantized
