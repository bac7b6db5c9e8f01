"""A text embedder for any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, LM Studio).

The ``openai`` package is an optional extra (``pip install 'universalrag-postgres[openai]'``) imported on first use.
The API key is never shown: not in ``repr``, not in error messages, not in logs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError, EmbeddingError
from ..openai_client import OpenAIClients, redact_url, translate_error
from .base import check_texts

__all__ = ["OpenAIEmbedder", "KNOWN_DIMENSIONS"]

#: Native output widths of OpenAI's embedding models (used when ``dimensions`` is not given).
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

#: Advice for the kinds of failure where the generic one says too little (see ``translate_error``).
_HINTS = {
    "timeout": "Raise timeout=, lower batch_size, or check that the server is up.",
    "connection": "Cannot reach the server: check the base URL (UNIVERSALRAG_EMBED_BASE_URL) and that it is up.",
    "auth": "Check the API key (api_key=, UNIVERSALRAG_EMBED_API_KEY or OPENAI_API_KEY) and that it may use "
    "this model.",
    "rate_limit": "The endpoint is rate limiting or out of quota; retry later, lower batch_size, or raise max_retries.",
    "bad_request": "The endpoint rejected the request: check the model name, that no text is empty or too long, "
    "and that the model supports dimensions= if given.",
}


def _normalise(rows: list[list[float]]) -> np.ndarray:
    arr = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.maximum(norms, np.float32(1e-12))


class OpenAIEmbedder:
    """Embeds texts through an OpenAI-compatible embeddings endpoint; outputs are L2-normalised float32.

    ``dimensions`` asks the endpoint for shortened vectors (text-embedding-3-* and compatible models).
    ``dimension`` states the width a model outside :data:`KNOWN_DIMENSIONS` returns, when it is known; otherwise
    :meth:`resolve_dimension` asks the endpoint once (and any embedding call learns it), and until then
    :attr:`dimension` raises :class:`ConfigError` instead of calling the network. ``base_url`` points at another
    server (for example ``http://localhost:11434/v1``); with a ``base_url`` and no key anywhere, a placeholder key
    is sent, as local servers expect. Texts are sent ``batch_size`` at a time. ``timeout`` bounds each request
    (one batch) with its retries included: a hung or failing endpoint costs ``timeout``, not ``timeout`` per
    attempt. Clients are created on first use; the constructor does no I/O.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        dimension: int | None = None,
        batch_size: int = 256,
        timeout: float = 60,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("OpenAIEmbedder needs a model name, for example 'text-embedding-3-small'.")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"dimensions must be a positive integer, got {dimensions}.")
        if dimension is not None and dimension < 1:
            raise ConfigError(f"dimension must be a positive integer, got {dimension}.")
        if dimensions is not None and dimension is not None and dimension != dimensions:
            raise ConfigError(f"dimension={dimension} contradicts dimensions={dimensions} (the width asked for).")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}.")
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive (seconds), got {timeout}.")
        self.model = model.strip()
        self.base_url = base_url
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._api_key = api_key
        self._dimension: int | None = dimensions or dimension or KNOWN_DIMENSIONS.get(self.model)
        self._lock = threading.Lock()
        self._openai = OpenAIClients(
            base_url,
            api_key=api_key,
            timeout=self.timeout,
            max_retries=max_retries,
            feature="OpenAI embeddings",
            error_type=EmbeddingError,
            no_key="No API key for OpenAI embeddings: pass api_key=, or set UNIVERSALRAG_EMBED_API_KEY or "
            "OPENAI_API_KEY.",
        )

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return (
            f"OpenAIEmbedder(model={self.model!r}, base_url={redact_url(self.base_url)!r}, "
            f"api_key={key!r}, dimensions={self.dimensions!r}, batch_size={self.batch_size})"
        )

    @property
    def name(self) -> str:
        """``openai:<model>``, plus ``@<dimensions>`` when shortened vectors are requested."""
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        """The width of the vectors: ``dimensions``/``dimension``, the model's known width, or the one learnt by
        :meth:`resolve_dimension` or an embedding call. Never calls the network."""
        if self._dimension is None:
            raise ConfigError(
                f"The width of model {self.model!r}'s vectors is not known yet; pass dimension=N (or "
                "'openai:MODEL@N' / UNIVERSALRAG_EMBED_DIMENSIONS for a model that can shorten its vectors), or "
                "call resolve_dimension() to ask the endpoint once."
            )
        return self._dimension

    def resolve_dimension(self) -> int:
        """The width of the vectors, asking the endpoint with one short request when it is not known yet."""
        if self._dimension is None:
            self._record_dimension(self._request(["dimension"]).shape[1])
        return self.dimension

    async def aresolve_dimension(self) -> int:
        """Async twin of :meth:`resolve_dimension`."""
        if self._dimension is None:
            self._record_dimension((await self._arequest(["dimension"])).shape[1])
        return self.dimension

    # -- requests ----------------------------------------------------------------------------------------

    def _params(self, batch: list[str]) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            params["dimensions"] = self.dimensions
        return params

    def _parse(self, response: Any, expected: int) -> np.ndarray:
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != expected:
            raise EmbeddingError(
                f"The embeddings endpoint returned {len(data)} vectors for {expected} texts "
                f"(model {self.model!r}); check that the server supports batched input."
            )
        vectors = _normalise([list(d.embedding) for d in data])
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise EmbeddingError(
                f"Model {self.model!r} returned {vectors.shape[1]}-dimensional vectors, expected "
                f"{self._dimension}; pass dimensions= matching the model, or check the model name."
            )
        return vectors

    def _record_dimension(self, width: int) -> None:
        with self._lock:
            if self._dimension is None:
                self._dimension = int(width)

    def _request(self, batch: list[str]) -> np.ndarray:
        params = self._params(batch)
        try:  # every attempt and pause inside one deadline of ``timeout`` seconds
            response = self._openai.call(lambda client: client.embeddings.create(**params))
        except Exception as e:  # SDK errors are translated, anything else re-raised
            if (error := self._translate(e)) is None:
                raise
            raise error from e
        return self._parse(response, len(batch))

    async def _arequest(self, batch: list[str]) -> np.ndarray:
        params = self._params(batch)
        try:
            response = await self._openai.acall(lambda client: client.embeddings.create(**params))
        except Exception as e:  # SDK errors are translated, anything else re-raised
            if (error := self._translate(e)) is None:
                raise
            raise error from e
        return self._parse(response, len(batch))

    def _translate(self, e: Exception) -> EmbeddingError | None:
        """An EmbeddingError with an actionable sentence for an SDK error; ``None`` for other errors."""
        return translate_error(
            e,
            error_type=EmbeddingError,
            what=f"The embedding request for model {self.model!r}",
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            hints=_HINTS,
        )

    # -- public API --------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch of passages; returns float32 of shape ``(len(texts), dimension)``, rows of norm 1."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.resolve_dimension()), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            part = self._request(items[start : start + self.batch_size])
            self._record_dimension(part.shape[1])
            parts.append(part)
        return np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query; returns float32 of shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise EmbeddingError(f"embed_query() takes one string, got {type(text).__name__}.")
        return self.embed([text])[0]

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed`, using the SDK's async client."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, await self.aresolve_dimension()), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            part = await self._arequest(items[start : start + self.batch_size])
            self._record_dimension(part.shape[1])
            parts.append(part)
        return np.concatenate(parts, axis=0)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        if not isinstance(text, str):
            raise EmbeddingError(f"embed_query() takes one string, got {type(text).__name__}.")
        return (await self.aembed([text]))[0]
