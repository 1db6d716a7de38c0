"""Tournament formats: who plays whom next, in which seats, with which seed.

A format is a pure state machine. The tournament runner asks it for the steps it can start
now (:meth:`Format.ready`), plays them, and reports each outcome back (:meth:`Format.record`
for a match, :meth:`Format.record_auction` for a chouette auction). Static formats
(round-robin, gauntlet) hand out their whole schedule at once; the casino formats (rotation,
chouette) decide the next match from the last result, one table at a time. Because a format
depends only on its bots, its seed and the results fed to it, a tournament resumed after a
crash rebuilds the same state by replaying the stored results in order.

Seeds: every match seed is :func:`derive_seed` of the tournament seed and the match's
position; in a *duplicate pair* (ecarte.md §E8.2) both matches share one seed with the seats
swapped, so each bot plays the cards the other had.
"""

from __future__ import annotations

from arena.schedule.formats.base import Auction, Format, Pairing, StaticFormat, Step, derive_seed
from arena.schedule.formats.chouette import Chouette
from arena.schedule.formats.duplicate_deals import DuplicateDeals
from arena.schedule.formats.gauntlet import Gauntlet
from arena.schedule.formats.rotation import Rotation
from arena.schedule.formats.round_robin import RoundRobin

__all__ = ["FORMATS", "Auction", "Format", "Pairing", "StaticFormat", "Step", "derive_seed", "make_format"]


def make_format(name: str, bots: list[str], games: int, seed: int, duplicate: bool = True,
                hero: str | None = None) -> Format:
    """Build a format by name: ``round-robin``, ``gauntlet`` (``hero`` against all others),
    ``rotation``, ``chouette`` or ``duplicate-deals`` (a round-robin of duplicate pairs of
    fixed-length matches, rated deal by deal: :mod:`arena.schedule.formats.duplicate_deals`). ``games``
    is matches per pair for round-robin, gauntlet and duplicate-deals, and matches in all for
    rotation and chouette. Raises ``ValueError`` for a bad name or arguments."""
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be unique")
    if games < 1:
        raise ValueError("games must be at least 1")
    if name == "round-robin":
        return RoundRobin(bots, games, seed, duplicate)
    if name == "gauntlet":
        return Gauntlet(bots, games, seed, duplicate, hero or (bots[0] if bots else ""))
    if name == "rotation":
        return Rotation(bots, games, seed)
    if name == "chouette":
        return Chouette(bots, games, seed)
    if name == "duplicate-deals":
        return DuplicateDeals(bots, games, seed)
    raise ValueError(f"unknown format {name!r} (known: {', '.join(FORMATS)})")


FORMATS = ("round-robin", "gauntlet", "rotation", "chouette", "duplicate-deals")
