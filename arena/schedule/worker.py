"""Match workers: processes that claim scheduled matches from the store, play them and commit.

A worker (:class:`Worker`, the ``arena worker`` command) is a process with its own trio loop. It
claims a match from the queue (:mod:`arena.store.queue`), launches the bots it needs - its own
copies of each, sandboxed as in a tournament (:mod:`arena.schedule.launcher`,
:mod:`arena.schedule.copies`), connected to the worker's own :class:`arena.net.server.ArenaServer`
on loopback - plays the match (:meth:`arena.schedule.fleet.Fleet.play`, the one MatchRunner),
renewing its lease while it plays, and commits the result with its log hash under the lease.
Nothing about a match depends on which worker plays it: the deal comes from the match's seed,
each bot seeds its choices from ``ARENA_BOT_SEED`` and the match id, and the copy of a bot that
plays a match is the match's half of its duplicate pair (copy 0 for the first half by position,
copy 1 for the second). So the results, the logs (byte for byte) and the ratings are the same
whatever the number of workers and whichever worker plays a match, also when a match is played
again because its first worker died.

The bots a worker runs come from the database: a tournament played on workers stores each
bot's archive (:mod:`arena.store.archives`) and pins its version in the tournament's
configuration; a contest's submitted bots are stored as archives by ``arena bots submit``. A
worker unpacks an archive once into a private temporary directory and launches it from there,
so a worker on another host needs nothing but the database URL (docs/contests.md, "Running on
several machines"). A submitted bot without an archive falls back to its manifest path (same
host only).

Logs: a worker writes a match log into a private folder (``<logs>/t<id>/.w-<pid>-<n>/``) and
moves it to ``<logs>/t<id>/<match>.jsonl.gz`` inside the commit, once its lease is known good:
a worker that lost its lease never overwrites the log of the worker that replaced it. The commit
also puts a copy of the log in the database (``match_logs``), for a front on another host (not
for the local workers of ``arena tournament --workers``, which share the front's folder); the
front (the contest server, or ``arena tournament --workers``) makes sure it has the log as a file
under its own logs folder, then deletes the copy (:func:`arena.schedule.front.keep_worker_logs`),
so the copies are only the logs of the results the front has not looked at yet.

The front's side (``arena tournament --workers N``, the contest server's ``workers``, their
live events and log copies) is :mod:`arena.schedule.front`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.errors import Unavailable, UserError, leaves
from arena.match.log import LogEvent
from arena.match.referee import MatchConfig, MatchResult
from arena.net.server import ArenaServer, ServerConfig
from arena.schedule.copies import PAIR_COPIES, bot_log, launch_failure, start_failure
from arena.schedule.fleet import Fleet, StoreSink
from arena.schedule.formats import derive_seed
from arena.schedule.launcher import BotProcess, Limits, Manifest, load_manifest
from arena.schedule.tournament import TournamentConfig
from arena.store.archives import unpack
from arena.store.health import STORAGE_ERRORS, StorageHealth
from arena.store.queue import LEASE_S, Claim, LeaseLost, MatchQueue
from arena.store.sqlite import MatchRow, Store, open_store

STORAGE_RETRY_S = 1.0
"""While the database fails (a PostgreSQL restart), how often a worker tries a claim or a
waiting commit again (seconds)."""
POLL_S = 0.2
"""How often an idle worker looks for a claimable match, and the front for results (seconds)."""
OnDone = Callable[[MatchRow, MatchResult], None]
"""``on_result(row, result)``: told of each recorded match."""
SLOTS = 1
"""Matches a worker plays at once by default, each with its own copies of the bots. One worker
per core (the default of ``--workers``) and one match per worker play as many matches at once as
the machine has cores, so the bot on the clock in each match has a core to itself (cutechess-cli's
advice for its ``-concurrency``) and a second worker adds a core's worth of matches. More slots
only pay for bots that wait rather than compute."""
AHEAD = 2
"""Queued matches whose bots a worker launches ahead, while it plays (static tournaments): a
launch (a sandbox, an interpreter starting, the handshake) takes about 0.1 s that the next
match would otherwise wait."""
EVENT_FLUSH_S = 0.1
"""How often a worker writes the live events it has buffered (seconds)."""


def open_db(db: str) -> Store:
    """The store at ``db``: an SQLite path or a ``postgresql://`` URL
    (:func:`arena.store.sqlite.open_store`)."""
    return open_store(db)


def default_worker_id() -> str:
    """``host:pid``: unique among the workers of one database (shown in the queue's rows). The
    local workers of ``arena tournament`` are ``host:pid:wN`` with the pid of their parent."""
    return f"{socket.gethostname()}:{os.getpid()}"



class Setup(msgspec.Struct):
    """How the matches of one tournament (or contest ladder) are played: the match rules, where
    logs go, the bots' seed, copies per bot, limits, whether bots are sandboxed, how long a bot
    gets to connect, and where each bot comes from
    (``archives``: name -> pinned version, absent: the newest; ``manifests``: name -> path)."""

    match: MatchConfig
    logs_dir: str
    seed: int
    copies: int
    limits: Limits
    isolated: bool
    connect_timeout_s: float = 20.0
    archives: dict[str, int | None] = msgspec.field(default_factory=dict)
    manifests: dict[str, str] = msgspec.field(default_factory=dict)
    ladder: bool = False
    """A contest's ladder: live events are forwarded to the front server's spectators."""
    sandboxed: list[str] = msgspec.field(default_factory=list)
    """Bots sandboxed whatever ``isolated`` says (``arena bots submit --sandbox``)."""


def setup_of(store: Store, tournament_id: int) -> Setup:
    """The :class:`Setup` of a stored tournament (a ladder's from its contest configuration).
    ``LookupError`` if the tournament does not exist."""
    t = store.tournament(tournament_id)
    if t is None:
        raise LookupError(f"no tournament {tournament_id}")
    if t["format"] == "ladder":  # the stored ContestConfig, every key written (not imported: no cycle)
        c = t["config"]
        rows = store.submissions()
        manifests = {name: path for name, path, _ in rows}
        match = msgspec.convert({k: c[k] for k in ("game", "rules", "time", "on_timeout", "max_strikes",
                                                    "max_illegal")}, MatchConfig)
        return Setup(match=match, logs_dir=c["logs"], seed=t["seed"], copies=PAIR_COPIES if c["duplicate"] else 1,
                     limits=msgspec.convert(c["limits"], Limits), isolated=c["sandbox"] or not c["trust_bots"],
                     archives={name: None for name in manifests},
                     manifests=manifests, ladder=True, sandboxed=[name for name, _, sandbox in rows if sandbox])
    tc = msgspec.convert(t["config"], TournamentConfig)
    manifests = {}
    for path in tc.manifests:
        try:
            manifests[load_manifest(path).name] = path
        except (ValueError, OSError):  # another host: the archives say it all
            continue
    return Setup(match=tc.match, logs_dir=tc.logs_dir, seed=t["seed"], copies=tc.copies or PAIR_COPIES,
                 limits=tc.limits, isolated=tc.sandbox or not tc.trust_bots,
                 connect_timeout_s=tc.connect_timeout_s, archives=dict(tc.archives), manifests=manifests)


class Envelope(msgspec.Struct):
    """A live event as stored in ``match_events``: the claim it comes from (``attempt``: a match
    played again after a lost lease has a higher one) and the event (a match-log
    :class:`~arena.match.log.LogEvent`, or a ``start`` or ``end`` object)."""

    attempt: int
    body: msgspec.Raw


class EventForwarder:
    """Stands in for a :class:`arena.net.spectate.SpectatorHub` in a worker: the referee's live
    events are buffered as JSON and written to ``match_events`` every :data:`EVENT_FLUSH_S`
    (:meth:`flush`), for the front server to feed its own hub
    (:class:`arena.schedule.front.EventFeed`). Hidden events travel with their ``seen_by`` like in
    a match log; what spectators get of them is decided by the front's hub, under its rules.
    ``attempts``: the claim's attempt by match."""

    def __init__(self, queue: MatchQueue) -> None:
        self.queue = queue
        self.buffer: list[tuple[str, bytes]] = []
        self.seq = 0
        self.attempts: dict[str, int] = {}

    def _add(self, match_id: str, body: bytes) -> None:
        attempt = self.attempts.get(match_id, 1)
        self.buffer.append((match_id, msgspec.json.encode(Envelope(attempt, msgspec.Raw(body)))))

    def match_started(self, match_id: str, game: str, bots: list[str], rules: Any, time: Any,
                      pair: str | None = None) -> None:
        """A match begins."""
        self._add(match_id, msgspec.json.encode(
            {"type": "start", "game": game, "bots": bots, "rules": rules, "time": time, "pair": pair}))

    def event(self, match_id: str, event: Any, seen_by: tuple[int, ...]) -> None:
        """One engine event with the seats that saw it."""
        self.seq += 1
        self._add(match_id, msgspec.json.encode(
            LogEvent(seq=self.seq, seen_by=list(seen_by), hidden=tuple(seen_by) != (0, 1), event=event)))

    def match_ended(self, match_id: str, winner: int | None, reason: str, scores: list[int]) -> None:
        """A match is over (its events are written now if the database allows; else later)."""
        self._add(match_id, msgspec.json.encode({"type": "end", "winner": winner, "reason": reason,
                                                 "scores": scores}))
        self.attempts.pop(match_id, None)
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - kept for the next flush: never fails the match
            pass

    def flush(self) -> None:
        """Write the buffered events (a failure keeps them for the next flush)."""
        if self.buffer:
            rows, self.buffer = self.buffer, []
            try:
                self.queue.push_events(rows)
            except Exception:
                self.buffer = rows + self.buffer
                raise



class Worker:
    """One worker on ``store``: claims matches (of ``tournament_id`` only, if given), plays them,
    commits. ``trust_bots`` lets this host run bots unsandboxed when the tournament allows it
    (else they are sandboxed, and a host without bubblewrap refuses). ``logs`` overrides the
    tournament's logs folder; ``workdir`` is where archives are unpacked (a fresh temporary
    directory by default). With ``exit_when_finished`` the worker returns once its tournament
    is finished; ``max_matches`` stops it after that many claims (tests); ``on_result(row,
    result)`` is called after each commit; ``slots``: matches played at once (each slot with its
    own copies of the bots); ``log_copies``: see :attr:`log_copies`."""

    def __init__(self, store: Store, worker_id: str | None = None, tournament_id: int | None = None,
                 lease_s: float = LEASE_S, poll_s: float = POLL_S, trust_bots: bool = False,
                 logs: str | None = None, workdir: str | None = None, exit_when_finished: bool = True,
                 max_matches: int | None = None, clock: Callable[[], float] | None = None,
                 on_result: OnDone | None = None, slots: int = SLOTS, log_copies: bool = True) -> None:
        self.store = store
        self.log_copies = log_copies
        """Commit a copy of each log with its result (``match_logs``), for a front on another host;
        False when the front shares this host's logs folder (``arena tournament --workers``), which
        has the file as soon as the commit moved it into place."""
        self.id = worker_id or default_worker_id()
        self.tournament_id = tournament_id
        self.queue = MatchQueue(store, lease_s=lease_s, **({"clock": clock} if clock else {}))
        self.poll_s = poll_s
        self.trust_bots = trust_bots
        self.logs = logs
        self.exit_when_finished = exit_when_finished
        self.max_matches = max_matches
        self.on_result = on_result
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.slots = slots
        self.ready = trio.Event()
        self.ready.set()
        self.own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="arena-worker-"))
        self.server = ArenaServer(store, ServerConfig(host="127.0.0.1", port=0))
        self.fleet = Fleet(self.server)
        """The bot copies this worker runs (launch, connect, goodbye, stop: :mod:`arena.schedule.fleet`)."""
        self.procs: dict[tuple[str, int], BotProcess] = self.fleet.procs
        self.relaunched: set[tuple[str, int]] = self.fleet.relaunched
        self.setups: dict[int, Setup] = {}
        self.unpacked: dict[tuple[str, int | None], tuple[Manifest, int | None]] = {}
        self.launched_version: dict[tuple[str, int], int | None] = {}
        self._launching: dict[tuple[str, int], trio.Event] = {}
        """Copies being launched now (set when done): a second :meth:`ensure` waits for it."""
        self._ahead: set[trio.CancelScope] = set()
        """The launches ahead under way (:meth:`_launch_ahead`), cancelled by :meth:`stop_bots`."""
        self.forwarder = EventForwarder(self.queue)
        self.health = StorageHealth(retry_s=STORAGE_RETRY_S)
        """Storage faults (a PostgreSQL server restarting, a full disk): a result is retried
        until committed (or its lease is found lost), a claim or renewal tried again later."""
        self.played = 0
        self.lost = 0
        self._n = itertools.count(1)
        self.port: int | None = None
        self.current: int | None = None
        """The tournament whose bots are running."""
        self.stopped_by_signal = False

    # ------------------------------------------------------------------ bots

    def setup(self, tournament_id: int) -> Setup:
        """The tournament's :class:`Setup` (read once)."""
        if tournament_id not in self.setups:
            s = setup_of(self.store, tournament_id)
            if self.logs is not None:
                s.logs_dir = self.logs
            if not s.isolated and not self.trust_bots:
                s.isolated = True  # this host did not agree to run bots unsandboxed
            self.setups[tournament_id] = s
        return self.setups[tournament_id]

    def manifest(self, setup: Setup, name: str) -> tuple[Manifest, int | None]:
        """The manifest of bot ``name`` as this worker runs it and its archive version: unpacked
        from its archive (the version the setup pins, else the newest), else from its manifest
        path (version None)."""
        version = setup.archives.get(name)
        key = (name, version)
        if key not in self.unpacked:
            stored = self.store.archive(name, version) if name in setup.archives else None
            if stored is not None:
                dest = self.workdir / f"b{self.store.bot_id(name)}-v{stored[0]}"
                shutil.rmtree(dest, ignore_errors=True)
                m = load_manifest(unpack(stored[2], dest))
            elif name in setup.manifests:
                m = load_manifest(setup.manifests[name])
            else:
                raise Unavailable(f"bot {name}: no archive in the database and no manifest on this host")
            m.name = name
            self.unpacked[key] = (m, stored[0] if stored is not None else None)
        return self.unpacked[key]

    async def _refresh(self, name: str, copies: tuple[int, ...]) -> None:
        """Stop ``copies`` of ``name`` if a newer version of its archive was stored since they
        were launched (a bot submitted again): the next match launches the new version."""
        versions = self.store.archive_versions(name)
        newest = versions[-1][0] if versions else None
        cached = self.unpacked.get((name, None))
        if cached is not None and cached[1] != newest:
            del self.unpacked[(name, None)]
        for copy in copies:
            key = (name, copy)
            if key in self.procs and self.launched_version.get(key, newest) != newest:
                await self.fleet.stop_copy(key)

    async def ensure(self, nursery: trio.Nursery, setup: Setup, name: str, copy: int) -> None:
        """Copy ``copy`` of bot ``name`` launched and connected (launched once, relaunched once
        if its process died; a bot that does not connect in time loses its match by forfeit)."""
        key = (name, copy)
        while (launching := self._launching.get(key)) is not None:  # launched ahead, or by another slot
            await launching.wait()
        proc = self.procs.get(key)
        if self.server.connection(name, copy) is not None and proc is not None and proc.running:
            return
        if proc is not None and (proc.running or key in self.relaunched):
            return  # running but not connected, or already relaunched once: the referee decides
        if proc is not None:
            self.relaunched.add(key)
        m, version = self.manifest(setup, name)
        self.launched_version[key] = version
        env = {"ARENA_HOST": "127.0.0.1", "ARENA_PORT": str(self.port),
               "ARENA_BOT_SEED": str(derive_seed(setup.seed, "bot", name))}
        others = [p.directory for (n, _), (p, _) in self.unpacked.items() if n != name]
        hide = [str(Path(setup.logs_dir).resolve())]
        if os.path.isfile(self.store.path):
            hide.append(str(Path(self.store.path).resolve()))
        Path(setup.logs_dir).mkdir(parents=True, exist_ok=True)
        log = bot_log(Path(setup.logs_dir) / f"t{self.current}" / "workers" / str(os.getpid()),
                      self.store.bot_id(name), copy)
        done = self._launching[key] = trio.Event()
        try:
            try:
                await self.fleet.launch(nursery, m, copy, env, log, setup.limits,
                                        setup.isolated or name in setup.sandboxed, hide, others)
            except OSError as exc:
                raise launch_failure(m, setup.manifests.get(name), exc) from None
            started = await self.fleet.wait_for_hello(self.procs[key], copy, int(setup.connect_timeout_s * 1000))
            if started is None and not setup.ladder:  # a tournament stops at once (a contest's supervisor shows it)
                raise start_failure(self.procs[key], setup.manifests.get(name), setup.connect_timeout_s)
        finally:
            del self._launching[key]
            done.set()

    async def _ensure_ahead(self, nursery: trio.Nursery, setup: Setup, name: str, copy: int) -> None:
        """:meth:`ensure` in the background: a failure is left to the match that needs the
        copy (its own :meth:`ensure` launches again and reports it)."""
        with trio.CancelScope() as scope:
            self._ahead.add(scope)
            try:
                await self.ensure(nursery, setup, name, copy)
            except Exception:  # noqa: BLE001 - reported by the match's own ensure
                pass
            finally:
                self._ahead.discard(scope)

    def _launch_ahead(self, nursery: trio.Nursery, setup: Setup, claim: Claim, slot: int) -> None:
        """Start launching, in the background, the copies this slot will need: the other bot of
        ``claim`` (while :meth:`ensure` launches the first) and the bots of the next
        :data:`AHEAD` queued matches of a static tournament (a contest's bots change as they are
        submitted: launched when needed)."""
        row = claim.row
        wanted = [(row.bot1, slot * setup.copies + claim.half % setup.copies)]
        if not setup.ladder:
            try:
                for bot0, bot1, half in self.queue.upcoming(row.tournament_id, AHEAD):
                    copy = slot * setup.copies + half % setup.copies
                    wanted += [(bot0, copy), (bot1, copy)]
            except STORAGE_ERRORS:  # the database is away: launched when needed
                pass
        for name, copy in wanted:
            key = (name, copy)
            if key not in self._launching and (key not in self.procs or not self.procs[key].running) \
                    and key not in self.relaunched:
                nursery.start_soon(self._ensure_ahead, nursery, setup, name, copy)

    # ------------------------------------------------------------------ matches

    async def play(self, nursery: trio.Nursery, claim: Claim, slot: int = 0, restart: bool = False
                   ) -> MatchResult | None:
        """Play one claimed match in ``slot`` and commit it, renewing the lease from the claim on
        (bots launching included); None if the lease was lost (nothing recorded: another worker
        plays the match again). ``restart``: the claim is of another tournament than the bots
        running (:meth:`run`)."""
        result = None
        private: list[Path] = []
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as renewing:
                async def renew() -> None:
                    while True:
                        await trio.sleep(self.queue.lease_ms / 3000)
                        try:
                            if not self.queue.renew(claim):
                                scope.cancel()  # lost: stop playing, record nothing
                                return
                        except STORAGE_ERRORS as exc:  # tried again at the next tick; the commit checks the lease
                            self.health.fail("database", exc)

                renewing.start_soon(renew)
                try:
                    result = await self._play_claimed(nursery, renewing, claim, slot, restart, private)
                except LeaseLost:
                    result = None
                renewing.cancel_scope.cancel()
        for folder in private:
            try:
                folder.rmdir()  # the usual case: its log was moved into place by the commit
            except OSError:  # a lost lease's log, or never made
                shutil.rmtree(folder, ignore_errors=True)
        if result is None:
            self.lost += 1
        else:
            self.played += 1
            if self.on_result is not None:
                self.on_result(claim.row, result)
        return result

    async def _play_claimed(self, nursery: trio.Nursery, renewing: trio.Nursery, claim: Claim, slot: int,
                            restart: bool, private: list[Path]) -> MatchResult:
        """Launch the bots ``claim`` needs, play it, commit under the lease (:meth:`play`)."""
        row = claim.row
        if restart:  # bots are launched per tournament (its seed, its versions)
            try:
                await self.stop_bots()
                self.procs.clear()
                self.relaunched.clear()
            finally:
                self.ready.set()
        else:
            await self.ready.wait()
        setup = self.setup(row.tournament_id)
        # each slot has its own copies: slot s plays the first half of a pair with copy 2s, the second with 2s + 1
        copies = (slot * setup.copies + claim.half % setup.copies,) * 2
        if setup.ladder:  # a contest: bots submitted, or submitted again, since the worker started
            self.setups.pop(row.tournament_id)
            setup = self.setup(row.tournament_id)
            for name in (row.bot0, row.bot1):
                await self._refresh(name, tuple(range(slot * setup.copies, (slot + 1) * setup.copies)))
        self._launch_ahead(nursery, setup, claim, slot)
        for name, copy in zip((row.bot0, row.bot1), copies, strict=True):
            await self.ensure(nursery, setup, name, copy)
        final_dir = Path(setup.logs_dir) / f"t{row.tournament_id}"
        folder = final_dir / f".w-{os.getpid()}-{next(self._n)}"
        private.append(folder)
        folder.mkdir(parents=True, exist_ok=True)

        def record(match_key: str, result: MatchResult, log_path: str | None, log_hash: str | None) -> None:
            final = str(final_dir / Path(log_path).name) if log_path else None

            def move_and_store() -> None:  # inside the commit: the log in place here, and in the database
                assert log_path is not None and final is not None
                _move_log(log_path, final)
                if self.log_copies:
                    self.store.put_match_log(match_key, Path(final).read_bytes())

            self.queue.commit(claim, result, final, log_hash, before=move_and_store if log_path else None)

        if setup.ladder:
            self.forwarder.attempts[row.match_key] = claim.attempt
            renewing.start_soon(self._flush_events)
        return await self.fleet.play(row, setup.match, folder, StoreSink(row, record, self.health),
                                     hub=self.forwarder if setup.ladder else None,
                                     pair=_pair_key(self.store, row) if setup.ladder else None,  # spectators' only
                                     copies=copies)

    async def _flush_events(self) -> None:
        """Write the live events every :data:`EVENT_FLUSH_S` while a ladder match is played."""
        while True:
            await trio.sleep(EVENT_FLUSH_S)
            try:
                self.forwarder.flush()
            except Exception:  # noqa: BLE001 - a busy database: kept for the next flush
                pass

    def finished(self) -> bool:
        """True once this worker's tournament (if it has one) is marked finished."""
        if self.tournament_id is None:
            return False
        try:
            t = self.store.tournament(self.tournament_id)
        except STORAGE_ERRORS:  # cannot tell: not finished
            return False
        return t is None or t["status"] == "finished"

    async def _signals(self, scope: trio.CancelScope) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.stopped_by_signal = True
                scope.cancel()
                return

    async def run(self, signals: bool = False, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> int:
        """Claim and play matches, ``slots`` at once, until the tournament is finished
        (``exit_when_finished``), ``max_matches`` claims were made, or cancelled (with
        ``signals``: SIGTERM or SIGINT, after which the matches in play are released at once for
        other workers); return the matches committed. While a slot plays, the others claim
        only matches of the same tournament (the bots running are that tournament's)."""
        claims = 0
        busy = 0

        async def slot(n: int) -> None:
            nonlocal claims, busy
            again: Claim | None = None  # a claim whose match a storage fault kept from starting
            while self.max_matches is None or claims < self.max_matches:
                only = self.tournament_id if self.tournament_id is not None else (self.current if busy else None)
                try:
                    claim = again or self.queue.claim(self.id, only)
                except STORAGE_ERRORS as exc:  # the database is away: look again shortly
                    self.health.fail("database", exc)
                    await trio.sleep(self.health.retry_s)
                    continue
                if claim is None:
                    if self.exit_when_finished and self.finished():
                        return
                    await trio.sleep(self.poll_s)
                    continue
                claims += claim is not again
                again = None
                restart = claim.row.tournament_id != self.current
                if restart:  # no other slot is busy: it would have claimed from self.current
                    self.current = claim.row.tournament_id
                    self.ready = trio.Event()
                busy += 1
                try:
                    await self.play(nursery, claim, n, restart)
                except* STORAGE_ERRORS as faults:  # a read before the match (its setup, a bot's archive)
                    self.health.fail("database", leaves(faults)[0])
                    again = claim  # played again under the same lease; if it lapsed, the commit says so
                    await trio.sleep(self.health.retry_s)
                finally:
                    busy -= 1

        async with trio.open_nursery() as nursery:
            self.port = await nursery.start(self.server.serve)
            if signals:
                nursery.start_soon(self._signals, nursery.cancel_scope)
            task_status.started(self.port)
            try:
                async with trio.open_nursery() as slots:
                    for n in range(self.slots):
                        slots.start_soon(slot, n)
            finally:
                with trio.CancelScope(shield=True):
                    if self.stopped_by_signal:
                        try:
                            self.queue.release(self.id)
                        except STORAGE_ERRORS:  # the database is away: the lease frees it when it runs out
                            pass
                    await self.stop_bots("server shutting down" if self.stopped_by_signal else "tournament over")
                nursery.cancel_scope.cancel()
        if self.own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return self.played

    async def stop_bots(self, reason: str = "tournament over") -> None:
        """Goodbye to every connected copy (``reason``: protocol.md §6.2, ``"tournament over"``
        or ``"server shutting down"``), then stop the processes (launches ahead first
        cancelled: a copy they started is stopped with the others)."""
        for scope in list(self._ahead):
            scope.cancel()
        while self._launching:  # a cancelled launch ends at once; a match's own is not under way here
            await next(iter(self._launching.values())).wait()
        await self.fleet.stop_all(reason)


def _pair_key(store: Store, row: MatchRow) -> str | None:
    return store.match_pair_key(row.match_key)



def pin_to_cpu(cpu: int) -> None:
    """Pin this process, and so every bot it launches from now on (children inherit it), to core
    ``cpu``. A worker and the bots of its match then share one core: N workers on N cores play N
    matches each on its own core, a bot on the clock never competes with another match's bots
    for its core, and a line to a bot wakes it on the core the worker is on (waking an idle core
    costs tens of µs per line on a virtual machine: ``make bench``). Raises
    :class:`arena.errors.UserError` if ``cpu`` is not a core this process may use."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if cpu not in usable:
        raise UserError(f"--cpu {cpu}: not a core this machine lets the worker use (usable: "
                        f"{', '.join(map(str, usable)) or 'none'}); pick one of those or leave --cpu out")
    os.sched_setaffinity(0, {cpu})


def _move_log(private: str, final: str) -> None:
    """Move a match log into place inside its commit; again after a commit that failed (the
    database went away after the move): already there, nothing to do."""
    if not os.path.exists(private) and os.path.exists(final):
        return
    os.replace(private, final)
