"""The persistent ladder's fit, off the result path.

A result's transaction (:meth:`arena.store.sqlite.Store.record_result`) only counts the result:
its unit for the fit (``ladder_units``), who met whom (``pair_counts``), the bots' game counts
and the game's result count (``ladder_state``). The ratings are refitted here, by whoever
schedules the matches (a contest server, a tournament), never inside the store:

* :func:`fit_ladder` reads the units (no writer lock: a plain read), fits them
  (:func:`arena.stats.ladder.refit`, warm-started from the stored ratings) and stores the
  ratings with the result count they cover, in one short write transaction. It is synchronous:
  tests, the end of a tournament and ``arena`` commands call it directly.
* :class:`LadderFitter` runs it in the background: woken by :meth:`LadderFitter.poke` after a
  result (and every :data:`POLL_S` for results committed by other processes, the workers), it
  fits only when results arrived since the last fit, at most one fit at a time, the fit itself
  in a thread (the trio loop and the database stay free meanwhile), and then rests at least
  :attr:`FitPolicy.min_interval_s` and :attr:`FitPolicy.rest_ratio` times the fit's duration
  before the next (debounce: a burst of results costs one fit, and fits take at most about
  ``1 / (1 + rest_ratio)`` of one core however fast results come).

So the ratings shown lag the results by at most one fit and its rest: the web page and ``arena
bots list`` say how old they are (``ladder_state.fitted_at``) and how many results came since.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec
import trio

from arena.metrics import METRICS
from arena.store.health import STORAGE_ERRORS

log = logging.getLogger(__name__)

POLL_S = 2.0
"""Seconds between looks at the result count when nobody pokes (results of other processes)."""


class FitPolicy(msgspec.Struct, frozen=True):
    """How often the background fit runs. ``min_interval_s``: the least rest between two fits
    (seconds); ``rest_ratio``: the rest is also at least this many times the last fit's duration."""

    min_interval_s: float = 1.0
    rest_ratio: float = 2.0


class FitReport(msgspec.Struct, frozen=True):
    """One fit: ``results`` it covers, ``bots`` rated, ``fit_ms`` its computation (ms), and the
    ratings (``arena.stats.rating.Rating``, best first)."""

    results: int
    bots: int
    fit_ms: int
    ratings: list[Any]


def compute_fit(units: dict, start: dict[str, float]) -> tuple[list[Any], int]:
    """The fit's computation alone (no database): ``(ratings best first, ms it took)``. Pure, so
    it may run in a thread. The fit (numpy, scipy) is imported here, not at the CLI's start."""
    from arena.stats.ladder import refit

    t0 = time.perf_counter()
    fitted = refit(units, start=start)
    return fitted.ratings, round((time.perf_counter() - t0) * 1000)


def fit_ladder(store: Any, game: str) -> FitReport:
    """Refit the persistent ladder of ``game`` now and store it (see the module docstring).
    Raises what the store raises (a storage fault: nothing is written then)."""
    results, units, start = store.ladder_fit_input(game)
    ratings, fit_ms = compute_fit(units, start)
    store.save_ladder_fit(game, ratings, results, fit_ms)
    _observe(game, fit_ms, 0, 0.0)
    return FitReport(results=results, bots=len(ratings), fit_ms=fit_ms, ratings=ratings)


def _observe(game: str, fit_ms: int, lag: int, age_s: float) -> None:
    METRICS.fit_seconds.labels(game).set(fit_ms / 1000)
    METRICS.fit_lag.labels(game).set(lag)
    METRICS.fit_age.labels(game).set(age_s)


class LadderFitter:
    """The background fit of one game's ladder (see the module docstring). ``on_fit`` is called
    with each :class:`FitReport` (the contest keeps the ratings it pairs by); ``run_sync``
    (``await run_sync(f, *args)``) runs the computation, by default in a thread. Storage faults are
    logged and retried at the next look: the fit is never the reason a server stops."""

    def __init__(self, store: Any, game: str, policy: FitPolicy = FitPolicy(),
                 on_fit: Callable[[FitReport], None] | None = None, run_sync: Any = None) -> None:
        self.run_sync = run_sync or trio.to_thread.run_sync
        """How the computation runs: in a thread (the default); tests run it inline."""
        self.store = store
        self.game = game
        self.policy = policy
        self.on_fit = on_fit
        self.fits = 0
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
            _observe(self.game, state["fit_ms"] or 0, lag, age)
            if lag <= 0:
                return 0.0
            results, units, start = self.store.ladder_fit_input(self.game)
        except STORAGE_ERRORS as exc:
            log.warning("ladder fit of %s: cannot read the results (%s); trying again later", self.game, exc)
            return self.policy.min_interval_s
        ratings, fit_ms = await self.run_sync(compute_fit, units, start)
        try:
            self.store.save_ladder_fit(self.game, ratings, results, fit_ms)
        except STORAGE_ERRORS as exc:
            log.warning("ladder fit of %s: cannot store the ratings (%s); trying again later", self.game, exc)
            return self.policy.min_interval_s
        self.fits += 1
        _observe(self.game, fit_ms, 0, 0.0)
        if self.on_fit is not None:
            self.on_fit(FitReport(results=results, bots=len(ratings), fit_ms=fit_ms, ratings=ratings))
        return max(self.policy.min_interval_s, self.policy.rest_ratio * fit_ms / 1000)
