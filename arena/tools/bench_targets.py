"""``make bench``: issue 24's targets, each figure beside its baseline of the same run, with a
verdict; exits 1 naming every target missed.

Run as ``python -m arena.tools.bench_targets [--quick]``. Every target is a ratio of two figures
measured minutes apart in this one run, never against a number from another day, because the
machine's speed changes with its neighbours. Phases (three to five minutes on two cores; ``--quick``
runs each briefly, a smoke test whose ratios mean little):

1. **Floor** (:mod:`arena.tools.bench_server` phase 1 and :mod:`arena.tools.bench_floor`): two
   instant C bots play Écarté matches one at a time over loopback TCP (with gzip match logs);
   the server's CPU per decision (``one``). The same matches through the match core alone, its
   time (``core``) and its log's (``log``) per decision; a raw trio echo server's CPU per round
   trip (``trip``), same line sizes. Targets: ``(core + log) / trip <= 0.5``;
   ``one / (core + log + trip) <= 1.15`` (the driver).
2. **The user's path** (:func:`arena.tools.bench_path.tournament_path`): ``arena tournament
   --workers 0`` with default options and two sandboxed C bots (``sample_bots/c_bot``), a short
   and a long tournament; the ``arena`` process's CPU (its bots excluded) difference ÷ decision
   difference. Target: ``path / one <= 1.25``. Printed with where the rest goes: the fixed
   start-up CPU (the intercept) and what each match costs above the one-match figure.

   Phases 1 and 2 run in three rounds (``Settings.repeats``), each round the floor's three
   measurements on a third of the window, then a pair of path runs; every figure pools its
   rounds. A single pair's figure, the difference of two CPU totals, moved by ±8% between runs
   of the bench (six runs: ratios 1.10 to 1.29 for the same code), and the path was measured a
   minute after its baseline: a slower spell of the machine in between moved the ratio.
   The latency windows of phase 3 run before phases 1 and 2, after ``os.sync()`` (the kernel's
   write-back of the path's tournament files stalled the server: :func:`run_targets`).
3. **Latency** (:func:`arena.tools.bench_server.concurrent_matches`): 100 concurrent matches of
   instant C bots that think 20 ms per decision on average (``ARENA_THINK_MS=20,10``: uniform
   from 10 to 30 ms, so that the matches, all started at once, do not answer in lockstep), then
   of instant bots
   (saturated). The server-added latency, measured by the bots: from a match's answer written
   to its next request read (two loopback hops included, the thinking not). Targets: the
   thinking bots' p99 < 1 ms; the saturated p99 at most 3× the queue Little's law gives:
   ``W = L / λ`` with ``L`` = 100 (every match has one decision in the system at all times) and
   ``λ`` the decisions per second of that window
   (:attr:`~arena.tools.bench_server.ConcurrentFigures.littles_law_ms`).
4. **Every core** (:func:`arena.tools.bench_path.workers_scaling`): ``arena tournament
   --workers 1`` and ``--workers 2`` alternated, four C bots, Écarté then Piquet; the steady
   matches/s speed-up of 2 workers over 1, divided by the machine's own two-core scaling
   measured before each pair (:func:`arena.tools.bench_workers.machine_scaling`). Target
   ``>= 0.9`` for each game.
5. **ACPC** (report only): with ``ACPC_DEALER`` set to a shell command that plays one match of
   the ACPC poker dealer with its players (e.g. ``play_match.pl ...`` with absolute paths), the
   command is run in an empty temporary directory and the actions in the ``STATE`` lines of the
   ``*.log`` files it leaves there are counted (:func:`acpc_decisions`): decisions per second
   of wall time, beside ours. Nothing is ever fetched.

A target whose figures could not be measured (a phase skipped, a machine with one core) is
reported "not measured" and counts as missed.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import trio

from arena.gc_policy import restore, tune_for_server
from arena.tools import bench_floor, bench_path, bench_server

PATH_TARGET = 1.25
"""The tournament path's CPU per decision at most this many times the one-match figure."""
CORE_TARGET = 0.5
"""The match core plus its log at most this fraction of a raw trio round trip's CPU."""
DRIVER_TARGET = 1.15
"""The one-match CPU per decision at most this many times the floor (core + log + round trip)."""
THINK_P99_TARGET_MS = 1.0
"""Server-added p99 (ms) at 100 concurrent matches of bots thinking :data:`THINK_MS`: under this."""
SATURATED_TARGET = 3.0
"""Saturated p99 at most this many times the Little's-law queue."""
CORES_TARGET = 0.9
"""Workers' speed-up at least this fraction of the machine's own two-core scaling."""

THINK_MS = 20.0
"""What the thinking bots think per decision, in ms."""
CONCURRENT = 100
"""Concurrent matches of phase 3."""


@dataclass(frozen=True)
class Settings:
    """How long each phase runs: ``seconds`` per server window (one match, core alone,
    each concurrent window), the two tournament-path lengths (matches), the workers runs'
    matches per pair of four bots for Écarté and Piquet, and ``repeats``: the rounds of the floor
    and the path (:func:`run_targets`) and the 1/2-worker pairs."""

    seconds: float = 8.0
    path_games: tuple[int, int] = (40, 200)
    workers_games: tuple[int, int] = (25, 20)
    repeats: int = 3
    path_bots: tuple[str, ...] = ()
    """Manifests of the tournament path's bots (default: two copies of ``sample_bots/c_bot``)."""


QUICK = Settings(seconds=1.0, path_games=(3, 8), workers_games=(2, 1), repeats=1)
"""``--quick``: every phase, briefly (a smoke test, not a measurement)."""


# --------------------------------------------------------------------------- figures and verdicts


@dataclass
class Figures:
    """The raw numbers of one run (None: not measured). CPU figures in µs per decision,
    latencies in ms, scaling figures as plain ratios."""

    one_us: float | None = None
    """Server CPU per decision, one match at a time (instant C bots)."""
    core_us: float | None = None
    log_us: float | None = None
    trip_us: float | None = None
    """A raw trio round trip's server CPU."""
    path_us: float | None = None
    """``arena tournament --workers 0``: the process's CPU per decision (bots excluded)."""
    think_p99_ms: float | None = None
    saturated_p99_ms: float | None = None
    littles_ms: float | None = None
    """The saturated queue by Little's law, ``W = L / λ``."""
    speedup: dict[str, float] = field(default_factory=dict)
    """Per game: steady matches/s of 2 workers ÷ 1 worker (median of the pairs)."""
    machine: dict[str, float] = field(default_factory=dict)
    """Per game: the machine's two-core scaling measured beside those runs (median)."""
    cores_note: str = ""
    """Why the workers' targets were not measured, if so."""


@dataclass(frozen=True)
class Target:
    """One target: its name, the measured figure and its baseline of the same run (with units
    and labels), the ratio value ÷ baseline, the limit and its sense (``"<="``, ``"<"`` or
    ``">="``); ``ratio`` None when either figure is missing."""

    name: str
    value: str
    baseline: str
    ratio: float | None
    sense: str
    limit: float

    @property
    def measured(self) -> bool:
        """Whether both figures were measured."""
        return self.ratio is not None

    @property
    def met(self) -> bool:
        """Whether the ratio is within the limit (False when not measured)."""
        if self.ratio is None:
            return False
        if self.sense == "<=":
            return self.ratio <= self.limit
        if self.sense == "<":
            return self.ratio < self.limit
        return self.ratio >= self.limit

    @property
    def verdict(self) -> str:
        """``met``, ``missed`` or ``not measured``."""
        return "met" if self.met else ("missed" if self.measured else "not measured")

    def line(self) -> str:
        """One line naming the target and its outcome (for the summary of missed targets)."""
        got = f"{self.ratio:.2f}" if self.ratio is not None else "no figure"
        return f"{self.name}: {got}, target {self.sense} {self.limit:g} ({self.verdict})"


def _ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or baseline is None or baseline <= 0:
        return None
    return value / baseline


def _sum(*values: float | None) -> float | None:
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def _fmt(value: float | None, unit: str, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f} {unit}"


def targets(f: Figures) -> list[Target]:
    """The five targets of issue 24 (four kinds; every core once per game) judged on ``f``:
    the tournament path, core + log, the driver, thinking bots' p99, saturated p99, then
    one per game in :attr:`Figures.speedup` (Écarté and Piquet expected; a game missing from it
    is "not measured")."""
    floor, core_log = _sum(f.core_us, f.log_us, f.trip_us), _sum(f.core_us, f.log_us)
    out = [
        Target("1. tournament path CPU/decision vs one match", _fmt(f.path_us, "µs"),
               f"one match {_fmt(f.one_us, 'µs')}", _ratio(f.path_us, f.one_us), "<=", PATH_TARGET),
        Target("2. match core + log vs raw trio round trip", _fmt(core_log, "µs"),
               f"trio round trip {_fmt(f.trip_us, 'µs')}", _ratio(core_log, f.trip_us), "<=", CORE_TARGET),
        Target("2. driver: one match vs the floor", _fmt(f.one_us, "µs"),
               f"core+log+trip {_fmt(floor, 'µs')}", _ratio(f.one_us, floor), "<=", DRIVER_TARGET),
        Target(f"3. p99, {CONCURRENT} matches of bots thinking {THINK_MS:g} ms", _fmt(f.think_p99_ms, "ms", 2),
               f"target {THINK_P99_TARGET_MS:g} ms", _ratio(f.think_p99_ms, THINK_P99_TARGET_MS), "<", 1.0),
        Target(f"3. saturated p99, {CONCURRENT} matches of instant bots", _fmt(f.saturated_p99_ms, "ms", 2),
               f"Little's law W = L/λ {_fmt(f.littles_ms, 'ms', 2)}", _ratio(f.saturated_p99_ms, f.littles_ms),
               "<=", SATURATED_TARGET),
    ]
    for game in ("ecarte", "piquet"):
        s, m = f.speedup.get(game), f.machine.get(game)
        out.append(Target(f"4. every core, {game}: 2 workers ÷ 1", _fmt(s, "×", 2),
                          f"machine's 2-core scaling {_fmt(m, '×', 2)}", _ratio(s, m), ">=", CORES_TARGET))
    return out


def missed(ts: Sequence[Target]) -> list[Target]:
    """The targets not met (missed or not measured), in order."""
    return [t for t in ts if not t.met]


# --------------------------------------------------------------------------- ACPC (report only)

_ACTION = re.compile(r"r\d*|c|f")


def acpc_decisions(log_text: str) -> int:
    """Decisions in an ACPC dealer log: the actions (``r`` with its amount, ``c``, ``f``) of the
    betting field (the third, after ``STATE:hand:``) of every ``STATE`` line; rounds are
    separated by ``/``. E.g. ``STATE:0:r300c/cc/r600f:...`` holds 6."""
    total = 0
    for line in log_text.splitlines():
        if line.startswith("STATE:"):
            parts = line.split(":")
            if len(parts) > 2:
                total += len(_ACTION.findall(parts[2]))
    return total


@dataclass(frozen=True)
class AcpcFigures:
    """One ACPC match: decisions counted in its logs and the wall seconds of the command."""

    decisions: int
    seconds: float

    @property
    def decisions_per_s(self) -> float:
        """Decisions per second of wall time (0 when none)."""
        return self.decisions / self.seconds if self.seconds > 0 else 0.0


def acpc_rate(command: str, timeout_s: float = 300.0) -> AcpcFigures:
    """Run the shell ``command`` (``ACPC_DEALER``) in an empty temporary directory, timing it,
    and count the decisions of the ``*.log`` files it leaves there (:func:`acpc_decisions`).
    Raises ``RuntimeError`` (one line) if it fails or leaves no decision."""
    with tempfile.TemporaryDirectory(prefix="arena-bench-acpc-") as tmp:
        t0 = time.perf_counter()
        try:
            done = subprocess.run(shlex.split(command), cwd=tmp, capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"ACPC_DEALER could not run: {exc}") from None
        seconds = time.perf_counter() - t0
        decisions = sum(acpc_decisions(p.read_text(errors="replace")) for p in Path(tmp).rglob("*.log"))
    if done.returncode != 0 or decisions == 0:
        raise RuntimeError(f"ACPC_DEALER ended with status {done.returncode} and {decisions} decisions in its *.log "
                           f"files: {(done.stderr or done.stdout).strip()[-200:]}")
    return AcpcFigures(decisions, seconds)


# --------------------------------------------------------------------------- the run


@dataclass
class Run:
    """Everything one run measured: the :class:`Figures` and the phases' own results for the
    details printed under the table (None when skipped)."""

    figures: Figures = field(default_factory=Figures)
    one: Any = None
    core: Any = None
    trip: Any = None
    path: Any = None
    think: Any = None
    saturated: Any = None
    scaling: dict[str, Any] = field(default_factory=dict)
    acpc: AcpcFigures | None = None
    acpc_error: str = ""
    seconds: float = 0.0
    path_bots: str = "two sandboxed C bots"
    """What the tournament path played with, for the report."""
    one_rounds: list[float] = field(default_factory=list)
    """The one-match CPU per decision (µs) of each round, for the report."""


def pooled(parts: Sequence[Any]) -> Any:
    """One figure from the rounds ``parts`` (frozen dataclasses of one kind, :mod:`arena.tools.bench_server`
    and :mod:`arena.tools.bench_floor`): their counts, seconds and CPU summed, what the bots'
    wire saw summed, and the fields that describe the measurement (``kind``, the line sizes of a
    ping-pong: equal in every round) taken from the first. A per-decision figure of the result
    is then the rounds' total CPU over their total decisions."""
    first = parts[0]
    values: dict[str, Any] = {}
    for f in fields(first):
        got = [getattr(p, f.name) for p in parts]
        if f.name in _DESCRIBES:
            values[f.name] = got[0]
        elif isinstance(got[0], bench_server.WireCounts):
            values[f.name] = bench_server.WireCounts(**{k.name: sum(getattr(w, k.name) for w in got)
                                                        for k in fields(got[0])})
        else:
            values[f.name] = sum(got)
    return type(first)(**values)


_DESCRIBES = frozenset({"kind", "request_bytes", "answer_bytes"})


def run_targets(settings: Settings, progress: Callable[[str], None] | None = None,
                acpc_command: str | None = None) -> Run:
    """Run the phases of the module docstring with ``settings``; ``progress(text)`` is told of
    each step. The floor's three measurements and the tournament path's pair of runs are made in
    ``settings.repeats`` rounds, one after the other within a round, each round a share of the
    window; each figure pools its rounds (:func:`pooled`, :meth:`~arena.tools.bench_path.PathFigures.pooled`),
    so a figure and its baseline were measured over the same minutes and a slower spell of the
    machine weighs on both. The latency windows come first, after ``os.sync()``: right after the
    path's tournaments (their databases and logs) the kernel's write-back of their files stalled
    the server, and the thinking bots' p99 measured 1.03-1.24 ms in three runs, 1.45 ms in a
    window right after one pair of path runs and 0.61-0.85 ms without (sync first, or none).
    Raises ``RuntimeError`` (one line) if a bot cannot be built or a run fails."""
    say = progress or (lambda text: None)
    run, f = Run(), Figures()
    run.figures = f
    t0 = time.perf_counter()
    bench_floor.build_instant_bot()
    rounds = max(1, settings.repeats)
    window = settings.seconds / rounds
    ones, cores, trips, paths = [], [], [], []
    workdir = bench_path.scratch()
    try:
        path_bots = list(settings.path_bots) or bench_path.c_bots(workdir / "path-bots", 2)  # copied once
        os.sync()  # (see the docstring)
        thresholds = tune_for_server()
        try:
            say(f"latency: {CONCURRENT} matches of C bots thinking {THINK_MS:g} ms, {settings.seconds:g} s")
            run.think = trio.run(bench_server.concurrent_matches, CONCURRENT, settings.seconds, 1, True, THINK_MS)
            if run.think.latency_us:
                f.think_p99_ms = run.think.latency_ms(0.99)
            say(f"latency: {CONCURRENT} matches of instant C bots (saturated), {settings.seconds:g} s")
            run.saturated = trio.run(bench_server.concurrent_matches, CONCURRENT, settings.seconds)
            if run.saturated.latency_us and run.saturated.littles_law_ms > 0:
                f.saturated_p99_ms, f.littles_ms = run.saturated.latency_ms(0.99), run.saturated.littles_law_ms
        finally:
            restore(thresholds)
        for k in range(rounds):
            thresholds = tune_for_server()  # as arena serve and arena tournament run
            try:
                say(f"floor ({k + 1}/{rounds}): instant C bots, one match at a time, {window:g} s")
                ones.append(trio.run(bench_server.one_match, window))
                say(f"floor ({k + 1}/{rounds}): the match core and its log alone, {window:g} s")
                cores.append(bench_floor.core_alone(window))
                first = ones[0].wire  # the same line sizes in every round
                req, ans = round(first.avg_request_bytes), round(first.avg_answer_bytes)
                trip_rounds = max(1000, ones[-1].decisions)
                say(f"floor ({k + 1}/{rounds}): raw trio ping-pong, {trip_rounds:,} round trips of {req} B / {ans} B")
                trips.append(trio.run(bench_floor.trio_pingpong, req, ans, trip_rounds))
            finally:
                restore(thresholds)
            paths.append(bench_path.tournament_path(*settings.path_games, workdir, say, bots=path_bots, tag=f"-r{k}"))
        run.one, run.core, run.trip = pooled(ones), pooled(cores), pooled(trips)
        run.one_rounds = [x.cpu_us_per_decision for x in ones]
        f.one_us, f.core_us, f.log_us = run.one.cpu_us_per_decision, run.core.core_us, run.core.log_us
        f.trip_us = run.trip.cpu_us_per_round_trip
        run.path = bench_path.PathFigures.pooled(paths)
        if settings.path_bots:
            run.path_bots = "bots " + ", ".join(Path(m).parent.name + "/" + Path(m).name for m in settings.path_bots)
        f.path_us = run.path.cpu_us_per_decision or None
        for game, games in zip(("ecarte", "piquet"), settings.workers_games, strict=True):
            s = bench_path.workers_scaling(game, games, workdir, settings.repeats, say)
            if s is None:
                f.cores_note = "fewer than two usable cores"
                continue
            run.scaling[game] = s
            if s.speedup > 0 and s.machine_scaling > 0:
                f.speedup[game], f.machine[game] = s.speedup, s.machine_scaling
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if acpc_command:
        say("ACPC: the dealer's match (ACPC_DEALER)")
        try:
            run.acpc = acpc_rate(acpc_command)
        except RuntimeError as exc:
            run.acpc_error = str(exc)
    run.seconds = time.perf_counter() - t0
    return run


# --------------------------------------------------------------------------- the report


def print_report(console: Any, run: Run) -> list[Target]:
    """Print the targets table (figure, value, same-run baseline, ratio, target, verdict), then
    the counts behind each figure; return the targets."""
    from rich import box
    from rich.table import Table

    ts = targets(run.figures)
    table = Table(title="arena bench: issue 24's targets, each against a baseline of the same run",
                  box=box.SIMPLE_HEAVY)
    for col, just in (("target", "left"), ("value", "right"), ("baseline (same run)", "left"),
                      ("ratio", "right"), ("target", "left"), ("verdict", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for t in ts:
        colour = "green" if t.met else "red"
        table.add_row(t.name, t.value, t.baseline, "—" if t.ratio is None else f"{t.ratio:.2f}",
                      f"{t.sense} {t.limit:g}", f"[{colour}]{t.verdict}[/{colour}]")
    console.print(table)
    for line in details(run):
        console.print(line, highlight=False)
    return ts


def details(run: Run) -> list[str]:
    """The lines under the table: the counts behind each figure and where the path's time goes."""
    out = []
    one, core, trip = run.one, run.core, run.trip
    if one is not None:
        rounds = f" (rounds: {', '.join(f'{x:.1f}' for x in run.one_rounds)} µs per decision)" \
            if len(run.one_rounds) > 1 else ""
        out.append(f"one match at a time: {one.decisions:,} decisions in {one.matches:,} matches, {one.seconds:.1f} s, "
                   f"{one.cpu_s:.2f} s CPU, {one.decisions_per_s:,.0f} decisions/s{rounds}")
    if core is not None:
        out.append(f"match core alone: {core.decisions:,} decisions in {core.matches:,} matches; core "
                   f"{core.core_us:.1f} µs, log {core.log_us:.1f} µs per decision")
    if trip is not None:
        out.append(f"raw trio ping-pong: {trip.rounds:,} round trips of {trip.request_bytes} B / "
                   f"{trip.answer_bytes} B, {trip.cpu_us_per_round_trip:.1f} µs CPU each, "
                   f"{trip.round_trips_per_s:,.0f}/s")
    p = run.path
    if p is not None:
        shorts, longs = [a for a, _ in p.pairs], [b for _, b in p.pairs]
        each = f"; each pair's own: {', '.join(f'{x:.1f}' for x in p.slopes_us())} µs per decision" \
            if len(p.pairs) > 1 else ""
        out.append(f"tournament path (arena tournament --workers 0, {run.path_bots}): {len(p.pairs)} pair(s) of "
                   f"{p.short.matches:,} then {p.long.matches:,} matches, "
                   f"{sum(r.decisions for r in shorts):,} / {sum(r.decisions for r in longs):,} decisions, "
                   f"{sum(r.cpu_s for r in shorts):.2f} / {sum(r.cpu_s for r in longs):.2f} s CPU of the arena "
                   f"process (bots excluded), {sum(r.wall_s for r in longs):.1f} s wall for the long ones "
                   f"({p.decisions_per_s():,.0f} decisions/s){each}")
        if run.figures.one_us is not None and p.cpu_us_per_decision > 0:
            extra = (p.cpu_us_per_decision - run.figures.one_us) * p.decisions_per_match
            out.append(f"  where it goes: start-up {p.fixed_cpu_s:.2f} s CPU per run (the intercept); "
                       f"{p.decisions_per_match:.0f} decisions per match; each match costs {extra:,.0f} µs CPU "
                       "above the one-match bench's per-decision figure (log files, results, ladder, progress), "
                       "which weighs on each decision in inverse proportion to the decisions per match")
    for label, c in (("thinking", run.think), ("saturated", run.saturated)):
        if c is not None:
            out.append(f"{CONCURRENT} matches, {label}: {c.charges.decisions:,} decisions in {c.seconds:.1f} s "
                       f"({c.decisions_per_s:,.0f}/s, {c.cpu_us_per_decision:.1f} µs CPU each), p50 / p99 "
                       f"{c.latency_ms(0.5):.2f} / {c.latency_ms(0.99):.2f} ms over {len(c.latency_us):,} samples, "
                       f"{c.timeouts:,} timeouts; W = L/λ = {CONCURRENT} / {c.decisions_per_s:,.0f} per s = "
                       f"{c.littles_law_ms:.2f} ms")
    for game, s in run.scaling.items():
        pairs = ", ".join(f"{a.steady_rate:.1f} → {b.steady_rate:.1f}" for a, b in zip(s.one, s.many, strict=False))
        out.append(f"every core, {game}: {s.one[0].matches:,} matches per run; steady matches/s 1 → 2 workers: "
                   f"{pairs}; machine's scaling before each pair: {', '.join(f'{x:.2f}' for x in s.machine)}")
    if run.figures.cores_note:
        out.append(f"every core: not measured ({run.figures.cores_note})")
    if run.acpc is not None:
        ours = [f"one match {run.one.decisions_per_s:,.0f}" if run.one is not None else "",
                f"tournament path {run.path.decisions_per_s():,.0f}" if run.path is not None else ""]
        out.append(f"ACPC dealer (report only): {run.acpc.decisions:,} decisions in {run.acpc.seconds:.1f} s, "
                   f"{run.acpc.decisions_per_s:,.0f} decisions/s; ours: {', '.join(x for x in ours if x)} decisions/s")
    elif run.acpc_error:
        out.append(f"ACPC dealer: {run.acpc_error}")
    else:
        out.append("ACPC dealer: not run (set ACPC_DEALER to a command playing one match with its players)")
    out.append(f"whole run {run.seconds:.0f} s; one machine, {len(os.sched_getaffinity(0))} usable cores, load average "
               + "/".join(f"{x:.2f}" for x in os.getloadavg()) + ": on a shared machine every ratio is noisy")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.tools.bench_targets``: run, print, and return 0 if every target was
    met, 1 naming each one missed (or not measured), 2 for a wrong option or a failed run."""
    parser = argparse.ArgumentParser(prog="python -m arena.tools.bench_targets", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every phase briefly: a smoke test, not a measurement")
    parser.add_argument("--seconds", type=float, help="seconds per server window (default 8; quick 1)")
    parser.add_argument("--path-games", type=int, nargs=2, metavar=("SHORT", "LONG"),
                        help="matches per pair of the two tournament-path runs (default 40 200)")
    parser.add_argument("--path-bots", nargs="+", metavar="MANIFEST", default=[],
                        help="the tournament path's bots (default: two copies of sample_bots/c_bot, whose Écarté "
                             "matches are long: about 250 decisions)")
    args = parser.parse_args(argv)
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=150)
    s = QUICK if args.quick else Settings()
    if args.seconds is not None:
        if not 0 < args.seconds <= 600:
            console.print("[red]error:[/red] --seconds must be between 0 and 600", soft_wrap=True)
            return 2
        s = replace(s, seconds=args.seconds)
    if args.path_games is not None:
        if not 1 <= args.path_games[0] < args.path_games[1]:
            console.print("[red]error:[/red] --path-games SHORT LONG needs 1 <= SHORT < LONG", soft_wrap=True)
            return 2
        s = replace(s, path_games=(args.path_games[0], args.path_games[1]))
    if args.path_bots:
        absent = [m for m in args.path_bots if not Path(m).is_file()]
        if len(args.path_bots) < 2 or absent:
            shown = escape(", ".join(absent) or "one given")  # the user's paths are data, never markup
            console.print(f"[red]error:[/red] --path-bots needs two or more manifest files ({shown}: not found); "
                          "give their paths", soft_wrap=True)  # one line whatever the terminal's width
            return 2
        s = replace(s, path_bots=tuple(str(Path(m).resolve()) for m in args.path_bots))
    say = lambda text: console.print(f"[dim]{text}...[/dim]")  # noqa: E731
    try:
        run = run_targets(s, say, os.environ.get("ACPC_DEALER"))
    except (RuntimeError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    ts = print_report(console, run)
    bad = missed(ts)
    for t in bad:
        console.print(f"[red]missed[/red] {t.line()}", highlight=False)
    if args.quick:
        console.print("--quick: a smoke test; its ratios are not a measurement", highlight=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
