"""JSON answers from a chat model, checked against a schema: what model descriptions and graph extraction ask for.

:class:`JsonChat` sends chat messages (text and ``image_url`` parts) to an OpenAI-compatible endpoint and reads the
answer as one JSON object validated by a pydantic model. A model that wraps its JSON in a code fence or a sentence is
read all the same; an answer that holds no valid object, or one that breaks the schema, raises
:class:`~universalrag.errors.GenerationError` naming what was wrong (never the API key). The ``openai`` and
``pydantic`` packages come with the ``openai`` extra and are imported on first use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError, GenerationError, MissingDependencyError
from ..openai_client import OpenAIClients, chat_endpoint, redact_url, translate_error

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..config import Settings

__all__ = ["JsonChat", "parse_json_object"]

_M = TypeVar("_M", bound="BaseModel")

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer: the whole text, else a fenced block, else the span from the first ``{``
    to the last ``}``. Raises :class:`ValueError` saying why when none of them is a JSON object."""
    if "{" not in text:
        raise ValueError("it holds no JSON object")
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    problem = "it holds no JSON object"  # replaced by what the last candidate lacked
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError as e:
            problem = f"it is not valid JSON ({e})"
            continue
        if isinstance(value, dict):
            return value
        problem = f"it is JSON, but a {type(value).__name__}, not an object"
    raise ValueError(problem)


class JsonChat:
    """A chat model that answers in JSON, behind an OpenAI-compatible ``/v1/chat/completions``.

    ``json_mode`` asks the endpoint for a JSON object (``response_format``; OpenAI, vLLM and Ollama accept it,
    some servers refuse it). ``timeout`` bounds one request in all, retries included; ``max_retries`` retries
    connection errors, timeouts, 408/409/429 and 5xx. The constructor does no I/O.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        max_retries: int = 1,
        json_mode: bool = False,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("A JSON chat model needs a model name, for example 'gpt-4o-mini'.")
        if timeout <= 0 or max_tokens < 1 or max_retries < 0:
            raise ConfigError("timeout must be positive, max_tokens at least 1 and max_retries 0 or more.")
        self.model = model.strip()
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.json_mode = json_mode
        self._api_key = api_key
        self._openai = OpenAIClients(
            base_url,
            api_key=api_key,
            timeout=self.timeout,
            max_retries=max_retries,
            feature="model descriptions and graph extraction",
            error_type=GenerationError,
            no_key="No API key for the chat model: set UNIVERSALRAG_LLM_API_KEY or OPENAI_API_KEY (or "
            "UNIVERSALRAG_LLM_BASE_URL for a local server that needs none).",
        )

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> JsonChat | None:
        """The chat model of ``settings`` (``UNIVERSALRAG_LLM_MODEL`` at ``UNIVERSALRAG_LLM_BASE_URL``), or ``None``
        when no model is configured. ``overrides`` go to the constructor."""
        if not settings.llm_model:
            return None
        return cls(settings.llm_model, **{**chat_endpoint(settings), **overrides})

    @property
    def name(self) -> str:
        """``openai:<model>``: part of every cache key, so another model never reuses an answer."""
        return f"openai:{self.model}"

    def __repr__(self) -> str:
        return (
            f"JsonChat(model={self.model!r}, base_url={redact_url(self.base_url)!r}, "
            f"api_key={'***' if self._api_key else None!r})"
        )

    def require(self) -> JsonChat:
        """This chat model, once the packages it needs are importable; :class:`MissingDependencyError` naming the
        ``openai`` extra otherwise (so a run fails at its start, not once per request)."""
        try:
            import openai  # noqa: F401
            import pydantic  # noqa: F401
        except ImportError as e:
            raise MissingDependencyError(e.name or "openai", "openai", feature="model descriptions") from e
        return self

    def ask(self, messages: Sequence[dict[str, Any]], schema: type[_M]) -> _M:
        """The answer to ``messages`` as an instance of ``schema``; :class:`GenerationError` when the call fails or
        the answer is not a JSON object that fits the schema."""
        try:
            from pydantic import ValidationError
        except ImportError as e:  # pragma: no cover - pydantic comes with openai
            raise MissingDependencyError("pydantic", "openai", feature="model descriptions") from e
        text, finish = self._complete(messages)
        try:
            value = parse_json_object(text)
        except ValueError as e:
            cut = f" It stopped at max_tokens={self.max_tokens}; raise max_tokens=." if finish == "length" else ""
            raise GenerationError(
                f"The chat model {self.model!r} answered, but {e}; the answer began {text[:80]!r}.{cut}"
            ) from None
        try:
            return schema.model_validate(value)
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'answer'}: {err['msg']}" for err in e.errors())
            raise GenerationError(
                f"The chat model {self.model!r} answered with JSON that does not fit {schema.__name__}: "
                f"{problems[:300]}."
            ) from None

    def ask_text(self, messages: Sequence[dict[str, Any]]) -> str:
        """The answer's text; :class:`GenerationError` naming the endpoint when the call fails or says nothing."""
        return self._complete(messages)[0]

    def _complete(self, messages: Sequence[dict[str, Any]]) -> tuple[str, str | None]:
        """(the answer's text, why it finished)."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        try:
            response = self._openai.call(lambda client: client.chat.completions.create(**params))
        except GenerationError:
            raise
        except Exception as e:
            error = translate_error(
                e,
                error_type=GenerationError,
                what=f"Chat request for model {self.model!r}",
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self.timeout,
            )
            if error is None:
                raise
            raise error from e
        try:
            choice = response.choices[0]
            content, finish = choice.message.content, getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError):
            content, finish = None, None
        if not isinstance(content, str) or not content.strip():
            where = redact_url(self.base_url) or "the OpenAI API"
            raise GenerationError(f"The chat endpoint {where} gave model {self.model!r}'s answer no text.")
        return content, finish if isinstance(finish, str) else None
