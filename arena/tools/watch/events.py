"""One line of text per public event, and what the event changes in the watcher's view of its
match: a table from the event's ``kind`` to a small function (:data:`MATCH_EVENTS` for those that
need no deal in progress, :data:`DEAL_EVENTS` for the others). Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena.tools.watch.model import SUIT_NAME, TRICKS_PER_DEAL, Deal, MatchView, card_text, plain_cards

CALL_WORDS = {"propose": "proposes an exchange", "play": "plays without proposing", "accept": "accepts",
              "refuse": "refuses"}
REASONS = {
    "king_turn_up": "the king turned up", "king": "the king of trumps", "tricks": "the trick", "vole": "the vole",
    "refusal": "a refusal", "carte_blanche": "carte blanche", "point": "the point", "sequence": "a sequence",
    "set": "a set", "lead": "a lead", "trick": "a trick", "last_trick": "the last trick", "cards": "the cards",
    "capot": "capot", "pique": "pique", "repique": "repique",
}


def pair(values: list[int] | None) -> str:
    """Two scores as ``3–1``."""
    values = values or [0, 0]
    return "–".join(str(v) for v in values)


def generic(ev: dict[str, Any]) -> str:
    """An event the watcher does not know, shown as its fields."""
    k = ev.get("kind", "?")
    fields = ", ".join(f"{a}={b}" for a, b in ev.items() if a != "kind")
    return f"{k}: {fields}"


def declaration_line(ev: dict[str, Any], who: Callable[[Any], str], d: Deal) -> str:
    """A Piquet declaration (point, sequence, set) and its verdict, as one line."""
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


# --------------------------------------------------------------------------- with or without a deal


def _target(m: MatchView, ev: dict[str, Any]) -> str:
    m.target = ev["target"]
    return f"target set by {card_text(ev['card']).plain}: {ev['target']} points"


def _dealer_draw(m: MatchView, ev: dict[str, Any]) -> str:
    cards = ev.get("cards") or []
    drawn = ", ".join(f"{m.who(s)} {card_text(c).plain}" for s, c in enumerate(cards))
    dealer = ev.get("dealer")
    m.to_act = None
    return f"draw for dealer: {drawn}; " + ("tie, again" if dealer is None else f"{m.who(dealer)} deals")


def _deal_start(m: MatchView, ev: dict[str, Any]) -> str:
    if m.deal is not None and ev.get("manche", 1) != m.deal.manche:
        m.scores = [0, 0]  # a new manche of a partie liée starts from zero
    m.deal = d = Deal(number=ev["deal"], dealer=ev["dealer"], elder=ev["elder"], manche=ev.get("manche", 1),
                      turn_up=ev.get("turn_up"), trump=ev.get("trump"), stock=ev.get("stock", 0))
    turn = ""
    if d.turn_up:
        turn = f", turn-up {card_text(d.turn_up).plain} ({SUIT_NAME.get(d.trump or '', d.trump)} are trumps)"
    manche = f" (manche {ev['manche']})" if m.rules.get("manches", 1) > 1 else ""
    # Écarté: elder speaks first (a public call); Piquet: the exchanges come first, hidden
    m.to_act = d.elder if m.game == "ecarte" else None
    return f"deal {d.number}{manche}: {m.who(d.dealer)} deals{turn}"


MATCH_EVENTS: dict[str, Callable[[MatchView, dict[str, Any]], str | None]] = {
    "target": _target, "dealer_draw": _dealer_draw, "deal_start": _deal_start,
}
"""Events shown whether or not a deal is in progress."""


# --------------------------------------------------------------------------- within a deal


def _call(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    seat, call = ev["seat"], ev["call"]
    d.calls.append(f"{m.who(seat)}: {call}")
    if call == "propose":
        m.to_act = d.dealer
    elif call == "accept":
        m.to_act = None  # the exchanges are hidden: elder discards, then the dealer
    else:  # play, refuse: elder leads the first trick
        m.to_act = d.elder
    return f"{m.who(seat)} {CALL_WORDS.get(call, call)}"


def _king(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    seat, card = ev["seat"], ev["card"]
    if not ev.get("announced", True):  # never public live; kept for completeness
        return f"{m.who(seat)} declines to announce {card_text(card).plain}"
    if card not in d.played[seat]:
        d.shown[seat].append(card)
    m.to_act = seat
    return f"{m.who(seat)} announces the king of trumps {card_text(card).plain}"


def _play(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    seat, card = ev["seat"], ev["card"]
    d.played[seat].append(card)
    if card in d.shown[seat]:
        d.shown[seat].remove(card)
    d.trick_no = ev.get("trick", d.trick_no)
    if len(d.trick) >= 2:
        d.trick = []
    verb = "leads" if not d.trick else "plays"
    d.trick.append((seat, card))
    m.to_act = 1 - seat if len(d.trick) == 1 else None
    return f"{m.who(seat)} {verb} {card_text(card).plain} (trick {d.trick_no})"


def _trick(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    d.tricks[ev["winner"]] += 1
    if len(ev["cards"]) == 2:
        d.trick = [(ev["leader"], ev["cards"][0]), (1 - ev["leader"], ev["cards"][1])]
    m.to_act = ev["winner"] if ev["trick"] < TRICKS_PER_DEAL.get(m.game, 5) else None
    return f"trick {ev['trick']} to {m.who(ev['winner'])}: {plain_cards(ev['cards'])}"


def _score(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    m.scores = list(ev["scores"])
    detail = f": {ev['detail']}" if ev.get("detail") else ""
    points = ev["points"]
    return (f"{m.who(ev['seat'])} scores {points} point{'s' if points != 1 else ''} for "
            f"{REASONS.get(ev['reason'], ev['reason'])}{detail} ({pair(m.scores)})")


def _deal_end(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    d.points = list(ev["points"])
    d.ended = ev.get("ended", "played")
    d.tricks = list(ev["tricks"])
    m.scores = list(ev["scores"])
    m.to_act = None
    stop = " (stopped: a king point reached the target)" if d.ended == "king_point" else ""
    return f"end of deal {d.number}: tricks {pair(d.tricks)}, points {pair(d.points)}{stop}"


def _manche_end(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    m.manches = list(ev["manches"])
    m.scores = list(ev["scores"])
    m.to_act = None
    return f"manche {ev['manche']} to {m.who(ev['winner'])} (manches {pair(m.manches)})"


def _carte_blanche(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    seat = ev["seat"]
    d.notes.append(f"{m.who(seat)} showed carte blanche: {plain_cards(ev['cards'])}")
    m.to_act = seat
    return f"{m.who(seat)} has carte blanche: {plain_cards(ev['cards'])}"


def _talon_exposed(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    d.notes.append(f"talon turned up by {m.who(ev['seat'])}: {plain_cards(ev['cards'])}")
    m.to_act = None
    return f"{m.who(ev['seat'])} turns up the rest of the talon: {plain_cards(ev['cards'])}"


def _declaration(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    d.declarations.append(ev)
    m.to_act = d.elder  # after the declarations elder leads
    return declaration_line(ev, m.who, d)


def _match_score(m: MatchView, d: Deal, ev: dict[str, Any]) -> str:
    m.final = ev
    m.scores = list(ev["totals"])
    w = ev.get("winner")
    res = "a draw" if w is None else f"{m.who(w)} wins by {ev['margin']}"
    m.to_act = None
    return f"final reckoning: {pair(ev['totals'])}, {res}" + (" (rubicon)" if ev.get("rubicon") else "")


DEAL_EVENTS: dict[str, Callable[[MatchView, Deal, dict[str, Any]], str | None]] = {
    "call": _call, "king": _king, "play": _play, "trick": _trick, "score": _score, "deal_end": _deal_end,
    "manche_end": _manche_end, "carte_blanche": _carte_blanche, "talon_exposed": _talon_exposed,
    "declaration": _declaration, "match_score": _match_score,
}
"""Events of the deal in progress (shown as :func:`generic` lines if none is)."""


def event_line(m: MatchView, ev: dict[str, Any]) -> str | None:
    """Apply one public event to ``m`` and return its line for the log (None: no line)."""
    k = ev.get("kind")
    if k in MATCH_EVENTS:
        return MATCH_EVENTS[k](m, ev)
    if m.deal is not None and k in DEAL_EVENTS:
        return DEAL_EVENTS[k](m, m.deal, ev)
    return generic(ev)
