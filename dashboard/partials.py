"""The partials a list writes on every row, in Python: a key's link and the times (templates/_macros.html exports them
under their macro names, so a template imports ``time`` or ``key_link`` from there as before).

A Jinja macro call costs more than the markup it writes (its arguments, a frame, a caller and a context to check):
the stuck list called one four times a row, 11 % of the page's time with the link's. Each writes exactly what its
macro wrote: a key and its link escaped as the template escaped them; a time's ISO form, UTC form and age are digits,
letters, spaces and ``-:+.``, which escaping leaves as they are (and each escape made a ``Markup``, 9 % of the stuck
list).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Flask
from markupsafe import Markup, escape

from idemdash.core.formatting import ago, utc
from idemdash.dashboard.links import key_url

NO_TIME = Markup('<span class="muted">-</span>')


def key_link(scope: str, key: Any) -> Markup:
    """A key, linked to its page (the whole key on hover)."""
    shown = escape(key)
    return Markup(f'<a class="key mono" href="{escape(key_url(scope, key))}" title="{shown}">{shown}</a>')


def time(moment: datetime | None) -> Markup:
    """How long ago (or until): keeps ticking; the absolute time on hover."""
    if not moment:
        return NO_TIME
    return Markup(f'<time datetime="{moment.isoformat()}" data-rel title="{utc(moment)}">{ago(moment)}</time>')


def stamp(moment: datetime | None) -> Markup:
    """Absolute time with its zone; how long ago on hover."""
    if not moment:
        return NO_TIME
    return Markup(f'<time datetime="{moment.isoformat()}" data-abs title="{ago(moment)}">{utc(moment)}</time>')


def clock(moment: datetime) -> Markup:
    """Time of day only (today's refreshes, a preview's as_of), with its zone."""
    return Markup(f'<time datetime="{moment.isoformat()}" data-abs="time">{utc(moment, "%H:%M:%S")}</time>')


def short(moment: datetime) -> Markup:
    """Day and time of day, short (chart axes)."""
    return Markup(f'<time datetime="{moment.isoformat()}" data-abs="short">{utc(moment, "%b %d %H:%M")}</time>')


def init_app(app: Flask) -> None:
    for partial in (key_link, time, stamp, clock, short):
        app.add_template_global(partial, f"partial_{partial.__name__}")
