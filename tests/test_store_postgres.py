"""The store on PostgreSQL (arena/store/engine.py, postgres.py): passwords never
shown, a clear line when the server cannot be reached, the writer lock that stands for SQLite's
``BEGIN IMMEDIATE``, and a server stopped and restarted under a running contest (a storage fault:
paused, retried, resumed; nothing lost, nothing counted twice).

The tests that need a server use the throwaway cluster of tests/pg_cluster.py (``pg_url``); the
store's own tests run on both backends through the ``db_target`` fixture (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trio
from sqlalchemy import text

from arena.errors import DatabaseError
from arena.match.referee import MatchResult
from arena.store.health import STORAGE_ERRORS
from arena.store.postgres import DatabaseLost, redact
from arena.store.sqlite import Store, open_store

ROOT = Path(__file__).resolve().parent.parent


def test_passwords_are_never_shown() -> None:
    assert redact("postgresql://arena:s3cret@db.example.org:5432/contest?sslmode=require") == \
        "postgresql://arena@db.example.org:5432/contest?sslmode=require"
    assert "s3cret" not in redact("postgresql://db/contest?user=arena&password=s3cret")


def test_a_child_process_gets_the_password_in_its_environment_not_its_command_line(pg_url: str) -> None:
    url = pg_url.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")  # the socket trusts: any works
    store = Store(url)
    db, env = store.child_db()
    assert "s3cret" not in db and env == {"PGPASSWORD": "s3cret"} and Store(db).path == store.path
    assert Store(":memory:").child_db() == (":memory:", {})
    store.close()


def test_an_unreachable_server_is_one_line_with_exit_4_and_no_password(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://arena:s3cret@127.0.0.1:{port}/contest"
    with pytest.raises(DatabaseError, match=f"cannot connect to postgresql://arena@127.0.0.1:{port}/contest: .*"
                                            "start PostgreSQL or fix --db"):
        open_store(url)
    done = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "list", "--db", url], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 4 and "s3cret" not in done.stdout + done.stderr
    line, = done.stderr.splitlines()
    assert line.startswith(f"arena: error: cannot connect to postgresql://arena@127.0.0.1:{port}/contest: ")


def test_a_newer_or_foreign_database_is_refused(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'ffff'")  # a revision this arena does not know
    with pytest.raises(DatabaseError, match="made by a newer arena"):
        Store(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE bots, matches, tournaments, alembic_version CASCADE")
    with pytest.raises(DatabaseError, match="of another program"):
        Store(pg_url)


def test_write_transactions_wait_for_each_other_as_on_sqlite(pg_url: str) -> None:
    """A transaction of one store holds the writer lock: another process's write transaction
    waits (seen in pg_locks), then runs on what the first committed (archive versions)."""
    import psycopg

    one, two = Store(pg_url), Store(pg_url)
    from tests.test_archives import MANIFEST_BODY, file, tar_of

    data = [tar_of(file("manifest.toml", MANIFEST_BODY), file("bot.py", f"v{i}".encode())) for i in range(2)]
    versions: list[int] = []
    with one.transaction():
        assert one.put_archive("b", data[0]) == 1
        waiter = threading.Thread(target=lambda: versions.append(two.put_archive("b", data[1])))
        waiter.start()
        with psycopg.connect(pg_url, autocommit=True) as watch:
            for _ in range(500):
                if watch.execute("SELECT COUNT(*) FROM pg_locks WHERE locktype='advisory' AND NOT granted"
                                 ).fetchone()[0]:
                    break
                threading.Event().wait(0.01)
            else:
                raise AssertionError("the second writer did not wait for the lock")
        assert versions == []
    waiter.join(30)
    assert versions == [2]  # it read version 1, committed by the first, once the lock was free
    one.close()
    two.close()


def test_a_restarted_server_is_a_storage_fault_and_the_store_reconnects(pg_cluster, pg_url: str) -> None:
    store = Store(pg_url)
    tid = store.create_tournament("ecarte", "test", 1, {}, ["a", "b"], [("a", "b", 1), ("b", "a", 2)])
    pg_cluster.stop()
    try:
        with pytest.raises(DatabaseLost) as lost:
            store.record_result(f"t{tid}-m0001", MatchResult(match_id="x", winner=0, reason="target",
                                                             scores=[5, 0], manches=[1, 0]), None)
        assert isinstance(lost.value, STORAGE_ERRORS)
        with pytest.raises(DatabaseLost):  # still down: reconnecting fails the same way
            store.probe_write(tid)
    finally:
        pg_cluster.start()
    store.record_result(f"t{tid}-m0001", MatchResult(match_id="x", winner=0, reason="target", scores=[5, 0],
                                                     manches=[1, 0]), None)
    assert store.results(tid) == [("a", "b", 1.0)]
    store.close()


async def test_postgresql_stopped_under_a_contest_pauses_it_and_loses_nothing(pg_cluster, pg_url, tmp_path):
    """The contest server plays on PostgreSQL; the server is stopped (``pg_ctl stop -m fast``:
    every session cut) for a few seconds and started again. Scheduling pauses, results waiting
    are retried and committed once; after the restart matches go on."""
    from tests.test_storage_faults import _contest, _until

    store = Store(pg_url)
    contest = _contest(tmp_path, store)
    watch = Store(pg_url)

    def counts() -> dict[str, int]:
        return {r[0]: r[1] for r in watch.run(text("SELECT status, COUNT(*) FROM matches GROUP BY status"))}

    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        await _until(lambda: counts().get("done", 0) >= 2)
        await trio.to_thread.run_sync(pg_cluster.stop)
        try:
            await _until(lambda: contest.health.paused)
            assert "PostgreSQL" in contest.health.reason or "connect" in contest.health.reason
            started = contest.matches_started
            await trio.sleep(2.0)  # down: nothing new is scheduled
            assert contest.matches_started == started
        finally:
            await trio.to_thread.run_sync(pg_cluster.start)
        await _until(lambda: not contest.health.paused)
        before = counts().get("done", 0)
        await _until(lambda: counts().get("done", 0) >= before + 2)
        contest.stop()
    final = counts()
    assert "pending" not in final  # every match scheduled has its result
    rows = watch.matches(contest.tournament_id)
    done = [r for r in rows if r["status"] == "done"]
    assert all(r["log_hash"] and Path(r["log_path"]).exists() for r in done)
    # counted once: the ladder's games are exactly two per finished match
    assert sum(games for _, _, games in watch.ladder("ecarte")) == 2 * len(done)
    store.close()
    watch.close()


async def test_the_same_tournament_on_postgresql_gives_the_same_results_and_logs(pg_url, tmp_path):
    """Same bots, same seed: on SQLite and on PostgreSQL, every match row (but its times and
    paths) and every match log byte for byte are the same, and so is the ladder."""
    from arena.schedule.tournament import TournamentConfig, run_tournament
    from tests.conftest import TRUST_BOTS
    from tests.test_tournament import _manifests

    runs = {}
    for name, target in (("sqlite", str(tmp_path / "arena.db")), ("postgres", pg_url)):
        store = Store(target)
        cfg = TournamentConfig(games=1, seed=99, logs_dir=str(tmp_path / name), trust_bots=TRUST_BOTS)
        report = await run_tournament(store, _manifests()[:2], cfg)
        rows = [{k: v for k, v in r.items() if k not in ("duration_ms", "finished_at", "log_path")}
                for r in store.matches(report.tournament_id)]
        logs = [p.read_bytes() for p in sorted((tmp_path / name).rglob("*.jsonl*"))]
        runs[name] = (rows, logs, store.ladder_intervals("ecarte"), [(r.name, r.elo) for r in report.ratings])
        store.close()
    assert runs["sqlite"][0] and runs["sqlite"][1]
    assert runs["sqlite"] == runs["postgres"]


def test_the_url_s_own_libpq_options_are_kept(pg_url: str) -> None:
    """``options=-csearch_path=...`` in the URL puts the store in that schema (a season's full and
    empty stores share one database this way): the store's own lock timeout is added to the
    URL's options, never put in their place."""
    setup = Store(pg_url)
    setup.run(text("DROP SCHEMA IF EXISTS elsewhere CASCADE"))
    setup.run(text("CREATE SCHEMA elsewhere"))
    setup.close()
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}options=-csearch_path%3Delsewhere"
    store = Store(url)
    try:
        store.add_bot("schemabot")
        assert store.run(text("SELECT current_schema()")).scalar() == "elsewhere"
        assert store.run(text("SELECT current_setting('lock_timeout')")).scalar() == "10s"
        assert store.run(text("SELECT COUNT(*) FROM elsewhere.bots WHERE name='schemabot'")).scalar() == 1
    finally:
        store.run(text("DROP SCHEMA elsewhere CASCADE"))
        store.close()
