"""Scheduled jobs: retention purges and metric snapshots, run by APScheduler."""

if not __name__.startswith("idemdash."):  # imported by its old top-level name, from a checkout
    raise ImportError(f"{__name__!r} is 'idemdash.jobs' since idemdash 0.2: import idemdash.jobs")

