"""Duplicate deals: a round-robin of duplicate pairs in which every match is a fixed number of
deals (``Rules.deals``), rated on the deals rather than on the matches.

The schedule is an ordinary round-robin of duplicate pairs (:func:`arena.schedule.formats.round_robin.
pair_matches`): the two matches of a pair share one seed with the seats swapped and one pair
key. Because an engine deals pack ``k`` of a seed to the same seats whatever the players do
(arena/games/), deal ``k`` of one half and deal ``k`` of the other are the same cards with the
bots swapped: *twin deals*. :mod:`arena.stats.deal_pairs` scores each twin pair and fits the ratings
on those scores. ``games`` (matches per pair of bots) must be even: every match has its twin.
"""

from __future__ import annotations

from arena.schedule.formats.base import StaticFormat
from arena.schedule.formats.round_robin import circle_rounds, pair_matches

DEFAULT_DEALS = 6
"""Deals per match when the tournament does not set ``Rules.deals``."""


class DuplicateDeals(StaticFormat):
    """The duplicate-deals round-robin as a :class:`~arena.schedule.formats.Format`. Raises
    ``ValueError`` with fewer than two bots or an odd ``games``."""

    name = "duplicate-deals"

    def __init__(self, bots: list[str], games: int, seed: int) -> None:
        if len(bots) < 2:
            raise ValueError("duplicate-deals needs at least two bots")
        if games % 2:
            raise ValueError(f"duplicate-deals plays every match with its twin: --games must be even, not {games}")
        pairs = [p for rnd in circle_rounds(list(bots)) for p in rnd]
        super().__init__(pair_matches(pairs, games, seed, duplicate=True))
