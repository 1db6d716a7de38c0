"""``arena bench`` phase 1: the engines alone, random self-play on one core, no I/O
(:func:`engine_deals_per_second`); Piquet with full and compact legal lists
(:func:`piquet_forms`), and the bytes the server writes per Piquet match in each form
(:func:`piquet_wire`). See :mod:`arena.tools.bench`."""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Any

import msgspec

from arena.games import GAMES
from arena.games.base import choice_count, nth_choice, offer
from arena.games.piquet import PiquetMatch
from arena.tools.bench_proc import DEFAULT_MAX_SECONDS
from protocol.framing import encode
from protocol.messages import Compact, EventMsg, MatchEnd, MatchStart, Request, Rules, TimeControl

WIRE_MATCHES = 20
"""Piquet matches encoded per legal form for the bytes-per-match figures."""

PIQUET_ROUNDS = 5
"""Slices the two Piquet engine runs are interleaved in (see :func:`piquet_forms`)."""


@dataclass(frozen=True)
class EngineFigures:
    """Result of :func:`engine_deals_per_second`: counts and wall time in seconds."""

    deals: int
    decisions: int
    matches: int
    seconds: float

    @property
    def deals_per_s(self) -> float:
        """Deals per second."""
        return self.deals / self.seconds

    @property
    def decisions_per_deal(self) -> float:
        """Decisions (applied actions) per deal."""
        return self.decisions / self.deals


def engine_deals_per_second(
    n_deals: int, seed: int = 1, max_seconds: float = DEFAULT_MAX_SECONDS, game: str = "ecarte",
    compact: bool = False,
) -> EngineFigures:
    """Random self-play of ``game`` matches (Écarté by default, or ``"piquet"``) until at
    least ``n_deals`` deals were played.

    What is measured: the engine's own work per deal (dealing, applying every action, scoring,
    the events) plus building each decision's ``legal`` field the way the referee offers it
    (:func:`arena.games.base.offer`): the full list, or with ``compact`` a discard's
    :class:`~protocol.messages.Choose` description. Nothing is encoded or sent.

    The policy is the same in both forms, so both play the very same matches move for move and
    differ only in the form: one ``random.Random(seed)`` draws ``u`` in [0, 1) per decision and
    the action is legal set number ``int(u * count)`` in the full list's order; with the full
    list that is ``legal[i]``, with a description it is :func:`~arena.games.base.nth_choice`
    (a few dozen steps, so the compact figure is not the bench's own cost of sampling). Match
    ``i`` uses ``random.Random(seed + i)`` for the engine. Whole matches are played, so the
    count may exceed ``n_deals`` by the deals of the last match. Stops after ``max_seconds``
    seconds at a match boundary in any case.
    """
    import random

    engine_class = GAMES[game]
    rules = Rules()
    uniform = random.Random(seed).random
    deals = decisions = matches = 0
    t0 = perf_counter()
    while deals < n_deals and perf_counter() - t0 < max_seconds:
        match = engine_class(rules, random.Random(seed + matches))
        match.start()
        apply, legal_actions, described = match.apply, match.legal_actions, match.choice
        if compact:
            while not match.over:  # what arena.games.base.offer does for the referee, inlined
                c = described()
                if c is None:
                    legal = legal_actions()
                    apply(legal[int(uniform() * len(legal))])
                else:
                    apply(nth_choice(c, int(uniform() * choice_count(c))))
                decisions += 1
        else:
            while not match.over:
                legal = legal_actions()
                apply(legal[int(uniform() * len(legal))])
                decisions += 1
        deals += match.deal_no
        matches += 1
    return EngineFigures(deals, decisions, matches, perf_counter() - t0)


def piquet_forms(n_deals: int, seed: int = 1, rounds: int = PIQUET_ROUNDS) -> tuple[EngineFigures, EngineFigures]:
    """Piquet self-play with full legal lists and with compact requests, ``n_deals`` deals each,
    interleaved in ``rounds`` slices (full, compact, full, ...; slice ``r`` of both forms plays
    the same seeds) so that a change of machine load affects both figures alike. Returns the
    summed figures, full form first.

    Both forms play the very same matches, action for action (see
    :func:`engine_deals_per_second`): the two figures differ only by what each form costs the
    engine, building every discard's list of legal sets or describing it, so their ratio is
    what the compact form saves (issue 12's target :data:`PIQUET_COMPACT_TARGET_RATIO`)."""
    per = max(1, n_deals // rounds)
    totals = [[0, 0, 0, 0.0], [0, 0, 0, 0.0]]
    for r in range(rounds):
        for i, compact in enumerate((False, True)):
            f = engine_deals_per_second(per, seed + 7919 * r, game="piquet", compact=compact)
            for j, v in enumerate((f.deals, f.decisions, f.matches, f.seconds)):
                totals[i][j] += v
    full, compact_ = (EngineFigures(int(t[0]), int(t[1]), int(t[2]), t[3]) for t in totals)
    return full, compact_


@dataclass(frozen=True)
class WireFigures:
    """Result of :func:`piquet_wire`: what the server writes to both seats over ``matches``
    Piquet matches in one legal form: total bytes and the largest line (bytes, newline
    included) with its message type."""

    form: str
    matches: int
    nbytes: int
    largest: int
    largest_kind: str

    @property
    def bytes_per_match(self) -> float:
        """Server bytes per match, both seats together."""
        return self.nbytes / self.matches


def piquet_wire(n_matches: int, seed: int = 1, compact: bool = False) -> WireFigures:
    """Every server line of ``n_matches`` Piquet matches (default rules, seeds ``seed + i``),
    encoded as the referee encodes them, both seats asking for the same legal form: the
    ``match_start``, every ``event`` a seat may see, every ``request`` (its ``legal`` from
    :func:`arena.games.base.offer`) and the ``match_end``. The seats answer with a random
    legal action (``random.Random(seed)``). No socket: the bytes are the figure, not the time."""
    import random

    chooser = random.Random(seed)
    total = largest = 0
    largest_kind = ""

    def sent(msg: msgspec.Struct) -> None:
        nonlocal total, largest, largest_kind
        n = len(encode(msg))
        total += n
        if n > largest:
            largest, largest_kind = n, type(msg).__name__

    for i in range(n_matches):
        match_id = f"t1-m{i + 1:04d}"
        match = PiquetMatch(Rules(), random.Random(seed + i))
        for seat in (0, 1):
            sent(MatchStart(match_id=match_id, game="piquet", seat=seat, opponent="opponent", rules=Rules(),
                            time=TimeControl()))
        seq = [0, 0]
        rid = [0, 0]
        events = match.start()
        while True:
            for event, seen_by in events:
                for seat in seen_by:
                    seq[seat] += 1
                    sent(EventMsg(match_id=match_id, seq=seq[seat], event=event))
            if match.over:
                break
            seat = match.to_act
            legal = offer(match, compact)
            rid[seat] += 1
            sent(Request(id=rid[seat], match_id=match_id, decision=match.decision,  # type: ignore[arg-type]
                         legal=legal, state=match.view(seat), time_ms=2000))
            if isinstance(legal, Compact):
                c = legal.choose
                action: Any = chooser.sample(c.from_, chooser.randint(c.min, c.max))
            else:
                action = chooser.choice(legal)
            events = match.apply(action)
        for seat in (0, 1):
            you = "none" if match.winner is None else ("win" if match.winner == seat else "loss")
            sent(MatchEnd(match_id=match_id, winner=match.winner, you=you,  # type: ignore[arg-type]
                          reason=match.end_reason, scores=match.scores, manches=match.manches))
    return WireFigures("compact" if compact else "full", n_matches, total, largest, largest_kind)
