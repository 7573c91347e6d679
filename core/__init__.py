"""The core under everything else: settings, formatting and triage, importable without Flask or a database.

Layers (docs/architecture.md; enforced by import-linter): ``dashboard`` (web and CLI) → ``jobs`` / ``checks``
/ ``demo`` → ``queries`` → ``core``. Nothing here imports a higher layer.
"""

if not __name__.startswith("idemdash."):  # imported by its old top-level name, from a checkout
    raise ImportError(f"{__name__!r} is 'idemdash.core' since idemdash 0.2: import idemdash.core")

