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




async def test_hash_chain_detects_edits_insertions_deletions_and_rewritten_chains(server, store, tmp_path):
    import hashlib
    import subprocess
    import sys

    from arena.matchlog import GENESIS, ChainError, verify_chain

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), seed=4)
    path = row["log_path"]
    raw = open(path, "rb").read()
    assert verify_chain(raw, row["log_hash"]) == row["log_hash"]
    lines = raw.splitlines(keepends=True)
    with pytest.raises(ChainError, match="line 5"):
        verify_chain(b"".join(lines[:4] + [lines[4].replace(b'"seq":', b'"seq": ')] + lines[5:]))
    with pytest.raises(ChainError):
        verify_chain(b"".join(lines[:3] + lines[4:]))  # a line removed
    with pytest.raises(ChainError):
        verify_chain(b"".join(lines[:3] + [lines[3]] + lines[3:]))  # a line repeated
    # a forger who rewrites a line AND recomputes every hash after it keeps the chain intact,
    # but the last hash no longer matches the one committed to the database with the result
    forged, prev = [], GENESIS
    for line in lines:
        body = line.rstrip(b"\n")
        body = body[: body.rindex(b',"hash":')] + b"}"
        if b'"type":"result"' in body:
            body = body.replace(b'"detail":""', b'"detail":"forged"')
            assert b"forged" in body
        prev = hashlib.sha256(prev.encode() + body).hexdigest()
        forged.append(body[:-1] + b',"hash":"' + prev.encode() + b'"}\n')
    verify_chain(b"".join(forged))
    with pytest.raises(ChainError, match="differs from the recorded"):
        verify_chain(b"".join(forged), row["log_hash"])
    # the CLI says so too
    ok = subprocess.run([sys.executable, "-m", "arena.cli", "replay", path, "--db", str(tmp_path / "arena.db"),
                         "--quiet"], capture_output=True, text=True)
    assert ok.returncode == 0 and "verified" in ok.stdout
    open(path, "wb").write(b"".join(forged))
    bad = subprocess.run([sys.executable, "-m", "arena.cli", "replay", path, "--db", str(tmp_path / "arena.db")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "not verified" in bad.stdout
