"""Match logs replay exactly: the engine re-run from the header's seed and the logged actions
reproduces every event line, and any altered line is caught."""

from __future__ import annotations

import copy
import json
import re

import pytest

from arena.match.log import read_log
from arena.match.referee import MatchConfig
from arena.match.replay import ReplayError, replay
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

    from arena.match.log import GENESIS, ChainError, read_bytes, verify_chain

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), seed=4)
    path = row["log_path"]
    raw = read_bytes(path)
    assert verify_chain(raw, row["log_hash"]) == row["log_hash"]
    lines = raw.splitlines(keepends=True)
    with pytest.raises(ChainError, match=r"lines? (\d+-)?\d+: hash does not chain") as caught:
        verify_chain(b"".join(lines[:4] + [lines[4].replace(b'"event":', b'"event": ')] + lines[5:]))
    first, last = map(int, re.search(r"lines? (\d+)(?:-(\d+))?:", str(caught.value)).groups(default="0"))
    assert first <= 5 <= max(first, last)  # the block that holds the altered line 5 is named
    with pytest.raises(ChainError):
        verify_chain(b"".join(lines[:3] + lines[4:]))  # a line removed
    with pytest.raises(ChainError):
        verify_chain(b"".join(lines[:3] + [lines[3]] + lines[3:]))  # a line repeated
    # a forger who rewrites a line AND recomputes every hash after it keeps the chain intact,
    # but the last hash no longer matches the one committed to the database with the result
    forged, prev = [], GENESIS
    for line in lines:  # each line its own block, as version 1 logs were
        body = line.rstrip(b"\n")
        if b',"hash":' in body:
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


async def test_logs_are_gzip_smaller_deterministic_and_read_back_whole(server, store, tmp_path):
    """A played match's log is one gzip stream (``.jsonl.gz``) under a third of the plain
    bytes, the same bytes when written again, and read back (also cut short) as the lines."""
    import gzip

    from arena.match.log import MatchLog, read_bytes, verify_chain

    a, b, res, row = await _run(server, store, tmp_path, MatchConfig(), seed=21)
    path = row["log_path"]
    assert path.endswith(".jsonl.gz")
    packed = open(path, "rb").read()
    plain = gzip.decompress(packed)
    assert read_bytes(path) == plain and verify_chain(plain, row["log_hash"]) == row["log_hash"]
    assert len(packed) * 3 < len(plain), (len(packed), len(plain))  # the hashes (random hex) stay
    again = tmp_path / "again.jsonl.gz"
    with MatchLog(again) as log:  # the same lines written again: the same compressed bytes
        for line in plain.splitlines():
            log._fh.write(line + b"\n")
        log.flush()  # as the referee does after the result line, before it commits the result
    assert again.read_bytes() == packed
    cut = read_bytes_of(tmp_path / "cut.jsonl.gz", packed[: len(packed) // 2])
    assert cut and plain.startswith(cut)  # a crash mid-write leaves the lines before the cut


def read_bytes_of(path, data: bytes) -> bytes:
    from arena.match.log import read_bytes

    path.write_bytes(data)
    return read_bytes(path)


def test_a_match_never_started_has_a_log_that_verifies(tmp_path):
    """A bot not connected when its match is due: header, incident, result; ``arena replay``
    verifies it against the hash in the database."""
    import subprocess
    import sys

    import trio

    from arena.net.server import ArenaServer, ServerConfig
    from arena.schedule.formats import Pairing
    from arena.schedule.tournament import play_match
    from arena.store.sqlite import Store

    store = Store(tmp_path / "a.db")
    tid = store.create_tournament("ecarte", "round-robin", 1, {}, ["x", "y"], [Pairing(0, "x", "y", 5)])
    row = store.pending_matches(tid)[0]
    server = ArenaServer(store, ServerConfig())
    result = trio.run(play_match, store, server, row, MatchConfig(), tmp_path / "logs")
    assert result.reason == "aborted"
    stored = store.matches(tid)[0]
    lines = read_log(stored["log_path"])
    assert [line["type"] for line in lines] == ["match", "incident", "incident", "result"]
    assert {line["code"] for line in lines if line["type"] == "incident"} == {"not_connected"}
    assert replay(lines)["reason"] == "aborted"
    out = subprocess.run([sys.executable, "-m", "arena.cli", "replay", stored["log_path"], "--db",
                          str(tmp_path / "a.db"), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 0 and "verified" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_gathered_lines_make_the_same_file_whatever_the_piece_size(tmp_path, monkeypatch, suffix):
    """Lines are handed to the file in pieces of BUFFER_BYTES (arena.match.log): the bytes, the
    chain and the last hash do not depend on the piece size, and nothing is written before a
    flush or the close of a small log."""
    import arena.match.log as matchlog
    from arena.match.log import MatchLog, read_bytes, verify_chain

    lines = [{"type": "incident", "seat": i % 2, "code": "x", "detail": "d" * (i % 50)} for i in range(400)]
    files = []
    for piece in (100_000, 100, 1):
        monkeypatch.setattr(matchlog, "BUFFER_BYTES", piece)
        path = tmp_path / f"{piece}{suffix}"
        with MatchLog(path) as log:
            for line in lines[:3]:
                log.write(line)
            if piece == 100_000 and suffix == ".jsonl":
                assert path.stat().st_size == 0  # gathered in memory, not yet written
            for line in lines[3:]:
                log.write(line)
            log.flush()
            assert verify_chain(read_bytes(path)) == log.last_hash
        files.append(path.read_bytes())
    assert files[0] == files[1] == files[2]
    assert len(read_bytes(tmp_path / f"1{suffix}").splitlines()) == 400


def test_blocks_of_lines_share_a_short_hash_and_logs_with_a_hash_per_line_still_verify(tmp_path):
    """A block of lines (at least HASH_EVERY, ended by a write_all call; the header and a single
    write end one) stores the first HASH_CHARS digits of its hash on its last line: the SHA-256
    of the previous block's full hash, its other lines with their newlines, and its last line
    without the hash field. An altered line names its block; a log cut after lines no hash covers
    says so; a log written by the previous versions, a full or short hash on every line, reads and
    verifies as before."""
    import gzip
    import hashlib

    from arena.match.log import GENESIS, HASH_CHARS, HASH_EVERY, ChainError, MatchLog, read_bytes, verify_chain

    lines = [{"type": "incident", "seat": i % 2, "code": "timeout", "detail": f"no answer {i}"} for i in range(40)]
    with MatchLog(tmp_path / "new.jsonl.gz") as log:
        log.write({"type": "match", "match_id": "m"})
        for k in range(0, 40, 5):
            log.write_all(lines[k:k + 5])
        log.write({"type": "result"})
    raw = read_bytes(tmp_path / "new.jsonl.gz")
    got = raw.splitlines()
    hashed = [n for n, line in enumerate(got, start=1) if b',"hash":"' in line]
    assert HASH_EVERY == 16 and hashed == [1, 21, 41, 42]  # header, two blocks of 20 lines, the result
    prev, block = GENESIS, b""
    for n, line in enumerate(got, start=1):
        if n not in hashed:
            block += line + b"\n"
            continue
        body = line[: line.rindex(b',"hash":')] + b"}"
        prev = hashlib.sha256(prev.encode() + block + body).hexdigest()
        assert line.endswith(b',"hash":"' + prev[:HASH_CHARS].encode() + b'"}')
        block = b""
    assert verify_chain(raw, log.last_hash) == log.last_hash == prev and len(prev) == 64
    altered = raw.splitlines(keepends=True)
    altered[11] = altered[11].replace(b"no answer 10", b"no answer 12")
    with pytest.raises(ChainError, match="lines 2-21: hash does not chain from line 1"):
        verify_chain(b"".join(altered))
    with pytest.raises(ChainError, match="lines 22-30 carry no hash"):
        verify_chain(b"".join(raw.splitlines(keepends=True)[:30]))
    # the previous versions' format: every line its own block, with its full (or short) hash
    full, prev = [], GENESIS
    for line in got:
        body = line[: line.rindex(b',"hash":')] + b"}" if b',"hash":' in line else line
        prev = hashlib.sha256(prev.encode() + body).hexdigest()
        full.append(body[:-1] + b',"hash":"' + prev.encode() + b'"}\n')
    old = tmp_path / "old.jsonl.gz"
    old.write_bytes(gzip.compress(b"".join(full)))
    assert verify_chain(read_bytes(old), prev) == prev
    with pytest.raises(ChainError, match="line 3: hash does not chain"):
        verify_chain(b"".join(full[:2] + [full[2].replace(b'"seat":1', b'"seat":0')] + full[3:]))


def test_a_copy_taken_before_the_close_is_completed_to_the_same_file(tmp_path):
    """What a worker commits (the file after the flush before the result's commit, no gzip
    trailer yet) made whole is the file its close makes, byte for byte; corrupt gzip is a
    ChainError, never a zlib error."""
    from arena.match.log import ChainError, MatchLog, complete_gzip, decompress

    path = tmp_path / "m.jsonl.gz"
    with MatchLog(path) as log:
        log.write_all({"type": "incident", "seat": 0, "code": "x", "detail": "d" * i} for i in range(300))
        log.flush()
        copy = path.read_bytes()
    whole = path.read_bytes()
    assert copy != whole and complete_gzip(copy) == whole and complete_gzip(whole) == whole
    assert decompress(copy) == decompress(whole)
    bad = bytearray(whole)
    bad[len(bad) // 2] ^= 0xFF
    with pytest.raises(ChainError, match="corrupt"):
        decompress(bytes(bad))
    with pytest.raises(ChainError):
        complete_gzip(copy[: len(copy) - 3])


def test_replay_names_a_truncated_random_empty_or_missing_log_as_such(tmp_path):
    """``arena replay`` on what is not a whole match log says which it is, in one line, exit 1."""
    import subprocess
    import sys

    from arena.match.log import ChainError, MatchLog, read_bytes, verify_chain

    with MatchLog(tmp_path / "whole.jsonl") as log:
        log.write({"type": "match", "match_id": "m"})
        log.incident(0, "x", "a line to cut")
    whole = read_bytes(tmp_path / "whole.jsonl")
    verify_chain(whole)
    with pytest.raises(ChainError, match="empty"):
        verify_chain(b"")
    with pytest.raises(ChainError, match="not a match log"):
        verify_chain(b"\x00\x17 some random bytes\n")
    with pytest.raises(ChainError, match="truncated"):
        verify_chain(whole[:-20])  # the second line cut short
    cases = {"random.jsonl": b"\x8a\x13junk\n", "empty.jsonl": b""}
    for name, body in cases.items():
        (tmp_path / name).write_bytes(body)
    for name, said in (("random.jsonl", "not a match log"), ("empty.jsonl", "empty"),
                       ("missing.jsonl.gz", "No such file")):
        proc = subprocess.run([sys.executable, "-m", "arena.cli", "replay", str(tmp_path / name), "--quiet"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and said in proc.stdout and "Traceback" not in proc.stdout + proc.stderr, \
            proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- every judgement replayable
# (issue 22 item 9): the log keeps each seat's legal form, what a bot sent when it was charged and
# a timeout's times; the replay judges every charge again. Matches are played on the core
# (arena.match.core.MatchCore) with scripted answers: no sockets, no clock.


def _first_legal(core, seat):
    """What an instant bot answers: the first legal action (a compact discard: the first ``min`` cards)."""
    engine = core.engine
    choice = engine.choice() if core.compact[seat] else None
    return list(choice.from_[: choice.min]) if choice is not None else engine.legal_actions()[0]


def _play(path, script=None, game="ecarte", seed=3, compact=(True, False), config=None):
    """Play a match on the core into a log at ``path``; ``script(core, seat, n)`` returns the raw
    line a seat sends for its ``n``-th request (None: the first legal action, ``"timeout"``: no
    answer). Returns the result."""
    import msgspec

    from arena.match.core import MatchCore, result_line
    from arena.match.log import MatchLog

    core = MatchCore("t1-m0001", seed, config or MatchConfig(game=game), ("alice", "bob"), compact)
    with MatchLog(path) as log:
        log.write_all(core.start().log)
        out = core.begin()
        log.write_all(out.log)
        n = 0
        while core.result is None:
            seat, rid = out.asked
            core.sent(seat, 0)
            n += 1
            raw = script(core, seat, n) if script else None
            if raw == "timeout":
                out = core.timeout(seat, rid)
            else:
                if raw is None:
                    raw = msgspec.json.encode({"type": "action", "id": rid, "action": _first_legal(core, seat)})
                out = core.answer(seat, rid, msgspec.json.decode(raw)["action"], 1_000_000, raw)
            log.write_all(out.log)
        log.write(result_line(core.result))
    return core.result


def _illegal_once(at):
    """A script: the first ``play`` request from the ``at``-th on is answered by a card the seat
    does not hold (``illegal_action``: its message names the hand); legal answers otherwise."""
    done = []

    def script(core, seat, n):
        if n < at or done or core.engine.decision != "play":
            return None
        done.append(n)
        held = set(core.engine.view(seat).hand)
        card = next(c for c in ("7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "7d") if c not in held)
        return b'{"type":"action", "id":%d, "action":"%s"}' % (core.pending[seat].rid, card.encode())
    return script


def _lines(path):
    from arena.match.log import read_bytes
    from arena.match.replay import verify_bytes

    return verify_bytes(read_bytes(path))


def test_a_rejected_answer_is_kept_as_sent_and_judged_again(tmp_path):
    """An illegal answer within the allowance: the log keeps the line byte for byte with its
    length and code, the header each seat's form; the replay re-applies the answer to the engine
    as it was, finds the same rule broken, and shows what the seat was offered."""
    from arena.match.log import raw_bytes

    cfg = MatchConfig(max_illegal=1)
    result = _play(tmp_path / "m.jsonl.gz", _illegal_once(12), config=cfg)
    assert result.reason == "target"
    lines, res = _lines(tmp_path / "m.jsonl.gz")
    assert lines[0]["v"] == 2 and lines[0]["forms"] == ["compact", "full"]
    [inc] = [line for line in lines if line["type"] == "incident"]
    assert inc["code"] in ("illegal_action", "wrong_decision") and raw_bytes(inc).startswith(b'{"type":"action", "id":')
    assert inc["raw_len"] == len(raw_bytes(inc)) and "action" not in inc  # whole: the line itself is re-checked
    assert res["rechecked"] == 1 and inc["offered"] == inc["legal"]  # as sent, and as rebuilt by the replay


def test_tampered_judgements_fail_replay_with_one_line(tmp_path):
    """An accepted answer turned into a rejection, a rejection turned into an accepted answer, a
    rejected line edited into a legal one, a timeout's times made to fit, a forfeit without its
    charge: each fails the replay with a one-line reason (the hash chain aside: a forger can
    rewrite it, and only the database's last hash catches that)."""
    import copy

    from arena.match.replay import ReplayError, replay

    _play(tmp_path / "m.jsonl.gz", _illegal_once(12), config=MatchConfig(max_illegal=1))
    lines, _ = _lines(tmp_path / "m.jsonl.gz")
    i = next(n for n, line in enumerate(lines) if line["type"] == "incident")
    j = next(n for n, line in enumerate(lines) if n > i and line["type"] == "action")  # the answer asked again

    def fails(bad, said):
        with pytest.raises(ReplayError, match=said) as caught:
            replay(bad)
        assert "\n" not in str(caught.value)

    bad = copy.deepcopy(lines)  # the legal answer that followed, written as refused
    raw = '{"type":"action","id":99,"action":' + json.dumps(bad[j]["action"]) + "}"
    bad[j] = {"type": "incident", "seat": bad[j]["seat"], "code": "illegal_action", "detail": "x", "raw": raw,
              "raw_len": len(raw)}
    fails(bad, "the rules accept it")
    bad = copy.deepcopy(lines)  # the refused line edited into the legal answer
    bad[i]["raw"], bad[i]["raw_len"] = raw, len(raw)
    fails(bad, "the rules accept it")
    bad = copy.deepcopy(lines)  # the refusal written as an accepted action
    bad[i] = {"type": "action", "seat": bad[i]["seat"], "decision": lines[j]["decision"],
              "action": json.loads(bad[i]["raw"])["action"]}
    fails(bad, "rejected")
    bad = copy.deepcopy(lines)  # the legal actions it was sent, altered
    bad[i]["legal"] = bad[i]["legal"][:-1]
    fails(bad, "as its legal actions, but the engine offers")
    bad = copy.deepcopy(lines)  # the refusal removed: the same seat is asked twice
    del bad[i]
    bad[-1]["reason"], bad[-1]["faulty"], bad[-1]["winner"] = "forfeit_illegal", 0, 1
    fails(bad, "no incident in the log calls for it")

    _play(tmp_path / "t.jsonl.gz", lambda core, seat, n: "timeout" if n == 5 else None,
          config=MatchConfig(on_timeout="auto", max_strikes=1))
    lines, res = _lines(tmp_path / "t.jsonl.gz")
    k = next(n for n, line in enumerate(lines) if line["type"] == "incident")
    assert lines[k]["code"] == "timeout" and lines[k]["ms"] == [2050, 2050] and res["rechecked"] == 1
    assert lines[k + 1]["type"] == "action" and lines[k + 1]["auto"]
    bad = copy.deepcopy(lines)
    bad[k]["ms"] = [1900, 2050]
    fails(bad, "not a timeout")
    bad = copy.deepcopy(lines)
    bad[k + 1]["auto"] = False  # the referee's move passed off as the bot's
    fails(bad, "where the referee had to play")


def test_logs_of_the_previous_format_still_replay(tmp_path):
    """A version 1 log (a hash on every line, events with seq and hidden, no forms, incidents
    without raw lines) verifies and replays as before."""
    import hashlib

    import msgspec

    from arena.match.log import GENESIS
    from arena.match.replay import verify_bytes

    _play(tmp_path / "m.jsonl.gz", _illegal_once(12), config=MatchConfig(max_illegal=1))
    lines, _ = _lines(tmp_path / "m.jsonl.gz")
    prev, out = GENESIS, []
    for line in lines:
        line = dict(line)
        if line["type"] == "match":
            line.pop("v"), line.pop("forms")
        elif line["type"] == "event":
            line = {"type": "event", "seq": line["seq"], "seen_by": line["seen_by"], "hidden": line["hidden"],
                    "event": line["event"]}
        elif line["type"] == "incident":
            line = {k: line[k] for k in ("type", "seat", "code", "detail")}
        elif line["type"] == "result":
            line.pop("rechecked")
        body = msgspec.json.encode(line)
        prev = hashlib.sha256(prev.encode() + body).hexdigest()
        out.append(body[:-1] + b',"hash":"' + prev[:8].encode() + b'"}\n')
    old, res = verify_bytes(b"".join(out), prev)
    assert res["reason"] == "target" and res["rechecked"] == 0 and len(old) == len(lines)


def test_a_raw_answer_is_shown_to_its_own_author_only(tmp_path):
    """The author of the seat that was charged sees what their bot sent and what it was offered
    (``arena replay --seat``); the opponent's author and the public see the charge's code only,
    never the line, the offered actions or a detail naming cards."""
    import subprocess
    import sys

    from arena.match.views import public_view, seat_view

    _play(tmp_path / "m.jsonl.gz", _illegal_once(12))  # the first illegal answer forfeits
    lines, res = _lines(tmp_path / "m.jsonl.gz")
    assert res["reason"] == "forfeit_illegal"
    inc = next(line for line in lines if line["type"] == "incident")
    me, other = inc["seat"], 1 - inc["seat"]
    mine = [line for line in seat_view(lines, me) if line["type"] == "incident"]
    assert mine == [inc]
    for view in (seat_view(lines, other), public_view(lines)):
        [theirs] = [line for line in view if line["type"] == "incident"]
        assert theirs == {"type": "incident", "seat": me, "code": inc["code"], "detail": ""}
        assert inc["raw"] not in repr(view) and inc["detail"] not in repr(view)
        assert view[-1]["detail"] == f"{lines[0]['bots'][me]}: {inc['code']}" != res["detail"]
        assert not any(line["type"] == "event" and other not in line["seen_by"] for line in view if view is not lines)
    from arena.match.log import read_bytes
    from arena.net.history import feed_from_log

    feed = b"".join(feed_from_log(read_bytes(tmp_path / "m.jsonl.gz")))  # the web page's replay (public)
    assert feed and inc["raw"].encode() not in feed and b"is not in the hand" not in feed
    run = [sys.executable, "-m", "arena.cli", "replay", str(tmp_path / "m.jsonl.gz")]
    own = subprocess.run([*run, "--seat", str(me)], capture_output=True, text=True, timeout=60)
    assert own.returncode == 0 and f"it sent ({inc['raw_len']} bytes): {inc['raw']}" in own.stdout, own.stdout
    assert "it was offered" in own.stdout and "1 charge judged again" in own.stdout
    theirs = subprocess.run([*run, "--seat", str(other)], capture_output=True, text=True, timeout=60)
    assert theirs.returncode == 0 and inc["raw"] not in theirs.stdout and "it sent" not in theirs.stdout


@pytest.mark.parametrize("game", ["ecarte", "piquet"])
def test_logs_of_instant_bots_stay_under_8_kb(game):
    """Bytes per match (a byte count) of the longest matches there are: instant bots (the first
    legal action, compact form; arena.tools.log_size), ten seeds, each log verified. The previous
    format took 17.7 KB a match in Écarté (23.3 KB the largest of 20) and 11.6 KB in Piquet."""
    from arena.tools.log_size import measure

    got = measure(game, "instant", 10)
    assert got["max"] < 8000, got


@pytest.mark.parametrize("game,compact,kept", [("ecarte", (True, True), "legal"),
                                               ("piquet", (False, False), "legal_sha"),
                                               ("piquet", (True, True), "legal")])
def test_a_refused_discard_keeps_what_its_request_offered(tmp_path, game, compact, kept):
    """A discard naming a card not held: the incident keeps the request's ``legal`` as sent (the
    compact description; a full Piquet list, 1,585 discards, by its digest) and the replay
    rebuilds it from the engine and the seat's form in the header."""
    done = []

    def script(core, seat, n):
        if done or core.engine.decision != "discard":
            return None
        done.append(n)
        held = set(core.engine.view(seat).hand)
        card = next(c for c in ("7c", "8c", "9c", "Tc", "Jc", "Qc", "Kc", "Ac", "7d", "8d") if c not in held)
        return b'{"type":"action","id":%d,"action":["%s"]}' % (core.pending[seat].rid, card.encode())

    _play(tmp_path / "m.jsonl.gz", script, game=game, compact=compact, config=MatchConfig(game=game, max_illegal=1))
    lines, res = _lines(tmp_path / "m.jsonl.gz")
    [inc] = [line for line in lines if line["type"] == "incident"]
    assert kept in inc and res["rechecked"] == 1 and lines[0]["forms"] == ["compact" if c else "full" for c in compact]
    if compact[0]:
        assert inc["legal"] == inc["offered"] and set(inc["legal"]) == {"choose"}
    else:
        assert inc["offered"]["count"] == 1585 and len(inc["legal_sha"]) == 16


@pytest.mark.parametrize("size", [1024, 64 * 1024])
def test_the_gz_bytes_do_not_depend_on_the_buffer_size(tmp_path, monkeypatch, size):
    """The log hands its lines to gzip in pieces of BUFFER_BYTES (8 KB, so that compressing one
    holds the loop briefly); the compressor is never flushed between pieces, so any piece size
    writes the same bytes."""
    from arena.match import log as log_module

    def write(path):
        with log_module.MatchLog(path) as lg:
            lg.write({"type": "match", "match_id": "m"})
            for i in range(2000):
                lg.incident(i % 2, "x", f"line {i} " * (i % 7))
        return path.read_bytes()

    ours = write(tmp_path / "ours.jsonl.gz")
    monkeypatch.setattr(log_module, "BUFFER_BYTES", size)
    assert write(tmp_path / "other.jsonl.gz") == ours and len(ours) > 20_000
