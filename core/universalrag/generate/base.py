"""The :class:`Generator` protocol and the :class:`Generation` it returns.

A generator turns a question and its evidence (:class:`~universalrag.types.Evidence`, built by the pipeline
from hits) into an answer that cites the evidence it used. With no evidence (the ``none`` route) it answers
from the model alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..errors import GenerationError
from ..types import Evidence

__all__ = ["Generation", "Generator", "check_inputs"]


@dataclass(frozen=True, slots=True)
class Generation:
    """A model's answer: its ``text``, the ``Evidence.id`` values it cites (in order of first citation),
    the ``model`` that wrote it, and token ``usage`` as reported by the endpoint (``prompt_tokens``,
    ``completion_tokens``, ``total_tokens``; empty when the endpoint reports none)."""

    text: str
    citations: tuple[str, ...] = ()
    model: str = ""
    usage: Mapping[str, int] = field(default_factory=dict)


@runtime_checkable
class Generator(Protocol):
    """Anything that answers a question from evidence, synchronously and asynchronously.

    Implementations raise :class:`~universalrag.errors.GenerationError` (with a sentence saying what to do)
    when the model cannot produce an answer.
    """

    @property
    def name(self) -> str:
        """What answers: the model's name."""
        ...

    def generate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Answer ``query`` from ``evidence`` (empty: from the model's own knowledge)."""
        ...

    async def agenerate(self, query: str, evidence: Sequence[Evidence]) -> Generation:
        """Async twin of :meth:`generate`."""
        ...


def check_inputs(query: object, evidence: object) -> tuple[str, tuple[Evidence, ...]]:
    """``query`` stripped and ``evidence`` as a tuple, or :class:`GenerationError` saying what is wrong."""
    if not isinstance(query, str) or not query.strip():
        raise GenerationError("The question is empty; pass the user's question as a non-empty string.")
    if evidence is None:
        return query.strip(), ()
    if isinstance(evidence, (str, bytes, Evidence)) or not isinstance(evidence, Sequence):
        raise GenerationError(
            f"evidence must be a sequence of Evidence objects, got {type(evidence).__name__}; "
            "wrap a single item in a list."
        )
    items = tuple(evidence)
    for item in items:
        if not isinstance(item, Evidence):
            raise GenerationError(
                f"evidence must hold Evidence objects, got {type(item).__name__}; build them from hits with "
                "universalrag.evidence.build_evidence()."
            )
        if item.frame_times and len(item.frame_times) != len(item.images):
            raise GenerationError(
                f"Evidence {item.id!r} has {len(item.images)} images but {len(item.frame_times)} frame times; "
                "give one timestamp per frame, or none for still images."
            )
    return query.strip(), items
