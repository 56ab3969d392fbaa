"""Deterministic, seeded synthetic Obsidian vault generator for benchmarks (stdlib only).

Contract:

* ``generate(root, n_notes, seed=42)`` writes ``n_notes`` notes plus ``max(1, N // 100)`` tiny
  PNGs under ``attachments/`` into ``root``, which must be absent or empty (else ``ValueError``).
  Same ``(n_notes, seed)`` -> byte-identical vault: all choices come from one
  ``random.Random(seed)`` consumed in a fixed order; nothing depends on time, hash
  randomization or directory listing order. Text is ASCII, so characters equal bytes.
* Folders are 1-4 levels deep (~sqrt(N) of them); titles are multi-word ("Quarterly Garden
  Review 17"); ~2% of notes reuse a basename from another folder, and links to those use the
  path form ``[[Folder/Sub/Title]]``. ~80% of notes have YAML frontmatter (tags, aliases,
  created/updated, status, priority, ~15% ``related: "[[Other Note]]"``).
* Bodies: headings (levels 1-4), Zipf-distributed pseudo-English over ``vocabulary()``, inline
  tags (some nested), wikilinks (plain, ``|alias``, ``#Heading``, ``#^blockid``), block ids,
  embeds (notes, headings, images), ``%20``-encoded vault-relative Markdown links, lists, fenced
  code and inline code. Link targets follow a power law; ~3% of links point to missing notes.
  Every heading/block reference and every embed resolves. Sizes are lognormal (median ~1.5 KB)
  and never exceed ``MAX_BYTES`` (50 KiB).
* ``VaultStats`` counts exactly what was written. Body counts (wikilinks, embeds,
  markdown_links, inline_tags, headings, block_ids) exclude frontmatter and code;
  ``unresolved_links`` spans wikilinks, Markdown links and ``related`` properties;
  ``code_decoys`` counts link-/tag-like strings inside fenced or inline code.
* ``vocabulary()`` is fixed (2,000 words, most frequent first); ``sample_queries(n, seed=s)``
  gives deterministic one- and two-word queries mixing common, mid and rare words.

CLI: ``python bench/synth_vault.py OUT_DIR --notes 10000 --seed 42`` prints a one-line summary.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from functools import cache
from itertools import accumulate
from pathlib import Path
from random import Random
from urllib.parse import quote


def _split(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))


_FUNCTION = _split("""
the of and to a in is it that for on was with as be at by this have from or an are
not but they which you were all we can there their has been more one when will would if so no
what about into than its only other some could them these then two also after first new over
such most may any very through where much before well should each those both between under
same another while""")
_CONTENT = _split("""
time work note idea plan garden system project review meeting water light house
market model energy paper group problem service result change reason family health money story
fact month book level office course report design method program question memory decision
history research budget process season letter river mountain forest city village coffee kitchen
window table chapter lesson habit routine exercise recipe travel journey train station bridge
signal pattern network server cache index query schema feature release version module client
partner contract invoice account balance growth risk target metric goal task deadline draft
outline summary insight theory argument evidence source quote author reader editor archive
library folder document sketch diagram canvas color shape texture music rhythm melody voice
sound silence morning evening weekend winter summer spring autumn weather storm cloud ocean
island harbor garden soil seed flower tree leaf root branch fruit harvest bread cheese salad
soup sugar salt pepper butter honey tea juice walk run swim climb rest sleep dream focus
attention energy stress calm balance patience courage trust friend neighbor teacher student
doctor nurse engineer artist writer farmer builder pilot captain stone metal glass wood paper
fabric engine motor wheel rail road path trail map compass border region country planet orbit
rocket comet galaxy atom cell gene protein enzyme vaccine clinic therapy diet vitamin muscle
quickly slowly rarely often simple complex careful honest bright quiet gentle steady rough
smooth ancient modern local global private public early late small large short long""")
_ADJ = _split("""
Quarterly Weekly Daily Annual Early Late Quiet Bright Small Deep Open Northern Southern
Hidden Simple Rough Final Green Golden Silver Urban Rural Digital Analog Slow Rapid Lasting
Future Past Modern Ancient Local Global Shared Private Core Applied Practical Curious Careful
Steady Wild Calm Clear Broad""")
_NOUN = _split("""
Garden Kitchen Budget Reading Writing Travel Health Fitness Music Project Research
Client Product Design Market Team Family Home Career Language Coffee Recipe Harbor River Forest
Mountain Library Archive Network Server Database Energy Climate Ocean Soil Bread Rhythm Canvas
Memory Habit Sleep Focus Learning Finance Invest Tax Garage Bicycle Camera Photo Podcast
Newsletter Course Lecture Thesis Paper Experiment Protocol Vendor Contract Launch Roadmap
Backlog Sprint Hiring Onboarding Security Privacy Backup Kanban Orchard Village""")
_KIND = _split("""
Review Notes Plan Log Meeting Draft Summary Ideas Journal Checklist Report Outline
Retrospective Proposal Questions Reference Guide Index Overview Timeline Tracker Brief Recap
Sketch Study Analysis Agenda Inventory Roadmap Digest""")
_FOLDERS = _split("""
Projects Areas Resources Archive Journal Daily Inbox Meetings People Reading Writing
Research Recipes Travel Health Finance Work Clients Ideas Learning Home Family Fitness Books
Reference Templates Courses Talks Drafts Garden Music Photos Code Planning Reviews Someday
Notes Logs Misc""")
_TAGS = _split("""
idea todo reading book meeting project review draft question research writing travel
health fitness finance recipe music learning work home family garden code journal important
later reference inspiration quote paper podcast area/health area/finance area/career area/home
area/learning project/alpha project/beta project/launch type/meeting type/person type/book
status/waiting status/active topic/ai topic/climate topic/history""")
_STATUS = ("draft", "active", "active", "done", "archived", "someday")
_DECOYS = _split(
    "[[NotALink]],[[Fake Note|alias]],![[missing.png]],#notatag,#fake/nested,[x](No.md)", ","
)
_CODE = _split(
    "value = compute(item)|for item in items:|    total += item.size|print(result)|echo done|"
    "def handler(event):|    return event|items = load(path)|ls -la|return None|"
    "const data = await fetch(url)",
    "|",
)
_ONSET = _split("b c d f g h k l m n p r s t v w z br cr dr fr gr pr tr st sh ch th pl cl bl sl")
_VOWEL = _split("a e i o u ai ea ou io ae")
_CODA = ["", "", "n", "r", "l", "s", "t", "m", "nd", "st", "rk", "x"]
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201ff9a6b5b1d0000000049454e44ae426082"
)
VOCAB_SIZE = 2000
MEDIAN_BYTES = 1500
MAX_BYTES = 50 * 1024  # hard limit; targets stop 2 KiB short since the last block overshoots


@dataclass(frozen=True)
class VaultStats:
    """Counts of everything :func:`generate` wrote (see the module docstring)."""

    notes: int
    folders: int
    attachments: int
    total_bytes: int
    frontmatter_notes: int
    frontmatter_tags: int
    property_links: int
    headings: int
    block_ids: int
    wikilinks: int
    embeds: int
    markdown_links: int
    unresolved_links: int
    inline_tags: int
    code_blocks: int
    inline_code: int
    code_decoys: int
    duplicate_basenames: int
    size_median: int
    size_p99: int
    size_max: int

    def summary(self) -> str:
        """One-line human-readable summary."""
        kb = 1024
        return (
            f"{self.notes} notes in {self.folders} folders, {self.total_bytes / kb**2:.1f} MB; "
            f"size median {self.size_median / kb:.1f} KB p99 {self.size_p99 / kb:.1f} KB "
            f"max {self.size_max / kb:.1f} KB; {self.wikilinks} wikilinks, {self.embeds} embeds, "
            f"{self.markdown_links} md links, {self.unresolved_links} unresolved, "
            f"{self.inline_tags} inline tags, {self.code_blocks} code blocks, "
            f"{self.code_decoys} code decoys, {self.duplicate_basenames} duplicate basenames"
        )


@cache
def vocabulary() -> tuple[str, ...]:
    """The 2,000-word vocabulary, most frequent (Zipf rank 1) first. Independent of any seed."""
    words = dict.fromkeys(_FUNCTION + _CONTENT)
    rng = Random(20240305)
    while len(words) < VOCAB_SIZE:
        n = rng.choice((2, 2, 2, 3))
        w = "".join(rng.choice(_ONSET) + rng.choice(_VOWEL) for _ in range(n)) + rng.choice(_CODA)
        words.setdefault(w)
    return tuple(words)


@cache
def _zipf_cum(n: int, s: float = 1.07) -> tuple[float, ...]:
    return tuple(accumulate(1.0 / (r + 1) ** s for r in range(n)))


def sample_queries(n: int, *, seed: int) -> list[str]:
    """``n`` deterministic keyword queries: half one-word, half two-word, mixing common (ranks
    ~100-300), mid (300-1000) and rare (1000-2000) vocabulary words; function words excluded."""
    vocab = vocabulary()
    rng = Random(f"queries:{seed}")
    lo = len(_FUNCTION)
    buckets = (vocab[lo : lo + 200], vocab[lo + 200 : 1000], vocab[1000:])
    out: list[str] = []
    for i in range(n):
        k = 1 if i % 2 == 0 else 2
        picked: list[str] = []
        while len(picked) < k:
            w = rng.choice(buckets[rng.randrange(3)])
            if w not in picked:
                picked.append(w)
        out.append(" ".join(picked))
    return out


@dataclass(slots=True)
class _Note:
    folder: str
    title: str
    target: int
    headings: list[tuple[int, str]] = field(default_factory=list)
    blocks: dict[int, str] = field(default_factory=dict)  # section index -> block id
    name: str = ""  # how links refer to it: basename, or vault path if the basename is shared

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.title}.md"


def _title(rng: Random) -> str:
    form = rng.randrange(4)
    num = f" {rng.randint(1, 99)}"
    if form < 2:
        return f"{rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_KIND)}" + (num * form)
    return f"{rng.choice(_NOUN)} {rng.choice(_KIND)}" + (num if form == 2 else "")


def _make_folders(rng: Random, count: int) -> list[str]:
    folders: list[str] = []
    used: set[str] = set()
    for k in range(count):
        shallow = [f for f in folders if f.count("/") < 3]
        parent = "" if k < max(1, count // 8) or not shallow else rng.choice(shallow)
        name = rng.choice(_FOLDERS)
        while f"{parent}/{name}".lower() in used:
            name = f"{rng.choice(_ADJ)} {rng.choice(_FOLDERS)}"
        used.add(f"{parent}/{name}".lower())
        folders.append(f"{parent}/{name}" if parent else name)
    return folders


class _Builder:
    """Renders note bodies; keeps the running counts."""

    def __init__(self, rng: Random, notes: list[_Note], ghosts: list[str], images: list[str]):
        self.rng, self.notes, self.ghosts, self.images = rng, notes, ghosts, images
        self.vocab = vocabulary()
        self.cum = _zipf_cum(len(self.vocab))
        self.order = list(range(len(notes)))
        rng.shuffle(self.order)  # which notes are popular link targets
        self.tcum = _zipf_cum(len(notes), 1.0)
        self.tag_cum = _zipf_cum(len(_TAGS), 0.9)
        self.c: Counter[str] = Counter()

    def target(self, me: int) -> _Note:
        t = self.rng.choices(self.order, cum_weights=self.tcum)[0]
        return self.notes[t if t != me else (t + 1) % len(self.notes)]

    def tag(self) -> str:
        return self.rng.choices(_TAGS, cum_weights=self.tag_cum)[0]

    def words(self, n: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=n)

    def wikilink(self, me: int) -> str:
        rng = self.rng
        self.c["wikilinks"] += 1
        alias = " ".join(self.words(rng.randint(1, 3)))
        if rng.random() < 0.03:
            self.c["unresolved_links"] += 1
            return f"[[{rng.choice(self.ghosts)}]]"
        t, r = self.target(me), rng.random()
        if r < 0.55:
            return f"[[{t.name}]]"
        if r < 0.75:
            return f"[[{t.name}|{alias}]]"
        if r < 0.87 or not t.blocks:
            return f"[[{t.name}#{rng.choice(t.headings)[1]}]]"
        if r < 0.95:
            return f"[[{t.name}#^{rng.choice(list(t.blocks.values()))}]]"
        return f"[[{t.name}#{rng.choice(t.headings)[1]}|{alias}]]"

    def mdlink(self, me: int) -> str:
        self.c["markdown_links"] += 1
        text = " ".join(self.words(self.rng.randint(1, 3)))
        if self.rng.random() < 0.03:
            self.c["unresolved_links"] += 1
            return (
                f"[{text}]({quote(self.notes[me].folder + '/' + self.rng.choice(self.ghosts))}.md)"
            )
        return f"[{text}]({quote(self.target(me).path)})"

    def inline_code(self) -> str:
        self.c["inline_code"] += 1
        if self.rng.random() < 0.6:
            self.c["code_decoys"] += 1
            return f"`{self.rng.choice(_DECOYS)}`"
        return f"`{self.rng.choice(_CODE).strip()}`"

    def text(self, n_words: int, me: int, block_id: str = "") -> str:
        """Sentences of Zipf words with links, tags and inline code sprinkled in."""
        rng = self.rng
        w = self.words(n_words)
        specials: list[str] = []
        for rate, make in ((1 / 55, self.wikilink), (1 / 400, self.mdlink)):
            specials += [make(me) for _ in range(int(n_words * rate + rng.random()))]
        n_tags = int(n_words / 160 + rng.random())
        self.c["inline_tags"] += n_tags
        specials += ["#" + self.tag() for _ in range(n_tags)]
        specials += [self.inline_code() for _ in range(int(n_words / 300 + rng.random()))]
        for s in specials:
            w.insert(rng.randrange(1, len(w)), s)
        out, pos = [], 0
        while pos < len(w):
            k = rng.randint(5, 16)
            if len(w) - pos - k < 4:  # no stubby final sentence
                k = len(w) - pos
            s = " ".join(w[pos : pos + k])
            out.append(s[:1].upper() + s[1:] + ".")
            pos += k
        if block_id:
            self.c["block_ids"] += 1
            out.append("^" + block_id)
        return " ".join(out)

    def code_block(self) -> str:
        rng = self.rng
        self.c["code_blocks"] += 1
        lines = [rng.choice(_CODE) for _ in range(rng.randint(2, 8))]
        for _ in range(rng.randint(1, 3)):
            self.c["code_decoys"] += 1
            d = rng.choice(_DECOYS)
            lines.insert(rng.randrange(len(lines) + 1), rng.choice((d, f'x = "{d}"', f"// {d}")))
        lang = rng.choice(("python", "bash", "js", "text", ""))
        return "```" + lang + "\n" + "\n".join(lines) + "\n```"

    def embed(self, me: int) -> str:
        rng = self.rng
        self.c["embeds"] += 1
        r = rng.random()
        if r < 0.5:
            return f"![[{self.target(me).name}]]"
        if r < 0.65:
            t = self.target(me)
            return f"![[{t.name}#{rng.choice(t.headings)[1]}]]"
        return f"![[{rng.choice(self.images)}{'|300' if r > 0.9 else ''}]]"

    def list_block(self, me: int) -> str:
        rng = self.rng
        bullet = rng.choice(("- ", "- ", "* ", "- [ ] ", "1. "))
        items = []
        for _ in range(rng.randint(2, 6)):
            b = bullet if bullet != "- [ ] " or rng.random() < 0.6 else "- [x] "
            items.append(b + self.text(rng.randint(3, 14), me)[:-1])
        return "\n".join(items)

    def frontmatter(self, me: int) -> str:
        rng = self.rng
        self.c["frontmatter_notes"] += 1
        tags = list(dict.fromkeys(self.tag() for _ in range(rng.randint(1, 4))))
        self.c["frontmatter_tags"] += len(tags)
        lines = ["---"]
        if rng.random() < 0.2:
            lines.append("tags: [" + ", ".join(tags) + "]")
        else:
            lines += ["tags:"] + [f"  - {t}" for t in tags]
        if rng.random() < 0.4:
            title = self.notes[me].title
            initials = "".join(p[0] for p in title.split() if not p.isdigit())
            lines += ["aliases:", f'  - "{initials}"']  # quoted: "NO", "ON" are YAML 1.1 booleans
            if rng.random() < 0.4:
                lines.append(f"  - {title} (old)")
        created = date(2022, 1, 1) + timedelta(days=rng.randrange(1000))
        updated = created + timedelta(days=rng.randrange(200))
        lines += [f"created: {created.isoformat()}", f"updated: {updated.isoformat()}"]
        lines += [f"status: {rng.choice(_STATUS)}", f"priority: {rng.randint(1, 5)}"]
        if rng.random() < 0.15:
            self.c["property_links"] += 1
            if rng.random() < 0.03:
                self.c["unresolved_links"] += 1
                lines.append(f'related: "[[{rng.choice(self.ghosts)}]]"')
            else:
                lines.append(f'related: "[[{self.target(me).name}]]"')
        return "\n".join([*lines, "---"])

    def note(self, me: int) -> str:
        rng, note = self.rng, self.notes[me]
        parts: list[str] = []
        if rng.random() < 0.8:
            parts.append(self.frontmatter(me))
        if rng.random() < 0.4:
            self.c["headings"] += 1
            parts.append(f"# {note.title}")
        size = sum(map(len, parts))
        n_sec = len(note.headings)
        for i, (level, heading) in enumerate(note.headings):
            self.c["headings"] += 1
            parts.append("#" * level + " " + heading)
            budget = (note.target - size) / (n_sec - i) - len(heading) - 6
            used, first = 0, True
            while first or used < budget:
                r = rng.random()
                if first or r < 0.8:
                    n = min(rng.randint(20, 110), max(6, int((budget - used) / 6.5)))
                    block = self.text(n, me, note.blocks.get(i, "") if first else "")
                    first = False
                elif r < 0.88:
                    block = self.list_block(me)
                elif r < 0.94:
                    block = self.embed(me)
                else:
                    block = self.code_block()
                parts.append(block)
                used += len(block) + 2
            size += used + len(heading) + level + 3
        return "\n\n".join(parts) + "\n"


def _plan(rng: Random, n: int) -> tuple[list[_Note], list[str], int]:
    folders = _make_folders(rng, max(1, round(math.sqrt(n))))
    weights = [0.2 + rng.expovariate(1.0) for _ in folders]
    heading_words = vocabulary()[len(_FUNCTION) : 600]
    notes: list[_Note] = []
    seen: set[str] = set()
    for folder in rng.choices(folders, weights=weights, k=n):
        title = _title(rng)
        while title.lower() in seen:
            title = f"{title} {rng.randint(2, 999)}" if rng.random() < 0.5 else _title(rng)
        seen.add(title.lower())
        size = min(MAX_BYTES - 2048, max(300, int(rng.lognormvariate(math.log(MEDIAN_BYTES), 0.9))))
        note = _Note(folder, title, size)
        texts: set[str] = set()
        while len(note.headings) < min(40, 1 + size // 1100):
            h = " ".join(rng.choices(heading_words, k=rng.randint(1, 4))).title()
            if h.lower() not in texts:
                texts.add(h.lower())
                note.headings.append((rng.choice((1, 2, 2, 2, 3, 3, 4)), h))
        k = min(len(note.headings), rng.choice((0, 0, 0, 1, 1, 2, 3)))
        for sec in sorted(rng.sample(range(len(note.headings)), k)):
            note.blocks[sec] = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=6))
        notes.append(note)
    # ~2% of notes take over the basename of a note in another folder.
    used = {n_.path.lower() for n_ in notes}
    dups = rng.sample(range(n), round(0.02 * n)) if n >= 10 else []
    pool = sorted(set(range(n)) - set(dups))
    for i in dups:
        for _ in range(20):
            src = notes[rng.choice(pool)]
            cand = f"{notes[i].folder}/{src.title}.md".lower()
            if src.folder != notes[i].folder and cand not in used:
                used.discard(notes[i].path.lower())
                used.add(cand)
                notes[i].title = src.title
                break
    counts = Counter(n_.title.lower() for n_ in notes)
    for n_ in notes:
        n_.name = n_.title if counts[n_.title.lower()] == 1 else n_.path[:-3]
    ghosts: list[str] = []
    while len(ghosts) < max(3, n // 40):
        g = _title(rng) + " Missing"
        if g.lower() not in seen:
            seen.add(g.lower())
            ghosts.append(g)
    return notes, ghosts, sum(c for c in counts.values() if c > 1)


def generate(root: Path, n_notes: int, *, seed: int = 42) -> VaultStats:
    """Write a synthetic vault of ``n_notes`` notes into ``root`` (absent or empty)."""
    root = Path(root)
    if n_notes < 1:
        raise ValueError(f"n_notes must be >= 1, got {n_notes}")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"refusing to generate into {root}: it exists and is not an empty dir")
    rng = Random(seed)
    notes, ghosts, n_dup = _plan(rng, n_notes)
    start = datetime(2024, 1, 1, 9, 0, 0)
    images = [
        f"Pasted image {(start + timedelta(minutes=97 * i)).strftime('%Y%m%d%H%M%S')}.png"
        for i in range(max(1, n_notes // 100))
    ]
    dirs = {"attachments"}
    for note in notes:
        parts = note.folder.split("/")
        dirs.update("/".join(parts[: d + 1]) for d in range(len(parts)))
    for d in sorted(dirs):
        (root / d).mkdir(parents=True, exist_ok=True)
    total = 0
    for img in images:
        (root / "attachments" / img).write_bytes(_PNG)
        total += len(_PNG)
    builder = _Builder(rng, notes, ghosts, images)
    sizes: list[int] = []
    for i, note in enumerate(notes):
        text = builder.note(i)
        with open(root / note.path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        sizes.append(len(text))
    total += sum(sizes)
    sizes.sort()
    counts: dict[str, int] = {
        **builder.c,
        **dict(notes=n_notes, folders=len(dirs), attachments=len(images), total_bytes=total),
        **dict(duplicate_basenames=n_dup, size_median=sizes[len(sizes) // 2], size_max=sizes[-1]),
        "size_p99": sizes[min(len(sizes) - 1, int(0.99 * len(sizes)))],
    }
    return VaultStats(**{f.name: counts.get(f.name, 0) for f in fields(VaultStats)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate a synthetic Obsidian vault.")
    parser.add_argument("out_dir", type=Path, help="target directory (absent or empty)")
    parser.add_argument("--notes", type=int, default=10_000, help="number of notes")
    parser.add_argument("--seed", type=int, default=42, help="random seed")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        stats = generate(args.out_dir, args.notes, seed=args.seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out_dir}: {stats.summary()} ({time.perf_counter() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
