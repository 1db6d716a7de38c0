"""JSONL match logs: one JSON object per line, enough to replay a match exactly.

Line kinds (field ``"type"``):

* ``match``  - header: match id, game, seed, rules, time control, bot names per seat;
* ``event``  - a game event with ``seen_by`` (the seats that saw it) and ``hidden``
  (true when not both seats saw it: a hand, a discard, the deck order);
* ``action`` - the action a seat answered (or the referee chose, ``auto``: true) for a decision;
* ``incident`` - an error charged to a seat (timeout, illegal action, protocol error, ...);
* ``result`` - the final result.

No wall-clock time or duration is written, so the same seed and the same bot actions
give a byte-identical log (durations live in the database).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from arena.games.base import BOTH, SeenBy
from protocol.messages import GameEvent

_encoder = msgspec.json.Encoder()


class LogEvent(msgspec.Struct, tag_field="type", tag="event"):
    """An engine event in the log (``seen_by``: seats that saw it; ``hidden``: not both)."""

    seq: int
    seen_by: list[int]
    hidden: bool
    event: GameEvent


class LogAction(msgspec.Struct, tag_field="type", tag="action", omit_defaults=True):
    """A seat's action for one decision; ``auto`` when the referee played it (§E8.1)."""

    seat: int
    decision: str
    action: Any
    auto: bool = False


class LogIncident(msgspec.Struct, tag_field="type", tag="incident"):
    """An error charged to ``seat`` with its protocol ``code`` and a readable ``detail``."""

    seat: int
    code: str
    detail: str


class MatchLog:
    """Writes one match's JSONL log to ``path`` (parent directories are created).

    Use as a context manager or call :meth:`close`. Lines are flushed at close; a crash
    loses at most the unflushed tail of an unfinished match (which is replayed anyway).
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._fh = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.seq = 0

    def write(self, obj: Any) -> None:
        """Append one line (any msgspec-encodable object)."""
        if self._fh is not None:
            self._fh.write(_encoder.encode(obj) + b"\n")

    def event(self, event: GameEvent, seen_by: SeenBy) -> None:
        """Append an engine event with its visibility."""
        self.seq += 1
        self.write(LogEvent(self.seq, list(seen_by), seen_by != BOTH, event))

    def action(self, seat: int, decision: str, action: Any, auto: bool = False) -> None:
        """Append a seat's action."""
        self.write(LogAction(seat, decision, action, auto))

    def incident(self, seat: int, code: str, detail: str) -> None:
        """Append an error charged to a seat."""
        self.write(LogIncident(seat, code, detail))

    def close(self) -> None:
        """Flush and close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> MatchLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Read a match log back as a list of dicts (one per line)."""
    with open(path, "rb") as fh:
        return [msgspec.json.decode(line) for line in fh if line.strip()]
