"""``arena serve``: a long-running contest server.

One process serves, on trio:

* TCP for bots and spectators (:class:`arena.net.server.ArenaServer`), the protocol of
  docs/protocol.md;
* HTTP for the web page, its live feed and Prometheus ``/metrics`` (:mod:`arena.net.web`).

It schedules matches continuously among the bots that are connected and idle (a *ladder*):
``pairing = "round-robin"`` plays next the ready bots that have met least, ``"rating"`` pairs
bots close on the persistent ladder. Each scheduled unit is a duplicate pair (two matches, one
seed, seats swapped) unless ``duplicate = false``; the pairing costs the same whatever the
history (:mod:`arena.schedule.formats.ladder`). Every result is committed before anyone hears of
it; the persistent ladder is refitted in the background (:mod:`arena.schedule.fitter`).

Bots submitted with ``arena bots submit`` are launched by the server itself, contained by
:mod:`arena.schedule.launcher`, and relaunched if they die. Remote bots registered with
``arena bots add`` connect from anywhere with their token.

A full disk or a read-only path (match logs or database) never stops the server: the match
concerned is aborted at most, scheduling pauses with a clear message and resumes by itself once
the storage is writable again, and results not yet committed are retried, never dropped
(:mod:`arena.store.health`).

SIGTERM (or Ctrl-C) shuts down cleanly: no new match starts; matches in play get
``shutdown_grace_s`` to finish, and any still running are recorded as ``aborted``; every client
gets ``goodbye``; launched bots are stopped. Nothing is lost.

The configuration is a TOML file (see docs/contest.example.toml and :class:`ContestConfig`).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio

from arena.bounds import check_contest_numbers
from arena.errors import Unavailable, UserError, leaves
from arena.games import validate_rules
from arena.match.limits import FLEET, LIMITS
from arena.match.referee import MatchConfig, MatchResult
from arena.match.runner import aborted
from arena.metrics import METRICS
from arena.names import is_valid_name
from arena.net.server import ArenaServer, ServerConfig
from arena.net.spectate import SpectatorHub
from arena.schedule.botlog import tail
from arena.schedule.copies import PAIR_COPIES, bot_log, secrets_of
from arena.schedule.fitter import FitPolicy, FitReport, FitWatch, LadderFitter, spawn, stop_process
from arena.schedule.fleet import Fleet, StoreSink, wait_child
from arena.schedule.formats import Pairing, derive_seed
from arena.schedule.formats.ladder import LadderPairing, PairCounts
from arena.schedule.front import die_with_parent, local_cpu, pump_events, result_of
from arena.schedule.gate import DoctorGate, UploadConfig
from arena.schedule.launcher import BotProcess, Limits, SandboxError, load_manifest
from arena.schedule.on_demand import AuthorsConfig, OnDemand
from arena.schedule.retention import keep_retention
from arena.schedule.supervisor import Supervisor, publish
from arena.schedule.worker import POLL_S
from arena.store.checkpoint import for_store as checkpointer_for
from arena.store.health import STORAGE_ERRORS, StorageHealth
from arena.store.log_archive import Retention
from arena.store.queue import MatchQueue
from arena.store.sqlite import Store
from arena.strict import convert_strict, read_toml
from arena.wagers.desk import BettingDesk
from protocol.messages import Goodbye, Rules, TimeControl

log = logging.getLogger("arena.schedule.contest")

CONTEST_FLEET = msgspec.structs.replace(FLEET, stop_ms=5_000)
"""A contest server's launched bots get longer to stop at shutdown than a tournament's."""


class ContestConfig(msgspec.Struct, forbid_unknown_fields=True):
    """A contest: every key of the TOML file (sections ``[rules]``, ``[time]``, ``[server]``,
    ``[limits]``; the rest at the top level). Units: seconds (``*_s``), milliseconds (``*_ms``)."""

    name: str = "arena"
    game: Literal["ecarte", "piquet"] = "ecarte"
    db: str = "arena.db"
    logs: str = "logs"
    pairing: Literal["round-robin", "rating"] = "round-robin"
    duplicate: bool = True
    concurrency: int = 2
    seed: int | None = None
    """Seed of the match seeds; None: a fresh random one at each start (recorded)."""
    max_matches: int | None = None
    """Stop scheduling after this many matches (None: run until SIGTERM)."""
    reveal_delay_s: float = 0.0
    shutdown_grace_s: float = 10.0
    storage_retry_s: float = 5.0
    """While a storage fault pauses scheduling, seconds between checks (and between retries of
    a result not yet committed)."""
    betting_s: float = 0.0
    """Gallery wagers (ecarte.md §E9.1): seconds betting stays open before each match (0: none)."""
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    sandbox: bool = False
    """Kept for old contest files: submitted bots are sandboxed unless ``trust_bots``."""
    trust_bots: bool = False
    """UNSAFE: launch submitted bots as plain processes, without bubblewrap (docs/contests.md,
    "Security model"); without it and without ``bwrap`` they are not launched at all."""
    duplicate_remote: bool = False
    """Play duplicate pairs with remote bots too (trusting them not to remember a pack: one
    connection plays both halves); otherwise their units are two unpaired matches."""
    on_timeout: Literal["forfeit", "auto"] = LIMITS.on_timeout
    max_strikes: int = LIMITS.max_strikes
    max_illegal: int = LIMITS.max_illegal
    rules: Rules = msgspec.field(default_factory=Rules)
    time: TimeControl = msgspec.field(default_factory=TimeControl)
    server: ServerConfig = msgspec.field(default_factory=lambda: ServerConfig(port=7000))
    limits: Limits = msgspec.field(default_factory=Limits)
    registration: Literal["organiser", "open", "invite"] = "organiser"
    """Who may create an author account (docs/contests.md, "Self-service"): only the organiser
    (``arena authors add``), anyone, or whoever holds an invitation code (``arena authors invite``)."""
    secure_cookies: bool = False
    """Send the author pages' session cookie only over HTTPS (set it behind a TLS proxy)."""
    uploads: UploadConfig = msgspec.field(default_factory=UploadConfig)
    authors: AuthorsConfig = msgspec.field(default_factory=AuthorsConfig)
    """``[authors]``: test matches on demand, their quota and their share of the server
    (:mod:`arena.schedule.on_demand`; docs/contests.md, "Test matches")."""
    workers: int = 0
    """Worker processes started by the server (:mod:`arena.schedule.worker`); with 1 or more, a
    unit between two submitted bots is queued and played by a worker (these local ones, or
    ``arena worker --db`` on other hosts); remote bots' matches stay on this server. 0: every
    match in this process."""
    fit_intervals_s: float = FitPolicy().intervals_s
    """Beyond :data:`arena.stats.information.EXACT_BOTS` bots, the ladder's intervals (a full
    refit) are computed again at most this often (seconds); the fits between refit the ratings
    alone (:attr:`arena.schedule.fitter.FitPolicy.intervals_s`)."""
    retention: Retention = msgspec.field(default_factory=Retention)
    """``[retention]``: how many days match logs stay files before their day's archive bundle, and
    bot output, live events and failed uploads are kept (:mod:`arena.store.log_archive`); applied
    once a day while the server runs."""

    def match_config(self) -> MatchConfig:
        """How each match of the contest is played."""
        return MatchConfig(game=self.game, rules=self.rules, time=self.time, on_timeout=self.on_timeout,
                           max_strikes=self.max_strikes, max_illegal=self.max_illegal)


def load_config(path: str | Path) -> ContestConfig:
    """Read a contest TOML file. Raises :class:`arena.errors.UserError` (a ``ValueError``)
    naming the file and the bad key: an unknown key in any section comes with the closest known
    key (:mod:`arena.strict`)."""
    raw = read_toml(path, "no such contest file")
    if isinstance(raw.get("server"), dict):
        raw["server"].setdefault("port", 7000)  # the documented default, also with a [server] table
    cfg = convert_strict(raw, ContestConfig, str(path))
    try:
        validate_rules(cfg.game, cfg.rules)
    except ValueError as exc:
        raise UserError(f"{path}: [rules] {exc}") from None
    if cfg.concurrency < 1:
        raise UserError(f"{path}: concurrency must be at least 1")
    if not 0 <= cfg.workers <= 1024:
        raise UserError(f"{path}: workers must be between 0 and 1024")
    if not (math.isfinite(cfg.fit_intervals_s) and cfg.fit_intervals_s > 0):
        raise UserError(f"{path}: fit_intervals_s must be a positive number of seconds (default "
                        f"{FitPolicy().intervals_s:g}), not {cfg.fit_intervals_s!r}")
    try:
        cfg.retention.check()
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    try:
        check_contest_numbers(cfg)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    return cfg


async def _bind(what: str, host: str, port: int, starting) -> int:  # noqa: ANN001 - a coroutine
    """Await ``starting`` (a listener's ``nursery.start``); a port that cannot be bound becomes
    :class:`arena.errors.Unavailable` naming ``what``, the address and the fix."""
    try:
        return await starting
    except BaseException as exc:
        bad = next((e for e in leaves(exc) if isinstance(e, OSError)), None)
        if bad is None:
            raise
        raise Unavailable(f"cannot listen on {what} {host}:{port}: {bad.strerror or bad}; stop the program that "
                          "uses it or choose another port in the contest file") from None


WebMounts = Mapping[str, Callable[["Contest"], Any]]
"""Extra apps on the contest's web site: path prefix -> a function of the contest giving an ASGI
app (:func:`arena.net.web.make_app`'s ``mounts``)."""


class Contest:
    """A running contest; see the module docstring. ``store``: the contest's database (default:
    opened from ``config.db``). ``web_mounts``: extra apps on its web site (``arena serve`` mounts
    the author pages, :data:`arena.authors.pages.MOUNTS`; default none). ``port`` and
    ``http_port`` are the bound ports once :meth:`run` has started (``task_status.started()``
    reports them)."""

    def __init__(self, config: ContestConfig, store: Store | None = None, web_mounts: WebMounts | None = None) -> None:
        self.config = config
        self.web_mounts: WebMounts = dict(web_mounts or {})
        """The extra apps of :data:`WebMounts` served beside the contest's pages."""
        self.store = store or Store(config.db)
        self.hub = SpectatorHub(config.reveal_delay_s)
        self.server = ArenaServer(self.store, config.server, hub=self.hub)
        self.desk = BettingDesk(self.store, self.hub)
        self.server.desk = self.desk
        self.seed = config.seed if config.seed is not None else random.SystemRandom().getrandbits(31)
        self.tournament_id = 0
        self.busy: set[str] = set()
        self.running = 0
        self.matches_started = 0
        self.stopping = trio.Event()
        self.fleet = Fleet(self.server, CONTEST_FLEET)
        """The submitted bots' copies (launch, connect, goodbye, stop: :mod:`arena.schedule.fleet`)."""
        self.procs: dict[tuple[str, int], BotProcess] = self.fleet.procs
        self.launched: set[str] = set()  # names of the submitted bots, launched as copies
        self.copies = PAIR_COPIES if config.duplicate else 1
        self.supervisor = Supervisor()
        self._submitted: dict[str, float] = {}
        self._log_start: dict[tuple[str, int], int] = {}
        self.port: int | None = None
        self.http_port: int | None = None
        self._changed = trio.Event()
        self.queue = MatchQueue(self.store)
        self.worker_procs: list = []  # subprocess.Popen of the local workers
        self.health = StorageHealth(config.storage_retry_s, self._probe_storage)
        self.health.on_resume.append(self._poke)
        self._outer: trio.Nursery | None = None
        self.gate = DoctorGate(self.store, config.game, config.uploads)
        self._replaced: set[str] = set()  # bots with a new version to launch once idle
        self.tests = OnDemand(self)  # the authors' unrated test matches, played between ladder matches
        self.unsaved = ""
        """What the shutdown could not write (``"what: error"``), empty if nothing: a full or
        read-only disk when the server stopped (nothing recorded is lost; ``arena serve`` says so)."""
        self.pairs = PairCounts(lambda bot: self.store.opponents(config.game, bot))
        """The connected bots' pair counts, in memory (read when a bot connects, counted by :meth:`_record`)."""
        self.pairing = LadderPairing(config.pairing, self.pairs.counts, self.seed)
        if self.store.path == ":memory:":  # no other process can open it: fitted in a thread here
            self.fitter: LadderFitter | FitWatch = LadderFitter(self.store, config.game, self.fit_policy(),
                                                                on_fit=self._fitted)
        else:  # fitted by a process of its own (arena.schedule.fitter); the server watches the results
            self.fitter = FitWatch(self.store, config.game, on_fit=self._fitted,
                                   with_ratings=config.pairing == "rating")

    def fit_policy(self) -> FitPolicy:
        """The ladder fit's policy: the defaults but for the contest file's ``fit_intervals_s``."""
        return FitPolicy(intervals_s=self.config.fit_intervals_s)

    def _probe_storage(self) -> None:
        """Raise if match logs or the database cannot be written (see :mod:`arena.store.health`):
        write, sync and remove a 64 KiB file in the logs directory; run a write transaction."""
        logs = Path(self.config.logs)
        logs.mkdir(parents=True, exist_ok=True)
        probe = logs / ".storage-probe"
        try:
            with open(probe, "wb") as fh:
                fh.write(b"\0" * 65536)
                fh.flush()
                os.fsync(fh.fileno())
        finally:
            probe.unlink(missing_ok=True)
        self.store.probe_write(self.tournament_id)

    def _wagers(self, what: str, call, *args) -> None:
        """A betting desk call whose save may fail: the in-memory ledger is kept (it is whole in
        every later save) and the save is retried in the background."""
        try:
            call(*args)
        except STORAGE_ERRORS as exc:
            self.health.fail("database", exc)
            if self._outer is not None:
                self._outer.start_soon(self.health.commit, "database", self.desk.save)

    # ------------------------------------------------------------------ scheduling

    def _fitted(self, report: FitReport) -> None:
        self.pairing.elo = {r.name: r.elo for r in report.ratings}

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def ready_bots(self) -> list[str]:
        """Connected, idle bots, by name (a launched bot once all its copies are connected)."""
        return sorted(n for n, c in self.server.bots.items() if not c.closed.is_set() and n not in self.busy
                      and (n not in self.launched or all(self.server.connection(n, k) for k in range(self.copies))))

    def next_pair(self) -> tuple[str, str] | None:
        """The pair to play next among ready bots (:mod:`arena.schedule.formats.ladder`: pair
        counts in memory and the last fit's ratings, never the history nor the database), or None.
        The bots connected since the last decision have their pair counts read first (one indexed
        read each, :class:`PairCounts`: the cost of a connection, not of the decision, which
        ``arena_pairing_decision_seconds`` times). Raises a storage error only from that read."""
        live = {n: c for n, c in self.server.bots.items() if not c.closed.is_set()}
        self.pairs.sync(live, self.busy)
        t0 = time.perf_counter()
        pair = self.pairing.choose(self.ready_bots(), list(live), self.running)
        METRICS.pairing.observe(time.perf_counter() - t0)
        return pair

    def _record(self, bot0: str, bot1: str, match_key: str, result: MatchResult, log_path: str | None,
                log_hash: str | None = None) -> None:
        """Commit the result of ``match_key`` (``bot0`` against ``bot1``; :meth:`Store.record_result`,
        whose errors it raises) and count it in the pairing's memory in the same step (not an
        aborted one: the store does not count those either)."""
        self.store.record_result(match_key, result, log_path, log_hash)
        if result.reason != "aborted":
            self.pairs.add(bot0, bot1)

    async def _play_unit(self, a: str, b: str) -> None:
        """A duplicate pair (or one match) between ``a`` and ``b``."""
        cfg = self.config
        try:
            k = self.matches_started
            seed = derive_seed(self.seed, "ladder", k)
            legs = [(a, b), (b, a)] if cfg.duplicate else [(a, b)]
            # a remote bot plays both halves itself: paired only if the organiser trusts it to
            paired = cfg.duplicate and (cfg.duplicate_remote or {a, b} <= self.launched)
            pair = f"{a}|{b}|{k}" if paired else None
            self.matches_started += len(legs)
            for i, (x, y) in enumerate(legs):
                if (self.stopping.is_set() or self.health.paused) and i > 0:
                    break
                leg_seed = seed if paired or i == 0 else derive_seed(self.seed, "ladder", k + i)
                copies = (i % self.copies if x in self.launched and paired else 0,
                          i % self.copies if y in self.launched and paired else 0)
                p = Pairing(index=k + i, bot0=x, bot1=y, seed=leg_seed, pair=pair)
                try:
                    row = self.store.add_match(self.tournament_id, cfg.game, p)
                except STORAGE_ERRORS as exc:  # nothing scheduled, nothing lost
                    self.health.fail("database", exc)
                    break
                logs = Path(cfg.logs) / f"t{self.tournament_id}"
                betting = cfg.betting_s > 0
                result = None
                try:
                    if betting:  # inside the try: a shutdown during the window returns the stakes too
                        self._wagers("betting", self.desk.open, row.match_key, [x, y], int(cfg.betting_s * 1000))
                        await trio.sleep(cfg.betting_s)
                        self._wagers("betting", self.desk.close, row.match_key)
                    if cfg.workers > 0 and {x, y} <= self.launched:  # a worker plays it (arena.schedule.worker)
                        result = await self._play_queued(row.match_key)
                        if result.reason != "aborted":  # committed by the worker; x and y are busy till the unit ends
                            self.pairs.add(x, y)
                    else:
                        sink = StoreSink(row, functools.partial(self._record, x, y), self.health)
                        result = await self.fleet.play(row, cfg.match_config(), logs, sink, hub=self.hub, pair=pair,
                                                       copies=copies, on_cancel="abort")
                except trio.Cancelled:  # stopped before a runner held the match (admission, betting)
                    self._abort_at_stop(row.match_key)
                    raise
                except Exception:  # a bug in one match ends that match, never the server
                    log.exception("match %s failed", row.match_key)
                    await self._abort_if_pending(row.match_key)
                finally:
                    if betting:  # settled whatever happened: an aborted match returns every stake
                        self._wagers("betting", self.desk.settle, row.match_key, result.winner if result else None,
                                     result.reason if result else "aborted")
        finally:
            self.busy.difference_update((a, b))
            self.pairing.idle(a, b)
            self.fitter.poke()
            self.running -= 1
            self._poke()

    async def _play_queued(self, match_key: str) -> MatchResult:
        """Queue ``match_key`` for the workers and wait for its result (polled); its live events
        reach the hub through :func:`arena.schedule.front.pump_events`. Cancelled (a shutdown
        past its grace): taken out of the queue and recorded as aborted."""
        game = self.config.game
        await self.health.commit("database", self.queue.enqueue, self.tournament_id, match_key)
        METRICS.matches_in_play.labels(game).inc()
        try:
            while True:
                try:
                    if self.store.match_row(match_key).status != "pending":
                        break
                except STORAGE_ERRORS as exc:
                    self.health.fail("database", exc)
                await trio.sleep(POLL_S)
        except trio.Cancelled:
            self._abort_at_stop(match_key, "server shut down during the match")
            raise
        finally:
            METRICS.matches_in_play.labels(game).dec()
        row = self.store.match_by_index(self.tournament_id, self.store.match_row(match_key).idx)
        result = result_of(row)
        outcome = "aborted" if result.reason == "aborted" else ("draw" if result.winner is None else "win")
        METRICS.matches_finished.labels(game, outcome, result.reason).inc()  # counted where /metrics is served
        return result

    async def _local_workers(self) -> None:
        """Run ``workers`` local ``arena worker`` processes until cancelled; one that dies has its
        match released at once and is started again (after 1 s)."""
        cfg = self.config
        host = socket.gethostname()

        async def one(n: int) -> None:
            wid = f"{host}:{os.getpid()}:w{n}"
            db, env = self.store.child_db()  # never a password on a command line
            cmd = [sys.executable, "-m", "arena.cli", "worker", "--db", db, "--id", wid, "--quiet"]
            if (cpu := local_cpu(n)) is not None:  # each worker and its bots on a core of their own
                cmd += ["--cpu", str(cpu)]
            while True:
                proc = subprocess.Popen(cmd + (["--trust-bots"] if cfg.trust_bots else []), stdin=subprocess.DEVNULL,
                                        env={**os.environ, **env},
                                        preexec_fn=die_with_parent)  # main thread: see arena.schedule.front
                self.worker_procs.append(proc)
                await wait_child(proc)  # cancelled: told to stop (it releases its match, stops its bots)
                self.worker_procs.remove(proc)
                log.warning("worker %s exited with status %s; starting it again", wid, proc.returncode)
                self.queue.release(wid)
                await trio.sleep(self.fleet.limits.respawn_ms / 1000)

        async with trio.open_nursery() as nursery:
            for n in range(cfg.workers):
                nursery.start_soon(one, n)

    def _abort_pending(self, match_key: str, detail: str) -> None:
        """Take ``match_key`` out of the workers' queue and record it as aborted (``detail``)
        unless it has a result. Raises what the store raises."""
        self.queue.cancel(match_key)
        if self.store.match_row(match_key).status == "pending":
            self.store.record_result(match_key, aborted(match_key, detail), None)

    def _abort_at_stop(self, match_key: str, detail: str = "server shut down before the match started") -> None:
        """:meth:`_abort_pending` in one attempt and without waiting (the contest is stopping; a
        runner that held the match recorded it already, as its ``on_cancel`` says): a scheduled
        match is never left pending by a stop. A storage fault now leaves it pending, and the
        next start marks it aborted."""
        try:
            self._abort_pending(match_key, detail)
        except STORAGE_ERRORS:
            pass

    async def _abort_if_pending(self, match_key: str) -> None:
        """:meth:`_abort_pending` for a match a bug ended, retried while storage fails."""
        await self.health.commit("database", self._abort_pending, match_key, "internal error (see the server's log)")

    async def _scheduler(self, nursery: trio.Nursery) -> None:
        cfg = self.config
        while not self.stopping.is_set():
            limit_hit = cfg.max_matches is not None and self.matches_started >= cfg.max_matches
            pair = None
            if not (limit_hit or self.health.paused or self.running >= max(cfg.concurrency, cfg.workers)):
                try:
                    pair = self.next_pair()
                except STORAGE_ERRORS as exc:
                    self.health.fail("database", exc)
            METRICS.queue_depth.set(len(self.ready_bots()) // 2)
            if pair is None and not (self.health.paused or self.stopping.is_set()):
                try:  # the ladder starts nothing now: a test game may use two free bots
                    if self.tests.start_one(nursery):
                        continue
                except STORAGE_ERRORS as exc:
                    self.health.fail("database", exc)
            if pair is None:
                with trio.move_on_after(self.fleet.limits.rescan_ms / 1000):  # bots come and go: look again
                    await self._changed.wait()
                continue
            self.busy.update(pair)
            self.running += 1
            nursery.start_soon(self._play_unit, *pair)

    # ------------------------------------------------------------------ launched bots

    async def _launch_submitted(self, nursery: trio.Nursery) -> None:
        """Launch every submitted bot (as ``self.copies`` copies, :mod:`arena.schedule.copies`) and
        relaunch any copy that dies, backing off and disabling a bot that keeps failing
        (:mod:`arena.schedule.supervisor`); publish their states once a second."""
        rows = self.store.submissions()
        hide = secrets_of(self.store.path, self.config.logs)
        while not self.stopping.is_set():
            try:
                times = self.store.submission_times()
            except STORAGE_ERRORS as exc:  # read again next round
                self.health.fail("database", exc)
                times = {}
            for name, when in times.items():
                if self._submitted.setdefault(name, when) != when:  # submitted again: a fresh start
                    self._submitted[name] = when
                    self.supervisor.reset(name)
                    self._replaced.add(name)
                    rows = self.store.submissions()  # its new manifest
            current = {row[0] for row in rows}
            for name in sorted({n for n, _ in self.procs} - current) + sorted(self._replaced - self.busy):
                # removed, withdrawn (a suspended author) or a new version: stopped between matches
                self._replaced.discard(name)
                for key in [k for k in self.procs if k[0] == name]:
                    self.procs.pop(key).stop_now()
            self.launched = {row[0] for row in rows}
            for name, manifest_path, sandbox in rows:
                if not is_valid_name(name):  # registered before names were checked: never launched
                    continue
                dead = [(name, c) for c in range(self.copies)
                        if (p := self.procs.get((name, c))) is not None and not p.running]
                if dead:  # died since the last look: one failure of the bot, however many copies
                    self.supervisor.failed(name, tail(self.procs[dead[0]].log_path,
                                                      start=self._log_start.get(dead[0], 0)))
                    for key in dead:
                        del self.procs[key]
                for copy in range(self.copies):
                    key = (name, copy)
                    proc = self.procs.get(key)
                    if proc is not None and proc.running:
                        continue
                    # the other copy of a running bot starts at once; a bot backing off waits for all of its copies
                    if self.supervisor.health(name).state == "running" or self.supervisor.due(name):
                        others = [str(Path(r[1]).parent) for r in rows if r[0] != name]
                        await self._launch_copy(nursery, name, manifest_path, copy, bool(sandbox), hide, others)
            try:  # the bots' state for `arena bots list`: a storage fault pauses, never stops, the server
                publish(self.store, self.supervisor,
                        {n for n, c in self.server.bots.items() if not c.closed.is_set()})
            except STORAGE_ERRORS as exc:
                self.health.fail("database", exc)
            with trio.move_on_after(self.fleet.limits.watch_ms / 1000):
                await self.stopping.wait()
            try:
                rows = self.store.submissions()
            except STORAGE_ERRORS as exc:
                self.health.fail("database", exc)

    async def _launch_copy(self, nursery: trio.Nursery, name: str, manifest_path: str, copy: int, sandbox: bool,
                           hide: list[str], others: list[str]) -> None:
        """Launch copy ``copy`` of submitted bot ``name`` (:meth:`_launch_submitted`), sandboxed
        if it asked to be (``sandbox``) or the contest does, with ``hide`` and ``others`` (the other
        bots' folders) out of its sight; a failure (a bad manifest, a process that cannot start)
        is the supervisor's to count, a storage fault the health's (tried again next round)."""
        try:
            m = load_manifest(manifest_path)
        except ValueError as exc:
            self.supervisor.failed(name, [str(exc)])
            return
        m.name = name  # its stored token was never shown: each copy gets its own
        local = self.server.local_port  # with TLS on, a plain loopback port (trust_bots)
        env = {"ARENA_HOST": "127.0.0.1" if local else self.config.server.host,
               "ARENA_PORT": str(local or self.port),
               "ARENA_BOT_SEED": str(derive_seed(self.seed, "bot", name))}
        try:
            log = bot_log(Path(self.config.logs), self.store.bot_id(name), copy)
        except KeyError:  # removed meanwhile
            return
        except STORAGE_ERRORS as exc:  # tried again next round
            self.health.fail("database", exc)
            return
        try:
            await self.fleet.launch(nursery, m, copy, env, log, self.config.limits,
                                    sandbox or self.config.sandbox or not self.config.trust_bots, hide, others)
            self.supervisor.launched(name)
            self._log_start[(name, copy)] = log.stat().st_size  # this launch's output starts here
        except (OSError, SandboxError) as exc:
            self.supervisor.failed(name, [f"cannot start: {exc}"])

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until SIGTERM/SIGINT or :meth:`stop`; then shut down cleanly."""
        # hypercorn and starlette (arena.net.web) stay off the start of `arena replay`, which imports this
        # module for load_config only
        from arena.net.web import serve_http

        cfg = self.config
        with self.store.transaction():  # a previous server that died left ladder matches pending and books
            self.store.abort_unfinished_ladder()  # unsettled: aborted, stakes returned, in one commit
            self.desk.recover()
        self.tests.recover()  # test games a stopped server left playing: queued again
        self.tournament_id = self.store.create_tournament(cfg.game, "ladder", self.seed, cfg, [], [])
        self.pairing.elo = {bot: elo for bot, elo, _ in self.store.ladder(cfg.game)}
        fit_process = spawn(self.store, cfg.game, self.fit_policy()) if isinstance(self.fitter, FitWatch) else None
        try:
            async with trio.open_nursery() as outer:
                outer.start_soon(self.fitter.run)
                if (checkpoints := checkpointer_for(self.store)) is not None:  # off the loop (arena.store.checkpoint)
                    outer.start_soon(checkpoints.run)
                self.hub.nursery = outer
                self._outer = outer
                outer.start_soon(self.health.watch)
                await outer.start(self._signals)  # handlers in place before the ports are announced
                await outer.start(self.gate.run)  # uploads a stopped server left are queued before new ones
                self.port = await _bind("TCP port for bots and spectators ([server] port)", cfg.server.host,
                                        cfg.server.port, outer.start(self.server.serve))
                self.http_port = await _bind("HTTP port of the web page (http_port)", cfg.http_host, cfg.http_port,
                                             outer.start(functools.partial(serve_http, mounts=self.web_mounts),
                                                         self, cfg.http_host, cfg.http_port))
                outer.start_soon(self._launch_submitted, outer)
                if cfg.retention.enabled:  # once a day, in a niced child process
                    outer.start_soon(keep_retention, self.store, cfg.logs, cfg.retention)
                workers = trio.CancelScope()
                if cfg.workers > 0:
                    self.queue.drop_recorded()  # matches the last run queued and then aborted
                    outer.start_soon(pump_events, self.queue, self.hub, POLL_S, cfg.logs)  # and the workers' logs

                    async def run_workers() -> None:
                        with workers:
                            await self._local_workers()

                    outer.start_soon(run_workers)
                task_status.started((self.port, self.http_port))
                async with trio.open_nursery() as matches:
                    sched = trio.CancelScope()

                    async def scheduler() -> None:
                        with sched:
                            await self._scheduler(matches)

                    matches.start_soon(scheduler)
                    await self.stopping.wait()
                    sched.cancel()
                    with trio.move_on_after(cfg.shutdown_grace_s):
                        while self.running:
                            await self._changed.wait()
                    matches.cancel_scope.cancel()  # still running: recorded as aborted (on_cancel)
                workers.cancel()  # each local worker is told to stop (SIGTERM) and waited for
                await self._goodbye()
                try:
                    self.store.finish_tournament(self.tournament_id)
                except STORAGE_ERRORS as exc:  # the next start finds it unfinished: nothing else is lost
                    self.unsaved = f"database: {exc}"
                outer.cancel_scope.cancel()
        finally:
            if fit_process is not None:
                stop_process(fit_process)

    def stop(self) -> None:
        """Begin a clean shutdown (what SIGTERM does)."""
        self.stopping.set()
        self._poke()

    async def _signals(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                self.stop()
                return

    async def _goodbye(self) -> None:
        self.hub.announce(Goodbye(reason="server shutting down"))
        with trio.CancelScope(shield=True):
            await trio.sleep(self.fleet.limits.flush_ms / 1000)  # let spectator writers flush the goodbye
            await self.fleet.stop_all("server shutting down")
            self.supervisor.stopped()
            try:
                publish(self.store, self.supervisor, set())
            except STORAGE_ERRORS as exc:  # a full or read-only disk at shutdown: said by `arena serve`
                self.unsaved = f"database: {exc}"
