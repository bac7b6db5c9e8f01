"""Training the router: MiniLM + a multi-label head with binary cross-entropy, seeded end to end.

Two modes, measured against each other (see the benchmarks):

- ``finetune``: the top ``trainable_layers`` transformer layers and a linear head are trained, the
  embedding table (and any lower layer) stays frozen, so the artefact stores only those layers;
- ``frozen``: the encoder is frozen; mean-pooled embeddings are computed once and a small MLP head is
  trained on them (a tiny artefact, quick to train).

Source imbalance is softened by weighting each example by ``(mean source size / its source size) ** balance``.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .base import ROUTES
from .dataset import LabelledQuery, labels_of
from .encoder import RouterNet, load_base, seed_everything, set_threads, tokenize
from .trained_router import save_artefact

__all__ = ["TRAIN_MODES", "TrainConfig", "TrainResult", "train_router"]

#: Batches per length-sorting window.
_WINDOW = 16

#: Defaults per mode: fine-tuning needs few epochs at a small rate; a head on frozen features needs many.
_MODE_DEFAULTS: dict[str, dict[str, Any]] = {
    "finetune": {"epochs": 6, "head_hidden": 0},
    "frozen": {"epochs": 60, "head_hidden": 256, "head_lr": 2e-3},
}

#: Progress callback: ``(stage, done, total)``.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Hyper-parameters of one training run (all recorded in the artefact)."""

    mode: str = "finetune"
    trainable_layers: int = 6
    epochs: int = 6
    batch_size: int = 32
    lr: float = 8e-5
    head_lr: float = 2e-3
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 64
    dropout: float = 0.1
    head_hidden: int = 0
    balance: float = 0.5
    seed: int = 0
    threshold: float = 0.8
    num_threads: int | None = None

    @classmethod
    def for_mode(cls, mode: str, **overrides: Any) -> TrainConfig:
        """The measured defaults of a mode (``finetune`` or ``frozen``), with ``overrides`` applied."""
        if mode not in _MODE_DEFAULTS:
            raise ConfigError(f"Unknown training mode {mode!r}; choose one of {sorted(_MODE_DEFAULTS)}.")
        return cls(**{"mode": mode, **_MODE_DEFAULTS[mode], **overrides})

    def __post_init__(self) -> None:
        if self.mode not in TRAIN_MODES:
            raise ConfigError(f"Unknown training mode {self.mode!r}; choose one of {sorted(TRAIN_MODES)}.")
        if self.epochs < 1 or self.batch_size < 1:
            raise ConfigError("epochs and batch_size must be at least 1.")
        if not 0 <= self.trainable_layers <= 24:
            raise ConfigError(f"trainable_layers must be between 0 and 24, got {self.trainable_layers}.")


@dataclass(slots=True)
class TrainResult:
    """What a run produced: the network (float32, eval mode), its tokenizer, labels, and the run's log."""

    net: Any
    tokenizer: Any
    labels: tuple[str, ...]
    config: TrainConfig
    seconds: float
    losses: list[float] = field(default_factory=list)

    def artefact_config(self, **extra: Any) -> dict[str, Any]:
        """The config.json content for :func:`~universalrag.routing.trained_router.save_artefact`."""
        enc = self.net.encoder.config
        return {
            "labels": list(self.labels),
            "max_length": self.config.max_length,
            "head_hidden": self.config.head_hidden if self.config.mode == "frozen" else 0,
            "threshold": self.config.threshold,
            "base_config": {
                "hidden_size": enc.hidden_size,
                "num_hidden_layers": enc.num_hidden_layers,
                "vocab_size": enc.vocab_size,
            },
            "training": {**asdict(self.config), "seconds": round(self.seconds, 1)},
            **extra,
        }

    def save(self, directory: str | Path, **extra: Any) -> Path:
        """Write the artefact (trained tensors in float16 + config.json) to ``directory``."""
        return save_artefact(self.net, directory, config=self.artefact_config(**extra))


def _targets(rows: Sequence[LabelledQuery], labels: Sequence[str]) -> Any:
    import torch

    index = {label: i for i, label in enumerate(labels)}
    y = torch.zeros(len(rows), len(labels))
    for i, row in enumerate(rows):
        for r in row.routes:
            y[i, index[r]] = 1.0
    return y


def _weights(rows: Sequence[LabelledQuery], balance: float) -> Any:
    import torch

    counts = Counter(r.source for r in rows)
    mean = len(rows) / len(counts)
    w = torch.tensor([(mean / counts[r.source]) ** balance for r in rows])
    return w / w.mean()


def _freeze(net: Any, trainable_layers: int) -> None:
    for p in net.encoder.parameters():
        p.requires_grad = False
    layers = net.encoder.encoder.layer
    for layer in list(layers)[len(layers) - trainable_layers :] if trainable_layers else []:
        for p in layer.parameters():
            p.requires_grad = True


def _schedule(optimizer: Any, total: int, warmup: float) -> Any:
    import torch

    ramp = max(1, int(total * warmup))

    def factor(step: int) -> float:
        if step < ramp:
            return (step + 1) / ramp
        return max(0.0, (total - step) / max(1, total - ramp))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _length_batches(lengths: Sequence[int], batch_size: int, gen: Any) -> list[list[int]]:
    """Shuffled batches of similar lengths (less padding): shuffle, sort within windows of 16 batches,
    cut into batches, shuffle the batches."""
    import torch

    order = torch.randperm(len(lengths), generator=gen).tolist()
    window = batch_size * _WINDOW
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda i: lengths[i])
        batches.extend(chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=gen).tolist()]


def _train_finetune(
    net: Any, tokenizer: Any, rows: Sequence[LabelledQuery], y: Any, w: Any, cfg: TrainConfig, progress: Progress | None
) -> list[float]:
    import torch

    _freeze(net, cfg.trainable_layers)
    enc_params = [p for p in net.encoder.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [{"params": enc_params, "lr": cfg.lr}, {"params": list(net.head.parameters()), "lr": cfg.head_lr}],
        weight_decay=cfg.weight_decay,
    )
    window = cfg.batch_size * _WINDOW
    steps_per_epoch = sum(math.ceil(min(window, len(rows) - s) / cfg.batch_size) for s in range(0, len(rows), window))
    total = steps_per_epoch * cfg.epochs
    scheduler = _schedule(optimizer, total, cfg.warmup)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    gen = torch.Generator().manual_seed(cfg.seed)
    texts = [r.query for r in rows]
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=cfg.max_length)["input_ids"]]
    losses: list[float] = []
    step = 0
    for _ in range(cfg.epochs):
        net.train()
        net.encoder.embeddings.eval()  # frozen: keep its dropout off too
        batches = _length_batches(lengths, cfg.batch_size, gen)
        running = 0.0
        for idx in batches:
            enc = tokenize(tokenizer, [texts[i] for i in idx], max_length=cfg.max_length)
            logits = net(**enc)
            loss = (loss_fn(logits, y[idx]).mean(1) * w[idx]).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], 1.0)
            optimizer.step()
            scheduler.step()
            running += float(loss.detach())
            step += 1
            if progress:
                progress("train", step, total)
        losses.append(running / steps_per_epoch)
    net.eval()
    return losses


def _embed_all(net: Any, tokenizer: Any, texts: Sequence[str], cfg: TrainConfig, progress: Progress | None) -> Any:
    import torch

    out = []
    with torch.inference_mode():
        for start in range(0, len(texts), 64):
            enc = tokenize(tokenizer, texts[start : start + 64], max_length=cfg.max_length)
            out.append(net.embed(**enc))
            if progress:
                progress("embed", min(start + 64, len(texts)), len(texts))
    return torch.cat(out).clone()


def _train_frozen(
    net: Any, tokenizer: Any, rows: Sequence[LabelledQuery], y: Any, w: Any, cfg: TrainConfig, progress: Progress | None
) -> list[float]:
    import torch

    _freeze(net, 0)
    x = _embed_all(net, tokenizer, [r.query for r in rows], cfg, progress)
    epochs = cfg.epochs
    optimizer = torch.optim.AdamW(net.head.parameters(), lr=cfg.head_lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(rows) / cfg.batch_size)
    scheduler = _schedule(optimizer, steps_per_epoch * epochs, cfg.warmup)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    gen = torch.Generator().manual_seed(cfg.seed)
    losses = []
    net.head.train()
    for epoch in range(epochs):
        order = torch.randperm(len(rows), generator=gen)
        running = 0.0
        for b in range(steps_per_epoch):
            idx = order[b * cfg.batch_size : (b + 1) * cfg.batch_size]
            loss = (loss_fn(net.head(net.dropout(x[idx])), y[idx]).mean(1) * w[idx]).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            running += float(loss.detach())
        losses.append(running / steps_per_epoch)
        if progress:
            progress("train", epoch + 1, epochs)
    net.eval()
    return losses


#: Training modes by name (a registry, so that new modes plug in without touching the caller).
TRAIN_MODES: dict[str, Callable[..., list[float]]] = {"finetune": _train_finetune, "frozen": _train_frozen}


def train_router(
    rows: Sequence[LabelledQuery],
    *,
    config: TrainConfig | None = None,
    base_path: str | Path | None = None,
    labels: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> TrainResult:
    """Train a router on ``rows``. Labels default to the seven routes plus any other route in the data.

    Deterministic for a given seed, data and thread count. ``progress(stage, done, total)`` reports
    the ``embed`` and ``train`` stages.
    """
    import torch

    cfg = config or TrainConfig()
    if not rows:
        raise ConfigError("No training rows.")
    set_threads(cfg.num_threads)
    seed_everything(cfg.seed)
    label_set = tuple(labels) if labels is not None else labels_of(rows, base=ROUTES)
    missing = {r for row in rows for r in row.routes} - set(label_set)
    if missing:
        raise ConfigError(f"Routes {sorted(missing)} occur in the data but not among the labels.")
    start = time.perf_counter()
    tokenizer, encoder = load_base(base_path)
    hidden = cfg.head_hidden if cfg.mode == "frozen" else 0
    net = RouterNet(encoder, len(label_set), dropout=cfg.dropout, hidden=hidden)
    torch.manual_seed(cfg.seed)  # the head's initialisation
    for module in net.head.modules():
        if isinstance(module, torch.nn.Linear):
            module.reset_parameters()
    y = _targets(rows, label_set)
    w = _weights(rows, cfg.balance)
    losses = TRAIN_MODES[cfg.mode](net, tokenizer, rows, y, w, cfg, progress)
    return TrainResult(net, tokenizer, label_set, cfg, time.perf_counter() - start, losses)
