"""What each reader may see of a match log, and how it reads: :func:`public_view` (a spectator,
a consumer marked public), :func:`seat_view` (the author of one seat's bot) and :func:`describe`
(one line as a sentence). The redaction of a single incident or result line, which the live stream
of a match uses too, is :mod:`arena.match.log`'s (:func:`~arena.match.log.incident_for_others`,
:func:`~arena.match.log.result_for_others`).
"""

from __future__ import annotations

from typing import Any

from arena.match.log import RAW_BYTES, incident_for_others, raw_bytes, result_for_others
from arena.match.replay import OFFERED_MAX


def public_view(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a spectator or a log consumer marked *public* may read of a match log.

    Keeps the header without its ``seed`` (the seed alone would reveal every card), the
    events both seats saw, incidents (seat and code; see :func:`~arena.match.log.incident_for_others`) and the
    result (a forfeit's detail without cards, :func:`~arena.match.log.result_for_others`); drops hidden events
    (hands, exchanges' cards, the deck order) and ``action`` lines (a discard names the cards
    thrown). The public therefore knows the same as, or less than, either seat at every point.
    """
    out = []
    for line in lines:
        kind = line.get("type")
        if kind == "match":
            out.append({k: v for k, v in line.items() if k != "seed"})
        elif kind == "event":
            if not line["hidden"]:
                out.append(line)
        elif kind == "incident":
            out.append(incident_for_others(line))
        elif kind == "result":
            out.append(result_for_others(line))
    return out


def seat_view(lines: list[dict[str, Any]], seat: int) -> list[dict[str, Any]]:
    """What the author of the bot in ``seat`` may read of a match log (``lines`` as
    :func:`~arena.match.log.read_log` or :func:`~arena.match.replay.verify_bytes` give them): the
    header without its ``seed``, the events ``seat`` saw, its own actions, its own incidents whole
    (what its bot sent, what it was offered: ``raw``, ``action``, ``offered``), the opponent's
    incidents as the public sees them (no raw answer, no detail naming cards), and the result.
    Never the opponent's hidden events, actions or answers. ``ValueError`` for a seat other than 0 or 1."""
    if seat not in (0, 1):
        raise ValueError(f"seat is 0 or 1, not {seat!r}")
    out = []
    for line in lines:
        kind = line.get("type")
        if kind == "match":
            out.append({k: v for k, v in line.items() if k != "seed"})
        elif kind == "event":
            if seat in line["seen_by"]:
                out.append(line)
        elif kind in ("action", "incident"):
            if line.get("seat") == seat:
                out.append(line)
            elif kind == "incident":
                out.append(incident_for_others(line))
        elif kind == "result":
            out.append(line if line.get("faulty") == seat else result_for_others(line))
    return out


def describe(line: dict[str, Any], names: list[str]) -> str:
    """One log line as a readable sentence (``names``: bot names per seat)."""
    kind = line.get("type")

    def who(seat: Any) -> str:
        return names[seat] if isinstance(seat, int) and 0 <= seat < len(names) else str(seat)

    if kind == "match":
        seed = line.get("seed", "hidden")
        return f"match {line['match_id']}: {line['game']}, {who(0)} (seat 0) v {who(1)} (seat 1), seed {seed}"
    if kind == "action":
        auto = " (played by the referee)" if line.get("auto") else ""
        return f"  {who(line['seat'])} -> {line['decision']}: {line['action']}{auto}"
    if kind == "incident":
        text = f"  ! {who(line['seat'])}: {line['code']}" + (f": {line['detail']}" if line.get("detail") else "")
        if line.get("raw") is not None:
            size = line.get("raw_len", 0)
            cut = f", the first {RAW_BYTES} shown" if size > len(raw_bytes(line) or b"") else ""
            text += f"\n      it sent ({size:,} bytes{cut}): {line['raw']}"
        if "offered" in line:
            offered = line["offered"]
            if isinstance(offered, dict) and "count" in offered:
                offered = f"{offered['count']} actions, the first {OFFERED_MAX}: {offered['first']}"
            text += f"\n      it was offered: {offered}"
        return text
    if kind == "result":
        w = "nobody" if line["winner"] is None else who(line["winner"])
        return f"result: {w} wins ({line['reason']}), scores {line['scores']}"
    ev = line["event"]
    k = ev["kind"]
    seen = ", ".join(who(s) for s in line["seen_by"]) or "nobody"
    mark = f"  [hidden: seen by {seen}]" if line.get("hidden") else ""
    if k == "deal_start":
        trump = f", turn-up {ev['turn_up']} (trump {ev['trump']})" if ev.get("turn_up") else ""
        text = f"deal {ev['deal']}: {who(ev['dealer'])} deals{trump}, stock {ev['stock']}"
    elif k == "hand":
        text = f"  {who(ev['seat'])} holds {' '.join(ev['cards'])}"
    elif k == "deck":
        text = f"  pack {' '.join(ev['cards'])}"
    elif k == "call":
        text = f"  {who(ev['seat'])}: {ev['call']}"
    elif k == "exchange":
        cards = f" ({' '.join(ev['discarded'])} for {' '.join(ev['drawn'])})" if ev.get("discarded") is not None else ""
        text = f"  {who(ev['seat'])} exchanges {ev['count']}{cards}, stock {ev['stock']}"
    elif k == "play":
        text = f"  {who(ev['seat'])} plays {ev['card']}"
    elif k == "trick":
        text = f"  trick {ev['trick']} to {who(ev['winner'])}: {' '.join(ev['cards'])}"
    elif k == "score":
        detail = f" ({ev['detail']})" if ev.get("detail") else ""
        text = f"  {who(ev['seat'])} scores {ev['points']} for {ev['reason']}{detail}: {ev['scores']}"
    elif k == "king":
        text = f"  {who(ev['seat'])} {'announces' if ev.get('announced', True) else 'does not announce'} {ev['card']}"
    elif k == "deal_end":
        text = f"  end of deal {ev['deal']}: tricks {ev['tricks']}, points {ev['points']}, scores {ev['scores']}"
    else:
        text = f"  {k}: " + ", ".join(f"{a}={b}" for a, b in ev.items() if a != "kind")
    return text + mark
