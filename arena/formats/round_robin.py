"""Round-robin: every pair of bots plays ``games`` matches, seats alternating.

Matches are ordered round by round (the circle method), so consecutive matches involve
disjoint pairs and can run at the same time. Each match gets its own seed, derived from the
tournament seed and the match's position, so one tournament seed reproduces every deal.
"""

from __future__ import annotations

import random


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed derived from ``seed`` and ``parts`` (stable across runs and platforms:
    ``random.Random`` seeds a string through SHA-512)."""
    return random.Random(":".join(map(str, (seed, *parts)))).getrandbits(63)


def circle_rounds(bots: list[str]) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint pairs covering every pair once (circle method; a bye if odd)."""
    players: list[str | None] = list(bots) + ([None] if len(bots) % 2 else [])
    n = len(players)
    rounds = []
    for _ in range(n - 1):
        pairs = [(players[i], players[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def schedule(bots: list[str], games: int, seed: int) -> list[tuple[str, str, int]]:
    """All matches ``(seat0, seat1, match_seed)`` of a round-robin: each pair plays ``games``
    matches, alternating who sits in seat 0. Raises ``ValueError`` with fewer than two bots
    or duplicate names."""
    if len(bots) < 2:
        raise ValueError("a round-robin needs at least two bots")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be unique")
    out = []
    rounds = circle_rounds(list(bots))
    for g in range(games):
        for rnd in rounds:
            for a, b in rnd:
                pair = (a, b) if g % 2 == 0 else (b, a)
                out.append((*pair, derive_seed(seed, len(out))))
    return out
