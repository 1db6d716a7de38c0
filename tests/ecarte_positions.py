"""Hand-made Écarté positions for the engine tests: stacked packs and small drivers.

Every shuffle of ``arena.games.ecarte`` goes through the name ``shuffled`` imported into that
module, so a test replaces it (``monkeypatch``) with :class:`StackedShuffle`, which hands out
prepared packs in order: first the target pack (only with ``target = "turn-up"``), then the
draw-for-dealer pack(s), then one 32-card pack per deal (ecarte.md §E7.1, §E2.1, §E2.4).

:func:`deal_pack` builds a whole pack from "elder's hand, dealer's hand, turn-up, top of the
stock" for a given deal pattern and fills the rest of the stock deterministically.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

import arena.games.ecarte as ecarte_mod
from arena.cards import PACK_32, Card
from arena.cards import shuffled as real_shuffled
from arena.games.base import Seen
from arena.games.ecarte import EcarteMatch
from protocol.messages import Rules

PATTERNS: dict[str, tuple[int, ...]] = {"3-2": (3, 2), "2-3": (2, 3), "2-2-1": (2, 2, 1)}
"""ecarte.md §E2.4, written out again here (not imported) so the tests check the engine."""


def deal_positions(pattern: str = "3-2") -> tuple[list[int], list[int]]:
    """Pack positions (top = 0) of elder's and the dealer's five cards for ``pattern``.

    Packets alternate elder, dealer, elder, dealer, ... with the sizes of the pattern (§E2.4):
    ``3-2`` gives elder 0-2, 6-7 and the dealer 3-5, 8-9.
    """
    elder: list[int] = []
    dealer: list[int] = []
    pos = 0
    for size in PATTERNS[pattern]:
        elder.extend(range(pos, pos + size))
        pos += size
        dealer.extend(range(pos, pos + size))
        pos += size
    assert pos == 10
    return elder, dealer


def split(cards: str | Iterable[Card]) -> list[Card]:
    """``"Kh Qh 7c"`` -> ``["Kh", "Qh", "7c"]``; a list is returned as a list."""
    if isinstance(cards, str):
        return cards.split()
    return list(cards)


def deal_pack(
    elder: str | Iterable[Card],
    dealer: str | Iterable[Card],
    turn_up: Card,
    stock_top: str | Iterable[Card] = (),
    pattern: str = "3-2",
) -> list[Card]:
    """A full 32-card pack that deals ``elder`` and ``dealer`` (five cards each, in the order
    given), turns up ``turn_up`` (11th card) and has ``stock_top`` on top of the stock (drawn
    first). The remaining cards follow in the fixed pack order of :data:`PACK_32`."""
    e, d, top = split(elder), split(dealer), split(stock_top)
    assert len(e) == 5 and len(d) == 5, (e, d)
    pack: list[Card | None] = [None] * 11
    epos, dpos = deal_positions(pattern)
    for p, c in zip(epos, e, strict=True):
        pack[p] = c
    for p, c in zip(dpos, d, strict=True):
        pack[p] = c
    pack[10] = turn_up
    used = set(e) | set(d) | {turn_up} | set(top)
    assert len(used) == 11 + len(top), "a card is named twice"
    assert used <= set(PACK_32), f"not cards: {used - set(PACK_32)}"
    full: list[Card] = [c for c in pack if c is not None] + top
    full += [c for c in PACK_32 if c not in used]
    assert sorted(full) == sorted(PACK_32)
    return full


def pack_with_top(*top: Card) -> list[Card]:
    """A pack with ``top`` as its first cards (for the draw for dealer or the target card)."""
    return list(top) + [c for c in PACK_32 if c not in top]


def draw_for(dealer: int) -> list[Card]:
    """A draw-for-dealer pack (§E2.1) that makes ``dealer`` the first dealer at once."""
    return pack_with_top("Kc", "7d") if dealer == 0 else pack_with_top("7d", "Kc")


class StackedShuffle:
    """Replacement for ``shuffled``: returns the prepared packs in order, then falls back to the
    real seeded shuffle (so a match can go on after the hand-made deals)."""

    def __init__(self, packs: Iterable[Sequence[Card]]) -> None:
        self.packs = [list(p) for p in packs]
        for p in self.packs:
            assert sorted(p) == sorted(PACK_32), "a stacked pack must hold the 32 cards"
        self.calls = 0

    def __call__(self, cards: Sequence[Card], rng: random.Random) -> list[Card]:
        self.calls += 1
        if self.packs:
            return list(self.packs.pop(0))
        return real_shuffled(cards, rng)


def stack(monkeypatch: Any, *packs: Sequence[Card]) -> StackedShuffle:
    """Install a :class:`StackedShuffle` of ``packs`` in ``arena.games.ecarte``."""
    st = StackedShuffle(packs)
    monkeypatch.setattr(ecarte_mod, "shuffled", st)
    return st


def new_match(
    monkeypatch: Any,
    *deals: Sequence[Card],
    dealer: int = 0,
    rules: Rules | None = None,
    seed: int = 0,
    pre: Sequence[Sequence[Card]] | None = None,
) -> tuple[EcarteMatch, list[Seen]]:
    """Start a match whose first dealer is ``dealer`` and whose deals use ``deals`` in order.

    ``pre`` replaces the default draw-for-dealer pack (and holds the target pack first when the
    rules say ``target = "turn-up"``).
    """
    head = list(pre) if pre is not None else [draw_for(dealer)]
    stack(monkeypatch, *head, *deals)
    match = EcarteMatch(rules or Rules(), random.Random(seed))
    return match, match.start()


def events_of(seen: Iterable[Seen], kind: type | None = None) -> list[Any]:
    """The events of ``seen`` (optionally only those of struct type ``kind``)."""
    return [ev for ev, _ in seen if kind is None or isinstance(ev, kind)]


def seen_of(seen: Iterable[Seen], kind: type) -> list[Seen]:
    """The (event, seen_by) pairs of ``seen`` whose event is a ``kind``."""
    return [(ev, by) for ev, by in seen if isinstance(ev, kind)]


def run(match: EcarteMatch, *actions: Any) -> list[Seen]:
    """Apply ``actions`` in order, checking each is offered, and return all their events.

    A discard is compared as a set of cards against the legal list.
    """
    out: list[Seen] = []
    for action in actions:
        legal = match.legal_actions()
        if isinstance(action, list):
            assert any(sorted(a) == sorted(action) for a in legal), (action, legal)
        else:
            assert action in legal, (match.decision, action, legal)
        out += match.apply(action)
    return out


def finish_deal(match: EcarteMatch, king: str = "decline") -> list[Seen]:
    """Play on with the first legal card (``king`` for any king offer) until the deal ends
    (the deal number changes or the match is over). Only valid once play has started."""
    deal = match.deal_no
    out: list[Seen] = []
    while not match.over and match.deal_no == deal:
        assert match.decision in ("play", "king"), match.decision
        action = king if match.decision == "king" else match.legal_actions()[0]
        out += match.apply(action)
    return out


def snapshot(m: EcarteMatch) -> tuple[Any, ...]:
    """Everything observable about ``m``: its attributes (deep-copied), the state of its
    random generator, both views and the legal list (to check an illegal action changed
    nothing)."""
    legal = copy.deepcopy(m.legal_actions()) if m.decision is not None else None
    state = {k: copy.deepcopy(v) for k, v in vars(m).items() if k not in ("rng", "_legal")}
    return (
        state,
        m.rng.getstate(),
        msgspec.json.encode(m.view(0)),
        msgspec.json.encode(m.view(1)),
        legal,
        m.scores,
        m.manches,
    )
