"""The persistent ladder's fit, off the result path.

A result's transaction (:meth:`arena.store.sqlite.Store.record_result`) only counts the result:
its unit for the fit (``ladder_units``), who met whom (``pair_counts``), the bots' game counts
and the game's result count (``ladder_state``). The ratings are refitted here, by whoever
schedules the matches (a contest server, a tournament), never inside the store:

* :func:`fit_ladder` reads the whole ladder (no writer lock: a read snapshot), fits it
  (:func:`arena.stats.rating.fit_totals`, robust intervals, warm-started from the stored
  ratings) and stores the ratings with the result count they cover, in one short write
  transaction. It is synchronous: tests, the end of a tournament and ``arena`` commands call it
  directly.
* :class:`LadderFitter` runs it in the background: woken by :meth:`LadderFitter.poke` after a
  result (and every :data:`POLL_S` for results committed by other processes, the workers), it
  fits only when results arrived since the last fit, at most one fit at a time, the fit itself
  in a thread (the trio loop and the database stay free meanwhile), and then rests at least
  :attr:`FitPolicy.min_interval_s` and :attr:`FitPolicy.rest_ratio` times the fit's CPU time
  (and its ratings' storing) before the next (debounce: a burst of results costs one fit, and
  fits take at most about ``1 / (1 + rest_ratio)`` of one core however fast results come).

What a refit costs does not grow with the history (issue 21). The fitter keeps a
:class:`FitState` in memory between fits: the ladder's units summed per pair of bots
(:class:`arena.stats.rating.LadderTotals`), read in full once at its start and then brought up
to date before each fit from the matches finished since its last read, and nothing else
(:mod:`arena.store.fit_input`); the fit's work is vectorised over the bots and the pairs that
met. Beyond :data:`arena.stats.information.EXACT_BOTS` bots the intervals (exact by blocks on a
ladder's narrow layout, :mod:`arena.stats.blocks`; about twice the ratings' cost there), are
refitted only every :attr:`FitPolicy.intervals_s` seconds (the
fits between keep each bot's last interval; a newcomer stays provisional until the next). On
the 10,000-bot season store (10 million results, a million pairs; 2-core machine shared with
other work, load 7-8): the first load 9.4-10.5 s of CPU (15-21 s wall) and 500 MB at the peak, the
fitter's process then holding 200-400 MB; a refit after 100 new results read 200 rows in 1-80 ms
and fitted the ratings in 0.8-1.1 s of CPU (1.3-3 s wall at that load), storing them in 0.04-0.2
s; a refit with the intervals 3.1-4.1 s of CPU (docs/contests.md §12).

Each fit stores, with the ratings, its wall time and its CPU time (the computation's: see
:class:`LadderFitter`'s ``cpu_clock``) and whether it computed the intervals; a full refit's
figures are kept apart too (``ladder_state``: revision 0004), so that the cost of a full refit is
known even while the fits between refit the ratings alone, and even on a busy machine, where
the niced fitter's wall time measures the machine's load more than the fit (gauges
``arena_ladder_fit_cpu_seconds``, ``arena_ladder_full_fit_seconds``,
``arena_ladder_full_fit_cpu_seconds``: :mod:`arena.metrics`).

So the ratings shown lag the results by at most one fit and its rest (the intervals of a large
field by at most :attr:`FitPolicy.intervals_s` more): the web page and ``arena bots list`` say
how old they are (``ladder_state.fitted_at``) and how many results came since.

A contest runs the fitter in a process of its own (:func:`spawn`, ``python -m
arena.schedule.fitter --db DB --game G``), which opens the store itself: the fit's Python work
never holds the server's interpreter lock, so neither the matches nor the pairing decisions wait
for it (measured: with the fit in a thread of the server, a 1,000-bot ladder's refits made the
pairing decision's p99 three times longer and the results per second 20% fewer). The server only
watches ``ladder_state`` (:class:`FitWatch`) for the metrics and the ratings it pairs by. That
process reads the results and computes in a niced thread (:class:`NicedThread`) and writes the
ratings from its main thread, at the server's priority, because every result commit waits for the
writer lock it holds meanwhile. A store in memory (tests) is fitted in a thread of its own process.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
import trio

from arena.errors import DatabaseError
from arena.metrics import METRICS
from arena.stats.information import EXACT_BOTS
from arena.stats.rating import LadderTotals, Rating, fit_totals, layout_places, stored_layout
from arena.store.fit_input import FitCursor, Units, read_new, read_ratings, read_totals
from arena.store.health import STORAGE_ERRORS
from arena.store.sqlite import Store

log = logging.getLogger(__name__)

POLL_S = 2.0
"""Seconds between looks at the result count when nobody pokes (results of other processes)."""


class FitPolicy(msgspec.Struct, frozen=True):
    """How often the background fit runs. ``min_interval_s``: the least rest between two fits
    (seconds); ``rest_ratio``: the rest is also at least this many times the last fit's cost: its
    CPU time (its wall time where the CPU time is unknown) and the time its ratings took to store
    (the database's work for the fitter)."""

    min_interval_s: float = 1.0
    rest_ratio: float = 7.0
    """7: the fit takes at most an eighth of one core, however fast results come; it also
    computes at a lower priority (:data:`NICE`), so on a busy machine the matches come first and
    the ratings lag rather than the results. A fitter's work is taken from the matches on a
    saturated machine whatever its priority: with 3 (a quarter of a core) the PostgreSQL season
    bench's full store made 0.73-0.85x the empty store's results per second while its intervals
    were refitted every 20 s (a full refit: 3.3-4.3 s of CPU), and 0.97x with none refitted in
    the window. The rest follows the CPU time, not the wall time: a niced fit on a saturated
    machine waits for a core most of its wall time (the season bench: 32 s of wall for 4.6 s of
    CPU), and resting a multiple of that refitted five times less often than the share allows."""
    intervals_s: float = 120.0
    """(A contest's ``fit_intervals_s``.) Beyond :data:`arena.stats.information.EXACT_BOTS` bots, the
    intervals are computed again only by a fit that starts this many seconds or more after the last
    one that computed them;
    the fits between refit the ratings alone and keep each bot's last interval (a bot without one
    yet, a newcomer, is provisional meanwhile). On the 10,000-bot season the intervals (exact, by
    blocks: :mod:`arena.stats.blocks`) cost 1.4-1.6 s of CPU after 0.45-0.6 s for the ratings on a
    quiet machine (0.6-1.0 s since the blocks work in single precision), and up to twice that
    beside a saturating contest, so a full refit is not made at every fit; a season's intervals
    narrow slowly (docs/contests.md)."""


class FitReport(msgspec.Struct, frozen=True):
    """One fit: ``results`` it covers, ``bots`` rated, ``fit_ms`` its computation (wall ms), and
    the ratings (``arena.stats.rating.Rating``, best first); ``cpu_ms``, the computation's CPU
    time (ms; None: not known, a fit by an older arena) and ``full``, whether it computed the
    intervals too (a full refit) or the ratings alone."""

    results: int
    bots: int
    fit_ms: int
    ratings: list[Any]
    cpu_ms: int | None = None
    full: bool = True


def compute_fit(totals: LadderTotals, start: Mapping[str, float] | None, intervals: bool = True,
                known: Mapping[str, float] | None = None) -> tuple[list[Any], int]:
    """The fit's computation alone (no database): ``(ratings best first, ms it took)`` of the
    ladder's ``totals`` (:func:`arena.stats.rating.fit_totals`, robust intervals), warm-started
    from ``start`` (Elo by bot). ``intervals`` False: the ratings alone, each bot's ``ci95`` taken
    from ``known`` (Elo by bot; ``inf``, no interval yet, for a bot it does not name). Pure but
    for reading ``totals``, so it may run in a thread while nothing updates them."""
    t0 = time.perf_counter()
    ratings = fit_totals(totals, "robust", start, "auto" if intervals else "none").ratings
    if not intervals:
        known = known or {}
        for r in ratings:
            r.ci95 = known.get(r.name, math.inf)
    return ratings, round((time.perf_counter() - t0) * 1000)


class FitState:
    """What the fitter of ``game`` keeps in memory between fits: the ladder's units summed per
    pair of bots (``totals``, :class:`arena.stats.rating.LadderTotals`: about 72 bytes per pair),
    where its last read stopped (``cursor``, :class:`arena.store.fit_input.FitCursor`), the last
    ratings (``elo``, the next fit's warm start) and intervals (``ci95``, Elo by bot) and when
    those were computed (``intervals_at``, the caller's clock). ``loads``: full reads so far;
    ``rows_read``: the rows the last :meth:`update` read after the first load (0 for a load)."""

    def __init__(self, game: str) -> None:
        self.game = game
        self.totals = LadderTotals()
        self.cursor: FitCursor | None = None
        self.elo: dict[str, float] | None = None
        self.ci95: dict[str, float] = {}
        self.intervals_at: float | None = None
        self.loads = 0
        self.rows_read = 0

    def update(self, store: Any) -> None:
        """Bring the totals up to the store's results: the whole ladder at the first call (and
        whenever the new rows do not account for the results counted since: logged), only the
        matches finished since the last read after that (:mod:`arena.store.fit_input`). The
        first call also takes the order the last fit stored (``ladder.place``) as the earlier
        layout its first fit tries (:func:`arena.stats.rating.stored_layout`); a read of the
        whole ladder again keeps the layout in memory. Raises what the store raises, the state
        unchanged."""
        if self.cursor is not None:
            got = read_new(store, self.game, self.cursor)
            if got is not None:
                self.cursor, new = got
                self.rows_read = new.rows_read
                u = new.units
                if u.a.size:
                    self.totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
                return
            log.warning("ladder fit of %s: the matches read do not account for the results counted; reading the "
                        "whole ladder again", self.game)
        totals = LadderTotals()

        def add(u: Units | None) -> None:
            nonlocal totals
            if u is None:  # the read starts over (arena.store.fit_input.read_totals)
                totals = LadderTotals()
                return
            totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)

        earlier = self.totals.layout  # the last fit's layout survives a read of the whole ladder
        cursor = read_totals(store, self.game, add)
        if self.elo is None:
            self.elo, self.ci95, places = read_ratings(store, self.game)
            if places and earlier is None:  # a fitter that starts: the order the last fitter stored
                earlier = stored_layout(places)
        totals.layout = earlier
        self.totals, self.cursor, self.rows_read = totals, cursor, 0
        self.loads += 1

    def intervals_due(self, now: float, every_s: float) -> bool:
        """Whether the next fit computes the intervals: always for a field of at most
        :data:`arena.stats.information.EXACT_BOTS` bots (exact and cheap), beyond only ``every_s``
        seconds or more after the last fit that computed them (``now``: the same clock as
        :meth:`fitted`'s). The intervals stored by the fitter before this one count as computed
        at the first look (a restarted contest does not spend its first seconds on them); with
        none stored, the first fit computes them."""
        if len(self.totals.names) <= EXACT_BOTS:
            return True
        if self.intervals_at is None and self.ci95:
            self.intervals_at = now
        return self.intervals_at is None or now - self.intervals_at >= every_s

    def fitted(self, ratings: list[Any], intervals: bool, now: float) -> None:
        """Keep a fit's ratings (and its intervals, if it computed them, at ``now``)."""
        self.elo = {r.name: r.elo for r in ratings}
        if intervals:
            self.ci95 = {r.name: r.ci95 for r in ratings}
            self.intervals_at = now

    def fit(self, intervals: bool = True) -> tuple[list[Any], int]:
        """:func:`compute_fit` of the state as it is."""
        return compute_fit(self.totals, self.elo, intervals, self.ci95)


def measured(clock: Callable[[], float], f: Callable[..., tuple[list[Any], int]], *args: Any
             ) -> tuple[list[Any], int, int]:
    """``f(*args)`` (:func:`compute_fit`'s ``(ratings, wall ms)``) and the CPU time it took by
    ``clock`` (ms): ``(ratings, wall ms, CPU ms)``. Called in the thread that computes, since
    ``time.thread_time`` counts only the thread that reads it."""
    c0 = clock()
    ratings, fit_ms = f(*args)
    return ratings, fit_ms, round((clock() - c0) * 1000)


def fit_ladder(store: Any, game: str) -> FitReport:
    """Refit the persistent ladder of ``game`` now, with its intervals, and store it (see the
    module docstring): a one-off, so it reads the whole ladder (summed per pair, not kept).
    Raises what the store raises (a storage fault: nothing is written then)."""
    state = FitState(game)
    state.update(store)
    assert state.cursor is not None
    ratings, fit_ms, cpu_ms = measured(time.thread_time, state.fit)
    store.save_ladder_fit(game, ratings, state.cursor.results, fit_ms, cpu_ms, full=True,
                          places=layout_places(state.totals))
    report = FitReport(results=state.cursor.results, bots=len(ratings), fit_ms=fit_ms, ratings=ratings,
                       cpu_ms=cpu_ms, full=True)
    _observe(game, _fitted_now(report), 0, 0.0)
    return report


def _fitted_now(report: FitReport) -> dict[str, Any]:
    """The figures of a fit just made as :meth:`arena.store.results.Results.ladder_state` gives them."""
    fit = {"fit_ms": report.fit_ms, "fit_cpu_ms": report.cpu_ms, "full": report.full}
    if report.full:
        fit |= {"full_fit_ms": report.fit_ms, "full_fit_cpu_ms": report.cpu_ms}
    return fit


def _observe(game: str, state: Mapping[str, Any], lag: int, age_s: float) -> None:
    """Set the fit's gauges of ``game`` from ``state`` (:meth:`~arena.store.results.Results.ladder_state`'s
    figures, ms): the last fit's wall time (0 when unknown, as before), and its CPU time, whether
    it was a full refit and the last full refit's wall and CPU time where known (a fit by an
    arena before revision 0004, or a seeded store, has none: those gauges are left unset)."""
    METRICS.fit_seconds.labels(game).set((state.get("fit_ms") or 0) / 1000)
    if state.get("fit_cpu_ms") is not None:
        METRICS.fit_cpu.labels(game).set(state["fit_cpu_ms"] / 1000)
        METRICS.fit_full.labels(game).set(1 if state.get("full") else 0)
    if state.get("full_fit_ms") is not None:
        METRICS.full_fit_seconds.labels(game).set(state["full_fit_ms"] / 1000)
    if state.get("full_fit_cpu_ms") is not None:
        METRICS.full_fit_cpu.labels(game).set(state["full_fit_cpu_ms"] / 1000)
    METRICS.fit_lag.labels(game).set(lag)
    METRICS.fit_age.labels(game).set(age_s)


class LadderFitter:
    """The background fit of one game's ladder (see the module docstring). ``on_fit`` is called
    with each :class:`FitReport` (the contest keeps the ratings it pairs by); ``run_sync``
    (``await run_sync(f, *args)``) runs the computation, by default in a thread. ``cpu_clock``
    (seconds) measures the computation's CPU time, read in the thread that computes: by default
    ``time.thread_time``, that thread's alone (in a thread of a server, the process's CPU time
    would count the server's work too); the fitter's own process (:func:`spawn`) computes in its
    niced thread while its main thread waits, so it takes ``time.process_time``, which also
    counts what numpy's BLAS may compute in threads of its own. Storage faults are logged and
    retried at the next look: the fit is never the reason a server stops. ``reader``: a store
    the results are read from inside ``run_sync`` (the fitter's own process: a second connection
    of its niced thread, :class:`NicedThread`); None: ``store``, read in the caller's thread."""

    def __init__(self, store: Any, game: str, policy: FitPolicy = FitPolicy(),
                 on_fit: Callable[[FitReport], None] | None = None, run_sync: Any = None,
                 cpu_clock: Callable[[], float] = time.thread_time, reader: Any = None) -> None:
        self.run_sync = run_sync or trio.to_thread.run_sync
        """How the computation runs: in a thread (the default); tests run it inline."""
        self.cpu_clock = cpu_clock
        self.clock: Callable[[], float] = time.perf_counter
        """The wall clock (seconds) that times the storing of a fit's ratings, part of its cost."""
        self.store = store
        self.reader = reader
        self.game = game
        self.policy = policy
        self.on_fit = on_fit
        self.fits = 0
        self.state = FitState(game)
        """What the fitter keeps between fits (:class:`FitState`)."""
        self._wake = trio.Event()

    def poke(self) -> None:
        """A result was recorded: fit soon (after the current rest)."""
        self._wake.set()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Fit whenever results arrived since the last fit, until cancelled."""
        task_status.started()
        while True:
            rest = await self.step()
            await trio.sleep(rest)
            with trio.move_on_after(POLL_S):
                await self._wake.wait()
            self._wake = trio.Event()

    async def step(self) -> float:
        """One look: fit if results arrived since the last fit. Returns the rest (seconds) owed
        before the next look."""
        try:
            state = self.store.ladder_state(self.game)
            lag = state["results"] - state["fitted_results"]
            age = 0.0 if state["fitted_at"] is None else max(time.time() - state["fitted_at"], 0.0)
            _observe(self.game, state, lag, age)
            if lag <= 0:
                return 0.0
            if self.reader is None:
                self.state.update(self.store)
            else:
                await self.run_sync(self.state.update, self.reader)
        except STORAGE_ERRORS as exc:
            log.warning("ladder fit of %s: cannot read the results (%s); trying again later", self.game, exc)
            return self.policy.min_interval_s
        assert self.state.cursor is not None
        results = self.state.cursor.results
        now = trio.current_time()
        intervals = self.state.intervals_due(now, self.policy.intervals_s)
        ratings, fit_ms, cpu_ms = await self.run_sync(measured, self.cpu_clock, compute_fit, self.state.totals,
                                                      self.state.elo, intervals, self.state.ci95)
        self.state.fitted(ratings, intervals, now)
        saving = self.clock()
        try:
            self.store.save_ladder_fit(self.game, ratings, results, fit_ms, cpu_ms, full=intervals,
                                       places=layout_places(self.state.totals))
            saved_s = self.clock() - saving  # the database's work for the fit: part of its cost
        except STORAGE_ERRORS as exc:
            log.warning("ladder fit of %s: cannot store the ratings (%s); trying again later", self.game, exc)
            return self.policy.min_interval_s
        self.fits += 1
        report = FitReport(results=results, bots=len(ratings), fit_ms=fit_ms, ratings=ratings, cpu_ms=cpu_ms,
                           full=intervals)
        _observe(self.game, _fitted_now(report), 0, 0.0)  # ratings alone: the full refit's gauges stay
        if self.on_fit is not None:
            self.on_fit(report)
        spent_s = (fit_ms if cpu_ms is None else cpu_ms) / 1000  # a CPU share: the CPU time, not the wait for a core
        return max(self.policy.min_interval_s, self.policy.rest_ratio * (spent_s + saved_s))


class FitWatch:
    """The server's side of a fitter running in its own process: every :data:`POLL_S` it reads
    ``ladder_state`` (one row) for the metrics, and after each new fit calls ``on_fit`` with a
    :class:`FitReport` whose ratings are read back from the store (only when ``on_fit`` needs
    them: ``with_ratings``)."""

    def __init__(self, store: Any, game: str, on_fit: Callable[[FitReport], None] | None = None,
                 with_ratings: bool = True) -> None:
        self.store = store
        self.game = game
        self.on_fit = on_fit
        self.with_ratings = with_ratings
        self.seen: float | None = None

    def poke(self) -> None:
        """A result was recorded (the fitter process sees it itself)."""

    def look(self) -> None:
        """One look at ``ladder_state``; storage faults are left to the next look."""
        try:
            state = self.store.ladder_state(self.game)
        except STORAGE_ERRORS:
            return
        age = 0.0 if state["fitted_at"] is None else max(time.time() - state["fitted_at"], 0.0)
        _observe(self.game, state, state["results"] - state["fitted_results"], age)
        if state["fitted_at"] is None or state["fitted_at"] == self.seen:
            return
        self.seen = state["fitted_at"]
        if self.on_fit is None:
            return
        ratings = []
        if self.with_ratings:
            try:
                ratings = [Rating(name=bot, elo=elo, ci95=ci95, games=games, wins=0, losses=0, draws=0)
                           for bot, elo, ci95, games in self.store.ladder_intervals(self.game)]
            except STORAGE_ERRORS:
                return
        self.on_fit(FitReport(results=state["fitted_results"], bots=len(ratings), fit_ms=state["fit_ms"] or 0,
                              ratings=ratings, cpu_ms=state["fit_cpu_ms"], full=state["full"]))

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Look every :data:`POLL_S` until cancelled."""
        task_status.started()
        while True:
            self.look()
            await trio.sleep(POLL_S)


NICE = 10
"""The niceness of the fitter's reading and computing thread (:class:`NicedThread`), and of the
retention's process: below the server and the bots, so that on a busy machine the matches come
first and the ratings lag. Niceness alone did not keep the full season store's results per second
up (0.75-0.77x the empty store's, niced or not): what did was what the fitter holds, not its
priority. Its first load no longer keeps one snapshot open on PostgreSQL (old row versions of
every hot row kept alive: :func:`arena.store.fit_input.read_totals`), and a fit's ratings are
stored 1,000 bots per transaction (:meth:`arena.store.results.Results.save_ladder_fit`), so the
writer lock each commit waits for is held briefly, and by a thread at the server's priority."""


ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The fitter process's linear algebra on one thread (unless the organiser's environment says
otherwise): OpenBLAS starts a thread per core, which only compete with the matches for the cores
the fitter yields to. On the SQLite season bench, with OpenBLAS's threads the full store's
results per second were 0.72x the empty store's; with one thread 0.91-0.94x in the two runs
since (the full refit's CPU beside the contest stayed 11.3-11.5 s: that gap has another cause)."""

FIT_MEMORY = {"NUMPY_MADVISE_HUGEPAGE": "0", "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
              "MALLOC_TRIM_THRESHOLD_": str(1 << 34), "MALLOC_ARENA_MAX": "1"}
"""The fitter process's memory (unless the organiser's environment says otherwise): a fit's
arrays come from glibc's one heap (``MALLOC_ARENA_MAX``: its niced thread would otherwise get an
arena of its own, whose heaps glibc gives back to the system between fits whatever the trim
threshold), are kept there for the next fit rather than given back (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``), in ordinary pages rather than the 2 MB pages numpy asks the kernel
for (``NUMPY_MADVISE_HUGEPAGE``: each first touch of one zeroes 2 MB). A full refit of the
season's 10,000 bots touches some 350-500 MB (its block factors and the long pairs' columns): in
the season bench each refit after the first spent 0.14 s of system time on page faults and each
ratings-only fit 0.27 s, on a machine the contest saturates (0.02-0.08 s on a quiet one); with
these, none after the first refit. The price: the process keeps the memory of its largest fit
between fits (about 790 MB at 10,000 bots)."""


def niced_child() -> None:
    """A ``preexec_fn`` (run in the child between fork and exec): :func:`dies_with_parent`, and
    the child runs at :data:`NICE` (the retention's process, :mod:`arena.schedule.retention`)."""
    dies_with_parent()
    os.nice(NICE)


def dies_with_parent() -> None:
    """A ``preexec_fn``: the child is killed when the thread that forked it ends
    (``PR_SET_PDEATHSIG``). The fitter's process starts so, at the server's priority: it nices
    its own reading and computing thread (:class:`NicedThread`)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def lower_priority() -> None:
    """Give the calling thread niceness :data:`NICE` (or keep a higher one). On Linux a thread's
    niceness is its own (setpriority(2), ``PRIO_PROCESS`` with a thread id); lowering a priority
    needs no privilege. Raises ``OSError`` where the system refuses."""
    me = threading.get_native_id()
    os.setpriority(os.PRIO_PROCESS, me, max(os.getpriority(os.PRIO_PROCESS, me), NICE))


class NicedThread:
    """The one thread of the fitter's own process that reads the results and computes the fits,
    at :data:`NICE` (:func:`lower_priority`); the process's main thread, at the server's priority,
    stores the ratings. Every result commit waits for the store's writer lock while the ratings
    are written, and a niced holder can make them wait, on a busy machine, for its next turn at a
    core (a priority inversion). Measured on the PostgreSQL season bench it was not what made the
    full store's commits slower (their p99 stayed 8.9 ms against the empty store's 5.0 ms with
    this split), but a lock every commit waits for is held at the server's priority only. One
    thread for every call, so a connection opened in it (SQLite's belong to their thread) is used
    there only."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-fit", initializer=lower_priority)

    async def run(self, f: Callable[..., Any], *args: Any) -> Any:
        """``f(*args)`` in the niced thread; its result, or what it raised. Cancelled, the
        caller stops waiting (the computation ends by itself: nothing is half-written)."""
        future = self._pool.submit(f, *args)
        return await trio.to_thread.run_sync(future.result, abandon_on_cancel=True)

    def close(self, last: Callable[[], Any] | None = None) -> None:
        """Run ``last`` (closing the thread's connection) after what is under way, then let the
        thread end; does not wait."""
        if last is not None:
            self._pool.submit(last)
        self._pool.shutdown(wait=False)


def spawn(store: Any, game: str, policy: FitPolicy = FitPolicy()) -> subprocess.Popen[bytes]:
    """Start the fitter of ``game`` in a process of its own on ``store``'s database (its
    password, if any, in the child's environment, never on its command line); it dies with
    its parent. Stop it with SIGTERM."""
    db, env = store.child_db()
    cmd = [sys.executable, "-m", "arena.schedule.fitter", "--db", db, "--game", game,
           "--min-interval-s", str(policy.min_interval_s), "--rest-ratio", str(policy.rest_ratio),
           "--intervals-s", str(policy.intervals_s)]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env={**ONE_BLAS_THREAD, **FIT_MEMORY, **os.environ, **env},
                            preexec_fn=dies_with_parent)


def stop_process(proc: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """Stop a fitter started by :func:`spawn`: SIGTERM, then SIGKILL after ``grace_s`` (a fit
    under way is computed in memory and written in one transaction: nothing half-written)."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _serve(db: str, game: str, policy: FitPolicy) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_fit_forever, db, game, policy)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


async def _fit_forever(db: str, game: str, policy: FitPolicy) -> None:
    store = await open_store(db)  # the main thread's: the ratings are written at the server's priority
    niced = NicedThread()
    reader = None
    try:
        reader = await open_store(db, niced.run)  # the niced thread's: the results are read there
        await LadderFitter(store, game, policy, run_sync=niced.run, cpu_clock=time.process_time,
                           reader=reader).run()
    finally:
        niced.close(None if reader is None else reader.close)
        store.close()


async def open_store(db: str, run: Callable[..., Any] | None = None) -> Any:
    """The fitter process's store of ``db``, opened by ``await run(Store, db)`` if given (in the
    thread that will use it), else here; while the database cannot be opened (PostgreSQL
    stopped a moment as the contest started the fitter), tried again every :data:`POLL_S`, said
    once in the log: the fitter outlives a storage fault as the contest does, never dies of it."""
    said = False
    while True:
        try:
            return Store(db) if run is None else await run(Store, db)
        except (DatabaseError, *STORAGE_ERRORS) as exc:
            if not said:
                log.warning("ladder fit: cannot open the database (%s); trying again every %g s", exc, POLL_S)
                said = True
        await trio.sleep(POLL_S)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.schedule.fitter --db DB --game G``: fit the ladder of ``G`` in the
    background until SIGTERM (what :func:`spawn` runs)."""
    p = argparse.ArgumentParser(prog="python -m arena.schedule.fitter", description=__doc__.split("\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--game", required=True)
    p.add_argument("--min-interval-s", type=float, default=FitPolicy().min_interval_s)
    p.add_argument("--rest-ratio", type=float, default=FitPolicy().rest_ratio)
    p.add_argument("--intervals-s", type=float, default=FitPolicy().intervals_s)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="fitter: %(message)s")
    trio.run(_serve, args.db, args.game, FitPolicy(args.min_interval_s, args.rest_ratio, args.intervals_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
