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
    usual: dict[int, float] = field(default_factory=dict)   # batch size -> seconds per row (moving average)
    normal: dict[int, int] = field(default_factory=dict)    # batch size -> normal batches seen
    slow_batches: int = 0

    def __post_init__(self) -> None:
        self.size = self.ceiling = self.batch_size

    def after_batch(self, seconds: float, taken: int) -> float:
        """Seconds to pause after a committed batch that took ``seconds`` for ``taken`` rows; sets the next size."""
        pause = self._least_pause() + seconds * (1 - self.duty_cycle) / self.duty_cycle
        size = self.size
        if taken < max(1, COMPARABLE_SHARE * size):
            return pause
        per_row = seconds / taken
        usual = self.usual.get(size)
        if usual is not None and self.normal.get(size, 0) >= SETTLE_BATCHES and per_row > SLOW_FACTOR * usual:
            self.slow_batches += 1
            self.size = max(self.floor, size // 2)
            return pause + seconds
        self.usual[size] = per_row if usual is None else (1 - AVERAGE_WEIGHT) * usual + AVERAGE_WEIGHT * per_row
        self.normal[size] = self.normal.get(size, 0) + 1
        self.size = min(self.ceiling, size * 2)
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
