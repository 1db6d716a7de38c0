"""Every message of the arena protocol as a ``msgspec.Struct``.

One JSON object per line; every object has a ``"type"`` field that selects the struct.
Two tagged unions, one per direction:

* :data:`ClientMessage` - what a client sends: ``hello``, ``action`` (bots); ``list``,
  ``subscribe``, ``unsubscribe``, ``bet`` (spectators).
* :data:`ServerMessage` - what the server sends: ``welcome``, ``match_start``, ``event``,
  ``request``, ``match_end``, ``error``, ``goodbye`` (bots); ``matches``, ``watch``,
  ``spectate``, ``reveal``, ``watch_end``, ``betting``, ``bet_placed``, ``bet_settled``
  (spectators).

Game events travel inside an ``event`` message and form their own union, tagged by
``"kind"`` (:data:`GameEvent`). The rules engines emit these structs directly, so what the
referee logs and what a bot receives are the same objects.

Every struct here is declared ``gc=False``: its instances are never tracked by the garbage
collector, which then has fewer objects to walk (the server makes several per decision). That is
safe because a message only ever holds data (strings, numbers, lists and dicts of them, other
messages), never a reference back to itself or to an object that refers to it, so it can never
be part of a reference cycle.

Actions are JSON values a bot copies from the ``legal`` list of a ``request``: a word
(``"propose"``), a card (``"Ks"``), for a discard a list of cards (``["7h", "8c"]``, any
order), or for a chouette auction a number of chips (``30``).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

import msgspec

from protocol import PROTOCOL_VERSION

Card = Annotated[str, msgspec.Meta(pattern=r"^[6789TJQKA][cdhs]$")]
"""Two ASCII characters: rank ``7 8 9 T J Q K A`` (``6`` in Piquet's 36-card pack) then suit
``c d h s`` (``"Ks"``). The letters are not the ranking: Écarté ranks K Q J A T 9 8 7."""

Action = Union[int, str, list[str]]
"""A legal action: a word, a card, a list of cards (a discard), or a number (a bid)."""

LegalForm = Literal["full", "compact"]
CallWord = Literal["propose", "play", "accept", "refuse"]
"""What an Écarté player says before the exchanges (ecarte.md §E4): elder proposes or plays,
the dealer accepts or refuses."""
DeclarationResult = Literal["good", "not_good", "equal", "none"]
"""A Piquet declaration settled, from elder's side (piquet.md §P5)."""
"""How a bot wants the legal actions of a discard (said in ``hello``): ``full``, every legal
subset listed (protocol 1's default), or ``compact``, a :class:`Choose` description."""


class _Msg(msgspec.Struct, tag_field="type", gc=False):
    """Base of every top-level message; ``type`` carries the struct's tag. Every field is
    always sent (``null`` when it has no value), so a bot never has to guess a default."""


# --------------------------------------------------------------------------- bot -> server


class Hello(_Msg, tag="hello"):
    """First line a client sends. ``role`` is ``"bot"`` (``token`` required) or
    ``"spectator"`` (no token to watch; a spectator account's token to bet).

    Answered by ``welcome``, or by a fatal ``error`` (``auth_failed``, ``bad_version``,
    ``name_in_use``, ``unsupported_role``, ...) and a close.
    """

    name: str
    token: str = ""
    protocol: int = PROTOCOL_VERSION
    role: Literal["bot", "spectator"] = "bot"
    legal: LegalForm = "full"
    """``compact``: discard requests describe the legal discards (:class:`Compact`) instead of
    listing them; ``full`` (the default, and what a bot that says nothing gets): the list."""


class ActionMsg(_Msg, tag="action"):
    """A bot's answer to the ``request`` whose ``id`` it repeats."""

    id: int
    action: Action


class ListMatches(_Msg, tag="list"):
    """Spectator: ask for the matches in play (answered by ``matches``)."""


class Subscribe(_Msg, tag="subscribe"):
    """Spectator: follow one match (its id) or ``"*"`` for every match, now and to come."""

    match_id: str


class Unsubscribe(_Msg, tag="unsubscribe"):
    """Spectator: stop following a match (or ``"*"``)."""

    match_id: str


class PlaceBet(_Msg, tag="bet"):
    """Betting spectator: stake ``cents`` (integer, at least 10) on ``seat`` of a match whose
    betting is open (ecarte.md §E9.1). Answered by ``bet_placed`` or an ``error``."""

    match_id: str
    seat: int
    cents: int


ClientMessage = Union[Hello, ActionMsg, ListMatches, Subscribe, Unsubscribe, PlaceBet]

# --------------------------------------------------------------------------- game events


class _Ev(msgspec.Struct, tag_field="kind", gc=False):
    """Base of every game event; ``kind`` carries the struct's tag."""


class TargetSet(_Ev, tag="target"):
    """ecarte.md §E7.1 (target ``turn-up``): the card turned and the target it sets (points)."""

    card: Card
    target: int


class DealerDraw(_Ev, tag="dealer_draw"):
    """ecarte.md §E2.1: one card drawn per seat (index = seat); ``dealer`` is None on a tie."""

    cards: list[Card]
    dealer: int | None = None


class DealStart(_Ev, tag="deal_start"):
    """A new deal: who deals, and the stock (Écarté) or talon (Piquet) size. Écarté
    (ecarte.md §E2): the turn-up and its suit, trump. Piquet (piquet.md §P2) has neither
    (``null``) and ``manche`` is always 1."""

    deal: int
    manche: int
    dealer: int
    elder: int
    turn_up: Card | None
    trump: str | None
    stock: int


class DeckOrder(_Ev, tag="deck"):
    """The whole shuffled pack, top first. Hidden: seen by no seat, written to the log only."""

    cards: list[Card]


class HandDealt(_Ev, tag="hand"):
    """The cards dealt to ``seat`` (5 in Écarté, 12 in Piquet); sent to that seat only."""

    seat: int
    cards: list[Card]


class Call(_Ev, tag="call"):
    """A spoken decision (ecarte.md §E4): ``propose``/``play`` by elder, ``accept``/``refuse`` by
    the dealer. Public."""

    seat: int
    call: CallWord


class Exchange(_Ev, tag="exchange"):
    """An exchange (ecarte.md §E4.3-E4.5). The owner's copy lists ``discarded`` and ``drawn``;
    the opponent's copy has them ``null``: it learns only ``count`` (§E4.5)."""

    seat: int
    count: int
    stock: int
    discarded: list[Card] | None = None
    drawn: list[Card] | None = None


class KingAnnounced(_Ev, tag="king"):
    """ecarte.md §E3.2: ``seat`` shows the king of trumps. ``announced`` False (a decline) is
    sent only to the seat that declined."""

    seat: int
    card: Card
    announced: bool = True


class Score(_Ev, tag="score"):
    """Points scored. ``scores`` are both seats' totals after it (the manche's in Écarté, the
    match's in Piquet). ``reason`` in Écarté (ecarte.md §E3, §E6): ``king_turn_up``, ``king``,
    ``tricks``, ``vole``, ``refusal``; in Piquet (piquet.md §P3-§P7): ``carte_blanche``,
    ``point``, ``sequence``, ``set``, ``lead``, ``trick``, ``last_trick``, ``cards``, ``capot``,
    ``pique``, ``repique``. ``detail`` names what scored in Piquet ("quint to the king")."""

    seat: int
    points: int
    reason: str
    scores: list[int]
    detail: str | None = None


class CardPlayed(_Ev, tag="play"):
    """``seat`` plays ``card`` to trick ``trick`` (1-5 in Écarté, 1-12 in Piquet). Public."""

    seat: int
    card: Card
    trick: int


class TrickWon(_Ev, tag="trick"):
    """Trick ``trick`` is complete: ``cards`` in play order, led by ``leader``."""

    trick: int
    leader: int
    cards: list[Card]
    winner: int


class DealEnd(_Ev, tag="deal_end"):
    """End of a deal: tricks taken and points scored per seat, manche totals after it.
    ``ended`` is ``played`` or ``king_point`` (§E3.3, the deal stopped at the target)."""

    deal: int
    tricks: list[int]
    points: list[int]
    scores: list[int]
    ended: str = "played"


class MancheEnd(_Ev, tag="manche_end"):
    """ecarte.md §E7.2: a manche is won; ``manches`` counts manches won per seat."""

    manche: int
    winner: int
    scores: list[int]
    manches: list[int]


class CarteBlanche(_Ev, tag="carte_blanche"):
    """piquet.md §P3: ``seat`` holds no K, Q or J and shows its twelve ``cards``. Public."""

    seat: int
    cards: list[Card]


class LookedAt(_Ev, tag="look"):
    """piquet.md §P4.1: the talon cards elder left among his maximum; only elder sees them."""

    seat: int
    cards: list[Card]


class TalonExposed(_Ev, tag="talon_exposed"):
    """piquet.md §P4.3: younger turned the rest of the talon face up. Public."""

    seat: int
    cards: list[Card]


class Declaration(_Ev, tag="declaration"):
    """piquet.md §P5: one category of combinations settled. ``elder``/``younger`` are what each
    declared (e.g. "point of 5, 48", "quint to the king", "quatorze of aces"; ``null`` if he
    has none, or if younger's is not revealed because elder's is good). ``result`` is from
    elder's side: ``good`` (elder scores), ``not_good`` (younger scores), ``equal`` (nobody),
    ``none`` (neither holds one). ``winner`` is the seat that scores, if any."""

    category: Literal["point", "sequence", "set"]
    elder: str | None
    younger: str | None
    result: DeclarationResult
    winner: int | None


class MatchScore(_Ev, tag="match_score"):
    """piquet.md §P8: the final reckoning. ``totals`` per seat; ``winner`` (``null`` for a
    draw); ``margin``: the rubicon score of the winner (100 + difference, or 100 + sum if the
    loser is under 100); ``rubicon``: True if the loser stayed under 100."""

    totals: list[int]
    winner: int | None
    margin: int
    rubicon: bool


GameEvent = Union[
    TargetSet,
    DealerDraw,
    DealStart,
    DeckOrder,
    HandDealt,
    Call,
    Exchange,
    KingAnnounced,
    Score,
    CardPlayed,
    TrickWon,
    DealEnd,
    MancheEnd,
    CarteBlanche,
    LookedAt,
    TalonExposed,
    Declaration,
    MatchScore,
]

# --------------------------------------------------------------------------- state views


class TrickCard(msgspec.Struct, gc=False):
    """One card on the table in the current trick."""

    seat: int
    card: Card


class EcarteView(msgspec.Struct, tag_field="game", tag="ecarte", gc=False):
    """Everything one seat may know of an Écarté match now (never an opponent's card).

    ``hand`` is this seat's cards; ``trick`` the cards already on the table in the current
    trick; ``tricks`` the tricks taken per seat this deal; ``scores`` the points per seat in
    this manche; ``manches`` manches won per seat (partie liée).
    """

    seat: int
    dealer: int
    elder: int
    deal: int
    manche: int
    target: int
    scores: list[int]
    manches: list[int]
    turn_up: Card
    trump: str
    stock: int
    hand: list[Card]
    tricks: list[int]
    trick: list[TrickCard]
    proposals: int = 0


class PiquetView(msgspec.Struct, tag_field="game", tag="piquet", gc=False):
    """Everything one seat may know of a Piquet match now.

    ``scores``: match totals per seat before this deal's points; ``deal_scores``: this deal's
    points so far; ``hand``: this seat's cards; ``talon``: cards left in the talon;
    ``discards``: this seat's own discards; ``seen``: talon cards this seat looked at (§P4.1);
    ``exposed``: the rest of the talon if younger turned it up (§P4.3); ``exchanged``: cards
    taken by each seat; ``tricks``: tricks taken; ``trick``: cards on the table now.
    """

    seat: int
    dealer: int
    elder: int
    deal: int
    deals: int
    scoring: str
    scores: list[int]
    deal_scores: list[int]
    hand: list[Card]
    talon: int
    discards: list[Card]
    seen: list[Card]
    exposed: list[Card]
    exchanged: list[int]
    tricks: list[int]
    trick: list[TrickCard]


class AuctionView(msgspec.Struct, tag_field="game", tag="chouette", gc=False):
    """The state of a chouette auction (ecarte.md §E9.3), sent with a ``bid`` request outside
    any match: this bot's ``bankroll`` (chips), every bot's ``bankrolls``, the ``queue`` of
    bidders (ties go to the one nearest its head), the auction's number, and the reigns so far
    as ``[chouetteur, price, challengers beaten]``."""

    bot: str
    bankroll: int
    bankrolls: dict[str, int]
    queue: list[str]
    auction: int
    reigns: list[tuple[str, int, int]]


GameView = Union[EcarteView, PiquetView, AuctionView]

# --------------------------------------------------------------------------- server -> bot


class Welcome(_Msg, tag="welcome"):
    """Handshake accepted."""

    name: str
    server: str
    protocol: int = PROTOCOL_VERSION


class Rules(msgspec.Struct, gc=False):
    """The rule-set options of a match. Écarté (ecarte.md §E2.4, §E7): ``deal_pattern``,
    ``target``, ``manches``. Piquet (piquet.md §P1, §P2.2, §P8): ``pack`` (32 or 36 cards),
    ``packets`` (deal in packets of 2 or 3), ``scoring`` (``rubicon`` or ``cent``). Each game
    ignores the other's options. Both games: ``deals`` > 0 makes the match exactly that many
    deals (the duplicate-deals format, docs/contests.md): points accumulate with no target, no
    manche and no rubicon, the higher total wins and equal totals are a draw (reason
    ``deals``); 0 (the default) plays the rules' own match."""

    deal_pattern: str = "3-2"
    target: int | Literal["turn-up"] = 5
    manches: int = 1
    pack: int = 32
    packets: int = 2
    scoring: Literal["rubicon", "cent"] = "rubicon"
    deals: int = 0


class TimeControl(msgspec.Struct, gc=False):
    """Time controls in milliseconds: per-decision limit, match bank, transport grace."""

    move_ms: int = 2000
    bank_ms: int = 0
    grace_ms: int = 50


class MatchStart(_Msg, tag="match_start"):
    """A match begins; ``seat`` is 0 or 1, ``opponent`` the other bot's name. The fault
    policy (ecarte.md §E8.1): ``on_timeout`` (``forfeit`` or ``auto``), ``max_strikes``
    (timeouts played by the referee before a forfeit, with ``auto``), ``max_illegal``
    (illegal actions answered with an error and asked again before a forfeit)."""

    match_id: str
    game: str
    seat: int
    opponent: str
    rules: Rules
    time: TimeControl
    on_timeout: Literal["forfeit", "auto"] = "forfeit"
    max_strikes: int = 3
    max_illegal: int = 0


class EventMsg(_Msg, tag="event"):
    """A game event this seat may see, in order (``seq`` counts events sent in the match)."""

    match_id: str
    seq: int
    event: GameEvent


class Choose(msgspec.Struct, gc=False):
    """A choice of between ``min`` and ``max`` distinct cards of ``from`` (any order): the
    compact form of a discard's legal actions. Every such set is legal and nothing else is
    (Écarté ecarte.md §E4.3-§E4.4; Piquet piquet.md §P4.1-§P4.2). ``from`` is the hand, in
    hand order; ``min`` and ``max`` are card counts, ``0 <= min <= max <= len(from)``."""

    from_: list[Card] = msgspec.field(name="from")
    min: int
    max: int


class Compact(msgspec.Struct, gc=False):
    """The ``legal`` field of a request in the compact form: ``{"choose": {...}}``."""

    choose: Choose


Decision = Literal["propose", "respond", "discard", "king", "play", "look", "expose", "bid"]
"""Every decision a request may ask for (Écarté, Piquet, and a chouette's bid)."""


class Request(_Msg, tag="request"):
    """A decision is wanted: answer with ``action`` carrying the same ``id`` before the time
    runs out. ``legal`` is the complete list of legal actions, or for a discard asked of a bot
    that chose the compact form at ``hello``, a :class:`Compact` description; ``state`` is this
    seat's view. ``time_ms`` is the time allowed for this decision, ``bank_ms`` the bank left
    (ms)."""

    id: int
    match_id: str
    decision: Decision
    legal: Union[list[Action], Compact]
    state: GameView
    time_ms: int
    bank_ms: int = 0


class MatchEnd(_Msg, tag="match_end"):
    """The match is over. ``winner`` is a seat or None (a draw or an abort). ``reason``:
    ``target`` (Écarté), ``rubicon``, ``cent`` or ``draw`` (Piquet), ``deals`` (a match of a
    fixed number of deals, ``Rules.deals``; a draw when the totals are equal) for a match played out;
    ``forfeit_timeout``, ``forfeit_disconnect``, ``forfeit_illegal``, ``forfeit_protocol``;
    or ``aborted``. ``you`` is ``win``, ``loss`` or ``none``."""

    match_id: str
    winner: int | None
    you: Literal["win", "loss", "none"]
    reason: str
    scores: list[int]
    manches: list[int]
    detail: str = ""


ErrorCode = Literal[
    # handshake (docs/protocol.md §4)
    "too_many_connections", "server_full", "handshake_timeout", "expected_hello", "bad_version",
    "unsupported_role", "auth_failed", "rate_limited", "name_in_use", "bad_name", "tls_required", "tls_unavailable",
    # framing and protocol faults
    "line_too_long", "truncated", "bad_utf8", "bad_json", "not_object", "missing_type", "unknown_type",
    "bad_message", "unexpected_hello", "unknown_request", "not_your_turn", "duplicate_answer", "late_answer",
    "too_many_errors",
    # decisions
    "timeout", "illegal_action", "wrong_decision", "wrong_role", "disconnect",
    # spectators and bettors (§13, §14)
    "unknown_match", "too_slow", "idle_timeout", "betting_disabled", "not_authenticated", "unknown_book",
    "betting_closed", "bad_seat", "bad_amount", "below_minimum", "bad_bettor", "insufficient_funds",
    "already_settled", "duplicate_book", "corrupt_state", "wager_error",
]  # fmt: skip
"""Every ``error`` code, as listed in docs/protocol.md §11."""


class Error(_Msg, tag="error"):
    """Something the client sent (or failed to send) was wrong. ``code`` is one of
    docs/protocol.md's error codes (:data:`ErrorCode`); ``id`` names the request concerned, if
    any; ``fatal`` is true when the error costs the client its current match (forfeit) or its
    connection."""

    code: ErrorCode
    message: str
    id: int | None = None
    fatal: bool = False


class Goodbye(_Msg, tag="goodbye"):
    """The server is closing this connection (tournament over, shutdown)."""

    reason: str


class LiveMatch(msgspec.Struct, gc=False):
    """A match in play as a spectator sees it: id, game, bot names per seat, scores per seat
    (manche points in Écarté, totals in Piquet), the deal number, and its duplicate pair."""

    match_id: str
    game: str
    bots: list[str]
    scores: list[int]
    deal: int
    pair: str | None = None


class Matches(_Msg, tag="matches"):
    """Answer to ``list``: the matches in play."""

    matches: list[LiveMatch]


class Watch(_Msg, tag="watch"):
    """Spectator feed: a match begins (or is joined); ``rules`` and ``time`` as in
    ``match_start``."""

    match: LiveMatch
    rules: Rules
    time: TimeControl


class Spectate(_Msg, tag="spectate"):
    """Spectator feed: a public event of a match, live, in order (``seq`` per match)."""

    match_id: str
    seq: int
    event: GameEvent


class Reveal(_Msg, tag="reveal"):
    """Spectator feed: hidden events (hands, exchanged cards, the pack) released once they can
    no longer help a bot: after their deal is over (plus the configured delay) and, for a
    duplicate pair, after the twin match too. ``seen_by`` lists, per event, the seats that had
    seen it at the table."""

    match_id: str
    deal: int
    events: list[GameEvent]
    seen_by: list[list[int]]


class WatchEnd(_Msg, tag="watch_end"):
    """Spectator feed: a match is over (``winner`` seat or null, ``reason`` as in ``match_end``)."""

    match_id: str
    winner: int | None
    reason: str
    scores: list[int]


class Betting(_Msg, tag="betting"):
    """To every spectator: betting is open on a match about to start, for ``closes_ms`` ms."""

    match_id: str
    bots: list[str]
    closes_ms: int


class BetPlaced(_Msg, tag="bet_placed"):
    """A stake was taken: ``balance`` is what the bettor has left (cents)."""

    match_id: str
    seat: int
    cents: int
    balance: int


class BetSettled(_Msg, tag="bet_settled"):
    """The outcome of one bet (cents): ``returned`` (balancing refund, or everything on a void
    match), ``payout`` (a win: 2 x matched stake less the 5% levy), the new ``balance``."""

    match_id: str
    seat: int
    stake: int
    returned: int
    payout: int
    status: str
    balance: int


ServerMessage = Union[
    Welcome, MatchStart, EventMsg, Request, MatchEnd, Error, Goodbye, Matches, Watch, Spectate, Reveal, WatchEnd,
    Betting, BetPlaced, BetSettled,
]
