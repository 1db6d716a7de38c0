"""The compact legal form (docs/protocol.md §8.13) says exactly what the full list says.

Over thousands of hypothesis-generated Piquet deals, with both packs (32 and 36 cards,
piquet.md §P1) and both packet sizes (§P2.2), at elder's discard (§P4.1) and younger's (§P4.2):

* the engine's description (:meth:`PiquetMatch.choice`) expands to the engine's full list;
* the compact validator (:func:`arena.games.base.check_choice`) accepts every answer that is in
  the full list, in any order, and refuses every other one (a card twice, a card not in the
  hand, a size out of range, a value that is not a list of cards), and the engine's ``apply``
  agrees with it;
* the description holds the exact constraints of the rules, written out independently here.

Écarté's discard (ecarte.md §E4.3-§E4.4) goes through the same code; it is checked too.
"""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.cards import RANKS_32, RANKS_36, make_pack
from arena.games.base import IllegalAction, WrongDecision, check_choice, expand_choice, first_choice, offer
from arena.games.ecarte import EcarteMatch
from arena.games.piquet import PiquetMatch
from protocol.messages import Choose, Compact, Rules
from tests.conftest import examples

SEEDS = st.integers(min_value=0, max_value=2**64 - 1)
DEALS = settings(max_examples=examples(1000), deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])


def rules_max(m: PiquetMatch, seat: int) -> tuple[int, int]:
    """piquet.md §P4.1-§P4.2 restated: elder 1 to min(5, talon) (8 with 36 cards), younger 0 to
    what the talon holds."""
    if seat == m.elder:
        return 1, min(8 if m.rules.pack == 36 else 5, len(m.talon))
    return 0, len(m.talon)


def candidates(m: PiquetMatch, rng: random.Random, n: int) -> list[object]:
    """``n`` answers, legal and not: subsets of the hand of every size (shuffled order), with a
    card twice, with a card of the talon or the other hand, and a few wrong shapes."""
    seat = m.to_act
    hand = m.hands[seat]
    others = [c for c in make_pack(RANKS_36 if m.rules.pack == 36 else RANKS_32) if c not in hand]
    out: list[object] = [[], list(hand), "7c", None, 3, [1, 2], ["7c", 5]]
    for _ in range(n):
        k = rng.randint(0, min(len(hand), 10))
        cards = rng.sample(hand, k)
        roll = rng.random()
        if roll < 0.15 and cards:
            cards.append(rng.choice(cards))  # a card twice
        elif roll < 0.3:
            cards.append(rng.choice(others))  # not in the hand
        rng.shuffle(cards)
        out.append(cards)
    return out


def is_legal(answer: object, hand: list[str], lo: int, hi: int) -> bool:
    """The rules restated: a list of distinct cards of the hand, ``lo`` to ``hi`` of them."""
    if not isinstance(answer, list) or not all(isinstance(c, str) for c in answer):
        return False
    return len(set(answer)) == len(answer) and set(answer) <= set(hand) and lo <= len(answer) <= hi


def check_decision(m: PiquetMatch | EcarteMatch, rng: random.Random, expected: tuple[int, int],
                   exhaustive: bool = False) -> None:
    """The description matches the rules; random answers are accepted by the validator and by
    the engine exactly when the rules allow them (an engine that refuses keeps its state, so
    the refusals are tried on ``m`` itself). With ``exhaustive``, every subset of the hand goes
    through the validator and the accepted ones are exactly the engine's full list."""
    choose = m.choice()
    assert choose is not None and m.decision == "discard"
    assert (choose.min, choose.max) == expected
    hand = m.hands[m.to_act]
    assert choose.from_ == hand  # the hand, in hand order
    assert offer(m, compact=True) == Compact(choose=choose)
    assert first_choice(choose) == m.auto_action() == hand[: choose.min]
    for answer in candidates(m, rng, 12):
        legal = is_legal(answer, hand, *expected)
        try:
            got = check_choice(answer, choose, "r", "s", "who")
        except (IllegalAction, WrongDecision):
            assert not legal, answer
        else:
            assert legal and got == answer, answer
        if not legal:
            with pytest.raises((IllegalAction, WrongDecision)):
                m.apply(answer)
    if exhaustive:
        full_list = m.legal_actions()
        assert full_list == expand_choice(choose) and full_list[0] == first_choice(choose)
        full = {frozenset(a) for a in full_list}
        assert len(full) == len(full_list)
        accepted = set()
        for k in range(len(hand) + 1):
            for subset in combinations(hand, k):
                answer = list(subset)
                rng.shuffle(answer)  # any order
                try:
                    check_choice(answer, choose, "r", "s", "who")
                except IllegalAction:
                    continue
                accepted.add(frozenset(answer))
        assert accepted == full


def play_exchange(m: PiquetMatch, rng: random.Random, exhaustive: bool = False) -> None:
    """Check elder's discard, make a random legal one, look or pass, check younger's."""
    check_decision(m, rng, rules_max(m, m.elder), exhaustive)
    c = m.choice()
    m.apply(rng.sample(c.from_, rng.randint(c.min, c.max)))
    if m.decision == "look":
        m.apply(rng.choice(["look", "pass"]))
    assert m.to_act == m.dealer
    check_decision(m, rng, rules_max(m, m.dealer), exhaustive)


@DEALS
@given(seed=SEEDS, packets=st.sampled_from([2, 3]))
def test_compact_validator_follows_the_rules_32_cards(seed: int, packets: int) -> None:
    m = PiquetMatch(Rules(pack=32, packets=packets), random.Random(seed))
    m.start()
    play_exchange(m, random.Random(seed ^ 0x5EED))


@DEALS
@given(seed=SEEDS, packets=st.sampled_from([2, 3]))
def test_compact_validator_follows_the_rules_36_cards(seed: int, packets: int) -> None:
    m = PiquetMatch(Rules(pack=36, packets=packets), random.Random(seed))
    m.start()
    play_exchange(m, random.Random(seed ^ 0x5EED))


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, pack=st.sampled_from([32, 36]))
def test_validator_accepts_exactly_the_full_list(seed: int, pack: int) -> None:
    """Every subset of the hand (4,096 of 12 cards), in a random order, through the
    validator: what it accepts is the engine's full list, no more, no less."""
    m = PiquetMatch(Rules(pack=pack), random.Random(seed))
    m.start()
    play_exchange(m, random.Random(seed), exhaustive=True)


@pytest.mark.parametrize("pack", [32, 36])
def test_every_member_of_the_full_list_is_accepted_in_any_order(pack: int) -> None:
    """Exhaustive on a few deals: all (up to 4,095) sets, each reversed, pass the validator."""
    for seed in range(3):
        m = PiquetMatch(Rules(pack=pack), random.Random(seed))
        m.start()
        m.apply(m.choice().from_[:1])  # elder takes one: younger has the most choices
        m.apply("pass")
        choose = m.choice()
        full = m.legal_actions()
        assert len(full) == sum(len(list(combinations(choose.from_, k))) for k in range(choose.min, choose.max + 1))
        for answer in full:
            assert check_choice(answer[::-1], choose, "r", "s", "who") == answer[::-1]


@settings(max_examples=examples(100), deadline=None, database=None)
@given(seed=SEEDS)
def test_ecarte_discard_compact_equals_full_list(seed: int) -> None:
    """ecarte.md §E4.3-§E4.4: elder 1 to min(5, stock), the dealer 0 to min(5, stock)."""
    m = EcarteMatch(Rules(), random.Random(seed))
    m.start()
    rng = random.Random(seed)
    while m.decision not in ("discard", None) and not m.over:
        m.apply({"propose": "propose", "respond": "accept"}.get(m.decision) or m.legal_actions()[0])
    if m.decision != "discard":
        return
    most = min(5, len(m.stock))
    check_decision(m, rng, (1, most), exhaustive=True)
    m.apply(m.legal_actions()[rng.randrange(len(m.legal_actions()))])
    if m.decision == "discard":
        check_decision(m, rng, (0, min(5, len(m.stock))), exhaustive=True)


def test_choose_is_none_for_every_other_decision() -> None:
    m = PiquetMatch(Rules(), random.Random(4))
    m.start()
    seen = set()
    while not m.over:
        if m.decision != "discard":
            assert m.choice() is None and offer(m, compact=True) == m.legal_actions()
            seen.add(m.decision)
        m.apply(m.auto_action())
    assert {"play"} <= seen


def test_error_texts_quote_cards_as_json() -> None:
    m = PiquetMatch(Rules(), random.Random(1))
    m.start()
    choose = Choose(from_=list(m.hands[m.to_act]), min=1, max=5)
    card = m.hands[m.to_act][0]
    with pytest.raises(IllegalAction, match=r'\["' + card + '","' + card + r'"\]'):
        check_choice([card, card], choose, "piquet.md §P4", "piquet.md §P4.1", "elder")
    with pytest.raises(IllegalAction, match="cannot discard 6 cards: elder discards 1 to 5 cards here"):
        check_choice(m.hands[m.to_act][:6], choose, "piquet.md §P4", "piquet.md §P4.1", "elder")
    with pytest.raises(WrongDecision, match=r'got "Qd"'):
        m.apply("Qd")
