"""Plain data shared by every layer: enums and frozen dataclasses, no behaviour beyond validation."""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeAlias

from .errors import InvalidInputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Modality",
    "Granularity",
    "BUILTIN_CORPORA",
    "NO_RETRIEVAL",
    "CORPUS_NAME_PATTERN",
    "VECTOR_INDEX_KINDS",
    "CorpusSpec",
    "Partitioning",
    "Unit",
    "PartBatch",
    "SourceRecord",
    "GraphPath",
    "Hit",
    "RouteDecision",
    "Evidence",
    "Answer",
    "validate_corpus_name",
    "Vector",
]

#: A vector: floats in a sequence, or the numpy array an encoder returns.
Vector: TypeAlias = "Sequence[float] | npt.NDArray[np.floating[Any]]"

#: Route name meaning "answer without retrieval".
NO_RETRIEVAL = "none"

#: Lowercase letter first, then lowercase letters, digits or underscores; 1 to 40 characters (the table
#: name `corpus_<name>_parts` and its index names must stay within Postgres's 63-character limit).
CORPUS_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class Modality(StrEnum):
    """What kind of content a corpus holds."""

    TEXT = "text"
    TABLE = "table"
    IMAGE = "image"
    VIDEO = "video"


class Granularity(StrEnum):
    """How large one retrievable unit of a corpus is."""

    PARAGRAPH = "paragraph"
    DOCUMENT = "document"
    TABLE = "table"
    IMAGE = "image"
    CLIP = "clip"
    VIDEO = "video"
    OTHER = "other"


def validate_corpus_name(name: str) -> str:
    """Return ``name`` when it is a valid corpus name, else raise :class:`InvalidInputError` with the rule."""
    if not isinstance(name, str) or not CORPUS_NAME_PATTERN.fullmatch(name) or name == NO_RETRIEVAL:
        raise InvalidInputError(
            f"Invalid corpus name {name!r}: use 1-40 characters, a lowercase letter first, then lowercase "
            f"letters, digits or underscores (and not {NO_RETRIEVAL!r})."
        )
    return name


#: How a partitioned corpus splits its units (docs/partitioning.md).
PARTITION_KINDS = ("tenant", "time", "source")
#: The time partitions a corpus partitioned by time can have.
PARTITION_INTERVALS = ("month", "year")
#: Most hash partitions of a corpus partitioned by source (each holds its own HNSW index).
MAX_HASH_PARTITIONS = 64
#: Most partitions a tenant or time corpus creates on demand; later values go to its default partition. Each partition
#: is a table with its own indexes (five, plus a parts table for multi-vector corpora): the bound keeps the catalogue
#: and the planner's work per query in check.
MAX_PARTITIONS = 1000
_PARTITION_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Partitioning:
    """How a corpus is split into PostgreSQL partitions, each with its own HNSW index.

    - ``by="tenant"``: one partition per value of the metadata key ``key`` (``LIST``), created when the value first
      arrives; a search whose filter pins ``key`` reads only that tenant's partition.
    - ``by="time"``: one partition per ``interval`` (``"month"`` or ``"year"``) of the ISO date or timestamp in the
      metadata key ``key`` (``RANGE``); a search filtering ``key`` by ``$gte``/``$lt``... reads only those months.
    - ``by="source"``: ``partitions`` hash partitions (``HASH``) by the unit's source: one source's units share a
      partition, its re-ingest and delete touch that partition only, and index builds are spread.

    Tenant and time corpora create at most ``max_partitions`` partitions; units whose value has none (a missing key,
    a value past the bound) land in the corpus's default partition, which every unfiltered search reads too.
    """

    by: str
    key: str | None = None
    interval: str = "month"
    partitions: int = 8
    max_partitions: int = 256

    def __post_init__(self) -> None:
        if self.by not in PARTITION_KINDS:
            raise InvalidInputError(
                f"Partitioning by {self.by!r} is not supported; use one of {', '.join(PARTITION_KINDS)}."
            )
        if self.by == "source":
            if self.key is not None:
                raise InvalidInputError(
                    "Partitioning by source takes no key (units are hashed by their source); leave key out."
                )
            if isinstance(self.partitions, bool) or not isinstance(self.partitions, int):
                raise InvalidInputError(f"partitions must be a whole number, got {self.partitions!r}.")
            if not 2 <= self.partitions <= MAX_HASH_PARTITIONS:
                raise InvalidInputError(
                    f"Partitioning by source needs between 2 and {MAX_HASH_PARTITIONS} partitions, "
                    f"got {self.partitions}."
                )
        else:
            if not isinstance(self.key, str) or not _PARTITION_KEY.fullmatch(self.key):
                raise InvalidInputError(
                    f"Partitioning by {self.by} needs key=, the metadata key holding the "
                    f"{'tenant' if self.by == 'tenant' else 'date'}: letters, digits, '_' or '-', got {self.key!r}."
                )
            if isinstance(self.max_partitions, bool) or not isinstance(self.max_partitions, int):
                raise InvalidInputError(f"max_partitions must be a whole number, got {self.max_partitions!r}.")
            if not 1 <= self.max_partitions <= MAX_PARTITIONS:
                raise InvalidInputError(
                    f"max_partitions must be between 1 and {MAX_PARTITIONS}, got {self.max_partitions}."
                )
        if self.by == "time" and self.interval not in PARTITION_INTERVALS:
            raise InvalidInputError(
                f"Time partitions are one {' or one '.join(PARTITION_INTERVALS)} long, got interval={self.interval!r}."
            )

    @property
    def method(self) -> str:
        """PostgreSQL's partitioning method: ``LIST``, ``RANGE`` or ``HASH``."""
        return {"tenant": "LIST", "time": "RANGE", "source": "HASH"}[self.by]

    def as_dict(self) -> dict[str, Any]:
        """The declaration as the registry stores it (``corpora.partitioning``)."""
        out: dict[str, Any] = {"by": self.by, "method": self.method}
        if self.by == "source":
            out["partitions"] = self.partitions
        else:
            out.update(key=self.key, max_partitions=self.max_partitions)
        if self.by == "time":
            out["interval"] = self.interval
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Partitioning:
        """The declaration the registry stored (:meth:`as_dict`)."""
        fields = ("by", "key", "interval", "partitions", "max_partitions")
        return cls(**{name: data[name] for name in fields if name in data})


#: What ``CorpusSpec.vector_index`` may say (``universalrag.store.vectors`` has what each means).
VECTOR_INDEX_KINDS: tuple[str, ...] = ("auto", "vector", "halfvec", "binary", "none")


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    """A corpus as registered: one pgvector table searched in its own embedding space.

    ``parent`` names the corpus whose units contain this one's (paragraph → document, clip → video).
    ``multi_vector`` corpora store several vectors per unit (chunks of a long document, rows of a
    table); a unit matches when its best vector does.
    """

    name: str
    modality: Modality
    granularity: Granularity
    description: str = ""
    dimension: int = 384
    embedder: str = ""
    parent: str | None = None
    multi_vector: bool = False
    builtin: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: The visual encoder whose space the corpus's ``visual`` column holds (images, clips, videos), if any.
    visual_encoder: str | None = None
    visual_dimension: int | None = None
    #: How the corpus's table is partitioned (docs/partitioning.md); ``None``: one table.
    partition: Partitioning | None = None

    #: What the HNSW index of the corpus's vectors is built on (docs/database.md, "How vectors are stored"):
    #: ``"vector"`` (full precision), ``"halfvec"`` (the vectors cast to half precision; the column keeps full
    #: precision), ``"binary"`` (one bit a dimension, candidates ranked again exactly) or ``"none"``. When creating:
    #: ``"auto"`` (or ``None``: the settings' ``vector_index``) lets the library choose, and change it as it grows.
    #: A registered corpus's spec says what its index is.
    vector_index: str | None = None

    def __post_init__(self) -> None:
        validate_corpus_name(self.name)
        if self.vector_index is not None and self.vector_index not in VECTOR_INDEX_KINDS:
            raise InvalidInputError(
                f"Corpus {self.name!r}: vector_index must be one of {', '.join(VECTOR_INDEX_KINDS)}, "
                f"got {self.vector_index!r}."
            )
        if self.partition is not None and not isinstance(self.partition, Partitioning):
            raise InvalidInputError(
                f"Corpus {self.name!r}: partition must be a Partitioning, for example "
                f"Partitioning(by='tenant', key='tenant'), got {type(self.partition).__name__}."
            )
        if self.parent is not None:
            validate_corpus_name(self.parent)
        for name, kind in (("modality", Modality), ("granularity", Granularity)):
            value = getattr(self, name)
            if value not in set(kind):
                raise InvalidInputError(
                    f"Corpus {self.name!r}: {name} must be one of {', '.join(kind)}, got {value!r}."
                )
            object.__setattr__(self, name, kind(value))
        try:
            dimension = operator.index(self.dimension)
        except TypeError:
            dimension = 0
        if isinstance(self.dimension, bool) or not 1 <= dimension <= 16000:
            raise InvalidInputError(
                f"Corpus {self.name!r}: dimension must be a whole number between 1 and 16000, got {self.dimension!r}."
            )
        object.__setattr__(self, "dimension", dimension)


#: The corpora every schema starts with, as in the UniversalRAG paper (``none`` is a route, not a corpus).
BUILTIN_CORPORA: tuple[tuple[str, Modality, Granularity, str | None, bool, str], ...] = (
    (
        "paragraph",
        Modality.TEXT,
        Granularity.PARAGRAPH,
        "document",
        False,
        "Short passages of about a hundred words; for factual questions answered by one specific fact or sentence.",
    ),
    (
        "document",
        Modality.TEXT,
        Granularity.DOCUMENT,
        None,
        True,
        "Whole documents such as articles and reports; for questions that need several facts from a long text "
        "or reasoning across its sections.",
    ),
    (
        "table",
        Modality.TABLE,
        Granularity.TABLE,
        None,
        True,
        "Tables with a header and rows; for questions about figures, rankings, counts, comparisons and records.",
    ),
    (
        "image",
        Modality.IMAGE,
        Granularity.IMAGE,
        None,
        False,
        "Photographs, diagrams and other images; for questions about what something looks like: colour, shape, "
        "appearance, visible details.",
    ),
    (
        "clip",
        Modality.VIDEO,
        Granularity.CLIP,
        "video",
        False,
        "Scenes of videos with their time range and transcript; for questions about a specific moment or event "
        "within a video.",
    ),
    (
        "video",
        Modality.VIDEO,
        Granularity.VIDEO,
        None,
        True,
        "Whole videos with their transcript; for questions about the overall content, steps or storyline of a video.",
    ),
)


@dataclass(frozen=True, slots=True)
class Unit:
    """One retrievable unit about to be written: a paragraph, a document, a table, an image, a clip, a video.

    ``id`` is chosen by the caller (a UUID string) so that children can reference parents in the same
    write. ``parts`` holds the texts of a multi-vector unit's extra vectors (chunks, rows), aligned with
    ``part_embeddings``; ``embedding`` is the unit's own vector. Units with very many parts (a table of
    100k rows) pass them as a stream of :class:`PartBatch` to ``Store.write_source`` instead.
    """

    id: str
    corpus: str
    content: str
    embedding: Vector | None = None
    uri: str | None = None
    parent_id: str | None = None
    start_s: float | None = None
    end_s: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    parts: Sequence[str] = ()
    part_embeddings: Sequence[Sequence[float]] = ()
    #: The unit's vector in the corpus's visual space (an image's, or the pooled frames of a clip or video).
    visual_embedding: Vector | None = None


@dataclass(frozen=True, slots=True)
class PartBatch:
    """A batch of parts (rows of a table, chunks of a transcript) of one unit, streamed to the store.

    ``vectors`` is a float32 array of shape ``(len(texts), dimension)``; parts are numbered from ``start``.
    """

    corpus: str
    unit_id: str
    start: int
    texts: Sequence[str]
    vectors: Any  # numpy.ndarray; typed loosely so that this module needs no numpy


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """What was ingested: one file (or object), identified by its URI and its ``scope``, with the hash of its
    content. ``scope`` is ``""`` for a file sent to the default corpora of its kind and the corpus name when
    the caller named one, so one file can feed several corpora without one ingestion replacing another's."""

    uri: str
    content_hash: str
    modality: Modality
    corpora: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    scope: str = ""


@dataclass(frozen=True, slots=True)
class GraphPath:
    """How the knowledge graph reached a hit: from ``seed`` (an entity the query names) over ``hops`` relations, the
    last of them ``relation``, to ``entity``, which the unit names (``role`` ``mention``) or is (``anchor``); with the
    entity's and the relation's descriptions where the graph holds them."""

    seed: str
    entity: str
    relation: str | None = None
    hops: int = 0
    role: str = "mention"
    entity_description: str = ""
    relation_description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (descriptions only when set)."""
        out: dict[str, Any] = {
            "seed": self.seed,
            "entity": self.entity,
            "relation": self.relation,
            "hops": self.hops,
            "role": self.role,
        }
        if self.entity_description:
            out["entity_description"] = self.entity_description
        if self.relation_description:
            out["relation_description"] = self.relation_description
        return out


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result. ``path`` says how the knowledge graph reached it (``None`` for a search's hit)."""

    corpus: str
    id: str
    score: float
    content: str
    uri: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    parent_id: str | None = None
    start_s: float | None = None
    end_s: float | None = None
    source_id: str | None = None
    modality: Modality | None = None
    granularity: Granularity | None = None
    #: For multi-vector units: the parts (chunks, rows) that matched, best first, as (index, text, score).
    matched_parts: tuple[tuple[int, str, float], ...] = ()
    #: Per-channel similarities when the score fuses several (``{"text": .., "visual": ..}``).
    channel_scores: Mapping[str, float] = field(default_factory=dict)
    path: GraphPath | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (``start_s``/``end_s`` only where they apply)."""
        out: dict[str, Any] = {
            "corpus": self.corpus,
            "id": self.id,
            "score": round(float(self.score), 6),
            "content": self.content,
            "uri": self.uri,
            "metadata": dict(self.metadata),
            "parent_id": self.parent_id,
            "source_id": self.source_id,
            "modality": str(self.modality) if self.modality else None,
            "granularity": str(self.granularity) if self.granularity else None,
        }
        if self.start_s is not None or self.end_s is not None:
            out["start_s"] = self.start_s
            out["end_s"] = self.end_s
        if self.channel_scores:
            out["channel_scores"] = {k: round(float(v), 6) for k, v in self.channel_scores.items()}
        if self.matched_parts:
            out["matched_parts"] = [
                {"index": i, "text": t, "score": round(float(s), 6)} for i, t, s in self.matched_parts
            ]
        if self.path is not None:
            out["path"] = self.path.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """Which corpora a router chose for a query: ``routes`` in order (primary first), a probability per
    candidate route in ``scores``, the router's ``router`` name and its ``latency_ms``.

    Evidence-aware routing also fills ``prior`` (the trained router's own probabilities), ``evidence`` (the
    features the combiner read, per corpus: best similarity, margin, lexical overlap, ...), ``id`` (the key of
    the decision in the routing log, for feedback) and ``version`` (the combiner's). ``fallback`` is true when the
    router concluded ``none`` but the caller asked for evidence anyway (``allow_none=False``): ``routes`` then
    holds the most likely corpus.
    """

    routes: tuple[str, ...]
    scores: Mapping[str, float] = field(default_factory=dict)
    router: str = ""
    latency_ms: float = 0.0
    prior: Mapping[str, float] = field(default_factory=dict)
    evidence: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    id: str | None = None
    version: str = ""
    fallback: bool = False

    @property
    def primary(self) -> str:
        """The first chosen route."""
        return self.routes[0] if self.routes else NO_RETRIEVAL

    @property
    def needs_retrieval(self) -> bool:
        """False when the decision is to answer without retrieval."""
        return any(r != NO_RETRIEVAL for r in self.routes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (``prior``, ``evidence``, ``id``, ``version`` and ``fallback`` only when set)."""
        out: dict[str, Any] = {
            "routes": list(self.routes),
            "scores": {k: round(float(v), 6) for k, v in self.scores.items()},
            "router": self.router,
            "latency_ms": round(float(self.latency_ms), 3),
        }
        if self.prior:
            out["prior"] = {k: round(float(v), 6) for k, v in self.prior.items()}
        if self.evidence:
            out["evidence"] = {c: {k: round(float(v), 6) for k, v in f.items()} for c, f in self.evidence.items()}
        if self.id:
            out["id"] = self.id
        if self.version:
            out["version"] = self.version
        if self.fallback:
            out["fallback"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RouteDecision:
        """A decision from its :meth:`to_dict` form."""
        return cls(
            routes=tuple(data.get("routes", ())),
            scores=dict(data.get("scores", {})),
            router=str(data.get("router", "")),
            latency_ms=float(data.get("latency_ms", 0.0)),
            prior=dict(data.get("prior", {})),
            evidence={c: dict(f) for c, f in dict(data.get("evidence", {})).items()},
            id=data.get("id"),
            version=str(data.get("version", "")),
            fallback=bool(data.get("fallback")),
        )


@dataclass(frozen=True, slots=True)
class Evidence:
    """One hit made ready for a language model: its text and, for images, clips and videos, its pictures.

    ``images`` are JPEG bytes (an image, or frames sampled from a clip or video, in time order, with their
    timestamps in ``frame_times``). ``label`` names the evidence for citations, e.g. ``[clip 3]
    morning.mp4 00:06–00:09``. ``id`` is what an answer cites.
    """

    id: str
    corpus: str
    modality: Modality
    label: str
    text: str
    images: tuple[bytes, ...] = ()
    frame_times: tuple[float, ...] = ()
    hit: Hit | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """What a query returns: the answer (``None`` when no language model is configured, or when it failed:
    then ``warning`` says why), the routing decision, the evidence hits, the evidence ids the answer cites, and
    timings in milliseconds per stage."""

    text: str | None
    decision: RouteDecision
    hits: tuple[Hit, ...] = ()
    citations: tuple[str, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    #: Why there is no answer although a language model is configured (it failed, timed out or answered
    #: malformed output); the hits are the evidence it would have been given.
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the shape of ``universalrag ask --json``)."""
        return {
            "answer": self.text,
            "routes": list(self.decision.routes),
            "scores": {k: round(float(v), 6) for k, v in self.decision.scores.items()},
            "hits": [h.to_dict() for h in self.hits],
            "citations": list(self.citations),
            "timings_ms": {k: round(float(v), 2) for k, v in self.timings.items()},
            **({"warning": self.warning} if self.warning is not None else {}),
        }
