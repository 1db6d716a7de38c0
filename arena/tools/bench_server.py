"""The server's own cost, with bots that cost nothing: ``make bench`` and ``make bench-scale``.

The bots are :file:`sample_bots/bench/instant.c` (C, libc only, built here with gcc): they
answer every ``request`` with its first legal action as soon as they read it, so every figure
below is the server's. The server side (an :class:`~arena.net.server.ArenaServer` on a loopback
port, :class:`~arena.match.referee.Referee` matches writing gzip match logs as tournaments do)
runs in this process; the bots run in subprocesses. Phases, each bounded in time:

1. **One match at a time** (:func:`one_match`): two instant bots, one process each, play
   Écarté matches back to back. Figures: decisions per second, and the **server's CPU per
   decision** (this process's CPU time, all threads, over the phase ÷ decisions; target
   :data:`CPU_TARGET_US`), next to two baselines with the same line sizes
   (:func:`trio_pingpong`, :func:`blocking_pingpong`): a raw trio echo server and a plain
   blocking-socket loop, each answering an instant C client's answer-sized line with a
   request-sized line. Their CPU per round trip is measured the same way.
   Next to them, the **match core alone** (:func:`core_alone`): the same matches played
   straight through :class:`~arena.match.core.MatchCore` and their match logs, without I/O.
   The core, its log and one raw trio round trip are the floor of this design: what phase 1
   spends above it is the driver (:mod:`arena.match.referee`, :mod:`arena.match.seat`).
2. **Concurrent matches** (:func:`concurrent_matches`): ``n`` matches at once (100 in
   ``make bench``; 1,000 and 2,000 in ``make bench-scale``), each pair of bots playing
   back to back, this process pinned to one core (the bots on the others) when the machine has
   two or more. Figures:

   * decisions per second;
   * **server-added latency** p50/p99 (target :data:`LATENCY_P99_TARGET_MS` at 100 matches).
     Instant bots keep the server saturated, so each answer waits behind the other matches'
     decisions: about ``n`` × the CPU per decision (Little's law), printed beside it.
     At 100 matches the phase runs again with ``[server] dispatch = false`` (a reading task
     per connection instead of :mod:`arena.match.dispatch`), as the baseline of the same run.
     Measured by the bots, on the machine's monotonic clock: from the moment a bot of a match
     has written its answer to the moment a bot of that match has read the match's next
     request. That is the server's whole turn-around (reading, the rules, the log, the
     events, the next request) plus two loopback hops, which the ping-pong baselines bound;
   * the **largest time charged to a bot for one decision** and the number of **timeouts**
     (targets :data:`CHARGED_TARGET_MS` and 0): every call of the referee's clock
     (:meth:`arena.match.clock.Clock.charge`) is recorded during the phase; the time charged
     is what the clock added to the seat's ``used_ms`` (the same figure the decision-latency
     histogram observes; a decision not answered by its deadline is charged the deadline). The
     timeouts are those the referees counted (``arena_timeouts_total``). Instant bots answer in
     microseconds, so any time charged beyond that is the server's own queue.

Bots authenticate with one token; for phase 2 the store returns the same salted hash for every
bench name and the authenticator hashes with SHA-256 (:class:`_BenchStore`), so that 4,000
bots can say hello in seconds (scrypt takes 30 ms each, which is not what is measured here).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import trio

from arena.gc_policy import restore, tune_for_server
from arena.match import clock as clock_module
from arena.match.core import MatchConfig
from arena.match.runner import MatchRunner, MatchSpec
from arena.metrics import METRICS
from arena.net.server import ArenaServer, ServerConfig
from arena.store.sqlite import SLOW, Store, TokenHash
from arena.tools.bench_floor import (
    HOST,
    CoreFigures,
    PingPongFigures,
    blocking_pingpong,
    build_instant_bot,
    core_alone,
    trio_pingpong,
)

CPU_TARGET_US = 50.0
"""Issue 10's target: server CPU per Écarté decision, one match at a time (µs)."""

LATENCY_P99_TARGET_MS = 5.0
"""Issue 10's target: p99 server-added latency at 100 concurrent matches (ms)."""

CHARGED_TARGET_MS = 50.0
"""Issue 10's target: the largest time charged to an instant bot for one decision (ms), at
1,000 and 2,000 concurrent matches; with no timeout."""

TOKEN = "bench-token"
BOTS_PER_PROCESS = 500
"""Connections one instant-bot process holds at most (phase 2)."""

CONNECT_TIMEOUT_S = 120.0
"""Seconds allowed for every bot of a phase to connect and be authenticated."""


# --------------------------------------------------------------------------- the bots' tokens


def _cheap_hash(token: str, salt: bytes) -> bytes:
    return hashlib.sha256(salt + token.encode()).digest()


class _BenchStore(Store):
    """An in-memory store where every name is registered with :data:`TOKEN` (hashed with
    :func:`_cheap_hash`: pair it with ``Authenticator.hasher = _cheap_hash``)."""

    _salt = b"bench-salt-0123"

    def bot_secret(self, name: str) -> TokenHash | None:
        """The hash of :data:`TOKEN`, whatever the name (the slow scheme's, made by :func:`_cheap_hash`)."""
        return TokenHash(self._salt, _cheap_hash(TOKEN, self._salt), SLOW)


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def _pin(cpus: list[int]) -> None:
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass


@contextmanager
def _pinned() -> Iterator[list[int]]:
    """Pin this process to one core for the block; yield the cores left for the bots (empty
    on a one-core machine: then nothing is pinned)."""
    cpus = _cpus()
    if len(cpus) < 2:
        yield []
        return
    _pin(cpus[:1])
    try:
        yield cpus[1:]
    finally:
        _pin(cpus)


@dataclass
class WireCounts:
    """What the instant bots counted (summed over processes): lines and bytes received,
    requests among them, answers sent (bytes include the newline)."""

    lines: int = 0
    bytes: int = 0
    requests: int = 0
    request_bytes: int = 0
    answers: int = 0
    answer_bytes: int = 0

    def add(self, report: dict[str, int]) -> None:
        """Add one process's JSON report."""
        for key in ("lines", "bytes", "requests", "request_bytes", "answers", "answer_bytes"):
            setattr(self, key, getattr(self, key) + int(report.get(key, 0)))

    @property
    def avg_request_bytes(self) -> float:
        """Average ``request`` line in bytes (0 when none)."""
        return self.request_bytes / self.requests if self.requests else 0.0

    @property
    def avg_answer_bytes(self) -> float:
        """Average ``action`` line in bytes (0 when none)."""
        return self.answer_bytes / self.answers if self.answers else 0.0


@dataclass
class _BotProcess:
    """One instant-bot subprocess holding ``count`` connections (``count`` 0: one connection
    named ``name``)."""

    binary: Path
    port: int
    name: str
    count: int = 0
    latency_file: Path | None = None
    cpus: list[int] = field(default_factory=list)
    think_ms: float = 0.0
    """Milliseconds each bot "thinks" before answering, on average (``ARENA_THINK_MS``; 0: at once):
    drawn uniformly from ``think_ms`` ± half of it, so that matches started together drift apart."""
    result: subprocess.CompletedProcess[bytes] | None = None
    done: trio.Event = field(default_factory=trio.Event)

    def names(self) -> list[str]:
        """The bot names this process connects as."""
        return [self.name] if self.count == 0 else [f"{self.name}-{i}" for i in range(self.count)]

    async def run(self) -> None:
        """Run the process until it exits (all its connections closed)."""
        env = dict(os.environ, ARENA_HOST=HOST, ARENA_PORT=str(self.port), ARENA_NAME=self.name, ARENA_TOKEN=TOKEN)
        if self.count:
            env["ARENA_BOTS"] = str(self.count)
        if self.latency_file is not None:
            env["ARENA_LATENCY_FILE"] = str(self.latency_file)
        if self.think_ms > 0:
            env["ARENA_THINK_MS"] = f"{self.think_ms:g},{self.think_ms / 2:g}"
        cpus = self.cpus
        try:
            self.result = await trio.run_process(
                [str(self.binary)], env=env, capture_stdout=True, capture_stderr=True, check=False,
                preexec_fn=(lambda: _pin(cpus)) if cpus else None,
            )
        finally:
            self.done.set()

    def report(self) -> dict[str, int]:
        """The process's JSON report (empty if it printed none)."""
        if self.result is None:
            return {}
        lines = self.result.stdout.decode(errors="replace").strip().splitlines()
        try:
            return json.loads(lines[-1]) if lines else {}
        except ValueError:
            return {}

    def failure(self) -> str:
        """How the process ended, for an error message."""
        if self.result is None:
            return "still running"
        return f"exit status {self.result.returncode}: {self.result.stderr.decode(errors='replace').strip()[-500:]}"


# --------------------------------------------------------------------------- the clock's record


@dataclass
class ChargeRecord:
    """Every decision the referee's clocks charged during a phase: how many, the largest time
    charged (ms), the charges over the limit (an answer read after its deadline), and all charged
    times (ms). A decision not answered at all by its deadline is charged the deadline."""

    decisions: int = 0
    over_limit: int = 0
    largest_ms: float = 0.0
    charged_ms: list[float] = field(default_factory=list)

    def add(self, charged_ms: float, ok: bool) -> None:
        """Record one charge."""
        self.decisions += 1
        self.charged_ms.append(charged_ms)
        if charged_ms > self.largest_ms:
            self.largest_ms = charged_ms
        if not ok:
            self.over_limit += 1


@contextmanager
def recording_charges() -> Iterator[ChargeRecord]:
    """Within the block, record every call of :meth:`arena.match.clock.Clock.charge` (of any
    seat of any match in this process) in a :class:`ChargeRecord`. The time charged is what the
    call added to the clock's ``used_ms``, or its argument for a clock without one."""
    record = ChargeRecord()
    cls = clock_module.Clock
    original = cls.charge

    def charge(self: Any, elapsed_ms: float, *args: Any, **kwargs: Any) -> bool:
        before = getattr(self, "used_ms", None)
        ok = original(self, elapsed_ms, *args, **kwargs)
        after = getattr(self, "used_ms", None)
        record.add(float(after - before) if before is not None and after is not None else float(elapsed_ms),
                   bool(ok))
        return ok

    cls.charge = charge  # type: ignore[method-assign]
    try:
        yield record
    finally:
        cls.charge = original  # type: ignore[method-assign]


@contextmanager
def timing_collections() -> Iterator[list[float]]:
    """Within the block, add up the time the garbage collector spends collecting (seconds, on
    :func:`time.perf_counter`, through :data:`gc.callbacks`); yields a one-element list holding
    the running total."""
    total = [0.0]
    started = [0.0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = perf_counter()
        else:
            total[0] += perf_counter() - started[0]

    gc.callbacks.append(callback)
    try:
        yield total
    finally:
        gc.callbacks.remove(callback)


def _timeouts_counted() -> float:
    """Timeouts the referees of this process have counted so far (the sum of
    ``arena_timeouts_total`` over bots)."""
    return sum(sample.value for family in METRICS.registry.collect() if family.name == "arena_timeouts"
               for sample in family.samples if sample.name == "arena_timeouts_total")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank method (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 1))))
    return ordered[rank - 1]


# --------------------------------------------------------------------------- phase 1: one match


@dataclass(frozen=True)
class OneMatchFigures:
    """Phase 1: ``decisions`` in ``matches`` played one at a time in ``seconds`` (wall) using
    ``cpu_s`` seconds of this process's CPU; what the bots saw (:class:`WireCounts`)."""

    decisions: int
    matches: int
    seconds: float
    cpu_s: float
    wire: WireCounts

    @property
    def decisions_per_s(self) -> float:
        """Decisions per second."""
        return self.decisions / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_decision(self) -> float:
        """Server CPU per decision in µs."""
        return self.cpu_s * 1e6 / self.decisions if self.decisions else 0.0


async def _start_server(store: Store, n_bots: int, nursery: trio.Nursery, dispatch: bool = True) -> tuple[Any, int]:
    room = n_bots + 64
    config = ServerConfig(port=0, max_connections=room, max_conns_per_addr=room, handshake_timeout_s=60.0,
                          auth_concurrency=2, auth_addr_burst=room, auth_name_burst=room, auth_global_burst=room,
                          dispatch=dispatch)
    server = ArenaServer(store, config)
    server.auth.hasher = _cheap_hash
    port = await nursery.start(server.serve)
    return server, port


async def _wait_connected(server: Any, procs: list[_BotProcess], timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    names = [n for p in procs for n in p.names()]
    with trio.move_on_after(timeout_s):
        for name in names:
            await server.wait_for(name, timeout_s)
    missing = [n for n in names if n not in server.bots]
    if missing:
        failed = "; ".join(p.failure() for p in procs if p.done.is_set())
        raise RuntimeError(f"{len(missing)} of {len(names)} instant bots did not connect ({failed or 'no exit'})")


async def _close_bots(server: Any, procs: list[_BotProcess], timeout_s: float = 30.0) -> None:
    for conn in list(server.bots.values()):
        await conn.aclose("bench over")
    with trio.move_on_after(timeout_s):
        for p in procs:
            await p.done.wait()


async def one_match(seconds: float = 10.0, seed: int = 1, max_decisions: int = 10**9) -> OneMatchFigures:
    """Phase 1 (module docstring): Écarté matches between two instant bots, one at a time,
    for ``seconds`` seconds (or ``max_decisions`` decisions), finishing the match in play."""
    binary = build_instant_bot()
    store = _BenchStore(":memory:")
    config = MatchConfig()
    decisions = matches = 0
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as logs:
        async with trio.open_nursery() as nursery:
            server, port = await _start_server(store, 2, nursery)
            procs = [_BotProcess(binary, port, name) for name in ("instant-a", "instant-b")]
            for p in procs:
                nursery.start_soon(p.run)
            await _wait_connected(server, procs)
            a, b = (server.bots[p.name] for p in procs)
            gc.collect()
            t0, c0 = perf_counter(), time.process_time()
            while perf_counter() - t0 < seconds and decisions < max_decisions:
                seats = (a, b) if matches % 2 == 0 else (b, a)
                spec = MatchSpec(f"bench-{matches}", seed + matches, config, (seats[0].name, seats[1].name))
                result = await MatchRunner(spec, seats, log_path=Path(logs) / f"m{matches}.jsonl.gz").run()
                if result.reason != "target":
                    raise RuntimeError(f"bench match {matches} ended by {result.reason}: {result.detail}")
                decisions += result.decisions
                matches += 1
            cpu, wall = time.process_time() - c0, perf_counter() - t0
            await _close_bots(server, procs)
            nursery.cancel_scope.cancel()
    store.close()
    wire = WireCounts()
    for p in procs:
        wire.add(p.report())
    return OneMatchFigures(decisions, matches, wall, cpu, wire)


# --------------------------------------------------------------------------- phase 2: concurrent matches


@dataclass(frozen=True)
class ConcurrentFigures:
    """Phase 2 at ``matches`` concurrent matches, over a window of ``seconds``: decisions the
    clocks charged (:class:`ChargeRecord`), matches finished, this process's CPU, server-added
    latency samples (µs, from the bots), and what the bots saw."""

    matches: int
    seconds: float
    cpu_s: float
    finished: int
    charges: ChargeRecord
    latency_us: list[float]
    wire: WireCounts
    connect_s: float
    forfeits: dict[str, int] = field(default_factory=dict)
    """Matches that did not end at the target, by reason (``forfeit_timeout``, ...)."""
    gc_s: float = 0.0
    """Seconds the garbage collector spent collecting during the window."""
    timeouts: int = 0
    """Decisions the referee ended as timeouts during the window (``arena_timeouts_total``)."""
    think_ms: float = 0.0
    """What each bot thought before answering, in ms on average (0: instant bots, the server saturated)."""

    @property
    def decisions_per_s(self) -> float:
        """Decisions (answers charged) per second over the window."""
        return self.charges.decisions / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_decision(self) -> float:
        """Server CPU per decision in µs over the window."""
        return self.cpu_s * 1e6 / self.charges.decisions if self.charges.decisions else 0.0

    def latency_ms(self, q: float) -> float:
        """Quantile ``q`` of the server-added latency in ms."""
        return percentile(self.latency_us, q) / 1000

    @property
    def littles_law_ms(self) -> float:
        """The time a decision spends in the server when it is saturated, by Little's law
        ``L = λ·W``, in ms: ``W = L / λ`` with ``L`` = :attr:`matches` (with instant bots every
        match always has exactly one decision in the system: its request on its way, its answer
        being read, or its turn waiting behind the other matches') and ``λ`` =
        :attr:`decisions_per_s` (decisions the clocks charged over the window ÷ its wall
        seconds). So ``W = matches × seconds / decisions``: the mean turn-around of a decision,
        the bots' own microseconds and the loopback hops included, which is what the bots'
        latency samples measure. 0 when no decision was charged. Meaningful only for instant
        bots (:attr:`think_ms` 0): thinking bots spend most of ``W`` thinking."""
        return self.matches / self.decisions_per_s * 1000 if self.decisions_per_s else 0.0


async def concurrent_matches(n_matches: int, seconds: float = 10.0, seed: int = 1,
                             dispatch: bool = True, think_ms: float = 0.0) -> ConcurrentFigures:
    """Phase 2 (module docstring): ``n_matches`` Écarté matches at once between instant bots
    for ``seconds`` seconds, then every match is stopped where it is. Charged times are
    recorded from the first match's start to the stop. ``dispatch``: the server's
    ``[server] dispatch`` (False: a reading task per connection, the baseline). ``think_ms``:
    each bot waits this many ms on average before each answer (uniformly ± half of it:
    ``ARENA_THINK_MS`` of the instant bot), which the latency samples leave out. Raises
    ``ValueError`` for fewer than one match, ``RuntimeError`` if the bots cannot be built or do
    not connect."""
    if n_matches < 1:
        raise ValueError("at least one match")
    binary = build_instant_bot()
    store = _BenchStore(":memory:")
    config = MatchConfig()
    n_bots = 2 * n_matches
    finished = 0
    forfeits: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp, _pinned() as bot_cpus:
        async with trio.open_nursery() as nursery:
            server, port = await _start_server(store, n_bots, nursery, dispatch)
            procs: list[_BotProcess] = []
            left, j = n_bots, 0
            while left > 0:
                count = min(BOTS_PER_PROCESS, left)
                procs.append(_BotProcess(binary, port, f"p{j}", count, Path(tmp) / f"latency-{j}.txt", bot_cpus,
                                         think_ms=think_ms))
                left -= count
                j += 1
            t_connect = perf_counter()
            for p in procs:
                nursery.start_soon(p.run)
            await _wait_connected(server, procs)
            connect_s = perf_counter() - t_connect
            pairs = [(names[i], names[i + 1]) for p in procs for names in [p.names()] for i in range(0, len(names), 2)]

            async def play(k: int, a: str, b: str) -> None:
                nonlocal finished
                i = 0
                while True:
                    seats = (server.bots[a], server.bots[b]) if i % 2 == 0 else (server.bots[b], server.bots[a])
                    spec = MatchSpec(f"bench-{k}-{i}", seed + 7919 * k + i, config, (seats[0].name, seats[1].name))
                    result = await MatchRunner(spec, seats, log_path=Path(tmp) / f"m{k}-{i}.jsonl.gz").run()
                    (Path(tmp) / f"m{k}-{i}.jsonl.gz").unlink(missing_ok=True)
                    finished += 1
                    i += 1
                    if result.reason != "target":  # a timeout (the clock's record counts it), or worse
                        forfeits[result.reason] = forfeits.get(result.reason, 0) + 1
                        if any(conn.closed.is_set() for conn in seats):
                            return

            gc.collect()
            timeouts_before = _timeouts_counted()
            with recording_charges() as charges, timing_collections() as gc_s:
                t0, c0 = perf_counter(), time.process_time()
                async with trio.open_nursery() as matches:
                    for k, (a, b) in enumerate(pairs):
                        matches.start_soon(play, k, a, b)
                    await trio.sleep(seconds)
                    matches.cancel_scope.cancel()
                cpu, wall = time.process_time() - c0, perf_counter() - t0
            timeouts = _timeouts_counted() - timeouts_before
            await _close_bots(server, procs)
            nursery.cancel_scope.cancel()
        latency: list[float] = []
        wire = WireCounts()
        for p in procs:
            wire.add(p.report())
            if p.latency_file is not None and p.latency_file.exists():
                latency.extend(float(x) for x in p.latency_file.read_text().split())
    store.close()
    return ConcurrentFigures(n_matches, wall, cpu, finished, charges, latency, wire, connect_s, forfeits, gc_s[0],
                             int(timeouts), think_ms)


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class ServerBench:
    """Every figure of this module from one run (``scale`` empty unless asked for)."""

    one: OneMatchFigures
    core: CoreFigures
    trio_pp: PingPongFigures
    blocking_pp: PingPongFigures
    concurrent: ConcurrentFigures | None
    undispatched: ConcurrentFigures | None
    """Phase 2 at the same size without the dispatcher (a reading task per connection)."""
    scale: list[ConcurrentFigures]
    seconds: float


def run_server_bench(seconds: float = 10.0, concurrent: int = 100, scale: tuple[int, ...] = (),
                     progress: Any = None) -> ServerBench:
    """Run phase 1 and its baselines, phase 2 at ``concurrent`` matches (0 skips it), then at
    each of ``scale``. Each phase lasts about ``seconds`` (the scale phases add the time their
    bots take to connect). ``progress(text)`` is told of each phase."""
    say = progress or (lambda text: None)
    t0 = perf_counter()
    thresholds = tune_for_server()  # as arena serve and arena tournament run
    try:
        say(f"instant C bots: one match at a time, {seconds:g} s")
        one = trio.run(one_match, seconds)
        say(f"the match core alone, without I/O, {seconds:g} s")
        core = core_alone(seconds)
        req, ans = round(one.wire.avg_request_bytes), round(one.wire.avg_answer_bytes)
        rounds = max(1000, one.decisions)
        say(f"baselines: {rounds:,} round trips of {req} B / {ans} B, raw trio then blocking sockets")
        trio_pp = trio.run(trio_pingpong, req, ans, rounds)
        blocking_pp = blocking_pingpong(req, ans, rounds)
        conc = undispatched = None
        if concurrent > 0:
            say(f"{concurrent:,} concurrent matches of instant C bots, {seconds:g} s")
            conc = trio.run(concurrent_matches, concurrent, seconds)
            say(f"the same without the dispatcher (a reading task per connection), {seconds:g} s")
            undispatched = trio.run(concurrent_matches, concurrent, seconds, 1, False)
        figures = []
        for n in scale:
            say(f"{n:,} concurrent matches of instant C bots, {seconds:g} s (after they connect)")
            figures.append(trio.run(concurrent_matches, n, seconds))
    finally:
        restore(thresholds)
    return ServerBench(one, core, trio_pp, blocking_pp, conc, undispatched, figures, perf_counter() - t0)


def print_server_bench(console: Any, bench: ServerBench) -> None:
    """Print ``bench`` on a rich ``console``: figure, value, unit, baseline or target, verdict."""
    from rich import box
    from rich.table import Table

    def verdict(ok: bool, measured: bool = True) -> str:
        if not measured:
            return "[red]no decision[/red]"
        return "[green]met[/green]" if ok else "[red]not met[/red]"

    one, tp, bp = bench.one, bench.trio_pp, bench.blocking_pp
    table = Table(title="server cost with instant C bots (issue 10)", box=box.SIMPLE_HEAVY)
    for col, just in (("figure", "left"), ("value", "right"), ("unit", "left"),
                      ("baseline / target", "left"), ("", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    table.add_row("1 match at a time", f"{one.decisions_per_s:,.0f}", "decisions/s",
                  f"{one.decisions_per_s / tp.round_trips_per_s:.2f}x raw trio, "
                  f"{one.decisions_per_s / bp.round_trips_per_s:.2f}x blocking", "")
    table.add_row("  server CPU/decision", f"{one.cpu_us_per_decision:,.1f}", "µs",
                  f"target ≤ {CPU_TARGET_US:g} µs", verdict(one.cpu_us_per_decision <= CPU_TARGET_US))
    core = bench.core
    table.add_row("  the match core alone", f"{core.core_us:,.1f}", "µs/decision", "rules, policy, encoding; no I/O",
                  "")
    table.add_row("  its match log", f"{core.log_us:,.1f}", "µs/decision", "hash chain and gzip", "")
    floor = core.core_us + core.log_us + tp.cpu_us_per_round_trip
    table.add_row("  floor: core+log+trio trip", f"{floor:,.1f}", "µs",
                  f"the driver: {one.cpu_us_per_decision - floor:,.1f} µs more",
                  "" if floor <= CPU_TARGET_US else "[red]floor over target[/red]")
    table.add_row("  raw trio ping-pong", f"{tp.round_trips_per_s:,.0f}", "round trips/s",
                  f"{tp.cpu_us_per_round_trip:,.1f} µs CPU each; {tp.request_bytes} B / {tp.answer_bytes} B", "")
    table.add_row("  blocking-socket ping-pong", f"{bp.round_trips_per_s:,.0f}", "round trips/s",
                  f"{bp.cpu_us_per_round_trip:,.1f} µs CPU each; {bp.request_bytes} B / {bp.answer_bytes} B", "")
    rows = ([bench.concurrent] if bench.concurrent is not None else []) + list(bench.scale)
    for c in rows:
        table.add_row(f"{c.matches:,} matches at once", f"{c.decisions_per_s:,.0f}", "decisions/s",
                      f"{c.cpu_us_per_decision:,.1f} µs CPU each; {c.finished:,} matches ended", "")
        table.add_row("  saturated queue", f"{c.matches * c.cpu_us_per_decision / 1000:,.2f}", "ms",
                      "matches × CPU/decision (Little's law)", "")
        u = bench.undispatched
        if c is bench.concurrent and u is not None:
            table.add_row("  without the dispatcher", f"{u.decisions_per_s:,.0f}", "decisions/s",
                          f"{u.cpu_us_per_decision:,.1f} µs CPU each; p50 / p99 {u.latency_ms(0.5):,.2f} / "
                          f"{u.latency_ms(0.99):,.2f} ms", "")
        table.add_row("  garbage collection", f"{100 * c.gc_s / c.seconds:,.1f}", "% of time", "", "")
        p99 = c.latency_ms(0.99)
        latency_target = c.matches <= 100
        table.add_row("  server-added p50 / p99", f"{c.latency_ms(0.5):,.2f} / {p99:,.2f}", "ms",
                      f"target p99 < {LATENCY_P99_TARGET_MS:g} ms" if latency_target else
                      f"{len(c.latency_us):,} samples",
                      verdict(p99 < LATENCY_P99_TARGET_MS, bool(c.latency_us)) if latency_target else "")
        ch = c.charges
        table.add_row("  largest charge", f"{ch.largest_ms:,.0f}", "ms",
                      f"target ≤ {CHARGED_TARGET_MS:g} ms; p99 {percentile(ch.charged_ms, 0.99):,.0f} ms",
                      verdict(ch.largest_ms <= CHARGED_TARGET_MS, ch.decisions > 0))
        lost = ", ".join(f"{n:,} {reason}" for reason, n in sorted(c.forfeits.items())) or "no forfeit"
        table.add_row("  timeouts", f"{c.timeouts:,}", "", f"target 0; {lost}",
                      verdict(c.timeouts == 0, ch.decisions > 0))
    console.print(table)
    console.print(
        f"one match at a time: {one.decisions:,} decisions in {one.matches:,} matches, {one.seconds:.1f} s, "
        f"{one.cpu_s:.2f} s CPU; request {one.wire.avg_request_bytes:,.0f} B, answer "
        f"{one.wire.avg_answer_bytes:,.0f} B on average, {one.wire.lines / max(1, one.wire.requests):.2f} "
        "server lines per request\n"
        + "".join(f"{c.matches:,} matches: {c.charges.decisions:,} decisions in {c.seconds:.1f} s "
                  f"({c.connect_s:.1f} s to connect {2 * c.matches:,} bots), "
                  f"median charged {statistics.median(c.charges.charged_ms) if c.charges.charged_ms else 0:.0f} ms\n"
                  for c in rows)
        + "server-added latency: bot-side, from a match's answer written to its next request read "
        "(includes two loopback hops); largest charge: the most the referee's clock charged a bot for one "
        "decision\n"
        f"server bench: {bench.seconds:.0f} s"
    )
