"""LangGraph building blocks: a routing edge and node, per-corpus retrieval nodes, a generation node, and
:func:`build_graph`, which wires them into route → parallel retrieval → generate.

The pieces read and write plain state keys, so they drop into a user's own ``StateGraph``:

- ``question`` (``str``) — the question; when absent, the text of the last human message in ``messages``;
- ``decision`` (``dict``) — the route decision written by :func:`make_route_node`
  (``{"routes": [...], "scores": {...}, "router": ..., "latency_ms": ..., "evidence": {...}, "hits": {...}}``;
  ``hits`` holds the routing probe's hits of the chosen corpora, which the retrieval nodes reuse);
- ``documents`` (``list[Document]``, reducer :func:`add_documents`: appends, and a ``None`` write empties it) —
  what the retrieval nodes found; :func:`build_graph`'s route node empties it at the start of each turn, so a
  thread's earlier turns do not pile into the next answer's context (``make_route_node(..., new_turn=True)`` does
  the same in your own graph on :class:`UniversalRAGState`). Each node's documents keep its corpus's ranking
  (``metadata["rank"]`` counts from 1 per corpus, and parallel nodes append in the order they finish); the
  generation node merges them into one ranking of the best ``k``, as ``UniversalRAG.retrieve`` would;
- ``answer`` (``str | None``) and ``citations`` (``list[str]``) — written by the generation node.

A node whose keys the graph's state lacks would have its writes dropped by LangGraph without a word; each node
checks the graph's channels when it runs and raises :class:`MissingStateKeysError` naming the keys to declare.
Build your graph on :class:`UniversalRAGState` (or add its keys to your own state), or — for a plain
``MessagesState`` graph — use ``make_retrieve_node(..., output="messages")``, which appends the evidence to
``messages`` as a tool call and its ``ToolMessage`` (what an agent's own search would add), and route with
:func:`make_route_edge` alone (it routes the question itself when the state holds no decision).

With a checkpointer, a turn's ``question`` is consumed by the generation node: it is cleared (and, in a
conversation, added to ``messages`` before the answer), so that a later turn's newest human message is not
overridden by an earlier turn's ``question``.

Corpus nodes are named ``retrieve_<corpus>`` (see :func:`retrieve_node_name`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypedDict

from ._deps import require_langgraph

require_langgraph()

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from universalrag.errors import ConfigError, RoutingError
from universalrag.evidence import UNIT_TEXT_TOKENS, build_evidence, check_unit_tokens
from universalrag.pipeline import UniversalRAG
from universalrag.plan import QueryPlan, check_k
from universalrag.retrieve import Retrieval
from universalrag.store.filters import paths_as_uris
from universalrag.types import NO_RETRIEVAL, Hit, RouteDecision

from ._convert import decision_from_dict, documents_to_hits, hit_from_dict, hits_to_documents
from .generators import LangChainGenerator
from .tools import format_documents

__all__ = [
    "MissingStateKeysError",
    "UniversalRAGState",
    "add_documents",
    "build_graph",
    "make_generate_node",
    "make_retrieve_node",
    "make_route_edge",
    "make_route_node",
    "question_of",
    "retrieve_node_name",
]

GENERATE = "generate"

logger = logging.getLogger(__name__)


class MissingStateKeysError(ConfigError):
    """A node of this package runs in a graph whose state lacks the keys it writes (LangGraph would drop the
    writes silently): ``keys`` are the missing ones, ``node`` the node."""

    def __init__(self, node: str, keys: Sequence[str]) -> None:
        self.node, self.keys = node, tuple(keys)
        super().__init__(
            f"The graph's state has no {', '.join(map(repr, self.keys))} key: LangGraph drops the {node!r} node's "
            f"writes to keys its state does not declare, so the graph would run without them. Build the graph on "
            f"langchain_universalrag.graph.UniversalRAGState (or subclass it), or declare the keys in your state "
            f"(decision: dict[str, Any]; documents: Annotated[list[Document], add_documents]). With a plain "
            f'MessagesState, use make_retrieve_node(rag, corpus, output="messages") and route with '
            f"make_route_edge alone (no route node): the evidence is appended to messages."
        )


def add_documents(left: list[Document] | None, right: list[Document] | None) -> list[Document]:
    """The ``documents`` reducer: appends the documents written (parallel retrieval nodes each add theirs); a
    ``None`` write empties the list (a new turn of a checkpointed thread)."""
    if right is None:
        return []
    return [*(left or []), *right]


class UniversalRAGState(TypedDict, total=False):
    """The state of :func:`build_graph` (see the module docstring for each key)."""

    question: str | None
    messages: Annotated[list[AnyMessage], add_messages]
    decision: dict[str, Any]
    documents: Annotated[list[Document], add_documents]
    answer: str | None
    citations: list[str]


def _graph_channels(config: RunnableConfig | None) -> frozenset[str] | None:
    """The names of the running graph's state channels, or ``None`` outside a graph (a node invoked by hand).

    LangGraph puts its channel reader in the node's config as ``functools.partial(local_read, scratchpad,
    channels, ...)``; LangGraph's own ``ToolNode`` reads the channels from it the same way.
    """
    read = ((config or {}).get("configurable") or {}).get("__pregel_read")
    args: tuple[Any, ...] = getattr(read, "args", ())
    return frozenset(args[1]) if len(args) > 1 and isinstance(args[1], Mapping) else None


def _require_keys(config: RunnableConfig | None, node: str, keys: Sequence[str]) -> None:
    """Raise :class:`MissingStateKeysError` when the running graph's state lacks any of ``keys``."""
    channels = _graph_channels(config)
    missing = [k for k in keys if channels is not None and k not in channels]
    if missing:
        raise MissingStateKeysError(node, missing)


def _checkpointed(config: RunnableConfig | None) -> bool:
    """Whether the run belongs to a checkpointed thread (its state outlives the turn)."""
    return bool(((config or {}).get("configurable") or {}).get("thread_id"))


def _get(state: Any, key: str) -> Any:
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def _last_human(messages: Sequence[Any]) -> str | None:
    """The text of the last human message, or ``None``."""
    for message in reversed(messages):
        if getattr(message, "type", None) == "human":
            return str(message.text)
        if isinstance(message, Mapping) and message.get("role") in ("user", "human"):
            return str(message.get("content", ""))
    return None


def question_of(state: Any) -> str:
    """The question in ``state``: its ``question``, else the text of the last human message. In a checkpointed
    thread the generation node clears ``question`` once answered, so a later turn's human message is the question
    (clear it the same way, ``{"question": None}``, in an answering node of your own)."""
    question = _get(state, "question")
    if isinstance(question, str) and question.strip():
        return question
    human = _last_human(_get(state, "messages") or [])
    if human is not None:
        return human
    raise RoutingError(
        "The graph state holds no question: set state['question'] or add a human message to state['messages']."
    )


def retrieve_node_name(corpus: str) -> str:
    """The node name of a corpus's retrieval node: ``retrieve_<corpus>``."""
    return f"retrieve_{corpus}"


def _decision(state: Any) -> RouteDecision | None:
    data = _get(state, "decision")
    return decision_from_dict(data) if data else None


def _state_decision(rag: UniversalRAG, plan: QueryPlan, decision: RouteDecision) -> dict[str, Any]:
    """The decision as state data, with the hits of the chosen corpora as retrieval ranks them from the routing
    probes (the retrieval nodes reuse them); the first chosen corpus's hold the best hit's table as
    ``UniversalRAG.retrieve`` gives it (:meth:`Retrieval.with_source_table
    <universalrag.retrieve.Retrieval.with_source_table>`); the knowledge graph's hits, when routing chose them, under
    ``graph_hits``, which that corpus's retrieval node joins to its hits (:meth:`Retrieval.with_graph
    <universalrag.retrieve.Retrieval.with_graph>`), as ``UniversalRAG.retrieve`` does."""
    data = decision.to_dict()
    chosen = [c for c in plan.chosen if c in plan.probes]
    retrieval = rag.retrieval
    hits = retrieval.corpus_hits(plan, chosen, k=plan.probe_k)
    if chosen:
        hits[chosen[0]] = retrieval.with_source_table(plan, hits[chosen[0]], k=plan.probe_k)
    data["hits"] = {c: [h.to_dict() for h in found] for c, found in hits.items()}
    data["probe_k"] = plan.probe_k
    if plan.graph_hits and chosen:  # joined by the first chosen corpus's node (Retrieval.with_graph)
        data["graph_hits"] = [h.to_dict() for h in plan.graph_hits]
    return data


def make_route_node(rag: UniversalRAG, *, allow_none: bool = False, new_turn: bool = False) -> RunnableLambda[Any, Any]:
    """A node that routes the state's question and writes ``{"decision": {...}}`` into the state, with the hits
    of the chosen corpora, as retrieval ranks them from the routing probes, under ``decision["hits"]`` (the
    retrieval nodes reuse them instead of searching again). Unless ``allow_none=True``, a ``none`` conclusion still
    routes to the most likely corpus (the default of every step that feeds retrieval), so that the retrieve nodes
    always have a corpus to search.

    With ``new_turn=True`` it also empties ``documents`` (a ``None`` write: the state's reducer must be
    :func:`add_documents`, as in :class:`UniversalRAGState`), so that a checkpointed thread's earlier documents do
    not reach this turn's answer. It raises :class:`MissingStateKeysError` when the graph's state has no
    ``decision`` key (nor ``documents``, with ``new_turn``)."""
    keys = ["decision", "documents"] if new_turn else ["decision"]

    def update(plan: QueryPlan, decision: RouteDecision) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": _state_decision(rag, plan, decision)}
        if new_turn:
            out["documents"] = None
        return out

    def route(state: Any, config: RunnableConfig) -> dict[str, Any]:
        _require_keys(config, "route", keys)
        plan = rag.plan(question_of(state), allow_none=allow_none)
        return update(plan, rag.route(plan))

    async def aroute(state: Any, config: RunnableConfig) -> dict[str, Any]:
        _require_keys(config, "route", keys)
        plan = rag.plan(question_of(state), allow_none=allow_none)
        return update(plan, await rag.aroute(plan))

    return RunnableLambda(route, afunc=aroute, name="route")


def make_route_edge(
    rag: UniversalRAG,
    *,
    corpora: Sequence[str] | None = None,
    node_name: Callable[[str], str] = retrieve_node_name,
    none_node: str = GENERATE,
    allow_none: bool = False,
) -> RunnableLambda[Any, Any]:
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
        routes = [r for r in dict.fromkeys(decision.routes) if r != NO_RETRIEVAL and (allowed is None or r in allowed)]
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
        return targets(
            question, _decision(state) or rag.route(question, allow_none=allow_none), _get(state, "decision")
        )

    async def aedge(state: Any) -> str | list[Send]:
        question = question_of(state)
        return targets(
            question, _decision(state) or await rag.aroute(question, allow_none=allow_none), _get(state, "decision")
        )

    return RunnableLambda(edge, afunc=aedge, name="route_edge")


def _probe_hits(state: Any, corpus: str, k: int) -> list[Hit] | None:
    """The routing probe's hits of ``corpus`` from the state's decision, when it holds at least ``k`` (or all the
    corpus had: fewer than the probe asked for); for the decision's first corpus, joined by the knowledge graph's
    hits the decision holds."""
    data = _get(state, "decision")
    found = (data.get("hits") or {}).get(corpus) if isinstance(data, Mapping) else None
    if found is None or (len(found) < k and len(found) >= int(data.get("probe_k", 0))):
        return None
    hits = [hit_from_dict(h) for h in found[:k]]
    graph = data.get("graph_hits")
    routes = data.get("routes") or ()
    if graph and hits and routes and routes[0] == corpus:  # the first chosen corpus's ranking holds the graph's
        hits = Retrieval.with_graph(hits, [hit_from_dict(h) for h in graph], k=k)
    return hits


def _as_messages(corpus: str, question: str, documents: list[Document], rag: UniversalRAG) -> list[Any]:
    """The evidence as an agent's own search would leave it in ``messages``: an ``AIMessage`` calling
    ``search_<corpus>`` and the ``ToolMessage`` answering it (labelled text within ``rag.budget``; the documents as
    its artifact). Every chat model accepts this pair anywhere in a conversation, unlike a mid-conversation system
    message or a tool message without its call."""
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    name = f"search_{corpus}"
    return [
        AIMessage(
            content="", tool_calls=[{"name": name, "args": {"query": question}, "id": call_id, "type": "tool_call"}]
        ),
        ToolMessage(content=format_documents(documents, rag=rag), artifact=documents, tool_call_id=call_id, name=name),
    ]


def make_retrieve_node(
    rag: UniversalRAG,
    corpus: str,
    *,
    k: int | None = None,
    filter: Mapping[str, Any] | None = None,
    filters: Mapping[str, Any] | None = None,
    output: Literal["documents", "messages"] = "documents",
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> RunnableLambda[Any, Any]:
    """A node searching ``corpus`` for the state's question.

    With ``output="documents"`` (default) it returns ``{"documents": [...]}`` (appended to the state's list), each
    document carrying the decision in its metadata when the state holds one. With ``output="messages"`` it appends
    to ``messages`` an ``AIMessage`` calling ``search_<corpus>`` and its ``ToolMessage`` (the labelled evidence as
    text, the documents as the artifact): a plain ``MessagesState`` graph works, its answering model reads the
    evidence like a tool's result. Without a ``filter``, the routing probe's hits in the state's decision are used
    instead of a second search. ``max_unit_tokens`` cuts each document's ``page_content`` at about that many tokens
    (default about 1000, as the retrievers and tools do: a long document's matched passages first,
    ``metadata["truncated"]`` says so); ``None`` keeps whole units — a whole manual is then one document of
    hundreds of thousands of characters in the state (and in a checkpointer), and the first such document fills the
    generation node's ``rag.budget`` alone, leaving the other documents' text out of the answer. It raises
    :class:`MissingStateKeysError` when the graph's state lacks the key it writes. ``filters`` is a deprecated
    spelling of ``filter``."""
    if output not in ("documents", "messages"):
        raise ValueError(f"output must be 'documents' or 'messages', got {output!r}.")
    check_unit_tokens(max_unit_tokens)
    k = None if k is None else check_k(k)  # k below 1 is refused, as everywhere (None: rag.k)
    where = filter if filter is not None else filters
    where = paths_as_uris(where, "source") if where is not None else None  # a Document's path: the unit's URI
    node = retrieve_node_name(corpus)

    def done(hits: list[Hit], state: Any) -> dict[str, Any]:
        documents = hits_to_documents(hits, decision=_decision(state), max_tokens=max_unit_tokens)
        if output == "messages":
            return {"messages": _as_messages(corpus, question_of(state), documents, rag)}
        return {"documents": documents}

    def reused(state: Any, config: RunnableConfig) -> list[Hit] | None:
        _require_keys(config, node, [output])
        return _probe_hits(state, corpus, k or rag.k) if where is None else None

    def retrieve(state: Any, config: RunnableConfig) -> dict[str, Any]:
        hits = reused(state, config)
        if hits is None:
            hits = rag.retrieve(question_of(state), k=k, routes=[corpus], filter=where)
        return done(hits, state)

    async def aretrieve(state: Any, config: RunnableConfig) -> dict[str, Any]:
        hits = reused(state, config)
        if hits is None:
            hits = await rag.aretrieve(question_of(state), k=k, routes=[corpus], filter=where)
        return done(hits, state)

    return RunnableLambda(retrieve, afunc=aretrieve, name=node)


def _turn_documents(state: Any) -> list[Document]:
    """The documents to answer from: the state's ``documents``, else (a ``MessagesState`` graph with
    ``output="messages"`` retrieval) the artifacts of the tool messages since the last human message."""
    documents = _get(state, "documents")
    if documents:
        return list(documents)
    found: list[Document] = []
    for message in reversed(_get(state, "messages") or []):
        if getattr(message, "type", None) == "human":
            break
        artifact = getattr(message, "artifact", None) if isinstance(message, ToolMessage) else None
        if isinstance(artifact, list):
            found[:0] = [d for d in artifact if isinstance(d, Document)]
    return found


def _ranked(
    rag: UniversalRAG, documents: Sequence[Document], decision: RouteDecision | None, k: int | None
) -> list[Hit]:
    """The state's documents as one ranking of ``k``, per corpus in the decision's order, merged as
    :meth:`UniversalRAG.retrieve` merges corpora (:meth:`Retrieval.merge <universalrag.retrieve.Retrieval.merge>`;
    ``k`` ``None``: ``rag.k``)."""
    by_corpus: dict[str, list[Hit]] = {}
    for hit in documents_to_hits(documents):
        by_corpus.setdefault(hit.corpus, []).append(hit)
    order = {r: i for i, r in enumerate(decision.routes if decision else ())}
    ordered = sorted(by_corpus.items(), key=lambda kv: order.get(kv[0], len(order)))
    per_corpus = {name: sorted(hits, key=lambda h: -h.score) for name, hits in ordered}
    return rag.retrieval.merge(per_corpus, k=rag.k if k is None else k)


def make_generate_node(
    rag: UniversalRAG, llm: BaseChatModel | None = None, *, k: int | None = None
) -> RunnableLambda[Any, Any]:
    """A node answering the question from the state's documents.

    The documents are merged into one ranking of the best ``k`` (default ``rag.k``), as ``rag.retrieve`` merges
    the corpora it searched (the retrieve nodes give up to ``k`` each), and turned into evidence (text, table rows,
    images, frames of clips and videos, within ``rag.budget``). With ``llm`` (any LangChain chat model; multimodal
    models see the pictures as image blocks) or else the core's configured generator, it writes ``answer`` and
    ``citations`` (and appends an ``AIMessage`` when the state has ``messages``); with neither, ``answer`` is
    ``None`` and the documents are the result.
    """
    k = None if k is None else check_k(k)
    generator = LangChainGenerator(llm) if llm is not None else None

    def prepare(state: Any, config: RunnableConfig) -> tuple[str, list[Any], Any]:
        channels = _graph_channels(config)
        if channels is not None and not {"answer", "messages"} & channels:
            raise MissingStateKeysError(GENERATE, ["answer"])
        question, gen = question_of(state), generator or rag.generator
        if gen is None:  # retrieval only: no need to load pictures
            return question, [], None
        hits = _ranked(rag, _turn_documents(state), _decision(state), k)
        return question, build_evidence(hits, budget=rag.budget), gen

    def finish(state: Any, config: RunnableConfig, text: str | None, citations: Sequence[str]) -> dict[str, Any]:
        update: dict[str, Any] = {"answer": text, "citations": list(citations)}
        messages = _get(state, "messages")
        said: list[Any] = [AIMessage(content=text)] if text is not None else []
        question = _get(state, "question")
        if _checkpointed(config) and isinstance(question, str) and question.strip():
            update["question"] = None  # consumed: the thread's next human message must not lose to it
            if messages is not None and _last_human(messages) != question:
                said.insert(0, HumanMessage(content=question))  # the conversation keeps what was asked
        if said and messages is not None:
            update["messages"] = said
        return update

    def generate(state: Any, config: RunnableConfig) -> dict[str, Any]:
        question, evidence, gen = prepare(state, config)
        if gen is None:
            return finish(state, config, None, ())
        result = gen.generate(question, evidence)
        return finish(state, config, result.text, result.citations)

    async def agenerate(state: Any, config: RunnableConfig) -> dict[str, Any]:
        question, evidence, gen = prepare(state, config)
        if gen is None:
            return finish(state, config, None, ())
        result = await gen.agenerate(question, evidence)
        return finish(state, config, result.text, result.citations)

    return RunnableLambda(generate, afunc=agenerate, name=GENERATE)


def _graph_corpora(rag: UniversalRAG, corpora: Sequence[str] | None) -> list[str]:
    """The corpora that get a node (all registered ones by default: a node searches at call time, so a corpus
    ingested after the build is found), with a warning when the graph cannot find evidence now — no corpus holds
    rows, or a named corpus is empty or missing (such a graph used to answer from nothing without a word)."""
    registered = rag.store.corpora(refresh=True)
    names = list(corpora) if corpora is not None else list(registered)
    nonempty = set(rag.store.nonempty())
    if not nonempty & set(names):
        logger.warning(
            "build_graph: none of the corpora %s holds rows (store %r): the graph finds no evidence "
            "until they are ingested (rag.ingest(...); its nodes search at call time, but corpora "
            "registered after the build need a new graph).",
            names,
            rag.store,
        )
        return names
    missing = [n for n in names if n not in registered]
    empty = [n for n in names if n in registered and n not in nonempty]
    if corpora is not None and (missing or empty):
        logger.warning(
            "build_graph: corpora %s are not registered and %s hold no rows yet: their nodes find "
            "nothing (missing ones fail) until they are created and ingested.",
            missing,
            empty,
        )
    return names


def build_graph(
    rag: UniversalRAG,
    llm: BaseChatModel | None = None,
    *,
    corpora: Sequence[str] | None = None,
    k: int | None = None,
    checkpointer: Any = None,
    allow_none: bool = True,
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A compiled graph over :class:`UniversalRAGState`: ``route`` → the chosen ``retrieve_<corpus>`` nodes
    in parallel → ``generate`` → END. The graph answers, so, as :meth:`UniversalRAG.query
    <universalrag.pipeline.UniversalRAG.query>` does, it lets routing conclude ``none`` (``allow_none=True``, the
    default): that route goes straight to ``generate``, which answers from the model's own knowledge;
    ``allow_none=False`` retrieves from the most likely corpus instead. The route node and edge, which feed
    retrieval, default to ``False`` (:func:`make_route_node`, :func:`make_route_edge`).

    ``corpora`` are the corpora that get a node (default: every registered corpus, read from the registry now;
    the nodes search at call time, so a corpus ingested later is found, but a corpus registered later needs a new
    graph). Empty or missing corpora are logged as a warning. Invoke with ``{"question": ...}`` or
    ``{"messages": [HumanMessage(...)]}``. Each run starts a new turn: with a ``checkpointer``, the thread's
    ``documents`` are emptied at the route node and a ``question`` is cleared once answered (see the module
    docstring). ``max_unit_tokens`` cuts each retrieved document's ``page_content`` (see
    :func:`make_retrieve_node`; ``None`` keeps whole units).
    """
    names = _graph_corpora(rag, corpora)
    builder = StateGraph(UniversalRAGState)
    builder.add_node("route", make_route_node(rag, allow_none=allow_none, new_turn=True))
    for name in names:
        builder.add_node(retrieve_node_name(name), make_retrieve_node(rag, name, k=k, max_unit_tokens=max_unit_tokens))
        builder.add_edge(retrieve_node_name(name), GENERATE)
    builder.add_node(GENERATE, make_generate_node(rag, llm, k=k))
    builder.add_edge(START, "route")
    builder.add_conditional_edges(
        "route", make_route_edge(rag, corpora=names, allow_none=allow_none), [*map(retrieve_node_name, names), GENERATE]
    )
    builder.add_edge(GENERATE, END)
    return builder.compile(checkpointer=checkpointer, name="universalrag")
