"""Training queries written from the user's own ingested units, offline (templates) or by a chat model.

:func:`synthesize_queries` samples units of each corpus through the store and turns them into queries a user
might type: questions made from sentences of paragraphs, overviews of documents and videos from their titles
and headings, look-ups in table rows ("what was the <column> of <row> in <table>", "which <entity> had the most
<column>"), descriptions asked of captioned images, moments asked of transcript slices. Every query carries its
corpus, the unit it was made from and its style:

- ``question``: a plain question; ``keywords``: a terse search; ``chatty``: conversational;
- ``typo``: a question with a slip or two of the keyboard; ``imperative``: "show me ...", "summarize ...";
- ``implicit``: a question that names no modality (no "table", "photo", "video", "document" ...).

The output is the same for the same content and seed. :func:`llm_queries` asks an OpenAI-compatible chat model
to write the questions instead (style ``llm``).
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError, RoutingError
from ..openai_client import OpenAIClients, translate_error
from ..store.sample import sample_parts, sample_units
from ..types import NO_RETRIEVAL, CorpusSpec, Granularity, Hit, Modality

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["MODALITY_WORDS", "STYLES", "SynthQuery", "llm_queries", "synthesize_queries"]

#: The styles of :func:`synthesize_queries`, in the order they are interleaved.
STYLES: tuple[str, ...] = ("question", "keywords", "implicit", "chatty", "imperative", "typo")

#: Words that name a modality; ``implicit`` queries contain none of them.
MODALITY_WORDS = frozenset(
    "table tables row rows column columns spreadsheet sheet chart photo photos photograph picture pictures image "
    "images pic video videos clip clips footage film scene document documents doc article paragraph passage text "
    "page pages file files".split()
)

_STOP = frozenset(
    "a about above after again against all also an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her here "
    "hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or "
    "other our out over own same she should so some such than that the their them then there these they this those "
    "through to too under until up very was we were what when where which while who whom why will with would you "
    "your yours one two three many much may might must shall upon within without were around across".split()
)

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*[A-Za-z0-9]|[A-Za-z]")
_YEAR = re.compile(r"\b(?:in|since|by|from|until) (1[5-9]\d\d|20\d\d)\b")
_COUNT = re.compile(r"\b(\d[\d,]*(?:\.\d+)?) ([a-z][a-z-]{2,})\b")
_YEAR_CELL = re.compile(r"1[5-9]\d\d|20\d\d")
_BE = re.compile(r"^(?P<subj>[A-Za-z][^,;:]{2,70}?) (?P<be>is|was|are|were) (?P<rest>[^;]{3,})$")


@dataclass(frozen=True, slots=True)
class SynthQuery:
    """A training query: its text, the corpus that answers it, the unit it was written from, and its style."""

    query: str
    corpus: str
    unit_id: str
    style: str


# -- text helpers ---------------------------------------------------------------------------------------------
def _clean(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # Markdown links and images
    text = re.sub(r"[*_`>#|]+", " ", text)
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith(("#", "|"))]
    found = re.split(r"(?<=[.!?])\s+", _clean(" ".join(lines)))
    return [s.rstrip(".!? ") for s in found if 5 <= len(s.split()) <= 40]


def _keywords(text: str, n: int, rng: random.Random) -> list[str]:
    words = list(dict.fromkeys(w for w in _WORD.findall(_clean(text)) if w.lower() not in _STOP and len(w) > 3))
    ranked = sorted(words, key=lambda w: (-(w[0].isupper() or any(c.isdigit() for c in w)), -len(w)))
    chosen = set(rng.sample(ranked[: n * 2], min(n, len(ranked[: n * 2]))))
    return [w for w in words if w in chosen]


def _short(text: str, words: int = 12) -> str:
    parts = _clean(text).rstrip(".!? ").split()
    return " ".join(parts[:words])


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) == 1 else text


def _typo(text: str, rng: random.Random) -> str:
    words = text.lower().rstrip("?.!").split()
    long = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    for i in rng.sample(long, min(2, len(long))):
        w = words[i]
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :] if rng.random() < 0.6 else w[:j] + w[j + 1 :]
    return " ".join(words)


def _sentence_question(sentence: str) -> str | None:
    """A question made from a statement: a year or a count asked for, or the statement turned around."""
    year = _YEAR.search(sentence)
    if year:
        return _lower_first(sentence[: year.start()] + "in what year" + sentence[year.end() :]).capitalize() + "?"
    count = _COUNT.search(sentence)
    if count and count.group(2) not in _STOP:
        asked = f"how many {count.group(2)}"
        return (sentence[: count.start()] + asked + sentence[count.end() :]).strip().capitalize() + "?"
    be = _BE.match(sentence)
    if be:
        return f"{be['be'].capitalize()} {_lower_first(be['subj'])} {be['rest']}?"
    return None


def _headings(text: str, title: str) -> list[str]:
    """Markdown headings, or short stand-alone lines without a full stop (how headings survive extraction)."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text)]
    found = [_clean(b) for b in blocks if "\n" not in b and (b.startswith("#") or not b.endswith((".", ":", ";")))]
    return list(dict.fromkeys(h.rstrip("?") for h in found if 1 <= len(h.split()) <= 10 and h != _clean(title)))


def _phrase(text: str) -> str:
    """The first clause of a caption without its article: what the picture is of."""
    first = re.split(r"[,:;(]| - | – ", _clean(text), maxsplit=1)[0]
    return " ".join(re.sub(r"^(?:a|an|the)\s+", "", first, flags=re.IGNORECASE).split()[:7])


# -- candidates per kind of unit: (style, query) ---------------------------------------------------------------
Candidates = list[tuple[str, str]]


def _passage(unit: Hit, rows: Sequence[str], rng: random.Random) -> Candidates:
    out: Candidates = []
    title = str(unit.metadata.get("title") or "")
    for sentence in _sentences(unit.content)[:4]:
        question = _sentence_question(sentence)
        kw = _keywords(sentence, 3, rng)
        if question:
            out += [
                ("question", question),
                ("implicit", question),
                ("typo", _typo(question, rng)),
                ("chatty", f"hey, quick one: {_lower_first(question)} I read about it somewhere"),
            ]
        if kw:
            joined = " ".join(kw)
            out += [
                ("keywords", joined.lower()),
                ("question", f"What does {title or 'it'} say about {' and '.join(kw[:2])}?"),
                ("chatty", f"do you know anything about {' and '.join(kw[:2])}? asking for a friend"),
                ("imperative", f"tell me about {joined}"),
                ("implicit", f"what is known about {' '.join(kw[:2])}?"),
                ("typo", _typo(f"what about {joined}", rng)),
            ]
    return out


def _document(unit: Hit, rows: Sequence[str], rng: random.Random) -> Candidates:
    title = _short(str(unit.metadata.get("title") or "") or unit.content.splitlines()[0], 10)
    heads = _headings(unit.content, title) or [" ".join(_keywords(unit.content, 2, rng))] * 2
    a, b = rng.sample(heads, 2) if len(heads) > 1 else (heads[0], heads[0])
    return [
        ("question", f"What are the main points of {title}, from {_lower_first(a)} to {_lower_first(b)}?"),
        ("question", f"How does {title} connect {_lower_first(a)} and {_lower_first(b)}?"),
        ("keywords", f"{title} overview".lower()),
        ("keywords", f"{title} {b}".lower()),
        ("chatty", f"so I'm trying to get the whole picture of {title} - can you walk me through all of it?"),
        ("imperative", f"summarize {title}"),
        ("imperative", f"give me an overview of {title}, including {_lower_first(b)}"),
        ("implicit", f"explain {title} from start to finish, covering {_lower_first(a)} and {_lower_first(b)}"),
        ("typo", _typo(f"what are the main points of {title}", rng)),
    ]


def _cells(row: str) -> list[tuple[str, str]]:
    pairs = [part.split(": ", 1) for part in row.split(" | ")]
    return [
        (" ".join(k.replace("_", " ").split()), v.strip())
        for k, v in (p for p in pairs if len(p) == 2)
        if k.strip() and v.strip()
    ]


def _number(value: str) -> bool:
    return bool(re.fullmatch(r"[-+]?[\d,]*\.?\d+%?", value.replace(" ", "")))


def _table(unit: Hit, rows: Sequence[str], rng: random.Random) -> Candidates:
    title = _short(str(unit.metadata.get("title") or "the table"), 10)
    out: Candidates = []
    for row in rows:
        cells = _cells(row)
        keys = [(c, v) for c, v in cells if not _number(v) and len(v.split()) <= 8]
        if not keys or len(cells) < 2:
            continue
        entity, key = keys[0]
        others = [(c, v) for c, v in cells if c != entity]
        if not others:  # every cell under the entity's column name (a table whose header repeats one name)
            continue
        col, val = others[rng.randrange(len(others))]
        nums = [c for c, v in cells if _number(v) and not _YEAR_CELL.fullmatch(v) and c != entity] or [col]
        num = nums[rng.randrange(len(nums))]
        out += [
            ("question", f"What was the {col} of {key} in {title}?"),
            ("question", f"Which {entity} had the most {num} in {title}?"),
            ("keywords", f"{key} {col}".lower()),
            ("keywords", f"{title} {num} by {entity}".lower()),
            ("chatty", f"hey, can you check the {title} figures for me - what's the {col} for {key}?"),
            ("imperative", f"show me the {col} of every {entity} in {title}"),
            ("imperative", f"list the {title} rows where {col} is {val}"),
            ("implicit", f"which {entity} had the highest {num}?"),
            ("implicit", f"what was the {col} of {key}?"),
            ("typo", _typo(f"what was the {col} of {key} in {title}", rng)),
        ]
    return out


def _image(unit: Hit, rows: Sequence[str], rng: random.Random) -> Candidates:
    kw = _keywords(unit.content, 4, rng)
    thing = _phrase(unit.content)
    if not kw or not thing:
        return []
    things = " ".join(kw)
    return [
        ("question", f"What does {thing} look like?"),
        ("question", f"What colours can you see in the photo of {thing}?"),
        ("keywords", f"{thing} photo".lower()),
        ("keywords", things.lower()),
        ("chatty", f"I remember seeing a picture of {thing} - what did it show exactly?"),
        ("imperative", f"show me a picture of {thing}"),
        ("imperative", f"show me {things}"),
        ("implicit", f"what does {thing} look like up close?"),
        ("implicit", f"describe the appearance of {thing}"),
        ("typo", _typo(f"what does {thing} look like", rng)),
    ]


def _clip(unit: Hit, rows: Sequence[str], rng: random.Random) -> Candidates:
    title = _short(str(unit.metadata.get("title") or "the video"), 8)
    out: Candidates = []
    for sentence in _sentences(unit.content)[:2] or [_short(unit.content)]:
        moment = _lower_first(_short(sentence, 14))
        kw = " ".join(_keywords(sentence, 3, rng))
        out += [
            ("question", f"At what point in {title} does this happen: {moment}?"),
            ("question", f"In the {title} video, what is shown when {moment}?"),
            ("keywords", f"{title} {kw} moment".lower()),
            ("chatty", f"there was a bit in the {title} video where {moment} - what was going on there?"),
            ("imperative", f"jump to the scene where {moment}"),
            ("implicit", f"what happens at the moment when {moment}?"),
            ("typo", _typo(f"in the {title} video what happens when {moment}", rng)),
        ]
    return out


def _video(unit: Hit, rows: Sequence[str], rng: random.Random) -> Candidates:
    title = _short(str(unit.metadata.get("title") or unit.content.splitlines()[0]), 10)
    kw = " ".join(_keywords(unit.content, 3, rng))
    return [
        ("question", f"What is the video {title} about, from beginning to end?"),
        ("question", f"What steps does {title} go through?"),
        ("keywords", f"{title} summary".lower()),
        ("keywords", f"{title} {kw} overview".lower()),
        ("chatty", f"I watched {title} a while ago - can you remind me what the whole thing covers?"),
        ("imperative", f"summarize the video {title}"),
        ("imperative", f"walk me through {title} from start to finish"),
        ("implicit", f"walk me through {title} step by step, from start to finish"),
        ("typo", _typo(f"what happens in the video {title}", rng)),
    ]


_Family = Callable[[Hit, Sequence[str], random.Random], Candidates]
_BY_GRANULARITY: dict[Granularity, _Family] = {
    Granularity.PARAGRAPH: _passage,
    Granularity.DOCUMENT: _document,
    Granularity.TABLE: _table,
    Granularity.IMAGE: _image,
    Granularity.CLIP: _clip,
    Granularity.VIDEO: _video,
}
_BY_MODALITY: dict[Modality, _Family] = {
    Modality.TEXT: _passage,
    Modality.TABLE: _table,
    Modality.IMAGE: _image,
    Modality.VIDEO: _clip,
}


def _family(spec: CorpusSpec) -> _Family:
    if spec.granularity is Granularity.OTHER or spec.granularity not in _BY_GRANULARITY:
        return _BY_MODALITY[spec.modality]
    if spec.modality is Modality.TABLE:
        return _table
    return _BY_GRANULARITY[spec.granularity]


def _fits(style: str, query: str) -> bool:
    words = {w.lower() for w in _WORD.findall(query)}
    return 2 <= len(query.split()) <= 40 and not (style == "implicit" and words & MODALITY_WORDS)


def _rng(seed: int, corpus: str) -> random.Random:
    return random.Random(zlib.crc32(f"{seed}:{corpus}".encode()))


def _corpora(store: Store, corpora: Sequence[str] | None) -> list[str]:
    if isinstance(corpora, str):
        raise ConfigError(f"corpora must be a list of corpus names, not the string {corpora!r}.")
    names = list(dict.fromkeys(corpora)) if corpora is not None else store.nonempty()
    return [store.corpus(n).name for n in names if n != NO_RETRIEVAL]


def _check_count(per_corpus: int) -> None:
    if not isinstance(per_corpus, int) or isinstance(per_corpus, bool) or per_corpus < 1:
        raise ConfigError(f"per_corpus must be a positive integer, got {per_corpus!r}.")


def synthesize_queries(
    store: Store, *, corpora: Sequence[str] | None = None, per_corpus: int = 200, seed: int = 0
) -> list[SynthQuery]:
    """Up to ``per_corpus`` training queries per corpus (default: every corpus that holds units), written from
    a sample of its units by templates; see the module docstring. Styles are interleaved so that every style
    is represented; duplicates are dropped. Deterministic for the same content and ``seed``."""
    _check_count(per_corpus)
    out: list[SynthQuery] = []
    for name in _corpora(store, corpora):
        spec = store.corpus(name)
        family, rng = _family(spec), _rng(seed, name)
        units = sample_units(store, name, per_corpus, seed=seed)
        rows_each = max(2, min(40, -(-per_corpus // max(1, len(units))) // 2 + 1))
        pools: dict[str, list[tuple[str, str]]] = {s: [] for s in STYLES}
        per_unit: list[list[tuple[str, str]]] = []
        for unit in units:
            rows = [t for _, t in sample_parts(store, name, unit.id, rows_each, seed=seed)]
            found = [(s, " ".join(q.split())) for s, q in family(unit, rows, rng)]
            rng.shuffle(found)
            per_unit.append([(s, q) for s, q in found if _fits(s, q)])
        depth = max((len(c) for c in per_unit), default=0)
        for i in range(depth):  # unit-major rounds: the first picks of a style cover many units
            for unit, cands in zip(units, per_unit, strict=True):
                if i < len(cands):
                    pools[cands[i][0]].append((unit.id, cands[i][1]))
        seen: set[str] = set()
        mine: list[SynthQuery] = []
        cursors = dict.fromkeys(STYLES, 0)
        while len(mine) < per_corpus and any(cursors[s] < len(pools[s]) for s in STYLES):
            for style in STYLES:
                while cursors[style] < len(pools[style]) and len(mine) < per_corpus:
                    unit_id, query = pools[style][cursors[style]]
                    cursors[style] += 1
                    if query.lower() not in seen:
                        seen.add(query.lower())
                        mine.append(SynthQuery(query=query, corpus=name, unit_id=unit_id, style=style))
                        break
        out += mine
    return out


# -- written by a chat model --------------------------------------------------------------------------------
_SYSTEM = (
    "You help build a search system. Given a piece of content from a user's collection, write questions that "
    "someone would type to find exactly this content. Vary them: a few keywords, a casual question, an "
    "instruction such as 'show me ...', and a question that does not say what kind of content it is. Reply "
    "with a JSON list of strings and nothing else."
)


def _parse_list(text: str) -> list[str]:
    body = (text or "").strip()
    start, end = body.find("["), body.rfind("]")
    try:
        value = json.loads(body[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        value = None
    if not isinstance(value, list):
        return []
    return [" ".join(v.split()) for v in value if isinstance(v, str) and len(v.split()) >= 2]


def llm_queries(
    store: Store,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    corpora: Sequence[str] | None = None,
    per_corpus: int = 20,
    per_unit: int = 4,
    seed: int = 0,
    timeout: float = 60.0,
    max_retries: int = 2,
    max_chars: int = 1500,
) -> list[SynthQuery]:
    """Up to ``per_corpus`` queries per corpus written by a chat model (any OpenAI-compatible endpoint), about
    ``per_unit`` per sampled unit, style ``llm``. ``model``, ``base_url`` and ``api_key`` default to the store's
    settings (``UNIVERSALRAG_LLM_MODEL`` ...). A failed request raises :class:`RoutingError`; a reply that is
    not a JSON list of strings contributes nothing."""
    _check_count(per_corpus)
    settings = store.settings
    model = model or settings.llm_model
    if not model:
        raise ConfigError(
            "No chat model to write queries: pass model= or set UNIVERSALRAG_LLM_MODEL "
            "(and UNIVERSALRAG_LLM_BASE_URL for a local server)."
        )
    base_url = base_url or settings.llm_base_url
    api_key = api_key or settings.llm_api_key
    clients = OpenAIClients(
        base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        feature="LLM-written routing queries",
        error_type=RoutingError,
        no_key="No API key for the chat model: pass api_key= or set UNIVERSALRAG_LLM_API_KEY "
        "(or pass base_url= for a local server that needs none).",
    )
    out: list[SynthQuery] = []
    for name in _corpora(store, corpora):
        spec = store.corpus(name)
        seen: set[str] = set()
        for unit in sample_units(store, name, -(-per_corpus // max(1, per_unit)), seed=seed):
            kind = f"{spec.granularity} ({spec.modality}) from the collection {spec.name!r}"
            prompt = f"Content kind: {kind}.\nContent:\n{unit.content[:max_chars]}\n\nWrite {per_unit} questions."
            try:
                reply = clients.sync().chat.completions.create(
                    model=model,
                    temperature=0.7,
                    seed=seed,
                    messages=[{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}],
                )
                text = reply.choices[0].message.content
            except Exception as e:  # the SDK's errors are translated, anything else re-raised
                error = translate_error(
                    e,
                    error_type=RoutingError,
                    what="Writing routing queries",
                    base_url=base_url,
                    api_key=api_key,
                    timeout=timeout,
                )
                if error is None:
                    raise
                raise error from e
            for query in _parse_list(text)[:per_unit]:
                if query.lower() not in seen and len(seen) < per_corpus:
                    seen.add(query.lower())
                    out.append(SynthQuery(query=query, corpus=name, unit_id=unit.id, style="llm"))
    return out
