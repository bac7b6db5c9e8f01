"""The training-free router: a chat model picks the corpora, prompted with their descriptions.

Works with any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio) through the ``openai``
client, imported on first use. The prompt is generated from the corpus descriptions (name →
description), with contrasting examples for the close pairs present among the candidates; the model
answers with one JSON object, which is parsed with a repair step (code fences, prose around the
object, single quotes, trailing commas, a bare list or name).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..errors import RoutingError
from ..openai_client import OpenAIClients, redact_url, translate_error
from ..types import NO_RETRIEVAL, CorpusSpec, RouteDecision
from .base import ROUTE_DESCRIPTIONS, BaseRouter, Router, apply_exclusions, check_query

__all__ = ["CONTRASTS", "LLMRouter", "build_prompt", "parse_routes"]

logger = logging.getLogger(__name__)

#: Contrasting examples shown when both routes of a pair are candidates: (route, question) pairs.
CONTRASTS: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = (
    (
        ("paragraph", "Which city is the Alhambra in?"),
        ("document", "Was the palace in Granada built before the cathedral in Seville, and under which rulers?"),
    ),
    (
        ("clip", "In the cooking video, what does the chef add right after the onions turn brown?"),
        ("video", "What are all the steps the cooking video goes through to make the stew?"),
    ),
    (
        ("image", "What colour are the domes of the Church of the Savior on Spilled Blood?"),
        ("clip", "At the moment the fireworks start in the New Year video, what colour is the sky?"),
    ),
    (
        ("table", "Which driver finished fourth in the 2011 season standings?"),
        ("paragraph", "Where was the driver Sebastian Vettel born?"),
    ),
    (
        (NO_RETRIEVAL, "A bus carries 42 people and 15 get off; how many are left?"),
        ("paragraph", "In what year did the Channel Tunnel open?"),
    ),
)

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")

#: Advice for the kinds of failure where the generic one says too little (see ``translate_error``).
_HINTS = {
    "timeout": "Raise timeout=, give the router a fallback, or check that the server is up.",
    "connection": "The router could not connect: check the base URL and that the server is running.",
}


def build_prompt(
    descriptions: Mapping[str, str], *, multi: bool = True, examples: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The system prompt for routing over ``descriptions`` (route name → description, ``none`` included
    when answering without retrieval is allowed)."""
    names = list(descriptions)
    intro = (
        "You route questions to knowledge sources before they are answered. Read the question and decide "
        "where the evidence for its answer is most likely to be found. The sources:"
    )
    lines = [intro, ""]
    lines += [f"- {name}: {desc.strip() or 'no description'}" for name, desc in descriptions.items()]
    shown = [pair for pair in CONTRASTS if pair[0][0] in descriptions and pair[1][0] in descriptions]
    if shown or examples:
        lines += ["", "Examples (question → source):"]
        for (a, qa), (b, qb) in shown:
            lines += [f"- {qa} → {a}", f"- {qb} → {b}"]
        for route, qs in (examples or {}).items():
            if route in descriptions:
                lines += [f"- {q} → {route}" for q in list(qs)[:3]]
    lines.append("")
    if multi:
        lines.append(
            "Usually one source is enough. Add a second only when the question clearly needs evidence of two "
            "kinds (for example figures from a table and facts from a text); list the most important first."
        )
        form = '{"routes": ["<source>", ...]}'
    else:
        lines.append("Choose exactly one source: the one most likely to hold the answer.")
        form = '{"routes": ["<source>"]}'
    lines.append(
        f"Reply with a single JSON object and nothing else, of the form {form}, using only these "
        f"names: {', '.join(names)}."
    )
    return "\n".join(lines)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", text)  # trailing commas
    fixed = re.sub(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:", r'\1"\2":', fixed)  # bare keys
    for candidate in (fixed, fixed.replace("'", '"')):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def parse_routes(text: str, allowed: Collection[str]) -> list[str]:
    """The route names in a model's reply, in the order given, restricted to ``allowed``.

    Accepts ``{"routes": [...]}`` (or ``"route"``/``"sources"``), a bare JSON list or a bare route name,
    and repairs code fences, prose around the JSON, single quotes, bare keys and trailing commas.
    Raises :class:`RoutingError` when no allowed route can be read.
    """
    raw = (text or "").strip()
    body = _FENCE.sub("", raw).strip()
    value = _loads(body)
    if value is None:
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = body.find(opener), body.rfind(closer)
            if 0 <= start < end:
                value = _loads(body[start : end + 1])
                if value is not None:
                    break
    if value is None and body.strip("\"' .").lower() in allowed:
        value = [body.strip("\"' .").lower()]
    if isinstance(value, dict):
        value = next((value[k] for k in ("routes", "route", "sources", "source", "corpora") if k in value), None)
    if isinstance(value, str):
        value = [value]
    snippet = raw if len(raw) <= 160 else raw[:157] + "..."
    if not isinstance(value, list):
        raise RoutingError(f"The LLM router's reply is not the expected JSON object: {snippet!r}.")
    known = {a.lower(): a for a in allowed}
    routes = [known[v.strip().lower()] for v in value if isinstance(v, str) and v.strip().lower() in known]
    if not routes:
        raise RoutingError(f"The LLM router's reply names no allowed route ({', '.join(allowed)}): {snippet!r}.")
    return list(dict.fromkeys(routes))


class LLMRouter(BaseRouter):
    """Routes by asking a chat model (any OpenAI-compatible endpoint).

    ``corpora`` maps route names to descriptions (default: the seven built-in routes); ``examples`` adds
    example questions per route to the prompt. ``multi=False`` asks for exactly one route. Failures
    (timeout, HTTP error, unreadable reply) raise :class:`RoutingError`, or route with ``fallback`` when
    one is given. The API key is never logged nor shown. The client is created on first use.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        corpora: Mapping[str, str] | None = None,
        examples: Mapping[str, Sequence[str]] | None = None,
        candidates: Collection[str] | None = None,
        multi: bool = True,
        timeout: float = 30.0,
        max_retries: int = 1,
        temperature: float = 0.0,
        json_mode: bool = False,
        fallback: Router | None = None,
        max_concurrency: int = 8,
        name: str = "llm",
    ) -> None:
        super().__init__(name=name, candidates=candidates)
        if not model:
            raise RoutingError("The LLM router needs a model name.")
        if timeout <= 0:
            raise RoutingError(f"timeout must be positive, got {timeout}.")
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        descriptions = dict(corpora) if corpora is not None else dict(ROUTE_DESCRIPTIONS)
        descriptions.setdefault(NO_RETRIEVAL, ROUTE_DESCRIPTIONS[NO_RETRIEVAL])
        self.corpora: dict[str, str] = {NO_RETRIEVAL: descriptions.pop(NO_RETRIEVAL), **descriptions}
        self.examples = {k: list(v) for k, v in (examples or {}).items()}
        self.multi = multi
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.json_mode = json_mode
        self.fallback = fallback
        self.max_concurrency = max_concurrency
        self._openai = OpenAIClients(
            base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            feature="the LLM router",
            error_type=RoutingError,
            no_key="No API key for the LLM router: pass api_key= or set OPENAI_API_KEY (or pass base_url= for a "
            "local server that needs none).",
        )
        self._prompts: dict[tuple[str, ...], str] = {}

    @classmethod
    def from_corpora(cls, corpora: Iterable[CorpusSpec], model: str, **kwargs: Any) -> LLMRouter:
        """A router over registered corpora (their names and descriptions), plus ``none``."""
        return cls(
            model, corpora={c.name: c.description or f"{c.granularity} units ({c.modality})" for c in corpora}, **kwargs
        )

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return (
            f"LLMRouter(model={self.model!r}, base_url={redact_url(self.base_url)!r}, api_key={key!r}, "
            f"routes={list(self.corpora)}, multi={self.multi})"
        )

    @property
    def routes(self) -> tuple[str, ...]:
        """The routes described to the model."""
        return tuple(self.corpora)

    def _allowed(self, candidates: frozenset[str] | None) -> tuple[str, ...]:
        return tuple(r for r in self.corpora if candidates is None or r in candidates)

    def messages(self, query: str, *, candidates: Collection[str] | None = None) -> list[dict[str, str]]:
        """The chat messages sent for ``query`` (system prompt + the question)."""
        allowed = self._allowed(self._effective(candidates))
        if allowed not in self._prompts:
            self._prompts[allowed] = build_prompt(
                {r: self.corpora[r] for r in allowed}, multi=self.multi, examples=self.examples
            )
        return [
            {"role": "system", "content": self._prompts[allowed]},
            {"role": "user", "content": f"Question: {query.strip()}"},
        ]

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        req: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.json_mode:
            req["response_format"] = {"type": "json_object"}
        return req

    def _translate(self, e: Exception) -> RoutingError:
        """A RoutingError for any failure of the request (so that the fallback router can take over)."""
        what = f"The LLM router's request for model {self.model!r}"
        where = redact_url(self.base_url) or "the OpenAI API"
        error = translate_error(
            e,
            error_type=RoutingError,
            what=what,
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            hints=_HINTS,
        )
        return error or RoutingError(f"{what} to {where} failed ({type(e).__name__}).")

    def _finish(self, query: str, text: str | None, allowed: tuple[str, ...], start: float) -> RouteDecision:
        try:
            parsed = parse_routes(text or "", allowed)
        except RoutingError as e:  # say which model and endpoint answered so
            where = redact_url(self.base_url) or "the OpenAI API"
            raise RoutingError(
                f"Model {self.model!r} at {where}: {e} Check that it is an instruction-following "
                "chat model (json_mode=True helps)."
            ) from None
        routes = apply_exclusions(parsed)
        if not self.multi:
            routes = routes[:1]
        scores = {r: (1.0 if r in routes else 0.0) for r in allowed}
        return RouteDecision(routes, scores, self.name, (time.perf_counter() - start) * 1000.0)

    def _fallback(self, error: RoutingError, query: str, candidates: frozenset[str] | None) -> RouteDecision:
        if self.fallback is None:
            raise error
        logger.warning("LLM router failed (%s); using the fallback router %s.", error, self.fallback.name)
        decision = self.fallback.route(query, candidates=candidates)
        return dataclasses.replace(decision, router=f"{self.name}->{decision.router}")

    def _route(self, query: str, candidates: frozenset[str] | None) -> RouteDecision:
        allowed = self._allowed(candidates)
        start = time.perf_counter()
        try:
            try:
                request = self._request(self.messages(query, candidates=candidates))
                reply = self._openai.call(lambda client: client.chat.completions.create(**request))
            except Exception as e:
                raise self._translate(e) from e
            return self._finish(query, _text(reply), allowed, start)
        except RoutingError as e:
            return self._fallback(e, query, candidates)

    async def aroute(self, query: str, *, candidates: Collection[str] | None = None) -> RouteDecision:
        """Async twin of :meth:`route` (uses the async client; the fallback runs on a worker thread)."""
        query = check_query(query)
        effective = self._effective(candidates)
        allowed = self._allowed(effective)
        start = time.perf_counter()
        try:
            try:
                request = self._request(self.messages(query, candidates=effective))
                reply = await self._openai.acall(lambda client: client.chat.completions.create(**request))
            except Exception as e:
                raise self._translate(e) from e
            return self._finish(query, _text(reply), allowed, start)
        except RoutingError as e:
            if self.fallback is None:
                raise
            return await asyncio.to_thread(self._fallback, e, query, effective)

    async def aroute_many(
        self, queries: Sequence[str], *, candidates: Collection[str] | None = None
    ) -> list[RouteDecision]:
        """Route several queries concurrently (at most ``max_concurrency`` requests at once)."""
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(q: str) -> RouteDecision:
            async with gate:
                return await self.aroute(q, candidates=candidates)

        return list(await asyncio.gather(*(one(q) for q in queries)))


def _text(reply: Any) -> str | None:
    try:
        return reply.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
