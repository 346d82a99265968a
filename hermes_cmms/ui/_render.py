"""Pages from templates: every value escaped (autoescape), and every stored string shown with
its invisible and direction-changing characters as visible markers, so none can reorder the page."""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.responses import HTMLResponse

from ..common.ids import shown_id

HERE = Path(__file__).parent
SHOWN = ("Cf", "Cs", "Co", "Cn")  # format (bidi, zero-width, tags), surrogates, private, unassigned
# variation selectors, marks a payload can be spelled in (a byte each); not U+FE0E / U+FE0F, emoji's own
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


def when(ts: Any) -> str:
    """A Unix time or an ISO string as a short UTC date and time."""
    if isinstance(ts, (int, float)):
        return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(ts or "").replace("T", " ").replace("+00:00", " UTC")


def short(text: Any, length: int = 160) -> str:
    text = str(text or "")
    return text if len(text) <= length else text[:length - 1] + "…"


def blank(value: Any) -> bool:
    """Whether a value says nothing: None, empty, or a mapping of blanks ({"nodes": [], "edges": []})."""
    if isinstance(value, dict):
        return all(blank(v) for v in value.values())
    return value is None or value == "" or (isinstance(value, (list, tuple)) and not value)


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      finalize=visible, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(when=when, short=short, shown_id=shown_id, visible=visible)
    env.tests["blank"] = blank
    return env


class Pages:
    """Renders a template of the door's with the values every page has (the door, the CSRF token)."""

    def __init__(self, door):
        self.env, self.door = environment(), door

    def __call__(self, name: str, status: int = 200, **values) -> HTMLResponse:
        page = self.env.get_template(name).render(door=self.door, **values)
        return HTMLResponse(page, status_code=status)
