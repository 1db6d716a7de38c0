"""The watcher's state (:class:`WatchState`): every match followed, fed the server's decoded
messages and drawn with rich; pure (no I/O, the clock injected), so it is tested without a
terminal (:mod:`arena.tools.watch`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from arena.tools.watch.events import declaration_line, event_line, pair
from arena.tools.watch.model import (
    GAME_TITLE,
    KEEP_ENDED,
    SUIT_NAME,
    TRICKS_PER_DEAL,
    Deal,
    MatchView,
    Reveal,
    card_text,
    cards_text,
    plain_cards,
)


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
        m.log.append(f"match over: {result} ({m.reason}), {pair(m.scores)}")
        self.ended.append(m.match_id)
        ended = [mid for mid, v in self.matches.items() if v.over]
        for mid in ended[:-KEEP_ENDED]:
            if mid != self.current:
                del self.matches[mid]
        if m.match_id == self.current:
            self._pick()

    # ------------------------------------------------------------------ public events

    def _event(self, m: MatchView, seq: int, ev: dict[str, Any]) -> None:
        """One public event: the match's view updated and its line logged (:mod:`.events`)."""
        m.seq = seq
        m.since = self.clock()
        line = event_line(m, ev)
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
                line.append(f"{o.match_id} {o.bots[0]} {pair(o.scores)} {o.bots[1]}")
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
            t.append(f"OVER: {result} ({m.reason}), {pair(m.scores)}\n", style="bold green")
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
            trick = Text(f"deal over: tricks {pair(d.tricks)}, points {pair(d.points or [0, 0])}")
        out.append(trick)
        if d.calls and m.game == "ecarte":
            talk = ", ".join(d.calls[-4:])
            if len(d.calls) > 4:
                accepted = sum(c.endswith(": accept") for c in d.calls)
                talk = f"{accepted} exchange{'s' if accepted != 1 else ''} accepted in all; … {talk}"
            out.append(Text("talk: " + talk, style="dim"))
        for dec in d.declarations:
            out.append(Text(declaration_line(dec, m.who, d)))
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
