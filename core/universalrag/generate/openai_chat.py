"""A generator for any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio).

The ``openai`` package is an optional extra (``pip install 'universalrag-postgres[openai]'``) imported on first
use; the constructor does no I/O. Pictures go as ``image_url`` parts, so evidence with images or frames
needs a vision-language model. The API key is never shown: not in ``repr``, not in error messages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, GenerationError
from ..openai_client import OpenAIClients, chat_endpoint, redact, redact_url, translate_error
from ..types import Evidence
from .base import Generation, check_inputs
from .prompt import build_messages, parse_citations

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["OpenAIChatGenerator"]

logger = logging.getLogger(__name__)

_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")

#: Advice for the kinds of failure where the generic one says too little (see ``translate_error``).
_HINTS = {
    "timeout": "Raise timeout=, lower max_tokens= or send less evidence, and check that the server is up.",
    "connection": "The client cannot connect: check the base URL (UNIVERSALRAG_LLM_BASE_URL) and that the server "
    "is running.",
    "auth": "Check api_key=, UNIVERSALRAG_LLM_API_KEY or OPENAI_API_KEY, and that the key may use this model.",
    "bad_request": "The endpoint rejected the request: check the model name, max_tokens= and the size of the evidence.",
}
_HINTS_WITH_IMAGES = {
    **_HINTS,
    "bad_request": _HINTS["bad_request"] + " If the model cannot read images, use a "
    "vision-language model or evidence without media.",
}


class OpenAIChatGenerator:
    """Answers from evidence with a chat model behind an OpenAI-compatible ``/v1/chat/completions``.

    ``base_url`` points at another server (for example ``http://localhost:11434/v1``); with a ``base_url``
    and no key, a placeholder key is sent, as local servers expect. ``system_prompt`` replaces
    :data:`~universalrag.generate.prompt.DEFAULT_SYSTEM_PROMPT`. ``max_retries`` is the retry count for
    connection errors, timeouts, 408/409/429 and 5xx; ``timeout`` bounds one answer in all, retries included
    (default: ``UNIVERSALRAG_LLM_TIMEOUT`` through :meth:`from_settings`). Failures raise
    :class:`GenerationError`.
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
        self._openai = OpenAIClients(
            base_url,
            api_key=api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
            feature="answer generation",
            error_type=GenerationError,
            no_key="No API key for the language model: pass api_key=, or set UNIVERSALRAG_LLM_API_KEY or "
            "OPENAI_API_KEY (or UNIVERSALRAG_LLM_BASE_URL for a local server that needs none).",
        )

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> OpenAIChatGenerator | None:
        """A generator for ``settings.llm_model`` at ``llm_base_url`` with ``llm_api_key``, or ``None`` when
        no model is configured (set ``UNIVERSALRAG_LLM_MODEL``). ``overrides`` go to the constructor."""
        if not settings.llm_model:
            return None
        return cls(settings.llm_model, **{**chat_endpoint(settings), **overrides})

    @property
    def name(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self.model}"

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return (
            f"OpenAIChatGenerator(model={self.model!r}, base_url={redact_url(self.base_url)!r}, "
            f"api_key={key!r}, max_tokens={self.max_tokens}, temperature={self.temperature})"
        )

    # -- requests ----------------------------------------------------------------------------------------

    def _params(self, query: str, items: Sequence[Evidence]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": build_messages(query, items, system_prompt=self.system_prompt),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def _finish(self, response: Any, items: Sequence[Evidence]) -> Generation:
        where = redact_url(self.base_url) or "the OpenAI API"
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
                reason = f"it refused: {redact(str(refusal), [self._api_key])}"
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
        hints = _HINTS_WITH_IMAGES if any(item.images for item in items) else _HINTS
        return translate_error(
            e,
            error_type=GenerationError,
            what=f"The chat request for model {self.model!r}",
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            hints=hints,
        )

    # -- public API --------------------------------------------------------------------------------------

    def generate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Answer ``query`` from ``evidence`` (empty: from the model alone), citing evidence ids."""
        question, items = check_inputs(query, evidence)
        params = self._params(question, items)
        try:
            response = self._openai.call(lambda client: client.chat.completions.create(**params))
        except Exception as e:  # SDK errors are translated, anything else re-raised
            if (error := self._translate(e, items)) is None:
                raise
            raise error from e
        return self._finish(response, items)

    async def agenerate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Async twin of :meth:`generate`, using the SDK's async client (one per event loop)."""
        question, items = check_inputs(query, evidence)
        params = self._params(question, items)
        try:
            response = await self._openai.acall(lambda client: client.chat.completions.create(**params))
        except Exception as e:  # SDK errors are translated, anything else re-raised
            if (error := self._translate(e, items)) is None:
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
