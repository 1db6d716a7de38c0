"""Hand-made Piquet positions for the engine tests: stacked packs and small drivers.

Every shuffle of ``arena.games.piquet`` goes through the name ``shuffled`` imported into that
module, so a test replaces it (``monkeypatch``) with :class:`StackedShuffle`, which hands out
prepared packs in order: first the draw-for-dealer pack(s) (piquet.md §P2.1: the **lower** card
deals; equal ranks draw again from a new pack), then one pack per deal.

Dealing (§P2.2), written out again here (not imported) so the tests check the engine: packets
of ``rules.packets`` (2 or 3) alternately to elder then to the dealer until each holds twelve;
the rest of the pack is the talon, top first.

:func:`deal_pack` builds a whole pack from "elder's twelve, the dealer's twelve, the top of the
talon" and fills the rest of the talon deterministically.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

import arena.games.piquet as piquet_mod
from arena.cards import RANKS_32, RANKS_36, Card, make_pack
from arena.cards import shuffled as real_shuffled
from arena.games.base import Seen
from arena.games.piquet import PiquetMatch
from protocol.messages import Rules

PACK_32: tuple[Card, ...] = tuple(make_pack(RANKS_32))
PACK_36: tuple[Card, ...] = tuple(make_pack(RANKS_36))


def full_pack(size: int = 32) -> tuple[Card, ...]:
    """The 32- or 36-card pack in its fixed order (§P1)."""
    return PACK_36 if size == 36 else PACK_32


def deal_positions(packets: int = 2) -> tuple[list[int], list[int]]:
    """Pack positions (top = 0) of elder's and the dealer's twelve cards (§P2.2).

    Packets of ``packets`` cards alternate elder, dealer, elder, ... until 24 cards are out:
    with 2, elder gets 0-1, 4-5, 8-9, ... and the dealer 2-3, 6-7, ...; with 3, elder gets 0-2,
    6-8, 12-14, 18-20 and the dealer 3-5, 9-11, 15-17, 21-23.
    """
    assert packets in (2, 3)
    elder: list[int] = []
    dealer: list[int] = []
    pos = 0
    while pos < 24:
        elder.extend(range(pos, pos + packets))
        pos += packets
        dealer.extend(range(pos, pos + packets))
        pos += packets
    assert pos == 24 and len(elder) == len(dealer) == 12
    return elder, dealer


def split(cards: str | Iterable[Card]) -> list[Card]:
    """``"Kh Qh 7c"`` -> ``["Kh", "Qh", "7c"]``; a list is returned as a list."""
    if isinstance(cards, str):
        return cards.split()
    return list(cards)


def deal_pack(
    elder: str | Iterable[Card],
    dealer: str | Iterable[Card],
    talon_top: str | Iterable[Card] = (),
    packets: int = 2,
    size: int = 32,
) -> list[Card]:
    """A full pack that deals ``elder`` and ``dealer`` twelve cards each (in the packets of the
    rule set) and has ``talon_top`` on top of the talon (drawn first). The rest of the talon
    follows in the fixed pack order."""
    e, d, top = split(elder), split(dealer), split(talon_top)
    assert len(e) == 12 and len(d) == 12, (len(e), len(d))
    pack: list[Card | None] = [None] * 24
    epos, dpos = deal_positions(packets)
    for p, c in zip(epos, e, strict=True):
        pack[p] = c
    for p, c in zip(dpos, d, strict=True):
        pack[p] = c
    used = set(e) | set(d) | set(top)
    assert len(used) == 24 + len(top), "a card is named twice"
    every = full_pack(size)
    assert used <= set(every), f"not cards of the {size}-card pack: {used - set(every)}"
    out: list[Card] = [c for c in pack if c is not None] + top
    out += [c for c in every if c not in used]
    assert sorted(out) == sorted(every)
    return out


def pack_with_top(*top: Card, size: int = 32) -> list[Card]:
    """A pack with ``top`` as its first cards (for the draw for first dealer)."""
    return list(top) + [c for c in full_pack(size) if c not in top]


def draw_for(dealer: int, size: int = 32) -> list[Card]:
    """A draw-for-dealer pack that makes ``dealer`` the first dealer at once: seat 0 draws the
    first card, seat 1 the second, and the lower card deals (§P2.1)."""
    low, high = "7d", "Kc"
    return pack_with_top(low, high, size=size) if dealer == 0 else pack_with_top(high, low, size=size)


class StackedShuffle:
    """Replacement for ``shuffled``: returns the prepared packs in order, then falls back to the
    real seeded shuffle (so a match can go on after the hand-made deals)."""

    def __init__(self, packs: Iterable[Sequence[Card]]) -> None:
        self.packs = [list(p) for p in packs]
        self.calls = 0

    def __call__(self, cards: Sequence[Card], rng: random.Random) -> list[Card]:
        self.calls += 1
        if self.packs:
            pack = self.packs.pop(0)
            assert sorted(pack) == sorted(cards), "a stacked pack must hold the whole pack"
            return list(pack)
        return real_shuffled(cards, rng)


def stack(monkeypatch: Any, *packs: Sequence[Card]) -> StackedShuffle:
    """Install a :class:`StackedShuffle` of ``packs`` in ``arena.games.piquet``."""
    st = StackedShuffle(packs)
    monkeypatch.setattr(piquet_mod, "shuffled", st)
    return st


def new_match(
    monkeypatch: Any,
    *deals: Sequence[Card],
    dealer: int = 0,
    rules: Rules | None = None,
    seed: int = 0,
    pre: Sequence[Sequence[Card]] | None = None,
) -> tuple[PiquetMatch, list[Seen]]:
    """Start a match whose first dealer is ``dealer`` and whose deals use ``deals`` in order.
    ``pre`` replaces the default draw-for-dealer pack."""
    rules = rules or Rules()
    head = list(pre) if pre is not None else [draw_for(dealer, rules.pack)]
    stack(monkeypatch, *head, *deals)
    match = PiquetMatch(rules, random.Random(seed))
    return match, match.start()


def events_of(seen: Iterable[Seen], kind: type | None = None) -> list[Any]:
    """The events of ``seen`` (optionally only those of struct type ``kind``)."""
    return [ev for ev, _ in seen if kind is None or isinstance(ev, kind)]


def seen_of(seen: Iterable[Seen], kind: type) -> list[Seen]:
    """The (event, seen_by) pairs of ``seen`` whose event is a ``kind``."""
    return [(ev, by) for ev, by in seen if isinstance(ev, kind)]


def run(match: PiquetMatch, *actions: Any) -> list[Seen]:
    """Apply ``actions`` in order, checking each is offered, and return all their events.
    A discard is compared as a set of cards against the legal list."""
    out: list[Seen] = []
    for action in actions:
        legal = match.legal_actions()
        if isinstance(action, list):
            assert any(isinstance(a, list) and sorted(a) == sorted(action) for a in legal), (action, match.decision)
        else:
            assert action in legal, (match.decision, action, legal)
        out += match.apply(action)
    return out


def exchange(
    match: PiquetMatch,
    elder: str | Iterable[Card],
    younger: str | Iterable[Card] = (),
    look: str = "pass",
    expose: str = "keep",
) -> list[Seen]:
    """The whole exchange (§P4): elder discards ``elder``, answers the look decision if it is
    asked, younger discards ``younger``, answers the expose decision if it is asked."""
    out = run(match, split(elder))
    if match.decision == "look":
        out += run(match, look)
    assert match.decision == "discard" and match.to_act == match.dealer, match.decision
    out += run(match, split(younger))
    if match.decision == "expose":
        out += run(match, expose)
    assert match.decision == "play", match.decision
    return out


def play_cards(match: PiquetMatch, cards: str | Iterable[Card]) -> list[Seen]:
    """Play ``cards`` in order, whoever is to act (each must be legal)."""
    out: list[Seen] = []
    for card in split(cards):
        assert match.decision == "play", match.decision
        out += run(match, card)
    return out


def finish_deal(match: PiquetMatch) -> list[Seen]:
    """Play on with the first legal card until the deal ends (the deal number changes or the
    match is over). Only valid once play has started."""
    deal = match.deal_no
    out: list[Seen] = []
    while not match.over and match.deal_no == deal:
        assert match.decision == "play", match.decision
        out += match.apply(match.legal_actions()[0])
    return out


def snapshot(m: PiquetMatch) -> tuple[Any, ...]:
    """Everything observable about ``m``: its attributes (deep-copied), the state of its random
    generator, both views and the legal list (to check an illegal action changed nothing)."""
    legal = copy.deepcopy(m.legal_actions()) if m.decision is not None else None
    state = {k: copy.deepcopy(v) for k, v in vars(m).items() if k not in ("rng", "_legal")}
    return (
        state,
        m.rng.getstate(),
        msgspec.json.encode(m.view(0)),
        msgspec.json.encode(m.view(1)),
        legal,
        m.scores,
    )
