"""One exception hierarchy for the whole library.

Every error a user can meet derives from :class:`UniversalRAGError` and carries a sentence that says
what to do. Driver and SDK errors are translated once per layer with ``raise ... from e``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "UniversalRAGError",
    "ConfigError",
    "MissingDependencyError",
    "StoreError",
    "CorpusNotFoundError",
    "CorpusExistsError",
    "DimensionMismatchError",
    "FilterError",
    "InvalidInputError",
    "EmbeddingError",
    "IngestError",
    "NoTextError",
    "RoutingError",
    "GenerationError",
]


class UniversalRAGError(Exception):
    """Root of every error raised by universalrag."""


class ConfigError(UniversalRAGError):
    """A setting is missing, malformed or inconsistent."""


class MissingDependencyError(UniversalRAGError, ImportError):
    """An optional dependency is not installed; the message names what installs it: an extra of
    ``distribution`` (the core's by default), or ``distribution`` itself when ``extra`` is empty (an adapter's
    required framework)."""

    def __init__(
        self, package: str, extra: str, *, feature: str | None = None, distribution: str = "universalrag-postgres"
    ) -> None:
        self.package = package
        self.extra = extra
        self.distribution = distribution
        what = f" for {feature}" if feature else ""
        target = f"'{distribution}[{extra}]'" if extra else distribution
        super().__init__(
            f"The package {package!r} is needed{what} but is not installed; install it with: pip install {target}"
        )


class StoreError(UniversalRAGError):
    """The database refused or failed an operation."""


class CorpusNotFoundError(StoreError, KeyError):
    """No corpus of that name is registered."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        hint = f" Known corpora: {', '.join(sorted(known))}." if known else ""
        super().__init__(
            f"No corpus named {name!r} is registered in this schema.{hint} "
            "Create it with `universalrag corpora create` or run `universalrag init`."
        )

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class CorpusExistsError(StoreError):
    """A corpus of that name already exists."""


class DimensionMismatchError(StoreError, ValueError):
    """A vector does not have the dimension of the corpus it is written to or searched in."""

    def __init__(self, corpus: str, expected: int, got: int) -> None:
        self.corpus = corpus
        self.expected = expected
        self.got = got
        super().__init__(
            f"Corpus {corpus!r} stores {expected}-dimensional vectors but got {got} dimensions; "
            "use the embedder the corpus was created with, or create a corpus for this embedder."
        )


class FilterError(UniversalRAGError, ValueError):
    """A metadata filter is malformed (unknown operator, bad field name, wrong value type)."""


class InvalidInputError(UniversalRAGError, ValueError):
    """An argument or a value passed in breaks a rule (``k`` below 1, a weight outside 0..1, a corpus name,
    units that do not fit their corpus); the message states the rule."""


class EmbeddingError(UniversalRAGError):
    """An encoder could not be loaded or failed to embed (model path, endpoint, credentials)."""


class IngestError(UniversalRAGError):
    """One input could not be ingested; names the path and the reason."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class NoTextError(IngestError):
    """A text file that holds no readable text once its markup is read (only whitespace, only an ``include``, a
    page that only redirects): a folder walk skips it as it skips an empty file; named on its own, it fails."""


class RoutingError(UniversalRAGError):
    """A router could not produce a decision."""


class GenerationError(UniversalRAGError):
    """The language model failed to produce an answer."""
