"""Real texts for the inference-backend tests: queries of the labelled routing data (read at run time, never
copied; ``support.shared_data``) and ~120-word passages of the test corpus."""

from __future__ import annotations

import json
from pathlib import Path

from support.shared_data import ROUTING_TRAIN, present

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "corpus"


def routing_queries(*, step: int = 10) -> list[str] | None:
    """Every ``step``-th query of the labelled routing questions (:data:`support.shared_data.ROUTING_TRAIN`), or
    None when the data is not there (callers skip with :func:`support.shared_data.reason`)."""
    if not present(ROUTING_TRAIN):
        return None
    lines = ROUTING_TRAIN.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()][::step]


def corpus_passages() -> list[str]:
    """The test corpus's .txt and .md files cut into passages of 120 words."""
    texts = []
    for file in sorted(CORPUS.glob("*.txt")) + sorted(CORPUS.glob("*.md")):
        words = file.read_text(encoding="utf-8").split()
        texts += [" ".join(words[i : i + 120]) for i in range(0, len(words), 120)]
    return texts
