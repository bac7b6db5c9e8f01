"""Real texts for the inference-backend tests: queries from the shared routing data (read at run time, never
copied) and ~120-word passages of the test corpus."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "corpus"


def routing_queries(*, step: int = 10) -> list[str] | None:
    """Every ``step``-th query of ``shared/data/routing/train.jsonl`` (beside the checkout or at /work/shared),
    or None when the data is not there."""
    for root in (REPO.parent, REPO.parent.parent, Path("/work")):
        file = root / "shared" / "data" / "routing" / "train.jsonl"
        if file.is_file():
            lines = file.read_text(encoding="utf-8").splitlines()
            return [json.loads(line)["query"] for line in lines if line.strip()][::step]
    return None


def corpus_passages() -> list[str]:
    """The test corpus's .txt and .md files cut into passages of 120 words."""
    texts = []
    for file in sorted(CORPUS.glob("*.txt")) + sorted(CORPUS.glob("*.md")):
        words = file.read_text(encoding="utf-8").split()
        texts += [" ".join(words[i : i + 120]) for i in range(0, len(words), 120)]
    return texts
