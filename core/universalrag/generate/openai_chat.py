"""A generator for any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio).

The ``openai`` package is an optional extra (``pip install 'universalrag[openai]'``) imported on first
use; the constructor does no I/O. Pictures go as ``image_url`` parts, so evidence with images or frames
needs a vision-language model. The API key is never shown: not in ``repr``, not in error messages.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError, GenerationError, MissingDependencyError
from ..types import Evidence
from .base import Generation, check_inputs
from .prompt import build_messages, parse_citations

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["OpenAIChatGenerator"]

logger = logging.getLogger(__name__)

#: Sent to endpoints that need no key (local servers) when no key is configured and a base URL is given.
_PLACEHOLDER_KEY = "not-needed"
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as e:
        raise MissingDependencyError("openai", "openai", feature="answer generation") from e
    return openai


class OpenAIChatGenerator:
    """Answers from evidence with a chat model behind an OpenAI-compatible ``/v1/chat/completions``.

    ``base_url`` points at another server (for example ``http://localhost:11434/v1``); with a ``base_url``
    and no key, a placeholder key is sent, as local servers expect. ``system_prompt`` replaces
    :data:`~universalrag.generate.prompt.DEFAULT_SYSTEM_PROMPT`. ``max_retries`` is the SDK's retry count
    for connection errors, 408/409/429 and 5xx. Failures raise :class:`GenerationError`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 512,
        temperature: float = 0.0,
        system_prompt: str | None = None,
        max_retries: int = 1,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("OpenAIChatGenerator needs a model name, for example 'gpt-4o-mini'.")
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive (seconds), got {timeout}.")
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {max_tokens}.")
        if not 0.0 <= temperature <= 2.0:
            raise ConfigError(f"temperature must be between 0 and 2, got {temperature}.")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be 0 or more, got {max_retries}.")
        self.model = model.strip()
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.system_prompt = system_prompt
        self.max_retries = int(max_retries)
        self._api_key = api_key
        self._lock = threading.Lock()
        self._client: Any = None
        self._aclient: tuple[asyncio.AbstractEventLoop, Any] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> OpenAIChatGenerator | None:
        """A generator for ``settings.llm_model`` at ``llm_base_url`` with ``llm_api_key``, or ``None`` when
        no model is configured (set ``UNIVERSALRAG_LLM_MODEL``). ``overrides`` go to the constructor."""
        if not settings.llm_model:
            return None
        kwargs: dict[str, Any] = {"base_url": settings.llm_base_url, "api_key": settings.llm_api_key}
        kwargs.update(overrides)
        return cls(settings.llm_model, **kwargs)

    @property
    def name(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self.model}"

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return (f"OpenAIChatGenerator(model={self.model!r}, base_url={_safe_url(self.base_url)!r}, "
                f"api_key={key!r}, max_tokens={self.max_tokens}, temperature={self.temperature})")

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
                raise GenerationError(
                    "No API key for the language model: pass api_key=, or set UNIVERSALRAG_LLM_API_KEY or "
                    "OPENAI_API_KEY (or UNIVERSALRAG_LLM_BASE_URL for a local server that needs none)."
                ) from e
            try:
                return cls(api_key=_PLACEHOLDER_KEY, **kwargs)
            except openai.OpenAIError as again:
                raise GenerationError(f"Cannot create an OpenAI client for {_safe_url(self.base_url)}: "
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

    def _params(self, query: str, items: Sequence[Evidence]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": build_messages(query, items, system_prompt=self.system_prompt),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def _finish(self, response: Any, items: Sequence[Evidence]) -> Generation:
        where = _safe_url(self.base_url) or "the OpenAI API"
        try:
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, IndexError, TypeError):
            raise GenerationError(
                f"The chat endpoint {where} returned no choices for model {self.model!r}; check that the base "
                "URL points at an OpenAI-compatible /v1."
            ) from None
        text = message.content if isinstance(getattr(message, "content", None), str) else ""
        finish = getattr(choice, "finish_reason", None)
        if not text.strip():
            refusal = getattr(message, "refusal", None)
            if refusal:
                reason = f"it refused: {_scrub(str(refusal), self._api_key)}"
            elif finish == "length":
                reason = f"it ran out of tokens (max_tokens={self.max_tokens}); raise max_tokens="
            else:
                reason = "check that the model is a chat model and that the server is healthy"
            raise GenerationError(f"Model {self.model!r} at {where} returned an empty answer; {reason}.")
        if finish == "length":
            logger.warning("The answer of %s was cut at max_tokens=%d.", self.model, self.max_tokens)
        return Generation(
            text=text.strip(),
            citations=parse_citations(text, items),
            model=str(getattr(response, "model", None) or self.model),
            usage=_usage(getattr(response, "usage", None)),
        )

    def _translate(self, e: Exception, items: Sequence[Evidence]) -> GenerationError | None:
        """A GenerationError with an actionable sentence for an SDK error; ``None`` for other errors."""
        openai = _import_openai()
        if not isinstance(e, openai.OpenAIError):
            return None
        where = _safe_url(self.base_url) or "the OpenAI API"
        prefix = f"The chat request to {where} for model {self.model!r} failed"
        if isinstance(e, openai.APITimeoutError):
            return GenerationError(
                f"{prefix}: no answer within {self.timeout:g} s. Raise timeout=, lower max_tokens= or send less "
                "evidence, and check that the server is up."
            )
        if isinstance(e, openai.APIConnectionError):
            return GenerationError(
                f"{prefix}: cannot connect. Check the base URL (UNIVERSALRAG_LLM_BASE_URL) and that the server "
                "is running."
            )
        if isinstance(e, openai.APIStatusError):
            status = e.status_code
            if status in (401, 403):  # the server's message may echo part of the key: leave it out
                return GenerationError(
                    f"{prefix} (HTTP {status}): the endpoint refused the API key. Check api_key=, "
                    "UNIVERSALRAG_LLM_API_KEY or OPENAI_API_KEY, and that the key may use this model."
                )
            detail = _scrub(_status_detail(e), self._api_key)
            return GenerationError(f"{prefix} (HTTP {status}): {detail} {_advice(self, status, items)}")
        return GenerationError(
            f"{prefix}: {_scrub(str(e), self._api_key)} Check that the base URL points at an "
            "OpenAI-compatible /v1."
        )

    # -- public API --------------------------------------------------------------------------------------

    def generate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Answer ``query`` from ``evidence`` (empty: from the model alone), citing evidence ids."""
        question, items = check_inputs(query, evidence)
        params = self._params(question, items)
        client = self._sync_client()
        try:
            response = client.chat.completions.create(**params)
        except Exception as e:
            error = self._translate(e, items)
            if error is None:
                raise
            raise error from e
        return self._finish(response, items)

    async def agenerate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Async twin of :meth:`generate`, using the SDK's async client (one per event loop)."""
        question, items = check_inputs(query, evidence)
        params = self._params(question, items)
        client = self._async_client()
        try:
            response = await client.chat.completions.create(**params)
        except Exception as e:
            error = self._translate(e, items)
            if error is None:
                raise
            raise error from e
        return self._finish(response, items)


def _usage(usage: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in _USAGE_FIELDS:
        value = getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def _status_detail(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(getattr(e, "message", None) or e)


def _advice(gen: OpenAIChatGenerator, status: int, items: Sequence[Evidence]) -> str:
    if status == 404:
        return f"Check that model {gen.model!r} exists on this endpoint and that the base URL ends in /v1."
    if status == 429:
        return "The endpoint is rate limiting or out of quota; retry later or raise max_retries=."
    if status in (400, 413, 422):
        pictures = " If the model cannot read images, use a vision-language model or evidence without media." \
            if any(item.images for item in items) else ""
        return ("The endpoint rejected the request: check the model name, max_tokens= and the size of the "
                f"evidence.{pictures}")
    if status >= 500:
        return "The server failed; check its logs and retry."
    return "Check the endpoint settings."


def _safe_url(url: str | None) -> str | None:
    """``url`` without any user:password part, query or fragment."""
    if not url:
        return url
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    netloc = ("***@" if parts.username or parts.password else "") + (parts.hostname or "") + port
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")
_KEYLIKE = re.compile(r"\b(?:sk|pk|key)[-_][A-Za-z0-9_*\-]{6,}|\S*\*{3,}\S*")


def _scrub(message: str, secret: str | None) -> str:
    """``message`` without ``secret``, key-like or masked-key tokens, shortened to 300 characters."""
    message = _STATUS_PREFIX.sub("", message).strip()
    if secret:
        message = message.replace(secret, "***")
    message = _KEYLIKE.sub("***", message)
    if not message.endswith((".", "!", "?")):
        message += "."
    return message if len(message) <= 300 else message[:297] + "..."
