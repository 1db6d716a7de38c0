"""What the watcher knows of a match: its deals as a spectator sees them, the hidden cards
revealed later, and the cards drawn as text (:mod:`arena.tools.watch`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

SUIT_SYMBOL = {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}
SUIT_NAME = {"c": "clubs", "d": "diamonds", "h": "hearts", "s": "spades"}
RED = {"d", "h"}
RANK_ORDER = {"ecarte": "789TAJQK", "piquet": "6789TJQKA"}
"""Low to high, for sorting a hand the way the server does (docs/protocol.md §8.1)."""
TRICKS_PER_DEAL = {"ecarte": 5, "piquet": 12}
GAME_TITLE = {"ecarte": "Écarté", "piquet": "Piquet"}
LOG_LINES = 10
KEEP_ENDED = 20
"""Finished matches kept (a duplicate pair's reveals come after its twin is over)."""


def card_text(card: str) -> Text:
    """A card as rank + suit symbol, red for diamonds and hearts: ``K♠``."""
    if not isinstance(card, str) or len(card) != 2:
        return Text(str(card))
    return Text(card[0] + SUIT_SYMBOL.get(card[1], card[1]), style="red" if card[1] in RED else "bold")


def cards_text(cards: list[str]) -> Text:
    """Several cards, separated by spaces."""
    out = Text()
    for i, card in enumerate(cards):
        if i:
            out.append(" ")
        out.append_text(card_text(card))
    return out


def plain_cards(cards: list[str] | None) -> str:
    """Cards as plain text with suit symbols (for the event lines)."""
    return " ".join(card_text(c).plain for c in cards or [])




@dataclass
class Deal:
    """One deal as a spectator knows it."""

    number: int
    dealer: int
    elder: int
    manche: int = 1
    turn_up: str | None = None
    trump: str | None = None
    stock: int = 0
    played: list[list[str]] = field(default_factory=lambda: [[], []])
    shown: list[list[str]] = field(default_factory=lambda: [[], []])
    """Cards a seat showed without playing them yet (the king of trumps announced)."""
    trick: list[tuple[int, str]] = field(default_factory=list)
    trick_no: int = 1
    tricks: list[int] = field(default_factory=lambda: [0, 0])
    calls: list[str] = field(default_factory=list)
    declarations: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Public facts worth keeping on screen: carte blanche, an exposed talon."""
    points: list[int] | None = None
    ended: str | None = None
    revealed: Reveal | None = None


@dataclass
class Reveal:
    """The hidden part of a finished deal, from a ``reveal`` message."""

    deal: int
    dealt: list[list[str] | None] = field(default_factory=lambda: [None, None])
    exchanges: list[list[tuple[list[str], list[str]]]] = field(default_factory=lambda: [[], []])
    declined_king: list[str | None] = field(default_factory=lambda: [None, None])
    looked: list[list[str] | None] = field(default_factory=lambda: [None, None])

    def final_hand(self, seat: int, order: str) -> list[str] | None:
        """The hand ``seat`` played the deal with: dealt, minus discards, plus draws."""
        hand = self.dealt[seat]
        if hand is None:
            return None
        cards = list(hand)
        for discarded, drawn in self.exchanges[seat]:
            cards = [c for c in cards if c not in discarded] + list(drawn)
        return sort_hand(cards, order)


def sort_hand(cards: list[str], order: str) -> list[str]:
    """Suit c d h s, then rank low to high in the game's order."""
    return sorted(cards, key=lambda c: ("cdhs".find(c[1]), order.find(c[0])))


@dataclass
class MatchView:
    """Everything the watcher knows of one match."""

    match_id: str
    game: str
    bots: list[str]
    pair: str | None = None
    rules: dict[str, Any] = field(default_factory=dict)
    time: dict[str, Any] = field(default_factory=dict)
    scores: list[int] = field(default_factory=lambda: [0, 0])
    manches: list[int] = field(default_factory=lambda: [0, 0])
    target: int | str | None = None
    deal: Deal | None = None
    last_revealed: Reveal | None = None
    """The latest revealed deal that is not the current one (hidden cards come with a lag)."""
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    seq: int = 0
    to_act: int | None = None
    since: float = 0.0
    """Clock reading of the last public event (the player to act has been thinking since)."""
    over: bool = False
    winner: int | None = None
    reason: str | None = None
    final: dict[str, Any] | None = None
    """Piquet's final reckoning (``match_score`` event)."""

    def who(self, seat: Any) -> str:
        """The bot name of a seat."""
        if isinstance(seat, int) and 0 <= seat < len(self.bots):
            return self.bots[seat]
        return "?"

    @property
    def order(self) -> str:
        return RANK_ORDER.get(self.game, RANK_ORDER["ecarte"])

