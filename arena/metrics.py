"""Prometheus metrics of the arena, served at ``/metrics`` by ``arena serve``.

All metrics live in one :class:`Metrics` object with its own registry (so tests can make a
fresh one); the process-wide instance is :data:`METRICS`. Names and labels:

================================== ========= ===================================================
metric                             type      labels / meaning
================================== ========= ===================================================
arena_matches_in_play              gauge     game
arena_matches_finished_total       counter   game, result (win/draw/aborted), reason (target, forfeit_timeout, ...)
arena_decisions_total              counter   game: decisions answered by bots
arena_decision_latency_seconds     histogram (no label) the time charged per decision (protocol.md §10.4), all bots
arena_timeouts_total               counter   bot (bounded: see below)
arena_illegal_actions_total        counter   bot (bounded), code (illegal_action / wrong_decision)
arena_protocol_errors_total        counter   code (bad_json, line_too_long, ...)
arena_connections                  gauge     role (bot / spectator)
arena_spectators                   gauge     spectators subscribed to at least one match
arena_scheduler_queue_depth        gauge     matches waiting to be played
arena_bot_state                    gauge     bot (bounded), state (running/backoff/disabled/stopped): 1 for its state
arena_bot_failures                 gauge     bot (bounded): a launched bot's failures in a row (supervisor)
arena_bot_connected                gauge     bot (bounded): 1 while connected
arena_auth_checks_total            counter   verdict (ok / failed / rate_limited): token checks
arena_connections_refused_total    counter   code (too_many_connections, server_full, idle_timeout, ...)
arena_storage_paused               gauge     1 while scheduling is paused by a storage fault
arena_storage_errors_total         counter   what (match log, database, ...): storage writes that failed
arena_result_commit_seconds        histogram (no label) one result's write transaction (Store.record_result)
arena_pairing_decision_seconds     histogram (no label) one pairing decision of the contest scheduler
arena_ladder_fit_seconds           gauge     game: how long the last background fit of the ladder took (wall)
arena_ladder_fit_cpu_seconds       gauge     game: the CPU time of the last fit's computation
arena_ladder_fit_full              gauge     game: 1 if the last fit computed the intervals too (a full refit), else 0
arena_ladder_full_fit_seconds      gauge     game: how long the last full refit (ratings and intervals) took (wall)
arena_ladder_full_fit_cpu_seconds  gauge     game: the CPU time of the last full refit's computation
arena_ladder_fit_age_seconds       gauge     game: age of the ratings shown (now - the last fit's time)
arena_ladder_fit_lag_results       gauge     game: results recorded since the last fit
================================== ========= ===================================================

No metric has a child per bot for every bot: the decision-latency histogram is one series for
all bots (a child per bot held 15 buckets for every bot that ever played: tens of thousands of
objects for the garbage collector to walk, and as many series to scrape).

**The per-bot series are bounded** (:class:`BotSeries`): each metric with a ``bot`` label keeps a
series for at most :data:`MAX_BOT_SERIES` bots, and folds the others into one series labelled
``bot="(other)"`` (a label no bot can have: names never hold parentheses, :mod:`arena.names`), so
a season of 10,000 bots scrapes in well under 1 MB:

* the counters (``arena_timeouts_total``, ``arena_illegal_actions_total``) keep the bots that
  offended most recently; when a new offender needs a place, the bot least recently counted
  gives up its series and its count is added to ``(other)``. The sum over ``bot`` stays the
  total, and ``(other)`` only grows; a bot counted again later starts a new series from zero
  (Prometheus reads that as a counter reset). Each bot's own full count is in the database
  (its matches' ``reason`` and ``faulty_seat``, its author's page);
* the gauges (``arena_bot_state``, ``arena_bot_failures``, ``arena_bot_connected``) keep the bots
  whose value changed most recently (a launch, a failure, a connection, a disconnection); the
  others' values are summed in ``(other)``: ``arena_bot_connected{bot="(other)"}`` is how many of
  them are connected, ``arena_bot_state{bot="(other)",state="running"}`` how many of them run,
  ``arena_bot_failures{bot="(other)"}`` their failures in a row added up. ``arena bots list``
  and the web page show every bot's own state.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterator
from time import monotonic as _monotonic

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
"""Decision latency buckets in seconds (sub-millisecond bots to the 2 s default limit)."""


STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
"""Buckets in seconds of the scheduler's and the store's own steps (a pairing decision, a result's commit)."""


MAX_BOT_SERIES = 100
"""Most bots with a series of their own in each metric that has a ``bot`` label (see the module
docstring); the rest are folded into ``bot="(other)"``."""

OTHER_BOT = "(other)"
"""The ``bot`` label of the series that holds the bots without a series of their own."""


class BotSeries:
    """A counter or gauge with a ``bot`` label (first) and maybe others, that keeps a series for
    at most ``bound`` bots and folds the rest into ``bot="(other)"`` (the module docstring says
    which bots keep theirs). Used as prometheus's own: ``metric.labels(bot, *others).inc()`` (a
    counter) or ``.set(value)`` (a gauge). Memory: one small dict per bot ever seen by a gauge (its
    current values, for the sums), one per shown bot for a counter; never a series per bot."""

    def __init__(self, name: str, documentation: str, labelnames: list[str], kind: str, bound: int = MAX_BOT_SERIES,
                 registry: CollectorRegistry | None = None) -> None:
        if labelnames[:1] != ["bot"] or kind not in ("counter", "gauge") or bound < 1:
            raise ValueError("a BotSeries is a counter or gauge whose first label is bot, with a bound of 1 or more")
        self.name, self.documentation, self.labelnames, self.kind, self.bound = (
            name, documentation, list(labelnames), kind, bound)
        self._shown: OrderedDict[str, dict[tuple[str, ...], float]] = OrderedDict()  # least recent first
        self._hidden: dict[str, dict[tuple[str, ...], float]] = {}  # a gauge's folded bots: their values
        self._other: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def labels(self, bot: str, *others: str) -> _BotChild:
        """The series of ``bot`` (and the other labels' values), to ``inc`` or ``set``."""
        if len(others) != len(self.labelnames) - 1:
            raise ValueError(f"{self.name} takes the labels {self.labelnames}")
        return _BotChild(self, str(bot), tuple(str(o) for o in others))

    def shown(self) -> list[str]:
        """The bots that have a series of their own now, least recently touched first."""
        with self._lock:
            return list(self._shown)

    def _admit(self, bot: str) -> dict[tuple[str, ...], float]:
        """A series for ``bot``: the least recently touched bot gives its place up when full."""
        if len(self._shown) >= self.bound:
            old, values = self._shown.popitem(last=False)
            for key, v in values.items():
                self._other[key] = self._other.get(key, 0.0) + v
            if self.kind == "gauge":
                self._hidden[old] = values
        values = self._shown[bot] = {}
        return values

    def _inc(self, bot: str, key: tuple[str, ...], amount: float) -> None:
        if self.kind != "counter":
            raise ValueError(f"{self.name} is a gauge: set it")
        if amount < 0:
            raise ValueError("a counter only goes up")
        with self._lock:
            values = self._shown.get(bot)
            if values is None:
                values = self._admit(bot)
            else:
                self._shown.move_to_end(bot)
            values[key] = values.get(key, 0.0) + amount

    def _set(self, bot: str, key: tuple[str, ...], value: float) -> None:
        if self.kind != "gauge":
            raise ValueError(f"{self.name} is a counter: inc it")
        value = float(value)
        with self._lock:
            values = self._shown.get(bot)
            if values is not None:
                if values.get(key) != value:
                    self._shown.move_to_end(bot)
                values[key] = value
                return
            hidden = self._hidden.get(bot)
            if hidden is not None:
                if hidden.get(key) == value:
                    return  # unchanged: stays in (other)
                del self._hidden[bot]
                for k, v in hidden.items():
                    self._other[k] -= v
            values = self._admit(bot)
            values.update(hidden or {})
            values[key] = value

    def collect(self) -> Iterator[Metric]:
        """The family, for the registry: a sample per shown bot and label values, then ``(other)``'s."""
        family = (CounterMetricFamily if self.kind == "counter" else GaugeMetricFamily)(
            self.name, self.documentation, labels=self.labelnames)
        with self._lock:
            for bot, values in self._shown.items():
                for key, v in values.items():
                    family.add_metric([bot, *key], v)
            for key, v in self._other.items():
                family.add_metric([OTHER_BOT, *key], v)
        yield family

    def describe(self) -> list[Metric]:
        """The family without samples (the registry checks names with it)."""
        return [(CounterMetricFamily if self.kind == "counter" else GaugeMetricFamily)(
            self.name, self.documentation, labels=self.labelnames)]


class _BotChild:
    """One bot's series of a :class:`BotSeries` (what ``labels`` returns)."""

    __slots__ = ("_family", "_bot", "_key")

    def __init__(self, family: BotSeries, bot: str, key: tuple[str, ...]) -> None:
        self._family, self._bot, self._key = family, bot, key

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (not negative) to a counter."""
        self._family._inc(self._bot, self._key, amount)

    def set(self, value: float) -> None:
        """Set a gauge."""
        self._family._set(self._bot, self._key, value)


class DecisionLatency(Histogram):
    """The decision-latency histogram: one series for all bots, no label (a per-bot label
    would add 15 bucket children per bot, kept alive for the collector)."""

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        """Observe ``amount`` seconds: what :meth:`Histogram.observe` does, for one decision
        each, with the bucket found by bisection rather than by trying the buckets in turn."""
        if exemplar is not None or amount != amount:  # an exemplar or a NaN: the general path
            super().observe(amount, exemplar)
            return
        self._sum.inc(amount)
        self._buckets[bisect_left(self._upper_bounds, amount)].inc(1)


class DecisionTally:
    """One match's decisions for ``arena_decisions_total`` (``counter``, the game's child) and
    the decision-latency histogram (``histogram``), counted here and added to them in batches:
    every :data:`FLUSH_EVERY` decisions, at the first decision :data:`FLUSH_S` seconds after
    the last batch, and at :meth:`flush` (the referee's, at the match's end). A prometheus
    ``inc`` takes a lock; three of them per decision cost more than the rest of the
    bookkeeping. A scrape sees the decisions of a match in play at most a batch late; the
    figures after the match are those of one ``observe`` each."""

    __slots__ = ("_counter", "_histogram", "_bounds", "_counts", "_n", "_total", "_due")

    FLUSH_EVERY = 256
    FLUSH_S = 1.0

    def __init__(self, counter: Counter, histogram: DecisionLatency) -> None:
        self._counter = counter
        self._histogram = histogram
        self._bounds = histogram._upper_bounds
        self._counts = [0] * len(self._bounds)
        self._n = 0
        self._total = 0.0
        self._due = _monotonic() + self.FLUSH_S

    def add(self, seconds: float) -> None:
        """One decision that was charged ``seconds`` (finite, not negative)."""
        self._counts[bisect_left(self._bounds, seconds)] += 1
        self._total += seconds
        self._n += 1
        if self._n >= self.FLUSH_EVERY or _monotonic() >= self._due:
            self.flush()

    def flush(self) -> None:
        """Add what was counted since the last flush to the metrics."""
        if not self._n:
            return
        self._counter.inc(self._n)
        histogram = self._histogram
        histogram._sum.inc(self._total)
        counts = self._counts
        for i, n in enumerate(counts):
            if n:
                histogram._buckets[i].inc(n)
                counts[i] = 0
        self._n = 0
        self._total = 0.0
        self._due = _monotonic() + self.FLUSH_S


class Metrics:
    """The arena's metrics, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.matches_in_play = Gauge("arena_matches_in_play", "Matches being played", ["game"], registry=r)
        self.matches_finished = Counter(
            "arena_matches_finished", "Matches finished", ["game", "result", "reason"], registry=r
        )
        self.decisions = Counter("arena_decisions", "Decisions answered by bots", ["game"], registry=r)
        self.latency = DecisionLatency(
            "arena_decision_latency_seconds",
            "Time charged per decision (request written to answer received by the kernel), all bots",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.timeouts = BotSeries("arena_timeouts", "Decisions not answered in time", ["bot"], "counter", registry=r)
        self.illegal = BotSeries("arena_illegal_actions", "Illegal actions", ["bot", "code"], "counter", registry=r)
        self.protocol_errors = Counter("arena_protocol_errors", "Protocol errors by code", ["code"], registry=r)
        self.connections = Gauge("arena_connections", "Open connections by role", ["role"], registry=r)
        self.spectators = Gauge("arena_spectators", "Spectators following at least one match", registry=r)
        self.queue_depth = Gauge("arena_scheduler_queue_depth", "Matches waiting to be played", registry=r)
        self.bot_state = BotSeries("arena_bot_state", "State of a launched bot (1 = in this state)", ["bot", "state"],
                                   "gauge", registry=r)
        self.bot_failures = BotSeries("arena_bot_failures", "Failures in a row of a launched bot", ["bot"], "gauge",
                                      registry=r)
        self.bot_connected = BotSeries("arena_bot_connected", "1 while the bot is connected", ["bot"], "gauge",
                                       registry=r)
        self.auth_checks = Counter("arena_auth_checks", "Token checks by verdict", ["verdict"], registry=r)
        self.refused = Counter("arena_connections_refused", "Connections refused or dropped by the server's caps",
                               ["code"], registry=r)
        self.storage_paused = Gauge("arena_storage_paused", "1 while a storage fault pauses scheduling", registry=r)
        self.storage_errors = Counter("arena_storage_errors", "Failed storage writes", ["what"], registry=r)
        self.result_commit = Histogram("arena_result_commit_seconds", "One result's write transaction",
                                       buckets=STORE_BUCKETS, registry=r)
        self.pairing = Histogram("arena_pairing_decision_seconds", "One pairing decision of the contest scheduler",
                                 buckets=STORE_BUCKETS, registry=r)
        self.fit_seconds = Gauge("arena_ladder_fit_seconds", "Duration of the last ladder fit", ["game"], registry=r)
        self.fit_cpu = Gauge("arena_ladder_fit_cpu_seconds", "CPU time of the last ladder fit's computation", ["game"],
                             registry=r)
        self.fit_full = Gauge("arena_ladder_fit_full", "1 if the last ladder fit computed the intervals too", ["game"],
                              registry=r)
        self.full_fit_seconds = Gauge("arena_ladder_full_fit_seconds", "Duration of the last full ladder refit",
                                      ["game"], registry=r)
        self.full_fit_cpu = Gauge("arena_ladder_full_fit_cpu_seconds",
                                  "CPU time of the last full ladder refit's computation", ["game"], registry=r)
        self.fit_age = Gauge("arena_ladder_fit_age_seconds", "Age of the ratings shown", ["game"], registry=r)
        self.fit_lag = Gauge("arena_ladder_fit_lag_results", "Results recorded since the last ladder fit", ["game"],
                             registry=r)

    def exposition(self) -> bytes:
        """The text exposition format (what ``/metrics`` returns)."""
        return generate_latest(self.registry)


METRICS = Metrics()
"""The process-wide metrics."""
