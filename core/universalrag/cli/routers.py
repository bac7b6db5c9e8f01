"""The one registry of routers the commands can build by name (``route``, ``router eval``, ``search``, ``ask``),
and the options they share. Routers are cached in the command's :class:`~.context.Session`, so ``serve``
loads each one once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from ..config import Settings
from ..errors import ConfigError
from .context import CliContext

__all__ = [
    "PRIOR_ONLY_NOTE",
    "ROUTER_KINDS",
    "RouterOptions",
    "build_router",
    "router_for",
    "routes_as_search",
    "searches_with_evidence",
]

#: What `router eval` measures, said beside its figures: users compare them with `eval rag`'s routing accuracy.
PRIOR_ONLY_NOTE = (
    "question-only prior: the router alone, without the probes of your corpora that `search` and `ask` "
    "route with; `universalrag eval rag --data FILE.jsonl -s routed` measures routing as search does it"
)


@dataclass(frozen=True)
class RouterOptions:
    """What a router is built from (hashable: it is the router's cache key with the kind)."""

    model_dir: Path | None = None
    threshold: float | None = None
    llm_model: str | None = None
    llm_url: str | None = None
    llm_key: str | None = None
    timeout: float = 30.0
    tau: float = 0.9


# Options that every command choosing a router shares (one definition each).
ModelDirOpt = Annotated[Path | None, typer.Option("--model", help="A trained router directory (default: shipped).")]
ThresholdOpt = Annotated[float | None, typer.Option("--threshold", help="Probability to add a second route.")]
LLMModelOpt = Annotated[str | None, typer.Option("--llm-model", help="Chat model for the llm/ensemble routers.")]
LLMUrlOpt = Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible base URL.")]
LLMKeyOpt = Annotated[str | None, typer.Option("--llm-key", help="API key for that endpoint (never shown).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="LLM request timeout in seconds.")]
TauOpt = Annotated[float, typer.Option("--tau", help="Ensemble: trust the trained router from this probability.")]
#: Of the commands `universalrag serve` answers (search, ask, route).
NoServerOpt = typer.Option(False, "--no-server", help="Run in this process even when `universalrag serve` is running.")


def _trained(opts: RouterOptions, settings: Settings, embedder: Any) -> Any:
    from ..routing import TrainedRouter

    path = opts.model_dir
    return TrainedRouter(path, threshold=opts.threshold) if path else TrainedRouter.default(threshold=opts.threshold)


def _llm(opts: RouterOptions, settings: Settings, embedder: Any) -> Any:
    from ..routing import LLMRouter

    model = opts.llm_model or settings.llm_model
    if not model:
        raise ConfigError(
            "The LLM router needs a chat model: pass --llm-model (and --llm-url for a local server) "
            "or set UNIVERSALRAG_LLM_MODEL."
        )
    return LLMRouter(
        model,
        base_url=opts.llm_url or settings.llm_base_url,
        api_key=opts.llm_key or settings.llm_api_key,
        timeout=opts.timeout,
        fallback=_trained(opts, settings, embedder),
    )  # a failing or hung model: the trained router


def _ensemble(opts: RouterOptions, settings: Settings, embedder: Any) -> Any:
    from ..routing import EnsembleRouter

    return EnsembleRouter.confident(_trained(opts, settings, embedder), _llm(opts, settings, embedder), tau=opts.tau)


def _examples(opts: RouterOptions, settings: Settings, embedder: Any) -> Any:
    from ..routing import ExampleRouter

    return ExampleRouter.with_builtin(threshold=0.8 if opts.threshold is None else opts.threshold, embedder=embedder)


#: Router kinds by name: each builds a router from the options, the settings and the text encoder.
ROUTER_KINDS: dict[str, Callable[[RouterOptions, Settings, Any], Any]] = {
    "trained": _trained,
    "llm": _llm,
    "ensemble": _ensemble,
    "examples": _examples,
}

RouterOpt = Annotated[str, typer.Option("--router", "-r", help=f"One of: {', '.join(ROUTER_KINDS)}.")]
OptionalRouterOpt = Annotated[
    str | None,
    typer.Option(
        "--router",
        "-r",
        help=f"One of: {', '.join(ROUTER_KINDS)} (default: trained, "
        "extended to your own corpora by their example queries).",
    ),
]


def build_router(kind: str, opts: RouterOptions, *, settings: Settings, embedder: Any = None) -> Any:
    """A new router of ``kind`` (a :class:`~universalrag.errors.ConfigError` names the kinds when unknown)."""
    if kind not in ROUTER_KINDS:
        raise ConfigError(f"Unknown router {kind!r}; choose one of {', '.join(ROUTER_KINDS)}.")
    return ROUTER_KINDS[kind](opts, settings, embedder)


def router_for(obj: CliContext, kind: str, opts: RouterOptions) -> Any:
    """The router of ``kind`` for this command, from the session's cache (built on first use). The shipped
    trained router is the pipeline's own (one copy per process); the example router reuses its text encoder."""
    if kind not in ROUTER_KINDS:
        raise ConfigError(f"Unknown router {kind!r}; choose one of {', '.join(ROUTER_KINDS)}.")
    if kind == "trained" and opts.model_dir is None and opts.threshold is None:
        return obj.rag.router
    embedder = obj.rag.embedder if kind == "examples" else None
    return obj.session.router(
        (kind, opts, obj.settings if kind in ("llm", "ensemble") else None),
        lambda: build_router(kind, opts, settings=obj.settings, embedder=embedder),
    )


def searches_with_evidence(kind: str, opts: RouterOptions) -> bool:
    """Whether ``search``/``ask`` would route with this router and evidence (the default: the shipped trained
    router as the prior, the corpora's probes and the combiner); any other router decides from the question."""
    return kind == "trained" and opts == RouterOptions(timeout=opts.timeout, tau=opts.tau)


def routes_as_search(obj: CliContext, query: str, candidates: list[str] | None = None) -> Any:
    """The decision ``search`` makes for ``query`` — the same pipeline call (prior, probes of the corpora,
    combiner; a ``none`` conclusion still searching the likeliest corpus) — so that ``route`` shows what
    ``search`` will do; the question-only prior is in the decision's ``prior``."""
    rag = obj.rag
    return rag.route(rag.plan(query, candidates=candidates, allow_none=False))
