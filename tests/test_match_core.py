"""The fault policy of ecarte.md §E8.1 (and piquet.md §P9), tested against the match core with
plain function calls: no sockets, no tasks, no clock (times are numbers we pass in).

Covers docs/protocol.md §10.4 (time control and bank), §10.5 (timeouts: forfeit, auto and
strikes), §10.6 (the illegal-action allowance), §11 (protocol faults, error budget, late and
duplicate answers), §12 (forfeits, absent bots, aborts)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from arena.match.core import (
    NOTHING,
    Answer,
    ConnectionCore,
    MatchConfig,
    MatchCore,
    Output,
    Refusal,
    result_line,
    unplayed,
)
from arena.match.limits import LIMITS, Limits
from protocol.framing import ProtocolError
from protocol.messages import TimeControl

_enc = msgspec.json.Encoder()


def lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def sent_to(out: Output, seat: int) -> list[dict[str, Any]]:
    """Every message of ``out`` written to ``seat``, in order."""
    return [m for s, data in out.sends if s == seat for m in lines(data)]


def logged(out: Output) -> list[dict[str, Any]]:
    return [json.loads(_enc.encode(obj)) for obj in out.log]


def begin(config: MatchConfig | None = None, seed: int = 5, compact: tuple[bool, bool] = (False, False)
          ) -> tuple[MatchCore, Output]:
    core = MatchCore("m1", seed, config or MatchConfig(), ("alice", "bob"), compact)
    start = core.start()
    assert [m["type"] for m in sent_to(start, 0)] == ["match_start"]
    out = core.begin()
    return core, out


def request(out: Output) -> dict[str, Any]:
    """The request among ``out``'s writes (the last message written to the asked seat)."""
    assert out.asked is not None
    seat, rid = out.asked
    req = sent_to(out, seat)[-1]
    assert req["type"] == "request" and req["id"] == rid
    return req


def first_legal(req: dict[str, Any]) -> Any:
    return req["legal"][0]


def answer_at(core: MatchCore, out: Output, elapsed_ms: float, action: Any = None) -> Output:
    """The asked seat answers ``action`` (default: its first legal action), ``elapsed_ms`` after
    its request was sent (sent at t = 1 s; times in ns)."""
    seat, rid = out.asked  # type: ignore[misc]
    core.sent(seat, 1_000_000_000)
    return core.answer(seat, rid, first_legal(request(out)) if action is None else action,
                       1_000_000_000 + int(elapsed_ms * 1_000_000))


def play_out(core: MatchCore, out: Output, elapsed_ms: float = 1.0) -> Output:
    while out.result is None:
        out = answer_at(core, out, elapsed_ms)
    return out


def illegal_card(core: MatchCore, req: dict[str, Any]) -> str:
    """A card the seat does not hold (asked at a ``play``)."""
    hand = set(req["state"]["hand"])
    return next(c for c in (r + s for s in "cdhs" for r in "789TJQKA") if c not in hand)


def to_play(core: MatchCore, out: Output) -> Output:
    """Answer first-legal until a ``play`` decision is asked."""
    while request(out)["decision"] != "play":
        out = answer_at(core, out, 1.0)
    return out


# ----------------------------------------------------------------------------- played out


def test_a_match_played_out_ends_by_its_rule_and_logs_every_line():
    core, out = begin()
    out = play_out(core, out)
    r = out.result
    assert r is core.result and r.reason == "target" and r.winner in (0, 1) and max(r.scores) >= 5
    assert r.decisions == core.decisions > 0 and r.deals >= 1 and r.faulty is None
    ends = dict(core.match_end())
    for seat in (0, 1):
        last = lines(ends[seat])[-1]
        assert last["type"] == "match_end" and last["you"] == ("win" if r.winner == seat else "loss")


def test_the_same_seed_and_answers_give_the_same_log_and_bytes():
    def run() -> tuple[list[bytes], list[bytes]]:
        core = MatchCore("m1", 11, MatchConfig(), ("alice", "bob"))
        out = core.start()
        logs = [_enc.encode(x) for x in out.log]
        sends = [d for _, d in out.sends]
        out = core.begin()
        while True:
            logs += [_enc.encode(x) for x in out.log]
            sends += [d for _, d in out.sends]
            if out.result is not None:
                break
            out = answer_at(core, out, 3.0)
        return logs, sends

    assert run() == run()


def test_events_wait_for_the_seats_next_write_and_requests_carry_the_clock():
    core, out = begin(MatchConfig(time=TimeControl(move_ms=1500, bank_ms=700)))
    msgs = sent_to(out, out.asked[0])
    assert [m["type"] for m in msgs][-1] == "request" and all(m["type"] == "event" for m in msgs[:-1])
    req = msgs[-1]
    assert (req["time_ms"], req["bank_ms"]) == (1500, 700)
    seqs = [m["seq"] for m in msgs[:-1]]
    assert seqs == list(range(1, len(seqs) + 1))


# ----------------------------------------------------------------------------- time control


def test_E8_1_bank_time_over_move_comes_off_the_bank_and_grace_is_never_usable():
    core, out = begin(MatchConfig(time=TimeControl(move_ms=100, bank_ms=50, grace_ms=10)))
    s = out.asked[0]
    out = answer_at(core, out, 130)  # 30 ms over: bank 50 -> 20
    while out.asked[0] != s:
        out = answer_at(core, out, 1)
    assert request(out)["bank_ms"] == 20
    out = answer_at(core, out, 125)  # 25 over, 20 in the bank, 5 within the grace: accepted, bank empty
    assert out.result is None and out.timeout is None
    while out.asked[0] != s:
        out = answer_at(core, out, 1)
    assert request(out)["bank_ms"] == 0
    out = answer_at(core, out, 111)  # beyond move + grace with the bank empty: a timeout
    assert out.timeout == s and out.result.reason == "forfeit_timeout" and out.result.faulty == s


def test_E8_1_timeout_forfeits_with_a_fatal_error_naming_the_request():
    core, out = begin(MatchConfig(time=TimeControl(move_ms=100, grace_ms=20)))
    s, rid = out.asked
    assert core.sent(s, 0) == 120_000_000  # the deadline: move + bank + grace (ns)
    out = core.timeout(s, rid)
    err = sent_to(out, s)[-1]
    assert err == {"type": "error", "code": "timeout", "id": rid, "fatal": True,
                   "message": f"no answer to request {rid} within 120 ms"}
    r = out.result
    assert (r.reason, r.winner, r.faulty) == ("forfeit_timeout", 1 - s, s)
    assert r.detail == f"{('alice', 'bob')[s]}: timeout: no answer to request {rid} within 120 ms"
    assert logged(out)[-1] == {"type": "incident", "seat": s, "code": "timeout", "detail": err["message"],
                               "ms": [120, 120]}  # elapsed (the deadline passed), allowed
    assert core.timeout(s, rid) is NOTHING and core.answer(s, rid, "x", 5_000_000) is NOTHING  # over: inputs ignored


def test_E8_1_auto_plays_the_first_legal_action_until_max_strikes_then_forfeits():
    core, out = begin(MatchConfig(on_timeout="auto", max_strikes=2))
    s = out.asked[0]
    for strike in (1, 2):
        while out.asked[0] != s:
            out = answer_at(core, out, 1)
        req = request(out)
        out = core.timeout(s, req["id"])
        err = sent_to(out, s)[0]
        assert err["code"] == "timeout" and not err["fatal"] and err["message"].endswith(f"(strike {strike} of 2)")
        assert {"type": "action", "seat": s, "decision": req["decision"], "action": first_legal(req),
                "auto": True} in logged(out)
        assert out.result is None
    while out.asked[0] != s:
        out = answer_at(core, out, 1)
    out = core.timeout(s, out.asked[1])
    assert sent_to(out, s)[0]["fatal"] and out.result.reason == "forfeit_timeout"


def test_a_timeout_for_a_request_already_answered_changes_nothing():
    core, out = begin()
    s, rid = out.asked
    answer_at(core, out, 1)
    assert core.timeout(s, rid) is NOTHING


# ----------------------------------------------------------------------------- illegal actions


def test_E8_1_an_illegal_action_forfeits_by_default_with_its_rule():
    core, out = begin()
    out = to_play(core, out)
    s, rid = out.asked
    out = answer_at(core, out, 1, illegal_card(core, request(out)))
    err = sent_to(out, s)[0]
    assert err["code"] == "illegal_action" and err["fatal"] and err["id"] == rid
    assert out.result.reason == "forfeit_illegal" and out.result.faulty == s
    assert logged(out)[0]["type"] == "incident" and logged(out)[0]["code"] == "illegal_action"


def test_E8_1_an_illegal_action_s_forfeit_names_the_rule_never_the_faulty_hand():
    """The error to the faulty bot and its own incident name its hand; the result, which both bots
    receive in ``match_end`` and the public history shows, names only the rule (hidden information)."""
    core, out = begin()
    out = to_play(core, out)
    s, _ = out.asked
    hand = request(out)["state"]["hand"]
    out = answer_at(core, out, 1, illegal_card(core, request(out)))
    assert any(card in sent_to(out, s)[0]["message"] for card in hand)
    assert any(card in logged(out)[0]["detail"] for card in hand)
    assert out.result.reason == "forfeit_illegal" and "§E" in out.result.detail
    assert not any(card in out.result.detail for card in hand), out.result.detail
    end = [m for seat, data in core.match_end() if seat == 1 - s for m in lines(data) if m["type"] == "match_end"]
    assert end and not any(card in json.dumps(end) for card in hand)


def test_E8_1_illegal_actions_within_the_allowance_are_asked_again_then_forfeit():
    core, out = begin(MatchConfig(max_illegal=2))
    out = to_play(core, out)
    s = out.asked[0]
    for _ in range(2):
        req = request(out)
        out = answer_at(core, out, 1, illegal_card(core, req))
        err = sent_to(out, s)[0]
        assert err["code"] == "illegal_action" and not err["fatal"]
        again = request(out)
        assert out.asked[0] == s and again["id"] != req["id"] and again["decision"] == req["decision"]
        assert again["legal"] == req["legal"]  # the state is unchanged
    out = answer_at(core, out, 1, illegal_card(core, request(out)))
    assert sent_to(out, s)[0]["fatal"] and out.result.reason == "forfeit_illegal"


def test_a_wrong_shape_counts_against_the_same_allowance():
    core, out = begin()
    s = out.asked[0]
    out = answer_at(core, out, 1, ["7c", "8c"])  # a list where a word or a card is wanted
    assert sent_to(out, s)[0]["code"] == "wrong_decision" and out.result.reason == "forfeit_illegal"


# ----------------------------------------------------------------------------- faults, disconnects


def test_a_protocol_fault_of_the_asked_seat_forfeits_at_once():
    core, out = begin()
    s = out.asked[0]
    out = core.fault(s, "bad_json", "line is not JSON")
    r = out.result
    name = ("alice", "bob")[s]
    assert (r.reason, r.faulty, r.detail) == ("forfeit_protocol", s, f"{name}: bad_json: line is not JSON")
    assert logged(out) == [{"type": "incident", "seat": s, "code": "bad_json", "detail": "line is not JSON"}]
    assert out.sends == []  # the error itself was sent by the connection (ConnectionCore)


def test_a_fault_of_the_waiting_seat_is_charged_before_the_next_decision_not_during_the_other_s():
    core, out = begin()
    s = out.asked[0]
    assert core.fault(1 - s, "not_your_turn", "no decision is asked of you") is NOTHING  # held
    out = answer_at(core, out, 1)  # the asked seat's decision completes and is logged...
    kinds = [line["type"] for line in logged(out)]
    assert kinds[0] == "action" and kinds[-1] == "incident"  # ...then the held fault is charged
    assert out.result.reason == "forfeit_protocol" and out.result.faulty == 1 - s


def test_a_fault_behind_the_last_answer_is_still_charged():
    # play until one answer before the end, hold a fault of the other seat, then answer the last
    core, out = begin()
    history: list[Any] = []
    replay = MatchCore("m1", 5, MatchConfig(), ("alice", "bob"))
    replay.start()
    o = replay.begin()
    while o.result is None:
        history.append(first_legal(request(o)))
        o = answer_at(replay, o, 1)
    for action in history[:-1]:
        out = answer_at(core, out, 1, action)
    s = out.asked[0]
    core.fault(1 - s, "bad_json", "junk")
    out = answer_at(core, out, 1, history[-1])
    assert out.result.reason == "forfeit_protocol" and out.result.faulty == 1 - s


def test_E8_1_a_disconnect_forfeits_and_a_second_fault_adds_nothing():
    core, out = begin()
    s = out.asked[0]
    out = core.disconnected(s, "connection lost (disconnected)")
    assert out.result.reason == "forfeit_disconnect"
    assert out.result.detail.endswith("disconnect: connection lost (disconnected)")
    assert core.disconnected(1 - s, "connection lost (disconnected)") is NOTHING
    assert core.fault(s, "bad_json", "x") is NOTHING


def test_both_seats_failing_the_asked_seat_s_timeout_is_charged_first():
    core, out = begin()
    s, rid = out.asked
    core.disconnected(1 - s, "connection lost (disconnected)")  # held: seat s is deciding
    out = core.timeout(s, rid)
    assert out.result.reason == "forfeit_timeout" and out.result.faulty == s


def test_a_failed_match_start_write_forfeits_before_any_deal():
    core = MatchCore("m1", 5, MatchConfig(), ("alice", "bob"))
    core.start()
    out = core.disconnected(1, "connection closed (disconnected)")  # nobody is asked yet
    assert out.result.reason == "forfeit_disconnect" and out.result.faulty == 1 and core.begin() is NOTHING


def test_absent_bots_lose_by_forfeit_both_absent_is_aborted():
    one, incidents = unplayed("m1", ("alice", "bob"), [1])
    assert (one.winner, one.reason, one.faulty, one.detail) == (0, "forfeit_disconnect", 1, "not connected: bob")
    assert incidents == [(1, "not_connected", "bob was not connected when the match was due")]
    both, incidents = unplayed("m1", ("alice", "bob"), [0, 1])
    assert (both.winner, both.reason, both.faulty) == (None, "aborted", None) and len(incidents) == 2
    assert result_line(both)["reason"] == "aborted" and "duration_ms" not in result_line(both)


def test_an_abort_has_no_winner_and_force_overrides_a_result_not_yet_committed():
    core, out = begin()
    out = core.abort("server shut down during the match")
    assert (out.result.winner, out.result.reason) == (None, "aborted")
    core, out = begin()
    out = play_out(core, out)
    assert core.abort("late") is NOTHING
    assert core.abort("server shut down during the match", force=True).result.reason == "aborted"


def test_an_absent_bot_is_an_input_of_the_core_which_writes_the_whole_log():
    core = MatchCore("m1", 5, MatchConfig(), ("alice", "bob"))
    out = core.absent([1])
    assert out.sends == [] and core.result is out.result
    assert (out.result.winner, out.result.reason, out.result.faulty) == (0, "forfeit_disconnect", 1)
    kinds = [line["type"] for line in logged(out)]
    assert kinds == ["match", "incident"] and logged(out)[1]["code"] == "not_connected"
    out = MatchCore("m1", 5, MatchConfig(), ("alice", "bob")).absent([0, 1])
    assert out.result.reason == "aborted" and len(logged(out)) == 3


def test_a_log_that_fails_aborts_even_a_match_over_and_an_abort_stays_as_it_is():
    err = OSError(28, "No space left on device")
    core = MatchCore("m1", 5, MatchConfig(), ("alice", "bob"))
    out = core.log_failed(err, opened=False)
    assert out.result.reason == "aborted" and out.result.detail.startswith("match log could not be opened")
    assert (out.result.scores, out.result.decisions, out.result.deals) == ([0, 0], 0, 0)
    core, out = begin()
    out = play_out(core, out)
    decisions = out.result.decisions
    failed = core.log_failed(err).result
    assert failed.reason == "aborted" and failed.winner is None and failed.decisions == decisions
    assert failed.detail == f"match log could not be written: {err}" and core.result is failed
    assert core.log_failed(err) is NOTHING  # already aborted
    core, out = begin()
    assert core.cancelled().result.detail == "server shut down during the match"


def test_a_bad_time_control_or_game_is_refused():
    with pytest.raises(ValueError):
        MatchCore("m", 1, MatchConfig(time=TimeControl(move_ms=0)), ("a", "b"))
    with pytest.raises(ValueError):
        MatchCore("m", 1, MatchConfig(max_strikes=-1), ("a", "b"))
    with pytest.raises(ValueError):
        MatchCore("m", 1, MatchConfig(game="chess"), ("a", "b"))


def test_piquet_follows_the_same_policy():
    core, out = begin(MatchConfig(game="piquet"), compact=(True, True))
    s, rid = out.asked
    out = core.timeout(s, rid)
    assert out.result.reason == "forfeit_timeout"


# ----------------------------------------------------------------------------- the connection


def test_connection_lines_classified_in_and_out_of_a_match():
    c = ConnectionCore()
    assert c.line(b"   ") is None
    v = c.line(b"{not json")
    assert isinstance(v, Refusal)
    assert (v.error.code, v.error.fatal, v.fault.code, v.close) == ("bad_json", False, "bad_json", None)
    c.seated = True
    rid = c.new_request_id()
    c.expect(rid)
    assert c.line(b'{"type":"action","id":%d,"action":"play"}' % (rid + 5)).error.code == "unknown_request"
    assert c.line(b'{"type":"action","id":%d,"action":"7c"}' % rid) == Answer(rid, "7c")
    v = c.line(b'{"type":"action","id":%d,"action":"7c"}' % rid)
    assert (v.error.code, v.error.fatal, v.fault.code) == ("duplicate_answer", True, "duplicate_answer")
    assert c.line(b'{"type":"action","id":999,"action":"7c"}').error.code == "not_your_turn"
    rid2 = c.new_request_id()
    c.expect(rid2)
    c.expire()
    v = c.line(b'{"type":"action","id":%d,"action":"7c"}' % rid2)
    assert (v.error.code, v.error.fatal, v.fault) == ("late_answer", False, None)  # harmless, never counted
    assert c.line(b'{"type":"hello","name":"x","token":"t","protocol":1}').error.code == "unexpected_hello"
    v = c.line(b'{"type":"list"}')
    assert (v.error.code, v.fault) == ("wrong_role", None)
    assert c.errors == 5  # bad_json, unknown_request, duplicate_answer, not_your_turn, unexpected_hello


def test_the_error_budget_closes_the_connection_at_its_limit():
    c = ConnectionCore(msgspec.structs.replace(LIMITS, max_errors=3))
    verdicts = [c.line(b"junk") for _ in range(3)]
    assert [v.close for v in verdicts] == [None, None, "too_many_errors"]
    assert c.too_many().code == "too_many_errors" and c.too_many().fatal


def test_a_broken_stream_is_a_fatal_error():
    err = ConnectionCore.broken(ProtocolError("line_too_long", "line longer than 65536 bytes", fatal=True))
    assert (err.code, err.fatal) == ("line_too_long", True)


def test_limits_refuse_nonsense_and_the_configs_point_at_them():
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"move_ms": 0}, Limits)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"max_illegal": -1}, Limits)
    cfg = MatchConfig()
    assert (cfg.on_timeout, cfg.max_strikes, cfg.max_illegal) == (LIMITS.on_timeout, LIMITS.max_strikes,
                                                                  LIMITS.max_illegal)
    assert TimeControl() == LIMITS.time_control()
    assert MatchConfig(time=TimeControl(move_ms=700), max_illegal=2).limits().move_ms == 700
