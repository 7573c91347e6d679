"""What a text someone pasted may mean: its spellings (a UUID in either case), the UUID it is, and the (scope, key)
pairs it may name (a key, ``scope/key``, or an idemdash key URL). Pure text: the searches (queries/search.py,
queries/journey.py) look these up."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")


def spellings(q: str) -> list[str]:
    """The text as typed, and for a UUID-shaped text its lower- and upper-case forms (keys are case-sensitive text,
    but a UUID pasted from a log or a ticket may not be in the case the client sent)."""
    if not _UUID.fullmatch(q):
        return [q]
    return list(dict.fromkeys([q, q.lower(), q.upper()]))


def as_uuid(q: str) -> str | None:
    """The text as a UUID, if it is one (any case, with or without dashes)."""
    if not _UUID.fullmatch(q):
        return None
    digits = q.replace("-", "").lower()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def candidate_pairs(q: str, scopes: list[str]) -> list[tuple[str, str]]:
    """(scope, key) pairs the text may mean: the key itself in every scope (in each of its spellings);
    ``scope/key`` or ``scope key`` when it starts with a scope's name; the scope and key of a pasted idemdash key
    URL (``…/keys/<scope>/<key>``)."""
    pairs = [(scope, text) for text in spellings(q) for scope in scopes]
    for scope in scopes:
        for separator in ("/", " "):
            if q.startswith(scope + separator) and len(q) > len(scope) + 1:
                pairs.append((scope, q[len(scope) + 1 :]))
    path = urlsplit(q).path if "://" in q else q
    marker = path.find("/keys/")
    if marker >= 0:
        scope, _, key = path[marker + len("/keys/") :].partition("/")
        if scope and key:
            pairs.append((unquote(scope), unquote(key)))
    return list(dict.fromkeys(pairs))


def common_prefix(a: str, b: str) -> str:
    """What ``a`` and ``b`` share from the start (a nearest key and the text looked for)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
