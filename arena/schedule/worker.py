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
under its own logs folder, then deletes the copy (:func:`keep_worker_logs`), so the copies are
only the logs of the results the front has not looked at yet.

:func:`play_on_workers` is what ``arena tournament --workers N`` runs: it queues the
tournament's matches, starts N ``arena worker`` processes, follows the results for the progress
display, and starts a replacement for a worker that dies (its matches are released at once, not
after their lease).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.errors import Unavailable, UserError, leaves
from arena.match.log import ChainError, LogEvent, complete_gzip
from arena.match.referee import MatchConfig, MatchResult
from arena.net.server import ArenaServer, ServerConfig
from arena.schedule.copies import PAIR_COPIES, bot_log, launch_failure, start_failure
from arena.schedule.fleet import Fleet, StoreSink, wait_child
from arena.schedule.formats import Format, Pairing, StaticFormat, derive_seed
from arena.schedule.launcher import BotProcess, Limits, Manifest, load_manifest, sandbox_problem
from arena.store.archives import unpack
from arena.store.health import STORAGE_ERRORS, StorageHealth
from arena.store.log_archive import write_synced
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
USER_STATUSES = (2, 3, 4)
"""Exit statuses of a worker that met a mistake of the user's (arena.errors): reported, not retried."""
AHEAD = 2
"""Queued matches whose bots a worker launches ahead, while it plays (static tournaments): a
launch (a sandbox, an interpreter starting, the handshake) takes about 0.1 s that the next
match would otherwise wait."""
FULL_LOOK_S = 5.0
"""The front of ``arena tournament --workers`` reads the recorded results when the queue's count
of committed matches changed, and at least this often (seconds) whatever it says."""
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


def release_dead_local(queue: MatchQueue) -> int:
    """Release at once the leases of workers of this host whose process (the pid in their id,
    :func:`default_worker_id`) is gone, rather than wait for the leases to expire; return how
    many matches were released. Workers of other hosts are left to their leases."""
    host = socket.gethostname()
    released = 0
    for worker in queue.leased_workers():
        parts = (worker or "").split(":")
        if len(parts) >= 2 and parts[0] == host and parts[1].isdigit() and not os.path.exists(f"/proc/{parts[1]}"):
            released += queue.release(worker)
    return released


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
    from arena.schedule.tournament import TournamentConfig

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
    (:meth:`flush`), for the front server to feed its own hub (:class:`EventFeed`). Hidden
    events travel with their ``seen_by`` like in a match log; what spectators get of them is
    decided by the front's hub, under its rules. ``attempts``: the claim's attempt by match."""

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


class EventFeed:
    """The front's side: feeds the events workers stored into ``hub`` (a
    :class:`arena.net.spectate.SpectatorHub`, which applies its hidden-card rules). Events of an
    older claim of a match than the newest seen (a worker that lost its lease and plays on for
    a moment) are dropped, so a match played again is followed from its new start."""

    KEEP = 10_000
    """Matches whose newest claim is remembered (the oldest are forgotten beyond)."""

    def __init__(self, hub: Any) -> None:
        self.hub = hub
        self.attempts: dict[str, int] = {}

    def feed(self, match_key: str, stored: bytes) -> None:
        """One stored event (an :class:`Envelope`)."""
        from protocol.messages import Rules, TimeControl

        env = msgspec.json.decode(stored, type=Envelope)
        if env.attempt < self.attempts.get(match_key, 0):
            return
        self.attempts[match_key] = env.attempt
        if len(self.attempts) > self.KEEP:
            for key in list(self.attempts)[: self.KEEP // 2]:
                del self.attempts[key]
        body = bytes(env.body)
        if body.startswith(b'{"type":"event"'):
            ev = msgspec.json.decode(body, type=LogEvent)
            self.hub.event(match_key, ev.event, tuple(ev.seen_by))
            return
        msg = msgspec.json.decode(body)
        if msg.get("type") == "start":
            self.hub.match_started(match_key, msg["game"], msg["bots"], msgspec.convert(msg["rules"], Rules),
                                   msgspec.convert(msg["time"], TimeControl), msg.get("pair"))
        elif msg.get("type") == "end":
            self.hub.match_ended(match_key, msg["winner"], msg["reason"], msg["scores"])


EVENTS_KEPT_S = 600.0
"""Live events older than this are deleted by the front (seconds): they were read long ago."""


async def pump_events(queue: MatchQueue, hub: Any, poll_s: float = POLL_S, logs: str | Path | None = None) -> None:
    """Feed ``hub`` with the live events workers write (from now on), polling every ``poll_s``,
    and delete those older than :data:`EVENTS_KEPT_S` once a minute; with ``logs`` (the front's
    logs folder), also take the logs workers commit (:func:`keep_worker_logs`). Runs until
    cancelled."""
    last = queue.last_event_id()
    pruned = trio.current_time()
    feed = EventFeed(hub)
    while True:
        try:
            for event_id, key, body in queue.events_after(last):
                last = event_id
                feed.feed(key, body)
            if trio.current_time() - pruned > 60:
                pruned = trio.current_time()
                queue.prune_events(queue.now_ms() - int(EVENTS_KEPT_S * 1000))
            if logs is not None:
                await keep_worker_logs(queue.store, Path(logs))
        except Exception:  # noqa: BLE001 - a database hiccup: look again next time
            pass
        await trio.sleep(poll_s)


COPIES_BATCH = 100
"""Worker copies of match logs the front reads per query (:func:`keep_worker_logs`)."""


def place_worker_log(data: bytes, log_path: str, folder: Path) -> str:
    """Where the front has the log a worker committed as ``data`` (its bytes, taken at the
    commit: :func:`arena.match.log.complete_gzip`): the file at ``log_path`` if this host has it
    (the worker on this host moved it there) or ``folder/<its name>`` if an earlier call wrote
    it; else that file is written now (synced, renamed into place) with ``data`` made whole. The
    file work of :func:`keep_worker_logs`, run in a thread. Raises ``OSError`` if it cannot be
    written, :class:`arena.match.log.ChainError` if ``data`` is not a log that can be made whole."""
    recorded = Path(log_path)
    target = folder / recorded.name
    for candidate in (recorded, target):
        try:
            if candidate.read_bytes().startswith(data):  # the file, closed since (its trailer) or not yet
                return str(candidate)
        except OSError:
            continue
    whole = complete_gzip(data)
    folder.mkdir(parents=True, exist_ok=True)
    write_synced(target, whole)
    return str(target)


async def keep_worker_logs(store: Store, logs: Path, tournament_id: int | None = None) -> int:
    """The front's side of the logs workers commit with their results (table ``match_logs``):
    for each copy still there (of ``tournament_id``, or of any tournament), the front makes sure
    it has the log as a file, under ``logs/t<id>/`` (:func:`place_worker_log`, in a thread), points
    the match to that file if it was elsewhere, and deletes the copy in the same transaction.
    Returns how many copies were deleted. A copy that cannot be placed (a full disk) stays for
    the next call; storage errors of the database propagate."""
    done = 0
    failed: set[str] = set()
    while True:
        rows = [r for r in store.match_log_copies(tournament_id, COPIES_BATCH) if r[0] not in failed]
        for key, tid, log_path in rows:
            data = store.match_log_copy(key)
            if data is None or not log_path:
                continue
            try:
                path = await trio.to_thread.run_sync(place_worker_log, data, log_path, logs / f"t{tid}")
            except (OSError, ChainError):
                failed.add(key)
                continue
            store.move_match_logs([(key, log_path, path)])
            done += 1
        if len(rows) < COPIES_BATCH:
            return done


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
        import signal

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


# ---------------------------------------------------------------------- the front side of a tournament


def store_archives(store: Store, manifest_paths: list[str]) -> dict[str, int]:
    """Store each bot's archive (:func:`arena.store.archives.pack` of its manifest) and return
    ``name -> version``, to pin in the tournament's configuration. Raises
    :class:`arena.errors.UserError` for a bot that cannot be packed."""
    from arena.store.archives import ArchiveError, pack

    out = {}
    for path in manifest_paths:
        name = load_manifest(path).name
        try:
            out[name] = store.put_archive(name, pack(path))
        except (ArchiveError, OSError) as exc:
            raise UserError(f"bot {name}: cannot be stored for the workers ({exc}); --workers 0 plays in one "
                            "process from the bot's directory") from None
    return out


class LocalWorkers:
    """``count`` worker processes on this machine for :func:`arena.schedule.tournament.run_tournament`
    (its ``workers`` argument): it stores the bots' archives, then plays the tournament on them
    (:func:`play_on_workers`); ``pin``: each worker pinned to a core (:func:`pin_to_cpu`)."""

    def __init__(self, count: int, lease_s: float = LEASE_S, pin: bool = True) -> None:
        if count < 1:
            raise ValueError("at least one worker")
        self.count = count
        self.lease_s = lease_s
        self.pin = pin

    def store_archives(self, store: Store, manifest_paths: list[str]) -> dict[str, int]:
        """See :func:`store_archives`."""
        return store_archives(store, manifest_paths)

    async def play(self, store: Store, tid: int, fmt: Format, trust_bots: bool, on_result: OnDone | None = None,
                   play_steps: Any = None) -> None:
        """See :func:`play_on_workers`."""
        await play_on_workers(store, tid, fmt, self.count, trust_bots, on_result, self.lease_s, play_steps, self.pin)


def worker_command(db: str, tournament_id: int, worker_id: str, trust_bots: bool, lease_s: float,
                   cpu: int | None = None) -> list[str]:
    """The command line of a local worker process of ``arena tournament --workers N``: on this host,
    in the front's folder, so with the front's logs folder: no copy of each log in the database
    (``--no-log-copies``; the front has the file once the commit moved it there)."""
    cmd = [sys.executable, "-m", "arena.cli", "worker", "--db", db, "--tournament", str(tournament_id),
           "--id", worker_id, "--lease-s", str(lease_s), "--quiet", "--no-log-copies"]
    return cmd + (["--trust-bots"] if trust_bots else []) + ([] if cpu is None else ["--cpu", str(cpu)])


def local_cpu(n: int) -> int | None:
    """The core local worker number ``n`` is pinned to (:func:`pin_to_cpu`): the machine's usable
    cores in turn; None where processes cannot be pinned."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    return cores[n % len(cores)]


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


def _die_with_parent() -> None:  # runs in the child between fork and exec
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def result_of(row: dict[str, Any]) -> MatchResult:
    """The :class:`MatchResult` of a recorded match row (for progress displays)."""
    return MatchResult(match_id=row["match_key"], winner=row["winner_seat"], reason=row["reason"] or "aborted",
                       scores=[row["score0"] or 0, row["score1"] or 0],
                       manches=[row["manches0"] or 0, row["manches1"] or 0], detail=row["detail"] or "",
                       faulty=row["faulty_seat"], decisions=row["decisions"] or 0, deals=row["deals"] or 0,
                       duration_ms=row["duration_ms"] or 0, margin=row["margin"] or 0)


async def play_on_workers(store: Store, tid: int, fmt: Format, workers: int, trust_bots: bool,
                          on_result: OnDone | None = None, lease_s: float = LEASE_S,
                          play_steps: Callable[[Callable[[Pairing], Awaitable[str | None]]], Awaitable[None]]
                          | None = None, pin: bool = True) -> None:
    """Play tournament ``tid`` on ``workers`` local worker processes, mark it finished (the
    workers then exit) and return when every match is recorded. A static format's matches are all
    queued at once; a format that decides as it goes runs ``play_steps(play)``, where
    ``play(pairing)`` queues one match and returns its winner's name once it is recorded.
    ``on_result(row, result)`` is called for each recorded match. A worker that exits before the
    end has its leases released and is replaced (at most ``3 * workers`` times; then
    :class:`arena.errors.Unavailable`). With ``pin``, worker ``n`` is pinned to the ``n``-th
    usable core (in turn: :func:`local_cpu`), its bots with it."""
    if not trust_bots and (problem := sandbox_problem()) is not None:
        raise Unavailable(problem)
    queue = MatchQueue(store, lease_s=lease_s)
    release_dead_local(queue)  # a resumed tournament: the workers of the run that died
    queue.drop_recorded()  # and the matches an in-process run (--workers 0) recorded since
    if isinstance(fmt, StaticFormat):
        queue.enqueue(tid)
    game = store.tournament(tid)["game"]
    logs = Path(setup_of(store, tid).logs_dir)
    seen = {r["match_key"] for r in store.matches(tid) if r["status"] != "pending"}
    waiting: dict[str, trio.Event] = {}
    steps_over = play_steps is None
    done = False
    respawns = 3 * workers

    def poll() -> None:
        for r in store.recorded_since(tid, seen):
            seen.add(r["match_key"])
            if on_result is not None:
                on_result(store.match_row(r["match_key"]), result_of(r))
            if r["match_key"] in waiting:
                waiting.pop(r["match_key"]).set()

    async def play(p: Pairing) -> str | None:
        row = store.add_match(tid, game, p)
        if row.status == "pending":
            ev = waiting.setdefault(row.match_key, trio.Event())
            queue.enqueue(tid, row.match_key)
            await ev.wait()
        return store.match_by_index(tid, p.index)["winner"]

    async def steps() -> None:
        nonlocal steps_over
        assert play_steps is not None
        await play_steps(play)
        steps_over = True

    async def run_worker(n: int) -> None:
        nonlocal respawns
        wid = f"{default_worker_id()}:w{n}"
        while not done:
            err = tempfile.TemporaryFile()
            # forked here, in the main thread: PR_SET_PDEATHSIG follows the forking thread, not the process
            db, env = store.child_db()  # never a password on a command line
            proc = subprocess.Popen(worker_command(db, tid, wid, trust_bots, lease_s, local_cpu(n) if pin else None),
                                    stdin=subprocess.DEVNULL,
                                    stderr=err, env={**os.environ, **env}, preexec_fn=_die_with_parent)
            await wait_child(proc)  # cancelled: stopped (arena.schedule.fleet)
            err.seek(0)
            said = err.read().decode(errors="replace")
            err.close()
            mistake = [line for line in said.splitlines() if line.startswith("arena: error: ")]
            if proc.returncode in USER_STATUSES and mistake:  # a bot that cannot start, a bad database...
                raise UserError(mistake[-1].removeprefix("arena: error: "), proc.returncode)
            if said and not done:
                sys.stderr.write(said)  # a crash: its traceback, then a replacement
            if done:
                return
            try:
                queue.release(wid)  # its match is claimable at once, by the others or its replacement
            except STORAGE_ERRORS:  # the database is away: the lease frees it when it runs out
                pass
            respawns -= 1
            if respawns < 0:
                raise Unavailable(f"the workers keep dying (last exit status {proc.returncode}): run "
                                  f"`arena worker --db {store.path} --tournament {tid}` to see why")

    async with trio.open_nursery() as nursery:
        for n in range(workers):
            nursery.start_soon(run_worker, n)
        if play_steps is not None:
            nursery.start_soon(steps)
        committed: int | None = None  # the queue's done count when the results were last read
        looked = trio.current_time()
        while True:
            try:
                counts = queue.counts(tid)
                if counts.get("done", 0) != committed or trio.current_time() - looked >= FULL_LOOK_S:
                    poll()  # read the results only when a worker committed one (or now and then, in any case)
                    committed, looked = counts.get("done", 0), trio.current_time()
                    await keep_worker_logs(store, logs, tid)  # the logs are here: the workers' copies go
            except STORAGE_ERRORS:  # the database is away (the workers wait too): look again
                await trio.sleep(POLL_S)
                continue
            if steps_over and not waiting and not counts.get("queued") and not counts.get("leased"):
                break
            await trio.sleep(POLL_S)
        done = True
        store.finish_tournament(tid)  # the workers see it and exit
        nursery.cancel_scope.deadline = trio.current_time() + 10  # then they are stopped
