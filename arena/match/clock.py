"""Time controls: a per-decision limit plus an optional bank per match (ecarte.md §E8.1).

Pure arithmetic: what a decision that took ``elapsed_ms`` costs. What is measured as
``elapsed_ms`` (from the start of the request's write to the answer's arrival at the server's
kernel, the server's own queue excluded) is :mod:`arena.match.fairclock`'s business; the policy
that uses this clock is :mod:`arena.match.core`'s. A decision may take ``move_ms``; time beyond
that is drawn from the bank. ``grace_ms`` absorbs transport jitter and is never announced as
usable time.
"""

from __future__ import annotations

from protocol.messages import TimeControl


class Clock:
    """One seat's clock for one match.

    ``time_ms`` and ``bank_ms`` are what the next ``request`` announces; ``deadline_ms`` is
    when the server gives up waiting (announced time + grace). :meth:`charge` records how
    long a decision took and returns False if it was over the limit (a timeout).
    """

    def __init__(self, control: TimeControl) -> None:
        if control.move_ms <= 0 or control.bank_ms < 0 or control.grace_ms < 0:
            raise ValueError("move_ms must be > 0; bank_ms and grace_ms >= 0")
        self.control = control
        self.bank_ms = control.bank_ms
        self.used_ms = 0
        self.decisions = 0

    @property
    def time_ms(self) -> int:
        """Time allowed for the next decision before the bank is touched (ms)."""
        return self.control.move_ms

    @property
    def deadline_ms(self) -> int:
        """Time after which the server stops waiting for the answer (ms)."""
        return self.control.move_ms + self.bank_ms + self.control.grace_ms

    def charge(self, elapsed_ms: float) -> bool:
        """Record a decision that took ``elapsed_ms``; return False if it exceeded the move
        time plus the bank plus the grace (a timeout). Over-time within that comes off the
        bank; the grace is never charged."""
        self.decisions += 1
        self.used_ms += int(elapsed_ms)
        over = elapsed_ms - self.control.move_ms
        if over <= 0:
            return True
        if over <= self.bank_ms:
            self.bank_ms -= int(over + 0.999)
            return True
        within_grace = over <= self.bank_ms + self.control.grace_ms
        self.bank_ms = 0
        return within_grace
