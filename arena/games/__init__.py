"""Pure rules engines: no I/O, no clock, randomness only from a seeded ``random.Random``."""

from __future__ import annotations

from arena.games import ecarte, piquet
from arena.games.base import GameMatch
from arena.games.ecarte import EcarteMatch
from arena.games.piquet import PiquetMatch
from protocol.messages import Rules

GAMES: dict[str, type[GameMatch]] = {"ecarte": EcarteMatch, "piquet": PiquetMatch}
"""Game name (as in ``match_start.game`` and ``--game``) -> engine class."""


def validate_rules(game: str, rules: Rules) -> None:
    """Raise ``ValueError`` if ``game`` is unknown or ``rules`` are not valid options for it."""
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; known: {', '.join(GAMES)}")
    (ecarte if game == "ecarte" else piquet).validate_rules(rules)
