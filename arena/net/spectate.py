"""Live spectator feeds: every match's public events as they happen, hidden cards later.

The referee calls :meth:`SpectatorHub.event` for every engine event (synchronously, never
waiting). Public events (seen by both seats) go at once to every subscriber of that match as
``spectate`` messages. Hidden events (a hand, the cards of an exchange, the pack) are held
back and released together as one ``reveal`` message only when they can no longer help a bot:

* after the deal they belong to is over, plus ``reveal_delay_s``;
* and, for a match in a duplicate pair (ecarte.md §E8.2), only after *both* matches of the pair
  are over: the twin replays the same pack with the seats swapped, so the first match's hidden
  cards would tell a bot of the second match its opponent's hand.

A subscriber is a bounded queue (:class:`Subscriber`); one that does not keep up is marked
``dropped`` and disconnected by its transport, so a slow spectator never slows a match.
The same hub feeds TCP spectators (``arena watch``) and the web page (server-sent events).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import msgspec
import trio

from arena.metrics import METRICS
from protocol.framing import encode
from protocol.messages import DealEnd, Exchange, LiveMatch, Reveal, Rules, Spectate, TimeControl, Watch, WatchEnd

BOTH = (0, 1)


class Subscriber:
    """One spectator's feed: a bounded queue of server messages. ``matches`` holds the match
    ids followed (``"*"``: all, present and future). ``dropped`` is set when the queue
    overflowed; the transport then closes the connection."""

    def __init__(self, name: str, capacity: int = 4096) -> None:
        self.name = name
        self.matches: set[str] = set()
        self.send_channel, self.receive_channel = trio.open_memory_channel[bytes](capacity)
        self.dropped = False

    def wants(self, match_id: str) -> bool:
        """True if this subscriber follows ``match_id``."""
        return "*" in self.matches or match_id in self.matches

    def push(self, msg: msgspec.Struct | bytes) -> None:
        """Queue a message (a struct, or its encoded line) without waiting; mark the subscriber
        dropped if its queue is full."""
        if self.dropped:
            return
        try:
            self.send_channel.send_nowait(msg if isinstance(msg, bytes) else encode(msg))
        except trio.WouldBlock:
            self.dropped = True
            self.send_channel.close()


class _Live:
    """What the hub keeps of a match in play."""

    def __init__(self, info: LiveMatch, rules: Rules, time: TimeControl) -> None:
        self.info = info
        self.rules = rules
        self.time = time
        self.seq = 0
        self.public: list[Spectate] = []  # for spectators joining mid-match
        self.hidden: list[tuple[Any, tuple[int, ...]]] = []  # current deal's hidden events
        self.reveals: list[Reveal] = []  # released already
        self.over = False


class SpectatorHub:
    """Routes match events to spectators; see the module docstring.

    ``nursery`` (set before use) runs the delayed reveals. ``on_change`` callbacks are called
    with no argument when a match starts or ends (the web page refreshes its lists).
    """

    def __init__(self, reveal_delay_s: float = 0.0) -> None:
        self.reveal_delay_s = reveal_delay_s
        self.nursery: trio.Nursery | None = None
        self.live: dict[str, _Live] = {}
        self.subscribers: set[Subscriber] = set()
        self._held: dict[str, list[tuple[str, Reveal]]] = defaultdict(list)  # pair -> reveals waiting
        self._pair_done: dict[str, int] = defaultdict(int)
        self.on_change: list[Any] = []

    # ------------------------------------------------------------------ subscribers

    def add(self, sub: Subscriber) -> None:
        """Register a subscriber (following nothing yet)."""
        self.subscribers.add(sub)
        self._count()

    def remove(self, sub: Subscriber) -> None:
        """Forget a subscriber."""
        self.subscribers.discard(sub)
        self._count()

    def _count(self) -> None:
        METRICS.spectators.set(sum(1 for s in self.subscribers if s.matches))

    def listing(self) -> list[LiveMatch]:
        """The matches in play."""
        return [m.info for m in self.live.values() if not m.over]

    def subscribe(self, sub: Subscriber, match_id: str) -> bool:
        """Follow ``match_id`` (or ``"*"``); catch up on what is already public. Returns False
        for an unknown match id."""
        if match_id != "*" and match_id not in self.live:
            return False
        if sub.wants(match_id):
            return True  # already followed: no second catch-up
        sub.matches.add(match_id)
        for mid, live in self.live.items():
            if match_id in ("*", mid) and not live.over:
                sub.push(Watch(match=live.info, rules=live.rules, time=live.time))
                for msg in live.public:
                    sub.push(msg)
                for msg in live.reveals:
                    sub.push(msg)
        self._count()
        return True

    def unsubscribe(self, sub: Subscriber, match_id: str) -> None:
        """Stop following ``match_id`` (or ``"*"``)."""
        sub.matches.discard(match_id)
        self._count()

    def announce(self, msg: msgspec.Struct) -> None:
        """Send ``msg`` to every spectator, whatever it follows (e.g. betting opens)."""
        data = encode(msg)
        for sub in list(self.subscribers):
            sub.push(data)

    def _send(self, match_id: str, msg: msgspec.Struct) -> None:
        data = None
        for sub in list(self.subscribers):
            if sub.wants(match_id):
                if data is None:
                    data = encode(msg)  # once, whatever the number of spectators
                sub.push(data)

    # ------------------------------------------------------------------ from the referee

    def match_started(self, match_id: str, game: str, bots: list[str], rules: Rules, time: TimeControl,
                      pair: str | None = None) -> None:
        """A match begins."""
        info = LiveMatch(match_id=match_id, game=game, bots=list(bots), scores=[0, 0], deal=0, pair=pair)
        live = _Live(info, rules, time)
        self.live[match_id] = live
        self._send(match_id, Watch(match=info, rules=rules, time=time))
        for cb in self.on_change:
            cb()

    def event(self, match_id: str, event: Any, seen_by: tuple[int, ...], raw: msgspec.Raw | None = None) -> None:
        """One engine event of ``match_id`` with the seats that saw it; ``raw``, if given, is the
        event already encoded (:func:`protocol.framing.encode_event`): the ``spectate`` line
        carries it as it is instead of encoding the event again."""
        live = self.live.get(match_id)
        if live is None:
            return
        if tuple(seen_by) != BOTH:
            live.hidden.append((event, tuple(seen_by)))
            if not (isinstance(event, Exchange) and event.discarded is None):
                return
            # the opponent's copy of an exchange (count and stock, no card) is known to both
            # seats, so it goes out live; the cards come with the reveal
        live.seq += 1
        msg = Spectate(match_id=match_id, seq=live.seq, event=event if raw is None else raw)
        live.public.append(msg)
        kind = type(event).__name__
        if kind == "DealStart":
            live.info.deal = event.deal
        if hasattr(event, "scores") and kind in ("Score", "DealEnd", "MancheEnd"):
            live.info.scores = list(event.scores)
        self._send(match_id, msg)
        if isinstance(event, DealEnd):
            self._release(live, event.deal)

    def match_ended(self, match_id: str, winner: int | None, reason: str, scores: list[int]) -> None:
        """A match is over (played out, forfeited or aborted)."""
        live = self.live.get(match_id)
        if live is None:
            return
        live.over = True
        self._release(live, live.info.deal)  # a forfeit ends the deal too
        self._send(match_id, WatchEnd(match_id=match_id, winner=winner, reason=reason, scores=list(scores)))
        pair = live.info.pair
        if pair is not None:
            self._pair_done[pair] += 1
            if self._pair_done[pair] >= 2:
                for mid, reveal in self._held.pop(pair, []):
                    self._deliver(mid, reveal)
                del self._pair_done[pair]
        self.live.pop(match_id, None)
        for cb in self.on_change:
            cb()

    # ------------------------------------------------------------------ reveals

    def _release(self, live: _Live, deal: int) -> None:
        if not live.hidden:
            return
        events, seen = zip(*live.hidden, strict=True)
        live.hidden = []
        reveal = Reveal(match_id=live.info.match_id, deal=deal, events=list(events), seen_by=[list(s) for s in seen])
        if live.info.pair is not None:
            self._held[live.info.pair].append((live.info.match_id, reveal))
            return
        if self.reveal_delay_s > 0 and self.nursery is not None:
            self.nursery.start_soon(self._later, live.info.match_id, reveal)
        else:
            self._deliver(live.info.match_id, reveal)

    async def _later(self, match_id: str, reveal: Reveal) -> None:
        await trio.sleep(self.reveal_delay_s)
        self._deliver(match_id, reveal)

    def _deliver(self, match_id: str, reveal: Reveal) -> None:
        live = self.live.get(match_id)
        if live is not None:
            live.reveals.append(reveal)
        self._send(match_id, reveal)
