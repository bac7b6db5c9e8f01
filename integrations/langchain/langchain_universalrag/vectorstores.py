"""One corpus as a LangChain ``VectorStore``: add, search, get and delete units with any embeddings model."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from ._deps import require_langchain

require_langchain()

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from universalrag.embed import Embedder, check_embedder
from universalrag.errors import ConfigError, CorpusNotFoundError
from universalrag.pipeline import UniversalRAG
from universalrag.plan import DEFAULT_K
from universalrag.store import Filter, Store
from universalrag.types import CorpusSpec, Granularity, Hit, Modality, Unit

from ._convert import ID_KEY, document_metadata, unit_id
from .embeddings import UniversalRAGEmbeddings, as_embedder

__all__ = ["UniversalRAGVectorStore"]


def _document(hit: Hit) -> Document:
    """The stored unit as a ``Document``: the metadata added with it exactly, and for a unit ingested from a file
    (it has a URI) the names LangChain's loaders and the retrievers give it — ``source`` and a PDF's 0-based ``page``
    — so that an agent can say which file answered."""
    if hit.uri is not None:
        doc_id, meta = document_metadata(hit)
        return Document(id=doc_id, page_content=hit.content, metadata=meta)
    meta = dict(hit.metadata)
    doc_id = meta.pop(ID_KEY, None)
    return Document(id=str(doc_id) if doc_id is not None else hit.id, page_content=hit.content, metadata=meta)


class UniversalRAGVectorStore(VectorStore):
    """The units of one corpus as a LangChain vector store.

    Give the core facade (``rag=``: its store and embedder) or a ``store=`` and an ``embedding=`` (any
    LangChain ``Embeddings`` or a core ``Embedder``). Documents keep their LangChain ids (ids that are not
    UUIDs are mapped to stable UUIDs and kept in the metadata key ``_langchain_id``, which is hidden again
    on the way out) and their metadata exactly; ``similarity_search_with_score`` returns cosine similarity
    (higher is closer). Searches accept the core's metadata filters (``filter={"year": {"$gte": 2020}}``).

    The constructor does no I/O; :meth:`ensure_corpus` (or :meth:`from_texts`) creates the corpus.

    Example::

        store = UniversalRAGVectorStore(rag=rag, corpus="notes")
        store.ensure_corpus(description="Meeting notes of the lab")
        store.add_texts(["The cryostat was serviced on Monday."], ids=["note-1"])
        store.similarity_search("When was the cryostat serviced?", k=1)
    """

    def __init__(
        self,
        *,
        corpus: str,
        rag: UniversalRAG | None = None,
        store: Store | None = None,
        embedding: Embeddings | Embedder | None = None,
    ) -> None:
        if rag is None and store is None:
            raise ConfigError("UniversalRAGVectorStore needs rag= (a UniversalRAG) or store= (a Store).")
        if rag is None and embedding is None:
            raise ConfigError(
                "Pass embedding= (a LangChain Embeddings or a universalrag Embedder) with store=, "
                "or pass rag= to use its embedder."
            )
        self.corpus = corpus
        self._rag, self._store = rag, store
        self._embedder = as_embedder(embedding) if embedding is not None else None
        self._embedding = embedding if isinstance(embedding, Embeddings) else None

    def __repr__(self) -> str:
        return f"UniversalRAGVectorStore(corpus={self.corpus!r}, store={self.store!r})"

    @property
    def store(self) -> Store:
        """The core store."""
        return self._store if self._store is not None else self._rag.store  # type: ignore[union-attr]

    @property
    def embedder(self) -> Embedder:
        """The core embedder used for this corpus."""
        if self._embedder is None:
            self._embedder = self._rag.embedder  # type: ignore[union-attr]
        return self._embedder

    @property
    def embeddings(self) -> Embeddings:
        """The embeddings as a LangChain ``Embeddings`` object."""
        return self._embedding or UniversalRAGEmbeddings(self.embedder)

    def ensure_corpus(
        self,
        *,
        description: str = "",
        modality: Modality | str = Modality.TEXT,
        granularity: Granularity | str = Granularity.PARAGRAPH,
    ) -> CorpusSpec:
        """Create the corpus for this embedder unless it exists (initialising the schema first if needed)."""
        if self.store.revision() is None:
            if self._rag is not None:
                self._rag.init()
            else:
                self.store.init(embedder=self.embedder.name, dimension=self.embedder.dimension)
        try:
            return self.store.corpus(self.corpus)
        except CorpusNotFoundError:
            return self.store.create_corpus(
                CorpusSpec(
                    name=self.corpus,
                    modality=Modality(modality),
                    granularity=Granularity(granularity),
                    description=description,
                    dimension=self.embedder.dimension,
                    embedder=self.embedder.name,
                )
            )

    # -- writes -----------------------------------------------------------------------------------------
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and store ``texts`` (a text whose id exists replaces it); returns the ids."""
        texts = list(texts)
        metadatas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        given = list(ids) if ids is not None else [None] * len(texts)
        if not len(metadatas) == len(given) == len(texts):
            raise ValueError(
                f"Got {len(texts)} texts, {len(metadatas)} metadatas and {len(given)} ids; pass one of each per text."
            )
        if not texts:
            return []
        spec = self.store.corpus(self.corpus)
        check_embedder(spec, self.embedder)
        out = [str(i) if i else str(uuid.uuid4()) for i in given]
        vectors = self.embedder.embed(texts)
        units = []
        for doc_id, text, meta, vec in zip(out, texts, metadatas, vectors, strict=True):
            uid, vector = unit_id(doc_id), vec.tolist()
            units.append(
                Unit(
                    id=uid,
                    corpus=self.corpus,
                    content=text,
                    embedding=vector,
                    metadata={**meta, ID_KEY: doc_id} if uid != doc_id else dict(meta),
                    parts=(text,) if spec.multi_vector else (),
                    part_embeddings=(vector,) if spec.multi_vector else (),
                )
            )
        self.store.add_units(units)
        return out

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        return await asyncio.to_thread(self.add_texts, list(texts), metadatas, ids=ids, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete documents by id (unknown ids are ignored); ``True`` when at least one was deleted."""
        if ids is None:
            raise ValueError("Pass the ids to delete; to empty the corpus, drop it with Store.drop_corpus.")
        if not ids:
            return False
        return self.store.delete_units(self.corpus, [unit_id(i) for i in ids]) > 0

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Async twin of :meth:`delete`."""
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    # -- reads ------------------------------------------------------------------------------------------
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents among ``ids``, in that order (missing ids are left out)."""
        return [_document(h) for h in self.store.get_units(self.corpus, [unit_id(i) for i in ids])]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async twin of :meth:`get_by_ids`."""
        return await asyncio.to_thread(self.get_by_ids, ids)

    def similarity_search_with_score_by_vector(
        self, embedding: Sequence[float], k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` nearest documents to a query vector, with their cosine similarity."""
        vector = list(embedding)
        hits = self.store.search(self.corpus, vector, k=k, filter=filter)
        return [(_document(h), float(h.score)) for h in hits]

    def similarity_search_with_score(
        self, query: str, k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` nearest documents to ``query``, with their cosine similarity."""
        check_embedder(self.store.corpus(self.corpus), self.embedder)
        return self.similarity_search_with_score_by_vector(
            self.embedder.embed_query(query).tolist(), k=k, filter=filter
        )

    def similarity_search(
        self, query: str, k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` nearest documents to ``query``."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k=k, filter=filter)]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` nearest documents to a query vector."""
        return [doc for doc, _ in self.similarity_search_with_score_by_vector(embedding, k=k, filter=filter)]

    async def asimilarity_search_with_score(
        self, query: str, k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Async twin of :meth:`similarity_search_with_score`."""
        return await asyncio.to_thread(self.similarity_search_with_score, query, k, filter)

    async def asimilarity_search(
        self, query: str, k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async twin of :meth:`similarity_search`."""
        return await asyncio.to_thread(self.similarity_search, query, k, filter)

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = DEFAULT_K, filter: Filter | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async twin of :meth:`similarity_search_by_vector`."""
        return await asyncio.to_thread(self.similarity_search_by_vector, embedding, k, filter)

    def max_marginal_relevance_search(
        self, query: str, k: int = DEFAULT_K, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """Not supported: the store does not return the candidates' vectors that maximal marginal relevance needs.
        Raises :class:`NotImplementedError` saying what to use instead (LangChain's own raised it without a word)."""
        raise NotImplementedError(
            "UniversalRAGVectorStore does not support maximal marginal relevance (search_type='mmr'): use "
            "search_type='similarity' (or 'similarity_score_threshold'), or langchain_universalrag's "
            "UniversalRAGRetriever, which routes the query across corpora."
        )

    async def amax_marginal_relevance_search(
        self, query: str, k: int = DEFAULT_K, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """Async twin of :meth:`max_marginal_relevance_search` (not supported either)."""
        return self.max_marginal_relevance_search(query, k, fetch_k, lambda_mult, **kwargs)

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: min(1.0, max(0.0, float(score)))  # scores are cosine similarities already

    # -- construction -----------------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        corpus: str = "langchain",
        rag: UniversalRAG | None = None,
        store: Store | None = None,
        description: str = "",
        **kwargs: Any,
    ) -> UniversalRAGVectorStore:
        """A store over ``corpus`` (created when missing) holding ``texts``.

        Give ``rag=`` or ``store=``; with neither, a :class:`UniversalRAG` is built from the environment
        (embedded Postgres or ``UNIVERSALRAG_DATABASE_URL``). ``embedding`` defaults to the rag's embedder.
        """
        if rag is None and store is None:
            rag = UniversalRAG()
        vs = cls(corpus=corpus, rag=rag, store=store, embedding=embedding)
        vs.ensure_corpus(description=description)
        vs.add_texts(texts, metadatas, ids=ids)
        return vs

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> UniversalRAGVectorStore:
        """Async twin of :meth:`from_texts`."""
        return await asyncio.to_thread(lambda: cls.from_texts(texts, embedding, metadatas, ids=ids, **kwargs))
