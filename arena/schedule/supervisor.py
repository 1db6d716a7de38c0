"""Supervision of the bots a contest server launches itself (``arena bots submit``).

A submitted bot that cannot start, or dies soon after it starts, is relaunched after a back-off
that doubles with each failure in a row: 1 s, 2 s, 4 s, ... capped at :data:`CAP_S` (60 s). After
:data:`MAX_FAILURES` (8) failures in a row it is *disabled*: no longer launched until it is
submitted again (``arena bots submit``) or the server restarts. A bot that stayed up for
:data:`HEALTHY_S` (60 s) before dying starts again from a clean count.

States (``arena bots list``, the web page, ``/metrics`` as ``arena_bot_state``):

* ``running``  - its process is alive;
* ``backoff``  - it failed; the next launch is at ``next_launch``;
* ``disabled`` - too many failures in a row;
* ``stopped``  - the server is not running it (set at shutdown).

Each failure keeps the last lines of the bot's output (:func:`arena.schedule.botlog.tail`), which usually
say why. The policy is pure (a clock is passed in); :class:`arena.schedule.contest.Contest` calls it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from arena.metrics import METRICS

BASE_S = 1.0
CAP_S = 60.0
MAX_FAILURES = 8
HEALTHY_S = 60.0
STATES = ("running", "backoff", "disabled", "stopped")


class BotHealth(msgspec.Struct):
    """What the supervisor knows of one bot. Times in seconds of the supervisor's clock."""

    name: str
    state: str = "backoff"
    failures: int = 0
    next_launch: float = 0.0
    launched_at: float = 0.0
    last_output: list[str] = msgspec.field(default_factory=list)


class Supervisor:
    """Back-off and disabling of launched bots; see the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, base_s: float = BASE_S, cap_s: float = CAP_S,
                 max_failures: int = MAX_FAILURES, healthy_s: float = HEALTHY_S) -> None:
        self.clock = clock
        self.base_s, self.cap_s, self.max_failures, self.healthy_s = base_s, cap_s, max_failures, healthy_s
        self.bots: dict[str, BotHealth] = {}

    def health(self, name: str) -> BotHealth:
        """The record of ``name`` (created, due at once, if new)."""
        if name not in self.bots:
            self.bots[name] = BotHealth(name)
        return self.bots[name]

    def due(self, name: str) -> bool:
        """True if ``name`` should be launched now (not running, not disabled, back-off over)."""
        h = self.health(name)
        return h.state in ("backoff", "stopped") and self.clock() >= h.next_launch

    def launched(self, name: str) -> None:
        """Its process started."""
        h = self.health(name)
        h.state, h.launched_at = "running", self.clock()

    def failed(self, name: str, last_output: list[str]) -> BotHealth:
        """It could not start, or its process is found dead: count a failure (a fresh count
        if it had been up for ``healthy_s``), back off or disable it. Returns its record."""
        h = self.health(name)
        now = self.clock()
        if h.state == "running" and now - h.launched_at >= self.healthy_s:
            h.failures = 0
        h.failures += 1
        h.last_output = list(last_output)
        if h.failures >= self.max_failures:
            h.state = "disabled"
        else:
            h.state = "backoff"
            h.next_launch = now + min(self.cap_s, self.base_s * 2 ** (h.failures - 1))
        return h

    def reset(self, name: str) -> None:
        """Forget its failures (it was submitted again)."""
        self.bots.pop(name, None)

    def stopped(self) -> None:
        """The server stops: every bot not disabled is ``stopped``."""
        for h in self.bots.values():
            if h.state != "disabled":
                h.state = "stopped"


def publish(store, supervisor: Supervisor, connected: set[str]) -> None:  # noqa: ANN001 - an arena.store.sqlite.Store
    """Write every supervised bot's state, and who is connected, to the database (for ``arena
    bots list`` run from another process) and to ``/metrics`` (``arena_bot_state{bot,state}``
    1 for the current state, ``arena_bot_failures{bot}``, ``arena_bot_connected{bot}``)."""
    now_wall, now = time.time(), supervisor.clock()
    rows = []
    for h in supervisor.bots.values():
        due = now_wall + max(0.0, h.next_launch - now) if h.state == "backoff" else None
        rows.append((h.name, h.state, h.failures, due, "\n".join(h.last_output), int(h.name in connected)))
        for state in STATES:
            METRICS.bot_state.labels(h.name, state).set(1 if h.state == state else 0)
        METRICS.bot_failures.labels(h.name).set(h.failures)
    for name in connected - set(supervisor.bots):
        rows.append((name, "connected", 0, None, "", 1))
    for name in connected | set(supervisor.bots):
        METRICS.bot_connected.labels(name).set(1 if name in connected else 0)
    store.save_bot_status(rows)
