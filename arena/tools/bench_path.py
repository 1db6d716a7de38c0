"""The user's path, measured the way a user runs it (issue 24, :mod:`arena.tools.bench_targets`).

Every figure here comes from ``arena tournament`` itself, run as a subprocess with its default
options (sandboxed bots, unless this machine cannot sandbox) on copies of the C sample bot
(``sample_bots/c_bot``, built by ``make``), each run on a fresh SQLite file in a temporary
directory. The subprocess is ``python -m arena.cli ARGS`` (exactly what the ``arena`` script
runs) with ``ARENA_CPU_REPORT=FILE``: at its end it writes its own CPU seconds (user + system of
every thread of that process, ``RUSAGE_SELF``: the bots, its children, are left out) to ``FILE``
as JSON. Matches, decisions
and the commit times (``finished_at``) are read from the database afterwards.

* :func:`tournament_path`: ``--workers 0`` (every match in the ``arena`` process), pairs of
  tournaments of two C bots of different lengths; the CPU difference over the decision
  difference, pooled over the pairs, is the **CPU per decision** of the path, free of the fixed
  start-up cost (imports, bots launched, the final table), which the intercept gives.
* :func:`workers_scaling`: ``--workers 1`` then ``--workers N`` (N = 2 on a machine with two or
  more usable cores), alternating, four C bots, for one game; the steady matches per second
  (from the commit that ends the first fifth to the last) of each, and before each pair the
  machine's own two-core scaling (:func:`arena.tools.bench_workers.machine_scaling`).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.schedule.launcher import sandbox_problem
from arena.store.sqlite import Store
from arena.tools.bench_workers import machine_scaling

ROOT = Path(__file__).resolve().parents[2]
C_BOT = ROOT / "sample_bots" / "c_bot"

RUN_TIMEOUT_S = 600.0
"""Seconds one ``arena tournament`` run may take before it is killed (an error)."""


def c_bots(workdir: Path, n: int) -> list[str]:
    """Manifests of ``n`` copies of the C sample bot, named ``c1`` .. ``cn``, one folder each in
    ``workdir``. Raises ``FileNotFoundError`` (one line: run make) if it is not built."""
    if not C_BOT.exists():
        raise FileNotFoundError(f"{C_BOT} is not built: run make")
    out = []
    for i in range(1, n + 1):
        d = workdir / f"c{i}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy2(C_BOT, d / "c_bot")
        (d / "bot.toml").write_text(f'name = "c{i}"\nlanguage = "c"\ncommand = ["./c_bot"]\n')
        out.append(str(d / "bot.toml"))
    return out


def _trust_flag() -> list[str]:
    """``["--trust-bots"]`` on a machine that cannot sandbox (no bubblewrap), as ``make run`` does."""
    return ["--trust-bots"] if sandbox_problem() is not None else []


@dataclass(frozen=True)
class TournamentRun:
    """One ``arena tournament`` run: its arguments' gist, matches and decisions committed, the
    ``arena`` process's own CPU seconds (children excluded), its wall seconds (start to exit) and
    the sorted commit times of its matches (``finished_at``, seconds since the epoch)."""

    label: str
    matches: int
    decisions: int
    cpu_s: float
    wall_s: float
    finished: list[float] = field(default_factory=list)

    @property
    def steady_rate(self) -> float:
        """Matches per second from the commit that ends the first fifth of the run to the last
        one (the bots' launches left out), 0 with fewer than two commits after it."""
        k = len(self.finished) // 5
        span = self.finished[-1] - self.finished[k] if len(self.finished) > k + 1 else 0.0
        return (len(self.finished) - 1 - k) / span if span > 0 else 0.0


def run_tournament_cli(args: Sequence[str], workdir: Path, label: str) -> TournamentRun:
    """Run ``arena tournament ARGS --db FILE --logs DIR --quiet`` in a subprocess (with
    ``ARENA_CPU_REPORT``: see :func:`arena.cli.main`) with a fresh database and log directory under
    ``workdir``; return what it did. Raises ``RuntimeError`` with the tail of its error output if
    it fails or writes no report."""
    db, logs, report = workdir / f"{label}.db", workdir / f"logs-{label}", workdir / f"{label}.json"
    command = [sys.executable, "-m", "arena.cli", "tournament", *args, "--db", str(db), "--logs", str(logs), "--quiet"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               ARENA_CPU_REPORT=str(report))
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or not report.exists():
        raise RuntimeError(f"arena tournament ({label}) failed, status {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-400:]}")
    cpu = float(json.loads(report.read_text())["cpu_s"])
    store = Store(db, create=False)
    try:
        tid = store.newest_tournament()
        rows = [(m["decisions"], m["finished_at"]) for m in (store.matches(tid) if tid is not None else [])
                if m["finished_at"] is not None]
    finally:
        store.close()
    shutil.rmtree(logs, ignore_errors=True)
    return TournamentRun(label, len(rows), sum(int(d or 0) for d, _ in rows), cpu, wall, sorted(t for _, t in rows))


# --------------------------------------------------------------------------- the tournament path


@dataclass(frozen=True)
class PathFigures:
    """:func:`tournament_path`: pairs of a short and a long run (same options, same two bots),
    each pair run back to back; the figures pool the pairs."""

    pairs: tuple[tuple[TournamentRun, TournamentRun], ...]

    @classmethod
    def pooled(cls, parts: Sequence[PathFigures]) -> PathFigures:
        """The pairs of ``parts`` together (measured at different moments of one bench run)."""
        return cls(tuple(pair for part in parts for pair in part.pairs))

    @property
    def short(self) -> TournamentRun:
        """The first pair's short run."""
        return self.pairs[0][0]

    @property
    def long(self) -> TournamentRun:
        """The first pair's long run."""
        return self.pairs[0][1]

    @property
    def cpu_us_per_decision(self) -> float:
        """The ``arena`` process's CPU per decision in µs, pooled over the pairs: the sum of (CPU
        long − CPU short) ÷ the sum of (decisions long − decisions short); 0 if the long runs
        made no more decisions. A pair alone moves by ±8% between pairs of one bench run (its
        figure is the difference of two CPU totals); pooling pairs spread over the run also
        averages the machine's drift, as the one-match baseline's rounds do."""
        extra = sum(b.decisions - a.decisions for a, b in self.pairs)
        return sum(b.cpu_s - a.cpu_s for a, b in self.pairs) * 1e6 / extra if extra > 0 else 0.0

    def slopes_us(self) -> list[float]:
        """Each pair's own CPU per decision in µs (the spread behind :attr:`cpu_us_per_decision`)."""
        return [(b.cpu_s - a.cpu_s) * 1e6 / (b.decisions - a.decisions) if b.decisions > a.decisions else 0.0
                for a, b in self.pairs]

    @property
    def fixed_cpu_s(self) -> float:
        """The intercept: CPU seconds a run spends whatever its length (start-up, imports, bots
        launched, the final table): the short runs' mean of CPU − decisions ×
        :attr:`cpu_us_per_decision`."""
        per = self.cpu_us_per_decision / 1e6
        return statistics.fmean(a.cpu_s - a.decisions * per for a, _ in self.pairs)

    @property
    def decisions_per_match(self) -> float:
        """Decisions per match over every run."""
        runs = [r for pair in self.pairs for r in pair]
        n = sum(r.matches for r in runs)
        return sum(r.decisions for r in runs) / n if n else 0.0

    def decisions_per_s(self) -> float:
        """Decisions per second of wall time of the long runs, start-up included."""
        wall = sum(b.wall_s for _, b in self.pairs)
        return sum(b.decisions for _, b in self.pairs) / wall if wall > 0 else 0.0


def tournament_path(short_games: int, long_games: int, workdir: Path, progress: Callable[[str], None] | None = None,
                    game: str = "ecarte", bots: Sequence[str] = (), tag: str = "") -> PathFigures:
    """One pair of ``arena tournament --workers 0`` runs with default options (``--games``
    ``short_games`` then ``long_games``, seed 1, ``--game game``) of the bots of the manifests
    ``bots``, by default two copies of the C sample bot; see :class:`PathFigures` (and its
    :meth:`~PathFigures.pooled` for several pairs). ``tag`` tells the runs' files apart from
    another pair's in ``workdir``. Raises ``ValueError`` unless 1 <= short_games < long_games;
    ``RuntimeError`` if a run fails."""
    if not 1 <= short_games < long_games:
        raise ValueError("the tournament path needs 1 <= short games < long games")
    say = progress or (lambda text: None)
    bots = list(bots) or c_bots(workdir / "path-bots", 2)
    runs = []
    for games in (short_games, long_games):
        say(f"the user's path: arena tournament --workers 0, {len(bots)} bots, {games:,} matches per pair")
        runs.append(run_tournament_cli(["--bots", *bots, "--games", str(games), "--workers", "0", "--game", game,
                                        *_trust_flag()], workdir, f"path-{games}{tag}"))
    return PathFigures(((runs[0], runs[1]),))


# --------------------------------------------------------------------------- every core


@dataclass(frozen=True)
class ScalingFigures:
    """:func:`workers_scaling` for one game: the runs on 1 and on ``workers`` workers (in pairs,
    side by side in time) and the machine's two-core scaling measured before each pair."""

    game: str
    workers: int
    one: list[TournamentRun]
    many: list[TournamentRun]
    machine: list[float]

    @property
    def speedup(self) -> float:
        """Median over the pairs of (steady matches/s on ``workers``) ÷ (on 1 worker); 0 when
        not measured."""
        ratios = [b.steady_rate / a.steady_rate for a, b in zip(self.one, self.many, strict=False) if a.steady_rate > 0]
        return statistics.median(ratios) if ratios else 0.0

    @property
    def machine_scaling(self) -> float:
        """Median of the machine's own two-core scaling over the run, at most :attr:`workers`
        (0 when not measured). N cores cannot do more than N times the work of one: a figure
        above N says that a neighbour slowed the process measured alone, not that the machine
        scales beyond its cores, so the baseline the workers are compared with is capped there
        (each measured figure is still printed)."""
        return min(statistics.median(self.machine), float(self.workers)) if self.machine else 0.0

    @property
    def ratio(self) -> float:
        """:attr:`speedup` ÷ :attr:`machine_scaling`: 1.0 when the workers use the second core as
        fully as the machine lets one CPU-bound process use it (0 when not measured)."""
        return self.speedup / self.machine_scaling if self.machine_scaling > 0 else 0.0


def workers_scaling(game: str, games: int, workdir: Path, repeats: int = 2,
                    progress: Callable[[str], None] | None = None) -> ScalingFigures | None:
    """Alternate ``arena tournament --workers 1`` and ``--workers 2`` (default options, four C
    bots, ``games`` matches per pair, ``--game game``) ``repeats`` times, measuring the machine's
    scaling (:func:`~arena.tools.bench_workers.machine_scaling`, one round) before each pair.
    None on a machine with fewer than two usable cores. Raises ``RuntimeError`` if a run fails."""
    if len(os.sched_getaffinity(0)) < 2:
        return None
    say = progress or (lambda text: None)
    bots = c_bots(workdir / f"workers-bots-{game}", 4)
    one: list[TournamentRun] = []
    many: list[TournamentRun] = []
    machine: list[float] = []
    for i in range(repeats):
        x = machine_scaling(rounds=1)
        if x is not None:
            machine.append(x)
        for n, runs in ((1, one), (2, many)):
            say(f"every core: {game}, four C bots, {games} matches per pair, --workers {n} ({i + 1}/{repeats})")
            runs.append(run_tournament_cli(["--bots", *bots, "--games", str(games), "--workers", str(n),
                                            "--game", game, *_trust_flag()], workdir, f"w{n}-{game}-{i}"))
    return ScalingFigures(game, 2, one, many, machine)


def scratch() -> Path:
    """A fresh temporary directory for the runs (the caller removes it)."""
    return Path(tempfile.mkdtemp(prefix="arena-bench-path-"))

