"""What a purge run's pacer did, in plain words for /purges, with the exact numbers for a hover.

The pacer (jobs/latency.py) times a tiny commit while the run works and slows the run (halves its batch, then the
share of time it works) when those commits take longer than IDEMDASH_PURGE_LATENCY_BUDGET times their idle time.
"1.0× of 1.5× allowed · 0 backoffs · ended at 1,000 rows, 50 %" said that to nobody who had not read the code.
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


def _times(value: float) -> str:
    return f"{value:.1f}×"


def _pausing(duty_percent: float) -> str:
    pausing = round(100 - duty_percent)
    if pausing <= 0:
        return "without pausing"
    if pausing == 50:
        return "pausing half the time"
    return f"pausing {pausing} % of the time"


def in_words(run: Paced) -> str | None:
    """"Kept the application's commits within 1.5× their usual time; never slowed down; batches of 1,000 rows at
    the end, pausing half the time"; None when the run never timed a commit."""
    if not run.probes or not run.probe_baseline_ms or run.probe_p99_ms is None:
        return None
    ratio = run.probe_p99_ms / run.probe_baseline_ms
    budget = run.latency_budget or 0.0
    if not budget:
        commits = f"the application's commits took {_times(ratio)} their usual time (no limit set)"
    elif ratio <= budget:
        commits = f"kept the application's commits within {_times(budget)} their usual time"
    else:
        commits = (f"the application's commits took {_times(ratio)} their usual time, more than the "
                   f"{_times(budget)} allowed")
    backoffs = run.backoffs or 0
    times = "once" if backoffs == 1 else f"{backoffs:,} times"
    slowed = f"slowed down {times}" if backoffs else "never slowed down"
    parts = [commits, slowed]
    if run.final_batch_size is not None and run.final_duty_cycle is not None:
        parts.append(f"batches of {plural(run.final_batch_size, 'row')} at the end, "
                     f"{_pausing(run.final_duty_cycle)}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:]


def exact(run: Paced) -> str:
    """The numbers behind the words (the JSON API has each as a field)."""
    parts = [f"commit p99 {run.probe_baseline_ms or 0:.1f} ms idle, {run.probe_p99_ms or 0:.1f} ms during the run"]
    if run.probe_baseline_ms and run.probe_p99_ms is not None:
        parts.append(f"{_times(run.probe_p99_ms / run.probe_baseline_ms)} of {_times(run.latency_budget or 0)} "
                     "allowed (IDEMDASH_PURGE_LATENCY_BUDGET)")
    parts.append(f"{plural(run.probes or 0, 'probe')}, {plural(run.backoffs or 0, 'backoff')} (batch or duty "
                 "cycle halved)")
    if run.final_batch_size is not None and run.final_duty_cycle is not None:
        parts.append(f"final batch size {run.final_batch_size:,}, duty cycle {run.final_duty_cycle:g} %")
    return "; ".join(parts)
