"""``make bench-season``: what a season costs (issue 21), a full store next to an empty one.

For each database (SQLite, then PostgreSQL):

1. **Two stores.** The *full* store holds a synthetic season, by default 10,000 bots and 10
   million finished matches, bulk-loaded (:mod:`arena.store.season_seed`: the rows
   :meth:`~arena.store.sqlite.Store.record_result` would have left, and a prior fit); the
   *empty* store only the bench's bots. How long seeding took is printed. The seeded SQLite file
   is kept in the work directory (``--workdir``) and reused by later runs (``--reseed`` makes it
   again); each run plays on a copy of it. PostgreSQL is seeded afresh at each run, in schemas
   ``arena_season_full`` and ``arena_season_empty`` of a throwaway cluster
   (:mod:`arena.tools.pg_cluster`, PostgreSQL's own durability settings) or of the database
   ``--db postgresql://...`` names (those two schemas are dropped and made again there).
2. **The same contest on each.** ``arena serve`` (the real command, a subprocess) runs on each
   store for the same time (``--seconds``), ``--rounds`` times each (default 2) in a balanced
   order, full, empty, empty, full (:func:`run_order`: the machine's speed drifts along the
   bench, and the first run after the full store's copy was the slower whichever store it was),
   with ``--bots`` remote instant bots
   (``sample_bots/bench/instant``, one process holding every connection with ``ARENA_BOTS``),
   registered with their token by :meth:`Store.add_bot` before the server starts; the server's
   own settings, except that all the bots come from one address (``[server]
   max_conns_per_addr``), ``concurrency`` lets every bot play, and the ladder's intervals of a
   big field are refitted every ``--fit-intervals-s`` (``fit_intervals_s``, default 20 s instead of
   the contest default 120 s), so that full refits happen during the run on both stores. The
   contest keeps its default ``[retention]``: a minute after the start it runs ``arena archive``
   in a niced child. The full store's history is in the state a season's daily retention
   leaves (its logs gone, as archived: :mod:`arena.store.season_seed`): the run's logs folder
   starts with the archive's state at today's cut (:func:`arena.store.log_archive.mark_archived`).
   Without it, that first run walked the seeded 7.7 million matches older than the cut, in
   vain (their logs never existed), during the whole window, next to nothing on the empty
   store: a one-off catch-up that an upgraded store pays once, not a season's steady cost.
3. **Figures**, side by side: the time until every bot was welcomed (from the moment the server
   announced its ports; also its start-up before that); the time until the ladder's fitter had
   stored its first fit, when the window starts (the fitter's start-up: on the full store it reads
   the whole ladder, 9-10 s of CPU, and refits the ratings from the seeded ones; a season runs for
   weeks, and its rate is that of a running contest, not of its first half-minute after a
   restart, which this figure shows; a store's second run starts from the fit its first run
   left, and waits for a newer one); results per second over the windows (a store's results
   over all its windows' seconds; each run's own rate is shown too, and every other figure is
   the worst run's: :func:`arena.tools.season_report.pool_runs`);
   result-commit p50 and p99 and pairing-decision p99 (the server's ``/metrics`` histograms
   ``arena_result_commit_seconds`` and ``arena_pairing_decision_seconds``, counted over the
   window only; a percentile is interpolated linearly within its bucket, as Prometheus'
   ``histogram_quantile`` does, so it is as fine as the buckets); the ladder fit's wall and CPU
   times, apart for the fits of the ratings alone and for the full refits (gauges
   ``arena_ladder_fit_seconds``, ``arena_ladder_fit_cpu_seconds``, ``arena_ladder_fit_full``,
   ``arena_ladder_full_fit_seconds``, ``arena_ladder_full_fit_cpu_seconds``: the largest seen in
   the scrapes once a second and in one more scrape after the idle pages, just before the server
   stops) and the ratings' lag (``arena_ladder_fit_lag_results``,
   ``arena_ladder_fit_age_seconds``, the largest seen in the window; on the full
   store the age counts from the seeded fit, made when the seed was, until the server's first
   fit); the p99 of
   five web pages (sequential requests after the window: those of
   :func:`arena.tools.bench_pages.page_p99s` where that module exists, else the leaderboard, a
   bot's matches, the match list, a match's replay and the matches in play), first while every
   bot plays (shown: with instant bots the server's loop is saturated, and a page waits its turn
   behind the matches), then once the bots have gone (the store's own cost, which the target is
   about: "with 10,000 bots and 10 million matches"); the
   server's RSS (``/proc``, at the window's end and its peak); database and log bytes per match
   (growth over the run / matches recorded by it). A figure the server does not publish is
   shown as absent, never made up.
4. **Targets** (issue 21): results per second on the full store at least
   :data:`RATE_RATIO_TARGET` of the empty store's; pairing decision p99 under
   :data:`PAIRING_P99_TARGET_S`; a full refit of the full store's bots under
   :data:`FIT_TARGET_S` of CPU (the fitter is niced on a saturated machine: its wall time,
   shown beside, measures the load more than the fit; no full refit seen is a miss); every
   page's p99, idle, under :data:`PAGE_P99_TARGET_S`; every bot welcomed within
   :data:`WELCOME_TARGET_S`. The exit status is 1 when one is missed, and each miss is
   named; 3 when something the bench needs is missing (gcc, PostgreSQL).

The runs' stores and logs are removed at the end (``--keep`` keeps them in the work directory,
and the PostgreSQL schemas); the cached seed stays.

The figures, the targets and the table are :mod:`arena.tools.season_report`'s.
``python -m arena.tools.bench_season --help`` lists the options; ``make bench-season`` runs it
with the defaults (``DB=postgresql://...`` for an existing server).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from arena.errors import DatabaseError
from arena.store.log_archive import Retention, mark_archived
from arena.store.postgres import is_url, redact, reset_schemas, schema_bytes
from arena.store.season_seed import SeasonSpec, SeedReport, seed_store
from arena.store.sqlite import SCHEMA_VERSION, Store
from arena.store.upgrade import upgrade
from arena.tools.bench_pages import page_p99s
from arena.tools.bench_server import build_instant_bot, percentile
from arena.tools.pg_cluster import start_cluster
from arena.tools.season_report import (
    WELCOME_TARGET_S,
    PageFigures,
    RunFigures,
    Scrape,
    check_targets,
    fetch_metrics,
    fit_figures,
    pool_runs,
    print_report,
    window_figures,
)

SCHEMAS = ("arena_season_full", "arena_season_empty")
"""The PostgreSQL schemas of the full and the empty store."""

PG_SETTINGS = {"shared_buffers": "512MB", "effective_cache_size": "4GB", "max_wal_size": "8GB",
               "checkpoint_timeout": "15min", "max_connections": "100"}
"""``postgresql.conf`` of the throwaway cluster: memory for a 10-million-match database, and
PostgreSQL's defaults otherwise (``fsync`` and ``synchronous_commit`` on: a real server's commits)."""

STOP_WAIT_S = 120.0
"""How long ``arena serve`` gets to stop after SIGTERM before it is killed (and the run says so)."""

DEFAULT_WORKDIR = Path.home() / ".cache" / "arena-bench-season"


@dataclass
class Settings:
    """The bench's options (see :func:`build_parser`)."""

    seconds: float = 60.0
    bots: int = 500
    spec: SeasonSpec = field(default_factory=SeasonSpec)
    pairing: str = "round-robin"
    page_requests: int = 200
    page_budget_s: float = 30.0
    welcome_wait_s: float = 30.0
    settle_wait_s: float = 300.0
    """Longest wait, after the welcomes, for the fitter's first fit (the window starts anyway then)."""
    start_timeout_s: float = 600.0
    workdir: Path = DEFAULT_WORKDIR
    reseed: bool = False
    keep: bool = False
    rounds: int = 2
    """How many times each store runs, in a balanced order (:func:`run_order`)."""
    fit_intervals_s: float = 20.0
    """The contest's ``fit_intervals_s``: short, so that the full store's intervals are refitted
    during the run (the contest default, 120 s, would leave every fit seen a fit of the ratings
    alone: the intervals seeded count as fresh at the fitter's start)."""


def db_size(target: str) -> int:
    """Bytes the store ``target`` takes: an SQLite file with its WAL, or on PostgreSQL the
    tables of the URL's schema with their indexes and TOAST."""
    if not is_url(target):
        return sum(p.stat().st_size for p in (Path(target), Path(f"{target}-wal")) if p.exists())
    return schema_bytes(target)


def dir_size(path: Path) -> int:
    """Bytes of every file under ``path`` (0 if it does not exist)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def rss_of(pid: int) -> tuple[int | None, int | None]:
    """``(VmRSS, VmHWM)`` of process ``pid`` in bytes, from ``/proc``; None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None, None
    found = {k: int(v.split()[0]) * 1024 for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(.*)$", text, re.M)}
    return found.get("VmRSS"), found.get("VmHWM")


def register_bots(target: str, names: list[str], token: str) -> float:
    """Register ``names`` in the store ``target`` with ``token`` (``secrets.token_urlsafe(24)``,
    one for all: the instant bots of one process share it) by :meth:`Store.add_bot`, as a token
    the arena generated where the store tells them apart (``generated=True``: stored as those
    of ``arena bots add`` are); returns the seconds it took."""
    vouch = {"generated": True} if "generated" in inspect.signature(Store.add_bot).parameters else {}
    t0 = time.perf_counter()
    store = Store(target)
    try:
        for name in names:
            store.add_bot(name, token, **vouch)
    finally:
        store.close()
    return time.perf_counter() - t0


def contest_file(path: Path, label: str, target: str, logs: Path, settings: Settings) -> None:
    """Write the contest TOML of one run (module docstring, step 2)."""
    room = settings.bots + 64
    q = json.dumps  # a TOML basic string is a JSON string
    path.write_text("\n".join([
        f"name = {q(f'bench-season {label}')}", f"game = {q(settings.spec.game)}", f"db = {q(target)}",
        f"logs = {q(str(logs))}", f"pairing = {q(settings.pairing)}", f"concurrency = {max(1, settings.bots // 2)}",
        "seed = 1", "shutdown_grace_s = 5.0", 'http_host = "127.0.0.1"', "http_port = 0",
        f"fit_intervals_s = {float(settings.fit_intervals_s)!r}",
        "[server]", 'host = "127.0.0.1"', "port = 0", f"max_conns_per_addr = {room}",
        f"max_connections = {max(512, room)}",
        "[uploads]", f"dir = {q(str(path.parent / 'uploads'))}", ""]))


_PORTS = re.compile(r"tcp://[^\s:]+:(\d+).*?http://[^\s:]+:(\d+)", re.S)


def _wait_ports(out: Path, proc: subprocess.Popen, timeout_s: float) -> tuple[int, int]:
    """The TCP and HTTP ports ``arena serve`` announced in its output file ``out``; raises
    ``RuntimeError`` (with the output's end) if it exits or says nothing for ``timeout_s``."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        m = _PORTS.search(out.read_text(errors="replace"))
        if m:
            return int(m.group(1)), int(m.group(2))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    tail = out.read_text(errors="replace")[-1500:]
    raise RuntimeError(f"arena serve did not announce its ports (exit status {proc.poll()}): {tail}")


def _stop(proc: subprocess.Popen | None, wait_s: float) -> bool:
    """SIGTERM ``proc`` and wait ``wait_s`` for it, then SIGKILL; True if it had to be killed."""
    if proc is None or proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return True
    return False


def _welcome(client: Any, fig: RunFigures, t_ready: float, wait_s: float) -> None:
    """Scrape ``/metrics`` every 0.1 s until every bot is connected (``arena_connections{role="bot"}``)
    or ``wait_s`` has passed since ``t_ready``; fill the welcome figures of ``fig``."""
    while time.perf_counter() < t_ready + wait_s:
        scrape = fetch_metrics(client)
        if scrape is not None:
            fig.welcomed = int(scrape.value("arena_connections", role="bot") or 0)
            fig.rate_limited = scrape.value("arena_auth_checks_total", verdict="rate_limited") or 0.0
            if scrape.t - t_ready <= WELCOME_TARGET_S:
                fig.welcomed_in_target = fig.welcomed
            if fig.welcomed >= fig.bots:
                fig.welcome_s = scrape.t - t_ready
                return
        time.sleep(0.1)


def _settle(client: Any, fig: RunFigures, t_ready: float, game: str, wait_s: float) -> None:
    """Scrape ``/metrics`` every 0.5 s until the server publishes a fit of its own fitter's, or
    ``wait_s`` has passed; ``fig.first_fit_s`` from ``t_ready``, or a note if none came. A fit is
    the fitter's own when it has a CPU figure (``arena_ladder_fit_cpu_seconds``: a seeded store's
    prior fit has none) and was stored since ``t_ready``: its age (``arena_ladder_fit_age_seconds``)
    is less than the time since. A store's second run starts with the fit its first run left,
    which has a CPU figure too."""
    end = time.perf_counter() + wait_s
    while time.perf_counter() < end:
        scrape = fetch_metrics(client)
        if scrape is not None and own_fit(scrape, game, t_ready):
            fig.first_fit_s = scrape.t - t_ready
            return
        time.sleep(0.5)
    fig.notes.append(f"no fit of the ladder within {wait_s:g} s of the welcomes: the window started without one")


def own_fit(scrape: Scrape, game: str, t_ready: float) -> bool:
    """Whether ``scrape`` shows a fit of ``game`` that the server's fitter made since ``t_ready``
    (:func:`_settle`)."""
    age = scrape.value("arena_ladder_fit_age_seconds", game=game)
    return (scrape.value("arena_ladder_fit_cpu_seconds", game=game) is not None and age is not None
            and age < scrape.t - t_ready)


def _window(client: Any, fig: RunFigures, seconds: float) -> list[Scrape]:
    """Scrape ``/metrics`` at the start of the window, once a second, and at its end (each read
    retried until it answers); returns the scrapes, first and last bounding the window."""
    def scrape_now(patience_s: float = 120.0) -> Scrape:
        deadline = time.perf_counter() + patience_s
        while True:
            s = fetch_metrics(client)
            if s is not None:
                return s
            if time.perf_counter() > deadline:
                raise RuntimeError("the server's /metrics did not answer for 2 minutes")
            time.sleep(0.2)

    scrapes = [scrape_now()]
    end = scrapes[0].t + seconds
    while time.perf_counter() < end:
        time.sleep(min(1.0, max(0.0, end - time.perf_counter())))
        s = fetch_metrics(client)
        if s is not None:
            scrapes.append(s)
    if scrapes[-1].t < end:
        scrapes.append(scrape_now())
    return scrapes


def measure_pages(client: Any, pages: dict[str, str], requests: int, budget_s: float) -> dict[str, PageFigures]:
    """Each page of ``pages`` (name -> path) requested ``requests`` times in a row, or for
    ``budget_s`` seconds if that comes first: the latency of each answer (request sent to body
    read), its p50 and p99 (nearest rank)."""
    import httpx


    out = {}
    for name, path in pages.items():
        fig, times = PageFigures(path=path), []
        end = time.perf_counter() + budget_s
        while len(times) < requests and time.perf_counter() < end:
            t0 = time.perf_counter()
            try:
                response = client.get(path)
                response.read()
                fig.status = response.status_code
            except httpx.HTTPError:
                fig.status = -1
            times.append(time.perf_counter() - t0)
            fig.errors += fig.status != 200
        fig.requests = len(times)
        fig.p99_s, fig.p50_s = percentile(times, 0.99), percentile(times, 0.5)
        out[name] = fig
    return out


def _pages(client: Any, bot: str) -> dict[str, str]:
    """The five pages measured: the leaderboard, a bot's matches, the match list, the replay of
    the newest finished match that has one, the matches in play."""
    replay = None
    try:
        listing = client.get("/api/history").json()
        replay = next((m["match_id"] for m in listing.get("matches", []) if m.get("replay")), None)
    except Exception:  # noqa: BLE001 - measured below as the page's errors
        pass
    return {"leaderboard": "/api/leaderboard", "bot's matches": f"/api/history?bot={quote(bot)}",
            "match list": "/api/history", "match replay": f"/api/replay/{quote(replay or 'none')}",
            "matches in play": "/api/matches"}


def _idle(client: Any, wait_s: float) -> None:
    """Wait (at most ``wait_s``) until the server has no bot connected and no match in play."""
    end = time.perf_counter() + wait_s
    while time.perf_counter() < end:
        s = fetch_metrics(client)
        if s is not None and not s.value("arena_connections", role="bot") and not s.value("arena_matches_in_play"):
            return
        time.sleep(0.2)


def pages_p99(client: Any, fig: RunFigures, base_url: str, settings: Settings) -> dict[str, PageFigures]:
    """The five pages' figures: :func:`arena.tools.bench_pages.page_p99s` (its representative
    pages, deep in the lists), or if it fails (noted in ``fig``) :func:`measure_pages` on
    :func:`_pages`."""
    try:
        found = page_p99s(base_url, requests=settings.page_requests)
        return {name: PageFigures(path=name, requests=settings.page_requests, p99_s=ms / 1000, status=200)
                for name, ms in found.items()}
    except (RuntimeError, OSError, TypeError, ValueError, KeyError) as exc:
        fig.notes.append(f"arena.tools.bench_pages.page_p99s failed ({exc}); the bench measured its own pages")
    return measure_pages(client, _pages(client, f"{settings.spec.prefix}-0"), settings.page_requests,
                         settings.page_budget_s)


def run_contest(label: str, target: str, workdir: Path, settings: Settings, token: str, binary: Path,
                archived: bool = False) -> RunFigures:
    """Run ``arena serve`` on the store ``target`` with the instant bots and measure it (module
    docstring, steps 2 and 3). ``archived``: the store holds a seeded history, whose logs are
    gone as if archived: the logs folder starts with the archive state a season's daily
    retention leaves (:func:`arena.store.log_archive.mark_archived`). Raises ``RuntimeError``
    if the server does not start."""
    import httpx

    fig = RunFigures(label=label, bots=settings.bots)
    logs = workdir / f"logs-{label}"
    shutil.rmtree(logs, ignore_errors=True)
    if archived:
        mark_archived(logs, Retention().logs_days)
    config = workdir / f"contest-{label}.toml"
    contest_file(config, label, target, logs, settings)
    size0 = db_size(target)
    out = workdir / f"serve-{label}.out"
    env = {**os.environ, "COLUMNS": "300"}
    t_spawn = time.perf_counter()
    with open(out, "wb") as fh:
        server = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(config)],
                                  stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                  cwd=workdir)
    bots = None
    try:
        port, http_port = _wait_ports(out, server, settings.start_timeout_s)
        t_ready = time.perf_counter()
        fig.startup_s = t_ready - t_spawn
        with open(workdir / f"bots-{label}.out", "wb") as bot_out:
            bots = subprocess.Popen([str(binary)], stdout=bot_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, "ARENA_HOST": "127.0.0.1", "ARENA_PORT": str(port),
                                         "ARENA_NAME": settings.spec.prefix, "ARENA_TOKEN": token,
                                         "ARENA_BOTS": str(settings.bots)})
        with httpx.Client(base_url=f"http://127.0.0.1:{http_port}", timeout=60.0) as client:
            _welcome(client, fig, t_ready, settings.welcome_wait_s)
            _settle(client, fig, t_ready, settings.spec.game, settings.settle_wait_s)
            scrapes = _window(client, fig, settings.seconds)
            window_figures(fig, scrapes, settings.spec.game)
            fig.rss, _ = rss_of(server.pid)
            fig.pages_busy = pages_p99(client, fig, f"http://127.0.0.1:{http_port}", settings)
            _stop(bots, 15.0)  # the bots go: their matches in play end as forfeits, the contest is idle
            _idle(client, 30.0)
            fig.pages = pages_p99(client, fig, f"http://127.0.0.1:{http_port}", settings)
            _, fig.rss_peak = rss_of(server.pid)
            if (last := fetch_metrics(client)) is not None:  # the fits made since the window, until the end
                fit_figures(fig, [last], settings.spec.game)
    finally:
        if _stop(server, STOP_WAIT_S):
            fig.notes.append(f"arena serve was still running {STOP_WAIT_S:g} s after SIGTERM: killed")
        _stop(bots, 15.0)
    store = Store(target)
    try:
        fig.recorded = store.recorded_matches(store.newest_tournament())
    finally:
        store.close()
    fig.db_bytes = db_size(target) - size0
    fig.log_bytes = dir_size(logs)
    return fig


# --------------------------------------------------------------------------- the stores


@dataclass
class Seeded:
    """A seeded full store: how long seeding took (:class:`SeedReport`), its size in bytes,
    whether it came from the cache, how long opening the cache took (its migrations, if any)
    and copying it for the run (seconds)."""

    report: SeedReport
    size: int
    cached: bool = False
    migrate_s: float = 0.0
    copy_s: float = 0.0


def cached_seed(settings: Settings, say: Any) -> tuple[Path, Seeded]:
    """The seeded SQLite full store in the work directory: ``(path, seeded)``. Seeded first if
    it is missing or ``settings.reseed`` (into a ``.part`` file renamed once complete, with a
    ``.json`` beside it that keeps how long seeding took); a cached one made by an older schema
    is brought up to date by the store's own migrations, as a season's database would be (the
    time it took is in ``seeded.migrate_s``)."""
    cache = settings.workdir / f"{settings.spec.key()}.db"
    meta = cache.with_suffix(".json")
    if cache.exists() and meta.exists() and not settings.reseed:
        info = json.loads(meta.read_text())
        report = SeedReport(seconds=info["seconds"], rows=info["rows"])
        say(f"SQLite: reusing the seeded store {cache} (seeded in {report.total_s:.0f} s; --reseed to make it again)")
        t0 = time.perf_counter()
        try:
            try:
                Store(cache).close()
            except DatabaseError as exc:  # made by an older arena: `arena db upgrade`, as a user would
                if "arena db upgrade" not in str(exc):
                    raise
                say(f"SQLite: {upgrade(str(cache))}")
                Store(cache).close()
            return cache, Seeded(report, cache.stat().st_size, cached=True, migrate_s=time.perf_counter() - t0)
        except DatabaseError as exc:  # made by a newer arena than this one: made again
            say(f"SQLite: the cached seed cannot be used ({exc}); seeding it again")
    part = cache.with_suffix(".part")
    for p in (meta, *(Path(f"{f}{end}") for f in (cache, part) for end in ("", "-wal", "-shm"))):
        p.unlink(missing_ok=True)
    say(f"SQLite: seeding {settings.spec.bots:,} bots and {settings.spec.matches:,} matches into {cache}")
    store = Store(part)
    try:
        report = seed_store(store, settings.spec, progress=_every(say, 10.0))
    finally:
        store.close()
    part.rename(cache)
    meta.write_text(json.dumps({"spec": asdict(settings.spec), "seconds": report.seconds, "rows": report.rows,
                                "schema": SCHEMA_VERSION}))
    return cache, Seeded(report, cache.stat().st_size)


def run_order(rounds: int) -> list[str]:
    """The order of the runs: each store ``rounds`` times, full and empty alternately and mirrored
    from one pair to the next (``full, empty, empty, full, ...``), so that a drift of the machine's
    speed along the bench weighs on both stores alike. Measured on the SQLite season bench with
    one run each: whichever store ran first, just after the full store's 5 GB copy, was the slower
    (the empty store made 41 results/s when it ran first and 47-50 when second), and single pairs
    of runs of the same code gave the full store 0.79-0.95x the empty store's rate."""
    return [label for r in range(rounds) for label in (("full", "empty") if r % 2 == 0 else ("empty", "full"))]


def sqlite_stores(settings: Settings, say: Any) -> tuple[str, str, Seeded]:
    """The SQLite full store (a copy of :func:`cached_seed`'s, which a run changes) and a fresh
    empty one, in the work directory: ``(full, empty, seeded)``."""
    cache, seeded = cached_seed(settings, say)
    full, empty = settings.workdir / "run-full.db", settings.workdir / "run-empty.db"
    for p in (full, empty):
        for q in (p, Path(f"{p}-wal"), Path(f"{p}-shm")):
            q.unlink(missing_ok=True)
    t0 = time.perf_counter()
    shutil.copyfile(cache, full)
    seeded.copy_s = time.perf_counter() - t0
    Store(empty).close()
    return str(full), str(empty), seeded


def schema_url(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (libpq's ``options`` parameter)."""
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


def postgres_stores(settings: Settings, base_url: str, say: Any) -> tuple[str, str, Seeded]:
    """The PostgreSQL full and empty stores: the schemas :data:`SCHEMAS` of ``base_url``'s
    database, dropped and made again, the full one seeded: ``(full URL, empty URL, seeded)``."""
    reset_schemas(base_url, SCHEMAS)
    full, empty = (schema_url(base_url, s) for s in SCHEMAS)
    say(f"PostgreSQL: seeding {settings.spec.bots:,} bots and {settings.spec.matches:,} matches into "
        f"{redact(base_url)} (schema {SCHEMAS[0]})")
    store = Store(full)
    try:
        report = seed_store(store, settings.spec, progress=_every(say, 10.0))
    finally:
        store.close()
    Store(empty).close()
    return full, empty, Seeded(report, db_size(full))


def seeding_line(seeded: Seeded, spec: SeasonSpec) -> str:
    """One line: how long seeding the full store took, step by step, and its size."""
    steps = ", ".join(f"{k} {v:.1f}" for k, v in seeded.report.seconds.items())
    return (f"seeding the full store: {seeded.report.total_s:.1f} s ({steps})"
            + (f" [cached from an earlier run; opened (migrated) in {seeded.migrate_s:.1f} s]" if seeded.cached else "")
            + f"; {seeded.size / 2**30:.2f} GiB ({seeded.size / max(spec.matches, 1):.0f} bytes per match)"
            + (f"; copied for the run in {seeded.copy_s:.1f} s" if seeded.copy_s else ""))


def remove_runs(workdir: Path, pg_url: str | None) -> None:
    """Remove what the runs left: the SQLite run stores and the logs in ``workdir``, and with
    ``pg_url`` the schemas :data:`SCHEMAS` there (the cached seed stays)."""
    for p in workdir.glob("run-*.db*"):
        p.unlink(missing_ok=True)
    for p in workdir.glob("logs-*"):
        shutil.rmtree(p, ignore_errors=True)
    if pg_url is not None:
        try:
            reset_schemas(pg_url, SCHEMAS, make=False)
        except DatabaseError:  # the server is gone: nothing more to remove there
            pass


def _every(say: Any, interval_s: float) -> Any:
    """A progress callback that passes a line on at most every ``interval_s`` seconds."""
    last = [0.0]

    def progress(line: str) -> None:
        if time.perf_counter() - last[0] >= interval_s:
            last[0] = time.perf_counter()
            say(line)

    return progress


# --------------------------------------------------------------------------- the command


def build_parser() -> argparse.ArgumentParser:
    """The options of ``python -m arena.tools.bench_season``."""
    s, spec = Settings(), SeasonSpec()
    p = argparse.ArgumentParser(prog="python -m arena.tools.bench_season", description=__doc__.split("\n\n")[0],
                                epilog="Exit status: 0 every target met, 1 a target missed (each named), 2 a bad "
                                       "option, 3 something needed is missing (gcc, PostgreSQL).")
    p.add_argument("--seconds", type=float, default=s.seconds, help=f"window per store (default {s.seconds:g})")
    p.add_argument("--bots", type=int, default=s.bots, help=f"remote instant bots (default {s.bots})")
    p.add_argument("--season-bots", type=int, default=spec.bots, help=f"bots of the full store (default {spec.bots:,})")
    p.add_argument("--season-matches", type=int, default=spec.matches,
                   help=f"finished matches of the full store, even (default {spec.matches:,})")
    p.add_argument("--window", type=float, default=spec.window,
                   help=f"mean distance in strength ranks between two opponents in the history (default "
                        f"{spec.window:g})")
    p.add_argument("--seed", type=int, default=spec.seed, help=f"seed of the history (default {spec.seed})")
    p.add_argument("--only", choices=["sqlite", "postgresql"],
                   help="one database only (default: SQLite, then PostgreSQL)")
    p.add_argument("--db", help="PostgreSQL: this database (postgresql://...) instead of a throwaway cluster; its "
                                f"schemas {' and '.join(SCHEMAS)} are dropped and made again")
    p.add_argument("--pairing", choices=["round-robin", "rating"], default=s.pairing,
                   help=f"the contest's pairing (default {s.pairing})")
    p.add_argument("--page-requests", type=int, default=s.page_requests,
                   help=f"requests per web page (default {s.page_requests})")
    p.add_argument("--page-budget-s", type=float, default=s.page_budget_s,
                   help=f"at most this long per page (default {s.page_budget_s:g} s)")
    p.add_argument("--welcome-wait-s", type=float, default=s.welcome_wait_s,
                   help=f"how long to wait for every bot to be welcomed (default {s.welcome_wait_s:g} s)")
    p.add_argument("--rounds", type=int, default=s.rounds,
                   help=f"runs of each store, in the order full, empty, empty, full, ... (default {s.rounds})")
    p.add_argument("--fit-intervals-s", type=float, default=s.fit_intervals_s,
                   help=f"the contest's fit_intervals_s: how often the full store's intervals are refitted "
                        f"(default {s.fit_intervals_s:g} s)")
    p.add_argument("--workdir", type=Path, default=s.workdir,
                   help=f"the cached seed, the run's stores and logs (default {s.workdir})")
    p.add_argument("--reseed", action="store_true", help="seed the SQLite store again even if it is cached")
    p.add_argument("--keep", action="store_true",
                   help="keep the runs' stores, logs and PostgreSQL schemas (default: removed at the end)")
    p.add_argument("--seed-only", action="store_true",
                   help="only seed the full store (SQLite: into the cache) and say how long it took")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    return p


def settings_from(args: argparse.Namespace) -> Settings:
    """:class:`Settings` from parsed options; ``ValueError`` (one line) for a bad one."""
    if args.seconds <= 0 or args.bots < 2 or args.page_requests < 1 or args.rounds < 1:
        raise ValueError("--seconds must be positive, --bots at least 2, --page-requests and --rounds at least 1")
    if not (math.isfinite(args.fit_intervals_s) and args.fit_intervals_s > 0):
        raise ValueError("--fit-intervals-s must be a positive number of seconds")
    if args.bots > args.season_bots:
        raise ValueError(f"--bots ({args.bots}) cannot exceed --season-bots ({args.season_bots}): the bench's bots "
                         "are the first bots of the seeded field")
    if args.db is not None and not is_url(args.db):
        raise ValueError("--db takes a postgresql:// URL (the SQLite store is the bench's own)")
    spec = SeasonSpec(bots=args.season_bots, matches=args.season_matches, seed=args.seed, window=args.window)
    return Settings(seconds=args.seconds, bots=args.bots, spec=spec, pairing=args.pairing,
                    page_requests=args.page_requests, page_budget_s=args.page_budget_s,
                    welcome_wait_s=args.welcome_wait_s, workdir=args.workdir.expanduser().resolve(),
                    reseed=args.reseed, keep=args.keep, fit_intervals_s=args.fit_intervals_s, rounds=args.rounds)


def _machine() -> str:
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load} (a shared machine: figures vary with its neighbours)"


def bench_database(db: str, pg_url: str | None, settings: Settings, binary: Path, console: Any, say: Any,
                   seed_only: bool = False) -> dict[str, Any]:
    """Seed, run and print one database (``"sqlite"`` or ``"postgresql"``: ``pg_url``, else a
    throwaway cluster); returns its figures and misses (``"misses"``) as plain data. Raises
    ``RuntimeError`` when the server or the cluster cannot start."""
    spec, cluster = settings.spec, None
    try:
        if db == "sqlite" and seed_only:
            _, seeded = cached_seed(settings, say)
        elif db == "sqlite":
            full, empty, seeded = sqlite_stores(settings, say)
        else:
            if pg_url is None:

                say("PostgreSQL: starting a throwaway cluster")
                cluster = start_cluster(PG_SETTINGS)
                cluster.sql("CREATE DATABASE season")
            full, empty, seeded = postgres_stores(settings, pg_url or cluster.url("season"), say)
        console.print(seeding_line(seeded, spec), markup=False)
        out: dict[str, Any] = {"seeding": asdict(seeded.report) | {"size": seeded.size, "cached": seeded.cached},
                               "misses": []}
        if seed_only:
            return out
        token = secrets.token_urlsafe(24)  # the shape of the tokens the arena generates
        names = [f"{spec.prefix}-{i}" for i in range(settings.bots)]
        targets, runs = {"full": full, "empty": empty}, {"full": [], "empty": []}
        for i, label in enumerate(run_order(settings.rounds)):
            if not runs[label]:
                took = register_bots(targets[label], names, token)
                say(f"{db} {label}: {settings.bots} bots registered in {took:.1f} s")
            name = f"{db}-{label}" + (f"-{len(runs[label]) + 1}" if settings.rounds > 1 else "")
            say(f"{db} {label}: arena serve for {settings.seconds:g} s (run {i + 1} of {2 * settings.rounds})")
            runs[label].append(run_contest(name, targets[label], settings.workdir, settings, token, binary,
                                           archived=label == "full"))
        figs = {label: pool_runs(f"{db}-{label}", found) for label, found in runs.items()}
    finally:
        if not settings.keep and not seed_only:  # a throwaway cluster goes whole
            remove_runs(settings.workdir, pg_url if db == "postgresql" and cluster is None else None)
        if cluster is not None:
            cluster.destroy()
    out["misses"] = check_targets(figs["full"], figs["empty"], spec.bots)
    title = (f"bench-season on {db}: {settings.bots} instant bots, {settings.seconds:g} s per store; "
             f"full store {spec.bots:,} bots and {spec.matches:,} matches")
    print_report(console, title, seeding_line(seeded, spec), figs["full"], figs["empty"], spec.bots, out["misses"])
    each = {"runs": {k: [asdict(r) for r in v] for k, v in runs.items()}}  # every run's own figures
    return out | {k: asdict(v) for k, v in figs.items()} | each


def main(argv: list[str] | None = None) -> int:
    """Run the bench (module docstring); returns the exit status."""
    from rich.console import Console


    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=150)
    say = lambda text: console.print(f"[dim]{text}[/dim]", highlight=False)  # noqa: E731
    try:
        settings = settings_from(args)
        binary = build_instant_bot()
    except ValueError as exc:
        console.print(f"bench-season: error: {exc}", markup=False)
        return 2
    except RuntimeError as exc:
        console.print(f"bench-season: error: {exc}", markup=False)
        return 3
    settings.workdir.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]bench-season[/bold] on {_machine()}; work directory {settings.workdir}", highlight=False)
    dump: dict[str, Any] = {}
    for db in [args.only] if args.only else ["sqlite", "postgresql"]:
        try:
            dump[db] = bench_database(db, args.db, settings, binary, console, say, args.seed_only)
        except RuntimeError as exc:
            console.print(f"bench-season: error ({db}): {exc}", markup=False)
            return 3
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1, default=str))
    misses = [f"{db}: {m}" for db, figures in dump.items() for m in figures["misses"]]
    if args.seed_only:
        return 0
    if misses:
        console.print(f"[red]{len(misses)} target(s) missed[/red]", highlight=False)
        return 1
    console.print("[green]every target met[/green]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
