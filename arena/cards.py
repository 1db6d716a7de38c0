"""Cards as two-character strings, the packs, and seeded shuffles.

A card is a ``str`` of two ASCII characters: rank ``7 8 9 T J Q K A`` (``6`` too in Piquet's
36-card pack) followed by suit ``c d h s``: ``"Ks"``, ``"Th"``. Plain strings keep the engines
fast and the wire format identical to the in-memory one.

Ranking is game-specific (ecarte.md §E1: K Q J A T 9 8 7), so each engine owns its order;
this module only knows the pack.
"""

from __future__ import annotations

import random

SUITS = "cdhs"
RANKS_32 = "789TJQKA"
RANKS_36 = "6789TJQKA"

Card = str


def make_pack(ranks: str = RANKS_32) -> list[Card]:
    """Return a new pack in a fixed order (suit-major: ``7c 8c ... Ac 7d ...``).

    ``ranks`` is ``RANKS_32`` (32 cards, ecarte.md §E1) or ``RANKS_36`` (Piquet's 36).
    """
    return [r + s for s in SUITS for r in ranks]


PACK_32: tuple[Card, ...] = tuple(make_pack(RANKS_32))


def shuffled(cards: list[Card] | tuple[Card, ...], rng: random.Random) -> list[Card]:
    """Return a shuffled copy of ``cards`` using only ``rng`` (Fisher-Yates, top card first).

    Each swap index is ``int(rng.random() * (i + 1))``: one float per card, about three times
    faster than ``random.shuffle``'s bit-by-bit rejection sampling, with a bias below 2**-48
    (irrelevant for a 32- or 36-card pack). The same ``rng`` state always gives the same order.
    """
    out = list(cards)
    rand = rng.random
    for i in range(len(out) - 1, 0, -1):
        j = int(rand() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return out
