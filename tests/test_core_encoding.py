"""The match core builds its lines from encoded pieces (issue 24 item 2): each event encoded once
for the log and both seats, a request around its encoded ``legal`` and ``state``, a full-form
discard's sets encoded without a list of each, and the log hashing a block in one piece. These
tests hold those bytes to what encoding the messages whole gives, in both games and both legal
forms, and the log's chain to the same bytes whatever its buffer's size."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arena.match.log as matchlog
from arena.games.base import offer
from arena.match.core import MatchConfig, MatchCore, legal_json, result_line
from arena.match.log import MatchLog, verify_chain
from protocol.framing import decode_server, encode
from protocol.messages import EventMsg, Request

_enc = msgspec.json.Encoder().encode


def play(game: str, seed: int, compact: tuple[bool, bool], log: MatchLog | None = None,
         illegal: float = 0.02) -> tuple[list[bytes], list[bytes], MatchCore]:
    """A match straight through the core, random legal answers and a few illegal ones; returns
    every line sent to each seat and the core. Each request's ``legal`` is checked against
    :func:`arena.games.base.offer` encoded as it is asked."""
    core = MatchCore(f"m-{game}-{seed}", seed, MatchConfig(game=game), ("a", "b"), compact)
    rng = random.Random(seed)
    sent: list[bytes] = []
    logged: list[bytes] = []

    def take(out: object) -> None:
        for _, data in out.sends:  # type: ignore[attr-defined]
            sent.extend(line + b"\n" for line in data.split(b"\n") if line)
        logged.extend(_enc(obj) for obj in out.log)  # type: ignore[attr-defined]
        if log is not None:
            log.write_all(out.log)  # type: ignore[attr-defined]

    take(core.start())
    out = core.begin()
    take(out)
    while core.result is None:
        seat, rid = out.asked  # type: ignore[misc]
        assert legal_json(core.engine, compact[seat]) == _enc(offer(core.engine, compact[seat]))
        legal = core.engine.legal_actions()
        action = "zz" if rng.random() < illegal else legal[rng.randrange(len(legal))]
        core.sent(seat, 0)
        out = core.answer(seat, rid, action, 1_000)
        take(out)
    if log is not None:
        log.write(result_line(core.result))
    return sent, logged, core


@pytest.mark.parametrize("game", ["ecarte", "piquet"])
@pytest.mark.parametrize("compact", [(False, False), (True, False), (False, True)])
def test_lines_built_from_pieces_are_the_messages_encoded_whole(game: str, compact: tuple[bool, bool]):
    kinds: set[str] = set()
    for seed in range(1, 4):
        sent, logged, _ = play(game, seed, compact)
        for line in sent:
            msg = decode_server(line[:-1])
            kinds.add(type(msg).__name__)
            assert encode(msg) == line  # the hand-built bytes are the canonical encoding
        for line in logged:
            obj = msgspec.json.decode(line)
            if obj["type"] == "event":
                assert line == _enc({"type": "event", "seen_by": obj["seen_by"], "event": obj["event"]})
    assert {"EventMsg", "Request", "MatchStart"} <= kinds


def test_a_request_and_an_event_match_their_structs_field_for_field():
    sent, _, core = play("ecarte", 7, (False, False), illegal=0.0)
    req = next(decode_server(line[:-1]) for line in sent if line.startswith(b'{"type":"request"'))
    assert isinstance(req, Request)
    assert encode(Request(id=req.id, match_id=req.match_id, decision=req.decision, legal=req.legal, state=req.state,
                          time_ms=req.time_ms, bank_ms=req.bank_ms)) in sent
    ev = next(decode_server(line[:-1]) for line in sent if line.startswith(b'{"type":"event"'))
    assert isinstance(ev, EventMsg) and encode(EventMsg(match_id=ev.match_id, seq=ev.seq, event=ev.event)) in sent


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), game=st.sampled_from(["ecarte", "piquet"]),
       buffer=st.sampled_from([64, 300, 1000, 64 * 1024]))
def test_the_log_is_the_same_bytes_whatever_its_buffer(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                       game: str, buffer: int):
    """Blocks cut across the buffer's hand-overs to the file hash as blocks held whole."""
    d = tmp_path_factory.mktemp("logs")
    paths = []
    for size in (buffer, 64 * 1024):
        old = matchlog.BUFFER_BYTES
        matchlog.BUFFER_BYTES = size
        try:
            path = Path(d) / f"{size}.jsonl"
            with MatchLog(path) as log:
                play(game, seed, (False, False), log)
            paths.append(path)
        finally:
            matchlog.BUFFER_BYTES = old
    small, whole = (p.read_bytes() for p in paths)
    assert small == whole
    verify_chain(small)
