"""The core under everything else: settings, formatting and triage, importable without Flask or a database.

Layers (docs/architecture.md; enforced by import-linter): ``dashboard`` (web and CLI) → ``jobs`` / ``checks``
/ ``demo`` → ``queries`` → ``core``. Nothing here imports a higher layer.
"""
