"""The small interface the referee drives, shared by every game engine.

A match (partie) is a state machine over decisions. The referee loops::

    events = match.start()
    while not match.over:
        seat, kind = match.to_act, match.decision
        action = <ask seat, offering match.legal_actions() and match.view(seat)>
        events = match.apply(action)

Every event comes with the seats that may see it (:data:`Seen`): ``BOTH``, ``ONLY[seat]`` or
``NOBODY`` (hidden information kept for the log and replay only). Engines are pure: no I/O,
no clock, and no randomness except the ``random.Random`` passed to them.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, Protocol

from protocol.messages import GameEvent, GameView, Rules

SeenBy = tuple[int, ...]
BOTH: SeenBy = (0, 1)
NOBODY: SeenBy = ()
ONLY: tuple[SeenBy, SeenBy] = ((0,), (1,))

Seen = tuple[GameEvent, SeenBy]
"""An event and the seats allowed to see it."""


class IllegalAction(ValueError):
    """An action the rules forbid. ``code`` is the protocol error code, ``rule`` the section of
    ``../shared/rules/`` it breaks (e.g. ``"ecarte.md §E5.1"``)."""

    code: ClassVar[str] = "illegal_action"

    def __init__(self, message: str, rule: str = "") -> None:
        super().__init__(f"{message} ({rule})" if rule else message)
        self.rule = rule


class WrongDecision(IllegalAction):
    """An action of the wrong shape for the decision asked (a card when a call is wanted)."""

    code: ClassVar[str] = "wrong_decision"


def check_discard(action: Any, hand: list[str], rule: str) -> list[str]:
    """Validate the shape of a discard (a list of distinct cards of ``hand``) and return it as
    a list. Raises :class:`WrongDecision` if it is not a list of card strings and
    :class:`IllegalAction` (citing ``rule``) for a card named twice or not in the hand. The
    size limits are each game's own."""
    if not isinstance(action, (list, tuple)) or not all(isinstance(c, str) for c in action):
        raise WrongDecision(f"decision 'discard' takes a list of cards; got {action!r}")
    cards = list(action)
    if len(set(cards)) != len(cards):
        raise IllegalAction(f"discard names a card twice: {cards}", rule)
    missing = [c for c in cards if c not in hand]
    if missing:
        raise IllegalAction(f"discard of cards not in hand: {missing}", rule)
    return cards


def exchange(seat: int, hand: list[str], cards: list[str], stock: list[str], discards: list[str],
             order: Any) -> list[Seen]:
    """Discard ``cards`` from ``hand`` face down (onto ``discards``) and draw as many from the
    top of ``stock``, keeping ``hand`` sorted by ``order``. Returns the two events: the owner's
    copy with the cards, the opponent's with the count only (ecarte.md §E4.5, piquet.md §P4.3).
    The caller has checked the discard (:func:`check_discard` and its own size rules)."""
    from protocol.messages import Exchange

    n = len(cards)
    drawn = stock[:n]
    del stock[:n]
    for c in cards:
        hand.remove(c)
    hand.extend(drawn)
    hand.sort(key=order)
    discards.extend(cards)
    left = len(stock)
    return [
        (Exchange(seat=seat, count=n, stock=left, discarded=cards, drawn=drawn), ONLY[seat]),
        (Exchange(seat=seat, count=n, stock=left), ONLY[1 - seat]),
    ]


class GameMatch(Protocol):
    """One match of a game, from the first deal to the result.

    Attributes the referee reads: ``to_act`` (seat 0/1, or None when over), ``decision``
    (the decision kind, e.g. ``"play"``), ``over``, ``winner`` (seat or None), ``scores``
    and ``manches`` (per seat).
    """

    game: ClassVar[str]
    to_act: int | None
    decision: str | None
    over: bool
    winner: int | None

    def __init__(self, rules: Rules, rng: random.Random) -> None: ...

    def start(self) -> list[Seen]:
        """Draw for the first dealer, deal the first hand; return the events."""
        ...

    def legal_actions(self) -> list[Any]:
        """The complete list of legal actions for the pending decision (never empty)."""
        ...

    def apply(self, action: Any) -> list[Seen]:
        """Apply ``to_act``'s action; raise :class:`IllegalAction` if it is not legal."""
        ...

    def view(self, seat: int) -> GameView:
        """Everything ``seat`` may know now."""
        ...

    @property
    def scores(self) -> list[int]: ...

    @property
    def manches(self) -> list[int]: ...
