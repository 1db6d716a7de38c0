"""Match workers on PostgreSQL (arena.schedule.worker, arena.store.queue on arena.store.postgres):
the same tournament played by two ``arena worker`` processes on PostgreSQL gives the results
table, the logs (byte for byte) and the ladder it gives on SQLite; PostgreSQL stopped for a few
seconds while the workers play loses nothing and counts nothing twice.

(The queue's policy tests and the claim race run on both backends in tests/test_queue.py and
tests/test_workers.py through the ``db_target`` fixture.)"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from arena.store.sqlite import Store
from tests.conftest import ROOT, TRUST_ARGS
from tests.test_workers import ARENA, table_of

BOTS = [str(ROOT / "sample_bots" / f) for f in ("c_bot.toml", "random.toml", "greedy.toml")]


def tournament(db: str, cwd: Path, games: int = 2, seed: int = 7) -> subprocess.Popen:
    """``arena tournament --workers 2`` of the three bots on ``db``, started in ``cwd``."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([*ARENA, "tournament", "--bots", *BOTS, "--games", str(games), "--seed", str(seed),
                             "--workers", "2", "--db", db, "--logs", "logs", "--quiet", *TRUST_ARGS],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)


@pytest.mark.slow
def test_two_workers_on_postgresql_give_the_results_of_sqlite(pg_url: str, tmp_path: Path) -> None:
    out = {}
    for name, db in (("sqlite", "w.db"), ("postgres", pg_url)):
        run = tournament(db, tmp_path / name)
        stdout, stderr = run.communicate(timeout=180)
        assert run.returncode == 0, stderr
        out[name] = stdout
    assert table_of(out["sqlite"]) == table_of(out["postgres"])
    logs = {n: sorted((tmp_path / n / "logs" / "t1").glob("*.jsonl.gz")) for n in out}
    assert len(logs["sqlite"]) == 6 and [p.name for p in logs["sqlite"]] == [p.name for p in logs["postgres"]]
    for a, b in zip(logs["sqlite"], logs["postgres"], strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    stores = {"sqlite": Store(tmp_path / "sqlite" / "w.db"), "postgres": Store(pg_url)}
    # the persistent ladder too (its fit is warm-started from the ratings stored before each
    # commit, and the workers commit in any order: the same to a millionth of a point)
    for a, b in zip(stores["sqlite"].ladder_intervals("ecarte"), stores["postgres"].ladder_intervals("ecarte"),
                    strict=True):
        assert (a[0], a[3]) == (b[0], b[3]) and abs(a[1] - b[1]) < 1e-6 and abs(a[2] - b[2]) < 1e-6
    claims = stores["postgres"].db.execute("SELECT worker, attempts, state FROM match_queue").fetchall()
    assert len(claims) == 6 and {(r[1], r[2]) for r in claims} == {(1, "done")}  # each claimed, played once
    assert len({r[0] for r in claims}) == 2  # by both workers


@pytest.mark.slow
def test_postgresql_stopped_while_workers_play_loses_nothing(pg_cluster, pg_url: str, tmp_path: Path) -> None:
    """Two workers play; PostgreSQL is stopped (every session cut) for 3 s, then started: the
    workers and the front wait and reconnect, the tournament finishes, every match is recorded
    once with its log."""
    watch = Store(pg_url)
    run = tournament(pg_url, tmp_path / "run", games=4)
    try:
        deadline = time.monotonic() + 120
        while watch.db.execute("SELECT COUNT(*) FROM matches WHERE status='done'").fetchone()[0] < 2:
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.stderr else ""
            time.sleep(0.1)
        pg_cluster.stop()
        time.sleep(3)
        pg_cluster.start()
        stdout, stderr = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, stderr
    rows = watch.matches(1)
    assert len(rows) == 12 and all(r["status"] == "done" and r["reason"] == "target" for r in rows)
    assert all(Path(tmp_path / "run" / r["log_path"]).exists() or Path(r["log_path"]).exists() for r in rows)
    queue = watch.db.execute("SELECT state, COUNT(*) FROM match_queue GROUP BY state").fetchall()
    assert [tuple(r) for r in queue] == [("done", 12)]
    assert sum(games for _, _, games in watch.ladder("ecarte")) == 2 * len(rows)  # counted once
    watch.close()
