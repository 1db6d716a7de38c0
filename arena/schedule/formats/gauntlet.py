"""Gauntlet: one bot (the *hero*) plays every other bot ``games`` matches, seats alternating,
in duplicate pairs by default (ecarte.md §E8.2). The others never meet each other: this is
how a new bot is measured against a fixed field."""

from __future__ import annotations

from arena.schedule.formats.base import StaticFormat
from arena.schedule.formats.round_robin import pair_matches


class Gauntlet(StaticFormat):
    """The gauntlet as a :class:`~arena.schedule.formats.Format`. Raises ``ValueError`` if ``hero`` is
    not one of ``bots`` or there is nobody to play."""

    name = "gauntlet"

    def __init__(self, bots: list[str], games: int, seed: int, duplicate: bool, hero: str) -> None:
        if hero not in bots:
            raise ValueError(f"gauntlet hero {hero!r} is not among the bots")
        others = [b for b in bots if b != hero]
        if not others:
            raise ValueError("a gauntlet needs at least one opponent")
        self.hero = hero
        super().__init__(pair_matches([(hero, o) for o in others], games, seed, duplicate))
