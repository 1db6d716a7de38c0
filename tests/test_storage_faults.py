"""A full disk or a read-only path never stops the server (arena/store/health.py): the match
concerned is aborted, scheduling pauses and resumes by itself, and no result is dropped.

Real faults where the machine allows: as root, a tiny tmpfs is mounted for the logs and the
database, then remounted read-only or filled up; as another user, the logs directory is made
read-only with chmod. ENOSPC is also injected through a seam (the module's ``open``)."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
import trio

import arena.match.log
from arena.match.log import MatchLog
from arena.match.referee import MatchConfig, Referee
from arena.metrics import METRICS
from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.store.health import StorageHealth
from arena.store.sqlite import Store
from tests.conftest import connect_bot

ROOT = Path(__file__).resolve().parent.parent


class FullDisk:
    """A binary file whose writes fail with ENOSPC once ``room`` bytes were taken."""

    def __init__(self, room: int) -> None:
        self.room = room

    def write(self, data: bytes) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_match_log_keeps_its_storage_error_instead_of_raising(tmp_path, monkeypatch):
    monkeypatch.setattr(arena.match.log, "open", lambda path, mode: FullDisk(300), raising=False)
    log = MatchLog(tmp_path / "m.jsonl")
    for i in range(20):
        log.write({"type": "incident", "seat": 0, "code": "x", "detail": str(i)})
    log.flush()  # lines are gathered in memory (arena.match.log.BUFFER_BYTES) and written here
    assert isinstance(log.error, OSError) and log.error.errno == errno.ENOSPC
    log.write({"type": "incident", "seat": 0, "code": "x", "detail": "after"})  # dropped, never raises
    log.close()
    monkeypatch.undo()
    if os.geteuid() != 0:  # root writes anywhere: the read-only directory case is tested below
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        assert isinstance(MatchLog(ro / "sub" / "m.jsonl").error, PermissionError)


async def test_a_match_whose_log_fills_the_disk_is_aborted_with_the_error(server, store, tmp_path, monkeypatch):
    alice, bob = await connect_bot(server, "alice"), await connect_bot(server, "bob")
    monkeypatch.setattr(arena.match.log, "open", lambda path, mode: FullDisk(4000), raising=False)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(alice.play)
        nursery.start_soon(bob.play)
        with MatchLog(tmp_path / "m.jsonl") as log:
            result = await Referee("m1", 3, MatchConfig(), (server.bots["alice"], server.bots["bob"]), log).run()
    assert result.reason == "aborted" and result.winner is None
    assert "match log could not be written" in result.detail and "No space left" in result.detail
    assert alice.received[-1]["type"] == "match_end" and alice.received[-1]["reason"] == "aborted"


async def test_storage_health_retries_a_write_and_resumes_only_when_the_probe_passes(autojump_clock):
    broken = {"db": True, "probe": True}
    written: list[int] = []

    def write(x: int) -> int:
        if broken["db"]:
            raise sqlite3.OperationalError("database or disk is full")
        written.append(x)
        return x

    def probe() -> None:
        if broken["probe"]:
            raise OSError(errno.EROFS, "Read-only file system")

    health = StorageHealth(retry_s=1.0, probe=probe)
    resumed: list[bool] = []
    health.on_resume.append(lambda: resumed.append(True))
    out: list[int] = []
    async with trio.open_nursery() as nursery:

        async def commit() -> None:
            out.append(await health.commit("database", write, 7))

        nursery.start_soon(commit)
        nursery.start_soon(health.watch)
        await trio.sleep(5)
        assert health.paused and health.waiting == 1 and not written
        assert health.state()["reason"].startswith("database") or "still failing" in health.state()["reason"]
        assert METRICS.storage_paused._value.get() == 1
        broken["db"] = False
        await trio.sleep(1.5)
        assert out == [7] and health.waiting == 0
        assert health.paused  # the probe still fails
        broken["probe"] = False
        await trio.sleep(1.5)
        assert not health.paused and resumed == [True] and METRICS.storage_paused._value.get() == 0
        nursery.cancel_scope.cancel()
    assert written == [7]  # written once, never twice, never dropped


# --------------------------------------------------------------------------- whole contest


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def _read_only(path: Path) -> None:
    """Make ``path`` read-only for every new open, root included: a read-only bind mount on
    itself (files already open for writing keep their old mount, so it is not busy)."""
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True, capture_output=True)


def _writable(path: Path) -> None:
    subprocess.run(["umount", str(path)], check=True, capture_output=True)


def _counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return dict(c.execute("SELECT status, COUNT(*) FROM matches GROUP BY status").fetchall())


async def _until(cond, timeout: float = 60.0) -> None:
    with trio.fail_after(timeout):
        while not cond():
            await trio.sleep(0.05)


@pytest.fixture
def disk(tmp_path):
    """A directory for logs and database: a 2 MiB tmpfs as root (unmounted afterwards), a
    plain directory otherwise."""
    where = tmp_path / "disk"
    mounted = _mount_tmpfs(where, "2m")
    yield where, mounted
    if mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _contest(where: Path, store: Store) -> Contest:
    for name in ("greedy", "random"):
        store.submit_bot(name, str(ROOT / "sample_bots" / f"{name}.toml"))
    cfg = ContestConfig(db=str(where / "arena.db"), logs=str(where / "logs"), http_port=0, seed=3,
                        server=ServerConfig(port=0), storage_retry_s=0.2, duplicate=False, concurrency=1)
    return Contest(cfg, store)


@pytest.mark.parametrize("fault", ["read-only", pytest.param("full", marks=pytest.mark.slow)])
# "full" is in make test-slow (it fills a tmpfs). A read-only directory meets the next match's new
# log; a full disk meets whichever writer comes first: a match log, or the database (a result, the
# bots' states published every second), which depends on the machine's speed. Both must pause.
async def test_a_storage_fault_pauses_the_contest_which_resumes_and_loses_nothing(disk, fault):
    where, mounted = disk
    if not mounted and (fault == "full" or os.geteuid() == 0):
        pytest.skip("needs root and mount (a tmpfs, a read-only bind); as another user, chmod is used")
    store = Store(where / "arena.db")
    contest = _contest(where, store)
    db = where / "arena.db"
    filler = where / "filler"
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        await _until(lambda: _counts(db).get("done", 0) >= 2)
        if fault == "read-only" and mounted:
            _read_only(where / "logs")
        elif fault == "read-only":
            for d in (where / "logs", where / "logs" / f"t{contest.tournament_id}"):
                d.chmod(0o555)
        else:
            with open(filler, "wb", buffering=0) as fh:  # fill the tmpfs to its last byte (nothing left to flush)
                try:
                    while True:
                        fh.write(b"\0" * 65536)
                        fh.flush()
                except OSError:
                    pass
        await _until(lambda: contest.health.paused)
        assert contest.health.state()["paused"] and contest.health.reason
        reason = contest.health.reason
        assert METRICS.storage_paused._value.get() == 1
        started = contest.matches_started
        # paused: no new match is scheduled while the probe keeps failing (two probes waited
        # for as events, not a time: a loaded machine can neither cut the wait short nor race it)
        probes = [0]
        real_probe = contest.health.probe
        assert real_probe is not None

        def counted_probe() -> None:
            probes[0] += 1
            real_probe()

        contest.health.probe = counted_probe
        await _until(lambda: probes[0] >= 2)
        assert contest.matches_started == started
        if fault == "read-only" and mounted:
            _writable(where / "logs")
        elif fault == "read-only":
            for d in (where / "logs", where / "logs" / f"t{contest.tournament_id}"):
                d.chmod(0o755)
        else:
            filler.unlink()
        await _until(lambda: not contest.health.paused)
        done_before = _counts(db).get("done", 0)
        await _until(lambda: _counts(db).get("done", 0) >= done_before + 2)
        contest.stop()
    counts = _counts(db)
    assert "pending" not in counts  # every match scheduled has its result
    with sqlite3.connect(db) as c:
        aborted = c.execute("SELECT detail FROM matches WHERE status='aborted'").fetchall()
        assert c.execute("SELECT status FROM tournaments").fetchone()[0] == "finished"
    assert all("match log could not be" in d or "server shut down" in d for (d,) in aborted)
    log_aborts = [d for (d,) in aborted if "match log could not be" in d]
    if fault == "read-only":
        assert log_aborts and ("Read-only file system" in log_aborts[0] or "Permission denied" in log_aborts[0])
    else:  # the first writer to meet the full disk paused the contest, and said why
        assert "No space left on device" in reason or "database or disk is full" in reason, reason
        assert all("No space left on device" in d for d in log_aborts), log_aborts
    store.close()


async def test_a_result_the_database_refuses_is_retried_until_committed(tmp_path):
    """ENOSPC seen by SQLite ("database or disk is full") while a result is committed: the
    contest pauses, the bots wait for match_end, and the very result is committed once the
    database accepts it again; nothing is scheduled meanwhile."""
    store = Store(tmp_path / "arena.db")
    contest = _contest(tmp_path, store)
    real = store.record_result
    full = {"on": False}
    refused: list[str] = []

    def record_result(match_key, result, *args):
        if full["on"]:
            refused.append(match_key)
            raise sqlite3.OperationalError("database or disk is full")
        return real(match_key, result, *args)

    store.record_result = record_result
    db = tmp_path / "arena.db"
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        await _until(lambda: _counts(db).get("done", 0) >= 1)
        full["on"] = True
        await _until(lambda: contest.health.waiting == 1)
        key = refused[0]
        assert contest.health.paused and "database or disk is full" in contest.health.reason
        assert store.match_row(key).status == "pending"
        started = contest.matches_started
        await _until(lambda: len(refused) >= 3)  # several retries, all refused; nothing new scheduled
        assert contest.matches_started == started
        full["on"] = False
        await _until(lambda: not contest.health.paused)
        assert store.match_row(key).status == "done"  # the same result, committed once
        contest.stop()
    assert "pending" not in _counts(db)
    store.close()


async def test_an_unexpected_error_in_one_match_ends_that_match_only(tmp_path, monkeypatch):
    import arena.schedule.fleet

    store = Store(tmp_path / "arena.db")
    contest = _contest(tmp_path, store)
    real = arena.schedule.fleet.Fleet.play
    calls = {"n": 0}

    async def flaky(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("a bug")
        return await real(*args, **kw)

    monkeypatch.setattr(arena.schedule.fleet.Fleet, "play", flaky)
    db = tmp_path / "arena.db"
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        await _until(lambda: _counts(db).get("done", 0) >= 3)
        contest.stop()
    with sqlite3.connect(db) as c:
        details = [d for (d,) in c.execute("SELECT detail FROM matches WHERE status='aborted'")]
    assert "internal error (see the server's log)" in details and "pending" not in _counts(db)
    store.close()


def test_a_serve_stopped_while_its_disk_is_full_says_so_in_one_line(disk):
    """SIGTERM to ``arena serve`` while the disk of its database is full: one line saying what
    could not be written and that nothing recorded is lost, exit status 3, no traceback. (A
    read-only remount is refused while the database is open for writing, so the disk is filled.)"""
    import signal
    import sys

    where, mounted = disk
    if not mounted:
        pytest.skip("needs root and mount (a tmpfs to fill up)")
    config = where / "contest.toml"
    config.write_text(f'db = "{where / "arena.db"}"\nlogs = "{where / "logs"}"\nhttp_port = 0\n'
                      "storage_retry_s = 0.2\n[server]\nport = 0\n")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "Ctrl-C or SIGTERM to stop" in proc.stdout.readline()
        with open(where / "filler", "wb", buffering=0) as fh:  # fill the tmpfs up to its last byte
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError:
                pass
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "Traceback" not in out + err, err
    assert proc.returncode == 3, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    # before the signal the running server may already have met the full disk (its states are
    # published every second) and logged the pause; the shutdown itself is one line
    assert "could not be written" in lines[-1] and "full" in lines[-1], err
    assert all(line.startswith("storage fault, scheduling paused") for line in lines[:-1]), err


async def test_a_contest_stopped_before_a_runner_holds_its_match_leaves_nothing_pending(tmp_path, monkeypatch):
    """The stop comes while a match's row is stored but no runner holds it yet (here the
    admission never lets it in, as a loop too late to admit would): the match is recorded as
    aborted at once, with the reason, not left pending until the next start."""
    import arena.schedule.fleet as fleet

    async def never() -> None:
        await trio.sleep_forever()

    monkeypatch.setattr(fleet, "admit", never)
    db = tmp_path / "arena.db"
    store = Store(db)
    contest = _contest(tmp_path, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        await _until(lambda: _counts(db).get("pending", 0) >= 1)
        contest.stop()
    counts = _counts(db)
    assert "pending" not in counts and counts.get("aborted", 0) >= 1, counts
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        details = {d for (d,) in c.execute("SELECT detail FROM matches WHERE status='aborted'")}
    assert details == {"server shut down before the match started"}
    store.close()


async def test_a_contest_stopped_while_a_worker_should_play_its_match_aborts_it_and_empties_the_queue(tmp_path,
                                                                                                     monkeypatch):
    """With workers, a stop while the match waits in the queue (here no worker ever runs) records
    it as aborted during the match and takes it out of the queue: no worker can claim it later."""
    monkeypatch.setattr(Contest, "_local_workers", lambda self: trio.sleep_forever())
    db = tmp_path / "arena.db"
    store = Store(db)
    for name in ("greedy", "random"):
        store.submit_bot(name, str(ROOT / "sample_bots" / f"{name}.toml"))
    cfg = ContestConfig(db=str(db), logs=str(tmp_path / "logs"), http_port=0, seed=3, server=ServerConfig(port=0),
                        duplicate=False, concurrency=1, workers=1)
    contest = Contest(cfg, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        await _until(lambda: _counts(db).get("pending", 0) >= 1)
        contest.stop()
    assert "pending" not in _counts(db)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        details = {d for (d,) in c.execute("SELECT detail FROM matches WHERE status='aborted'")}
        waiting = c.execute("SELECT COUNT(*) FROM match_queue WHERE state <> 'done'").fetchone()[0]
    assert details == {"server shut down during the match"} and waiting == 0
    store.close()
