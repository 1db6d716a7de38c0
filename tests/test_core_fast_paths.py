"""The fast paths of the match core and the Écarté engine (issue 24 item 2) give what the plain
code gives: a full-form discard's ``legal`` from a template equals the sets encoded, the view a
request carries (``peek_view``, without copies) equals the view encoded, the discard choice
cached until the next ``apply`` equals one computed afresh, a legal discard accepted without the
checks is exactly what the checks accept (and everything else gets their very error), and an
event's sequence number past the kept table is written as below it."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arena.match.core as matchcore
from arena.cards import RANKS_36, make_pack
from arena.games import GAMES
from arena.games.base import IllegalAction, check_choice, expand_choice
from arena.match.core import MatchConfig, MatchCore, legal_json
from protocol.framing import decode_server, encode
from protocol.messages import Choose, EventMsg, Rules

_enc = msgspec.json.Encoder().encode
PACK_36 = make_pack(RANKS_36)


class _Asked:
    """An engine whose pending decision is the choice ``choose`` (what :func:`legal_json` reads)."""

    def __init__(self, choose: Choose) -> None:
        self.choose = choose

    def choice(self) -> Choose:
        return self.choose

    def legal_actions(self) -> list[Any]:
        return expand_choice(self.choose)


@settings(max_examples=200, deadline=None)
@given(cards=st.lists(st.sampled_from(PACK_36), unique=True, max_size=12), least=st.integers(0, 13),
       most=st.integers(0, 13))
def test_a_discard_from_its_template_is_the_sets_encoded(cards: list[str], least: int, most: int):
    choose = Choose(from_=cards, min=least, max=most)
    assert legal_json(_Asked(choose), False) == _enc(expand_choice(choose))


def test_a_hand_the_templates_do_not_take_is_encoded_the_plain_way():
    for cards in (["Ks", "x\"y"], [f"{r}c" for r in "6789TJQKA"] + [f"{r}d" for r in "6789"]):  # odd card; 13 cards
        choose = Choose(from_=cards, min=1, max=2)
        assert legal_json(_Asked(choose), False) == _enc(expand_choice(choose))


def _random_play(game: str, seed: int, rules: Rules) -> Any:
    """Random legal play of one match, yielding the engine before each decision."""
    engine = GAMES[game](rules, random.Random(seed))
    engine.start()
    rng = random.Random(seed + 1)
    while not engine.over:
        yield engine
        legal = engine.legal_actions()
        engine.apply(legal[rng.randrange(len(legal))])


@pytest.mark.parametrize("game,rules", [("ecarte", Rules()), ("ecarte", Rules(target="turn-up", manches=3)),
                                        ("piquet", Rules()), ("piquet", Rules(pack=36, packets=3))])
def test_the_view_a_request_carries_is_the_view_encoded(game: str, rules: Rules):
    asked = 0
    for seed in range(3):
        for engine in _random_play(game, seed, rules):
            for seat in (0, 1):
                assert _enc(engine.peek_view(seat)) == _enc(engine.view(seat))
            asked += 1
    assert asked > 100


def test_the_cached_discard_choice_is_the_one_computed_afresh():
    discards = 0
    for seed in range(20):
        for engine in _random_play("ecarte", seed, Rules()):
            if engine.decision != "discard":
                assert engine.choice() is None
                continue
            first = engine.choice()
            assert engine.choice() is first  # cached until the next apply
            assert first == engine._discard_choice()
            assert engine.legal_actions() == expand_choice(first)
            discards += 1
    assert discards > 50


def _outcome(action: Any, choose: Choose) -> Any:
    try:
        return check_choice(action, choose, "rule §1", "rule §2", "elder")
    except IllegalAction as exc:
        return type(exc), str(exc), exc.rule


_items = st.one_of(st.sampled_from(PACK_36), st.integers(0, 3), st.none(), st.just(["Ks"]), st.just("Kz"))


@settings(max_examples=300, deadline=None)
@given(hand=st.lists(st.sampled_from(PACK_36), unique=True, min_size=1, max_size=12),
       picks=st.lists(st.integers(0, 11), max_size=6), extra=st.lists(_items, max_size=2),
       least=st.integers(0, 5), most=st.integers(0, 6))
def test_a_discard_accepted_without_the_checks_is_what_the_checks_accept(hand: list[str], picks: list[int],
                                                                      extra: list[Any], least: int, most: int):
    """A tuple takes the checks' path; the same cards as a list take the fast one."""
    choose = Choose(from_=hand, min=least, max=most)
    action = [hand[i % len(hand)] for i in picks] + extra
    assert _outcome(action, choose) == _outcome(tuple(action), choose)


def test_an_event_past_the_kept_sequence_numbers_is_the_same_line(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(matchcore, "_SEQ_KEPT", 3)
    core = MatchCore("m-seq", 5, MatchConfig(), ("a", "b"))
    core.start()
    out = core.begin()
    lines = []
    while core.result is None and len(lines) < 40:
        lines += [line + b"\n" for _, data in out.sends for line in data.split(b"\n") if line]
        seat, rid = out.asked  # type: ignore[misc]
        out = core.answer(seat, rid, core.engine.auto_action(), 0)
    events = [decode_server(line[:-1]) for line in lines if line.startswith(b'{"type":"event"')]
    assert max(ev.seq for ev in events if isinstance(ev, EventMsg)) > 3
    for line in lines:
        assert encode(decode_server(line[:-1])) == line
