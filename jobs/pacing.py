"""How a purge run leaves the database to the application: a duty cycle, backing off from slow batches, and
smaller batches after a timeout.

- **Duty cycle** (``IDEMDASH_PURGE_DUTY_CYCLE``, p percent): after a batch that took t seconds the run pauses at
  least t × (100 − p) / p, so batches hold at most p % of the run's wall time, however fast or slow the server
  is today. ``IDEMDASH_PURGE_PAUSE_MS`` (jittered) is the least pause.
- **Slow batches**: a batch whose time per row is more than ``SLOW_FACTOR`` times the usual (a moving average
  over this run's batches) met lock waits, I/O or a busy server: the next batch is half the size and the pause
  is longer by what the batch took. Later normal batches grow the size back.
- **Timeouts**: a batch that hit ``statement_timeout`` or ``lock_timeout`` halves the size, and the size stays at
  most that for the rest of the run (a size that timed out will again).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

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
    batch_size: int          # configured (IDEMDASH_PURGE_BATCH_SIZE)
    floor: int               # smallest batch after timeouts
    duty_cycle: float        # 0 < share <= 1
    pause_ms: int            # the least pause (jittered)
    size: int = field(init=False)
    ceiling: int = field(init=False)       # lowered by timeouts for the rest of the run
    usual: float | None = None             # seconds per row of a normal batch (moving average)
    normal_batches: int = 0
    slow_batches: int = 0

    def __post_init__(self) -> None:
        self.size = self.ceiling = self.batch_size

    def after_batch(self, seconds: float, taken: int) -> float:
        """Seconds to pause after a committed batch that took ``seconds`` for ``taken`` rows; sets the next size."""
        pause = self._least_pause() + seconds * (1 - self.duty_cycle) / self.duty_cycle
        if taken < max(1, COMPARABLE_SHARE * self.size):
            return pause
        per_row = seconds / taken
        if self.usual is not None and self.normal_batches >= SETTLE_BATCHES and per_row > SLOW_FACTOR * self.usual:
            self.slow_batches += 1
            self.size = max(self.floor, self.size // 2)
            return pause + seconds
        self.usual = per_row if self.usual is None else (1 - AVERAGE_WEIGHT) * self.usual + AVERAGE_WEIGHT * per_row
        self.normal_batches += 1
        self.size = min(self.ceiling, self.size * 2)
        return pause

    def after_timeout(self) -> bool:
        """A batch hit a timeout: halve the size for the rest of the run. False when already at the floor."""
        if self.size <= self.floor:
            return False
        self.size = self.ceiling = max(self.floor, self.size // 2)
        return True

    def _least_pause(self) -> float:
        # jittered so that replicas' and tables' purges do not fall into step
        return random.uniform(0.5, 1.5) * self.pause_ms / 1000
