"""The demo's parts: the live workload simulator, the history backfill and the demo runner, which drive the
reference schema the way an application would. None of it is needed to run idemdash on a real database."""

if not __name__.startswith("idemdash."):  # imported by its old top-level name, from a checkout
    raise ImportError(f"{__name__!r} is 'idemdash.workload' since idemdash 0.2: import idemdash.workload")

