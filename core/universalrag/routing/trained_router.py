"""The trained router: MiniLM with a multi-label head, loaded from a small artefact directory.

An artefact holds only what training changed, on top of the bundled all-MiniLM-L6-v2 weights:

    config.json         labels, max_length, head shape, default threshold, how it was trained, its metrics
    model.safetensors   the trained tensors (transformer layers that were fine-tuned, the head) in float16 —
                        or, above :data:`SHARD_BYTES`, model-00001-of-0000N.safetensors and so on, as Hugging
                        Face names shards

The default artefact ships inside the package (``routing/artefact``) and loads offline. Inference runs with
ONNX Runtime (:class:`~.encoder.OnnxRouterNet`) when it is installed, else NumPy
(:class:`~.encoder.NumpyRouterNet`) — neither imports torch — when the base encoder is a BERT directory they
support (the bundled MiniLM is), and with torch otherwise or when ``UNIVERSALRAG_INFERENCE=torch``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..embed.numpy_bert import inference_backend, numpy_supported
from ..embed.onnx_bert import query_backend
from ..errors import ConfigError, RoutingError
from .base import DEFAULT_THRESHOLD, ScoringRouter
from .encoder import (
    BASE_MODEL_NAME,
    NumpyRouterNet,
    OnnxRouterNet,
    RouterNet,
    base_model_path,
    load_base,
    set_threads,
    tokenize,
)

__all__ = [
    "ARTEFACT_FORMAT",
    "DEFAULT_ARTEFACT",
    "SHARD_BYTES",
    "TrainedRouter",
    "annotate_artefact",
    "read_artefact_config",
    "save_artefact",
    "weight_files",
]

#: The shipped default model.
DEFAULT_ARTEFACT = Path(__file__).resolve().parent / "artefact"

#: Version tag written into every artefact's config.json.
ARTEFACT_FORMAT = "universalrag-router/1"

_CONFIG = "config.json"
_WEIGHTS = "model.safetensors"
_SHARD = re.compile(r"model-(\d{5})-of-(\d{5})\.safetensors")
#: An artefact's tensors are written in files of at most this many bytes each (a tensor larger than that gets a
#: file of its own): source hosts refuse or warn about files above 20 MB, and the shipped router holds 21 MB.
SHARD_BYTES = 16 * 1024 * 1024


def weight_files(path: str | Path) -> list[Path]:
    """An artefact's weight files in order: ``model.safetensors``, or its shards; ``[]`` when it has none. An
    incomplete set of shards is a :class:`ConfigError`."""
    directory = Path(path)
    if (directory / _WEIGHTS).is_file():
        return [directory / _WEIGHTS]
    shards = sorted(p for p in directory.glob("model-*-of-*.safetensors") if _SHARD.fullmatch(p.name))
    if not shards:
        return []
    count = int(_SHARD.fullmatch(shards[0].name).group(2))  # type: ignore[union-attr]
    if [p.name for p in shards] != [f"model-{i:05d}-of-{count:05d}.safetensors" for i in range(1, count + 1)]:
        raise ConfigError(
            f"Router artefact {str(directory)!r} has an incomplete set of weight files "
            f"({', '.join(p.name for p in shards)}); copy the whole artefact directory again."
        )
    return shards


def _shards(sizes: Mapping[str, int], limit: int) -> list[list[str]]:
    """Tensor names in name order, cut into groups of at most ``limit`` bytes (a larger tensor alone)."""
    groups: list[list[str]] = [[]]
    used = 0
    for name in sorted(sizes):
        if groups[-1] and used + sizes[name] > limit:
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += sizes[name]
    return groups


def write_weights(directory: str | Path, tensors: Mapping[str, Any], *, shard_bytes: int = SHARD_BYTES) -> list[Path]:
    """Write float16 ``tensors`` (torch tensors or NumPy arrays, by name) as an artefact's weight files — one
    ``model.safetensors``, or shards of at most ``shard_bytes`` — replacing the weight files there before;
    returns the files written."""
    import numpy as np

    out = Path(directory)
    groups = _shards({n: int(t.nbytes) for n, t in tensors.items()}, shard_bytes)  # arrays and tensors alike
    names = (
        [_WEIGHTS]
        if len(groups) == 1
        else [f"model-{i:05d}-of-{len(groups):05d}.safetensors" for i in range(1, len(groups) + 1)]
    )
    for old in [out / _WEIGHTS, *(p for p in out.glob("model-*-of-*.safetensors") if _SHARD.fullmatch(p.name))]:
        old.unlink(missing_ok=True)
    if all(isinstance(t, np.ndarray) for t in tensors.values()):
        from safetensors.numpy import save_file
    else:
        from safetensors.torch import save_file  # type: ignore[assignment]
    for name, group in zip(names, groups, strict=True):
        save_file({n: tensors[n] for n in group}, str(out / name), metadata={"format": ARTEFACT_FORMAT})
    return [out / name for name in names]


def read_artefact_config(path: str | Path) -> dict[str, Any]:
    """Read and check an artefact's ``config.json``; raises :class:`ConfigError` naming what is wrong."""
    directory = Path(path)
    file = directory / _CONFIG
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(
            f"No router artefact at {str(directory)!r} ({e.strerror or e}); train one with "
            "`universalrag router train --data FILE.jsonl --out DIR`."
        ) from e
    except ValueError as e:
        raise ConfigError(f"{str(file)!r} is not valid JSON: {e}.") from e
    if config.get("format") != ARTEFACT_FORMAT:
        raise ConfigError(f"{str(file)!r} is not a {ARTEFACT_FORMAT} artefact (format={config.get('format')!r}).")
    if not weight_files(directory):
        raise ConfigError(f"Router artefact {str(directory)!r} has no {_WEIGHTS} (nor shards of it).")
    return config


def save_artefact(net: Any, directory: str | Path, *, config: Mapping[str, Any]) -> Path:
    """Write ``net``'s trainable tensors (float16, :func:`write_weights`) and ``config`` (plus the format tag) to
    ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    trained = {n for n, p in net.named_parameters() if p.requires_grad}
    tensors = {n: t.detach().to("cpu").half().contiguous() for n, t in net.state_dict().items() if n in trained}
    write_weights(out, tensors)
    full = {"format": ARTEFACT_FORMAT, "base_model": BASE_MODEL_NAME, **dict(config)}
    (out / _CONFIG).write_text(json.dumps(full, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return out


def annotate_artefact(directory: str | Path, **entries: Any) -> None:
    """Add top-level entries (e.g. ``metrics``) to an artefact's config.json."""
    config = read_artefact_config(directory)
    config.update(entries)
    (Path(directory) / _CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


class TrainedRouter(ScoringRouter):
    """Routes with a fine-tuned MiniLM and a multi-label head (one sigmoid probability per route).

    ``path`` is an artefact directory (see the module docstring); ``base_path`` the base encoder directory
    (default: the bundled MiniLM). Nothing is read until the first query (or :meth:`load`).
    ``threshold`` defaults to the artefact's (0.8). ``num_threads`` sets torch's thread count on load (the
    NumPy backend leaves threads to BLAS, ONNX Runtime to ``UNIVERSALRAG_ONNX_THREADS``). :attr:`backend` says
    which backend runs.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        base_path: str | Path | None = None,
        candidates: Collection[str] | None = None,
        threshold: float | None = None,
        multi: bool = True,
        name: str = "trained",
        batch_size: int = 64,
        num_threads: int | None = None,
    ) -> None:
        super().__init__(
            name=name,
            candidates=candidates,
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            multi=multi,
        )
        self._path = Path(path)
        self._base_path = Path(base_path) if base_path is not None else None
        self._threshold_given = threshold is not None
        self.batch_size = batch_size
        self._num_threads = num_threads
        self._lock = threading.Lock()
        self._net: Any = None
        self._numpy: NumpyRouterNet | OnnxRouterNet | None = None  # the light backend, when it serves
        self._tokenizer: Any = None
        self._config: dict[str, Any] | None = None

    @classmethod
    def default(cls, **kwargs: Any) -> TrainedRouter:
        """The router shipped with the package, over all seven routes (keyword arguments as the constructor)."""
        return cls(DEFAULT_ARTEFACT, **kwargs)

    def __repr__(self) -> str:
        return f"TrainedRouter(path={str(self._path)!r}, threshold={self.threshold}, loaded={self.loaded})"

    @property
    def loaded(self) -> bool:
        """Whether the network is in memory."""
        return self._net is not None or self._numpy is not None

    @property
    def backend(self) -> str:
        """``"onnx"``, ``"numpy"`` or ``"torch"``: what runs the network (decided without loading it; see
        :func:`~universalrag.embed.onnx_bert.query_backend`)."""
        if self._numpy is not None:
            return "onnx" if isinstance(self._numpy, OnnxRouterNet) else "numpy"
        if self._net is not None:
            return "torch"
        base = self._base_path if self._base_path is not None else base_model_path()
        return query_backend() if inference_backend() != "torch" and numpy_supported(base) else "torch"

    @property
    def path(self) -> Path:
        """The artefact directory."""
        return self._path

    @property
    def config(self) -> dict[str, Any]:
        """The artefact's config.json (read on first access)."""
        if self._config is None:
            self._config = read_artefact_config(self._path)
            if not self._threshold_given:
                self.threshold = float(self._config.get("threshold", DEFAULT_THRESHOLD))
        return self._config

    @property
    def routes(self) -> tuple[str, ...]:
        """The routes the model scores, in label order."""
        return tuple(self.config["labels"])

    def load(self) -> TrainedRouter:
        """Load the encoder and the trained weights now (otherwise done on first use); returns ``self``."""
        if self.loaded:
            return self
        with self._lock:
            if not self.loaded:
                backend = self.backend
                if backend != "torch":
                    self._numpy = self._build_light(OnnxRouterNet if backend == "onnx" else NumpyRouterNet)
                else:
                    self._net, self._tokenizer = self._build()
        return self

    def _build_light(self, kind: type[NumpyRouterNet | OnnxRouterNet]) -> NumpyRouterNet | OnnxRouterNet:
        config = self.config
        return kind.load(
            weight_files(self._path),
            base_path=self._base_path,
            hidden=int(config.get("head_hidden", 0)),
            max_length=int(config.get("max_length", 64)),
            base_config=config.get("base_config", {}),
        )

    def _build(self) -> tuple[Any, Any]:
        import torch
        from safetensors.torch import load_file

        config = self.config
        set_threads(self._num_threads)
        tokenizer, encoder = load_base(self._base_path)
        base = config.get("base_config", {})
        for key, value in base.items():
            if getattr(encoder.config, key, value) != value:
                raise ConfigError(
                    f"Router artefact {str(self._path)!r} was trained on a base encoder with {key}={value}, "
                    f"but the base encoder has {getattr(encoder.config, key)}."
                )
        net = RouterNet(encoder, len(config["labels"]), hidden=int(config.get("head_hidden", 0)))
        tensors = {}
        for file in weight_files(self._path):
            try:
                tensors.update(load_file(str(file)))
            except Exception as e:
                raise ConfigError(f"Cannot read {str(file)!r}: {e}.") from e
        own = net.state_dict()
        unknown = sorted(set(tensors) - set(own))
        if unknown:
            raise ConfigError(f"Router artefact {str(self._path)!r} holds tensors the network lacks: {unknown[:3]}.")
        if not any(k.startswith("head.") for k in tensors):
            raise ConfigError(f"Router artefact {str(self._path)!r} has no head weights.")
        with torch.no_grad():
            for key, tensor in tensors.items():
                if own[key].shape != tensor.shape:
                    raise ConfigError(
                        f"Router artefact tensor {key!r} has shape {tuple(tensor.shape)}, "
                        f"expected {tuple(own[key].shape)}."
                    )
                own[key].copy_(tensor.to(own[key].dtype))
        net.eval()
        return net, tokenizer

    def prepare(self) -> None:
        """Load the model (see :meth:`load`)."""
        self.load()

    def probabilities(self, queries: Sequence[str]) -> Any:
        """Sigmoid probabilities as a NumPy array of shape ``(len(queries), len(routes))``."""
        import numpy as np

        self.load()
        if self._numpy is not None:
            with self._lock:  # the tokenizer is not safe to call concurrently
                parts = [
                    self._numpy.probabilities(list(queries[s : s + self.batch_size]))
                    for s in range(0, len(queries), self.batch_size)
                ]
            return np.concatenate(parts) if parts else np.zeros((0, len(self.routes)), dtype=np.float32)
        import torch

        max_length = int(self.config.get("max_length", 64))
        out = []
        with torch.inference_mode():
            for start in range(0, len(queries), self.batch_size):
                batch = list(queries[start : start + self.batch_size])
                with self._lock:  # fast tokenizers are not safe to call concurrently
                    enc = tokenize(self._tokenizer, batch, max_length=max_length)
                out.append(torch.sigmoid(self._net(**enc)).float().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.routes)), dtype=np.float32)

    def score_many(self, queries: Sequence[str]) -> list[dict[str, float]]:
        """A probability per route for each query."""
        try:
            probs = self.probabilities(queries)
        except (ConfigError, RoutingError):
            raise
        except RuntimeError as e:  # torch failures surface as RuntimeError
            raise RoutingError(f"The trained router failed: {e}") from e
        labels = self.routes
        return [{label: float(p) for label, p in zip(labels, row, strict=True)} for row in probs]
