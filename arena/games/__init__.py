"""Pure rules engines: no I/O, no clock, randomness only from a seeded ``random.Random``."""

from __future__ import annotations

from arena.games.base import GameMatch
from arena.games.ecarte import EcarteMatch

GAMES: dict[str, type[GameMatch]] = {"ecarte": EcarteMatch}
"""Game name (as in ``match_start.game`` and ``--game``) -> engine class."""
