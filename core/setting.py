"""What a setting is: its name (read from ``IDEMDASH_<NAME>``), default, parser and meaning; the settings themselves
are declared in ``core/settings.py`` and ``core/setting_jobs.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PREFIX = "IDEMDASH_"


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
