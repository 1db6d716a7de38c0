"""What the doctor checks: the situations of each game a bot must meet, the checks every run
makes, and the tags that say which situation a request is."""

from __future__ import annotations

from typing import Any

from arena.games.ecarte import RANK

SITUATIONS: list[tuple[str, str, bool]] = [
    # key, title, forced (the scripted deal reaches it whatever the bot chooses)
    ("propose", "propose (elder)", True),
    ("respond", "respond (dealer)", True),
    ("discard_elder", "discard as elder (1..k)", False),
    ("discard_dealer", "discard as dealer (0..k)", False),
    ("king_elder", "king announcement as elder", True),
    ("king_dealer", "king announcement as dealer", True),
    ("lead", "play: lead", True),
    ("follow_win", "play: follow and win", True),
    ("follow_low", "play: follow, cannot win", True),
    ("trump", "play: trump when void", True),
    ("any", "play: anything (void, no trump)", True),
    ("short", "short stock (k < 5)", False),
    ("skip", "dealer's discard skipped", False),
    ("bid", "chouette bid (outside a match)", True),
]
PIQUET_SITUATIONS: list[tuple[str, str, bool]] = [
    # piquet.md §P4-§P6; the discard in the form the bot asked for at hello (protocol.md §8.13)
    ("pq_discard_elder", "Piquet discard as elder (1..5)", True),
    ("pq_discard_younger", "Piquet discard as younger (0..talon)", True),
    ("pq_36", "Piquet discard, 36 cards (elder 1..8)", True),
    ("pq_look", "Piquet look (elder took fewer than his maximum)", False),
    ("pq_expose", "Piquet expose (cards left in the talon)", False),
    ("pq_lead", "Piquet play: lead", True),
    ("pq_follow", "Piquet play: follow suit", True),
    ("pq_void", "Piquet play: void in the suit led", False),
    ("bid", "chouette bid (outside a match)", True),
]
PLAYED_OUT = frozenset({"target", "rubicon", "cent", "draw"})
"""Match-end reasons of a match played to its end (docs/protocol.md §12)."""
GLOBAL_CHECKS: list[tuple[str, str]] = [
    ("full_match", "full match to the target"),
    ("in_time", "answers in time"),
    ("legal", "answers are legal"),
    ("ids", "answers carry the request id"),
    ("once", "one answer per request"),
    ("wellformed", "well-formed lines"),
    ("reading", "keeps reading"),
    ("fields", "unknown fields ignored"),
    ("long", "reads long lines"),
    ("types", "unknown message types ignored"),
    ("goodbye", "goodbye"),
]


def classify(request: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """The situation tags of a request (see :data:`SITUATIONS`), from its state and the events
    sent in front of it."""
    decision = request.get("decision")
    state = request.get("state") or {}
    seat, elder = state.get("seat"), state.get("elder")
    tags: list[str] = []
    if decision == "bid":
        return ["bid"]
    if state.get("game") == "piquet":
        return classify_piquet(decision, state)
    if decision == "propose":
        tags.append("propose")
    elif decision == "respond":
        tags.append("respond")
    elif decision == "discard":
        tags.append("discard_elder" if seat == elder else "discard_dealer")
        if state.get("stock", 21) < 5:
            tags.append("short")
    elif decision == "king":
        tags.append("king_elder" if seat == elder else "king_dealer")
    elif decision == "play":
        trick = state.get("trick") or []
        hand = state.get("hand") or []
        if not trick:
            tags.append("lead")
        else:
            lead = trick[0]["card"]
            same = [c for c in hand if c[1] == lead[1]]
            if same:
                higher = any(RANK[c[0]] > RANK[lead[0]] for c in same)
                tags.append("follow_win" if higher else "follow_low")
            elif any(c[1] == state.get("trump") for c in hand):
                tags.append("trump")
            else:
                tags.append("any")
    if seat != elder and decision != "discard":
        for ev in events:
            if ev.get("kind") == "exchange" and ev.get("seat") == elder and ev.get("stock") == 0:
                tags.append("skip")
                break
    return tags


def classify_piquet(decision: Any, state: dict[str, Any]) -> list[str]:
    """The Piquet situation tags (see :data:`PIQUET_SITUATIONS`) of a request."""
    if decision == "discard":
        tags = ["pq_discard_elder" if state.get("seat") == state.get("elder") else "pq_discard_younger"]
        if (state.get("talon") or 0) + sum(state.get("exchanged") or [0, 0]) >= 12:
            tags.append("pq_36")
        return tags
    if decision in ("look", "expose"):
        return [f"pq_{decision}"]
    if decision == "play":
        trick = state.get("trick") or []
        if not trick:
            return ["pq_lead"]
        suit = trick[0]["card"][1]
        return ["pq_follow" if any(c[1] == suit for c in state.get("hand") or []) else "pq_void"]
    return []
