"""What an ingestion run did: one outcome per input, and the report that gathers them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["FileOutcome", "IngestReport", "Progress"]


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a large source has got: ``done`` of about ``total`` batches committed (``what`` they hold).
    Committed batches survive a crash; the next run of the same file continues after them. Work on a source before
    it is written says so in ``stage`` (for example ``"described by the model"``)."""

    path: str
    done: int
    total: int
    what: str
    stage: str = "committed"


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What happened to one input: ``added``, ``replaced``, ``unchanged``, ``failed`` (with ``error``),
    ``skipped`` (found in a folder but not a kind that is ingested, with ``reason``) or ``removed`` (a stored source
    whose file is gone, pruned)."""

    path: str
    status: str
    kind: str | None = None
    corpora: tuple[str, ...] = ()
    rows: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class IngestReport:
    """Every input's outcome, in order."""

    outcomes: list[FileOutcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many inputs ended with ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[FileOutcome]:
        """The inputs that could not be ingested."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def skipped(self) -> list[FileOutcome]:
        """The files a folder walk found that are not ingested (each with its ``reason``)."""
        return [o for o in self.outcomes if o.status == "skipped"]

    @property
    def ok(self) -> bool:
        """True when no input failed (skipped files do not count)."""
        return not self.failed

    def __str__(self) -> str:
        """A summary a person reads (``print(report)``): the counts, the rows per corpus, and each skipped or failed
        input with why (the dataclass's own form lists every outcome's fields)."""
        tally = Counter(o.status for o in self.outcomes)
        counts = ", ".join(
            f"{tally[s]} {s}"
            for s in ("added", "replaced", "unchanged", "skipped", "failed", "removed")
            if tally[s] or s in ("added", "failed")
        )
        rows = self.rows_per_corpus()
        lines = [f"{len(self.outcomes)} inputs: {counts}."]
        if rows:
            lines.append("Rows: " + ", ".join(f"{corpus} {n:,}" for corpus, n in rows.items()) + ".")
        lines += [f"skipped {o.path}: {o.reason}" for o in self.skipped]
        lines += [f"failed {o.path}: {o.error}" for o in self.failed]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "added": self.count("added"),
            "replaced": self.count("replaced"),
            "unchanged": self.count("unchanged"),
            "failed": [{"path": o.path, "error": o.error} for o in self.failed],
            "skipped": [{"path": o.path, "reason": o.reason} for o in self.skipped],
            "removed": [o.path for o in self.outcomes if o.status == "removed"],
            "rows": self.rows_per_corpus(),
        }

    def rows_per_corpus(self) -> dict[str, int]:
        """The rows written to each corpus over every input, by corpus name."""
        return {
            c: sum(o.rows.get(c, 0) for o in self.outcomes) for c in sorted({c for o in self.outcomes for c in o.rows})
        }
