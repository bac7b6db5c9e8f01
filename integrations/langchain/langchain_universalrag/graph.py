"""LangGraph building blocks: a routing edge and node, per-corpus retrieval nodes, a generation node, and
:func:`build_graph`, which wires them into route → parallel retrieval → generate.

The pieces read and write plain state keys, so they drop into a user's own ``StateGraph``:

- ``question`` (``str``) — the question; when absent, the text of the last human message in ``messages``;
- ``decision`` (``dict``) — the route decision written by :func:`make_route_node`
  (``{"routes": [...], "scores": {...}, "router": ..., "latency_ms": ..., "evidence": {...}, "hits": {...}}``;
  ``hits`` holds the routing probe's hits of the chosen corpora, which the retrieval nodes reuse);
- ``documents`` (``list[Document]``, reducer ``operator.add``) — what the retrieval nodes found; with a
  checkpointer the list grows across turns of a thread (start a new thread per question, or give your state
  a reducer that resets);
- ``answer`` (``str | None``) and ``citations`` (``list[str]``) — written by the generation node.

Corpus nodes are named ``retrieve_<corpus>`` (see :func:`retrieve_node_name`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypedDict

from ._deps import require_langgraph

require_langgraph()

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from universalrag.errors import RoutingError
from universalrag.evidence import build_evidence
from universalrag.pipeline import UniversalRAG, fuse
from universalrag.plan import QueryPlan
from universalrag.types import NO_RETRIEVAL, Hit, RouteDecision

from ._convert import decision_from_dict, documents_to_hits, hit_from_dict, hits_to_documents
from .generators import LangChainGenerator

__all__ = [
    "UniversalRAGState",
    "build_graph",
    "make_generate_node",
    "make_retrieve_node",
    "make_route_edge",
    "make_route_node",
    "question_of",
    "retrieve_node_name",
]

GENERATE = "generate"


class UniversalRAGState(TypedDict, total=False):
    """The state of :func:`build_graph` (see the module docstring for each key)."""

    question: str
    messages: Annotated[list[AnyMessage], add_messages]
    decision: dict[str, Any]
    documents: Annotated[list[Document], operator.add]
    answer: str | None
    citations: list[str]


def _get(state: Any, key: str) -> Any:
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def question_of(state: Any) -> str:
    """The question in ``state``: its ``question``, else the text of the last human message."""
    question = _get(state, "question")
    if isinstance(question, str) and question.strip():
        return question
    for message in reversed(_get(state, "messages") or []):
        if getattr(message, "type", None) == "human":
            return str(message.text)
        if isinstance(message, Mapping) and message.get("role") in ("user", "human"):
            return str(message.get("content", ""))
    raise RoutingError("The graph state holds no question: set state['question'] or add a human message "
                       "to state['messages'].")


def retrieve_node_name(corpus: str) -> str:
    """The node name of a corpus's retrieval node: ``retrieve_<corpus>``."""
    return f"retrieve_{corpus}"


def _decision(state: Any) -> RouteDecision | None:
    data = _get(state, "decision")
    return decision_from_dict(data) if data else None


def _state_decision(plan: QueryPlan, decision: RouteDecision) -> dict[str, Any]:
    """The decision as state data, with the probe hits of the chosen corpora (the retrieval nodes reuse them)."""
    data = decision.to_dict()
    hits = {c: plan.probed(c, plan.probe_k) for c in plan.chosen}
    data["hits"] = {c: [h.to_dict() for h in found] for c, found in hits.items() if found is not None}
    data["probe_k"] = plan.probe_k
    return data


def make_route_node(rag: UniversalRAG, *, allow_none: bool = False) -> RunnableLambda:
    """A node that routes the state's question and writes ``{"decision": {...}}`` into the state, with the
    routing probe's hits of the chosen corpora under ``decision["hits"]`` (the retrieval nodes reuse them instead
    of searching again). Unless ``allow_none=True``, a ``none`` conclusion still routes to the most likely corpus,
    so that the graph never answers without evidence because of the router."""
    def route(state: Any) -> dict[str, Any]:
        plan = rag.plan(question_of(state), allow_none=allow_none)
        return {"decision": _state_decision(plan, rag.route(plan))}

    async def aroute(state: Any) -> dict[str, Any]:
        plan = rag.plan(question_of(state), allow_none=allow_none)
        return {"decision": _state_decision(plan, await rag.aroute(plan))}

    return RunnableLambda(route, afunc=aroute, name="route")


def make_route_edge(rag: UniversalRAG, *, corpora: Sequence[str] | None = None,
                    node_name: Callable[[str], str] = retrieve_node_name,
                    none_node: str = GENERATE, allow_none: bool = False) -> RunnableLambda:
    """A path function for ``add_conditional_edges``.

    It takes the decision in ``state["decision"]`` (written by :func:`make_route_node`) or routes the question
    itself, then returns the node of the chosen corpus, a ``Send`` per node when several corpora are chosen
    (they run in parallel; each receives ``{"question", "decision"}``), or ``none_node`` (the generation
    node, or ``END``) for the ``none`` route. With ``corpora``, routes to other corpora are ignored (use it
    when your graph has nodes for some corpora only); unless ``allow_none=True``, when none of the chosen
    corpora has a node, the corpus with a node that the decision scored highest is used (the first one given
    when none is scored). Pass the possible
    destinations as the path map::

        builder.add_conditional_edges("route", make_route_edge(rag), [*corpus_nodes, "generate"])
    """
    allowed = list(dict.fromkeys(corpora)) if corpora is not None else None

    def targets(question: str, decision: RouteDecision, raw: Any = None) -> str | list[Send]:
        routes = [r for r in dict.fromkeys(decision.routes)
                  if r != NO_RETRIEVAL and (allowed is None or r in allowed)]
        if not routes and not allow_none and allowed and (decision.needs_retrieval or decision.fallback):
            routes = [max(allowed, key=lambda r: decision.scores.get(r, -1.0))]  # ties: the first node given
        if not routes:
            return none_node
        if len(routes) == 1:
            return node_name(routes[0])
        arg = {"question": question, "decision": dict(raw) if isinstance(raw, Mapping) else decision.to_dict()}
        return [Send(node_name(r), dict(arg)) for r in routes]

    def edge(state: Any) -> str | list[Send]:
        question = question_of(state)
        return targets(question, _decision(state) or rag.route(question, allow_none=allow_none),
                       _get(state, "decision"))

    async def aedge(state: Any) -> str | list[Send]:
        question = question_of(state)
        return targets(question, _decision(state) or await rag.aroute(question, allow_none=allow_none),
                       _get(state, "decision"))

    return RunnableLambda(edge, afunc=aedge, name="route_edge")


def _probe_hits(state: Any, corpus: str, k: int) -> list[Hit] | None:
    """The routing probe's hits of ``corpus`` from the state's decision, when it holds at least ``k`` (or all the
    corpus had: fewer than the probe asked for)."""
    data = _get(state, "decision")
    found = (data.get("hits") or {}).get(corpus) if isinstance(data, Mapping) else None
    if found is None or (len(found) < k and len(found) >= int(data.get("probe_k", 0))):
        return None
    return [hit_from_dict(h) for h in found[:k]]


def make_retrieve_node(rag: UniversalRAG, corpus: str, *, k: int | None = None,
                       filter: Mapping[str, Any] | None = None,
                       filters: Mapping[str, Any] | None = None) -> RunnableLambda:
    """A node searching ``corpus`` for the state's question; returns ``{"documents": [...]}`` (appended to the
    state's list), each document carrying the decision in its metadata when the state holds one. Without a
    ``filter``, the routing probe's hits in the state's decision are used instead of a second search.
    ``filters`` is a deprecated spelling of ``filter``."""
    where = filter if filter is not None else filters

    def done(hits: list[Hit], state: Any) -> dict[str, Any]:
        return {"documents": hits_to_documents(hits, decision=_decision(state))}

    def reused(state: Any) -> list[Hit] | None:
        return _probe_hits(state, corpus, k or rag.k) if where is None else None

    def retrieve(state: Any) -> dict[str, Any]:
        hits = reused(state)
        if hits is None:
            hits = rag.retrieve(question_of(state), k=k, routes=[corpus], filter=where)
        return done(hits, state)

    async def aretrieve(state: Any) -> dict[str, Any]:
        hits = reused(state)
        if hits is None:
            hits = await rag.aretrieve(question_of(state), k=k, routes=[corpus], filter=where)
        return done(hits, state)

    return RunnableLambda(retrieve, afunc=aretrieve, name=retrieve_node_name(corpus))


def _ranked(rag: UniversalRAG, documents: Sequence[Document], decision: RouteDecision | None) -> list[Hit]:
    """The state's documents as one ranking: per corpus (in the decision's order), fused like the core does."""
    by_corpus: dict[str, list[Hit]] = {}
    for hit in documents_to_hits(documents):
        by_corpus.setdefault(hit.corpus, []).append(hit)
    order = {r: i for i, r in enumerate(decision.routes if decision else ())}
    lists = [sorted(hits, key=lambda h: -h.score)
             for _, hits in sorted(by_corpus.items(), key=lambda kv: order.get(kv[0], len(order)))]
    return fuse(lists, method=rag.fusion)


def make_generate_node(rag: UniversalRAG, llm: BaseChatModel | None = None) -> RunnableLambda:
    """A node answering the question from the state's documents.

    The documents are fused into one ranking and turned into evidence (text, table rows, images, frames of
    clips and videos, within ``rag.budget``). With ``llm`` (any LangChain chat model; multimodal models see
    the pictures as image blocks) or else the core's configured generator, it writes ``answer`` and
    ``citations`` (and appends an ``AIMessage`` when the state has ``messages``); with neither, ``answer`` is
    ``None`` and the documents are the result.
    """
    generator = LangChainGenerator(llm) if llm is not None else None

    def prepare(state: Any) -> tuple[str, list[Any], Any]:
        question, gen = question_of(state), generator or rag.generator
        if gen is None:  # retrieval only: no need to load pictures
            return question, [], None
        hits = _ranked(rag, _get(state, "documents") or [], _decision(state))
        return question, build_evidence(hits, budget=rag.budget), gen

    def finish(state: Any, text: str | None, citations: Sequence[str]) -> dict[str, Any]:
        update: dict[str, Any] = {"answer": text, "citations": list(citations)}
        if text is not None and _get(state, "messages") is not None:
            update["messages"] = [AIMessage(content=text)]
        return update

    def generate(state: Any) -> dict[str, Any]:
        question, evidence, gen = prepare(state)
        if gen is None:
            return finish(state, None, ())
        result = gen.generate(question, evidence)
        return finish(state, result.text, result.citations)

    async def agenerate(state: Any) -> dict[str, Any]:
        question, evidence, gen = prepare(state)
        if gen is None:
            return finish(state, None, ())
        result = await gen.agenerate(question, evidence)
        return finish(state, result.text, result.citations)

    return RunnableLambda(generate, afunc=agenerate, name=GENERATE)


def build_graph(rag: UniversalRAG, llm: BaseChatModel | None = None, *, corpora: Sequence[str] | None = None,
                k: int | None = None, checkpointer: Any = None, allow_none: bool = False) -> CompiledStateGraph:
    """A compiled graph over :class:`UniversalRAGState`: ``route`` → the chosen ``retrieve_<corpus>`` nodes
    in parallel → ``generate`` → END. With ``allow_none=True`` the ``none`` route goes straight to ``generate``;
    by default the graph always retrieves from the most likely corpus.

    ``corpora`` are the corpora that get a node (default: every registered corpus that holds rows, read from
    the registry now). Invoke with ``{"question": ...}`` or ``{"messages": [HumanMessage(...)]}``.
    """
    names = list(corpora) if corpora is not None else rag.store.nonempty()
    builder = StateGraph(UniversalRAGState)
    builder.add_node("route", make_route_node(rag, allow_none=allow_none))
    for name in names:
        builder.add_node(retrieve_node_name(name), make_retrieve_node(rag, name, k=k))
        builder.add_edge(retrieve_node_name(name), GENERATE)
    builder.add_node(GENERATE, make_generate_node(rag, llm))
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", make_route_edge(rag, corpora=names, allow_none=allow_none),
                                  [*map(retrieve_node_name, names), GENERATE])
    builder.add_edge(GENERATE, END)
    return builder.compile(checkpointer=checkpointer, name="universalrag")
