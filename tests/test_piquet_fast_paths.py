"""The Piquet engine's fast paths against plain restatements of the rules (issue 12).

The engine reads the declarations from bit-mask tables, slices a follower's legal plays out of
the suit-sorted hand and the bench picks a random legal discard by index without building the
full list. Each test here recomputes the same thing the slow, obvious way (the way the engine
did before it was made fast) and requires the very same value, order included: the lists are
sent to bots and written to logs, so "the same set" is not enough.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.cards import RANKS_36, make_pack
from arena.games.base import choice_count, expand_choice, nth_choice
from arena.games.piquet import PiquetMatch, combinations_of, sequence_name, set_name
from protocol.messages import Choose, Rules
from tests.conftest import examples

ORDER = "6789TJQKA"  # piquet.md §P1, low to high
VALUE = {"A": 11, "K": 10, "Q": 10, "J": 10, "T": 10, "9": 9, "8": 8, "7": 7, "6": 6}
PACK_36 = make_pack(RANKS_36)


def ref_point(hand: list[str]) -> tuple[int, int, str]:
    """§P5.1: (total, cards, suit) of the longest suit, then the higher total; of two equal
    suits the first in c d h s; (0, 0, "") for an empty hand."""
    best = (0, 0, "")
    for suit in "cdhs":
        cards = [c for c in hand if c[1] == suit]
        total = sum(VALUE[c[0]] for c in cards)
        if cards and (len(cards), total) > (best[1], best[0]):
            best = (total, len(cards), suit)
    return best


def ref_sequences(hand: list[str]) -> list[tuple[int, int, str]]:
    """§P5.2: (length, top rank index, suit) of every maximal run of 3+ ranks in a suit, best
    first (then by suit letter, descending, as tuples sort)."""
    out = []
    for suit in "cdhs":
        held = {ORDER.index(c[0]) for c in hand if c[1] == suit}
        run = 0
        for r in range(len(ORDER) + 1):
            if r in held:
                run += 1
                continue
            if run >= 3:
                out.append((run, r - 1, suit))
            run = 0
    return sorted(out, reverse=True)


def ref_sets(hand: list[str]) -> list[tuple[int, int]]:
    """§P5.3: (4 or 3, rank index) of every quatorze and trio of A K Q J T, best first."""
    counts = Counter(c[0] for c in hand)
    return sorted(((n, ORDER.index(r)) for r, n in counts.items() if r in "TJQKA" and n >= 3), reverse=True)


@settings(max_examples=examples(500), deadline=None, database=None)
@given(st.lists(st.sampled_from(PACK_36), unique=True, max_size=20))
def test_declarations_equal_the_plain_count(hand: list[str]) -> None:
    point, sequences, sets = combinations_of(hand)
    assert point == ref_point(hand)
    assert sequences == ref_sequences(hand)
    assert sets == ref_sets(hand)
    # the names come from tables now: each still reads as the rules name it
    for length, top, _suit in sequences:
        assert sequence_name((length, top, _suit)).endswith(f"to the {_word(top)}")
    for n, r in sets:
        assert set_name((n, r)).startswith("quatorze of " if n == 4 else "trio of ")


def _word(rank: int) -> str:
    return {"A": "ace", "K": "king", "Q": "queen", "J": "jack", "T": "ten", "9": "nine", "8": "eight",
            "7": "seven", "6": "six"}[ORDER[rank]]


@settings(max_examples=examples(300), deadline=None, database=None)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(0, n))))
def test_nth_choice_is_the_full_lists_entry(shape: tuple[int, int, int]) -> None:
    n, a, b = shape
    choose = Choose(from_=PACK_36[:n], min=min(a, b), max=max(a, b))
    full = expand_choice(choose)
    assert choice_count(choose) == len(full)
    assert [nth_choice(choose, i) for i in range(len(full))] == full


def test_nth_choice_beyond_the_table_unranks_the_same_sets() -> None:
    for n, lo, hi in ((15, 0, 2), (16, 1, 3), (20, 2, 2)):
        choose = Choose(from_=PACK_36[:n], min=lo, max=hi)
        full = expand_choice(choose)
        assert choice_count(choose) == len(full)
        assert [nth_choice(choose, i) for i in range(len(full))] == full
    for bad in (-1, len(full)):
        try:
            nth_choice(choose, bad)
        except IndexError:
            continue
        raise AssertionError(f"index {bad} of {len(full)} sets was accepted")


@settings(max_examples=examples(40), deadline=None, database=None)
@given(st.integers(0, 2**32), st.sampled_from([32, 36]), st.sampled_from([2, 3]), st.integers(0, 2**32))
def test_legal_plays_are_the_hand_filtered_in_hand_order(seed: int, pack: int, packets: int, policy: int) -> None:
    """§P6.1 the plain way: the cards of the suit led in hand order, else the whole hand; and
    the trick (a property now) is the card led, if any."""
    m = PiquetMatch(Rules(pack=pack, packets=packets), random.Random(seed))
    m.start()
    rng = random.Random(policy)
    led: tuple[int, str] | None = None
    while not m.over:
        legal = m.legal_actions()
        if m.decision == "play":
            hand = list(m.hands[m.to_act])
            expected = [c for c in hand if c[1] == led[1][1]] or hand if led else hand
            assert legal == expected
            assert [(t.seat, t.card) for t in m.trick] == ([led] if led else [])
        action = legal[rng.randrange(len(legal))]
        seat, kind = m.to_act, m.decision
        m.apply(action)
        if kind == "play":
            led = (seat, action) if led is None else None
