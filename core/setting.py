"""What a setting is: its name (read from ``IDEMDASH_<NAME>``), default, parser and meaning.

Each setting is declared once, as a field of one of the frozen dataclasses that make up ``core.settings.Settings``
(``setting_database.py``, ``setting_access.py``, ``setting_pages.py``, ``setting_process.py``, ``setting_jobs.py``):
the field's name in lower case is the attribute the code reads (``settings.default_lease_seconds``), in upper case the
setting's name (``IDEMDASH_DEFAULT_LEASE_SECONDS``); ``declare`` keeps its default, parser and meaning beside it, from
which the environment is read and docs/settings.md is generated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

PREFIX = "IDEMDASH_"
T = TypeVar("T")
_DECLARED = "idemdash.setting"


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    parse: Callable[[str], Any]
    doc: str
    # an older name of this setting, still read when the new one is unset, and how to turn its value into ours
    legacy: tuple[str, Callable[[str], str]] | None = None
    # belongs to one database: a database's table in IDEMDASH_CONFIG may set it (where it is, its tables' shape,
    # what its data and jobs keep and do)
    per_database: bool = False

    @property
    def env(self) -> str:
        return PREFIX + self.name

    @property
    def attribute(self) -> str:
        """The name the code reads it by: ``settings.<attribute>``."""
        return self.name.lower()


def declare(
    default: T,
    parse: Callable[[str], T],
    doc: str,
    *,
    legacy: tuple[str, Callable[[str], str]] | None = None,
    per_database: bool = False,
) -> T:
    """A settings dataclass's field: its default, and how ``IDEMDASH_<NAME>`` is parsed into its type."""
    return field(default=default, metadata={_DECLARED: (parse, doc, legacy, per_database)})


def declared(cls: type) -> tuple[Setting, ...]:
    """The settings a dataclass declares, in its fields' order."""
    return tuple(Setting(f.name.upper(), f.default, *f.metadata[_DECLARED]) for f in fields(cls))
