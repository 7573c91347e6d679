"""The latency budget of a purge run (``IDEMDASH_PURGE_LATENCY_BUDGET``): what the application feels, measured by a
commit probe (``jobs.probe``), decides how big the batches are and how much of the time they take.

- **Baseline**: the probe's p99 while idemdash is idle: ``BASELINE_SAMPLES`` probes taken before the second batch
  (a run with one batch never probes), then every quiet probe of the run (no batch in flight, the last one over
  for a while), the latest ``BASELINE_POOL`` of them, so a busier application raises it. It never drifts above
  ``MAX_DRIFT`` times the first one: a purge's own aftermath (autovacuum of what it deleted) is not idle.
- **Target**: the budget times the baseline, for the probes' p99: more than ``OVER_ALLOWED`` of the last
  ``JUDGE_WINDOW`` probes slower than the target (one still waiting counts as soon as it has waited that long, and
  alone once it has waited ``STALL_FACTOR`` times that) means
  the application's commits are too (a single outlier is the 1 % a p99 allows; acting on it halved the batches about
  fifty times a run with the application unharmed): **back off** at once: halve the batch (an application commit that
  lands while a batch writes waits for that
    batch's WAL, so the batch size sets how long the slowest commits wait), and at the smallest batch halve the
    duty cycle (how many commits meet a batch), down to ``MIN_DUTY``;
  Every ``DECIDE_SAMPLES`` probes with none over it, their p99 against it:
  - below ``SPEED_UP_BELOW`` of it: **speed up**: the duty cycle back first, then the batch by a quarter, up to
    the configured ones (``IDEMDASH_PURGE_DUTY_CYCLE``, ``IDEMDASH_PURGE_BATCH_SIZE``), which stay upper bounds;
  - between: hold.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

BASELINE_SAMPLES = 30
BASELINE_POOL = 300
MAX_DRIFT = 2.0
DECIDE_SAMPLES = 25
SPEED_UP_BELOW = 0.8
MIN_DUTY = 0.05
JUDGE_WINDOW = 100   # the probes a backoff is judged on (a second of them at one every 10 ms)
OVER_ALLOWED = 1     # of those, how many may exceed the target: a p99 (1 %), not a maximum
STALL_FACTOR = 3.0   # a probe still waiting this many times the target backs off alone
GROWTH = 1.25


def p99(samples: list[float]) -> float:
    """Nearest-rank 99th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, -(-99 * len(ordered) // 100) - 1)]


@dataclass
class LatencyGovernor:
    budget: float                  # allowed p99 as a multiple of the baseline (> 1)
    floor: int                     # the smallest batch
    ceiling: int                   # the largest batch (the configured size, lowered by timeouts)
    max_duty: float                # the configured duty cycle
    size: int = field(init=False)
    duty: float = field(init=False)
    first_baseline: float | None = None
    quiet: deque[float] = field(default_factory=lambda: deque(maxlen=BASELINE_POOL))
    window: list[float] = field(default_factory=list)
    recent: deque[bool] = field(default_factory=lambda: deque(maxlen=JUDGE_WINDOW))  # each over the target?
    backoffs: int = 0
    speedups: int = 0
    _counted: int = -1             # the waiting probe a backoff was for (one backoff per slow probe)

    def __post_init__(self) -> None:
        self.size, self.duty = self.ceiling, self.max_duty

    @property
    def baseline(self) -> float | None:
        if self.first_baseline is None:
            return None
        return min(p99(list(self.quiet)), MAX_DRIFT * self.first_baseline)

    def set_baseline(self, samples: list[tuple[float, bool]]) -> None:
        """The probes taken before the second batch, with nothing of idemdash's in flight."""
        values = [ms for ms, _ in samples]
        if values:
            self.quiet.extend(values)
            self.first_baseline = p99(values)

    def observe(self, samples: list[tuple[float, bool]], size: int, waiting: tuple[int, float] | None = None) -> None:
        """New probes, (milliseconds, quiet), and the one ``waiting`` now (its number, milliseconds so far);
        ``size`` is the batch size the pacer would use now (it may have lowered it after a slow batch or a
        timeout)."""
        self.size = min(self.size, size, self.ceiling)
        if self.first_baseline is None:
            return
        for ms, quiet in samples:
            if quiet:
                self.quiet.append(ms)
        target = self.budget * (self.baseline or 0.0)
        for ms, _ in samples:
            self.window.append(ms)
            self.recent.append(ms > target)
        stalled = waiting is not None and waiting[1] > target and waiting[0] != self._counted
        # one waiting STALL_FACTOR times the target is no outlier: it backs off alone
        weight = ((1 + OVER_ALLOWED if waiting[1] > STALL_FACTOR * target else 1)  # type: ignore[index]
                  if stalled else 0)
        if sum(self.recent) + weight > OVER_ALLOWED:
            if stalled:
                self._counted = waiting[0]  # type: ignore[index]
            self.window = []
            self.recent.clear()
            self._back_off()
            return
        if len(self.window) < DECIDE_SAMPLES:
            return
        seen, self.window = p99(self.window), []
        if seen < SPEED_UP_BELOW * target:
            if self.duty < self.max_duty:
                self.duty = min(self.max_duty, self.duty * 2)
                self.speedups += 1
            elif self.size < self.ceiling:
                self.size = min(self.ceiling, max(self.size + 1, int(self.size * GROWTH)))
                self.speedups += 1

    def _back_off(self) -> None:
        self.backoffs += 1
        if self.size > self.floor:
            self.size = max(self.floor, self.size // 2)
        else:
            self.duty = max(MIN_DUTY, self.duty / 2)
