"""The threshold of entity alignment by embedding similarity (``universalrag.graph.align.SAME_ENTITY_THRESHOLD``),
measured on labelled name pairs.

    python benchmarks/graph_alignment.py [--quick] [--out DIR]

Pairs come from the tables of the ``../shared/data/wikitables`` pages (class ``wikitable``), each typed by its column's
header as the structural extractor types a cell's name:

- **same entity**: a link's text and the title of the page it links to, where their keys differ ("Scunthorpe United"
  → "Scunthorpe United F.C."). Editors link in context, so some of these are looser than one name for one thing
  ("USA" → "United States at the 1952 Winter Olympics"); recall is measured against them as they are;
- **different entities**: two distinct titles linked from cells of one column (redirect titles left out, as two
  redirects may reach one page) — for each title its :data:`NEAREST` nearest other titles by name vector (what the
  aligner's candidate step offers it), and pairs that share a word of four or more letters (hard negatives, up to
  :data:`SHARED_WORD_PAIRS` per column).

The pages are split in two by a hash of their file name: the threshold is chosen on the *tune* half and measured on
the *held-out* half, whose pairs (same key pair) never appear in the tune half. The rule: the lowest threshold whose
precision on the tune half is at least :data:`PRECISION_TARGET` — a wrong merge joins two things' facts and nothing
splits them later, a missed one only leaves two entities. Names are embedded with the bundled all-MiniLM-L6-v2, the
library's embedder; the decision is :func:`universalrag.graph.align.same_entity` (cosine, one name the other with a
qualifier after it, the same numbers in both). The held-out half is also measured with each check left out, and the
tune half's curve of the cosine alone is printed beside the rule's. With both checks the tune half's precision hardly
moves with the threshold, so the library's constant is not this choice: docs/graph.md, "Alignment", says how it was
set; the held-out half is measured at it too.

``--quick`` needs no shared data: a small built-in list of invented pairs, split in two the same way. Prints the
pair counts, the precision/recall curve of the tune half, the chosen threshold, precision and recall on the held-out
half at it and at the library's constant, with the CPU model and the load; writes ``graph_alignment.json`` and
``graph_alignment.png`` into ``--out``; ends with one JSON line.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import figure, finish, log, machine_line, parser, save_png  # noqa: E402

PAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikitables" / "pages"
#: Precision the chosen threshold must reach on the tune half.
PRECISION_TARGET = 0.98
#: Nearest other titles of a column taken as negatives per title.
NEAREST = 3
#: Pairs of titles sharing a word taken per column type and half, at most.
SHARED_WORD_PAIRS = 200
#: Thresholds tried.
GRID = [round(0.30 + 0.01 * i, 2) for i in range(70)]

# Invented names (nothing copied from the shared data): (a, b, type, same entity?).
QUICK_PAIRS: list[tuple[str, str, str, bool]] = [
    ("Harbour Herons", "Harbour Herons F.C.", "team", True),
    ("Kestrel Company", "The Kestrel Company", "company", True),
    ("Brass Harbour", "Brass Harbour, Northmere", "city", True),
    ("Gull Island Lighthouse", "Gull Island Lighthouse (Northmere)", "building", True),
    ("Northmere Yard", "Northmere Shipyard", "company", True),
    ("Ashford Rovers", "Ashford Rovers Football Club", "team", True),
    ("St. Brendan's Church", "Saint Brendan's Church", "building", True),
    ("Mill Town", "Milltown", "city", True),
    ("Ada Penrose", "Ada M. Penrose", "person", True),
    ("Kestrel Bay", "Kestrel Point", "place", False),
    ("Harbour Herons", "Harbour Hawks", "team", False),
    ("Ashford Rovers", "Ashford United", "team", False),
    ("2010 Harbour Cup", "2014 Harbour Cup", "event", False),
    ("Ada Penrose", "Ada Pembridge", "person", False),
    ("North Brass Harbour", "South Brass Harbour", "city", False),
    ("Kestrel Company", "Kestrel Airlines", "company", False),
    ("Gull Island", "Seal Island", "place", False),
    ("Mill Town", "Mill Creek", "city", False),
    ("Northmere Yard", "Northmere Station", "building", False),
    ("University of Ashford", "Ashford University", "school", False),
    ("Penrose Bridge", "Penrose Tunnel", "building", False),
    ("Penrose Bridge", "Penrose Bridge Railway", "building", False),
    ("Route 7", "Route 9", "road", False),
]


@dataclass(frozen=True, slots=True)
class Pair:
    a: str
    b: str
    type: str
    same: bool
    kind: str  # link | nearest | shared_word


def _half(name: str) -> str:
    return "tune" if int(hashlib.sha1(name.encode()).hexdigest(), 16) % 2 == 0 else "held_out"


def _usable(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 2 and letters * 2 >= len(text.replace(" ", ""))


def _links(pages: list[Path]) -> tuple[dict[str, list[Pair]], dict[str, dict[str, set[str]]]]:
    """Positive pairs per half, and per half the non-redirect titles linked from each column type."""
    from bs4 import BeautifulSoup

    from universalrag.graph import normalise_key

    positives: dict[str, dict[tuple[str, str], Pair]] = {"tune": {}, "held_out": {}}
    titles: dict[str, dict[str, set[str]]] = {"tune": defaultdict(set), "held_out": defaultdict(set)}
    for page in pages:
        half = _half(page.name)
        soup = BeautifulSoup(page.read_text(encoding="utf-8", errors="replace"), "lxml")
        for table in soup.select("table.wikitable"):
            rows = table.find_all("tr")
            if len(rows) < 2:
                continue
            header = [" ".join(c.get_text(" ", strip=True).split()) for c in rows[0].find_all(["th", "td"])]
            for tr in rows[1:]:
                cells = tr.find_all(["td", "th"])
                if len(cells) != len(header):
                    continue
                for head, cell in zip(header, cells, strict=True):
                    type_ = normalise_key(head)
                    if not type_ or any(ch.isdigit() for ch in type_):
                        continue
                    for a in cell.find_all("a"):
                        href, title = a.get("href") or "", a.get("title") or ""
                        text = " ".join(a.get_text(" ", strip=True).split())
                        target = href.split("/wiki/")[-1] if "/wiki/" in href else ""
                        if not target or ":" in target or not title or not _usable(text):
                            continue
                        if "mw-redirect" not in (a.get("class") or []):
                            titles[half][type_].add(title)
                        ka, kb = normalise_key(text), normalise_key(title)
                        if ka and kb and ka != kb:
                            positives[half].setdefault(
                                (min(ka, kb), max(ka, kb)), Pair(text, title, type_, True, "link")
                            )
    seen = set(positives["tune"])
    held = {k: p for k, p in positives["held_out"].items() if k not in seen}
    return {"tune": list(positives["tune"].values()), "held_out": list(held.values())}, titles


def _negatives(titles: dict[str, set[str]], vectors: dict[str, Any], rng: random.Random) -> list[Pair]:
    import numpy as np

    from universalrag.graph import normalise_key

    out: dict[tuple[str, str], Pair] = {}
    for type_, names in sorted(titles.items()):
        unique = {normalise_key(n): n for n in sorted(names)}
        group = sorted(unique.values())
        if len(group) < 2:
            continue
        m = np.stack([vectors[n] for n in group])
        sims = m @ m.T
        np.fill_diagonal(sims, -2.0)
        for i, name in enumerate(group):
            for j in [j for j in np.argsort(-sims[i]) if j != i][:NEAREST]:
                a, b = sorted((name, group[int(j)]))
                out.setdefault((a, b), Pair(a, b, type_, False, "nearest"))
        words: dict[str, list[str]] = defaultdict(list)
        for name in group:
            for w in set(re.findall(r"[a-z]{4,}", normalise_key(name))):
                words[w].append(name)
        shared = sorted({tuple(sorted(p)) for ns in words.values() for p in itertools.combinations(ns, 2)})
        for a, b in rng.sample(shared, min(SHARED_WORD_PAIRS, len(shared))):
            out.setdefault((a, b), Pair(a, b, type_, False, "shared_word"))
    return list(out.values())


def _score(pairs: list[Pair], vectors: dict[str, Any]) -> list[float]:
    return [float(vectors[p.a] @ vectors[p.b]) for p in pairs]


def _says(p: Pair, sim: float, threshold: float, variant: str) -> bool:
    """Whether ``variant`` of the decision merges ``p``: ``rule`` is the library's; the others leave a part out."""
    from universalrag.graph.align import numbers, qualifies, same_entity

    if variant == "rule":
        return same_entity(p.a, p.b, sim, threshold)
    if variant == "cosine_only":
        return sim >= threshold
    if variant == "without_numbers_check":
        return sim >= threshold and qualifies(p.a, p.b)
    return sim >= threshold and numbers(p.a) == numbers(p.b)  # without_qualifier_check


def _measure(pairs: list[Pair], sims: list[float], threshold: float, variant: str = "rule") -> dict[str, Any]:
    tp = fp = fn = 0
    for p, s in zip(pairs, sims, strict=True):
        said = _says(p, s, threshold, variant)
        tp += said and p.same
        fp += said and not p.same
        fn += (not said) and p.same
    return {
        "threshold": threshold,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 0.0,
        "merged": tp + fp,
        "wrong": fp,
    }


def _choose(curve: list[dict[str, Any]]) -> float:
    ok = [c["threshold"] for c in curve if c["precision"] >= PRECISION_TARGET and c["merged"] > 0]
    return min(ok) if ok else max(GRID)


def main() -> None:
    ap = parser(__doc__)
    args = ap.parse_args()
    from universalrag.embed import bundled_minilm
    from universalrag.graph.align import SAME_ENTITY_THRESHOLD

    embedder = bundled_minilm()
    log(machine_line())
    rng = random.Random(7)
    halves: dict[str, list[Pair]]
    if args.quick:
        pairs = [Pair(a, b, t, s, "built_in") for a, b, t, s in QUICK_PAIRS]
        halves = {"tune": pairs[0::2], "held_out": pairs[1::2]}
        names = sorted({n for p in pairs for n in (p.a, p.b)})
        vectors = dict(zip(names, embedder.embed(names), strict=True))
        source = "built-in invented pairs"
    else:
        if not PAGES.is_dir():
            raise SystemExit(f"{PAGES} is missing: run with --quick, or provide the wikitables pages.")
        pages = sorted(PAGES.glob("*.html"))
        positives, titles = _links(pages)
        names = sorted(
            {n for h in positives.values() for p in h for n in (p.a, p.b)}
            | {n for h in titles.values() for ns in h.values() for n in ns}
        )
        log(f"{len(pages)} pages; embedding {len(names)} names")
        vectors = dict(zip(names, embedder.embed(names), strict=True))
        halves = {h: positives[h] + _negatives(titles[h], vectors, rng) for h in ("tune", "held_out")}
        source = f"{len(pages)} wikitables pages"
    counts = {
        h: {
            "same": sum(p.same for p in ps),
            "different": sum(not p.same for p in ps),
            "shared_word": sum(p.kind == "shared_word" for p in ps),
        }
        for h, ps in halves.items()
    }
    log(f"pairs ({source}): {counts}")
    sims = {h: _score(ps, vectors) for h, ps in halves.items()}
    curve = [_measure(halves["tune"], sims["tune"], t) for t in GRID]
    cosine_curve = [_measure(halves["tune"], sims["tune"], t, "cosine_only") for t in GRID]
    for c, k in zip(curve[::5], cosine_curve[::5], strict=True):
        log(
            f"  tune  t={c['threshold']:.2f}  rule: precision {c['precision']:.3f} recall {c['recall']:.3f} "
            f"merged {c['merged']};  cosine only: precision {k['precision']:.3f} recall {k['recall']:.3f}"
        )
    chosen = _choose(curve)
    result: dict[str, Any] = {
        "source": source,
        "pairs": counts,
        "precision_target": PRECISION_TARGET,
        "chosen": chosen,
        "constant": SAME_ENTITY_THRESHOLD,
        "tune": _measure(halves["tune"], sims["tune"], chosen),
        "tune_best_cosine_only": max(cosine_curve, key=lambda c: (c["precision"], c["recall"])),
        "held_out": _measure(halves["held_out"], sims["held_out"], chosen),
        "held_out_at_constant": _measure(halves["held_out"], sims["held_out"], SAME_ENTITY_THRESHOLD),
    }
    for variant in ("cosine_only", "without_numbers_check", "without_qualifier_check"):
        result[f"held_out_{variant}"] = _measure(halves["held_out"], sims["held_out"], chosen, variant)
    log(
        f"chosen threshold {chosen} (lowest with tune precision >= {PRECISION_TARGET}); "
        f"library constant {SAME_ENTITY_THRESHOLD}"
    )
    for key, r in result.items():
        if isinstance(r, dict) and "precision" in r:
            log(
                f"  {key}: t={r['threshold']}  precision {r['precision']:.3f}  recall {r['recall']:.3f}  "
                f"merged {r['merged']} (wrong {r['wrong']})"
            )
    held = halves["held_out"]
    wrong = sorted(
        ((s, p) for p, s in zip(held, sims["held_out"], strict=True) if not p.same and _says(p, s, chosen, "rule")),
        key=lambda x: -x[0],
    )[:8]
    for s, p in wrong:
        log(f"  held-out wrong merge at {s:.3f}: {p.a!r} / {p.b!r} ({p.type}, {p.kind})")

    fig, (ax1, ax2) = figure(2, size=(10, 4))
    for same, colour in ((True, "#31a354"), (False, "#de2d26")):
        ax1.hist(
            [s for p, s in zip(held, sims["held_out"], strict=True) if p.same == same],
            bins=40,
            range=(0.2, 1.0),
            alpha=0.6,
            color=colour,
            label="same entity" if same else "different",
        )
    ax1.axvline(chosen, color="k", linestyle="--", label=f"threshold {chosen}")
    ax1.set_xlabel("cosine of the two names (held-out half)")
    ax1.legend(fontsize=7)
    ax2.plot(GRID, [c["precision"] for c in curve], label="precision (tune)")
    ax2.plot(GRID, [c["recall"] for c in curve], label="recall (tune)")
    ax2.axhline(PRECISION_TARGET, color="grey", linestyle=":")
    ax2.axvline(chosen, color="k", linestyle="--")
    ax2.set_xlabel("threshold")
    ax2.legend(fontsize=7)
    save_png(fig, args.out / "graph_alignment.png", title="Entity alignment: name-vector cosine threshold")
    finish("graph_alignment", result, args.out)


if __name__ == "__main__":
    main()
