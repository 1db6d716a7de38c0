"""Match workers (arena.schedule.worker) end to end, with real processes and real bots.

* the same tournament on one and on two worker processes: the same results table, the same
  match logs byte for byte, each match claimed once;
* a worker SIGKILLed mid-match: its match is played again by another worker from the same seed,
  counted once;
* two workers racing for one match: one gets it;
* a worker whose lease expired cannot commit its result.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from arena.match.referee import MatchConfig
from arena.match.replay import verify_file
from arena.schedule.formats import make_format
from arena.schedule.front import store_archives
from arena.schedule.tournament import TournamentConfig
from arena.schedule.worker import Worker
from arena.store.queue import MatchQueue
from arena.store.sqlite import Store
from protocol.messages import TimeControl
from tests.conftest import ROOT, TRUST_ARGS, TRUST_BOTS, slow_bots
from tests.legacy_db import sql

ARENA = [sys.executable, "-m", "arena.cli"]


def two_slow_bots(tmp_path: Path) -> list[str]:
    """Two slow random bots (40 ms per action) in their own directory; their manifest paths."""
    return [str(m) for m in slow_bots(tmp_path / "slowbots", {"slow_a": "random_bot", "slow_b": "random_bot"}).values()]


def queued_tournament(store: Store, manifests: list[str], logs: Path, games: int = 1, seed: int = 5) -> int:
    """A round-robin of ``manifests`` (unpaired) scheduled and queued for workers; its id."""
    names = [Path(m).stem for m in manifests]
    config = TournamentConfig(games=games, duplicate=False, seed=seed, logs_dir=str(logs), trust_bots=TRUST_BOTS,
                              manifests=manifests, match=MatchConfig(time=TimeControl(move_ms=5000)))
    config.archives = store_archives(store, manifests)
    for name in names:
        store.add_bot(name)
    fmt = make_format("round-robin", names, games, seed, False, None)
    tid = store.create_tournament("ecarte", "round-robin", seed, config, names, fmt.schedule)
    MatchQueue(store).enqueue(tid)
    return tid


def start_worker(db: Path, tid: int, wid: str, lease_s: float = 30.0) -> subprocess.Popen:
    return subprocess.Popen([*ARENA, "worker", "--db", str(db), "--tournament", str(tid), "--id", wid,
                             "--lease-s", str(lease_s), "--quiet", *TRUST_ARGS], cwd=ROOT)


def wait_until(check, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def count(db: Path, sql: str) -> int:
    """A count read from a database another process may still be creating (0 until it can)."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as c:
            return c.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def table_of(output: str) -> str:
    """The results table of `arena tournament`, without the line that gives the wall time."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "Tournament t1" in line)
    return "\n".join(line for line in lines[start:] if "matches/s" not in line and "results in" not in line)


def pinned_bot(tmp_path: Path) -> str:
    """The random sample bot under the name ``random``, saying on stderr (its log) which cores it may use."""
    d = tmp_path / "pinned"
    d.mkdir(parents=True)
    shutil.copy(ROOT / "sample_bots" / "random_bot.py", d / "random_bot.py")
    (d / "pin_bot.py").write_text(
        "import os, runpy, sys\n"
        "print('cores', sorted(os.sched_getaffinity(0)), file=sys.stderr, flush=True)\n"
        "runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'random_bot.py'), "
        "run_name='__main__')\n")
    (d / "bot.toml").write_text('name = "random"\nlanguage = "python"\ncommand = ["{python}", "pin_bot.py"]\n')
    return str(d / "bot.toml")


def test_one_and_two_workers_give_the_same_table_and_the_same_logs_byte_for_byte(tmp_path, monkeypatch):
    """... and each worker is pinned to a core of its own, which the bots it launches share."""
    from arena.tools.bench_workers import bench_bots

    bots = bench_bots(tmp_path / "bots")[:3] + [pinned_bot(tmp_path)]  # 3 C bots, 1 Python
    out = {}
    for n in (1, 2):
        (tmp_path / f"r{n}").mkdir()
        run = subprocess.run([*ARENA, "tournament", "--bots", *bots, "--games", "2", "--seed", "7", "--workers",
                              str(n), "--db", "w.db", "--logs", "logs", "--quiet", *TRUST_ARGS],
                             capture_output=True, text=True, cwd=tmp_path / f"r{n}", timeout=120)
        assert run.returncode == 0, run.stderr
        out[n] = run.stdout
    assert table_of(out[1]) == table_of(out[2])
    logs = {n: sorted((tmp_path / f"r{n}" / "logs" / "t1").glob("*.jsonl.gz")) for n in (1, 2)}
    assert len(logs[1]) == 12 and [p.name for p in logs[1]] == [p.name for p in logs[2]]
    for a, b in zip(logs[1], logs[2], strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    store = Store(tmp_path / "r2" / "w.db")
    claims = store.db.execute("SELECT worker, attempts, state FROM match_queue").fetchall()
    assert len(claims) == 12 and {(r[1], r[2]) for r in claims} == {(1, "done")}  # each claimed and played once
    assert not any(p.name.startswith(".w-") for p in (tmp_path / "r2" / "logs" / "t1").iterdir())  # nothing left over
    # each log was committed with its result (match_logs), and that copy deleted once the front had the file
    # (the front on another host: tests/test_log_archive.py)
    from arena.net.history import finished_matches, replay_feed

    assert store.db.execute("SELECT COUNT(*) FROM match_logs").fetchone()[0] == 0
    monkeypatch.chdir(tmp_path / "r2")  # where the front ran: its logs/ folder
    assert replay_feed(store, logs[2][0].name.removesuffix(".jsonl.gz"))
    listed = finished_matches(store, "ecarte", per_page=50)["matches"]
    assert len(listed) == 12 and all(m["replay"] for m in listed)
    usable = {f"cores [{c}]" for c in os.sched_getaffinity(0)}
    for n in (1, 2):  # worker k on core k (the usable cores in turn); its copies of the bot there too
        workers = sorted((tmp_path / f"r{n}" / "logs" / "t1" / "workers").iterdir())
        # a worker launches its bots for its first claim: on a busy machine the other worker may have
        # claimed all twelve matches first (the table and the logs above are the same either way)
        assert 1 <= len(workers) <= n
        said = [{line for log in (w / "bots").glob("*.log") for line in log.read_text().splitlines()
                 if line.startswith("cores")} for w in workers]
        assert all(len(lines) <= 1 and lines <= usable for lines in said), said  # one core per worker
        assert sum(map(len, said)) >= 1
        if len(usable) > 1:
            assert len(set().union(*said)) == sum(map(len, said)), said  # two workers: two cores


@pytest.mark.parametrize("db_target", ["sqlite", pytest.param("postgres", marks=pytest.mark.slow)], indirect=True)
def test_a_killed_workers_match_is_replayed_by_another_from_the_same_seed_and_counted_once(tmp_path, db_target):
    db = db_target
    store = Store(db)
    tid = queued_tournament(store, two_slow_bots(tmp_path), tmp_path / "logs")
    queue = MatchQueue(store)
    key = f"t{tid}-m0001"
    first = start_worker(db, tid, "first", lease_s=3)
    second = None
    try:
        # mid-match: leased by the first worker and its private log has been started
        wait_until(lambda: queue.state(key)[:2] == ("leased", "first")
                   and any((tmp_path / "logs" / f"t{tid}").glob(".w-*/*.jsonl.gz")))
        second = start_worker(db, tid, "second", lease_s=3)  # idle: nothing else to claim
        time.sleep(1.0)
        assert queue.state(key)[:2] == ("leased", "first")  # renewed: the lease holds while it plays
        first.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        first.wait()
        assert store.match_row(key).status == "pending"
        wait_until(lambda: queue.state(key)[3] == 2, 60)  # claimed again once the lease is over
        claimed_s = time.monotonic() - killed
        wait_until(lambda: store.match_row(key).status != "pending", 60)
        replayed_s = time.monotonic() - killed
        store.finish_tournament(tid)
        assert second.wait(30) == 0
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
    state, worker, _, attempts = queue.state(key)
    assert (state, worker, attempts) == ("done", "second", 2)
    row = store.match_by_index(tid, 0)
    assert row["status"] == "done" and row["reason"] == "target"
    assert sql(store, "SELECT COUNT(*) FROM matches WHERE tournament_id=:t", t=tid).scalar_one() == 1
    lines, result = verify_file(row["log_path"], row["log_hash"])  # the whole match, from its first deal
    assert lines[0]["seed"] == store.match_row(key).seed and result["reason"] == "target"
    print(f"killed worker's match claimed again {claimed_s:.1f} s and committed {replayed_s:.1f} s after the kill "
          "(lease 3 s)")


def worker_pids(parent: int) -> list[int]:
    """The `arena worker` processes whose parent is ``parent``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == parent and b"worker" in (entry / "cmdline").read_bytes().split(b"\0"):
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


@pytest.mark.slow  # a real tournament killing a real worker: make test-slow (the replay itself: above)
def test_a_tournament_replaces_a_killed_worker_and_replays_its_match_at_once(tmp_path):
    """`arena tournament --workers 2`: a worker SIGKILLed mid-match has its lease released at
    once by the tournament (no waiting for the 30 s lease), is started again, and the match is
    played again and counted once; the tournament finishes with every match."""
    bots = two_slow_bots(tmp_path)
    db = tmp_path / "t.db"
    proc = subprocess.Popen([*ARENA, "tournament", "--bots", *bots, "--games", "2", "--no-duplicate", "--seed", "3",
                             "--workers", "2", "--db", str(db), "--logs", str(tmp_path / "logs"), "--quiet",
                             *TRUST_ARGS], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: count(db, "SELECT COUNT(*) FROM match_queue WHERE state='leased'") == 2
                   and len(list((tmp_path / "logs" / "t1").glob(".w-*/*.jsonl.gz"))) == 2, 60)
        time.sleep(0.3)
        import sqlite3

        with sqlite3.connect(db) as c:
            holder = c.execute("SELECT worker FROM match_queue WHERE state='leased' LIMIT 1").fetchone()[0]
        victim = [pid for pid in worker_pids(proc.pid) if holder.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(victim) == 1
        os.kill(victim[0], signal.SIGKILL)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=120)
        finished_s = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Tournament t1" in out
    store = Store(db)
    rows = store.db.execute("SELECT attempts, state FROM match_queue ORDER BY idx").fetchall()
    assert 2 in [r[0] for r in rows] and {r[1] for r in rows} == {"done"}  # replayed (both, if one worker held both)
    assert [m["status"] for m in store.matches(1)] == ["done", "done"]
    print(f"tournament finished {finished_s:.1f} s after one of its workers was killed")


def test_two_workers_racing_for_one_match_one_gets_it(db_target):
    db = db_target
    store = Store(db)
    tid = store.create_tournament("ecarte", "round-robin", 1, MatchConfig(), ["a", "b"], [("a", "b", 9)])
    MatchQueue(store).enqueue(tid)
    barrier = threading.Barrier(8)
    got = []

    def race(n: int) -> None:
        queue = MatchQueue(Store(db))  # each its own connection, as separate processes have
        barrier.wait()
        claim = queue.claim(f"w{n}")
        if claim is not None:
            got.append(claim.worker)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 1
    state, worker, _, attempts = MatchQueue(store).state(f"t{tid}-m0001")
    assert (state, worker, attempts) == ("leased", got[0], 1)


async def test_a_worker_whose_lease_expired_cannot_commit_and_another_plays_the_match(tmp_path):
    store = Store(tmp_path / "e.db")
    bots = [str(ROOT / "sample_bots" / "c_bot.toml"), str(ROOT / "sample_bots" / "random.toml")]
    tid = queued_tournament(store, bots, tmp_path / "logs")
    calls = []

    def late_clock() -> float:  # the claim at time t, everything after 31 s later: the 30 s lease is over
        calls.append(1)
        return time.time() + (0 if len(calls) == 1 else 31)

    late = Worker(store, "late", tid, clock=late_clock, trust_bots=TRUST_BOTS, max_matches=1)
    assert await late.run() == 0 and late.lost == 1
    key = f"t{tid}-m0001"
    assert store.match_row(key).status == "pending"
    assert not list((tmp_path / "logs" / f"t{tid}").glob("*.jsonl.gz"))  # its log never took the real one's place
    after = Worker(store, "after", tid, clock=lambda: time.time() + 31, trust_bots=TRUST_BOTS, max_matches=1)
    assert await after.run() == 1
    state, worker, _, attempts = MatchQueue(store).state(key)
    assert (state, worker, attempts) == ("done", "after", 2)
    row = store.match_by_index(tid, 0)
    assert verify_file(row["log_path"], row["log_hash"])[1]["reason"] == row["reason"]


def test_worker_cli_refuses_an_unknown_tournament(tmp_path):
    run = subprocess.run([*ARENA, "worker", "--db", str(tmp_path / "x.db"), "--tournament", "3"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and "no tournament 3" in run.stderr and "Traceback" not in run.stderr
    assert os.path.exists(tmp_path / "x.db")


def test_worker_cli_refuses_a_core_it_may_not_use_in_one_line(tmp_path):
    run = subprocess.run([*ARENA, "worker", "--db", str(tmp_path / "x.db"), "--cpu", "100000"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--cpu 100000" in errors[0] and "usable" in errors[0], run.stderr


def test_the_leases_of_dead_local_workers_are_released_at_once(tmp_path):
    import socket

    from arena.schedule.front import release_dead_local

    store = Store(tmp_path / "d.db")
    tid = store.create_tournament("ecarte", "round-robin", 1, MatchConfig(), ["a", "b"],
                                  [("a", "b", 1), ("b", "a", 2), ("a", "b", 3)])
    queue = MatchQueue(store)
    queue.enqueue(tid)
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that existed and is gone
    for worker in (f"{host}:{dead.pid}:w0", f"{host}:{os.getpid()}:w1", f"elsewhere:{dead.pid}"):
        assert queue.claim(worker) is not None
    assert release_dead_local(queue) == 1
    assert queue.leased_workers() == sorted([f"{host}:{os.getpid()}:w1", f"elsewhere:{dead.pid}"])
    assert queue.claim("next").row.idx == 0  # the dead worker's match, first in schedule order


async def test_a_contest_with_a_worker_plays_submitted_bots_there_and_its_spectators_see_it_live(tmp_path):
    """`arena serve` with workers = 1: the ladder units of two submitted bots are queued and
    played by the worker process (not by the front); the front's spectators get every match live
    (watch, spectate, end) through the events table, the hidden cards of a duplicate pair only
    once both halves are over; /metrics counts the matches at the front."""
    import trio

    from arena.metrics import METRICS
    from arena.net.server import ServerConfig
    from arena.net.spectate import Subscriber
    from arena.schedule.contest import Contest, ContestConfig
    from arena.store.archives import pack

    store = Store(tmp_path / "arena.db")
    for name in ("c_bot", "random"):
        manifest = ROOT / "sample_bots" / f"{name}.toml"
        store.submit_bot(name, str(manifest))
        store.put_archive(name, pack(manifest))  # as `arena bots submit` does
    cfg = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                        server=ServerConfig(port=0), seed=7, trust_bots=TRUST_BOTS, max_matches=4, workers=1)
    contest = Contest(cfg, store)
    finished = METRICS.matches_finished.labels("ecarte", "win", "target")
    before = finished._value.get()
    sub = Subscriber("test", capacity=1 << 16)
    contest.hub.add(sub)
    contest.hub.subscribe(sub, "*")
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        try:
            with trio.fail_after(90):
                while store.db.execute("SELECT COUNT(*) FROM matches WHERE status<>'pending'").fetchone()[0] < 4:
                    await trio.sleep(0.1)
                await trio.sleep(0.5)  # the last events
        finally:
            contest.stop()
    rows = store.db.execute("SELECT q.worker, q.state, m.status, m.reason FROM match_queue q "
                            "JOIN matches m ON m.match_key=q.match_key ORDER BY m.idx").fetchall()
    assert len(rows) == 4 and all(r[0].endswith(":w0") and r[1:] == ("done", "done", "target") for r in rows)
    assert finished._value.get() - before == 4  # counted where /metrics is served
    import msgspec

    seen = []
    while True:
        try:
            seen.append(msgspec.json.decode(sub.receive_channel.receive_nowait()))
        except trio.WouldBlock:
            break
    kinds = [m["type"] for m in seen]
    assert kinds.count("watch") == 4 and kinds.count("watch_end") == 4 and kinds.count("spectate") > 20
    live = [(m["match_id"], m["event"]) for m in seen if m["type"] == "spectate"]
    hidden = [(m["match_id"], e) for m in seen if m["type"] == "reveal" for e in m["events"]
              if not (e["kind"] == "exchange" and e.get("discarded") is None)]  # a count of cards goes out live
    assert hidden and not [h for h in hidden if h in live]  # a hand, a discard: never out live, only revealed
    first_pair = [m["match"]["match_id"] for m in seen if m["type"] == "watch"][:2]
    ends = [i for i, m in enumerate(seen) if m["type"] == "watch_end" and m["match_id"] in first_pair]
    reveals = [i for i, m in enumerate(seen) if m["type"] == "reveal" and m["match_id"] in first_pair]
    assert reveals and min(reveals) > max(ends)  # a pair's hidden cards only after both halves


def processes_with(needle: bytes) -> list[int]:
    """Live processes whose command line contains ``needle``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if needle in (entry / "cmdline").read_bytes() and stat.rsplit(")", 1)[1].split()[0] != "Z":
                    out.append(int(entry.name))
            except (OSError, IndexError):
                continue
    return out


@pytest.mark.slow
def test_a_tournament_killed_with_its_workers_resumes_on_workers_to_the_same_logs(tmp_path):
    """SIGKILL `arena tournament --workers 2` mid-way: its workers die with it (parent-death
    signal), `--resume --workers 2` releases their leases at once and plays what is left; every
    match is counted once and the logs are byte for byte those of a clean run on one worker."""
    bots = two_slow_bots(tmp_path)
    runs = {}
    for name in ("crash", "clean"):
        (tmp_path / name).mkdir()
        runs[name] = [*ARENA, "tournament", "--bots", *bots, "--games", "6", "--no-duplicate", "--seed", "4",
                      "--db", "a.db", "--logs", "logs", "--quiet", *TRUST_ARGS]
    db = tmp_path / "crash" / "a.db"
    proc = subprocess.Popen([*runs["crash"], "--workers", "2"], cwd=tmp_path / "crash", stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_until(lambda: count(db, "SELECT COUNT(*) FROM matches WHERE status='done'") >= 2, 90)
        wait_until(lambda: count(db, "SELECT COUNT(*) FROM match_queue WHERE state='leased'") >= 1, 30)
        proc.send_signal(signal.SIGKILL)
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_until(lambda: not processes_with(f":{proc.pid}:w".encode()), 10)  # its workers died with it
    t0 = time.monotonic()
    resumed = subprocess.run([*ARENA, "tournament", "--resume", "--db", "a.db", "--workers", "2", "--quiet",
                              *TRUST_ARGS], cwd=tmp_path / "crash", capture_output=True, text=True, timeout=180)
    resume_s = time.monotonic() - t0
    assert resumed.returncode == 0, resumed.stderr
    store = Store(db)
    assert [m["status"] for m in store.matches(1)] == ["done"] * 6
    assert {r[0] for r in store.db.execute("SELECT state FROM match_queue")} == {"done"}
    clean = subprocess.run([*runs["clean"], "--workers", "1"], cwd=tmp_path / "clean", capture_output=True,
                           text=True, timeout=180)
    assert clean.returncode == 0, clean.stderr
    crashed_logs = sorted((tmp_path / "crash" / "logs" / "t1").glob("*.jsonl.gz"))
    clean_logs = sorted((tmp_path / "clean" / "logs" / "t1").glob("*.jsonl.gz"))
    assert [p.name for p in crashed_logs] == [p.name for p in clean_logs] and len(clean_logs) == 6
    for a, b in zip(crashed_logs, clean_logs, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    print(f"resumed on workers in {resume_s:.1f} s (no wait for the dead workers' 30 s leases)")


def test_the_front_follows_the_newest_claim_of_a_match_played_again(tmp_path):
    """A worker that lost its lease and still sends events (its end, late) does not end the
    live match of the worker that plays it again: the front keeps to the newest claim."""
    from arena.net.spectate import SpectatorHub
    from arena.schedule.front import EventFeed
    from arena.schedule.worker import EventForwarder
    from protocol.messages import Rules

    store = Store(tmp_path / "f.db")
    queue = MatchQueue(store)
    old, new = EventForwarder(queue), EventForwarder(queue)
    old.attempts["t1-m0001"], new.attempts["t1-m0001"] = 1, 2
    old.match_started("t1-m0001", "ecarte", ["a", "b"], Rules(), TimeControl())
    old.flush()
    new.match_started("t1-m0001", "ecarte", ["a", "b"], Rules(), TimeControl())
    new.flush()
    old.match_ended("t1-m0001", None, "aborted", [0, 0])  # the loser of the lease, late
    hub = SpectatorHub()
    feed = EventFeed(hub)
    for _, key, body in queue.events_after(0):
        feed.feed(key, body)
    assert [m.match_id for m in hub.listing()] == ["t1-m0001"]  # still live: the new claim plays it
    new.match_ended("t1-m0001", 0, "target", [5, 1])
    for _, key, body in queue.events_after(3):
        feed.feed(key, body)
    assert hub.listing() == []


@pytest.mark.slow
def test_a_format_that_decides_as_it_goes_gives_the_same_matches_on_workers(tmp_path):
    """Rotation (the winner stays): the front runs the format and queues one match at a time;
    the matches, winners and log hashes are those of the same tournament in one process."""
    bots = [str(ROOT / "sample_bots" / f) for f in ("random.toml", "c_bot.toml", "greedy.toml")]
    rows = {}
    for n in (0, 2):
        run = subprocess.run([*ARENA, "tournament", "--bots", *bots, "--format", "rotation", "--games", "6",
                              "--seed", "5", "--workers", str(n), "--db", f"r{n}.db", "--logs", f"l{n}", "--quiet",
                              *TRUST_ARGS], capture_output=True, text=True, cwd=tmp_path, timeout=180)
        assert run.returncode == 0, run.stderr
        rows[n] = Store(tmp_path / f"r{n}.db").db.execute(
            "SELECT idx, bot0, bot1, winner, log_hash FROM matches ORDER BY idx").fetchall()
    assert len(rows[0]) == 6 and [tuple(r) for r in rows[0]] == [tuple(r) for r in rows[2]]
