"""``arena watch``: follow a contest's matches live in the terminal, as a spectator.

The watcher connects to an ``arena serve`` server over TCP (or TLS: ``--tls``, ``ARENA_TLS=1``
or ``--host tls://host:port``, the CA from ``--tls-ca`` or ``ARENA_TLS_CA``; :mod:`arena.net.tls`) like any spectator
(docs/protocol.md): ``hello`` with ``"role": "spectator"``, then ``list`` (answered by
``matches``) and ``subscribe`` to one match id, or to ``"*"`` for every match now and to come.
The server then sends the feed:

* ``watch``: a match begins (or is joined): its players, rules and time control;
* ``spectate``: one public event of a match, live;
* ``reveal``: the hidden events of a finished deal (hands, exchanged cards, the pack, a
  declined king, the talon cards elder looked at), only once they can no longer help a bot;
  for a duplicate pair, only after the twin match is over too;
* ``watch_end``: the match is over.

Everything shown comes from that feed: a card appears only once the feed has made it public
(played, announced, shown as carte blanche or an exposed talon) or revealed it. Nothing is
guessed, except *who is to act*, which is inferred from the order of the public events and
shown as unknown (``?``) while hidden decisions (the exchanges) are being made.

:class:`WatchState` holds the state of every match followed and is pure (no I/O; the clock is
injected), so it is tested without a terminal: feed it the decoded messages with
:meth:`WatchState.apply` and draw it with :meth:`WatchState.render`. :func:`main` is the
network and terminal side: a ``rich.live.Live`` view, or with ``once`` a single snapshot
printed when the first match followed is over.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from arena.errors import UNAVAILABLE, UserError
from arena.net.tls import ca_file, open_stream, split_address, tls_asked
from protocol import PROTOCOL_VERSION
from protocol.framing import LineReader, ProtocolError

SUIT_SYMBOL = {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}
SUIT_NAME = {"c": "clubs", "d": "diamonds", "h": "hearts", "s": "spades"}
RED = {"d", "h"}
RANK_ORDER = {"ecarte": "789TAJQK", "piquet": "6789TJQKA"}
"""Low to high, for sorting a hand the way the server does (docs/protocol.md §8.1)."""
TRICKS_PER_DEAL = {"ecarte": 5, "piquet": 12}
GAME_TITLE = {"ecarte": "Écarté", "piquet": "Piquet"}
LOG_LINES = 10
KEEP_ENDED = 20
"""Finished matches kept (a duplicate pair's reveals come after its twin is over)."""


def card_text(card: str) -> Text:
    """A card as rank + suit symbol, red for diamonds and hearts: ``K♠``."""
    if not isinstance(card, str) or len(card) != 2:
        return Text(str(card))
    return Text(card[0] + SUIT_SYMBOL.get(card[1], card[1]), style="red" if card[1] in RED else "bold")


def cards_text(cards: list[str]) -> Text:
    """Several cards, separated by spaces."""
    out = Text()
    for i, card in enumerate(cards):
        if i:
            out.append(" ")
        out.append_text(card_text(card))
    return out


def plain_cards(cards: list[str] | None) -> str:
    """Cards as plain text with suit symbols (for the event lines)."""
    return " ".join(card_text(c).plain for c in cards or [])


# --------------------------------------------------------------------------- state


@dataclass
class Deal:
    """One deal as a spectator knows it."""

    number: int
    dealer: int
    elder: int
    manche: int = 1
    turn_up: str | None = None
    trump: str | None = None
    stock: int = 0
    played: list[list[str]] = field(default_factory=lambda: [[], []])
    shown: list[list[str]] = field(default_factory=lambda: [[], []])
    """Cards a seat showed without playing them yet (the king of trumps announced)."""
    trick: list[tuple[int, str]] = field(default_factory=list)
    trick_no: int = 1
    tricks: list[int] = field(default_factory=lambda: [0, 0])
    calls: list[str] = field(default_factory=list)
    declarations: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Public facts worth keeping on screen: carte blanche, an exposed talon."""
    points: list[int] | None = None
    ended: str | None = None
    revealed: Reveal | None = None


@dataclass
class Reveal:
    """The hidden part of a finished deal, from a ``reveal`` message."""

    deal: int
    dealt: list[list[str] | None] = field(default_factory=lambda: [None, None])
    exchanges: list[list[tuple[list[str], list[str]]]] = field(default_factory=lambda: [[], []])
    declined_king: list[str | None] = field(default_factory=lambda: [None, None])
    looked: list[list[str] | None] = field(default_factory=lambda: [None, None])

    def final_hand(self, seat: int, order: str) -> list[str] | None:
        """The hand ``seat`` played the deal with: dealt, minus discards, plus draws."""
        hand = self.dealt[seat]
        if hand is None:
            return None
        cards = list(hand)
        for discarded, drawn in self.exchanges[seat]:
            cards = [c for c in cards if c not in discarded] + list(drawn)
        return sort_hand(cards, order)


def sort_hand(cards: list[str], order: str) -> list[str]:
    """Suit c d h s, then rank low to high in the game's order."""
    return sorted(cards, key=lambda c: ("cdhs".find(c[1]), order.find(c[0])))


@dataclass
class MatchView:
    """Everything the watcher knows of one match."""

    match_id: str
    game: str
    bots: list[str]
    pair: str | None = None
    rules: dict[str, Any] = field(default_factory=dict)
    time: dict[str, Any] = field(default_factory=dict)
    scores: list[int] = field(default_factory=lambda: [0, 0])
    manches: list[int] = field(default_factory=lambda: [0, 0])
    target: int | str | None = None
    deal: Deal | None = None
    last_revealed: Reveal | None = None
    """The latest revealed deal that is not the current one (hidden cards come with a lag)."""
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    seq: int = 0
    to_act: int | None = None
    since: float = 0.0
    """Clock reading of the last public event (the player to act has been thinking since)."""
    over: bool = False
    winner: int | None = None
    reason: str | None = None
    final: dict[str, Any] | None = None
    """Piquet's final reckoning (``match_score`` event)."""

    def who(self, seat: Any) -> str:
        """The bot name of a seat."""
        if isinstance(seat, int) and 0 <= seat < len(self.bots):
            return self.bots[seat]
        return "?"

    @property
    def order(self) -> str:
        return RANK_ORDER.get(self.game, RANK_ORDER["ecarte"])


class WatchState:
    """The watcher's state: every match followed, and which one is on screen.

    ``follow`` is the match id asked for, or ``None`` to follow every match (``"*"``): the
    first match in play is shown, and when it ends the next one in play (or the next to
    start). ``clock`` returns seconds (monotonic); it only times the player to act.

    :meth:`apply` takes one decoded server message (a dict) and returns nothing; after it,
    :attr:`ended` lists the ids of the matches whose ``watch_end`` arrived, in order, and
    :attr:`error` holds the last ``error`` message received, if any.
    """

    def __init__(self, follow: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.follow = follow
        self.clock = clock
        self.matches: dict[str, MatchView] = {}
        self.current: str | None = follow
        self.ended: list[str] = []
        self.error: dict[str, Any] | None = None
        self.goodbye: str | None = None
        self.listing: list[dict[str, Any]] = []
        """The last ``matches`` answer (the matches in play when we asked)."""
        self.listed = False
        self.betting: dict[str, tuple[list[str], float]] = {}
        """Matches open for bets: bot names and the clock reading when betting closes."""

    # ------------------------------------------------------------------ feed

    def apply(self, msg: dict[str, Any]) -> None:
        """Update the state with one server message."""
        kind = msg.get("type")
        if kind == "matches":
            # only a listing: a match joins the state with its ``watch`` (one listed here may
            # be over before we subscribe, and then no ``watch`` comes for it)
            self.listing = [dict(info) for info in msg.get("matches") or []]
            self.listed = True
        elif kind == "watch":
            m = self._match(msg["match"])
            m.rules = dict(msg.get("rules") or {})
            m.time = dict(msg.get("time") or {})
            if m.target is None and m.game == "ecarte":
                m.target = m.rules.get("target")
            m.since = self.clock()
            self._pick()
        elif kind == "spectate":
            m = self.matches.get(msg.get("match_id", ""))
            if m is not None and not m.over:
                self._event(m, msg.get("seq", 0), msg["event"])
        elif kind == "reveal":
            m = self.matches.get(msg.get("match_id", ""))
            if m is not None:
                self._reveal(m, msg)
        elif kind == "watch_end":
            m = self.matches.get(msg.get("match_id", ""))
            if m is not None:
                self._end(m, msg)
        elif kind == "betting":  # gallery wagers: a match is about to start
            self.betting[str(msg.get("match_id"))] = (list(msg.get("bots") or []),
                                                      self.clock() + (msg.get("closes_ms") or 0) / 1000)
        elif kind == "error":
            self.error = msg
        elif kind == "goodbye":
            self.goodbye = str(msg.get("reason", ""))

    def _match(self, info: dict[str, Any]) -> MatchView:
        mid = info["match_id"]
        m = self.matches.get(mid)
        if m is None:
            m = MatchView(match_id=mid, game=info.get("game", "ecarte"), bots=list(info.get("bots") or ["?", "?"]),
                          pair=info.get("pair"))
            m.scores = list(info.get("scores") or [0, 0])
            self.matches[mid] = m
        return m

    def _pick(self) -> None:
        """Choose the match on screen: the one asked for, else keep the current one while it
        is in play, else the first match in play."""
        if self.follow is not None:
            self.current = self.follow
            return
        cur = self.matches.get(self.current or "")
        if cur is not None and not cur.over:
            return
        for mid, m in self.matches.items():
            if not m.over:
                self.current = mid
                return

    def _end(self, m: MatchView, msg: dict[str, Any]) -> None:
        m.over = True
        m.winner = msg.get("winner")
        m.reason = msg.get("reason")
        if msg.get("scores") is not None:
            m.scores = list(msg["scores"])
        m.to_act = None
        result = "no winner" if m.winner is None else f"{m.who(m.winner)} wins"
        m.log.append(f"match over: {result} ({m.reason}), {_pair(m.scores)}")
        self.ended.append(m.match_id)
        ended = [mid for mid, v in self.matches.items() if v.over]
        for mid in ended[:-KEEP_ENDED]:
            if mid != self.current:
                del self.matches[mid]
        if m.match_id == self.current:
            self._pick()

    # ------------------------------------------------------------------ public events

    def _event(self, m: MatchView, seq: int, ev: dict[str, Any]) -> None:
        m.seq = seq
        m.since = self.clock()
        k = ev.get("kind")
        d = m.deal
        who = m.who
        line: str | None = None
        tricks = TRICKS_PER_DEAL.get(m.game, 5)
        if k == "target":
            m.target = ev["target"]
            line = f"target set by {card_text(ev['card']).plain}: {ev['target']} points"
        elif k == "dealer_draw":
            cards = ev.get("cards") or []
            drawn = ", ".join(f"{who(s)} {card_text(c).plain}" for s, c in enumerate(cards))
            dealer = ev.get("dealer")
            line = f"draw for dealer: {drawn}; " + ("tie, again" if dealer is None else f"{who(dealer)} deals")
            m.to_act = None
        elif k == "deal_start":
            if d is not None and ev.get("manche", 1) != d.manche:
                m.scores = [0, 0]  # a new manche of a partie liée starts from zero
            m.deal = d = Deal(number=ev["deal"], dealer=ev["dealer"], elder=ev["elder"], manche=ev.get("manche", 1),
                              turn_up=ev.get("turn_up"), trump=ev.get("trump"), stock=ev.get("stock", 0))
            turn = ""
            if d.turn_up:
                turn = f", turn-up {card_text(d.turn_up).plain} ({SUIT_NAME.get(d.trump or '', d.trump)} are trumps)"
            manche = f" (manche {ev['manche']})" if m.rules.get("manches", 1) > 1 else ""
            line = f"deal {d.number}{manche}: {who(d.dealer)} deals{turn}"
            # Écarté: elder speaks first (a public call); Piquet: the exchanges come first, hidden
            m.to_act = d.elder if m.game == "ecarte" else None
        elif d is None:
            line = _generic(ev, who)
        elif k == "call":
            seat, call = ev["seat"], ev["call"]
            d.calls.append(f"{who(seat)}: {call}")
            line = f"{who(seat)} {CALL_WORDS.get(call, call)}"
            if call == "propose":
                m.to_act = d.dealer
            elif call == "accept":
                m.to_act = None  # the exchanges are hidden: elder discards, then the dealer
            else:  # play, refuse: elder leads the first trick
                m.to_act = d.elder
        elif k == "king":
            seat, card = ev["seat"], ev["card"]
            if ev.get("announced", True):
                if card not in d.played[seat]:
                    d.shown[seat].append(card)
                line = f"{who(seat)} announces the king of trumps {card_text(card).plain}"
                m.to_act = seat
            else:  # never public live; kept for completeness
                line = f"{who(seat)} declines to announce {card_text(card).plain}"
        elif k == "play":
            seat, card = ev["seat"], ev["card"]
            d.played[seat].append(card)
            if card in d.shown[seat]:
                d.shown[seat].remove(card)
            d.trick_no = ev.get("trick", d.trick_no)
            if len(d.trick) >= 2:
                d.trick = []
            verb = "leads" if not d.trick else "plays"
            d.trick.append((seat, card))
            line = f"{who(seat)} {verb} {card_text(card).plain} (trick {d.trick_no})"
            m.to_act = 1 - seat if len(d.trick) == 1 else None
        elif k == "trick":
            d.tricks[ev["winner"]] += 1
            d.trick = [(ev["leader"], ev["cards"][0]), (1 - ev["leader"], ev["cards"][1])] if len(ev["cards"]) == 2 \
                else d.trick
            line = f"trick {ev['trick']} to {who(ev['winner'])}: {plain_cards(ev['cards'])}"
            m.to_act = ev["winner"] if ev["trick"] < tricks else None
        elif k == "score":
            m.scores = list(ev["scores"])
            detail = f": {ev['detail']}" if ev.get("detail") else ""
            points = ev["points"]
            line = (f"{who(ev['seat'])} scores {points} point{'s' if points != 1 else ''} for "
                    f"{REASONS.get(ev['reason'], ev['reason'])}{detail} ({_pair(m.scores)})")
        elif k == "deal_end":
            d.points = list(ev["points"])
            d.ended = ev.get("ended", "played")
            d.tricks = list(ev["tricks"])
            m.scores = list(ev["scores"])
            stop = " (stopped: a king point reached the target)" if d.ended == "king_point" else ""
            line = f"end of deal {d.number}: tricks {_pair(d.tricks)}, points {_pair(d.points)}{stop}"
            m.to_act = None
        elif k == "manche_end":
            m.manches = list(ev["manches"])
            m.scores = list(ev["scores"])
            line = f"manche {ev['manche']} to {who(ev['winner'])} (manches {_pair(m.manches)})"
            m.to_act = None
        elif k == "carte_blanche":
            seat = ev["seat"]
            d.notes.append(f"{who(seat)} showed carte blanche: {plain_cards(ev['cards'])}")
            line = f"{who(seat)} has carte blanche: {plain_cards(ev['cards'])}"
            m.to_act = seat
        elif k == "talon_exposed":
            d.notes.append(f"talon turned up by {who(ev['seat'])}: {plain_cards(ev['cards'])}")
            line = f"{who(ev['seat'])} turns up the rest of the talon: {plain_cards(ev['cards'])}"
            m.to_act = None
        elif k == "declaration":
            d.declarations.append(ev)
            line = _declaration(ev, who, d)
            m.to_act = d.elder  # after the declarations elder leads
        elif k == "match_score":
            m.final = ev
            m.scores = list(ev["totals"])
            w = ev.get("winner")
            res = "a draw" if w is None else f"{who(w)} wins by {ev['margin']}"
            line = f"final reckoning: {_pair(ev['totals'])}, {res}" + (" (rubicon)" if ev.get("rubicon") else "")
            m.to_act = None
        else:
            line = _generic(ev, who)
        if line:
            m.log.append(f"#{seq} {line}" if seq else line)

    # ------------------------------------------------------------------ hidden events, later

    def _reveal(self, m: MatchView, msg: dict[str, Any]) -> None:
        r = Reveal(deal=msg.get("deal", 0))
        who = m.who
        for ev in msg.get("events") or []:
            k = ev.get("kind")
            seat = ev.get("seat")
            if k == "hand" and seat in (0, 1):
                r.dealt[seat] = list(ev["cards"])
            elif k == "exchange" and seat in (0, 1):
                if ev.get("discarded") is not None:  # the owner's copy; the other copy has nulls
                    r.exchanges[seat].append((list(ev["discarded"]), list(ev.get("drawn") or [])))
            elif k == "king" and seat in (0, 1) and not ev.get("announced", True):
                r.declined_king[seat] = ev["card"]
            elif k == "look" and seat in (0, 1):
                r.looked[seat] = list(ev["cards"])
        d = m.deal
        if d is not None and d.number == r.deal:
            d.revealed = r
        else:
            m.last_revealed = r
        held = "; ".join(f"{who(s)} held {plain_cards(r.dealt[s])}" for s in (0, 1) if r.dealt[s] is not None)
        m.log.append(f"deal {r.deal} revealed: {held}" if held else f"deal {r.deal} revealed")

    # ------------------------------------------------------------------ drawing

    def render(self, match_id: str | None = None) -> RenderableType:
        """The view of ``match_id`` (default: the match on screen), with the other matches in
        play listed below it."""
        mid = match_id or self.current
        m = self.matches.get(mid or "")
        parts: list[RenderableType] = []
        if m is None:
            waiting = f"waiting for match {mid}" if mid else "waiting for a match to start"
            parts.append(Text(waiting + " ...", style="italic"))
        else:
            parts.append(self._render_match(m))
        others = [v for k, v in self.matches.items() if k != mid and not v.over]
        if others:
            line = Text("also in play: ", style="dim")
            for i, o in enumerate(others):
                if i:
                    line.append(" · ", style="dim")
                line.append(f"{o.match_id} {o.bots[0]} {_pair(o.scores)} {o.bots[1]}")
            parts.append(line)
        now = self.clock()
        for bmid, (bots, closes) in self.betting.items():
            if closes <= now or bmid in self.matches:
                continue
            parts.append(Text(f"betting open on {bmid}: {' v '.join(bots)} (closes in {closes - now:.0f} s)",
                              style="magenta"))
        if self.error:
            parts.append(Text(f"server error {self.error.get('code')}: {self.error.get('message')}", style="red"))
        return Group(*parts)

    def _render_match(self, m: MatchView) -> RenderableType:
        d = m.deal
        game = GAME_TITLE.get(m.game, m.game)
        title = f"{m.match_id} · {game} · {m.bots[0]} v {m.bots[1]}"
        if m.pair:
            title += " · duplicate pair"
        body: list[RenderableType] = [self._headline(m)]
        body.append(self._players(m))
        if d is not None:
            body.extend(self._deal_lines(m, d))
        if m.pair and (d is None or d.revealed is None):
            body.append(Text("hidden cards: shown once this match and its duplicate twin are both over",
                             style="dim"))
        if m.last_revealed is not None and (d is None or d.revealed is None):
            r = m.last_revealed
            line = Text(f"deal {r.deal}, revealed: ", style="dim")
            for s in (0, 1):
                hand = r.final_hand(s, m.order)
                if hand is None:
                    continue
                line.append(f"{m.who(s)} ")
                line.append_text(cards_text(hand))
                line.append("  ")
            body.append(line)
        body.append(Text("last events", style="bold underline"))
        if m.log:
            body.extend(Text("  " + entry) for entry in m.log)
        else:
            body.append(Text("  (none yet)", style="dim"))
        status = "over" if m.over else "live"
        return Panel(Group(*body), title=Text(title), subtitle=status, title_align="left",  # names are not markup
                     subtitle_align="right")

    def _headline(self, m: MatchView) -> Text:
        d = m.deal
        t = Text()
        if m.over:
            result = "no winner" if m.winner is None else f"{m.who(m.winner)} wins"
            t.append(f"OVER: {result} ({m.reason}), {_pair(m.scores)}\n", style="bold green")
        if d is None:
            t.append("before the first deal")
        else:
            t.append(f"deal {d.number}")
            if m.game == "piquet" and m.rules.get("scoring") == "rubicon" and d.number <= 6:
                t.append(" of 6")
            t.append(f" · {m.who(d.dealer)} deals, {m.who(d.elder)} is elder")
            if d.turn_up:
                t.append(" · turn-up ")
                t.append_text(card_text(d.turn_up))
                t.append(f" ({SUIT_NAME.get(d.trump or '', d.trump)} trumps)")
        if m.game == "ecarte" and m.target is not None:
            t.append(f" · target {m.target}")
            if m.rules.get("manches", 1) > 1:
                t.append(f", best of {m.rules['manches']} manches")
        elif m.game == "piquet" and m.rules.get("scoring"):
            t.append(f" · {m.rules['scoring']}")
        tc = m.time
        if tc:
            t.append(f"\nclock: {tc.get('move_ms', '?')} ms per decision, bank {tc.get('bank_ms', 0)} ms, "
                     f"grace {tc.get('grace_ms', 0)} ms", style="dim")
        return t

    def _players(self, m: MatchView) -> Table:
        d = m.deal
        table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 2, 0, 0))
        table.add_column("seat", justify="right")
        table.add_column("player")
        table.add_column("score", justify="right")
        if m.game == "ecarte" and m.rules.get("manches", 1) > 1:
            table.add_column("manches", justify="right")
        table.add_column("tricks", justify="right")
        table.add_column("clock", justify="right")
        table.add_column("cards this deal (revealed)" if d is not None and d.revealed else "cards seen this deal")
        now = self.clock()
        for s in (0, 1):
            name = Text(m.who(s), style="bold")
            if d is not None:
                role = "dealer" if d.dealer == s else "elder"
                name.append(f" ({role})", style="dim")
            if m.over and m.winner == s:
                name.append(" ★", style="green")
            row: list[RenderableType] = [str(s), name, str(m.scores[s] if s < len(m.scores) else 0)]
            if m.game == "ecarte" and m.rules.get("manches", 1) > 1:
                row.append(str(m.manches[s]))
            row.append(str(d.tricks[s]) if d is not None else "-")
            if not m.over and m.to_act == s:
                row.append(Text(f"▶ {max(0.0, now - m.since):.1f} s", style="yellow"))
            elif not m.over and m.to_act is None and d is not None and d.ended is None:
                row.append(Text("?", style="dim"))
            else:
                row.append("")
            row.append(self._hand(m, s))
            table.add_row(*row)
        return table

    def _hand(self, m: MatchView, s: int) -> Text:
        d = m.deal
        if d is None:
            return Text("")
        size = TRICKS_PER_DEAL.get(m.game, 5)
        t = Text()
        hand = d.revealed.final_hand(s, m.order) if d.revealed is not None else None
        if hand is not None:
            if d.played[s]:
                t.append("played ", style="dim")
                t.append_text(cards_text(d.played[s]))
            kept = [c for c in hand if c not in d.played[s]]
            if kept:
                t.append("  held " if t else "held ", style="dim")
                t.append_text(cards_text(kept))
            return t
        if d.played[s]:
            t.append("played ", style="dim")
            t.append_text(cards_text(d.played[s]))
        if d.shown[s]:
            t.append("  holds " if t else "holds ", style="dim")
            t.append_text(cards_text(d.shown[s]))
        hidden = size - len(d.played[s]) - len(d.shown[s])
        if hidden > 0 and d.ended is None:
            t.append(("  " if t else "") + "▯" * hidden, style="dim")
        return t

    def _deal_lines(self, m: MatchView, d: Deal) -> list[RenderableType]:
        out: list[RenderableType] = []
        trick = Text(f"trick {d.trick_no}: ")
        if d.trick:
            for i, (seat, card) in enumerate(d.trick):
                if i:
                    trick.append(", ")
                trick.append(f"{m.who(seat)} ")
                trick.append_text(card_text(card))
        else:
            trick.append("-", style="dim")
        if d.ended:
            trick = Text(f"deal over: tricks {_pair(d.tricks)}, points {_pair(d.points or [0, 0])}")
        out.append(trick)
        if d.calls and m.game == "ecarte":
            talk = ", ".join(d.calls[-4:])
            if len(d.calls) > 4:
                accepted = sum(c.endswith(": accept") for c in d.calls)
                talk = f"{accepted} exchange{'s' if accepted != 1 else ''} accepted in all; … {talk}"
            out.append(Text("talk: " + talk, style="dim"))
        for dec in d.declarations:
            out.append(Text(_declaration(dec, m.who, d)))
        for note in d.notes:
            out.append(Text(note))
        r = d.revealed
        if r is not None:
            for s in (0, 1):
                bits = []
                if r.dealt[s] is not None:
                    bits.append(f"dealt {plain_cards(r.dealt[s])}")
                for discarded, drawn in r.exchanges[s]:
                    if discarded:
                        bits.append(f"discarded {plain_cards(discarded)}, drew {plain_cards(drawn)}")
                    else:
                        bits.append("kept the hand")
                if r.declined_king[s]:
                    bits.append(f"declined to announce {plain_cards([r.declined_king[s]])}")
                if r.looked[s]:
                    bits.append(f"looked at {plain_cards(r.looked[s])}")
                if bits:
                    out.append(Text(f"{m.who(s)} (revealed): " + "; ".join(bits), style="cyan"))
        return out


CALL_WORDS = {"propose": "proposes an exchange", "play": "plays without proposing", "accept": "accepts",
              "refuse": "refuses"}
REASONS = {
    "king_turn_up": "the king turned up", "king": "the king of trumps", "tricks": "the trick", "vole": "the vole",
    "refusal": "a refusal", "carte_blanche": "carte blanche", "point": "the point", "sequence": "a sequence",
    "set": "a set", "lead": "a lead", "trick": "a trick", "last_trick": "the last trick", "cards": "the cards",
    "capot": "capot", "pique": "pique", "repique": "repique",
}


def _pair(values: list[int] | None) -> str:
    values = values or [0, 0]
    return "–".join(str(v) for v in values)


def _declaration(ev: dict[str, Any], who: Callable[[Any], str], d: Deal) -> str:
    cat = ev.get("category")
    res = ev.get("result")
    e, y = d.elder, d.dealer
    if res == "none":
        return f"{cat}: none declared"
    mine = f"{who(e)} {ev.get('elder') or '-'}"
    theirs = f"{who(y)} {ev.get('younger') or ('not shown' if res == 'good' else '-')}"
    verdict = {"good": f"good for {who(e)}", "not_good": f"not good: {who(y)} scores",
               "equal": "equal: nobody scores"}.get(res or "", res)
    return f"{cat}: {mine} v {theirs} → {verdict}"


def _generic(ev: dict[str, Any], who: Callable[[Any], str]) -> str:
    k = ev.get("kind", "?")
    fields = ", ".join(f"{a}={b}" for a, b in ev.items() if a != "kind")
    return f"{k}: {fields}"


# --------------------------------------------------------------------------- network side


class WatchError(Exception):
    """The server refused us or went away; the message says why."""


async def _send(stream: trio.abc.Stream, obj: dict[str, Any]) -> None:
    await stream.send_all(msgspec.json.encode(obj) + b"\n")


KEEPALIVE_S = 30.0
"""After this many seconds without a line from the server, the watcher sends an empty line, so
that the server does not drop it as an idle spectator (docs/protocol.md §13.6)."""


async def _recv(reader: LineReader) -> dict[str, Any] | None:
    """The next message as a dict, or None at the end of the stream (blank lines skipped).
    Sends an empty line to the server (a keepalive) every :data:`KEEPALIVE_S` seconds of quiet."""
    while True:
        line = b""
        with trio.move_on_after(KEEPALIVE_S) as quiet:
            try:
                line = await reader.read_line()
            except ProtocolError as exc:
                raise WatchError(f"bad data from the server: {exc.message}") from None
        if quiet.cancelled_caught:
            await reader.stream.send_all(b"\n")
            continue
        if line is None:
            return None
        if not line.strip():
            continue
        try:
            msg = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):  # a hostile server's line: skipped, never a crash
            continue
        if isinstance(msg, dict):
            return msg


class FellBehind(WatchError):
    """The server dropped the feed because the watcher read it too slowly (``too_slow``), or
    closed it without a goodbye: the watcher connects again and goes on from the live state."""


CATCH_UP_LIMIT = 20
"""Reconnections in a row after falling behind (with no match seen to its end between them)
before the watcher gives up."""


async def _watch(host: str, port: int, match: str | None, once: bool, name: str, console: Console,
                 tls: bool = False, ca: str | None = None) -> int:
    """Follow (see :func:`_session`); after falling behind the live feed, say so in one line,
    connect again and go on from the live state: the exit status."""
    for _ in range(CATCH_UP_LIMIT):
        try:
            return await _session(host, port, match, once, name, console, tls, ca)
        except FellBehind as exc:
            console.print(Text(f"fell behind the live feed ({exc}): skipping to the live state"))
    console.print(Text.assemble(("error:", "red"), f" fell behind the live feed {CATCH_UP_LIMIT} times in a row: "
                                "this terminal cannot keep up; follow one match (arena watch MATCH_ID)"))
    return 1


async def _session(host: str, port: int, match: str | None, once: bool, name: str, console: Console,
                   tls: bool = False, ca: str | None = None) -> int:
    """Connect (TLS with ``tls``, verified against ``ca`` or the system's trust store), say
    hello as a spectator, list, subscribe and follow; the exit status. Raises
    :class:`FellBehind` when the server drops the feed for reading too slowly."""
    try:
        stream = await open_stream(host, port, tls=tls, ca=ca)
    except OSError as exc:
        console.print(Text.assemble(("error:", "red"), f" cannot connect to {host}:{port}: {exc.strerror or exc}; "
                                    "start the contest server (arena serve) or fix --host/--port"), soft_wrap=True)
        return UNAVAILABLE
    except UserError as exc:  # TLS: a certificate not accepted, a port that does not speak TLS, a CA file
        console.print(Text.assemble(("error:", "red"), f" {exc}"), soft_wrap=True)
        return exc.status
    reader = LineReader(stream)
    state = WatchState(follow=match)
    async with stream:
        try:
            await _send(stream, {"type": "hello", "name": name, "token": "", "protocol": PROTOCOL_VERSION,
                                 "role": "spectator"})
            welcome = await _recv(reader)
            if welcome is None or welcome.get("type") != "welcome":
                why = f"{welcome.get('code')}: {welcome.get('message')}" if welcome else "connection closed"
                raise WatchError(f"the server refused the spectator: {why}")
            await _send(stream, {"type": "list"})
            while not state.listed:
                msg = await _recv(reader)
                if msg is None:
                    raise WatchError("connection closed")
                state.apply(msg)
            listed = [info.get("match_id") for info in state.listing]
            if match is not None and match not in listed:
                live = ", ".join(map(str, listed)) or "none"
                raise WatchError(f"no match {match!r} in play (in play: {live})")
            await _send(stream, {"type": "subscribe", "match_id": match or "*"})
            if once or not console.is_terminal:
                status = await _follow_plain(reader, state, match, once, console)
            else:
                status = await _follow_live(reader, state, match, console)
            await _leave(stream, reader, match or "*")
            return status
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            console.print(Text.assemble(("error:", "red"), f" connection lost: {exc}"))
            return UNAVAILABLE
        except FellBehind:
            raise
        except WatchError as exc:
            console.print(Text.assemble(("error:", "red"), f" {exc}"))
            return 1


async def _leave(stream: trio.abc.Stream, reader: LineReader, match_id: str) -> None:
    """Close politely: stop the feed, say we are done writing, and read what is still in
    flight until the server closes (closing with unread data would reset the connection)."""
    with trio.move_on_after(2):
        try:
            await _send(stream, {"type": "unsubscribe", "match_id": match_id})
            if isinstance(stream, trio.abc.HalfCloseableStream):  # TLS has no half-close: the server closes
                await stream.send_eof()
            while await reader.read_line() is not None:
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ProtocolError):
            pass


def _fatal(state: WatchState) -> str | None:
    """The fatal error the server sent, if any; raises :class:`FellBehind` for ``too_slow``."""
    err = state.error
    if err is not None and err.get("code") == "too_slow":
        state.error = None
        raise FellBehind(f"the server dropped it: {err.get('message')}")
    if err is not None and (err.get("fatal") or err.get("code") == "unknown_match"):
        return f"{err.get('code')}: {err.get('message')}"
    return None


async def _follow_plain(reader: LineReader, state: WatchState, match: str | None, once: bool,
                        console: Console) -> int:
    """No terminal to redraw (or ``once``): print a snapshot of each match followed when it
    ends; with ``once``, only the first one, then stop."""
    printed = 0
    while True:
        msg = await _recv(reader)
        if msg is None:
            if state.goodbye is None and printed == 0 and not once:
                raise FellBehind("the server closed the connection without a goodbye")
            console.print("the server closed the connection")
            return 0 if printed else 1
        shown = state.current
        state.apply(msg)
        if (why := _fatal(state)) is not None:
            raise WatchError(why)
        if msg.get("type") == "watch_end" and msg.get("match_id") == shown:
            console.print(state.render(shown))
            printed += 1
            if once or match is not None:
                return 0
        if state.goodbye is not None:
            console.print(Text(f"server: goodbye ({state.goodbye})"))
            return 0


async def _follow_live(reader: LineReader, state: WatchState, match: str | None, console: Console) -> int:
    """Redraw the view four times a second until the match asked for ends (or, following every
    match, until the server goes away). Raises :class:`FellBehind` or :class:`WatchError`."""
    failure: WatchError | None = None
    with Live(state.render(), console=console, auto_refresh=False, transient=False) as live:
        async with trio.open_nursery() as nursery:

            async def ticker() -> None:
                while True:
                    await trio.sleep(0.25)
                    live.update(state.render(), refresh=True)

            nursery.start_soon(ticker)
            while True:
                msg = await _recv(reader)
                if msg is None:
                    live.update(state.render(), refresh=True)
                    if state.goodbye is None:  # dropped without a word: the feed overflowed meanwhile
                        failure = FellBehind("the server closed the connection without a goodbye")
                    break
                state.apply(msg)
                try:
                    if (why := _fatal(state)) is not None:
                        failure = WatchError(why)
                except FellBehind as exc:
                    failure = exc
                if failure is not None or state.goodbye is not None:
                    break
                # no redraw per message: the ticker redraws four times a second, so a busy feed
                # costs the terminal no more (a redraw per message is what fell behind)
                if match is not None and msg.get("type") == "watch_end" and msg.get("match_id") == match:
                    break
            nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if state.goodbye is not None:
        console.print(Text(f"server: goodbye ({state.goodbye})"))
    return 0


def main(host: str, port: int, match: str | None, *, once: bool = False, name: str = "watcher", tls: bool = False,
         ca: str | None = None) -> int:
    """``arena watch``: follow ``match`` (or every match) on the contest server at
    ``host:port`` (``host`` may be ``tls://host[:port]``). TLS with ``tls``, ``ARENA_TLS=1`` or a
    ``tls://`` host, the server's certificate checked against ``ca`` (default ``$ARENA_TLS_CA``,
    else the system's trust store). With ``once``, print one snapshot when the first match
    followed is over and return. Returns the exit status (0 fine, 1 refused, 2 a bad address or
    CA file, 3 unreachable or TLS failed, 130 interrupted)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=110)
    try:
        host, port, tls_address = split_address(host, port)
    except UserError as exc:
        console.print(Text.assemble(("error:", "red"), f" --host: {exc}"), soft_wrap=True)
        return exc.status
    try:
        return trio.run(_watch, host, port, match, once, name, console, tls_address or tls_asked(tls), ca_file(ca))
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:  # Ctrl-C while the live view's tasks were running
        interrupted, rest = group.split(KeyboardInterrupt)
        if interrupted is not None and rest is None:
            return 130
        raise


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="arena watch", description="follow a contest's matches live")
    p.add_argument("match", nargs="?", help="a match id (default: every match, the first in play shown)")
    p.add_argument("--host", default="127.0.0.1", help="contest server (default 127.0.0.1; tls://host:port for TLS)")
    p.add_argument("--port", type=int, default=7000, help="its TCP port (default 7000, the [server] port)")
    p.add_argument("--tls", action="store_true", help="connect with TLS (also ARENA_TLS=1)")
    p.add_argument("--tls-ca", help="CA file that signed the server's certificate (default $ARENA_TLS_CA, else the "
                   "system's)")
    p.add_argument("--once", action="store_true", help="print one snapshot when the first match ends, then exit")
    p.add_argument("--name", default="watcher", help="the name you are known by (default watcher)")
    return p


if __name__ == "__main__":
    args = _parser().parse_args()
    sys.exit(main(args.host, args.port, args.match, once=args.once, name=args.name, tls=args.tls, ca=args.tls_ca))
