"""Pages from templates: every value escaped (autoescape), and every stored string shown with
its invisible and direction-changing characters as visible markers, so none can reorder the page."""
from __future__ import annotations

import re
import time
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from ..common.ids import STORED, shown_id

HERE = Path(__file__).parent
SHOWN = ("Cf", "Cs", "Co", "Cn")  # format (bidi, zero-width, tags), surrogates, private, unassigned
# variation selectors, marks a payload can be spelled in (a byte each); not U+FE0E / U+FE0F, emoji's own
DASHED = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SELECTORS = re.compile("[\ufe00-\ufe0d\U000e0100-\U000e01ef]")


def visible(value: Any) -> Any:
    """A string with each invisible or direction-changing character (bidi overrides and isolates,
    zero-width, tag characters, controls but newline and tab, variation selectors but emoji's) as a
    visible ⟦U+XXXX⟧; Markup (our
    templates' own output) and other values unchanged."""
    if not isinstance(value, str) or isinstance(value, Markup) or (value.isprintable() and not SELECTORS.search(value)):
        return value
    return "".join(_marker(c) if _hidden(c) else c for c in value)


def _hidden(char: str) -> bool:
    category = unicodedata.category(char)
    return category in SHOWN or (category == "Cc" and char not in "\n\t") or SELECTORS.match(char) is not None


def _marker(char: str) -> str:
    return f"\u27e6U+{ord(char):04X}\u27e7"


def moment(ts: Any) -> Optional[datetime]:
    """A Unix time or an ISO string as an aware datetime (UTC when it names no zone); None else."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return datetime.fromtimestamp(ts, timezone.utc)
    try:
        found = datetime.fromisoformat(str(ts))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=timezone.utc)


def when(ts: Any) -> str:
    """A Unix time or an ISO string as a short UTC date and time (2026-12-03 18:57 UTC); '—' for none."""
    found = moment(ts) if ts not in (None, "") else None
    return found.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if found else (str(ts) if ts else "—")


def ago(ts: Any, now: Optional[float] = None) -> str:
    """How long ago, in the largest whole unit (just now, 5 min ago, 3 h ago, 2 days ago, in 4 days)."""
    found = moment(ts) if ts not in (None, "") else None
    if found is None:
        return ""
    seconds = (now if now is not None else time.time()) - found.timestamp()
    later, seconds = seconds < -60, abs(seconds)
    for size, unit in ((86400 * 365, "year"), (86400 * 30, "month"), (86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size:
            count = int(seconds // size)
            name = unit + ("s" if count > 1 and unit not in ("h", "min") else "")
            return f"in {count} {name}" if later else f"{count} {name} ago"
    return "just now"


def iso(ts: Any) -> str:
    """The ISO form of a time, for a <time datetime> attribute."""
    found = moment(ts) if ts not in (None, "") else None
    return found.isoformat(timespec="seconds") if found else ""


def stored_like(value: Any) -> bool:
    """Whether a value is a memory id as stored or shown (an audit detail's ids are not dashed)."""
    return isinstance(value, str) and (STORED.fullmatch(value) is not None or DASHED.fullmatch(value) is not None)


def short(text: Any, length: int = 160) -> str:
    text = str(text or "")
    return text if len(text) <= length else text[:length - 1] + "…"


def blank(value: Any) -> bool:
    """Whether a value says nothing: None, empty, or a mapping of blanks ({"nodes": [], "edges": []})."""
    if isinstance(value, dict):
        return all(blank(v) for v in value.values())
    return value is None or value == "" or (isinstance(value, (list, tuple)) and not value)


def raw(value: Any) -> Any:
    """A string escaped as any other, but without the visible markers: for a form's value (a
    scope's name, a prompt) that must go back exactly as stored; what the page shows of it is
    marked where it is shown."""
    return Markup(escape(value)) if isinstance(value, str) and not isinstance(value, Markup) else value


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      finalize=visible, trim_blocks=True, lstrip_blocks=True,
                      extensions=["jinja2.ext.do"])
    env.filters.update(when=when, ago=ago, iso=iso, short=short, shown_id=shown_id, visible=visible, raw=raw)
    env.tests["blank"] = blank
    env.tests["an_id"] = stored_like
    return env


class Pages:
    """Renders a template of the door's with the values every page has (the door, the CSRF token)."""

    def __init__(self, door):
        self.env, self.door = environment(), door

    def __call__(self, name: str, status: int = 200, **values) -> HTMLResponse:
        page = self.env.get_template(name).render(door=self.door, **values)
        return HTMLResponse(page, status_code=status)

    def fragment(self, name: str, **values) -> dict:
        """The page without its head (its header and <main> in a <div class="cmms">), for a
        host page to show, and its title: {"title": ..., "html": ...}."""
        template = self.env.get_template(name)
        context = template.new_context(dict(values, door=self.door, fragment=True))
        title = "".join(context.blocks["title"][0](context))
        return {"title": title, "html": template.render(door=self.door, fragment=True, **values)}
