"""A BERT encoder run with NumPy: CPU inference for the bundled MiniLM (and any BERT directory) without torch.

A query costs milliseconds, but importing torch and transformers costs seconds; this module needs only NumPy,
``safetensors`` (weights, read straight from the model directory) and ``tokenizers`` (the model's
``tokenizer.json``). It computes what ``transformers.BertModel`` computes in evaluation mode — embeddings, then
post-norm self-attention layers with exact (erf) GELU — in float32, so its outputs match the torch path to
rounding (cosine ≥ 0.9999, checked in ``tests/test_numpy_inference.py``).

Used for CPU inference (query embedding, routing); torch stays for training and GPUs. See
:func:`numpy_supported` for which directories qualify.

A forward pass runs BLAS on one thread (:func:`blas_threads`) unless ``OPENBLAS_NUM_THREADS`` or
``OMP_NUM_THREADS`` is set: OpenBLAS threads spin while they wait, and on a busy machine two of them made
routing 15-20x slower than one (``benchmarks/encoder_backends.py``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError

__all__ = [
    "INFERENCE_ENV",
    "BertWeights",
    "NumpyBert",
    "blas_threads",
    "inference_backend",
    "numpy_supported",
    "read_bert_config",
    "tokenize_batch",
]

#: Environment variable choosing the CPU inference backend: ``auto`` (default), ``onnx``, ``numpy`` or ``torch``.
INFERENCE_ENV = "UNIVERSALRAG_INFERENCE"

_WEIGHTS = "model.safetensors"
_TOKENIZER = "tokenizer.json"


_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter: Any = None
_blas_controller: Any = None  # threadpoolctl's scan of the loaded BLAS libraries, done once (it reads /proc)


@contextlib.contextmanager
def blas_threads() -> Iterator[None]:
    """Run the body with BLAS on one thread (restored after the last concurrent user leaves), unless the
    user chose a thread count through ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``."""
    global _blas_users, _blas_limiter, _blas_controller
    if any(os.environ.get(v) for v in _THREAD_VARS):
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            if _blas_controller is None:
                from threadpoolctl import ThreadpoolController

                _blas_controller = ThreadpoolController()
            _blas_limiter = _blas_controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


def inference_backend() -> str:
    """Which backend CPU inference uses (``UNIVERSALRAG_INFERENCE``): ``"auto"`` (default: ONNX Runtime when it is
    installed, bulk embedding included, on a session of its own; else NumPy for queries and small batches and
    torch for bulk embedding, where its kernels beat NumPy's), ``"onnx"`` (ONNX Runtime throughout), ``"numpy"``
    (NumPy throughout, never import torch) or ``"torch"``. ``auto`` is resolved by
    :func:`.onnx_bert.query_backend` and, for bulk calls, ``TransformersEmbedder.bulk_backend``."""
    value = os.environ.get(INFERENCE_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "onnx", "numpy", "torch"):
        raise ConfigError(
            f"{INFERENCE_ENV}={value!r} is not a backend; use 'auto' (default), 'onnx', 'numpy' or 'torch'."
        )
    return value


def read_bert_config(directory: Path) -> dict[str, Any]:
    """``directory/config.json`` as a dict; a :class:`ConfigError` says what is wrong with it."""
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"Cannot read {str(directory / 'config.json')!r}: {e}. Fix or replace the file.") from e
    if not isinstance(config, dict):
        raise ConfigError(f"{str(directory / 'config.json')!r} does not hold a JSON object.")
    return config


def numpy_supported(directory: str | Path) -> bool:
    """Whether ``directory`` holds a BERT encoder this module runs: ``model_type`` bert, absolute positions,
    exact GELU, ``model.safetensors`` and ``tokenizer.json``."""
    path = Path(directory)
    if not ((path / _WEIGHTS).is_file() and (path / _TOKENIZER).is_file() and (path / "config.json").is_file()):
        return False
    try:
        config = read_bert_config(path)
    except ConfigError:
        return False
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act", "gelu") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and not config.get("is_decoder", False)
    )


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, ``x * Φ(x)``, as ``torch.nn.functional.gelu`` without approximation; overwrites ``x``.

    erf comes from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, float32 rounding), computed in place:
    NumPy has no erf, and SciPy's would cost an import of SciPy.
    """
    a = np.abs(x)
    a *= np.float32(1.0 / math.sqrt(2.0))
    np.minimum(a, np.float32(6.0), out=a)  # erf(6) is 1 in float32; larger values would underflow exp slowly
    t = a * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # erfc(|x|/√2)
    np.subtract(np.float32(1.0), poly, out=poly)  # erf(|x|/√2)
    np.copysign(poly, x, out=poly)
    poly += np.float32(1.0)
    x *= poly
    x *= np.float32(0.5)
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def _softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def tokenize_batch(tokenizer: Any, texts: Sequence[str], *, max_length: int) -> tuple[np.ndarray, np.ndarray]:
    """``(input_ids, attention_mask)`` as int64 arrays padded to the longest text, truncated to ``max_length``
    tokens (special tokens included), as a transformers fast tokenizer does; ``tokenizer`` is a
    ``tokenizers.Tokenizer`` (not safe to call concurrently: callers serialise)."""
    truncation = tokenizer.truncation
    if truncation is None or truncation.get("max_length") != max_length:
        tokenizer.enable_truncation(max_length)  # room is kept for [CLS] and [SEP]
    rows = [enc.ids for enc in tokenizer.encode_batch(list(texts))]
    width = max((len(r) for r in rows), default=0)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (in, 3*hidden), transposed for x @ w
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    mid_w: np.ndarray
    mid_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class BertWeights:
    """The tensors of a BERT encoder as float32 NumPy arrays, by their transformers names (``embeddings.…``,
    ``encoder.layer.N.…``). ``overrides`` replaces tensors by name (a fine-tuned router's layers)."""

    def __init__(self, tensors: Mapping[str, np.ndarray]) -> None:
        self._tensors = dict(tensors)

    @classmethod
    def read(cls, file: str | Path | Sequence[str | Path], *, prefix: str = "") -> BertWeights:
        """Read a safetensors file, or the shards of one (memory-mapped by ``safetensors``), keeping the tensors
        whose names start with ``prefix`` (stripped); float16 tensors become float32."""
        from safetensors import SafetensorError, safe_open

        tensors: dict[str, np.ndarray] = {}
        for path in [file] if isinstance(file, (str, Path)) else file:
            try:
                with safe_open(str(path), framework="numpy") as f:
                    for name in f.keys():  # noqa: SIM118 - a safe_open handle is not iterable
                        if name.startswith(prefix):
                            tensors[name[len(prefix) :]] = f.get_tensor(name)
            except (OSError, SafetensorError) as e:
                raise ConfigError(f"Cannot read {str(path)!r}: {e}.") from e
        return cls(tensors)

    def names(self) -> set[str]:
        """Every tensor name."""
        return set(self._tensors)

    def get(self, name: str) -> np.ndarray:
        """One tensor as float32; a :class:`ConfigError` names a missing one."""
        try:
            value = self._tensors[name]
        except KeyError:
            raise ConfigError(f"The encoder weights have no tensor {name!r}.") from None
        return np.ascontiguousarray(value, dtype=np.float32)

    def with_overrides(self, overrides: Mapping[str, np.ndarray]) -> BertWeights:
        """These weights with ``overrides`` in place of same-named tensors (shapes must agree)."""
        merged = dict(self._tensors)
        for name, value in overrides.items():
            own = merged.get(name)
            if own is not None and tuple(own.shape) != tuple(value.shape):
                raise ConfigError(f"Tensor {name!r} has shape {tuple(value.shape)}, expected {tuple(own.shape)}.")
            merged[name] = value
        return BertWeights(merged)


class NumpyBert:
    """A BERT encoder in NumPy: token ids in, last hidden states or mean-pooled vectors out.

    Build with :meth:`load` (a model directory) or the constructor (a config dict and :class:`BertWeights`).
    Thread-safe: the forward pass holds no state, and the tokenizer is used through ``encode_batch`` under
    the caller's lock where needed (``tokenizers`` objects are not safe to call concurrently).
    """

    def __init__(self, config: Mapping[str, Any], weights: BertWeights, *, tokenizer: Any = None) -> None:
        self.hidden_size = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        self.tokenizer = tokenizer
        g = weights.get
        self._word = g("embeddings.word_embeddings.weight")
        self._position = g("embeddings.position_embeddings.weight")
        self._type0 = g("embeddings.token_type_embeddings.weight")[0]
        self._emb_ln = (g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
        self._layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            att = p + "attention.self."
            self._layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(
                        np.concatenate([g(att + "query.weight"), g(att + "key.weight"), g(att + "value.weight")]).T
                    ),
                    qkv_b=np.concatenate([g(att + "query.bias"), g(att + "key.bias"), g(att + "value.bias")]),
                    out_w=np.ascontiguousarray(g(p + "attention.output.dense.weight").T),
                    out_b=g(p + "attention.output.dense.bias"),
                    ln1_w=g(p + "attention.output.LayerNorm.weight"),
                    ln1_b=g(p + "attention.output.LayerNorm.bias"),
                    mid_w=np.ascontiguousarray(g(p + "intermediate.dense.weight").T),
                    mid_b=g(p + "intermediate.dense.bias"),
                    down_w=np.ascontiguousarray(g(p + "output.dense.weight").T),
                    down_b=g(p + "output.dense.bias"),
                    ln2_w=g(p + "output.LayerNorm.weight"),
                    ln2_b=g(p + "output.LayerNorm.bias"),
                )
            )

    @classmethod
    def load(cls, directory: str | Path, *, overrides: Mapping[str, np.ndarray] | None = None) -> NumpyBert:
        """The encoder in ``directory`` (see :func:`numpy_supported`), its tokenizer from ``tokenizer.json``;
        ``overrides`` replaces tensors by name (e.g. fine-tuned layers)."""
        path = Path(directory)
        if not numpy_supported(path):
            raise ConfigError(
                f"{str(path)!r} is not a BERT directory with model.safetensors and tokenizer.json "
                "that the NumPy backend runs; set UNIVERSALRAG_INFERENCE=torch."
            )
        weights = BertWeights.read(path / _WEIGHTS)
        if overrides:
            weights = weights.with_overrides(overrides)
        return cls(read_bert_config(path), weights, tokenizer=cls.load_tokenizer(path))

    @staticmethod
    def load_tokenizer(directory: str | Path) -> Any:
        """The ``tokenizers.Tokenizer`` of ``directory/tokenizer.json``, without its stored padding."""
        from tokenizers import Tokenizer

        file = Path(directory) / _TOKENIZER
        try:
            tokenizer = Tokenizer.from_file(str(file))
        except Exception as e:  # tokenizers raises a bare Exception for malformed files
            raise ConfigError(f"Cannot read {str(file)!r}: {e}.") from e
        tokenizer.no_padding()
        return tokenizer

    def tokenize(self, texts: Sequence[str], *, max_length: int) -> tuple[np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask)`` as int64 arrays padded to the longest text, truncated to
        ``max_length`` tokens (special tokens included), as a transformers fast tokenizer does."""
        if self.tokenizer is None:
            raise ConfigError("This NumpyBert was built without a tokenizer.")
        return tokenize_batch(self.tokenizer, texts, max_length=max_length)

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The last hidden states, float32 of shape ``(batch, length, hidden)``."""
        batch, length = input_ids.shape
        if length > self.max_positions:
            raise ConfigError(f"{length} tokens exceed the encoder's {self.max_positions} positions.")
        x = self._word[input_ids] + self._position[:length] + self._type0
        x = _layer_norm(x, *self._emb_ln, self.eps)
        heads, width = self.heads, self.hidden_size // self.heads
        scale = np.float32(1.0 / math.sqrt(width))
        # masked keys get the dtype's minimum, as transformers' additive mask does
        additive = np.where(attention_mask[:, None, None, :] > 0, np.float32(0.0), np.finfo(np.float32).min).astype(
            np.float32
        )
        for layer in self._layers:
            qkv = x @ layer.qkv_w + layer.qkv_b  # (B, L, 3H)
            qkv = qkv.reshape(batch, length, 3, heads, width).transpose(2, 0, 3, 1, 4)  # (3, B, h, L, w)
            q, k, v = qkv[0], qkv[1], qkv[2]
            probs = _softmax((q * scale) @ k.transpose(0, 1, 3, 2) + additive)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden_size)
            x = _layer_norm(context @ layer.out_w + layer.out_b + x, layer.ln1_w, layer.ln1_b, self.eps)
            mid = gelu(x @ layer.mid_w + layer.mid_b)
            x = _layer_norm(mid @ layer.down_w + layer.down_b + x, layer.ln2_w, layer.ln2_b, self.eps)
        return x

    def mean_pooled(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Mean of the last hidden states over real tokens, float32 ``(batch, hidden)`` (not normalised)."""
        with blas_threads():
            hidden = self.hidden_states(input_ids, attention_mask)
        mask = attention_mask[..., None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), np.float32(1e-9))
