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
from functools import cache
from itertools import combinations
from math import comb
from typing import Any, ClassVar, Protocol

import msgspec

from protocol.messages import Choose, Compact, ErrorCode, Exchange, GameEvent, GameView, Rules

SeenBy = tuple[int, ...]
BOTH: SeenBy = (0, 1)
NOBODY: SeenBy = ()
ONLY: tuple[SeenBy, SeenBy] = ((0,), (1,))

Seen = tuple[GameEvent, SeenBy]
"""An event and the seats allowed to see it."""


class IllegalAction(ValueError):
    """An action the rules forbid. ``code`` is the protocol error code, ``rule`` the section of
    ``../shared/rules/`` it breaks (e.g. ``"ecarte.md §E5.1"``)."""

    code: ClassVar[ErrorCode] = "illegal_action"

    def __init__(self, message: str, rule: str = "") -> None:
        super().__init__(f"{message} ({rule})" if rule else message)
        self.rule = rule


class WrongDecision(IllegalAction):
    """An action of the wrong shape for the decision asked (a card when a call is wanted)."""

    code: ClassVar[ErrorCode] = "wrong_decision"


def quote(value: Any) -> str:
    """``value`` as JSON for an error text (``["Qd","Kd"]``, ``"Ks"``, ``30``): what a bot
    author sees is in the protocol's own notation, never Python's (``['Qd', 'Kd']``). A value
    that is not JSON (never from the wire) falls back to ``repr``."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return repr(value)


_is_str = str.__instancecheck__
"""``isinstance(value, str)`` as a one-argument callable (for ``all(map(...))``)."""


def check_discard(action: Any, hand: list[str], rule: str) -> list[str]:
    """Validate the shape of a discard (a list of distinct cards of ``hand``) and return it as
    a list. Raises :class:`WrongDecision` if it is not a list of card strings and
    :class:`IllegalAction` (citing ``rule``) for a card named twice or not in the hand. The
    size limits are each game's own (see :func:`check_choice`)."""
    if not isinstance(action, (list, tuple)) or not all(map(_is_str, action)):
        raise WrongDecision(f"decision 'discard' takes a list of cards; got {quote(action)}")
    cards = list(action)
    if len(set(cards)) != len(cards):
        raise IllegalAction(f"discard names a card twice: {quote(cards)}", rule)
    missing = [c for c in cards if c not in hand]
    if missing:
        raise IllegalAction(f"discard of cards not in hand: {quote(missing)}", rule)
    return cards


def check_choice(action: Any, choose: Choose, rule: str, size_rule: str, who: str) -> list[str]:
    """The compact form's validator: accept ``action`` iff it is one of the sets ``choose``
    describes (``choose.min`` to ``choose.max`` distinct cards of ``choose.from_``, any order)
    and return it as a list; this is exactly membership in :func:`expand_choice` without
    building the list. Raises :class:`WrongDecision` for a value that is not a list of cards,
    :class:`IllegalAction` citing ``rule`` for a card twice or not in ``from``, and citing
    ``size_rule`` for a size out of range (``who`` names the player in that message)."""
    if type(action) is list and choose.min <= len(action) <= choose.max:
        # the usual answer, a legal one, accepted in a few C calls: distinct (a set as long as the
        # list: hashable, no card twice) and all of ``from`` (so all card strings); else the checks below
        try:
            chosen = set(action)
        except TypeError:
            chosen = None
        if chosen is not None and len(chosen) == len(action) and chosen.issubset(choose.from_):
            return list(action)
    cards = check_discard(action, choose.from_, rule)
    n = len(cards)
    if not choose.min <= n <= choose.max:
        span = f"{choose.min} card" if choose.min == choose.max == 1 else (
            f"{choose.min} cards" if choose.min == choose.max else f"{choose.min} to {choose.max} cards")
        raise IllegalAction(f"cannot discard {n} card{'s' if n != 1 else ''}: {who} discards {span} here",
                            size_rule)
    return cards


def expand_choice(choose: Choose) -> list[list[str]]:
    """The full form of ``choose``: every legal set as a list, ordered by size, then by the order
    of ``from`` (the hand order). Up to 4,095 lists for a Piquet discard: built only for a
    bot that asked for the full form (and for the tests)."""
    hand = choose.from_
    return [list(c) for k in range(choose.min, choose.max + 1) for c in combinations(hand, k)]


_TABLE_CARDS = 40
_BELOW = [[sum(comb(n, j) for j in range(k)) for k in range(_TABLE_CARDS + 2)] for n in range(_TABLE_CARDS + 1)]
"""``_BELOW[n][k]``: the sets of fewer than ``k`` cards of ``n`` (the sum of C(n, j), j < k),
for hands of up to 40 cards."""
_SUBSET_TABLE_CARDS = 14
"""The largest hand :func:`nth_choice` keeps a table of subsets for (2**14 position tuples)."""


def choice_count(choose: Choose) -> int:
    """How many sets ``choose`` describes: ``len(expand_choice(choose))``, without the list
    (the sum of C(len(from), k) for k from ``min`` to ``max``)."""
    n = len(choose.from_)
    if n > _TABLE_CARDS:
        return sum(comb(n, k) for k in range(choose.min, choose.max + 1))
    below = _BELOW[n]
    return below[choose.max + 1] - below[choose.min]


@cache
def _subsets(n: int) -> tuple[tuple[int, ...], ...]:
    """Every subset of ``range(n)`` in :func:`expand_choice`'s order (by size, then
    lexicographic): 2**n position tuples, built once per hand size that asks."""
    return tuple(c for k in range(n + 1) for c in combinations(range(n), k))


def nth_choice(choose: Choose, index: int) -> list[str]:
    """``expand_choice(choose)[index]`` without building that list: for a hand of up to
    :data:`_SUBSET_TABLE_CARDS` cards a look-up in the table of its positions' subsets (ordered
    as :func:`expand_choice` orders sets: by size, then lexicographically); for a larger hand,
    lexicographic unranking (the size ``k`` is the first whose C(n, k) sets, after the smaller
    sizes', reach ``index``; then each card of ``from`` in turn is taken iff ``index`` falls
    among the sets that begin with it). Raises ``IndexError`` unless
    ``0 <= index < choice_count(choose)``. Lets a random policy pick uniformly among the legal
    sets from the compact form."""
    hand = choose.from_
    n = len(hand)
    if not 0 <= index < choice_count(choose):
        raise IndexError(f"choice index {index} out of range: {choice_count(choose)} sets")
    if n <= _SUBSET_TABLE_CARDS:
        return list(map(hand.__getitem__, _subsets(n)[_BELOW[n][choose.min] + index]))
    k = choose.min
    while index >= comb(n, k):
        index -= comb(n, k)
        k += 1
    out = []
    for p in range(n):
        if not k:
            break
        block = comb(n - p - 1, k - 1)  # the sets that take hand[p]
        if index < block:
            out.append(hand[p])
            k -= 1
        else:
            index -= block
    return out


def first_choice(choose: Choose) -> list[str]:
    """The first set :func:`expand_choice` would list (the first ``min`` cards of ``from``),
    without building the list: what ``on_timeout = auto`` plays (ecarte.md §E8.1)."""
    return list(choose.from_[: choose.min])


def offer(match: GameMatch, compact: bool) -> list[Any] | Compact:
    """The ``legal`` field of the request for ``match``'s pending decision: the engine's
    :meth:`GameMatch.choice` wrapped as :class:`Compact` when ``compact`` and the decision is a
    choice of cards, else the full list (:meth:`GameMatch.legal_actions`)."""
    if compact:
        choose = match.choice()
        if choose is not None:
            return Compact(choose=choose)
    return match.legal_actions()


def take_pack(packs: list[list[str]], cards: Any) -> list[str] | None:
    """The next prepared pack (top card first) from ``packs``, removed from it, or None when
    none is left (the engine then shuffles with its ``random.Random``). An engine accepts
    ``packs`` to play scripted situations (``arena doctor``, tests) without touching anything
    global. Raises ``ValueError`` if the pack is not a permutation of ``cards``."""
    if not packs:
        return None
    pack = packs.pop(0)
    if sorted(pack) != sorted(cards):
        raise ValueError(f"a prepared pack must hold each card of the pack once: {quote(pack)}")
    return list(pack)


def exchange(seat: int, hand: list[str], cards: list[str], stock: list[str], discards: list[str],
             order: Any) -> list[Seen]:
    """Discard ``cards`` from ``hand`` face down (onto ``discards``) and draw as many from the
    top of ``stock``, keeping ``hand`` sorted by ``order``. Returns the two events: the owner's
    copy with the cards, the opponent's with the count only (ecarte.md §E4.5, piquet.md §P4.3).
    The caller has checked the discard (:func:`check_discard` and its own size rules)."""
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
        (Exchange(seat, n, left, cards, drawn), ONLY[seat]),  # the fields in order: seat, count, stock, ...
        (Exchange(seat, n, left), ONLY[1 - seat]),
    ]


class GameMatch(Protocol):
    """One match of a game, from the first deal to the result: everything the match core
    (:mod:`arena.match.core`, :func:`offer`) uses of an engine, checked by the type checker
    against :class:`~arena.games.ecarte.EcarteMatch` and :class:`~arena.games.piquet.PiquetMatch`
    (``GAMES`` in :mod:`arena.games`).

    Attributes the referee reads: ``to_act`` (seat 0/1, or None when over), ``decision``
    (the decision kind, e.g. ``"play"``), ``over``, ``winner`` (seat or None), ``deal_no``
    (deals begun), ``scores`` and ``manches`` (per seat), and once over ``end_reason`` and
    ``margin``.
    """

    game: ClassVar[str]
    to_act: int | None
    decision: str | None
    over: bool
    winner: int | None
    deal_no: int

    def __init__(self, rules: Rules, rng: random.Random, packs: Any = ()) -> None:
        """``packs``: prepared packs (top card first) used, in order, instead of the first
        shuffles (:func:`take_pack`); then every shuffle comes from ``rng``."""
        ...

    def start(self) -> list[Seen]:
        """Draw for the first dealer, deal the first hand; return the events."""
        ...

    def legal_actions(self) -> list[Any]:
        """The complete list of legal actions for the pending decision (never empty)."""
        ...

    def choice(self) -> Choose | None:
        """The pending decision as a :class:`Choose` if it is a choice of cards (a discard),
        else None. Cheap: the compact form never builds :meth:`legal_actions`'s list."""
        ...

    def apply(self, action: Any) -> list[Seen]:
        """Apply ``to_act``'s action; raise :class:`IllegalAction` if it is not legal."""
        ...

    def view(self, seat: int) -> GameView:
        """Everything ``seat`` may know now."""
        ...

    def peek_view(self, seat: int) -> GameView:
        """:meth:`view` as it is now, sharing the engine's lists instead of copying them: only
        for encoding at once (the match core's requests), never to keep or change."""
        ...

    def auto_action(self) -> Any:
        """The action played for a seat under ``on_timeout = auto`` (ecarte.md §E8.1): the first
        legal action, for a discard without building the list."""
        ...

    @property
    def scores(self) -> list[int]: ...

    @property
    def manches(self) -> list[int]: ...

    @property
    def end_reason(self) -> str:
        """Why the match ended once played out: a :class:`~arena.match.core.MatchResult`
        ``reason`` (``target``, ``deals``, ``rubicon``, ``cent``, ``draw``)."""
        ...

    @property
    def margin(self) -> int:
        """The winner's margin in points once over (Piquet's final reckoning; 0 in Écarté)."""
        ...
