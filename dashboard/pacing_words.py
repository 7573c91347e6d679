"""What a purge run's governor saw and did, in plain words for /purges, with the exact numbers for a hover.

The governor (jobs/latency.py) looks at the application's own backends while the run works: how many run a
statement, and how long those waiting for the WAL (their commits) or for a lock the purge holds have been waiting.
With nobody there it never slows down; otherwise it works a smaller share of the time (then in smaller batches)
when the WAL waits grow past IDEMDASH_PURGE_LATENCY_BUDGET times what they are between batches, and in smaller
batches first when a statement waits for the purge's lock. Runs recorded before it looked at
the application (app_backends null) timed a commit probe of their own, and are said as they were.
"""

from __future__ import annotations

from typing import Protocol

from idemdash.core.formatting import plural


class Paced(Protocol):
    latency_budget: float | None
    probe_baseline_ms: float | None
    probe_p99_ms: float | None
    probes: int | None
    backoffs: int | None
    final_batch_size: int | None
    final_duty_cycle: float | None
    app_backends: int | None
    lock_backoffs: int | None


def _times(value: float) -> str:
    return f"{value:.1f}×"


def _pausing(duty_percent: float) -> str:
    pausing = round(100 - duty_percent)
    if pausing <= 0:
        return "without pausing"
    if pausing == 50:
        return "pausing half the time"
    return f"pausing {pausing} % of the time"


def _slowed(run: Paced) -> str:
    backoffs = run.backoffs or 0
    if not backoffs:
        return "never slowed down"
    text = f"slowed down {'once' if backoffs == 1 else f'{backoffs:,} times'}"
    locks = run.lock_backoffs or 0
    if locks:
        text += (
            " (" + ("once" if locks == 1 else f"{locks:,} times") + " because an application statement "
            "waited for a lock the purge held)"
        )
    return text


def _ending(run: Paced) -> list[str]:
    if run.final_batch_size is None or run.final_duty_cycle is None:
        return []
    return [f"batches of {plural(run.final_batch_size, 'row')} at the end, {_pausing(run.final_duty_cycle)}"]


def _sentence(parts: list[str]) -> str:
    text = "; ".join(parts)
    return text[0].upper() + text[1:]


def in_words(run: Paced) -> str | None:
    """ "Nobody else used the database, so it never slowed down; …" or "saw up to 2 application statements at once;
    their commits waited 0.9 ms for the WAL between batches and 1.4 ms during them, within the 1.5× allowed; never
    slowed down; …"; None when the run never watched."""
    if run.app_backends is None:
        return _probe_words(run)
    if not run.probes:
        return None
    if run.app_backends == 0:
        return _sentence(
            [
                f"nobody else used the database while it ran ({plural(run.probes, 'look')} at its "
                "sessions), so it never slowed down",
                *_ending(run),
            ]
        )
    seen = f"saw up to {plural(run.app_backends, 'application statement')} running at once"
    parts = [seen]
    between, during = run.probe_baseline_ms, run.probe_p99_ms
    if during is not None:
        waits = f"their commits waited {during:.1f} ms for the WAL or the purge's locks while batches ran" + (
            f" and {between:.1f} ms between them" if between is not None else ""
        )
        budget = run.latency_budget or 0.0
        if between and budget:
            waits += (
                f", within the {_times(budget)} allowed"
                if during <= budget * max(between, 0.5)
                else f", more than the {_times(budget)} allowed"
            )
        parts.append(waits)
    return _sentence([*parts, _slowed(run), *_ending(run)])


def _probe_words(run: Paced) -> str | None:
    """A run recorded by the commit probe that came before (its probe_* are a probe's p99)."""
    if not run.probes or not run.probe_baseline_ms or run.probe_p99_ms is None:
        return None
    ratio = run.probe_p99_ms / run.probe_baseline_ms
    budget = run.latency_budget or 0.0
    if not budget:
        commits = f"the application's commits took {_times(ratio)} their usual time (no limit set)"
    elif ratio <= budget:
        commits = f"kept the application's commits within {_times(budget)} their usual time"
    else:
        commits = (
            f"the application's commits took {_times(ratio)} their usual time, more than the {_times(budget)} allowed"
        )
    return _sentence([commits, _slowed(run), *_ending(run)])


def exact(run: Paced) -> str:
    """The numbers behind the words (the JSON API has each as a field)."""
    ms = lambda v: "-" if v is None else f"{v:.1f} ms"  # noqa: E731
    if run.app_backends is None:
        parts = [f"commit p99 {run.probe_baseline_ms or 0:.1f} ms idle, {run.probe_p99_ms or 0:.1f} ms during the run"]
        if run.probe_baseline_ms and run.probe_p99_ms is not None:
            parts.append(
                f"{_times(run.probe_p99_ms / run.probe_baseline_ms)} of {_times(run.latency_budget or 0)} "
                "allowed (IDEMDASH_PURGE_LATENCY_BUDGET)"
            )
        parts.append(
            f"{plural(run.probes or 0, 'probe')}, {plural(run.backoffs or 0, 'backoff')} (batch or duty cycle halved)"
        )
    else:
        parts = [
            f"{plural(run.probes or 0, 'look')} at pg_stat_activity, at most {run.app_backends} application "
            "statements running at once",
            f"waits for the WAL or the purge's locks (90th percentile) {ms(run.probe_baseline_ms)} between "
            f"batches, {ms(run.probe_p99_ms)} during; {_times(run.latency_budget or 0)} allowed "
            "(IDEMDASH_PURGE_LATENCY_BUDGET)",
            f"{plural(run.backoffs or 0, 'backoff')} (batch or duty cycle halved), {run.lock_backoffs or 0} for locks",
        ]
    if run.final_batch_size is not None and run.final_duty_cycle is not None:
        parts.append(f"final batch size {run.final_batch_size:,}, duty cycle {run.final_duty_cycle:g} %")
    return "; ".join(parts)
