"""Admission control: no new match starts while the server is behind (docs/protocol.md §10.4).

A bot's clock excludes the time its answer waits for the server (:mod:`arena.match.fairclock`),
but a saturated server still slows every match and makes the exclusion an estimate. So the
scheduler keeps the server below saturation: before a match starts, :func:`admit` waits while
the event loop's smoothed turn (:attr:`arena.match.fairclock.LoopWatch.lag_ms`, the time a newly
arrived line may wait before its reader runs) exceeds ``Limits.admission_lag_ms``, looking again
every ``Limits.admission_poll_ms``. A match always starts when none is in play, so a machine
slow for other reasons still makes progress, one match at a time.
"""

from __future__ import annotations

import trio

from arena.match import fairclock
from arena.match.limits import LIMITS, Limits
from arena.match.referee import Referee

STATS = {"held": 0}
"""Match starts held so far in this process (for ``make bench`` and the logs)."""


async def admit(limits: Limits = LIMITS) -> float:
    """Wait until a new match may start; return how long it was held (seconds)."""
    watch = fairclock.watch()
    if watch.lag_ms <= limits.admission_lag_ms or Referee.playing == 0:
        return 0.0
    t0 = trio.current_time()
    STATS["held"] += 1
    while watch.lag_ms > limits.admission_lag_ms and Referee.playing > 0:
        await trio.sleep(limits.admission_poll_ms / 1000)
    return trio.current_time() - t0


__all__ = ["STATS", "admit"]
