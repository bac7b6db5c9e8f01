"""LangChain retrievers over the core: :class:`UniversalRAGRetriever` routes then retrieves;
:class:`CorpusRetriever` searches one corpus."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from ._deps import require_langchain

require_langchain()

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from universalrag.errors import InvalidInputError
from universalrag.evidence import UNIT_TEXT_TOKENS, check_unit_tokens
from universalrag.pipeline import UniversalRAG
from universalrag.plan import check_k as _core_check_k
from universalrag.store.filters import paths_as_uris

from ._convert import hits_to_documents

__all__ = ["CorpusRetriever", "UniversalRAGRetriever"]


def check_k(k: Any) -> int | None:
    """``k`` as a count of documents: ``None`` (the pipeline's ``k``) or an integer of at least 1; anything else is
    refused with the core's :class:`InvalidInputError` (:func:`universalrag.plan.check_k`, the same rule and
    sentence on every surface)."""
    return None if k is None else _core_check_k(k)


def check_routes(routes: Any) -> list[str] | None:
    """``routes`` as a list of corpus names: a bare string would be read letter by letter (``"table"`` searched a
    corpus named ``"t"``), so it is refused, as the LlamaIndex retriever does."""
    if isinstance(routes, str):
        raise TypeError(f"routes must be a list of corpus names, not the string {routes!r}: write routes=[{routes!r}].")
    return list(routes) if routes is not None else None


class _PipelineRetriever(BaseRetriever):
    """What both retrievers share: the live pipeline, argument checks, and copying rules.

    ``search_kwargs`` (as LangChain's ``VectorStoreRetriever`` takes them) are accepted at construction and become
    the fields they name; an unknown field or search argument is an error, not silently ignored.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    #: The fields ``search_kwargs`` may set.
    _SEARCH_KEYS: ClassVar[frozenset[str]] = frozenset({"k", "filter", "filters"})

    rag: UniversalRAG = Field(repr=False)
    """The core facade (store, embedder, router). Shared, not copied, by ``copy.deepcopy``."""
    k: int | None = None
    """How many documents to return (at least 1; ``None``: the pipeline's ``k``, 5 unless it was built with
    another)."""
    filter: dict[str, Any] | None = None
    """A metadata filter (the core's filter syntax: ``{"year": {"$gte": 2020}}``)."""
    filters: dict[str, Any] | None = None
    """Deprecated spelling of ``filter``."""
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS
    """The most a document's ``page_content`` may take, in tokens (about 0.75 words each); a longer unit (a whole
    manual is a unit of the document corpus) is cut, its matched passages first, and gets
    ``metadata["truncated"] = True``. ``None`` keeps whole units."""

    def __init__(self, **data: Any) -> None:
        super().__init__(**self._arguments(data))

    @classmethod
    def _arguments(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The constructor's arguments with ``search_kwargs`` merged in, checked before pydantic sees them (so
        that a bad ``k`` raises :class:`InvalidInputError`, not a generic validation error)."""
        data = dict(data)
        search = data.pop("search_kwargs", None) or {}
        if not isinstance(search, Mapping):
            raise InvalidInputError(f"search_kwargs must be a dict, got {type(search).__name__}.")
        unknown = sorted(set(search) - cls._SEARCH_KEYS)
        if unknown:
            raise InvalidInputError(
                f"{cls.__name__} does not support search_kwargs {unknown}; it takes {sorted(cls._SEARCH_KEYS)}."
            )
        twice = sorted(key for key in search if key in data and data[key] != search[key])
        if twice:
            raise InvalidInputError(f"{twice} given both as arguments and in search_kwargs, with different values.")
        data.update(search)
        if "corpus" in data:
            corpus = data.pop("corpus")
            warnings.warn(
                "`corpus=` is deprecated; use `routes=[...]` (a list of corpus names).",
                DeprecationWarning,
                stacklevel=3,
            )
            if "routes" in data and data["routes"] not in (None, [corpus]):
                raise InvalidInputError("Give routes= only (corpus= is its deprecated spelling), not both.")
            data["routes"] = [corpus]
        if "k" in data:
            check_k(data["k"])
        if "routes" in data:
            data["routes"] = check_routes(data["routes"])
        if "max_unit_tokens" in data:
            check_unit_tokens(data["max_unit_tokens"])
        return data

    def _filter(self, filter: dict[str, Any] | None, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        """The filter of a call, else the retriever's; ``source`` (a Document's file path) filters on the unit's
        URI (:func:`~universalrag.store.filters.paths_as_uris`)."""
        for candidate in (filter, filters, self.filter, self.filters):
            if candidate is not None:
                return dict(paths_as_uris(candidate, "source"))
        return None

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        """A copy sharing the same ``rag``: the pipeline holds database engines, thread pools and locks, which
        cannot be copied (``model_copy(deep=True)`` goes through here too)."""
        memo = {} if memo is None else memo
        memo[id(self.rag)] = self.rag
        return super().__deepcopy__(memo)


class UniversalRAGRetriever(_PipelineRetriever):
    """Routed multimodal retrieval as a LangChain retriever.

    The core's evidence-aware router picks the corpora for each query (or ``routes`` fixes them), each corpus is
    searched in its own embedding space and the rankings are fused; the routing probe's hits are the results, so
    nothing is searched twice. Each ``Document`` carries the unit's metadata plus ``corpus``, ``modality``,
    ``granularity``, ``score``, ``uri``, ``start_s``/``end_s``, ``source_id``, ``parent_id``, ``id``, ``rank``,
    ``truncated`` and the route decision (``routes``, ``route_scores``, ``router``).

    The order of the documents is the ranking: ``metadata["rank"]`` is each one's 1-based position. Scores of
    different corpora and channels are not on one scale (a list may read 0.39, 0.50, 0.47), so re-sorting by
    ``score`` (or reordering with ``LongContextReorder``) undoes the fusion; sort by ``rank`` to restore it.

    ``page_content`` is cut at ``max_unit_tokens`` (default about 1000 tokens; a long document's matched passages
    come first; ``metadata["truncated"]`` says so), so that a chain joining ``k`` documents sends a bounded prompt;
    ``max_unit_tokens=None`` keeps whole units.

    A retriever used as an agent's tool should not come back empty because the router judged the question
    answerable without retrieval: unless ``allow_none=True``, a ``none`` conclusion still searches the most likely
    corpus. ``k``, ``routes``, ``filter`` and ``allow_none`` can also be given per call
    (``retriever.invoke(query, k=2)``) or, as for LangChain's ``VectorStoreRetriever``, in ``search_kwargs``
    (``UniversalRAGRetriever(rag=rag, search_kwargs={"k": 3})``); unknown ones are refused.

    Example::

        retriever = UniversalRAGRetriever(rag=UniversalRAG(), k=4)  # default: rag.k (5)
        docs = retriever.invoke("What does the lighthouse look like at night?")
    """

    _SEARCH_KEYS: ClassVar[frozenset[str]] = frozenset({"k", "filter", "filters", "routes", "allow_none"})

    k: int | None = None
    """How many documents to return (at least 1; ``None``: the pipeline's ``k``, 5 unless it was built with
    another): each chosen corpus is searched for its own top ``k``, and the fused ranking is cut to ``k``."""
    routes: list[str] | None = None
    """Corpora to search instead of asking the router, as a list (``["table"]``; ``["none"]`` searches
    nothing)."""
    allow_none: bool = False
    """Return no documents when the router concludes ``none`` (default ``False``, as for every call that returns
    hits: search the most likely corpus instead)."""

    def _search(
        self,
        k: int | None,
        routes: list[str] | None,
        filter: dict[str, Any] | None,
        allow_none: bool | None,
        filters: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The core's search arguments: per-call values over the fields, checked."""
        return {
            "k": check_k(k if k is not None else self.k),
            "routes": check_routes(routes if routes is not None else self.routes),
            "filter": self._filter(filter, filters),
            "allow_none": self.allow_none if allow_none is None else allow_none,
        }

    def _documents(self, found: tuple[Any, list[Any]], k: int | None) -> list[Document]:
        decision, hits = found
        return hits_to_documents(hits[:k], decision=decision, max_tokens=check_unit_tokens(self.max_unit_tokens))

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        routes: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        allow_none: bool | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        args = self._search(k, routes, filter, allow_none, filters)
        return self._documents(self.rag.search(query, **args), args["k"])

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        routes: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        allow_none: bool | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        args = self._search(k, routes, filter, allow_none, filters)
        return self._documents(await self.rag.asearch(query, **args), args["k"])


class CorpusRetriever(_PipelineRetriever):
    """Fixed corpora, no routing: the ``k`` best units of the ``routes`` (each corpus in its own embedding space,
    several merged as :meth:`UniversalRAG.retrieve` merges them), each with its ``rank`` and, past
    ``max_unit_tokens``, cut (``metadata["truncated"]``), as :class:`UniversalRAGRetriever`. ``k`` and ``filter``
    can be given per call or in ``search_kwargs``; ``corpus="table"`` is a deprecated spelling of
    ``routes=["table"]``.

    Example::

        tables = CorpusRetriever(rag=rag, routes=["table"], k=3)
        tables.invoke("Which team won most games?")
    """

    routes: list[str]
    """The corpora to search, as a list (looked up at each call: a corpus ingested after the retriever was built is
    found)."""

    @property
    def corpus(self) -> str:
        """The first of :attr:`routes` (deprecated: read ``routes``)."""
        warnings.warn("`CorpusRetriever.corpus` is deprecated; read `routes`.", DeprecationWarning, stacklevel=2)
        return self.routes[0]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        hits = self.rag.retrieve(
            query, k=check_k(k if k is not None else self.k), routes=self.routes, filter=self._filter(filter, filters)
        )
        return hits_to_documents(hits, max_tokens=check_unit_tokens(self.max_unit_tokens))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        hits = await self.rag.aretrieve(
            query, k=check_k(k if k is not None else self.k), routes=self.routes, filter=self._filter(filter, filters)
        )
        return hits_to_documents(hits, max_tokens=check_unit_tokens(self.max_unit_tokens))
