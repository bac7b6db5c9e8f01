"""Every corpus kind searched with every channel: the text channel (one vector per unit, or the best of a
multi-vector unit's parts), the visual channel and the lexical channel must combine the same way.

With a visual encoder configured, the ``video`` corpus must still match by its best part (not rank by the unit's
mean vector and return no matched parts). Here each kind holds a unit whose *best
part* answers the question and a lure whose *mean* vector is nearer the question; the best-part unit must win,
with its matched parts, with and without the visual channel, with and without hybrid search.

Text vectors come from the real bundled MiniLM. The visual encoder is ``tests/support/tiny_clip.py``: a tiny,
randomly initialised CLIP (no CLIP weights can be installed here), so its similarities mean nothing; every unit
gets the same photograph's visual vector, so the visual channel ties and the test shows that the text channel
inside the fused score is the best part's.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from support.media import photo
from support.tiny_clip import TINY_CLIP_DIMENSION, build_tiny_clip

from universalrag.embed.vectors import normalised_mean
from universalrag.embed.visual import CLIPVisualEncoder
from universalrag.fusion import weighted
from universalrag.store import Store
from universalrag.types import Modality, SourceRecord, Unit

QUESTION = "How many moons does Mars have?"
TARGET = "Mars has two small moons named Phobos and Deimos."
FILLERS = [
    "Bread dough rises when yeast ferments the sugar in flour.",
    "The violin has four strings tuned in perfect fifths.",
    "Granite is an igneous rock rich in quartz and feldspar.",
]
LURE = [
    "Mars is the fourth planet from the Sun.",
    "Mars has a thin atmosphere of carbon dioxide.",  # about Mars,
    "Olympus Mons on Mars is the tallest volcano in the solar system.",  # not its moons
    "Rovers have explored the dusty red surface of Mars.",
]
OTHER = [
    "Tax returns are due in April in many countries.",
    "A sonnet has fourteen lines.",
    "Copper conducts electricity well.",
    "Tea leaves are dried before brewing.",
]

KINDS = {  # corpus -> multi-vector?
    "paragraph": False,
    "document": True,
    "table": True,
    "image": False,
    "clip": False,
    "video": True,
}
VISUAL_KINDS = {"image", "clip", "video"}


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> CLIPVisualEncoder:
    return CLIPVisualEncoder(
        build_tiny_clip(tmp_path_factory.mktemp("tiny-clip") / "model"), name="tiny-clip", device="cpu"
    )


def _units(
    corpus: str,
    multi: bool,
    minilm,  # type: ignore[no-untyped-def]
    visual: list[float] | None,
) -> dict[str, Unit]:
    """The best-part unit, the lure and an unrelated unit for ``corpus``."""
    groups = {"best": [*FILLERS, TARGET], "lure": LURE, "other": OTHER}
    units = {}
    for key, texts in groups.items():
        vectors = minilm.embed(texts)
        if multi:
            units[key] = Unit(
                id=str(uuid.uuid4()),
                corpus=corpus,
                content=" ".join(texts),
                embedding=normalised_mean(vectors).tolist(),
                parts=texts,
                part_embeddings=[v.tolist() for v in vectors],
                visual_embedding=visual,
            )
        else:  # one vector per unit: the best unit is the answer itself, the lure one planetary sentence
            text = {"best": TARGET, "lure": LURE[0], "other": OTHER[0]}[key]
            units[key] = Unit(
                id=str(uuid.uuid4()),
                corpus=corpus,
                content=text,
                embedding=minilm.embed([text])[0].tolist(),
                visual_embedding=visual,
            )
    return units


@pytest.mark.parametrize("with_visual", [False, True], ids=["text-only", "visual-encoder"])
@pytest.mark.parametrize("corpus", list(KINDS))
def test_best_part_wins_in_every_kind_with_every_channel(  # type: ignore[no-untyped-def]
    store: Store, minilm, tiny_clip: CLIPVisualEncoder, corpus: str, with_visual: bool
) -> None:
    multi = KINDS[corpus]
    assert store.corpus(corpus).multi_vector is multi
    has_channel = with_visual and corpus in VISUAL_KINDS
    visual_query = None
    if with_visual:
        if has_channel:
            assert store.add_visual_channel(corpus, dimension=TINY_CLIP_DIMENSION, encoder=tiny_clip.name)
        visual_query = tiny_clip.embed_texts([QUESTION])[0].tolist()
    same_photo = tiny_clip.embed_images([photo("coffee")])[0].tolist() if has_channel else None
    units = _units(corpus, multi, minilm, same_photo)
    store.write_source(
        SourceRecord(uri=f"mem://{corpus}", content_hash="h", modality=Modality.TEXT, corpora=(corpus,)),
        list(units.values()),
    )
    query = minilm.embed_query(QUESTION)
    if multi:  # the lure is nearer by its mean vector: ranking by the unit's own vector would pick it
        means = {k: float(np.dot(query, u.embedding)) for k, u in units.items()}
        assert means["lure"] > means["best"]

    weight = store.settings.visual_weight_for(store.corpus(corpus).modality)
    plain = store.search(corpus, query.tolist(), k=3)
    for lexical in (None, "Mars moons"):
        hits = store.search(corpus, query.tolist(), k=3, visual_vector=visual_query, lexical_text=lexical)
        assert [h.id for h in hits][:1] == [units["best"].id], (lexical, [h.content[:40] for h in hits])
        assert len(hits) == 3
        best = hits[0]
        if multi:  # matched parts in every mode, the answer first
            assert all(h.matched_parts for h in hits)
            assert best.matched_parts[0][1] == TARGET
            assert best.matched_parts[0][2] == pytest.approx(float(np.dot(query, minilm.embed([TARGET])[0])), abs=1e-4)
        else:
            assert all(h.matched_parts == () for h in hits)
        if has_channel:
            assert set(best.channel_scores) >= {"text", "visual"}
            text = best.matched_parts[0][2] if multi else float(np.dot(query, units["best"].embedding))
            assert best.channel_scores["text"] == pytest.approx(text, abs=1e-4)
            dense = weighted(best.channel_scores["text"], best.channel_scores["visual"], visual_weight=weight)
            assert (best.score if lexical is None else best.channel_scores["dense"]) == pytest.approx(dense, abs=1e-5)
        else:
            assert "visual" not in best.channel_scores
        if lexical is None:
            # a visual query on a corpus without a visual channel changes nothing; with one, it only adds
            # a tied channel, so the ranking is the text-only one
            assert [h.id for h in hits] == [h.id for h in plain]
            if not has_channel:
                assert [h.score for h in hits] == pytest.approx([h.score for h in plain])
        else:
            assert best.channel_scores["lexical"] > 0
            assert best.score == pytest.approx(2 / 61)  # first in both rankings: 1/(60+1) twice


def test_a_unit_found_only_by_its_visual_vector_gets_its_best_part(
    store: Store,
    minilm,  # type: ignore[no-untyped-def]
    tiny_clip: CLIPVisualEncoder,
) -> None:
    """A video that only the visual channel brings in (sixty others are nearer in the text space) still gets its
    text similarity and matched parts from its best part, not from its mean vector, computed for it alone."""
    store.add_visual_channel("video", dimension=TINY_CLIP_DIMENSION, encoder=tiny_clip.name)
    visual_query = tiny_clip.embed_texts([QUESTION])[0]
    query = minilm.embed_query(QUESTION)
    near_texts = [f"Mars fact {i}: the red planet has two moons and huge dust storms." for i in range(60)]
    near_vectors = minilm.embed(near_texts)
    units = [
        Unit(
            id=str(uuid.uuid4()),
            corpus="video",
            content=t,
            embedding=v.tolist(),
            parts=[t],
            part_embeddings=[v.tolist()],
            visual_embedding=(-visual_query).tolist(),
        )
        for t, v in zip(near_texts, near_vectors, strict=True)
    ]
    parts = [*FILLERS, "Astronomers photograph distant galaxies at night."]
    vectors = minilm.embed(parts)
    looks_right = Unit(
        id=str(uuid.uuid4()),
        corpus="video",
        content="the one",
        visual_embedding=visual_query.tolist(),
        embedding=normalised_mean(vectors).tolist(),
        parts=parts,
        part_embeddings=[v.tolist() for v in vectors],
    )
    store.write_source(
        SourceRecord(uri="mem://videos", content_hash="h", modality=Modality.VIDEO, corpora=("video",)),
        [*units, looks_right],
    )
    by_text = store.search("video", query.tolist(), k=40)
    assert looks_right.id not in {h.id for h in by_text}  # the text channel's window does not hold it
    hits = store.search("video", query.tolist(), k=1, visual_vector=visual_query.tolist(), visual_weight=1.0)
    assert hits[0].id == looks_right.id and hits[0].channel_scores["visual"] == pytest.approx(1.0, abs=1e-5)
    best = max(range(len(parts)), key=lambda i: float(np.dot(query, vectors[i])))
    assert hits[0].matched_parts[0][:2] == (best, parts[best])
    assert hits[0].channel_scores["text"] == pytest.approx(float(np.dot(query, vectors[best])), abs=1e-4)
    assert hits[0].channel_scores["text"] != pytest.approx(float(np.dot(query, looks_right.embedding)), abs=1e-3)


def test_exact_and_index_paths_agree(store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    """The same search through an exact scan and through the HNSW index returns the same units and parts."""
    units = _units("document", True, minilm, None)
    store.write_source(
        SourceRecord(uri="mem://d", content_hash="h", modality=Modality.TEXT, corpora=("document",)),
        list(units.values()),
    )
    query = minilm.embed_query(QUESTION).tolist()
    exact = store.search("document", query, k=3, exact_scan=True)
    index = store.search("document", query, k=3, exact_scan=False)
    assert [h.id for h in exact] == [h.id for h in index]
    assert [h.matched_parts for h in exact] == [h.matched_parts for h in index]


def test_the_visual_weight_default_lives_in_settings(store: Store) -> None:
    from universalrag.config import Settings

    settings = Settings(visual_weight=0.7, video_visual_weight=0.3)
    assert settings.visual_weight_for(Modality.IMAGE) == 0.7
    assert settings.visual_weight_for(Modality.VIDEO) == 0.3
    assert Settings.from_env({}).visual_weight_for("image") == Settings().visual_weight
