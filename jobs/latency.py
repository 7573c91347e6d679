"""The latency budget of a purge run (``IDEMDASH_PURGE_LATENCY_BUDGET``): what the application's own backends say,
read from ``pg_stat_activity`` by ``jobs.probe``, decides how big the batches are and how much of the time they take.

Each look (one every ``jobs.probe.INTERVAL``) counts the application's backends running a statement, those of them
waiting for the WAL (``IO:WalSync``, ``IO:WalWrite``, ``LWLock:WALWrite``, ``LWLock:WALInsert``, ``IPC:SyncRep``:
their commits) or for a lock one of the purge's backends holds, and how long the longest-waiting of those has been
running its statement. A look is **busy** when a batch was in flight (or had just ended) and **quiet** otherwise.

- **No application, no governing.** Until a look has seen an application backend running a statement, the run
  paces exactly as with the budget off (its duty cycle and batch size; ``jobs.pacing``). A purge's own commits are
  not evidence: a database nobody else uses is never throttled (the commit probe this replaced read its own
  noise as the application's pain and ran 3-7x slower on an idle database).
- **Baseline**: the ``QUANTILE`` of the longest wait over the latest ``BASELINE_POOL`` quiet looks in which the
  application ran a statement (at least ``MIN_BASELINE_MS``): what its commits wait for when no batch runs.
- **Back off** when:
  - **WAL**: over the last ``DECIDE_LOOKS`` busy looks in which the application ran a statement, that quantile
    is above the budget times the baseline (a commit that lands while a batch's WAL is being flushed waits for
    it). The pause grows first: the duty cycle halves, down to ``WAL_DUTY_SHARE`` of the configured one, and only
    then the batch halves (then the duty cycle again, down to ``MIN_DUTY``). The frontier (docs/benchmarks.md)
    says why: what the application's commits feel is how close together the purge's commits come, not how many
    rows each carries (batches of 2,000 rows: 2.6x the claims' p99 without a pause, 1.4x with 20 ms), and halving
    the batch at a fixed duty cycle halves the pause with it, so the run committed as often as before.
  - **lock**: an application statement has waited longer than that target (and at least ``LOCK_WAIT_MS``) for a
    lock one of the purge's backends holds. A batch holds its row locks until it commits, so the batch halves
    (a longer pause would not shorten the wait).
- **Speed up** when a window's quantile is below ``SPEED_UP_BELOW`` of the target: the batch first, by a quarter,
  then the duty cycle, up to the configured ones (``IDEMDASH_PURGE_BATCH_SIZE``, ``IDEMDASH_PURGE_DUTY_CYCLE``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

BASELINE_POOL = 300
MIN_QUIET = 25  # quiet looks before a baseline means anything
DECIDE_LOOKS = 50  # busy looks a decision is made on
QUANTILE = 90  # of the longest wait per look: robust with 50 looks, still the tail
MIN_BASELINE_MS = 0.5  # an application that never waits between batches: the least baseline
LOCK_WAIT_MS = 5.0
SPEED_UP_BELOW = 0.8
MIN_DUTY = 0.05
WAL_DUTY_SHARE = 0.25  # a WAL backoff lowers the duty cycle to this share of the configured one first
GROWTH = 1.25
RECORDED = 200_000


def quantile(samples: list[float], q: float) -> float:
    """Nearest-rank q-th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, -(-int(q) * len(ordered) // 100) - 1)]


def p99(samples: list[float]) -> float:
    return quantile(samples, 99)


@dataclass(frozen=True)
class Look:
    """What the application's backends were doing at one moment (``queries.purge_probe.look_at_application``)."""

    active: int  # running a statement
    wal_waits: int  # of them waiting for the WAL
    lock_waits: int  # of them waiting for a lock the purge holds
    longest_ms: float  # how long the longest-waiting of those has run its statement (0: none waits)
    busy: bool = False  # a batch was in flight or had just ended


@dataclass
class LatencyGovernor:
    budget: float  # allowed wait quantile during batches as a multiple of the baseline (> 1)
    floor: int  # the smallest batch
    ceiling: int  # the largest batch (the configured size, lowered by timeouts)
    max_duty: float  # the configured duty cycle
    size: int = field(init=False)
    duty: float = field(init=False)
    looks: int = 0
    most_active: int = 0  # the most application statements seen running at once
    quiet: deque[float] = field(default_factory=lambda: deque(maxlen=BASELINE_POOL))
    window: list[float] = field(default_factory=list)
    # every look's longest wait, busy and quiet (the run's record; about half an hour of looks)
    busy_seen: deque[float] = field(default_factory=lambda: deque(maxlen=RECORDED))
    quiet_seen: deque[float] = field(default_factory=lambda: deque(maxlen=RECORDED))
    backoffs: int = 0
    lock_backoffs: int = 0
    speedups: int = 0
    current: int = field(init=False)  # the size the run used last

    def __post_init__(self) -> None:
        self.size, self.duty = self.ceiling, self.max_duty
        self.current = self.ceiling

    @property
    def application_seen(self) -> bool:
        return self.most_active > 0

    @property
    def baseline(self) -> float | None:
        """The quiet looks' quantile, once there are enough of them."""
        if len(self.quiet) < MIN_QUIET:
            return None
        return max(MIN_BASELINE_MS, quantile(list(self.quiet), QUANTILE))

    def observe(self, looks: list[Look], size: int) -> None:
        """New looks; ``size`` is the batch size the run used last (its own may be smaller than this governor's,
        after a slow batch or a timeout: a backoff halves the smaller)."""
        self.current = min(size, self.ceiling)
        backed_off = False
        for look in looks:
            self.looks += 1
            self.most_active = max(self.most_active, look.active)
            if look.active == 0:
                continue  # nobody ran a statement: says nothing of their waits
            (self.window if look.busy else self.quiet).append(look.longest_ms)
            (self.busy_seen if look.busy else self.quiet_seen).append(look.longest_ms)
            target = self.budget * (self.baseline or MIN_BASELINE_MS)
            if not backed_off and look.lock_waits and look.longest_ms > max(LOCK_WAIT_MS, target):
                backed_off = True  # once per batch: the next one is smaller
                self.lock_backoffs += 1
                self._back_off(shrink_first=True)
        if backed_off:
            self.window = []
            return
        baseline = self.baseline
        if baseline is None or len(self.window) < DECIDE_LOOKS:
            return
        seen, self.window = quantile(self.window, QUANTILE), []
        target = self.budget * baseline
        if seen > target:
            self._back_off(shrink_first=False)
        elif seen < SPEED_UP_BELOW * target:
            if self.size < self.ceiling:
                self.size = min(self.ceiling, max(self.size + 1, int(self.size * GROWTH)))
                self.speedups += 1
            elif self.duty < self.max_duty:
                self.duty = min(self.max_duty, self.duty * 2)
                self.speedups += 1

    def _back_off(self, shrink_first: bool) -> None:
        """Wait for the WAL: a longer pause first (down to ``WAL_DUTY_SHARE`` of the configured duty cycle), then a
        smaller batch. Wait for a lock: a smaller batch first. At the smallest batch, a longer pause."""
        self.backoffs += 1
        size = min(self.size, self.current)
        lengthen = max(MIN_DUTY, self.max_duty * WAL_DUTY_SHARE)
        if not shrink_first and self.duty / 2 >= lengthen - 1e-9:
            self.duty = max(lengthen, self.duty / 2)
        elif size > self.floor:
            self.size = max(self.floor, size // 2)
        else:
            self.duty = max(MIN_DUTY, self.duty / 2)

    def recorded(self) -> tuple[float | None, float | None]:
        """The run's waits between and during batches (the quantile over every look in which the application ran
        a statement), for its record."""
        return (
            quantile(list(self.quiet_seen), QUANTILE) if self.quiet_seen else None,
            quantile(list(self.busy_seen), QUANTILE) if self.busy_seen else None,
        )
