"""The MatchRunner (issue 23): the one way every driver plays a match to a result sink. An absent
bot, a log that cannot be opened or written and a cancellation reach the core as inputs, and the
sink gets exactly the result the core decided, once, before the bots hear match_end. Played over
memory streams on trio's MockClock (tests/golden.py's scripted bots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from arena.match.core import MatchConfig, MatchResult
from arena.match.log import read_log
from arena.match.runner import LogRef, MatchRunner, MatchSpec
from arena.match.seat import Connection
from protocol.framing import LineReader
from tests.golden import NAMES, ScriptedBot


class Sink:
    """Records every call."""

    def __init__(self) -> None:
        self.recorded: list[tuple[MatchResult, LogRef | None]] = []
        self.now: list[tuple[MatchResult, LogRef | None]] = []
        self.faults: list[tuple[str, OSError]] = []

    async def record(self, result: MatchResult, log: LogRef | None) -> None:
        self.recorded.append((result, log))

    def record_now(self, result: MatchResult, log: LogRef | None) -> None:
        self.now.append((result, log))

    def storage_fault(self, what: str, error: OSError) -> None:
        self.faults.append((what, error))


async def run(log_path: Path | None, sink: Sink, scripts: tuple[str | None, str | None] = ("seeded", "seeded"),
              cancel_after_s: float | None = None, on_cancel: Any = "leave") -> tuple[MatchResult | None, list]:
    """One match with the scripted bots (None: that seat is absent)."""
    conns: list[Connection | None] = []
    bots = []
    for seat, script in enumerate(scripts):
        if script is None:
            conns.append(None)
            continue
        ours, theirs = trio.testing.memory_stream_pair()
        conns.append(Connection(ours, LineReader(ours), NAMES[seat], send_timeout_s=10.0))
        bots.append(ScriptedBot(theirs, script, NAMES[seat]))
    runner = MatchRunner(MatchSpec("m1", 5, MatchConfig(), NAMES), (conns[0], conns[1]), sink, log_path,
                         on_cancel=on_cancel)
    async with trio.open_nursery() as nursery:
        for conn in conns:
            if conn is not None:
                nursery.start_soon(conn.run_reader)
        for bot in bots:
            nursery.start_soon(bot.play)
        with trio.move_on_after(cancel_after_s if cancel_after_s is not None else float("inf")):
            await runner.run()
        await trio.sleep(5)
        nursery.cancel_scope.cancel()
    return runner.result, bots


async def test_a_match_played_out_reaches_the_sink_once_with_its_log(autojump_clock, tmp_path):
    sink = Sink()
    path = tmp_path / "m1.jsonl.gz"
    result, bots = await run(path, sink)
    assert result is not None and result.reason == "target" and result.decisions > 0
    assert len(sink.recorded) == 1 and sink.recorded[0][0] is result and not sink.now and not sink.faults
    log = sink.recorded[0][1]
    assert log is not None and log.path == str(path) and len(log.last_hash) == 64
    assert read_log(path)[-1]["reason"] == "target"
    assert all(b.received[-1]["type"] == "match_end" for b in bots)


async def test_an_absent_bot_loses_and_the_core_writes_the_log(autojump_clock, tmp_path):
    sink = Sink()
    path = tmp_path / "m1.jsonl.gz"
    result, bots = await run(path, sink, scripts=("seeded", None))
    assert (result.winner, result.reason, result.faulty) == (0, "forfeit_disconnect", 1)
    assert [line["type"] for line in read_log(path)] == ["match", "incident", "result"]
    assert sink.recorded == [(result, sink.recorded[0][1])] and sink.recorded[0][1] is not None
    assert bots[0].received == []  # nothing is sent to the one that came


async def test_a_log_that_cannot_be_opened_aborts_unplayed_and_says_so(autojump_clock, tmp_path):
    (tmp_path / "file").write_text("")
    sink = Sink()
    result, bots = await run(tmp_path / "file" / "m1.jsonl.gz", sink)  # its folder is a file
    assert result.reason == "aborted" and result.detail.startswith("match log could not be opened")
    assert sink.recorded == [(result, None)] and [w for w, _ in sink.faults] == ["match log"]
    assert all(b.received == [] for b in bots)


async def test_a_cancelled_match_is_left_pending_or_recorded_aborted_at_once(autojump_clock, tmp_path):
    sink = Sink()
    result, _ = await run(tmp_path / "a.jsonl.gz", sink, scripts=("seeded", "silent@3"), cancel_after_s=1.0)
    assert result is None and sink.recorded == [] and sink.now == []  # "leave": replayed on resume
    sink = Sink()
    result, _ = await run(tmp_path / "b.jsonl.gz", sink, scripts=("seeded", "silent@3"), cancel_after_s=1.0,
                          on_cancel="abort")
    assert result is not None and result.reason == "aborted" and result.detail == "server shut down during the match"
    assert sink.recorded == [] and sink.now == [(result, sink.now[0][1])]


async def test_a_match_cancelled_before_its_first_step_is_still_recorded_aborted_at_once(autojump_clock, tmp_path):
    """The runner lets the loop poll between the parts of a match's start (issue 24: the other
    matches' answers are not held up behind all of it), but those pauses are no cancellation
    points: a match handed to a runner is played or recorded as ``on_cancel`` says."""
    sink = Sink()
    result, _ = await run(tmp_path / "c.jsonl.gz", sink, cancel_after_s=0.0, on_cancel="abort")
    assert result is not None and result.reason == "aborted" and sink.recorded == []
    assert sink.now == [(result, sink.now[0][1])]
