"""Settings. This is the only module that reads the environment.

Every setting has a keyword argument on the objects that use it; the environment only supplies defaults.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, overload
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError

__all__ = [
    "ASR_ENGINES",
    "Settings",
    "ENV_VARS",
    "parse_servers",
    "redact_url",
    "validate_schema_name",
    "validate_server_alias",
]

#: Speech recognisers ``UNIVERSALRAG_ASR`` can name (built by ``universalrag.ingest.video.asr_from_settings``).
ASR_ENGINES: tuple[str, ...] = ("openai", "faster-whisper", "whisper")

#: Every environment variable the library reads, with what it does (the README's table is built from this).
ENV_VARS: dict[str, str] = {
    "UNIVERSALRAG_DATABASE_URL": "PostgreSQL URL (any server with pgvector >= 0.7). Unset: an embedded "
    "PostgreSQL is started on a data directory under UNIVERSALRAG_HOME.",
    "UNIVERSALRAG_READ_DATABASE_URL": "A read-only URL (a streaming replica of UNIVERSALRAG_DATABASE_URL) for "
    "searches; writes and the corpus registry stay on the primary. See docs/scaling.md.",
    "UNIVERSALRAG_SERVERS": "Other PostgreSQL servers that hold corpora, as 'alias=URL;alias2=URL2'. The registry "
    "stores only the alias (never a password); a corpus created with server='alias' lives there. See docs/scaling.md.",
    "UNIVERSALRAG_READ_SERVERS": "Read-only URLs (replicas) of those servers, as 'alias=URL;...' (optional).",
    "UNIVERSALRAG_HOME": "Where the embedded server keeps its data. Default: the user's data directory "
    "(for example ~/.local/share/universalrag).",
    "UNIVERSALRAG_SCHEMA": "The Postgres schema holding the registry, sources and corpus tables. "
    "Default: universalrag.",
    "UNIVERSALRAG_EMBEDDER": "Text embedder: 'minilm' (default, bundled all-MiniLM-L6-v2, offline), "
    "'openai:MODEL' (OpenAI-compatible embeddings endpoint) or 'hf:PATH' (a local transformers model directory).",
    "UNIVERSALRAG_EMBED_BASE_URL": "Base URL of the OpenAI-compatible embeddings endpoint (openai:MODEL).",
    "UNIVERSALRAG_EMBED_API_KEY": "API key for that endpoint; falls back to OPENAI_API_KEY. Never logged.",
    "UNIVERSALRAG_EMBED_DIMENSIONS": "Ask the embeddings endpoint for vectors of this size (models that "
    "support shortening, such as text-embedding-3-*).",
    "UNIVERSALRAG_DEVICE": "torch device for local encoders ('cpu', 'cuda', 'cuda:1'). Default: CUDA when "
    "present, else CPU.",
    "UNIVERSALRAG_INFERENCE": "CPU backend of the bundled encoder's and the trained router's forward passes: 'auto' "
    "(default: ONNX Runtime for queries and for bulk embedding, the latter on a session with a thread per core; "
    "without ONNX Runtime, NumPy for queries and torch for bulk), 'onnx', 'numpy' or 'torch'.",
    "UNIVERSALRAG_ONNX_THREADS": "Intra-op threads of each ONNX Runtime session (default 1 for queries, too "
    "small to share out; one per core for bulk embedding).",
    "UNIVERSALRAG_VISUAL_ENCODER": "A local CLIP-style model directory (transformers) for the visual channel of "
    "images, clips and videos. Unset: images and videos are searched by their text channel only.",
    "UNIVERSALRAG_VISUAL_WEIGHT": "Weight of an image's visual similarity when fused with its text similarity "
    "(default 0.8, as in the UniversalRAG paper).",
    "UNIVERSALRAG_VIDEO_VISUAL_WEIGHT": "Weight of the pooled-frame similarity of clips and videos against their "
    "transcript similarity (default 0.4: VideoRAG found a text weight of 0.5-0.7 best).",
    "UNIVERSALRAG_CONNECT_TIMEOUT": "Seconds to wait for the database to accept a connection (and answer its "
    "handshake) before failing with an error naming the host and port (default 5).",
    "UNIVERSALRAG_EF_SEARCH": "hnsw.ef_search for searches (default 100; raised to k when k is larger, and to the "
    "beam a corpus's index check tuned for that corpus).",
    "UNIVERSALRAG_VECTOR_INDEX": "How new corpora index their vectors: 'auto' (default: an index on the vectors cast "
    "to halfvec from 384 dimensions, full precision below; a binary-quantised index with an exact re-rank once a "
    "corpus outgrows UNIVERSALRAG_BINARY_MIN_ROWS), 'vector', 'halfvec' or 'binary'. Stored vectors keep full "
    "precision; existing corpora keep their index. See docs/database.md.",
    "UNIVERSALRAG_BINARY_MIN_ROWS": "Vectors a corpus left to 'auto' holds before its index is rebuilt "
    "binary-quantised (default 100000; 0: never).",
    "UNIVERSALRAG_QUERY_VECTORS": "How many recent query texts keep their vectors per model, so that a question "
    "asked again (of another per-corpus tool, by another graph node) is not embedded again (default 256; 0: none).",
    "UNIVERSALRAG_LLM_MODEL": "Chat model for answers and for the LLM router, e.g. gpt-4o-mini or a local model "
    "name. Unset: `ask`/`query` return the evidence without an answer.",
    "UNIVERSALRAG_LLM_BASE_URL": "Base URL of the OpenAI-compatible chat endpoint (vLLM, Ollama, LM Studio, OpenAI).",
    "UNIVERSALRAG_LLM_API_KEY": "API key for that endpoint; falls back to OPENAI_API_KEY. Never logged.",
    "UNIVERSALRAG_LLM_TIMEOUT": "Seconds one answer or one LLM routing decision may take in all, retries "
    "included (default 60). On timeout `ask` shows the evidence and says what happened.",
    "UNIVERSALRAG_ASR": "Speech recognition for videos without subtitles: 'openai' (an OpenAI-compatible "
    "/v1/audio/transcriptions endpoint), 'faster-whisper' or 'whisper' (local models). Unset: off.",
    "UNIVERSALRAG_ASR_MODEL": "The ASR model: a name for 'openai' (default whisper-1), a local model folder or "
    "checkpoint for 'faster-whisper' and 'whisper' (required).",
    "UNIVERSALRAG_ASR_BASE_URL": "Base URL of the OpenAI-compatible transcription endpoint (ASR 'openai').",
    "UNIVERSALRAG_ASR_API_KEY": "API key for that endpoint; falls back to OPENAI_API_KEY. Never logged.",
    "UNIVERSALRAG_DESCRIBE": "1 to have a chat model that reads images describe every image, figure, table and "
    "video scene at ingestion (as `ingest --describe` does; one call per unit, cached). See docs/descriptions.md.",
    "UNIVERSALRAG_DESCRIBE_MODEL": "The chat model for those descriptions (default: UNIVERSALRAG_LLM_MODEL, at "
    "UNIVERSALRAG_LLM_BASE_URL).",
    "UNIVERSALRAG_DESCRIBE_MAX_CALLS": "At most this many model calls per ingest run for descriptions (default 1000; "
    "0: no limit). Units left over keep their own text.",
    "UNIVERSALRAG_DESCRIBE_RATE": "At most this many model calls per minute for descriptions (default 60; "
    "0: no limit).",
    "UNIVERSALRAG_GRAPH": "Which extractor writes the knowledge graph at ingestion: 'structural' (default; no model), "
    "another registered extractor's name, or 'off' (0/false also turn it off). See docs/graph.md.",
    "OPENAI_API_KEY": "Fallback API key for OpenAI-compatible endpoints.",
    "UNIVERSALRAG_MAX_PART_BYTES": "Largest uncompressed size of one part of a Word, PowerPoint or Excel file "
    "(default 134217728: 128 MiB); a file with a larger part is refused. See docs/reliability.md.",
    "UNIVERSALRAG_MAX_ARCHIVE_BYTES": "Largest uncompressed size of all the parts of such a file together "
    "(default 1073741824: 1 GiB).",
    "UNIVERSALRAG_MAX_TEXT_CHARS": "Most characters of text read from one PDF, Word or PowerPoint file "
    "(default 20000000).",
    "UNIVERSALRAG_MAX_COLUMNS": "Most columns of one table (default 4096); a wider table is refused.",
}

_SCHEMA_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_ALIAS_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


def validate_schema_name(name: str) -> str:
    """Return ``name`` if it is a plain lowercase Postgres identifier, else raise ``ConfigError``."""
    if not isinstance(name, str) or not _SCHEMA_PATTERN.fullmatch(name) or name.startswith("pg_"):
        raise ConfigError(
            f"Invalid schema name {name!r}: use up to 63 lowercase letters, digits or underscores, "
            "not starting with a digit or 'pg_'."
        )
    return name


def validate_server_alias(alias: str) -> str:
    """Return ``alias`` if it is a valid server alias (what the registry stores instead of a URL), else raise
    ``ConfigError``."""
    if not isinstance(alias, str) or not _ALIAS_PATTERN.fullmatch(alias):
        raise ConfigError(
            f"Invalid server alias {alias!r}: use up to 63 lowercase letters, digits, '_' or '-', starting with a "
            "letter (for example 'eu1')."
        )
    return alias


def parse_servers(text: str, *, variable: str = "UNIVERSALRAG_SERVERS") -> dict[str, str]:
    """``'alias=URL;alias2=URL2'`` as a mapping (empty entries are ignored). Errors name ``variable`` and never
    show a URL (it may hold a password)."""
    servers: dict[str, str] = {}
    for i, entry in enumerate(part.strip() for part in text.split(";")):
        if not entry:
            continue
        alias, sep, url = (p.strip() for p in entry.partition("="))
        if not sep or not url:
            raise ConfigError(f"{variable}: entry {i + 1} is not 'alias=postgresql://...'; separate entries with ';'.")
        validate_server_alias(alias)
        if alias in servers:
            raise ConfigError(f"{variable}: the alias {alias!r} is given twice.")
        servers[alias] = url
    return servers


@overload
def redact_url(url: str) -> str: ...
@overload
def redact_url(url: None) -> None: ...
def redact_url(url: str | None) -> str | None:
    """A database or endpoint URL fit to show: its credentials (``user:password@``) become ``***@``, and its
    query and fragment (which may carry a password or an API key) are dropped."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # not parseable (e.g. unbalanced brackets): show the scheme only
        return url.split("://", 1)[0] + "://***" if "://" in url else "***"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a malformed port is left out
        port = ""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = ("***@" if parts.username or parts.password else "") + host + port
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("universalrag", appauthor=False))


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved settings. Build with :meth:`from_env` and override fields with :meth:`with_`."""

    database_url: str | None = None
    home: Path | None = None
    schema: str = "universalrag"
    embedder: str = "minilm"
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    embed_dimensions: int | None = None
    device: str | None = None
    ef_search: int = 100
    #: Seconds a new database connection may take (TCP connect plus the server's handshake).
    connect_timeout: float = 5.0
    #: A search scans a corpus's table exactly (no index) when it holds at most this many rows (where an exact scan
    #: costs about what an index search does); 0: never.
    exact_scan_rows: int = 5000
    #: A larger table is scanned exactly only when its stored index check found the index unreliable (see
    #: :mod:`universalrag.store.scan_rule`), and only up to this many rows.
    exact_scan_max_rows: int = 100_000
    #: How new corpora index their vectors (``UNIVERSALRAG_VECTOR_INDEX``; ``CorpusSpec.vector_index`` overrides it).
    vector_index: str = "auto"
    #: A corpus left to ``auto`` gets a binary-quantised index from this many vectors (``None``: the library's
    #: :data:`~universalrag.store.vectors.BINARY_MIN_ROWS`; 0: never).
    binary_min_rows: int | None = None
    #: The vectors of this many recent query texts are kept per model (0: none; ``UNIVERSALRAG_QUERY_VECTORS``).
    query_vectors: int = 256
    visual_encoder: str | None = None
    visual_weight: float = 0.8
    video_visual_weight: float = 0.4
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    #: Seconds a chat request may take in all, retries included (``UNIVERSALRAG_LLM_TIMEOUT``).
    llm_timeout: float = 60.0
    #: Model descriptions of non-text units at ingestion (``UNIVERSALRAG_DESCRIBE*``, docs/descriptions.md).
    describe: bool = False
    describe_model: str | None = None
    describe_max_calls: int = 1000
    describe_rate: float = 60.0
    #: Caps on what one input file may expand to (``UNIVERSALRAG_MAX_*``; ``universalrag.ingest.limits``).
    max_part_bytes: int = 128 << 20
    max_archive_bytes: int = 1 << 30
    max_text_chars: int = 20_000_000
    max_columns: int = 4096
    #: The extractor that writes the knowledge graph at ingestion (``UNIVERSALRAG_GRAPH``; ``"off"``: none).
    graph: str = "structural"
    asr: str | None = None
    asr_model: str | None = None
    asr_base_url: str | None = None
    asr_api_key: str | None = None
    #: A read-only URL (replica) for searches; writes and the registry use ``database_url``.
    read_database_url: str | None = None
    #: Other servers holding corpora: alias → URL (the registry stores the alias only).
    servers: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: Read-only URLs (replicas) of those servers: alias → URL.
    read_servers: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        validate_schema_name(self.schema)
        for alias in (*self.servers, *self.read_servers):
            validate_server_alias(alias)
        unknown = sorted(set(self.read_servers) - set(self.servers))
        if unknown:
            raise ConfigError(
                f"Read URLs are given for unknown server alias(es) {unknown}; add them to UNIVERSALRAG_SERVERS first."
            )
        if self.asr and self.asr not in ASR_ENGINES:
            raise ConfigError(
                f"Unknown ASR engine {self.asr!r}; choose one of: {', '.join(ASR_ENGINES)} "
                "(or leave UNIVERSALRAG_ASR empty to turn speech recognition off)."
            )
        if self.ef_search < 1:
            raise ConfigError(f"ef_search must be positive, got {self.ef_search}.")
        if not self.connect_timeout > 0:
            raise ConfigError(f"connect_timeout must be a positive number of seconds, got {self.connect_timeout}.")
        if not 0 < self.llm_timeout <= 3600:
            raise ConfigError(
                f"llm_timeout must be between 0 and 3600 seconds, got {self.llm_timeout} (UNIVERSALRAG_LLM_TIMEOUT)."
            )
        if self.exact_scan_rows < 0:
            raise ConfigError(f"exact_scan_rows must be 0 or more, got {self.exact_scan_rows}.")
        if self.exact_scan_max_rows < 0:
            raise ConfigError(f"exact_scan_max_rows must be 0 or more, got {self.exact_scan_max_rows}.")
        if self.vector_index not in ("auto", "vector", "halfvec", "binary"):
            raise ConfigError(
                f"vector_index must be 'auto', 'vector', 'halfvec' or 'binary', got {self.vector_index!r} "
                "(UNIVERSALRAG_VECTOR_INDEX)."
            )
        if self.binary_min_rows is not None and self.binary_min_rows < 0:
            raise ConfigError(f"binary_min_rows must be 0 or more, got {self.binary_min_rows}.")
        if self.query_vectors < 0:
            raise ConfigError(f"query_vectors must be 0 or more, got {self.query_vectors}.")
        if not isinstance(self.graph, str) or not self.graph.strip():
            raise ConfigError("graph names the extractor of the knowledge graph ('structural', ...) or is 'off'.")
        if self.describe_max_calls < 0 or self.describe_rate < 0:
            raise ConfigError("describe_max_calls and describe_rate must be 0 (no limit) or more.")
        for name in ("visual_weight", "video_visual_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, got {getattr(self, name)}.")

    def __repr__(self) -> str:  # never show secrets
        url = redact_url(self.database_url) if self.database_url else None
        read = redact_url(self.read_database_url) if self.read_database_url else None
        key = "***" if self.embed_api_key else None
        return (
            f"Settings(database_url={url!r}, read_database_url={read!r}, servers={sorted(self.servers)!r}, "
            f"home={self.home!r}, schema={self.schema!r}, "
            f"embedder={self.embedder!r}, embed_base_url={self.embed_base_url!r}, embed_api_key={key!r}, "
            f"device={self.device!r}, ef_search={self.ef_search}, visual_encoder={self.visual_encoder!r}, "
            f"visual_weight={self.visual_weight}, llm_model={self.llm_model!r}, llm_base_url={self.llm_base_url!r}, "
            f"llm_api_key={'***' if self.llm_api_key else None!r}, asr={self.asr!r}, asr_model={self.asr_model!r}, "
            f"asr_base_url={self.asr_base_url!r}, asr_api_key={'***' if self.asr_api_key else None!r})"
        )

    @property
    def home_dir(self) -> Path:
        """The directory for the embedded server's data (created on demand by the server module)."""
        return self.home if self.home is not None else _default_home()

    def with_(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the ``UNIVERSALRAG_*`` variables (see :data:`ENV_VARS`)."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def get_float(name: str) -> float | None:
            raw = get(name)
            if raw is None:
                return None
            try:
                return float(raw)
            except ValueError:
                raise ConfigError(f"{name} must be a number, got {raw!r}.") from None

        def get_int(name: str) -> int | None:
            raw = get(name)
            if raw is None:
                return None
            try:
                return int(raw)
            except ValueError:
                raise ConfigError(f"{name} must be an integer, got {raw!r}.") from None

        def get_bool(name: str) -> bool | None:
            raw = get(name)
            if raw is None:
                return None
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ConfigError(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}.")

        def get_graph() -> str | None:
            raw = get("UNIVERSALRAG_GRAPH")
            if raw is None:
                return None
            word = raw.strip().lower()
            if word in ("0", "false", "no", "off", "none"):
                return "off"
            return "structural" if word in ("1", "true", "yes", "on") else word

        home = get("UNIVERSALRAG_HOME")
        values: dict[str, Any] = dict(
            database_url=get("UNIVERSALRAG_DATABASE_URL"),
            read_database_url=get("UNIVERSALRAG_READ_DATABASE_URL"),
            servers=parse_servers(get("UNIVERSALRAG_SERVERS") or "") or None,
            read_servers=parse_servers(get("UNIVERSALRAG_READ_SERVERS") or "", variable="UNIVERSALRAG_READ_SERVERS")
            or None,
            home=Path(home).expanduser() if home else None,
            schema=get("UNIVERSALRAG_SCHEMA"),
            embedder=get("UNIVERSALRAG_EMBEDDER"),
            embed_base_url=get("UNIVERSALRAG_EMBED_BASE_URL"),
            embed_api_key=get("UNIVERSALRAG_EMBED_API_KEY") or get("OPENAI_API_KEY"),
            embed_dimensions=get_int("UNIVERSALRAG_EMBED_DIMENSIONS"),
            device=get("UNIVERSALRAG_DEVICE"),
            ef_search=get_int("UNIVERSALRAG_EF_SEARCH"),
            query_vectors=get_int("UNIVERSALRAG_QUERY_VECTORS"),
            connect_timeout=get_float("UNIVERSALRAG_CONNECT_TIMEOUT"),
            visual_encoder=get("UNIVERSALRAG_VISUAL_ENCODER"),
            visual_weight=get_float("UNIVERSALRAG_VISUAL_WEIGHT"),
            video_visual_weight=get_float("UNIVERSALRAG_VIDEO_VISUAL_WEIGHT"),
            llm_model=get("UNIVERSALRAG_LLM_MODEL"),
            llm_base_url=get("UNIVERSALRAG_LLM_BASE_URL"),
            llm_api_key=get("UNIVERSALRAG_LLM_API_KEY") or get("OPENAI_API_KEY"),
            llm_timeout=get_float("UNIVERSALRAG_LLM_TIMEOUT"),
            describe=get_bool("UNIVERSALRAG_DESCRIBE"),
            describe_model=get("UNIVERSALRAG_DESCRIBE_MODEL"),
            describe_max_calls=get_int("UNIVERSALRAG_DESCRIBE_MAX_CALLS"),
            describe_rate=get_float("UNIVERSALRAG_DESCRIBE_RATE"),
            graph=get_graph(),
            vector_index=(get("UNIVERSALRAG_VECTOR_INDEX") or "").lower() or None,
            binary_min_rows=get_int("UNIVERSALRAG_BINARY_MIN_ROWS"),
            max_part_bytes=get_int("UNIVERSALRAG_MAX_PART_BYTES"),
            max_archive_bytes=get_int("UNIVERSALRAG_MAX_ARCHIVE_BYTES"),
            max_text_chars=get_int("UNIVERSALRAG_MAX_TEXT_CHARS"),
            max_columns=get_int("UNIVERSALRAG_MAX_COLUMNS"),
            asr=get("UNIVERSALRAG_ASR"),
            asr_model=get("UNIVERSALRAG_ASR_MODEL"),
            asr_base_url=get("UNIVERSALRAG_ASR_BASE_URL"),
            asr_api_key=get("UNIVERSALRAG_ASR_API_KEY") or get("OPENAI_API_KEY"),
        )
        return cls(**{k: v for k, v in values.items() if v is not None})  # unset: the field's default

    def visual_weight_for(self, modality: str) -> float:
        """The weight of the visual channel against the text channel for a corpus of ``modality``: the one
        place this default lives (``video_visual_weight`` for clips and videos, ``visual_weight`` otherwise)."""
        return self.video_visual_weight if str(modality) == "video" else self.visual_weight
