"""What every user of the ``openai`` client in the library shares: clients, redaction, error translation.

:class:`OpenAIClients` creates the clients for one OpenAI-compatible endpoint on first use (one sync client,
one async client per running event loop); :func:`translate_error` turns an SDK exception into the caller's
error type with a sentence to act on; :func:`redact` and :func:`redact_url` keep API keys and URL
credentials out of messages and reprs. The ``openai`` package is an optional extra
(``pip install 'universalrag-postgres[openai]'``), imported on first use. This module imports only
:mod:`universalrag.errors` and :mod:`universalrag.config` (whose :func:`~universalrag.config.redact_url` it
re-exports), so every layer may use it.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .config import Settings, redact_url
from .errors import InvalidInputError, MissingDependencyError, UniversalRAGError

__all__ = ["PLACEHOLDER_KEY", "OpenAIClients", "chat_endpoint", "redact", "redact_url", "translate_error"]

#: The key sent to a ``base_url`` when no key is configured anywhere (local servers expect one).
PLACEHOLDER_KEY = "not-needed"


def chat_endpoint(settings: Settings) -> dict[str, Any]:
    """The configured chat endpoint as a chat client's keyword arguments: ``base_url``, ``api_key`` (never logged)
    and ``timeout`` (``UNIVERSALRAG_LLM_BASE_URL``, ``UNIVERSALRAG_LLM_API_KEY``, ``UNIVERSALRAG_LLM_TIMEOUT``)."""
    return {"base_url": settings.llm_base_url, "api_key": settings.llm_api_key, "timeout": settings.llm_timeout}


_E = TypeVar("_E", bound=UniversalRAGError)
_R = TypeVar("_R")

#: HTTP statuses worth another attempt (as the SDK retries them).
_RETRY_STATUSES = frozenset({408, 409, 429})

_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")
_KEYLIKE = re.compile(r"\b(?:sk|pk|key)[-_][A-Za-z0-9_*\-]{6,}|\S*\*{3,}\S*")
_STATUS_KINDS = {
    400: "bad_request",
    401: "auth",
    403: "auth",
    404: "not_found",
    413: "bad_request",
    422: "bad_request",
    429: "rate_limit",
}

#: Advice per kind of failure (see :func:`translate_error`); a caller's ``hints`` replace some of them.
_DEFAULT_HINTS: Mapping[str, str] = {
    "timeout": "Raise timeout=, and check that the server is up.",
    "connection": "Check the base URL and that the server is running.",
    "auth": "Check the API key (api_key= or OPENAI_API_KEY) and that it may use this model.",
    "not_found": "Check that the model exists on this endpoint and that the base URL ends in /v1.",
    "rate_limit": "The endpoint is rate limiting or out of quota; retry later or raise max_retries=.",
    "bad_request": "The endpoint rejected the request; check the model name and the size of the request.",
    "server": "The server failed; check its logs and retry.",
    "status": "Check the endpoint settings.",
    "other": "Check that the base URL points at an OpenAI-compatible /v1.",
}


def _import_openai(feature: str) -> Any:
    try:
        import openai
    except ImportError as e:
        raise MissingDependencyError("openai", "openai", feature=feature) from e
    return openai


class OpenAIClients:
    """The ``openai`` clients of one endpoint, created on first use (the constructor does no I/O).

    The key is ``api_key``, else the SDK's ``OPENAI_API_KEY``, else, when ``base_url`` is given,
    :data:`PLACEHOLDER_KEY`; with none of them, the first use raises ``error_type(no_key)``. A missing
    ``openai`` package raises :class:`MissingDependencyError` naming ``feature``.

    ``clock`` (seconds, monotonic), ``sleep`` and ``asleep`` are what the deadline of :meth:`call` and
    :meth:`acall` reads and waits with (default: :func:`time.monotonic`, :func:`time.sleep`, :func:`asyncio.sleep`);
    a test passes its own to check the deadline without timing the machine.
    """

    def __init__(
        self,
        base_url: str | None,
        *,
        api_key: str | None,
        timeout: float,
        max_retries: int = 2,
        feature: str,
        error_type: Callable[[str], UniversalRAGError],
        no_key: str,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        asleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.clock, self.sleep, self.asleep = clock, sleep, asleep
        self._options: dict[str, Any] = {"base_url": base_url, "timeout": timeout, "max_retries": max_retries}
        self._api_key = api_key or None
        self._feature = feature
        self._error_type = error_type
        self._no_key = no_key
        self._lock = threading.Lock()
        self._sync: Any = None
        self._async: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAIClients(base_url={redact_url(self._options['base_url'])!r}, "
            f"api_key={'***' if self._api_key else None!r})"
        )

    def sync(self) -> Any:
        """The ``openai.OpenAI`` client (one, shared by all threads)."""
        if self._sync is None:
            with self._lock:
                if self._sync is None:
                    self._sync = self._make("OpenAI")
        return self._sync

    def async_(self) -> Any:
        """The ``openai.AsyncOpenAI`` client of the running event loop (its connections belong to that loop)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._async is None or self._async[0] is not loop:
                self._async = (loop, self._make("AsyncOpenAI"))
            return self._async[1]

    @property
    def timeout(self) -> float:
        """Seconds that one call may take in all, its retries included."""
        return float(self._options["timeout"])

    def call(self, request: Callable[[Any], _R]) -> _R:
        """``request(client)`` retried up to ``max_retries`` times on connection errors, timeouts, 408/409/429
        and 5xx, with every attempt and pause inside one deadline of ``timeout`` seconds: a hung server costs
        ``timeout``, not ``timeout`` per attempt. Errors are the SDK's (translate them with
        :func:`translate_error`)."""
        deadline = self.clock() + self.timeout
        attempt = 0
        while True:
            client = self.sync().with_options(timeout=max(deadline - self.clock(), 0.001), max_retries=0)
            try:
                return request(client)
            except Exception as e:
                attempt += 1
                pause = self._pause(e, attempt, deadline)
                if pause is None:
                    raise
            self.sleep(pause)

    async def acall(self, request: Callable[[Any], Awaitable[_R]]) -> _R:
        """Async twin of :meth:`call` (the async client of the running event loop)."""
        deadline = self.clock() + self.timeout
        attempt = 0
        while True:
            client = self.async_().with_options(timeout=max(deadline - self.clock(), 0.001), max_retries=0)
            try:
                return await request(client)
            except Exception as e:
                attempt += 1
                pause = self._pause(e, attempt, deadline)
                if pause is None:
                    raise
            await self.asleep(pause)

    def _pause(self, error: Exception, attempt: int, deadline: float) -> float | None:
        """Seconds to wait before the next attempt, or None when ``error`` is final (not retryable, no retries
        left, or no time left for another attempt)."""
        openai = sys.modules.get("openai")
        if openai is None or attempt > self._options["max_retries"]:
            return None
        status = getattr(error, "status_code", None) if isinstance(error, openai.APIStatusError) else None
        retryable = (
            isinstance(error, openai.APIConnectionError)  # timeouts included
            or (status is not None and (status in _RETRY_STATUSES or status >= 500))
        )
        pause = min(0.5 * 2 ** (attempt - 1), 8.0)
        if not retryable or self.clock() + pause + 0.05 >= deadline:
            return None
        return pause

    def _make(self, cls_name: str) -> Any:
        openai = _import_openai(self._feature)
        cls = getattr(openai, cls_name)
        try:
            return cls(api_key=self._api_key, **self._options)
        except openai.OpenAIError as e:  # no key given and none in the environment
            base_url = self._options["base_url"]
            if base_url is None:
                raise self._error_type(self._no_key) from e
            try:
                return cls(api_key=PLACEHOLDER_KEY, **self._options)
            except openai.OpenAIError as again:
                raise self._error_type(
                    f"Cannot create an OpenAI client for {redact_url(base_url)}: {redact(str(again), [self._api_key])}"
                ) from again


def translate_error(
    e: BaseException,
    *,
    error_type: Callable[[str], _E],
    what: str,
    base_url: str | None,
    api_key: str | None,
    timeout: float | None = None,
    hints: Mapping[str, str] | None = None,
) -> _E | None:
    """``error_type("<what> to <endpoint> failed (HTTP <status>): <detail> <hint>")`` for an ``openai``
    exception, ``None`` for any other exception (the caller re-raises it).

    The kinds of failure: ``timeout``, ``connection``, ``auth`` (401, 403),
    ``not_found`` (404), ``rate_limit`` (429), ``bad_request`` (400, 413, 422), ``server`` (5xx), ``status``
    (another HTTP status) and ``other``; ``hints`` replaces the advice of some of them. The API key and the
    URL's credentials never appear; on 401/403 the server's text is left out, as it may echo the key.
    """
    openai = sys.modules.get("openai")
    where = redact_url(base_url) or "the OpenAI API"
    if isinstance(e, json.JSONDecodeError):  # the SDK parses the body itself: a cut-off or non-JSON answer
        return error_type(
            f"{what} to {where} failed: the endpoint answered with malformed JSON ({e}). "
            "Check that the base URL points at an OpenAI-compatible /v1 and that the server is healthy."
        )
    if openai is None or not isinstance(e, openai.OpenAIError):
        return None
    if hints and not hints.keys() <= _DEFAULT_HINTS.keys():
        raise InvalidInputError(f"Unknown hint kinds {sorted(set(hints) - set(_DEFAULT_HINTS))}.")
    secrets = [api_key, urlsplit(base_url).password if base_url else None]
    status = getattr(e, "status_code", None) if isinstance(e, openai.APIStatusError) else None
    if isinstance(e, openai.APITimeoutError):
        kind = "timeout"
    elif isinstance(e, openai.APIConnectionError):
        kind = "connection"
    elif status is not None:
        kind = _STATUS_KINDS.get(status, "server" if status >= 500 else "status")
    else:
        kind = "other"
    _scrub_chain(e, secrets)
    if kind == "auth":
        detail = "the endpoint refused the API key."
    elif kind == "timeout" and timeout is not None:
        detail = f"timed out after {timeout:g} s."
    else:
        detail = _sentence(redact(_message(e), secrets))
    hint = (hints or {}).get(kind) or _DEFAULT_HINTS[kind]
    code = f" (HTTP {status})" if status is not None else ""
    return error_type(f"{what} to {where} failed{code}: {detail} {hint}")


def _scrub_chain(error: BaseException, secrets: Iterable[str | None] = ()) -> None:
    """Redact ``error`` and every exception chained to it (``__cause__``, ``__context__``) in place: their
    arguments, the SDK's ``message`` and ``body``, so that the key a server echoes in its error body appears in
    no traceback (``--debug``, ``traceback.format_exc()``, ``logging.exception``) of the translated error."""
    keys = [s for s in secrets if s]
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.args = tuple(_scrubbed(a, keys) for a in current.args)
        for attribute in ("message", "body"):
            if hasattr(current, attribute):
                try:
                    setattr(current, attribute, _scrubbed(getattr(current, attribute), keys))
                except AttributeError:  # a read-only property
                    pass
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]


def _scrubbed(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets, limit=len(value) + 3)
    if isinstance(value, dict):
        return {k: _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrubbed(v, secrets) for v in value)
    return value


def redact(text: str, secrets: Iterable[str | None] = (), *, limit: int = 300) -> str:
    """``text`` with each of ``secrets`` and anything that looks like an API key (``sk-...``, masked
    ``ab***cd``) replaced by ``***``, shortened to ``limit`` characters."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _KEYLIKE.sub("***", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message(e: BaseException) -> str:
    """The server's own message (from an OpenAI-style error body), else the transport's, else the SDK's."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    if e.__cause__ is not None and str(e.__cause__):  # e.g. "[Errno 111] Connection refused"
        return str(e.__cause__)
    return _STATUS_PREFIX.sub("", str(getattr(e, "message", None) or e))


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."
