"""Where the optional real data lives, in one place: the labelled routing questions and the Wikipedia pages with
their table questions. Neither is part of the repository (their licences ask that they be read from their own
location, never copied in); a checkout finds them in ``../shared/data/`` beside it, or wherever
``UNIVERSALRAG_SHARED_DATA`` points (the folder holding ``routing/`` and ``wikitables/``). A test that reads them
calls :func:`require` first: without the data it is skipped, saying what is missing and how to provide it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = [
    "DATA",
    "ROUTING_TRAIN",
    "WIKITABLES",
    "WIKITABLES_PAGES",
    "WIKITABLES_QUESTIONS",
    "present",
    "reason",
    "require",
    "skip_unless",
]

REPO = Path(__file__).resolve().parents[2]

#: The folder of the optional data sets (``../shared/data`` beside the checkout unless the variable says otherwise).
DATA = Path(os.environ.get("UNIVERSALRAG_SHARED_DATA") or REPO.parent / "shared" / "data")
#: Labelled routing questions, one ``{"query", "routes", "source"}`` object a line (README, "Routing").
ROUTING_TRAIN = DATA / "routing" / "train.jsonl"
#: 250 Wikipedia pages as HTML and crowd-written questions about their tables (WikiTableQuestions, CC BY-SA 4.0).
WIKITABLES = DATA / "wikitables"
WIKITABLES_PAGES = WIKITABLES / "pages"
WIKITABLES_QUESTIONS = WIKITABLES / "questions.jsonl"

_WHAT = {
    ROUTING_TRAIN: "the labelled routing questions",
    WIKITABLES: "the WikiTableQuestions pages and questions",
    WIKITABLES_PAGES: "the WikiTableQuestions pages",
    WIKITABLES_QUESTIONS: "the WikiTableQuestions questions",
}


def present(path: Path) -> bool:
    """Whether ``path`` (one of this module's paths) is there: a file, or a folder that is not empty."""
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def reason(path: Path) -> str:
    """Why a test needing ``path`` is skipped, and how to run it."""
    what = _WHAT.get(path, path.name)
    return (
        f"{what} are not on this machine ({path}); put the data folder beside the checkout as ../shared/data "
        "or point UNIVERSALRAG_SHARED_DATA at it to run this test"
    )


def require(path: Path) -> Path:
    """``path`` when it is there; otherwise skip the calling test with :func:`reason`."""
    if not present(path):
        pytest.skip(reason(path))
    return path


def skip_unless(path: Path) -> pytest.MarkDecorator:
    """A ``skipif`` mark for tests (or modules: ``pytestmark``) that need ``path``."""
    return pytest.mark.skipif(not present(path), reason=reason(path))
