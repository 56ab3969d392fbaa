"""Keyword evidence whose cost does not grow with the vault: how common a word is, which notes
hold it, and how many notes there are, without reading a common word's whole doclist.

A word's FTS5 doclist lists every note holding it, so anything that reads or scores it costs time
in proportion to how many notes hold it: on a 50,000-note vault a common word's doclist has tens
of thousands of entries. These helpers read only what a query needs:

* ``note_count``: the number of notes from FTS5's own totals record (one row), instead of
  ``COUNT(*)``, which visits every row.
* ``doc_frequency``: how many notes hold a word, reading at most the ``COMMON`` newest entries
  of its doclist: exact for a rare word; for a common one an estimate, with the rowid from
  which those newest entries start (``Frequency.since``), so a ranking over common words can be
  kept to them.
* ``newest`` / ``titled_newest``: the newest notes matching an expression from a rowid on (a
  common word's window), and those ranked with title or alias matches anywhere in the vault
  first (the title lookup reads the words' doclists, without scoring), shorter notes first.
* ``brevity``: 1 / (1 + a note's length / the average length), lengths from FTS5's docsize
  records, for ranking notes no BM25 scored.
* ``holders``: which of some notes hold a word: a rare word's doclist is read whole (it is
  short), a common word is looked up note by note.
* ``title_words``: the words of some notes' titles and aliases, split and folded as the index's
  tokenizer does (``unicode61 remove_diacritics 2``).

Every function takes an open index connection and reads only.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "COMMON",
    "ROWIDS",
    "Frequency",
    "brevity",
    "doc_frequency",
    "holders",
    "newest",
    "note_count",
    "title_words",
    "titled_newest",
]

COMMON = 500  # a word held by more notes than this is common: BM25 never scores it
_TOKEN = re.compile(r"[^\W_]+")  # unicode61: letters and digits; "_" and punctuation separate
ROWIDS = "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?"


def _totals(conn: sqlite3.Connection) -> list[int]:
    """FTS5's averages record (rowid 1 of the %_data table): the row count, then each column's
    total tokens; one row read, where COUNT(*) visits every row (2 ms at 50k notes). Empty when
    the table has none yet."""
    try:
        row = conn.execute("SELECT block FROM notes_fts_data WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return []
    return _varints(bytes(row[0])) if row is not None and row[0] else []


def note_count(conn: sqlite3.Connection) -> int:
    """How many notes the FTS table holds (at least 1)."""
    totals = _totals(conn)
    if totals:
        return totals[0] or 1
    return int(conn.execute("SELECT COUNT(*) FROM notes_fts").fetchone()[0]) or 1


@dataclass(frozen=True, slots=True)
class Frequency:
    """How many notes hold a word: exact for a rare word, estimated for a common one."""

    notes: int
    since: int = 0  # common words: the rowid from which the newest COMMON notes holding it start

    @property
    def common(self) -> bool:
        return self.since > 0


def doc_frequency(conn: sqlite3.Connection, term: str) -> Frequency:
    """How many notes hold the FTS5 term ``term`` (``search.word_term``), reading at most the
    ``COMMON`` newest entries of its doclist. A common word's count is estimated from the rowid
    span those entries cover, as if it were spread evenly over the vault."""
    newest = f"SELECT COUNT(*), MIN(rowid) FROM ({ROWIDS} ORDER BY rowid DESC LIMIT {COMMON})"  # noqa: S608
    count, since = conn.execute(newest, (term,)).fetchone()
    if count < COMMON:
        return Frequency(int(count))
    low, high = conn.execute(  # one aggregate each: both in one SELECT would read every row
        "SELECT (SELECT MIN(id) FROM notes_fts_docsize), (SELECT MAX(id) FROM notes_fts_docsize)"
    ).fetchone()
    span = max(1, int(high) - int(since) + 1)
    estimate = COMMON * (int(high) - int(low) + 1) / span
    return Frequency(max(COMMON, min(note_count(conn), round(estimate))), int(since))


def newest(conn: sqlite3.Connection, match: str, since: int, limit: int) -> list[int]:
    """The newest ``limit`` notes (highest rowids) from ``since`` on matching ``match``."""
    rows = conn.execute(
        f"{ROWIDS} AND rowid >= ? ORDER BY rowid DESC LIMIT ?", (match, since, limit)
    )
    return [int(r[0]) for r in rows]


def _varints(blob: bytes) -> list[int]:
    """Every SQLite varint of ``blob``, in order."""
    out: list[int] = []
    value, i = 0, 0
    for byte in blob:
        if i == 8:
            out.append((value << 8) | byte)
            value, i = 0, 0
            continue
        value = (value << 7) | (byte & 0x7F)
        i += 1
        if byte < 0x80:
            out.append(value)
            value, i = 0, 0
    return out


def brevity(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, float]:
    """For each note, 1 / (1 + its length / the average note's length), lengths in tokens
    from FTS5's own records (the same length BM25 normalises by): shorter notes score higher."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    counts = _totals(conn)
    average = sum(counts[1:]) / counts[0] if len(counts) > 1 and counts[0] else 1.0
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT id, sz FROM notes_fts_docsize WHERE id IN ({marks})",  # noqa: S608
        wanted,
    )
    return {
        int(fid): 1.0 / (1.0 + sum(_varints(bytes(size))) / max(average, 1.0)) for fid, size in rows
    }


def titled_newest(
    conn: sqlite3.Connection, match: str, since: int, limit: int
) -> list[tuple[int, float]]:
    """Up to ``limit`` notes matching ``match``, best first: those matching it in their title
    or aliases anywhere in the vault (1 + ...), then the newest others from rowid ``since`` on;
    shorter notes first within each (``brevity``, 0..1), as BM25 would for words held once.
    The title lookup reads the words' doclists without scoring (0.2 ms for a common word at
    50k notes): a note named after the words is never left out for being old."""
    titled = newest(conn, f"{{title aliases}}: ({match})", 0, limit)
    seen = set(titled)
    found = titled + [f for f in newest(conn, match, since, limit) if f not in seen]
    short = brevity(conn, found)
    scored = [(fid, (fid in seen) + short.get(fid, 0.0)) for fid in found]
    return sorted(scored, key=lambda fs: -fs[1])[:limit]


def holders(
    conn: sqlite3.Connection, term: str, frequency: Frequency, ids: Iterable[int]
) -> set[int]:
    """Which notes of ``ids`` hold ``term`` (``frequency``: ``doc_frequency(conn, term)``)."""
    wanted = set(ids)
    if not wanted or frequency.notes == 0:
        return set()
    if not frequency.common:
        # A short doclist is read whole and intersected here: "MATCH ? AND rowid IN (...)"
        # makes FTS5 parse the expression again for every id.
        return wanted.intersection(int(r[0]) for r in conn.execute(ROWIDS, (term,)))
    return {
        fid
        for fid in wanted
        if conn.execute(f"{ROWIDS} AND rowid = ?", (term, fid)).fetchone() is not None
    }


def _fold(text: str) -> str:
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return "".join(
        c for c in unicodedata.normalize("NFKD", lowered) if not unicodedata.combining(c)
    )


def title_words(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, set[str]]:
    """The folded words of each note's title and aliases, as the FTS5 tokenizer splits them."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    marks = ",".join("?" * len(wanted))
    # FTS5's own content table (columns c0.. in the declared order: title, aliases, ...):
    # plain rowid lookups, where the same through notes_fts goes through its cursor per id.
    rows = conn.execute(
        f"SELECT id, c0, c1 FROM notes_fts_content WHERE id IN ({marks})",  # noqa: S608
        wanted,
    )
    return {
        int(fid): set(_TOKEN.findall(_fold(f"{title or ''} {aliases or ''}")))
        for fid, title, aliases in rows
    }
