"""Match logs replay exactly: the engine re-run from the header's seed and the logged actions
reproduces every event line, and any altered line is caught."""

from __future__ import annotations

import copy

import pytest

from arena.matchlog import ReplayError, read_log, replay
from arena.referee import MatchConfig
from protocol.messages import TimeControl
from tests.test_referee import _run


async def test_a_real_log_replays_and_tampering_is_detected(server, store, tmp_path):
    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), seed=21)
    lines = read_log(row["log_path"])
    assert replay(lines)["winner"] == res["result"].winner
    played = next(i for i, line in enumerate(lines) if line["type"] == "event" and line["event"]["kind"] == "play")
    bad = copy.deepcopy(lines)
    bad[played]["event"]["card"] = "7c" if bad[played]["event"]["card"] != "7c" else "8c"
    with pytest.raises(ReplayError):
        replay(bad)
    bad = copy.deepcopy(lines)
    hand = next(i for i, line in enumerate(lines) if line["type"] == "event" and line["event"]["kind"] == "hand")
    bad[hand]["seen_by"] = [0, 1]  # claims a hand was public
    with pytest.raises(ReplayError):
        replay(bad)
    bad = copy.deepcopy(lines)
    bad[-1]["scores"] = [9, 9]
    with pytest.raises(ReplayError):
        replay(bad)


async def test_a_forfeited_match_log_replays_too(server, store, tmp_path):
    cfg = MatchConfig(time=TimeControl(move_ms=80, grace_ms=10), on_timeout="auto", max_strikes=1)
    a, b, res, row = await _run(server, store, tmp_path, cfg, policy_a=lambda req: None)
    lines = read_log(row["log_path"])
    assert replay(lines)["reason"] == "forfeit_timeout"
    assert any(line["type"] == "incident" for line in lines)


def test_replay_rejects_a_log_without_header():
    with pytest.raises(ReplayError):
        replay([{"type": "event"}])


