"""The referee over real TCP: a match played to the end, and every way a bot can lose by
forfeit (ecarte.md §E8.1), with the result committed before match_end is sent."""

from __future__ import annotations

import trio

from arena.match.log import MatchLog, read_log
from arena.match.referee import MatchConfig, Referee
from arena.schedule.formats.round_robin import schedule
from arena.schedule.tournament import play_match
from protocol.messages import TimeControl
from tests.conftest import Client, connect_bot


async def _setup(server, store, tmp_path, config: MatchConfig, seed: int = 5):
    a = await connect_bot(server, "alice")
    b = await connect_bot(server, "bob")
    tid = store.create_tournament("ecarte", "test", 1, config, ["alice", "bob"], [("alice", "bob", seed)])
    row = store.pending_matches(tid)[0]
    return a, b, tid, row


async def _run(server, store, tmp_path, config, policy_a=None, policy_b=None, seed=5, script_a=None):
    a, b, tid, row = await _setup(server, store, tmp_path, config, seed)
    results = {}
    async with trio.open_nursery() as n:

        async def ref():
            results["result"] = await play_match(store, server, row, config, tmp_path / "logs")

        async def run_a():
            results["a"] = await (script_a(a) if script_a else a.play(policy_a))

        async def run_b():
            results["b"] = await b.play(policy_b)

        n.start_soon(ref)
        n.start_soon(run_a)
        n.start_soon(run_b)
    return a, b, results, store.matches(tid)[0]


async def test_match_is_played_to_the_target_and_recorded(server, store, tmp_path):
    a, b, res, row = await _run(server, store, tmp_path, MatchConfig())
    result = res["result"]
    assert result.reason == "target" and result.winner in (0, 1)
    assert max(result.scores) >= 5
    assert row["status"] == "done" and row["winner"] == ("alice", "bob")[result.winner]
    assert row["decisions"] == result.decisions > 0
    assert res["a"]["type"] == "match_end" and res["a"]["you"] == ("win" if result.winner == 0 else "loss")
    assert res["b"]["you"] == ("win" if result.winner == 1 else "loss")
    log = read_log(row["log_path"])
    assert log[0]["type"] == "match" and log[-1]["type"] == "result"
    hidden = [line for line in log if line["type"] == "event" and line["hidden"]]
    assert {h["event"]["kind"] for h in hidden} >= {"deck", "hand"}


async def test_every_request_carries_the_full_legal_list_and_time(server, store, tmp_path):
    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(time=TimeControl(move_ms=1500, bank_ms=700)))
    reqs = [m for m in a.received if m["type"] == "request"]
    assert reqs and all(r["legal"] and r["time_ms"] == 1500 for r in reqs)
    assert all(0 < r["bank_ms"] <= 700 for r in reqs)
    assert {r["decision"] for r in reqs} >= {"propose", "play"} or {r["decision"] for r in reqs} >= {"respond", "play"}


# Timeouts, strikes and late answers are tested without the wall clock: the policy in
# tests/test_match_core.py, the driver's virtual deadlines in tests/test_referee_driver.py.


async def test_E8_1_illegal_action_forfeits_with_its_rule(server, store, tmp_path):
    def cheat(req):
        if req["decision"] == "play":
            mine = set(req["state"]["hand"])
            return next(c for c in ("7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "7d") if c not in mine)
        return req["legal"][0]

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), policy_a=cheat)
    assert res["result"].reason == "forfeit_illegal" and res["result"].winner == 1
    err = next(m for m in a.received if m["type"] == "error")
    assert err["code"] == "illegal_action" and "not in the hand" in err["message"] and err["fatal"]
    assert row["reason"] == "forfeit_illegal"


async def test_E8_1_illegal_action_within_allowance_is_asked_again(server, store, tmp_path):
    tried = {"n": 0}

    def once_wrong(req):
        if req["decision"] == "propose" and tried["n"] == 0:
            tried["n"] += 1
            return "Ks"  # a card where a call is wanted
        return req["legal"][0]

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(max_illegal=1), policy_a=once_wrong, seed=3)
    if tried["n"] == 0:  # alice was never elder first: nothing to check in this seed
        return
    assert any(m["type"] == "error" and m["code"] == "wrong_decision" and not m["fatal"] for m in a.received)
    assert res["result"].reason == "target"


async def test_E8_1_disconnect_mid_match_forfeits(server, store, tmp_path):
    async def quitter(client: Client):
        for _ in range(2):
            req = await client.recv_type("request")
            await client.send({"type": "action", "id": req["id"], "action": req["legal"][0]})
        await client.recv_type("request")
        await client.aclose()  # hang up mid-match, with a request pending
        return None

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), script_a=quitter)
    assert res["result"].reason == "forfeit_disconnect" and res["result"].winner == 1
    assert res["b"]["reason"] == "forfeit_disconnect"
    assert row["winner"] == "bob"


async def test_malformed_line_mid_match_forfeits_with_its_code(server, store, tmp_path):
    async def garbler(client: Client):
        await client.recv_type("request")
        await client.send_raw(b"{not json\n")
        return await client.recv_type("match_end")

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), script_a=garbler)
    assert res["result"].reason == "forfeit_protocol"
    assert any(m["type"] == "error" and m["code"] == "bad_json" for m in a.received)
    assert "bad_json" in row["detail"]


async def test_answer_to_unknown_id_is_an_error(server, store, tmp_path):
    async def wrong_id(client: Client):
        req = await client.recv_type("request")
        await client.send({"type": "action", "id": req["id"] + 1000, "action": req["legal"][0]})
        return await client.recv_type("match_end")

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), script_a=wrong_id)
    assert any(m["type"] == "error" and m["code"] == "unknown_request" for m in a.received)
    assert res["result"].reason == "forfeit_protocol" and res["result"].winner == 1


async def test_result_is_committed_before_match_end_is_sent(server, store, tmp_path):
    a = await connect_bot(server, "alice")
    b = await connect_bot(server, "bob")
    seen_in_db = []

    async def record(result):
        # at this point no bot may have received match_end yet
        assert not any(m["type"] == "match_end" for m in a.received + b.received)
        seen_in_db.append(result)

    async with trio.open_nursery() as n:
        n.start_soon(a.play)
        n.start_soon(b.play)
        ref = Referee("m1", 9, MatchConfig(), (server.bots["alice"], server.bots["bob"]), MatchLog(None), record)
        await ref.run()
    assert len(seen_in_db) == 1


def test_round_robin_schedule_alternates_seats_and_covers_every_pair():
    plan = schedule(["a", "b", "c", "d"], 4, seed=1)
    assert len(plan) == 6 * 4
    for x, y in [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]:
        games = [p for p in plan if {p.bot0, p.bot1} == {x, y}]
        assert len(games) == 4
        assert sum(p.bot0 == x for p in games) == 2  # seats alternate
    assert [p.index for p in plan] == list(range(len(plan)))
    assert plan == schedule(["a", "b", "c", "d"], 4, seed=1)
    assert plan != schedule(["a", "b", "c", "d"], 4, seed=2)
