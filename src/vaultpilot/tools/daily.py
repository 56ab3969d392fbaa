"""Daily notes: where the note for a date lives, and its template (semantics rule 18).

``daily_path(config, day)`` follows ``.obsidian/daily-notes.json``: the folder, and the file
name from the moment.js ``format`` (default ``YYYY-MM-DD``; a ``/`` in it makes subfolders).
``date_of_daily_path`` reads a date back from a path when the format allows it, so appending to
a daily note that does not exist yet can create it from its template. ``render_template`` fills
``{{title}}``, ``{{date}}``, ``{{time}}``, ``{{date:FORMAT}}`` and ``{{time:FORMAT}}``.

Moment tokens supported (English names): YYYY YY Q MMMM MMM MM M Do DDDD DDD DD D dddd ddd dd d
E WW W ww w GGGG gggg HH H hh h mm m ss s A a X, and ``[literal text]``. ``w``/``ww``/``gggg``
(locale weeks) are read as ISO weeks.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.vault.config import DailyNotesConfig

__all__ = ["daily_path", "date_of_daily_path", "format_moment", "parse_day", "render_template"]

_TOKEN = re.compile(
    r"\[[^\]]*\]|YYYY|GGGG|gggg|YY|Q|MMMM|MMM|MM|M|Do|DDDD|DDD|DD|D|dddd|ddd|dd|d|E|WW|W|ww|w"
    r"|HH|H|hh|h|mm|m|ss|s|A|a|X"
)
_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _token(tok: str, t: datetime) -> str:
    iso_year, iso_week, iso_day = t.isocalendar()
    values = {
        "YYYY": f"{t.year:04d}", "YY": f"{t.year % 100:02d}", "Q": str((t.month - 1) // 3 + 1),
        "MMMM": _MONTHS[t.month - 1], "MMM": _MONTHS[t.month - 1][:3],
        "MM": f"{t.month:02d}", "M": str(t.month), "Do": _ordinal(t.day),
        "DDDD": f"{t.timetuple().tm_yday:03d}", "DDD": str(t.timetuple().tm_yday),
        "DD": f"{t.day:02d}", "D": str(t.day),
        "dddd": _DAYS[t.weekday()], "ddd": _DAYS[t.weekday()][:3], "dd": _DAYS[t.weekday()][:2],
        "d": str((t.weekday() + 1) % 7), "E": str(iso_day),
        "WW": f"{iso_week:02d}", "W": str(iso_week), "ww": f"{iso_week:02d}", "w": str(iso_week),
        "GGGG": f"{iso_year:04d}", "gggg": f"{iso_year:04d}",
        "HH": f"{t.hour:02d}", "H": str(t.hour), "hh": f"{(t.hour % 12) or 12:02d}",
        "h": str((t.hour % 12) or 12), "mm": f"{t.minute:02d}", "m": str(t.minute),
        "ss": f"{t.second:02d}", "s": str(t.second),
        "A": "AM" if t.hour < 12 else "PM", "a": "am" if t.hour < 12 else "pm",
        "X": str(int(t.timestamp())),
    }  # fmt: skip
    return values[tok]


def format_moment(fmt: str, when: date | datetime) -> str:
    """Format a date or time with a moment.js format string."""
    t = when if isinstance(when, datetime) else datetime(when.year, when.month, when.day)
    return _TOKEN.sub(
        lambda m: m.group()[1:-1] if m.group().startswith("[") else _token(m.group(), t), fmt
    )


def daily_path(cfg: DailyNotesConfig, day: date) -> str:
    """The vault path of the daily note for ``day``."""
    name = format_moment(cfg.format or "YYYY-MM-DD", day).strip("/")
    return f"{cfg.folder}/{name}.md" if cfg.folder else f"{name}.md"


_PARSE = {
    "YYYY": r"(?P<Y>\d{4})", "YY": r"(?P<y>\d{2})", "MMMM": r"(?P<B>[A-Za-z]+)",
    "MMM": r"(?P<b>[A-Za-z]{3})", "MM": r"(?P<m>\d{2})", "M": r"(?P<m>\d{1,2})",
    "DD": r"(?P<d>\d{2})", "D": r"(?P<d>\d{1,2})", "Do": r"(?P<d>\d{1,2})(?:st|nd|rd|th)",
    "dddd": r"[A-Za-z]+", "ddd": r"[A-Za-z]{3}", "dd": r"[A-Za-z]{2}",
}  # fmt: skip


def date_of_daily_path(cfg: DailyNotesConfig, path: str) -> date | None:
    """The date a daily-note path stands for, or None if it is not one (or can't be read)."""
    folder = f"{cfg.folder}/" if cfg.folder else ""
    if not path.startswith(folder) or not path.lower().endswith(".md"):
        return None
    pattern, pos = "", 0
    fmt = cfg.format or "YYYY-MM-DD"
    used: dict[str, str] = {}  # group name -> the token that defined it
    for m in _TOKEN.finditer(fmt):
        pattern += re.escape(fmt[pos : m.start()])
        tok = m.group()
        if tok.startswith("["):
            pattern += re.escape(tok[1:-1])
        elif tok in _PARSE:
            groups = re.findall(r"\(\?P<(\w+)>", _PARSE[tok])
            seen = [used.get(g) for g in groups]
            if groups and all(t == tok for t in seen):  # the same token again: same text
                pattern += "".join(f"(?P={g})" for g in groups)
            elif any(seen):
                return None
            else:
                used.update(dict.fromkeys(groups, tok))
                pattern += _PARSE[tok]
        else:
            return None
        pos = m.end()
    pattern += re.escape(fmt[pos:])
    found = re.fullmatch(pattern, path[len(folder) : -3])
    if found is None:
        return None
    g = found.groupdict()
    try:
        year = int(g["Y"]) if g.get("Y") else 2000 + int(g["y"])
        if g.get("m"):
            month = int(g["m"])
        else:
            name = (g.get("B") or g.get("b") or "").lower()
            month = next(i + 1 for i, n in enumerate(_MONTHS) if n.lower().startswith(name[:3]))
        return date(year, month, int(g["d"]))
    except (KeyError, StopIteration, ValueError, TypeError):
        return None


def parse_day(text: str | None, today: date) -> date:
    """'today' (also None), 'yesterday', 'tomorrow', or a YYYY-MM-DD date."""
    word = (text or "today").strip().lower()
    if word == "today":
        return today
    if word == "yesterday":
        return today - timedelta(days=1)
    if word == "tomorrow":
        return today + timedelta(days=1)
    try:  # a date, or a date and time ('2025-01-15T09:30'); nothing may follow them
        return datetime.fromisoformat(word).date() if len(word) > 10 else date.fromisoformat(word)
    except ValueError:
        raise InvalidArgumentError(
            f"date {text!r} is not understood; use 'today', 'yesterday', 'tomorrow' or "
            "'YYYY-MM-DD', e.g. date='2025-01-15'."
        ) from None


_VARIABLE = re.compile(r"\{\{\s*(title|date|time)(?::([^}]*))?\s*\}\}", re.IGNORECASE)


def render_template(template: str, *, title: str, day: date, now: datetime) -> str:
    """Fill a core Templates-plugin template for a note titled ``title`` dated ``day``."""
    stamp = datetime(day.year, day.month, day.day, now.hour, now.minute, now.second)

    def fill(m: re.Match[str]) -> str:
        name, fmt = m.group(1).lower(), m.group(2)
        if name == "title":
            return title
        if name == "date":
            return format_moment(fmt.strip() if fmt else "YYYY-MM-DD", stamp)
        return format_moment(fmt.strip() if fmt else "HH:mm", stamp)

    return _VARIABLE.sub(fill, template)
