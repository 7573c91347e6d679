"""How a purge run leaves the database to the application: a duty cycle, backing off from slow batches, and
smaller batches after a timeout.

- **Duty cycle** (``IDEMDASH_PURGE_DUTY_CYCLE``, p percent): after a batch that took t seconds the run pauses at
  least t × (100 − p) / p, so batches hold at most p % of the run's wall time, however fast or slow the server
  is today. ``IDEMDASH_PURGE_PAUSE_MS`` (jittered) is the least pause.
- **Slow batches**: a batch that took more than ``SLOW_FACTOR`` times the usual for its size (a moving average
  over this run's batches of that size: a smaller batch costs more per row, since each has a fixed cost of its
  own) met lock waits, I/O or a busy server: the next batch is half the size and the pause is longer by what
  the batch took. A normal batch grows the size back.
- **Timeouts**: a batch that hit ``statement_timeout`` or ``lock_timeout`` halves the size, and the size stays at
  most that for the rest of the run (a size that timed out will again).
- **What the application feels** (``IDEMDASH_PURGE_LATENCY_BUDGET``, ``jobs.latency``): from the end of the first
  batch, a watch (``jobs.probe``) looks at the application's backends throughout; once it has seen one run a
  statement, the batch size and duty cycle follow their waits for the WAL and for the purge's locks (the configured
  size and duty cycle are the upper bounds). With nobody else there, the run paces exactly as with the budget off.
  The run records what it saw and did (``finish``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from idemdash.jobs.latency import LatencyGovernor
from idemdash.jobs.probe import ApplicationWatch
from idemdash.queries.purge_probe import Pacing

# A batch is slow when its time per row exceeds this many times the usual ...
SLOW_FACTOR = 2.0
# ... once this many batches have said what usual is.
SETTLE_BATCHES = 3
# Weight of the newest batch in the moving average of the time per row.
AVERAGE_WEIGHT = 0.2
# Batches smaller than this share of the current size (the last one of a table, say) say little about speed.
COMPARABLE_SHARE = 0.5


@dataclass
class Pacer:
    batch_size: int  # configured (IDEMDASH_PURGE_BATCH_SIZE)
    floor: int  # smallest batch after timeouts
    duty_cycle: float  # 0 < share <= 1
    pause_ms: int  # the least pause (jittered)
    latency_budget: float = 0.0  # 0: the duty cycle alone
    probe_factory: Callable[[], ApplicationWatch] | None = None  # None: no looking (a dry run)
    size: int = field(init=False)  # the next batch's: the own size, or less while the governor says so
    own: int = field(init=False)  # what slow batches and timeouts leave (grows back after normal ones)
    ceiling: int = field(init=False)  # lowered by timeouts for the rest of the run
    usual: dict[int, float] = field(default_factory=dict)  # batch size -> seconds per row (moving average)
    normal: dict[int, int] = field(default_factory=dict)  # batch size -> normal batches seen
    slow_batches: int = 0
    probe: ApplicationWatch | None = None
    governor: LatencyGovernor | None = None

    def __post_init__(self) -> None:
        self.size = self.own = self.ceiling = self.batch_size

    @property
    def duty(self) -> float:
        """The share of the time batches may take now: the configured one, or less while the application suffers."""
        governor = self.governor
        return governor.duty if governor is not None and self._governed() else self.duty_cycle

    def batch_started(self) -> None:
        if self.probe is not None:
            self.probe.batch_started()

    def batch_ended(self) -> None:
        if self.probe is not None:
            self.probe.batch_ended()

    def after_batch(self, seconds: float, taken: int) -> float:
        """Seconds to pause after a committed batch that took ``seconds`` for ``taken`` rows; sets the next size."""
        pause = self._least_pause() + seconds * (1 - self.duty) / self.duty
        if taken >= max(1, COMPARABLE_SHARE * self.size):
            pause += self._judge(seconds, taken)
        if self.latency_budget and self.probe_factory is not None:
            self._govern()
        return pause

    def _judge(self, seconds: float, taken: int) -> float:
        """A slow batch halves the own size and lengthens the pause by what it took; a normal one grows it back (the
        governor, when it decides, may keep the batches smaller still: ``_resize``)."""
        size = self.size
        per_row = seconds / taken
        usual = self.usual.get(size)
        if usual is not None and self.normal.get(size, 0) >= SETTLE_BATCHES and per_row > SLOW_FACTOR * usual:
            self.slow_batches += 1
            self.own = max(self.floor, size // 2)
            self._resize()
            return seconds
        self.usual[size] = per_row if usual is None else (1 - AVERAGE_WEIGHT) * usual + AVERAGE_WEIGHT * per_row
        self.normal[size] = self.normal.get(size, 0) + 1
        self.own = min(self.ceiling, max(self.own, size) * 2)
        self._resize()
        return 0.0

    def _resize(self) -> None:
        self.size = min(self.own, self.governor.size) if self._governed() and self.governor else self.own

    def _governed(self) -> bool:
        """The governor decides once the watch has seen the application (and still works); before, the run paces
        exactly as with the budget off."""
        return (
            self.governor is not None
            and self.governor.application_seen
            and self.probe is not None
            and self.probe.failed is None
        )

    def _govern(self) -> None:
        """Start watching after the first batch (without waiting for anything), then let what the application's
        backends say set size and duty."""
        if self.probe is None:
            assert self.probe_factory is not None
            self.probe = self.probe_factory()
            self.probe.start()
            self.governor = LatencyGovernor(self.latency_budget, self.floor, self.ceiling, self.duty_cycle)
            return
        assert self.governor is not None
        if self.probe.failed is None:
            self.governor.observe(self.probe.new_looks(), self.size)
        self._resize()

    def finish(self) -> Pacing | None:
        """Stop watching; what the run saw and did, or None when it never watched."""
        probe, governor = self.probe, self.governor
        if probe is None or governor is None:
            return None
        probe.stop()
        if probe.failed is None:
            governor.observe(probe.new_looks(), self.size)
        between, during = governor.recorded()
        return Pacing(
            latency_budget=self.latency_budget,
            baseline_ms=between,
            p99_ms=during,
            probes=governor.looks,
            backoffs=governor.backoffs,
            batch_size=self.size,
            duty_cycle=round(self.duty * 100, 1),
            app_backends=governor.most_active,
            lock_backoffs=governor.lock_backoffs,
        )

    def after_timeout(self) -> bool:
        """A batch hit a timeout: halve the size for the rest of the run. False when already at the floor."""
        if self.size <= self.floor:
            return False
        self.size = self.own = self.ceiling = max(self.floor, self.size // 2)
        if self.governor is not None:
            self.governor.ceiling = self.ceiling
            self.governor.size = min(self.governor.size, self.ceiling)
        return True

    def _least_pause(self) -> float:
        # jittered so that replicas' and tables' purges do not fall into step
        return random.uniform(0.5, 1.5) * self.pause_ms / 1000
