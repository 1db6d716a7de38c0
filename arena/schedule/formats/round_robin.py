"""Round-robin: every pair of bots plays ``games`` matches, seats alternating.

Matches are ordered round by round (the circle method), so consecutive matches involve
disjoint pairs and can run at the same time. With ``duplicate`` (the default, ecarte.md
§E8.2) matches 2k and 2k+1 of a pair share one seed with the seats swapped; an odd last match
is unpaired.
"""

from __future__ import annotations

from arena.schedule.formats.base import Pairing, StaticFormat, derive_seed

__all__ = ["RoundRobin", "circle_rounds", "derive_seed", "schedule"]


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


def pair_matches(pairs: list[tuple[str, str]], games: int, seed: int, duplicate: bool) -> list[Pairing]:
    """``games`` matches for each pair, seats alternating, ordered game-major so consecutive
    matches are disjoint; duplicate pairs share a seed (see the module docstring)."""
    out: list[Pairing] = []
    for g in range(games):
        for a, b in pairs:
            bot0, bot1 = (a, b) if g % 2 == 0 else (b, a)
            if duplicate and not (g % 2 == 0 and g == games - 1):
                pair_id = f"{a}|{b}|{g // 2}"
                s = derive_seed(seed, "pair", a, b, g // 2)
            else:
                pair_id = None
                s = derive_seed(seed, "match", a, b, g)
            out.append(Pairing(index=len(out), bot0=bot0, bot1=bot1, seed=s, pair=pair_id))
    return out


def schedule(bots: list[str], games: int, seed: int, duplicate: bool = True) -> list[Pairing]:
    """All matches of a round-robin. Raises ``ValueError`` with fewer than two bots or
    duplicate names."""
    if len(bots) < 2:
        raise ValueError("a round-robin needs at least two bots")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be unique")
    pairs = [p for rnd in circle_rounds(list(bots)) for p in rnd]
    return pair_matches(pairs, games, seed, duplicate)


class RoundRobin(StaticFormat):
    """The round-robin as a :class:`~arena.schedule.formats.Format`."""

    name = "round-robin"

    def __init__(self, bots: list[str], games: int, seed: int, duplicate: bool = True) -> None:
        super().__init__(schedule(bots, games, seed, duplicate))
