"""A checker for hidden information: every card a seat is told about must be one that seat
could have seen at the table (ecarte.md §E4.5): its own hand and draws, the turn-up, cards
played, the draw for first dealer, the card that set the target, a king announced to it."""

from __future__ import annotations

import re
from typing import Any

CARD = re.compile(r"^[6789TJQKA][cdhs]$")


def cards_in(obj: Any) -> set[str]:
    """Every string in ``obj`` (nested dicts/lists) that looks like a card."""
    out: set[str] = set()
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str) and CARD.match(x):
            out.add(x)
    return out


class SeatKnowledge:
    """Replays the messages one seat received (wire dicts) and fails on a leak."""

    def __init__(self, seat: int) -> None:
        self.seat = seat
        self.known: set[str] = set()

    def _leak(self, what: str, msg: Any, cards: set[str]) -> None:
        raise AssertionError(f"seat {self.seat} was told {sorted(cards)} it cannot know, in {what}: {msg}")

    def event(self, ev: dict[str, Any]) -> None:
        """Check one game event sent to this seat, then learn from it."""
        kind = ev["kind"]
        me = self.seat
        if kind == "deck":
            self._leak("the deck order", ev, cards_in(ev))
        if kind == "deal_start":
            self.known = {ev["turn_up"]}
            return
        if kind in ("dealer_draw", "target", "play"):
            self.known |= cards_in(ev)
            return
        if kind == "hand":
            if ev["seat"] != me:
                self._leak("another seat's hand", ev, cards_in(ev))
            self.known |= set(ev["cards"])
            return
        if kind == "exchange":
            if ev.get("discarded") is not None or ev.get("drawn") is not None:
                if ev["seat"] != me:
                    self._leak("another seat's exchange", ev, cards_in(ev))
                self.known |= set(ev.get("drawn") or [])
            return
        if kind == "king":
            if not ev.get("announced", True) and ev["seat"] != me:
                self._leak("a king declined by the other seat", ev, {ev["card"]})
            if ev.get("announced", True):
                self.known.add(ev["card"])  # shown at the table
        unknown = cards_in(ev) - self.known
        if unknown:
            self._leak(f"event {kind}", ev, unknown)

    def state(self, state: dict[str, Any]) -> None:
        """Check a request's ``state`` view."""
        unknown = cards_in(state) - self.known
        if unknown:
            self._leak("a request's state", state, unknown)

    def message(self, msg: dict[str, Any]) -> None:
        """Check any server message received by this seat."""
        t = msg["type"]
        if t == "event":
            self.event(msg["event"])
        elif t == "request":
            self.state(msg["state"])
            unknown = cards_in(msg["legal"]) - self.known
            if unknown:
                self._leak("a request's legal list", msg["legal"], unknown)
        else:
            unknown = cards_in(msg) - self.known
            if unknown:
                self._leak(f"message {t}", msg, unknown)
