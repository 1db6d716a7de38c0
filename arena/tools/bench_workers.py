"""``arena bench``'s workers phase: matches per second of one tournament on 1 and on 2 workers.

The tournament: 8 bots - four minimal C bots (``sample_bots/c_bot``, built by ``make``, under
four names) and the Python and JavaScript sample bots ``random``, ``greedy``, ``highcard`` and
``cautious`` - in a round-robin of duplicate pairs, ``games`` matches per pair, the same seed
each time, played by ``arena tournament --workers N`` for each N in turn
(:func:`arena.schedule.tournament.run_tournament` with ``workers``: N worker processes, each with
its own sandboxed copies of the bots, each pinned to a core with its bots as by default, then the
same unpinned for comparison). Figures per run:

* **wall**: matches / seconds from the start of play (worker processes starting, bots launching)
  to the last result;
* **steady**: matches per second from the commit that ends the first fifth of the tournament to
  the last one (``finished_at`` in the database), which leaves out the start-up: each worker
  launches its own copies of every bot (two per slot and bot), as its matches first need them;
* **CPU per match**: CPU seconds of every process of the run (this one, the workers, the bots)
  per match, and the load average at the start: the rate can only scale with the cores that
  other programs leave free;

and the ratio of each to the figure of 1 pinned worker (target :data:`WORKERS_TARGET_RATIO` for
2 pinned workers on a 2-core machine: one core, then two). The runs on 1 and 2 pinned workers
alternate :data:`REPEATS` times and each row gives the median of its runs (with their range):
the speed of a shared virtual machine changes from one minute to the next with its neighbours, so
runs taken side by side in time are compared, never one lucky run with an unlucky one. Before each
of those pairs, :func:`machine_scaling` measures what the machine itself gives at that moment:
how many times the work of one CPU-bound process two such processes do, each on its own core;
the workers cannot scale better than that. The same tournament is then played unpinned and in one
process (``--workers 0``, ``--concurrency`` the number of cores: the path before workers) for
reference.
Each run uses a fresh SQLite file in a temporary directory, or the ``--db`` URL given (e.g. a
PostgreSQL server; the tournaments are then added to it). The results tables of the runs are
compared: they must be identical.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.match.referee import MatchConfig
from arena.schedule.front import LocalWorkers
from arena.schedule.launcher import load_manifest, sandbox_problem
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.schedule.worker import open_db
from arena.store.postgres import shown as shown_db

WORKERS_TARGET_RATIO = 1.7
"""Target: 2 workers play at least this many times the matches per second of 1 (2 cores)."""

ROOT = Path(__file__).resolve().parent.parent.parent
OTHER_BOTS = ("random", "greedy", "highcard", "cautious")


class WorkersRun(msgspec.Struct):
    """One tournament of the phase: workers, matches after the start-up (the first fifth of the
    commits), wall seconds, seconds from the end of the start-up to the last commit, and the
    results table (bot, Elo, wins, losses, draws) for the comparison."""

    workers: int
    matches: int
    wall_s: float
    """Seconds from the start of the run to its last result (the workers' shutdown left out)."""
    steady_s: float
    table: list[tuple[str, str, int, int, int]]
    cpu_s: float = 0.0
    """CPU seconds (user + system) of this process and its children (workers, bots) in the run."""
    load: float = 0.0
    """The 1-minute load average when the run started (other programs compete for the cores)."""
    total: int = 0
    """Matches of the tournament (``matches``: those after the first fifth of the commits)."""
    pinned: bool = True
    """Each worker pinned to a core, its bots with it (the default of ``--workers``)."""

    @property
    def wall_rate(self) -> float:
        """Matches per second, start-up included."""
        return self.total / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def steady_rate(self) -> float:
        """Matches per second from the commit that ends the first fifth to the last commit."""
        return (self.matches - 1) / self.steady_s if self.steady_s > 0 else 0.0


def bench_bots(workdir: Path) -> list[str]:
    """The manifests of the phase's 8 bots: four copies of the C bot in ``workdir`` (one folder
    each: an archive holds one bot) and the four sample bots. Raises ``FileNotFoundError`` if
    ``sample_bots/c_bot`` is not built (``make``)."""
    binary = ROOT / "sample_bots" / "c_bot"
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is not built: run make")
    out = []
    for i in range(1, 5):
        d = workdir / f"c{i}"
        d.mkdir(parents=True)
        shutil.copy2(binary, d / "c_bot")
        (d / "bot.toml").write_text(f'name = "c{i}"\nlanguage = "c"\ncommand = ["./c_bot"]\n')
        out.append(str(d / "bot.toml"))
    return out + [str(ROOT / "sample_bots" / f"{name}.toml") for name in OTHER_BOTS]


def run_workers(workers: int, games: int, db: str | None, workdir: Path, seed: int = 1,
                pin: bool = True, tag: str = "") -> WorkersRun:
    """Play the phase's tournament on ``workers`` workers (each pinned to a core with ``pin``);
    ``db``: a database URL or path (default: a fresh SQLite file in ``workdir``); ``tag`` tells
    the files of repeated runs apart."""
    run = f"{workers}{'' if pin else 'u'}{tag}"
    manifests = bench_bots(workdir / f"bots{run}")
    store = open_db(db or str(workdir / f"w{run}.db"))
    config = TournamentConfig(games=games, seed=seed, logs_dir=str(workdir / f"logs{run}"),
                              trust_bots=sandbox_problem() is not None, manifests=manifests, match=MatchConfig())
    config.concurrency = os.cpu_count() or 2  # --workers 0: today's default
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    cpu0 = _cpu()
    t0 = time.time()  # the clock of the matches' finished_at (each process's own reading of it)
    report = trio.run(run_tournament, store, [load_manifest(m) for m in manifests], config, None, None, None, None,
                      LocalWorkers(workers, pin=pin) if workers else None)
    times = sorted(r["finished_at"] for r in store.matches(report.tournament_id) if r["finished_at"] is not None)
    wall = (times[-1] if times else time.time()) - t0  # to the last result (the shutdown after is not play)
    k = len(times) // 5  # the first fifth of the commits: start-up (bots launched as their matches come)
    table = sorted((r.name, f"{r.elo:.3f}", r.wins, r.losses, r.draws) for r in report.ratings)
    store.close()
    steady = (times[-1] - times[k]) if len(times) > 1 else 0.0
    return WorkersRun(workers, len(times) - k, wall, steady, table, _cpu() - cpu0, load, report.matches,
                      pin and workers > 0)


def _cpu() -> float:
    """CPU seconds so far of this process and of its waited-for children (and theirs)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


REPEATS = 3
"""How many times the pinned runs on 1 and on 2 workers alternate (module docstring)."""
RUNS = ((1, True), (2, True)) * REPEATS + ((1, False), (2, False), (0, False))
"""The phase's runs, ``(workers, pinned)``: 1 and 2 workers pinned to cores (the default; the
target compares these two), alternating; then the same unpinned, and every match in one process."""

SPIN_LOOPS = 3_000_000
"""Iterations of :func:`machine_scaling`'s CPU-bound loop: about 0.2 s of one core here."""
_SPIN = """import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
t = time.perf_counter()
x = 0
for i in range(int(sys.argv[2])):
    x += i
print(time.perf_counter() - t)
"""


def machine_scaling(loops: int = SPIN_LOOPS, rounds: int = 3) -> float | None:
    """How many times the work of one CPU-bound process two do side by side, each pinned to a
    core of its own (2 × seconds alone / seconds of the slower of the two), the median of
    ``rounds`` alternations: 2.0 on two idle physical cores, less when the cores are hyperthreads
    of one another or a neighbour of the virtual machine takes its share (more than 2.0 when a
    neighbour slowed the process alone). None with fewer than two usable cores."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None

    def spin(*on: int) -> float:
        procs = [subprocess.Popen([sys.executable, "-c", _SPIN, str(c), str(loops)], stdout=subprocess.PIPE, text=True)
                 for c in on]
        return max(float(p.communicate()[0]) for p in procs)

    ratios = []
    for _ in range(rounds):
        alone = spin(cores[0])
        both = spin(cores[0], cores[1])
        if both > 0:
            ratios.append(2 * alone / both)
    return statistics.median(ratios) if ratios else None


class WorkersPhase(msgspec.Struct):
    """What :func:`workers_phase` measured: its runs in order, and the machine's own scaling
    (:func:`machine_scaling`) before each pair of pinned runs."""

    runs: list[WorkersRun]
    scaling: list[float]


def workers_phase(games: int = 20, db: str | None = None, counts: tuple[tuple[int, bool], ...] = RUNS,
                  progress: Any = None) -> WorkersPhase:
    """Run the tournament once per ``(workers, pinned)`` in ``counts``, in one temporary
    directory (removed after), measuring :func:`machine_scaling` before each pinned 1-worker run."""
    say = progress or (lambda text: None)
    workdir = Path(tempfile.mkdtemp(prefix="arena-bench-workers-"))
    try:
        runs: list[WorkersRun] = []
        scaling: list[float] = []
        for i, (n, pin) in enumerate(counts):
            if n == 1 and pin:
                x = machine_scaling()
                if x is not None:
                    scaling.append(x)
            say(f"workers: a round-robin of 8 bots (4 C), {games} matches per pair, "
                + (f"on {n} worker(s){'' if pin else ', not pinned'}" if n else "in one process (--workers 0)"))
            runs.append(run_workers(n, games, db, workdir, pin=pin, tag=f"-{i}"))
        return WorkersPhase(runs, scaling)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def print_workers(console: Any, phase: WorkersPhase, db: str | None) -> None:
    """The phase's table: a row per kind of run (1 and 2 workers pinned, the same unpinned, one
    process) with the median of its runs and their range, the ratios of the medians to 1 pinned
    worker's, then the ratio of each side-by-side pair of pinned runs and the machine's own
    scaling (:func:`machine_scaling`) measured in the same run."""
    from rich import box
    from rich.table import Table

    runs = phase.runs
    kinds: dict[tuple[int, bool], list[WorkersRun]] = {}
    for r in runs:
        kinds.setdefault((r.workers, r.pinned), []).append(r)
    base = kinds[runs[0].workers, runs[0].pinned]
    base_wall, base_steady = _median([r.wall_rate for r in base]), _median([r.steady_rate for r in base])
    table = Table(title=f"workers: one tournament of 8 bots, {runs[0].total} matches, database "
                        f"{'SQLite (temporary file)' if db is None else shown_db(db)}", box=box.SIMPLE_HEAVY)
    for col in ("workers", "runs", "matches/s (wall)", "matches/s (steady)", "ratio wall", "ratio steady",
                "target", "CPU s/match", "load avg"):
        table.add_column(col, justify="right")

    def ratio(value: float, baseline: float, targeted: bool) -> str:
        x = value / baseline if baseline > 0 else 0.0
        if not targeted:
            return f"{x:.2f}"
        colour = "green" if x >= WORKERS_TARGET_RATIO else "red"
        return f"[{colour}]{x:.2f}[/{colour}]"

    def spread(values: list[float]) -> str:
        mid = f"{_median(values):.2f}"
        return mid if len(values) == 1 else f"{mid} ({min(values):.1f}–{max(values):.1f})"

    for (workers, pinned), group in kinds.items():
        two = workers == 2 and pinned
        label = (f"{workers}{'' if pinned else ' (not pinned)'}" if workers
                 else f"0 (one process, concurrency {os.cpu_count()})")
        walls, steadies = [r.wall_rate for r in group], [r.steady_rate for r in group]
        table.add_row(label, str(len(group)), spread(walls), spread(steadies),
                      ratio(_median(walls), base_wall, two), ratio(_median(steadies), base_steady, two),
                      f"≥ {WORKERS_TARGET_RATIO}" if two else "",
                      f"{_median([r.cpu_s / max(r.total, 1) for r in group]):.3f}",
                      f"{_median([r.load for r in group]):.1f}")
    console.print(table)
    pairs = [(a, b) for a, b in zip(runs, runs[1:], strict=False)
             if (a.workers, a.pinned, b.workers, b.pinned) == (1, True, 2, True)]
    if pairs:
        console.print("each pair of pinned runs, 1 then 2 workers side by side in time, ratio wall / steady: "
                      + ", ".join(f"{b.wall_rate / a.wall_rate:.2f} / {b.steady_rate / a.steady_rate:.2f}"
                                  for a, b in pairs if a.wall_rate > 0 and a.steady_rate > 0))
    if phase.scaling:
        console.print(f"this machine in the same run: two CPU-bound processes, one per core, did "
                      f"{_median(phase.scaling):.2f}× the work of one (median; before each pair: "
                      f"{', '.join(f'{x:.2f}' for x in phase.scaling)}; 2.00 on two free cores): "
                      f"2 workers at that ratio to 1 use the second core as fully as the machine allows")
    if db is not None:  # one database: tournaments t1, t2, ... whose match ids (so the bots' random choices) differ
        console.print(f"results tables not compared: the runs are successive tournaments of one database; "
                      f"tests/test_workers_postgres.py compares PostgreSQL with SQLite; {os.cpu_count()} cores")
        return
    same = all(r.table == runs[0].table for r in runs)
    console.print(f"results tables (Elo, wins, losses, draws per bot): {'identical' if same else 'DIFFERENT'} "
                  f"across the {len(runs)} runs; {os.cpu_count()} cores. Pinned: each worker and its bots on a core "
                  "of their own (the default); not pinned: the kernel moves them between cores. CPU s/match "
                  "counts every process of the run (referee, workers, bots): equal CPU per match with a lower rate "
                  "means the cores were busy with other programs (see the load average), not that workers wait")
