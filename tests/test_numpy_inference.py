"""The NumPy inference path (query embedding and the trained router without torch) against the torch path,
on real queries from the shared routing data and real passages from tests/data; and a cold command in a
subprocess that must not import torch, transformers, sentence-transformers, scikit-learn or SciPy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.inference_texts import corpus_passages, routing_queries
from support.shared_data import ROUTING_TRAIN, reason

from universalrag.embed import TransformersEmbedder
from universalrag.embed.numpy_bert import INFERENCE_ENV, NumpyBert, inference_backend, numpy_supported
from universalrag.errors import ConfigError
from universalrag.routing import TrainedRouter
from universalrag.routing.encoder import base_model_path

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy")


@pytest.fixture(scope="module")
def queries() -> list[str]:
    rows = routing_queries()
    if rows is None:
        pytest.skip(reason(ROUTING_TRAIN))
    return rows  # ~310 real queries of every route and source


@pytest.fixture
def torch_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INFERENCE_ENV, "torch")


def _passages() -> list[str]:
    # the last is longer than the 256-token limit: truncated alike
    return [*corpus_passages(), " ".join(["lighthouse"] * 600)]


def test_backend_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    assert inference_backend() == "auto"  # auto's choice between ONNX and NumPy: tests/test_onnx_inference.py
    monkeypatch.setenv(INFERENCE_ENV, "numpy")
    assert numpy_supported(base_model_path())
    assert TransformersEmbedder.bundled_minilm(device="cpu").backend == "numpy"
    assert TransformersEmbedder.bundled_minilm(device="cuda").backend == "torch"  # GPUs stay with torch
    assert TrainedRouter.default().backend == "numpy"
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta", "hidden_size": 8}))
    assert not numpy_supported(tmp_path)
    assert TransformersEmbedder(tmp_path, device="cpu").backend == "torch"
    monkeypatch.setenv(INFERENCE_ENV, "torch")
    assert TransformersEmbedder.bundled_minilm(device="cpu").backend == "torch"
    assert TrainedRouter.default().backend == "torch"
    monkeypatch.setenv(INFERENCE_ENV, "tensorflow")
    with pytest.raises(ConfigError, match="UNIVERSALRAG_INFERENCE"):
        inference_backend()


def test_numpy_encoder_matches_torch_on_real_queries_and_passages(
    queries: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = queries + _passages()
    monkeypatch.setenv(INFERENCE_ENV, "numpy")  # NumPy for every call, bulk ones too
    fast = TransformersEmbedder.bundled_minilm(device="cpu")
    got = fast.embed(texts)
    assert fast.backend == "numpy" and fast.loaded
    monkeypatch.setenv(INFERENCE_ENV, "torch")
    reference = TransformersEmbedder.bundled_minilm(device="cpu")
    want = reference.embed(texts)
    assert reference.backend == "torch"
    assert got.dtype == np.float32 and got.shape == want.shape == (len(texts), 384)
    cosine = (got * want).sum(axis=1)
    assert cosine.min() >= 0.9999, f"worst cosine {cosine.min():.6f} for {texts[int(cosine.argmin())]!r}"
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.allclose(fast.embed_query(queries[0]), got[0], atol=1e-5)


def test_numpy_tokenisation_equals_the_transformers_tokenizer(queries: list[str]) -> None:
    from transformers import AutoTokenizer

    texts = [*queries[:50], " ".join(["naïve café 北京"] * 200), "   ", "Ünïcödé—dashes…"]
    bert = NumpyBert.load(base_model_path())
    reference = AutoTokenizer.from_pretrained(str(base_model_path()), local_files_only=True)
    for limit in (64, 256):
        ids, mask = bert.tokenize(texts, max_length=limit)
        enc = reference(texts, padding=True, truncation=True, max_length=limit, return_tensors="np")
        assert np.array_equal(ids, enc["input_ids"]) and np.array_equal(mask, enc["attention_mask"])


# the NumPy router against torch: tests/test_onnx_inference.py::test_light_router_matches_torch[numpy]


def test_router_artefact_with_foreign_tensors_is_a_config_error(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    from universalrag.routing.trained_router import DEFAULT_ARTEFACT

    config = json.loads((DEFAULT_ARTEFACT / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file(
        {
            "head.weight": np.zeros((7, 384), np.float16),
            "head.bias": np.zeros(7, np.float16),
            "encoder.pooler.extra": np.zeros(3, np.float16),
        },
        str(tmp_path / "model.safetensors"),
    )
    with pytest.raises(ConfigError, match="lacks"):
        TrainedRouter(tmp_path).route("anything")
    save_file(
        {"encoder.encoder.layer.0.output.dense.bias": np.zeros(384, np.float16)}, str(tmp_path / "model.safetensors")
    )
    with pytest.raises(ConfigError, match="head"):
        TrainedRouter(tmp_path).route("anything")


_COLD = """
import json, sys
from universalrag.cli.entry import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
else:
    code = 0
print(json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules],
                  "ingest": "universalrag.ingest" in sys.modules}))
"""


@pytest.mark.parametrize("command", [["route"], ["search", "-k", "2"]])
def test_cold_command_imports_no_torch(command: list[str], cli_env: dict[str, str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")} | cli_env
    argv = [command[0], "When did the Apollo 11 crew land on the Moon?", *command[1:], "--no-server"]
    proc = subprocess.run(
        [sys.executable, "-c", _COLD % (HEAVY,), *argv], env=env, capture_output=True, text=True, timeout=600
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stderr
    assert report["heavy"] == [], f"the cold {command[0]} imported {report['heavy']}"
    assert not report["ingest"]  # nor the ingestion package (its readers and their libraries: ~0.2 s)
    assert proc.stdout.count("\n") > 1  # it printed its answer before the report


@pytest.mark.parametrize("onnx", [True, False], ids=["onnx-installed", "onnx-missing"])
def test_auto_embeds_queries_light_and_bulk_on_onnx_or_torch(
    queries: list[str], onnx: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default: a query or a small batch never loads torch (ONNX Runtime serves it, NumPy when ONNX Runtime
    does not import); an ingest-sized call runs on ONNX Runtime's bulk session when it is installed, else on torch
    (faster than NumPy for batches), and gives the same vectors."""
    from universalrag.embed.transformers_encoder import BULK_TEXTS

    monkeypatch.delenv(INFERENCE_ENV, raising=False)
    if not onnx:
        monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    auto = TransformersEmbedder.bundled_minilm(device="cpu")
    assert auto.bulk_backend == ("onnx" if onnx else "torch")
    small = auto.embed(queries[:3])
    assert auto.backend == ("onnx" if onnx else "numpy") and auto._model is None
    bulk = auto.embed(queries[:BULK_TEXTS])
    assert auto._numpy is not None
    if onnx:
        assert auto._model is None and auto._bulk is not None
    else:
        assert auto._model is not None and auto._bulk is None
    assert float((small * bulk[:3]).sum(axis=1).min()) >= 0.9999  # the same vectors either way
    assert np.allclose(auto.embed_query(queries[0]), small[0], atol=1e-6)  # queries stay on the light backend
    monkeypatch.setenv(INFERENCE_ENV, "numpy")
    numpy_only = TransformersEmbedder.bundled_minilm(device="cpu")
    assert numpy_only.bulk_backend == "numpy"
    numpy_only.embed(queries[:BULK_TEXTS])
    assert numpy_only._model is None and numpy_only._bulk is None
