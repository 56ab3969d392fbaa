"""Notes to suggest when a named note does not exist: only ones that really match the name.

``similar_notes(name, paths)`` ranks the vault's notes against the name a caller gave:

* by words, weighted by how rare each word is among the vault's titles (an inverse document
  frequency): a title must hold most of the name's weight, so sharing one word that many titles
  (or the name's other words) outweigh does not count: "No Such Note" does not suggest
  "Daily Note". A word matches a title word when it is the same (case and accents aside) or a
  close spelling ("Starters" and "Starter", "Migraton" and "Migration", "Brulee" and "Brûlée");
* or by the whole title's spelling, for a name that is a near miss as a whole.

Pure: it takes the paths, so the caller decides where they come from (the index).
"""

from __future__ import annotations

import difflib
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable

from vaultpilot.index.search import query_words
from vaultpilot.vault.resolve import fold, note_title

__all__ = ["similar_notes"]

_WORDS_SHARE = 0.55  # of the name's word weight a title must hold
_CLOSE_WORD = 0.8  # difflib ratio for a word spelled close enough
_CLOSE_TITLE = 0.8  # difflib ratio for a whole title spelled close enough


def _plain(text: str) -> str:
    """Lower-case, accents dropped ("Crème" is "creme")."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", fold(text))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _words(text: str) -> list[str]:
    return list(dict.fromkeys(_plain(w) for w in query_words(text)))


def similar_notes(name: str, paths: Iterable[str], *, limit: int = 3) -> list[str]:
    """Up to ``limit`` note paths whose titles really match ``name``, best first."""
    notes = [p for p in paths if p.lower().endswith(".md")]
    wanted = _words(note_title(name))
    if not notes or not wanted:
        return []
    titles = {p: _words(note_title(p)) for p in notes}
    df = Counter(w for ws in titles.values() for w in set(ws))
    vocabulary = list(df)
    # Each word of the name, with the title words that count as it (itself, close spellings).
    variants = {
        w: {w, *difflib.get_close_matches(w, vocabulary, n=8, cutoff=_CLOSE_WORD)}
        if len(w) >= 4
        else {w}
        for w in wanted
    }

    def weight(w: str) -> float:
        return math.log((len(notes) + 1) / (df.get(w, 0) + 1)) + 1.0

    total = sum(weight(w) for w in wanted)
    whole = _plain(note_title(name))
    scored: list[tuple[float, str]] = []
    for path, words in titles.items():
        have = set(words)
        share = sum(weight(w) for w in wanted if variants[w] & have) / total
        if share < _WORDS_SHARE:
            spelled = difflib.SequenceMatcher(None, whole, " ".join(words))
            if spelled.real_quick_ratio() < _CLOSE_TITLE or spelled.ratio() < _CLOSE_TITLE:
                continue
            share = spelled.ratio()
        scored.append((share, path))
    scored.sort(key=lambda s: (-s[0], len(s[1]), s[1]))
    return [path for _, path in scored[:limit]]
