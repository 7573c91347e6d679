"""idemdash: an operations dashboard and job runner for PostgreSQL idempotency keys, inbox and outbox tables.

The one import package. Its subpackages are the repository's top-level folders (``dashboard/``,
``queries/``, ``jobs/``, ...), mapped by pyproject.toml's ``[tool.setuptools.package-dir]``: installed, a checkout,
the type checker and the wheel all see the same names, ``idemdash.dashboard``, ``idemdash.queries``, ...
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("idemdash")
except PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"
