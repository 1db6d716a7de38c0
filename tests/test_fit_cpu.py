"""What a ladder fit costs, measured honestly (issue 21 item 6): each fit stores its CPU time beside
its wall time and whether it computed the intervals, a full refit's figures are kept apart, the
server exports them (``/metrics``), a contest sets how often a big field's intervals are refitted
(``fit_intervals_s``), and revision 0004 adds the columns to a store of revision 0003. No timing:
the CPU clock is a fake one where a figure is compared."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
import trio

import arena.schedule.fitter as fitter
from arena.errors import UserError
from arena.metrics import Metrics
from arena.schedule.contest import Contest, ContestConfig, load_config
from arena.schedule.fitter import FitPolicy, FitWatch, LadderFitter, fit_ladder, spawn
from arena.store.engine import connect
from arena.store.fit_input import read_ratings
from arena.store.sqlite import Store
from arena.store.upgrade import upgrade
from arena.tools.season_report import parse_metrics
from tests.test_fit_input import _finish
from tests.test_season import _history

GAME = "ecarte"
NEW = ("fit_cpu_ms", "full_fit_at", "full_fit_ms", "full_fit_cpu_ms")


class FakeCpu:
    """A CPU clock (seconds) that advances ``step`` at each read: a measured computation takes
    exactly ``step`` (read once before and once after)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def _inline(f, *args):
    return f(*args)


@pytest.fixture
def metrics(monkeypatch) -> Metrics:
    """A registry of its own for the fitter's gauges (the process-wide one is shared by every test)."""
    fresh = Metrics()
    monkeypatch.setattr(fitter, "METRICS", fresh)
    return fresh


def _scrape(metrics: Metrics):
    return parse_metrics(metrics.exposition().decode())


async def test_each_fit_stores_its_cpu_time_and_a_full_refit_is_kept_apart(monkeypatch, autojump_clock, metrics):
    monkeypatch.setattr(fitter, "EXACT_BOTS", 3)  # a "large" field of 6 bots: intervals every 30 s only
    store = Store(":memory:")
    tid, _ = _history(store, 6, 0, pending=8)
    keys = [m.match_key for m in store.pending_matches(tid)]
    for key in keys[:6]:
        _finish(store, key, "0")
    reports = []
    cpu = FakeCpu(0.25)
    job = LadderFitter(store, GAME, FitPolicy(min_interval_s=1.0, rest_ratio=0.0, intervals_s=30.0),
                       on_fit=reports.append, run_sync=_inline, cpu_clock=cpu)
    await job.step()
    state = store.ladder_state(GAME)
    assert reports[-1].full and reports[-1].cpu_ms == 250
    assert state["full"] and state["fit_cpu_ms"] == 250 and state["full_fit_cpu_ms"] == 250
    assert state["full_fit_at"] == state["fitted_at"] and state["full_fit_ms"] == state["fit_ms"] == reports[-1].fit_ms
    scrape = _scrape(metrics)
    assert scrape.value("arena_ladder_fit_cpu_seconds", game=GAME) == 0.25
    assert scrape.value("arena_ladder_fit_full", game=GAME) == 1
    assert scrape.value("arena_ladder_full_fit_cpu_seconds", game=GAME) == 0.25

    cpu.step = 0.125  # the ratings alone: cheaper, and the full refit's figures stay
    full_at, full_ms = state["full_fit_at"], state["full_fit_ms"]
    _finish(store, keys[6], "1")
    await trio.sleep(5)
    await job.step()
    state = store.ladder_state(GAME)
    assert not reports[-1].full and reports[-1].cpu_ms == 125
    assert not state["full"] and state["fit_cpu_ms"] == 125 and state["fit_ms"] == reports[-1].fit_ms
    assert (state["full_fit_at"], state["full_fit_ms"], state["full_fit_cpu_ms"]) == (full_at, full_ms, 250)
    scrape = _scrape(metrics)
    assert scrape.value("arena_ladder_fit_cpu_seconds", game=GAME) == 0.125
    assert scrape.value("arena_ladder_fit_full", game=GAME) == 0
    assert scrape.value("arena_ladder_full_fit_cpu_seconds", game=GAME) == 0.25
    assert scrape.value("arena_ladder_full_fit_seconds", game=GAME) == full_ms / 1000

    cpu.step = 0.5  # 30 s after the last full refit: a full one again
    _finish(store, keys[7], "0")
    await trio.sleep(30)
    await job.step()
    state = store.ladder_state(GAME)
    assert reports[-1].full and state["full"] and state["full_fit_cpu_ms"] == 500 and state["full_fit_at"] > full_at
    assert _scrape(metrics).value("arena_ladder_full_fit_cpu_seconds", game=GAME) == 0.5


async def test_the_rest_after_a_fit_is_a_share_of_its_cpu_time_not_of_its_wait_for_a_core(autojump_clock):
    """A niced fit on a saturated machine takes far more wall time than CPU: the rest that keeps
    the fitter to a share of a core is a multiple of the CPU time (wall time only when no CPU
    time is known) and of the time its ratings took to store (the database's work)."""
    store = Store(":memory:")
    tid, _ = _history(store, 6, 0, pending=3)
    _finish(store, store.pending_matches(tid)[0].match_key, "0")
    job = LadderFitter(store, GAME, FitPolicy(min_interval_s=1.0, rest_ratio=3.0), run_sync=_inline,
                       cpu_clock=FakeCpu(2.0))
    job.clock = lambda: 0.0  # storing took no time
    assert await job.step() == 6.0
    _finish(store, store.pending_matches(tid)[0].match_key, "1")
    job.cpu_clock = FakeCpu(0.1)
    assert await job.step() == 1.0  # at least min_interval_s
    _finish(store, store.pending_matches(tid)[0].match_key, "0")
    job.cpu_clock, job.clock = FakeCpu(1.0), FakeCpu(0.5)  # storing the ratings took 0.5 s
    assert await job.step() == pytest.approx(3.0 * (1.0 + 0.5))


async def test_the_cpu_time_is_read_in_the_thread_that_computes(metrics):
    """By default the fit runs in a worker thread and its CPU time is that thread's
    (``time.thread_time``): the clock must be read there, not in the trio thread."""
    import threading

    store = Store(":memory:")
    tid, _ = _history(store, 4, 0, pending=2)
    _finish(store, f"t{tid}-m0001", "0")
    threads = []

    def clock() -> float:
        threads.append(threading.get_ident())
        return 0.0

    job = LadderFitter(store, GAME, cpu_clock=clock)
    assert LadderFitter(store, GAME).cpu_clock is fitter.time.thread_time  # the default
    await job.step()
    assert len(threads) == 2 and threads[0] == threads[1] != threading.get_ident()
    assert store.ladder_state(GAME)["fit_cpu_ms"] == 0


def test_fit_ladder_stores_a_full_refit(metrics):
    store = Store(":memory:")
    tid, _ = _history(store, 5, 12, pending=0)
    report = fit_ladder(store, GAME)
    state = store.ladder_state(GAME)
    assert report.full and state["full"] and report.cpu_ms is not None and report.cpu_ms >= 0
    assert (state["fit_cpu_ms"], state["full_fit_cpu_ms"], state["full_fit_ms"]) == (report.cpu_ms, report.cpu_ms,
                                                                                        report.fit_ms)
    assert _scrape(metrics).value("arena_ladder_fit_full", game=GAME) == 1


def test_the_servers_watch_exports_the_stored_figures_and_none_made_up(metrics):
    """FitWatch (the server's side of the fitter's process) sets the gauges from ``ladder_state``:
    a fit stored by an older arena (no CPU figure, no full refit) leaves the new gauges unset."""
    store = Store(":memory:")
    tid, _ = _history(store, 4, 3, pending=0)
    watch = FitWatch(store, GAME, with_ratings=False, on_fit=lambda r: seen.append(r))
    seen: list = []
    store.db.execute("INSERT INTO ladder_state(game, results, fitted_results, fitted_at, fit_ms) VALUES "
                     "('piquet', 3, 3, 1000.0, 700)")  # a fit of an arena before revision 0004
    FitWatch(store, "piquet").look()
    scrape = _scrape(metrics)
    assert scrape.value("arena_ladder_fit_seconds", game="piquet") == 0.7
    for name in ("arena_ladder_fit_cpu_seconds", "arena_ladder_fit_full", "arena_ladder_full_fit_seconds",
                 "arena_ladder_full_fit_cpu_seconds"):
        assert scrape.value(name, game="piquet") is None, name
    store.save_ladder_fit(GAME, [], 3, 1500, 900, full=True)
    store.db.execute("UPDATE ladder_state SET fitted_at=fitted_at-10, full_fit_at=full_fit_at-10 WHERE game=?",
                     (GAME,))
    store.save_ladder_fit(GAME, [], 3, 600, 300, full=False)
    watch.look()
    scrape = _scrape(metrics)
    assert scrape.value("arena_ladder_fit_seconds", game=GAME) == 0.6
    assert scrape.value("arena_ladder_fit_cpu_seconds", game=GAME) == 0.3
    assert scrape.value("arena_ladder_fit_full", game=GAME) == 0
    assert scrape.value("arena_ladder_full_fit_seconds", game=GAME) == 1.5
    assert scrape.value("arena_ladder_full_fit_cpu_seconds", game=GAME) == 0.9
    assert [(r.fit_ms, r.cpu_ms, r.full) for r in seen] == [(600, 300, False)]
    assert b"arena_ladder_full_fit_cpu_seconds" in metrics.exposition()  # what /metrics serves


def test_revisions_0004_and_0005_add_the_fit_figures_and_places_to_a_0003_store(db_target: str) -> None:
    store = Store(db_target)
    try:
        tid, _ = _history(store, 4, 6, pending=0)
        fit_ladder(store, GAME)
        before = store.ladder_state(GAME)
    finally:
        store.close()
    conn = connect(db_target)  # the database as revision 0003 left it: no figures of the fit's cost
    try:
        with conn.transaction():
            for column in NEW:
                conn.run(sa.text(f"ALTER TABLE ladder_state DROP COLUMN {column}"))
            conn.run(sa.text("ALTER TABLE ladder DROP COLUMN place"))  # and revision 0005's
            conn.run(sa.text("UPDATE alembic_version SET version_num='0003'"))
    finally:
        conn.close()
    assert "schema revision 0003 upgraded to revision 0005" in upgrade(db_target)
    store = Store(db_target)
    try:
        state = store.ladder_state(GAME)
        kept = ("results", "fitted_results", "fitted_at", "fit_ms")
        assert {k: state[k] for k in kept} == {k: before[k] for k in kept}
        assert all(state[k] is None for k in NEW) and not state["full"]  # nothing made up for the old fit
        store.save_ladder_fit(GAME, [], state["results"], 40, 30, full=True)
        state = store.ladder_state(GAME)
        assert (state["fit_cpu_ms"], state["full_fit_ms"], state["full_fit_cpu_ms"], state["full"]) == (30, 40, 30,
                                                                                                       True)
        assert read_ratings(store, GAME)[2] == {}  # revision 0005's places: none stored yet, the column there
    finally:
        store.close()


def _contest_file(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "contest.toml"
    path.write_text(f'db = "{tmp_path / "x.db"}"\n{line}\n')
    return path


def test_the_contest_key_reaches_the_fitters_command_line(tmp_path, monkeypatch):
    cfg = load_config(_contest_file(tmp_path, "fit_intervals_s = 20"))
    assert cfg.fit_intervals_s == 20.0 and ContestConfig().fit_intervals_s == FitPolicy().intervals_s == 120.0
    policy = Contest.fit_policy(SimpleNamespace(config=cfg))
    assert policy == FitPolicy(intervals_s=20.0)
    started = []
    monkeypatch.setattr(fitter.subprocess, "Popen", lambda cmd, **kw: started.append(cmd))
    store = Store(tmp_path / "x.db")
    try:
        spawn(store, GAME, policy)
    finally:
        store.close()
    (cmd,) = started
    assert cmd[cmd.index("--intervals-s") + 1] == "20.0"
    seen = []
    monkeypatch.setattr(fitter.trio, "run", lambda f, *args: seen.append(args))
    assert fitter.main(cmd[cmd.index("--db"):]) == 0  # the fitter's process reads it back
    assert seen[0][2].intervals_s == 20.0


def test_a_contest_in_memory_fits_with_its_contest_policy(tmp_path):
    contest = Contest(ContestConfig(db=":memory:", logs=str(tmp_path / "logs"), fit_intervals_s=15),
                      store=Store(":memory:"))
    assert isinstance(contest.fitter, LadderFitter) and contest.fitter.policy.intervals_s == 15.0


@pytest.mark.parametrize("line", ["fit_intervals_s = 0", "fit_intervals_s = -5", "fit_intervals_s = nan",
                                  "fit_intervals_s = inf", 'fit_intervals_s = "20"'])
def test_a_bad_fit_interval_is_one_line(tmp_path, line):
    with pytest.raises(UserError) as caught:
        load_config(_contest_file(tmp_path, line))
    message = str(caught.value)
    assert "fit_intervals_s" in message and "\n" not in message and str(tmp_path) in message
    if "nan" in line or "inf" in line or "-" in line or "= 0" in line:
        assert "positive number" in message
    assert math.isfinite(load_config(_contest_file(tmp_path, "fit_intervals_s = 0.5")).fit_intervals_s)


def test_the_fitters_process_does_its_linear_algebra_on_one_thread(tmp_path, monkeypatch):
    """OpenBLAS starts a thread per core; beside saturating matches its threads spin waiting for
    each other (the season bench: a full refit's CPU 4x a quiet machine's). The fitter's
    process gets one thread unless the organiser's environment names a count, and the installed
    numpy honours it (its process has one thread after a product of matrices)."""
    import os
    import subprocess
    import sys

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    started = []
    monkeypatch.setattr(fitter.subprocess, "Popen", lambda cmd, **kw: started.append(kw["env"]))
    store = Store(tmp_path / "x.db")
    try:
        spawn(store, GAME)
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
        spawn(store, GAME)
    finally:
        store.close()
    assert started[0]["OPENBLAS_NUM_THREADS"] == "1" and started[1]["OPENBLAS_NUM_THREADS"] == "4"
    assert all(started[0][k] == v for k, v in fitter.FIT_MEMORY.items())  # its heap kept, ordinary pages
    monkeypatch.undo()  # the real Popen again (the module's attribute is subprocess's own)
    probe = "import os, numpy; a = numpy.ones((400, 400)); a @ a; print(len(os.listdir('/proc/self/task')))"
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **fitter.ONE_BLAS_THREAD},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_the_fitters_process_keeps_its_heap_for_the_next_fit():
    """A full refit of 10,000 bots touches some 350-500 MB: first touches cost system time (0.14
    s a refit in the season bench, 2 MB pages 0.44 s). In the fitter's environment an array freed
    in a thread (the fitter computes in its niced thread) is taken again from the heap without a
    page fault, and numpy asks for no 2 MB pages."""
    import os
    import subprocess
    import sys

    probe = ("import resource, threading, numpy as np\n"
             "def run():\n"
             "    a = np.ones(1 << 24); del a\n"
             "    f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
             "    b = np.ones(1 << 24)\n"
             "    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f)\n"
             "t = threading.Thread(target=run); t.start(); t.join()\n")
    env = {k: v for k, v in os.environ.items() if k not in fitter.FIT_MEMORY}
    faults = [int(subprocess.run([sys.executable, "-c", probe], env={**env, **e}, capture_output=True, text=True,
                                 check=True).stdout) for e in ({}, fitter.FIT_MEMORY)]
    assert faults[0] > 50 and faults[1] < 20  # 128 MB again: by default 64 (2 MB pages) to 32,768 faults


async def test_the_fitters_process_waits_for_a_database_it_cannot_open_yet(autojump_clock, monkeypatch, caplog):
    """The contest starts the fitter's process; PostgreSQL stopped a moment then (a storage fault
    the contest rides out) killed it with a traceback, and the ratings stopped for the rest of the
    contest. It now tries again every POLL_S, saying so once."""
    from arena.errors import DatabaseError

    tries = []

    def flaky(db):  # noqa: ANN001
        tries.append(trio.current_time())
        if len(tries) < 3:
            raise DatabaseError(f"cannot connect to {db}: connection refused")
        return "store"

    monkeypatch.setattr(fitter, "Store", flaky)
    assert await fitter.open_store("postgresql://x") == "store"
    assert len(tries) == 3 and tries[2] - tries[0] == 2 * fitter.POLL_S
    assert caplog.text.count("cannot open the database") == 1


def _niceness() -> int:
    import os
    import threading

    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


async def test_the_niced_thread_is_one_thread_below_the_callers_priority():
    niced = fitter.NicedThread()
    try:
        import threading

        base = _niceness()
        first = await niced.run(lambda: (threading.get_native_id(), _niceness()))
        second = await niced.run(threading.get_native_id)
        assert first == (second, min(base + fitter.NICE, 19)) and second != threading.get_native_id()
        assert _niceness() == base  # the caller's thread keeps its priority
        with pytest.raises(ZeroDivisionError):
            await niced.run(lambda: 1 / 0)
    finally:
        niced.close()


async def test_the_fitters_process_reads_and_computes_niced_and_writes_at_the_servers_priority(tmp_path, monkeypatch,
                                                                                             metrics):
    """A niced fitter holding the store's writer lock while it writes the ratings can make every
    result commit wait for its next turn at a core on a busy machine. Its process reads and
    computes in a niced thread of its own (with a connection opened there) and writes in its
    main thread."""
    seen: dict[str, set[int]] = {"read": set(), "compute": set(), "write": set()}
    real_update, real_compute, real_save = fitter.FitState.update, fitter.compute_fit, Store.save_ladder_fit

    def update(self, store):  # noqa: ANN001
        seen["read"].add(_niceness())
        return real_update(self, store)

    def compute(*args):  # noqa: ANN002
        seen["compute"].add(_niceness())
        return real_compute(*args)

    def save(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        seen["write"].add(_niceness())
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(fitter.FitState, "update", update)
    monkeypatch.setattr(fitter, "compute_fit", compute)
    monkeypatch.setattr(Store, "save_ladder_fit", save)
    db = tmp_path / "x.db"
    store = Store(db)
    try:
        _history(store, 6, 12, pending=0)
        base = _niceness()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fitter._fit_forever, str(db), GAME, FitPolicy())
            with trio.fail_after(60):  # a real thread computes: wait for its first fit
                while store.ladder_state(GAME)["fitted_results"] < 12:
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    finally:
        store.close()
    low = min(base + fitter.NICE, 19)
    assert seen == {"read": {low}, "compute": {low}, "write": {base}}
