"""The demo's parts: the live workload simulator, the history backfill and the demo runner, which drive the
reference schema the way an application would. None of it is needed to run idemdash on a real database."""
