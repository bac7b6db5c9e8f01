"""A text embedder for any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, LM Studio).

The ``openai`` package is an optional extra (``pip install 'universalrag[openai]'``) imported on first use.
The API key is never shown: not in ``repr``, not in error messages, not in logs.
"""

from __future__ import annotations

import asyncio
import re
import threading
from urllib.parse import urlsplit, urlunsplit
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ConfigError, EmbeddingError, MissingDependencyError
from .transformers_encoder import _check_texts

__all__ = ["OpenAIEmbedder", "KNOWN_DIMENSIONS"]

#: Native output widths of OpenAI's embedding models (used when ``dimensions`` is not given).
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

#: Sent to endpoints that need no key (local servers) when neither ``api_key`` nor OPENAI_API_KEY is set.
_PLACEHOLDER_KEY = "unused"


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as e:
        raise MissingDependencyError("openai", "openai", feature="OpenAI embeddings") from e
    return openai


def _normalize(rows: list[list[float]]) -> np.ndarray:
    arr = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.maximum(norms, np.float32(1e-12))


class OpenAIEmbedder:
    """Embeds texts through an OpenAI-compatible embeddings endpoint; outputs are L2-normalised float32.

    ``dimensions`` asks the endpoint for shortened vectors (text-embedding-3-* and compatible models).
    ``base_url`` points at another server (for example ``http://localhost:11434/v1``); with a
    ``base_url`` and no key anywhere, a placeholder key is sent, as local servers expect. Texts are sent
    ``batch_size`` at a time. Clients are created on first use; the constructor does no I/O.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        timeout: float = 60,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("OpenAIEmbedder needs a model name, for example 'text-embedding-3-small'.")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"dimensions must be a positive integer, got {dimensions}.")
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
        self._dimension: int | None = dimensions or KNOWN_DIMENSIONS.get(self.model)
        self._lock = threading.Lock()
        self._client: Any = None
        self._aclient: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return (f"OpenAIEmbedder(model={self.model!r}, base_url={_safe_url(self.base_url)!r}, "
                f"api_key={key!r}, dimensions={self.dimensions!r}, batch_size={self.batch_size})")

    @property
    def name(self) -> str:
        """``openai:<model>``, plus ``@<dimensions>`` when shortened vectors are requested."""
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        """The ``dimensions`` argument, else the model's known width, else one probe request (once)."""
        if self._dimension is None:
            self._record_dimension(self._request(["dimension"]).shape[1])
        assert self._dimension is not None
        return self._dimension

    # -- clients -----------------------------------------------------------------------------------------

    def _make_client(self, cls_name: str) -> Any:
        openai = _import_openai()
        cls = getattr(openai, cls_name)
        kwargs: dict[str, Any] = {"base_url": self.base_url, "timeout": self.timeout,
                                  "max_retries": self.max_retries}
        try:
            return cls(api_key=self._api_key, **kwargs)
        except openai.OpenAIError as e:
            if self.base_url is None:
                raise EmbeddingError(
                    "No API key for OpenAI embeddings: pass api_key=, or set UNIVERSALRAG_EMBED_API_KEY "
                    "or OPENAI_API_KEY."
                ) from e
            try:
                return cls(api_key=_PLACEHOLDER_KEY, **kwargs)
            except openai.OpenAIError as again:
                raise EmbeddingError(f"Cannot create an OpenAI client for {_safe_url(self.base_url)}: "
                                     f"{_scrub(str(again), self._api_key)}") from again

    def _sync_client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make_client("OpenAI")
        return self._client

    def _async_client(self) -> Any:
        # An async client's connection pool belongs to one event loop: make one per running loop.
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._aclient is None or self._aclient[0] is not loop:
                self._aclient = (loop, self._make_client("AsyncOpenAI"))
            return self._aclient[1]

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
        vectors = _normalize([list(d.embedding) for d in data])
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
        client = self._sync_client()
        try:
            response = client.embeddings.create(**self._params(batch))
        except Exception as e:  # noqa: BLE001 - SDK errors are translated, anything else re-raised
            self._raise_translated(e)
            raise
        return self._parse(response, len(batch))

    async def _arequest(self, batch: list[str]) -> np.ndarray:
        client = self._async_client()
        try:
            response = await client.embeddings.create(**self._params(batch))
        except Exception as e:  # noqa: BLE001 - SDK errors are translated, anything else re-raised
            self._raise_translated(e)
            raise
        return self._parse(response, len(batch))

    def _raise_translated(self, e: Exception) -> None:
        """Raise an EmbeddingError with an actionable sentence for an SDK error; return for other errors."""
        openai = _import_openai()
        where = _safe_url(self.base_url) or "the OpenAI API"
        for cls_name, advice in _ADVICE:
            cls = getattr(openai, cls_name, None)
            if cls is not None and isinstance(e, cls):
                detail = _scrub(getattr(e, "message", None) or str(e), self._api_key)
                status = getattr(e, "status_code", None)
                code = f" (HTTP {status})" if status else ""
                raise EmbeddingError(
                    f"Embedding request to {where} for model {self.model!r} failed{code}: {detail} "
                    + advice(self)
                ) from e

    # -- public API --------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch of passages; returns float32 of shape ``(len(texts), dimension)``, rows of norm 1."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            part = self._request(items[start:start + self.batch_size])
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
        items = _check_texts(texts)
        if not items:
            if self._dimension is None:
                self._record_dimension((await self._arequest(["dimension"])).shape[1])
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            part = await self._arequest(items[start:start + self.batch_size])
            self._record_dimension(part.shape[1])
            parts.append(part)
        return np.concatenate(parts, axis=0)

    async def aembed_query(self, text: str) -> np.ndarray:
        """Async twin of :meth:`embed_query`."""
        if not isinstance(text, str):
            raise EmbeddingError(f"embed_query() takes one string, got {type(text).__name__}.")
        return (await self.aembed([text]))[0]


def _safe_url(url: str | None) -> str | None:
    """``url`` without any user:password part."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _scrub(message: str, secret: str | None) -> str:
    """``message`` shortened to 300 characters, with ``secret`` replaced by ``***``."""
    message = _STATUS_PREFIX.sub("", message)  # the status is reported separately
    if secret:
        message = message.replace(secret, "***")
    return message if len(message) <= 300 else message[:297] + "..."


_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")

#: SDK exception class name → advice; the first match wins, so subclasses come before their bases.
_ADVICE: tuple[tuple[str, Callable[[OpenAIEmbedder], str]], ...] = (
    ("AuthenticationError", lambda s: "Check the API key (api_key=, UNIVERSALRAG_EMBED_API_KEY or "
                                      "OPENAI_API_KEY)."),
    ("PermissionDeniedError", lambda s: f"The key is not allowed to use model {s.model!r}; check its "
                                        "permissions."),
    ("NotFoundError", lambda s: f"Check that model {s.model!r} exists on this endpoint and that the base URL "
                                "ends in /v1."),
    ("RateLimitError", lambda s: "The endpoint is rate limiting or out of quota; retry later, lower "
                                 "batch_size, or raise max_retries."),
    ("BadRequestError", lambda s: "The endpoint rejected the request: check the model name, that no text is "
                                  "empty or too long, and that the model supports dimensions= if given."),
    ("UnprocessableEntityError", lambda s: "The endpoint rejected the request body; check the model name and "
                                           "dimensions=."),
    ("APIStatusError", lambda s: "The endpoint returned an error; check its logs and retry."),
    ("APITimeoutError", lambda s: f"No answer within {s.timeout:g} s; raise timeout=, lower batch_size, or "
                                  "check that the server is up."),
    ("APIConnectionError", lambda s: f"Cannot reach {_safe_url(s.base_url) or 'the OpenAI API'}; check the "
                                     "base URL (UNIVERSALRAG_EMBED_BASE_URL) and that the server is up."),
    ("APIResponseValidationError", lambda s: "The endpoint's answer is not an OpenAI embeddings response; "
                                             "check that the base URL points at an OpenAI-compatible /v1."),
    ("OpenAIError", lambda s: "Check the endpoint settings."),
)
