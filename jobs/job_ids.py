"""A scheduled job's id: one set of jobs per database."""

from __future__ import annotations

from idemdash.core.databases import DEFAULT
from idemdash.queries.target import Target


def job_id(base: str, target: Target) -> str:
    """A job's scheduler id: ``base`` for the one database of a deployment without a config file, else
    ``base@<database>`` (each database has its own jobs, so one failing never stops the others')."""
    return base if target.name == DEFAULT else f"{base}@{target.name}"
