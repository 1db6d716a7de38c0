"""Retention (arena.store.log_archive): daily archive bundles of match logs that still replay
and verify, a damaged member caught with a clear error, only what is older than the cut-off
removed, nothing lost when a run is interrupted, a run that reads only the days it archives, the
contest file's ``[retention]``, the contest's daily run, and the workers' log copies deleted once
the front has the log. No wall clock: every run is given its ``now``."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from arena.games import GAMES
from arena.match.log import ChainError, MatchLog, decompress
from arena.match.referee import MatchConfig, MatchResult
from arena.match.replay import verify_bytes
from arena.schedule import retention as retention_job
from arena.schedule.fitter import NICE
from arena.schedule.formats import Pairing
from arena.store import log_archive, test_matches
from arena.store.log_archive import (
    DAY_S,
    SLACK_S,
    BundleError,
    Retention,
    apply_retention,
    is_bundle_ref,
    parse_ref,
    read_stored,
)
from arena.store.queue import MatchQueue
from arena.store.sqlite import Store
from tests.conftest import ROOT, cli_in_process
from tests.legacy_db import sql

ARENA = [sys.executable, "-m", "arena.cli"]
NOW = 20_000 * DAY_S + 12 * 3600  # noon of a day of 2024, UTC: every run below is given this "now"


def self_play_log(path: Path, key: str, seed: int, flush_copy: list[bytes] | None = None) -> str:
    """A real, replayable Écarté match log: the engine from ``seed`` and seeded random legal
    actions, written as the referee writes it; returns its last hash. ``flush_copy``: gets the
    file's bytes after the flush that precedes the result's commit (what a worker commits)."""
    config = MatchConfig()
    engine = GAMES["ecarte"](config.rules, random.Random(seed))
    rng = random.Random(seed + 1)
    decisions = 0
    with MatchLog(path) as log:
        log.write({"type": "match", "match_id": key, "game": "ecarte", "seed": seed, "bots": ["a", "b"],
                   "config": msgspec.to_builtins(config)})
        for event, seen in engine.start():
            log.event(event, seen)
        while not engine.over:
            seat, decision = engine.to_act, engine.decision
            action = rng.choice(engine.legal_actions())
            decisions += 1
            log.action(seat, decision, action)
            for event, seen in engine.apply(action):
                log.event(event, seen)
        log.write({"type": "result", "winner": engine.winner, "reason": "target", "scores": engine.scores,
                   "manches": engine.manches, "faulty": None, "margin": 0, "decisions": decisions, "detail": ""})
        log.flush()
        if flush_copy is not None:
            flush_copy.append(path.read_bytes())
    return log.last_hash


def season(store: Store, logs: Path, finished: list[float]) -> list[str]:
    """Matches whose results were committed at the given Unix times, each with its log file
    under ``logs/t<id>/``; their keys."""
    pairings = [Pairing(i, "a", "b", 1000 + i) for i in range(len(finished))]
    tid = store.create_tournament("ecarte", "round-robin", 1, {}, ["a", "b"], pairings)
    keys = []
    for row, when in zip(store.pending_matches(tid), finished, strict=True):
        path = logs / f"t{tid}" / f"{row.match_key}.jsonl.gz"
        last = self_play_log(path, row.match_key, row.seed)
        store.record_result(row.match_key, MatchResult(match_id=row.match_key, winner=0, reason="target",
                                                       scores=[5, 0], manches=[0, 0]), str(path), last)
        sql(store, "UPDATE matches SET finished_at=:t WHERE match_key=:k", t=when, k=row.match_key)
        keys.append(row.match_key)
    return keys


def paths(store: Store) -> dict[str, str]:
    return {r[0]: r[1] for r in sql(store, "SELECT match_key, log_path FROM matches ORDER BY id")}


def verifies(store: Store, key: str) -> dict:
    log_path, log_hash = store.match_log_of(key)
    return verify_bytes(store.match_log_bytes(key, log_path), log_hash)[1]


def replay_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*ARENA, "replay", *args, "--quiet"], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)


def test_archived_matches_still_replay_and_verify(any_store, tmp_path, capsys):
    """Logs older than the retention go into one bundle per day; every one still verifies
    against the database's hash, through the store, ``arena replay KEY``, ``arena replay OLD_PATH
    --db`` and ``arena replay BUNDLE#MEMBER``; a second run changes nothing."""
    store, logs = any_store, tmp_path / "logs"
    day = NOW // DAY_S
    keys = season(store, logs, [(day - 9) * DAY_S + 10, (day - 9) * DAY_S + 7200, (day - 8) * DAY_S + 5,
                                (day - 1) * DAY_S])
    before = {k: store.match_log_bytes(k, p) for k, p in paths(store).items()}
    report = apply_retention(store, logs, Retention(logs_days=7), now=NOW)
    assert report.archived == 3 and report.days == [log_archive.day_name(day - 9), log_archive.day_name(day - 8)]
    moved = paths(store)
    assert [is_bundle_ref(moved[k]) for k in keys] == [True, True, True, False]
    bundles = sorted((logs / "archive").glob("*.zip"))
    assert [b.name for b in bundles] == [f"{log_archive.day_name(day - 9)}.zip", f"{log_archive.day_name(day - 8)}.zip"]
    with zipfile.ZipFile(bundles[0]) as zf:  # a plain zip: unzip lists and checks it
        assert zf.namelist() == [f"{keys[0]}.jsonl.gz", f"{keys[1]}.jsonl.gz"] and zf.testzip() is None
    assert not (logs / "t1" / f"{keys[0]}.jsonl.gz").exists() and (logs / "t1" / f"{keys[3]}.jsonl.gz").exists()
    for key in keys:
        assert store.match_log_bytes(key, moved[key]) == before[key]
        assert verifies(store, key)["reason"] == "target"
    if store.dialect == "sqlite":  # the CLI, on the same database
        db = str(tmp_path / "arena.db")
        # the console script once (a bundle's member), the other forms through its entry point here
        out = replay_cli(moved[keys[2]].rsplit("@", 1)[0], "--db", db, cwd=tmp_path)
        assert out.returncode == 0 and "verified:" in out.stdout, out.stdout + out.stderr
        for args in ([keys[0], "--db", db], [str(logs / "t1" / f"{keys[1]}.jsonl.gz"), "--db", db],
                     [moved[keys[2]].rsplit("@", 1)[0]]):
            out = cli_in_process("replay", *args, capsys=capsys)
            assert out.returncode == 0 and "verified:" in out.stdout, (args, out.stdout + out.stderr)
        said = " ".join(cli_in_process("replay", keys[0], "--db", db, capsys=capsys).stdout.split())
        assert "last hash matches the database" in said
    again = apply_retention(store, logs, Retention(logs_days=7), now=NOW)
    assert again.archived == 0 and paths(store) == moved


def test_a_damaged_bundle_member_fails_verification_with_a_clear_error(tmp_path):
    store, logs = Store(tmp_path / "arena.db"), tmp_path / "logs"
    day = NOW // DAY_S
    keys = season(store, logs, [(day - 30) * DAY_S + 1, (day - 30) * DAY_S + 2])
    apply_retention(store, logs, Retention(), now=NOW)
    ref = paths(store)[keys[1]]
    bundle, member, offset = parse_ref(ref)
    data = bytearray(Path(bundle).read_bytes())
    data[offset + 30 + len(member) + 100] ^= 0x01  # a bit flipped inside the member's bytes
    Path(bundle).write_bytes(bytes(data))
    with pytest.raises(BundleError, match=f"member {member} is damaged"):
        read_stored(ref)
    assert verifies(store, keys[0])  # the other member is intact
    out = replay_cli(keys[1], "--db", str(tmp_path / "arena.db"), cwd=tmp_path)
    said = " ".join(out.stdout.split())
    assert out.returncode == 1 and f"not verified: {bundle}: member {member} is damaged" in said, said
    assert "Traceback" not in out.stderr


def test_retention_removes_only_what_is_older_than_the_cut_off(any_store, tmp_path):
    """Logs: the last day whose end is 7 days and the slack before now is archived, the next one
    not; bot output, live events and failed uploads: exactly those older than their retention."""
    store, logs = any_store, tmp_path / "logs"
    retention = Retention(logs_days=7, bot_output_days=14, events_days=1, failed_uploads_days=30)
    cut = log_archive.cut_day(NOW, 7) * DAY_S  # the first second not archived
    assert cut <= NOW - 7 * DAY_S - SLACK_S < cut + DAY_S
    keys = season(store, logs, [cut - 1, cut, NOW - 3600])
    # bot output: the server's, a tournament's, a worker's
    worker = logs / "t1" / "workers"
    outputs = {logs / "bots" / "b1-c0.log": 15, logs / "bots" / "b1-c0.log.1": 13,
               logs / "t1" / "bots" / "b2-c0.log": 20, worker / "77" / "bots" / "b3-c1.log": 15,
               worker / "78" / "bots" / "b3-c0.log": 1}
    for path, age_days in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("output\n")
        os.utime(path, (NOW - age_days * DAY_S, NOW - age_days * DAY_S))
    # live events a day and a second old, and newer
    for when in (NOW - DAY_S - 1, NOW - DAY_S + 1, NOW):
        MatchQueue(store, clock=lambda when=when: when).push_events([(keys[0], b'{"type":"end"}')])
    # uploads: failed 31 and 29 days ago; one passed long ago stays whatever its age
    for status, age in (("failed", 31), ("failed", 29), ("passed", 90)):
        sql(store, "INSERT INTO uploads(bot, author_id, status, sha256, size, created_at, finished_at) "
            "VALUES ('annbot', 1, :s, 'x', 3, :t, :t)", s=status, t=NOW - age * DAY_S)
    uploads = [r[0] for r in sql(store, "SELECT id FROM uploads ORDER BY id")]
    # test matches: done 31 and 29 days ago, aborted 40 days ago, one still queued from long ago
    tests = test_matches.add(store, 1, "annbot", "bobbot", "ecarte", [(0, 1), (1, 2), (0, 3), (1, 4)],
                             NOW - 60 * DAY_S, 50, 0)
    for test_id, status, age in zip(tests, ("done", "done", "aborted"), (31, 29, 40)):
        test_matches.finish(store, test_id, status=status, winner_seat=0, scores=[5, 2], reason="points",
                            detail="", view=None, now=NOW - age * DAY_S)
    (logs / "tests").mkdir(parents=True)
    for test_id in tests:
        (logs / "tests" / f"x{test_id}.jsonl.gz").write_bytes(b"log")

    report = apply_retention(store, logs, retention, now=NOW)
    assert (report.archived, report.bot_logs, report.events, report.uploads) == (1, 3, 1, 1)
    assert report.test_matches == 2
    assert [test_id for test_id in tests if test_matches.get(store, test_id)] == [tests[1], tests[3]]
    assert sorted(p.name for p in (logs / "tests").iterdir()) == [f"x{tests[1]}.jsonl.gz", f"x{tests[3]}.jsonl.gz"]
    assert [is_bundle_ref(p) for p in paths(store).values()] == [True, False, False]
    assert {p: p.exists() for p in outputs} == {p: age < 14 for p, age in outputs.items()}
    assert not (logs / "t1" / "workers" / "77").exists()  # the worker's folder, empty, went too
    assert sql(store, "SELECT COUNT(*) FROM match_events").scalar_one() == 2
    assert [r[0] for r in sql(store, "SELECT id FROM uploads ORDER BY id")] == uploads[1:]
    assert all(verifies(store, k) for k in keys)


def test_an_interrupted_archive_never_loses_a_log(tmp_path, monkeypatch):
    """Stopped before its commit (the bundle written, the matches not moved) or after it (the files
    not yet deleted): the next run finishes the work, and every log verifies throughout."""
    store, logs = Store(tmp_path / "arena.db"), tmp_path / "logs"
    day = NOW // DAY_S
    keys = season(store, logs, [(day - 20) * DAY_S + 1, (day - 20) * DAY_S + 2, (day - 19) * DAY_S + 1])

    def every_log_verifies() -> None:
        for key in keys:
            assert verifies(store, key)

    real = Store.move_match_logs

    def crash_before(self, moves):  # noqa: ANN001
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "move_match_logs", crash_before)
    with pytest.raises(KeyboardInterrupt):
        apply_retention(store, logs, Retention(), now=NOW)
    assert (logs / "archive" / f"{log_archive.day_name(day - 20)}.zip").exists()
    assert not any(is_bundle_ref(p) for p in paths(store).values())
    every_log_verifies()

    def crash_after(self, moves):  # noqa: ANN001
        real(self, moves)
        raise KeyboardInterrupt  # committed; the files are still there

    monkeypatch.setattr(Store, "move_match_logs", crash_after)
    with pytest.raises(KeyboardInterrupt):
        apply_retention(store, logs, Retention(), now=NOW)
    assert list((logs / "archive").glob("*.delete.json")) and (logs / "t1" / f"{keys[0]}.jsonl.gz").exists()
    every_log_verifies()

    monkeypatch.setattr(Store, "move_match_logs", real)
    stop = threading.Event()
    stop.set()
    stopped = apply_retention(store, logs, Retention(), now=NOW, stop=stop)
    assert stopped.interrupted and not list((logs / "archive").glob("*.delete.json"))  # the journal was finished
    assert not (logs / "t1" / f"{keys[0]}.jsonl.gz").exists()
    report = apply_retention(store, logs, Retention(), now=NOW)
    assert report.archived == 1 and all(is_bundle_ref(p) for p in paths(store).values())
    assert sorted(p.name for p in (logs / "t1").iterdir()) == []
    every_log_verifies()
    with zipfile.ZipFile(logs / "archive" / f"{log_archive.day_name(day - 20)}.zip") as zf:
        assert sorted(zf.namelist()) == [f"{keys[0]}.jsonl.gz", f"{keys[1]}.jsonl.gz"]  # once each


def test_a_run_reads_only_the_days_it_archives(tmp_path, monkeypatch):
    """The first day not archived is kept (state.json): tomorrow's run reads one day's matches,
    through the index on finished_at, not the history."""
    store, logs = Store(tmp_path / "arena.db"), tmp_path / "logs"
    day = NOW // DAY_S
    season(store, logs, [(day - d) * DAY_S + 60 for d in (12, 11, 10, 9, 8, 1)])
    apply_retention(store, logs, Retention(logs_days=7), now=NOW)
    read: list[tuple[float, float]] = []
    real = Store.logs_finished_between
    monkeypatch.setattr(Store, "logs_finished_between",
                        lambda self, start, end: read.append((start, end)) or real(self, start, end))
    report = apply_retention(store, logs, Retention(logs_days=7), now=NOW + DAY_S)
    assert report.archived == 0 and read == []  # the next day with a match is too young: nothing read
    report = apply_retention(store, logs, Retention(logs_days=0), now=NOW + DAY_S)
    assert report.archived == 1 and read == [((day - 1) * DAY_S, day * DAY_S)]
    for query, args in (("SELECT match_key, log_path FROM matches WHERE finished_at>=? AND finished_at<? "
                         "AND log_path IS NOT NULL ORDER BY finished_at, id", (0, 1)),
                        ("SELECT MIN(finished_at) FROM matches WHERE finished_at>=? AND log_path IS NOT NULL", (0,))):
        plan = " ".join(r[-1] for r in store.db.execute("EXPLAIN QUERY PLAN " + query, args))
        assert "matches_by_finished_at" in plan and "SCAN matches" not in plan.replace("USING INDEX", ""), plan


def test_a_store_marked_archived_is_read_from_its_cut_on(tmp_path, monkeypatch):
    """A logs folder marked archived up to a retention run's cut (``mark_archived``: the season
    bench's seeded history, whose logs are gone as archived) makes the first run read none of the
    days before it, and archive only the days that pass the cut later."""
    store, logs = Store(tmp_path / "arena.db"), tmp_path / "logs"
    day = NOW // DAY_S
    keys = season(store, logs, [(day - d) * DAY_S + 60 for d in (12, 9, 7)])
    assert log_archive.mark_archived(logs, 7, now=NOW) == log_archive.day_name(day - 7)
    read: list[tuple[float, float]] = []
    real = Store.logs_finished_between
    monkeypatch.setattr(Store, "logs_finished_between",
                        lambda self, start, end: read.append((start, end)) or real(self, start, end))
    report = apply_retention(store, logs, Retention(logs_days=7), now=NOW)
    assert report.archived == 0 and read == [] and not is_bundle_ref(paths(store)[keys[0]])
    report = apply_retention(store, logs, Retention(logs_days=7), now=NOW + DAY_S)  # a day later: that day only
    assert report.archived == 1 and read == [((day - 7) * DAY_S, (day - 6) * DAY_S)]
    assert [is_bundle_ref(paths(store)[k]) for k in keys] == [False, False, True]


@pytest.mark.parametrize(("section", "message"), [
    ("logs_days = -1", "[retention] logs_days must be a number of days from 0 to 36500, not -1.0"),
    ("events_days = nan", "[retention] events_days must be a number of days from 0 to 36500, not nan"),
    ("bot_output_days = 1e9", "[retention] bot_output_days must be a number of days from 0 to 36500"),
    ("failed_uploads_days = 'a month'", "Expected `float`, got `str` (at retention.failed_uploads_days)"),
    ("log_days = 3", "unknown key 'log_days' in [retention]; did you mean 'logs_days'?"),
])
def test_a_bad_retention_is_one_clear_line(tmp_path, section, message):
    contest = tmp_path / "c.toml"
    contest.write_text(f"name = 'x'\n[retention]\n{section}\n")
    out = subprocess.run([*ARENA, "archive", "--config", str(contest)], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr


def test_arena_archive_applies_the_contest_files_retention(tmp_path):
    store, logs = Store(tmp_path / "season.db"), tmp_path / "season-logs"
    season(store, logs, [1000.0, 2000.0])  # 1970: older than any retention
    store.close()
    contest = tmp_path / "c.toml"
    contest.write_text("name = 'x'\ndb = 'season.db'\nlogs = 'season-logs'\n[retention]\nlogs_days = 2\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([*ARENA, "archive", "--config", str(contest)], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("archived 2 match logs of 1970-01-01 into season-logs/archive/")
    out = subprocess.run([*ARENA, "archive", "--db", "season.db", "--logs", "nowhere"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 2 and out.stderr == ("arena: error: no match log directory nowhere: pass the one the "
                                                  "matches were written to (--logs)\n")


async def test_the_contest_applies_its_retention_once_a_day(mock_clock, monkeypatch, tmp_path, caplog):
    """:func:`keep_retention` runs a minute after the start, then once a day; a failed run is one
    logged line and the next day's run still comes. No wall clock."""
    runs: list[float] = []

    async def fake_run(store, logs, retention):  # noqa: ANN001, ARG001
        runs.append(trio.current_time())
        if len(runs) == 1:
            raise retention_job.RetentionFailed("archive stopped: No space left on device")
        return "archived 0 match logs"

    monkeypatch.setattr(retention_job, "run_retention", fake_run)

    async def next_sleep() -> float:
        await trio.testing.wait_all_tasks_blocked()
        return trio.lowlevel.current_statistics().seconds_to_next_deadline

    async with trio.open_nursery() as nursery:
        nursery.start_soon(retention_job.keep_retention, object(), tmp_path, Retention())
        assert await next_sleep() == 60 and runs == []
        mock_clock.jump(59)
        assert await next_sleep() == 1 and runs == []
        mock_clock.jump(1)
        assert await next_sleep() == DAY_S and runs == [60]
        assert "retention failed (tried again in 86400 s): archive stopped: No space left on device" in caplog.text
        mock_clock.jump(DAY_S - 1)
        assert await next_sleep() == 1 and len(runs) == 1
        mock_clock.jump(1)
        assert await next_sleep() == DAY_S and runs == [60, 60 + DAY_S]
        nursery.cancel_scope.cancel()


async def test_a_retention_run_is_a_niced_child_process(monkeypatch, tmp_path):
    """The contest's run is ``arena archive`` in a child process, with every key of the
    contest's retention, below the server's priority (its interpreter lock is its own: in a
    thread, a season's first run slowed the server's pages a hundredfold); a failure is its one
    line."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    store, logs = Store(tmp_path / "season.db"), tmp_path / "season-logs"
    keys = season(store, logs, [1000.0, 2000.0])  # 1970: older than any retention
    said = await retention_job.run_retention(store, logs, Retention(logs_days=2, test_matches_days=3))
    assert said.startswith("archived 2 match logs of 1970-01-01 into "), said
    assert all(is_bundle_ref(path) for path in paths(store).values()) and verifies(store, keys[1])["reason"] == "target"
    command = retention_job.archive_command("season.db", logs, Retention(logs_days=2, test_matches_days=3))
    assert command[command.index("--test-matches-days") + 1] == "3.0"
    assert {arg for arg in command if arg.startswith("--")} == {"--db", "--logs", "--logs-days", "--bot-output-days",
                                                                "--events-days", "--failed-uploads-days",
                                                                "--test-matches-days"}
    with pytest.raises(retention_job.RetentionFailed, match="^no match log directory .*nowhere: pass the one"):
        await retention_job.run_retention(store, tmp_path / "nowhere", Retention())
    monkeypatch.setattr(retention_job, "archive_command",
                        lambda *_: [sys.executable, "-c", "import os; print(os.nice(0))"])
    assert await retention_job.run_retention(store, logs, Retention()) == str(os.nice(0) + NICE)
    store.close()


def test_a_worker_copy_is_deleted_once_the_front_has_the_log(tmp_path):
    """A worker on another host: the front writes the copy it committed as a whole gzip file (the
    worker's own bytes), points the match to it and deletes the copy. A worker on this host: the
    file is there, the copy just goes. A front that cannot write keeps the copy for later."""
    from arena.schedule.front import keep_worker_logs

    store = Store(tmp_path / "arena.db")
    pairings = [Pairing(i, "a", "b", 50 + i) for i in range(3)]
    tid = store.create_tournament("ecarte", "round-robin", 1, {}, ["a", "b"], pairings)
    rows = store.pending_matches(tid)
    worker_logs, front = tmp_path / "worker-host", tmp_path / "front"
    finals = {}
    for row in rows:
        path = worker_logs / f"t{tid}" / f"{row.match_key}.jsonl.gz"
        copy: list[bytes] = []
        last = self_play_log(path, row.match_key, row.seed, copy)
        finals[row.match_key] = path.read_bytes()
        assert copy[0] != finals[row.match_key] and finals[row.match_key].startswith(copy[0])  # no trailer yet
        recorded = path if row.idx == 0 else Path("/elsewhere/logs") / f"t{tid}" / path.name
        with store.transaction():  # what the worker's commit does
            store.record_result(row.match_key, MatchResult(match_id=row.match_key, winner=0, reason="target",
                                                           scores=[5, 0], manches=[0, 0]), str(recorded), last)
            store.put_match_log(row.match_key, copy[0])
    front.mkdir()
    (front / f"t{tid}").write_text("")  # a file where the folder should be: nothing can be written there
    assert trio.run(keep_worker_logs, store, front) == 1  # the same-host one only
    assert sorted(r[0] for r in store.match_log_copies()) == [r.match_key for r in rows[1:]]
    (front / f"t{tid}").unlink()
    assert trio.run(keep_worker_logs, store, front) == 2
    assert store.match_log_copies() == [] and sql(store, "SELECT COUNT(*) FROM match_logs").scalar_one() == 0
    moved = paths(store)
    assert moved[rows[0].match_key] == str(worker_logs / f"t{tid}" / f"{rows[0].match_key}.jsonl.gz")
    for row in rows[1:]:
        assert moved[row.match_key] == str(front / f"t{tid}" / f"{row.match_key}.jsonl.gz")
        assert Path(moved[row.match_key]).read_bytes() == finals[row.match_key]  # the worker's file, byte for byte
    for row in rows:
        assert verifies(store, row.match_key)


def test_logs_of_seeded_sample_bot_matches_stay_under_8_kb(tmp_path):
    """Bytes per Écarté match of seeded sample-bot matches (a byte count: about 2 KB with the
    version 2 format, 5 KB with a short hash per line, 13.8 KB with full hashes), and every log
    verifies against its database hash."""
    bots = [str(ROOT / "sample_bots" / f"{name}.toml") for name in ("greedy", "random")]
    out = subprocess.run([*ARENA, "tournament", "--bots", *bots, "--games", "20", "--seed", "7", "--workers", "0",
                          "--db", "a.db", "--logs", "logs", "--quiet", "--trust-bots"], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.returncode == 0, out.stderr
    store = Store(tmp_path / "a.db")
    rows = sql(store, "SELECT match_key, log_path, log_hash FROM matches WHERE status='done'").all()
    assert len(rows) == 20
    sizes = [(tmp_path / r[1]).stat().st_size for r in rows]
    assert sum(sizes) / len(sizes) < 8000, sizes
    for _, log_path, log_hash in rows:
        raw = decompress((tmp_path / log_path).read_bytes())
        assert verify_bytes(raw, log_hash)[1]["reason"] == "target"
        hashes = [line.rsplit(b'"hash":"', 1)[1] for line in raw.splitlines() if b'"hash":"' in line]
        assert all(len(h) == 8 + 2 for h in hashes)  # 8 hex digits, '"}'
        assert len(hashes) * 2 < len(raw.splitlines())  # one per block of lines (arena.match.log.HASH_EVERY)
    with pytest.raises(ChainError, match=r"lines? (\d+-)?\d+: hash does not chain"):  # the altered block is named
        lines = decompress((tmp_path / rows[0][1]).read_bytes()).splitlines(keepends=True)
        verify_bytes(b"".join(lines[:6] + [lines[6].replace(b'"seat":', b'"seat": ')] + lines[7:]), rows[0][2])
