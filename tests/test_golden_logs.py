"""Behaviour unchanged (issue 23, "Done when"): a stored set of match logs, made by the code from
before the MatchRunner (tests/golden.py: both games, several seeds and options, scripted bots
that also answer illegally, time out, hang up, send garbage or are absent), replays, and the
same seeds with the same answers played again through today's driver give the same deals,
events, incidents and results, line by line (parsed lines, not bytes: fields added to the
format since are left out of the comparison)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from arena.match.log import read_log
from arena.match.replay import verify_file
from arena.match.runner import MatchRunner, MatchSpec
from arena.match.seat import Connection
from protocol.framing import LineReader
from tests.golden import CASES, NAMES, Case, comparable, load_cases, play_case


async def play_now(case: Case, log_path: Path, streams: Any) -> Any:
    """Today's driver: the MatchRunner, an absent seat given as None."""
    conns = tuple(None if s is None else Connection(s, LineReader(s), NAMES[i], send_timeout_s=10.0)
                  for i, s in enumerate(streams))
    async with trio.open_nursery() as nursery:
        for conn in conns:
            if conn is not None:
                nursery.start_soon(conn.run_reader)
        result = await MatchRunner(MatchSpec(case.name, case.seed, case.config, NAMES), conns, log_path=log_path).run()
        nursery.cancel_scope.cancel()
    return result


def test_the_stored_cases_are_the_ones_in_the_code():
    assert msgspec.to_builtins(load_cases()) == msgspec.to_builtins(CASES)
    assert {c.config.game for c in CASES} == {"ecarte", "piquet"}
    reasons = {read_log(c.log_path)[-1]["reason"] for c in CASES}
    assert reasons >= {"target", "rubicon", "cent", "deals", "forfeit_illegal", "forfeit_timeout",
                       "forfeit_disconnect", "forfeit_protocol", "aborted"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_stored_log_verifies_and_replays(case: Case):
    lines, summary = verify_file(case.log_path)
    assert lines[0]["type"] == "match" and lines[0]["seed"] == case.seed
    assert lines[-1]["type"] == "result"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_the_same_seed_and_answers_give_the_same_log(case: Case, autojump_clock, tmp_path: Path):
    path = tmp_path / f"{case.name}.jsonl.gz"
    result: Any = await play_case(case, path, play_now)
    stored = comparable(read_log(case.log_path))
    again = comparable(read_log(path), like=stored)
    assert len(again) == len(stored)
    for i, (old, new) in enumerate(zip(stored, again, strict=True)):
        assert new == old, f"line {i + 1} of {case.name} differs"
    last = stored[-1]
    assert (result.winner, result.reason, result.scores, result.decisions) == (
        last["winner"], last["reason"], last["scores"], last["decisions"])
