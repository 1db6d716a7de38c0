"""The front's side of match workers (:mod:`arena.schedule.worker`): what ``arena tournament
--workers N`` and a contest server with ``workers`` run beside the workers.

:func:`play_on_workers` is what ``arena tournament --workers N`` runs: it queues the
tournament's matches, starts N ``arena worker`` processes, follows the results for the progress
display, and starts a replacement for a worker that dies (its matches are released at once, not
after their lease). :class:`LocalWorkers` hands it to
:func:`arena.schedule.tournament.run_tournament`, after storing the bots' archives
(:func:`store_archives`).

A contest server's front feeds its spectators with the live events its workers store
(:func:`pump_events`, :class:`EventFeed`) and takes the match logs they commit as files under its
own logs folder (:func:`keep_worker_logs`), deleting the database's copies.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.errors import Unavailable, UserError
from arena.match.log import ChainError, LogEvent, complete_gzip
from arena.match.referee import MatchResult
from arena.schedule.fleet import wait_child
from arena.schedule.formats import Format, Pairing, StaticFormat
from arena.schedule.launcher import load_manifest, sandbox_problem
from arena.schedule.worker import POLL_S, Envelope, OnDone, default_worker_id, setup_of
from arena.store.archives import ArchiveError, pack
from arena.store.health import STORAGE_ERRORS
from arena.store.log_archive import write_synced
from arena.store.queue import LEASE_S, MatchQueue
from arena.store.sqlite import Store
from protocol.messages import Rules, TimeControl

USER_STATUSES = (2, 3, 4)
"""Exit statuses of a worker that met a mistake of the user's (arena.errors): reported, not retried."""
FULL_LOOK_S = 5.0
"""The front of ``arena tournament --workers`` reads the recorded results when the queue's count
of committed matches changed, and at least this often (seconds) whatever it says."""


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
        """One stored event (an :class:`arena.schedule.worker.Envelope`)."""
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



def store_archives(store: Store, manifest_paths: list[str]) -> dict[str, int]:
    """Store each bot's archive (:func:`arena.store.archives.pack` of its manifest) and return
    ``name -> version``, to pin in the tournament's configuration. Raises
    :class:`arena.errors.UserError` for a bot that cannot be packed."""
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
    (:func:`play_on_workers`); ``pin``: each worker pinned to a core
    (:func:`arena.schedule.worker.pin_to_cpu`)."""

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
    """The core local worker number ``n`` is pinned to (:func:`arena.schedule.worker.pin_to_cpu`):
    the machine's usable cores in turn; None where processes cannot be pinned."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    return cores[n % len(cores)]


def die_with_parent() -> None:
    """Have this process killed (SIGKILL) when the thread that forked it ends: a ``preexec_fn``,
    run in the child between fork and exec, so a worker never outlives its front."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def result_of(row: dict[str, Any]) -> MatchResult:
    """The :class:`MatchResult` of a recorded match row (for progress displays)."""
    return MatchResult(match_id=row["match_key"], winner=row["winner_seat"], reason=row["reason"] or "aborted",
                       scores=[row["score0"] or 0, row["score1"] or 0],
                       manches=[row["manches0"] or 0, row["manches1"] or 0], detail=row["detail"] or "",
                       faulty=row["faulty_seat"], decisions=row["decisions"] or 0, deals=row["deals"] or 0,
                       duration_ms=row["duration_ms"] or 0, margin=row["margin"] or 0)


async def _worker_process(store: Store, tid: int, wid: str, trust_bots: bool, lease_s: float,
                          cpu: int | None) -> tuple[int, str]:
    """Run one local worker process of :func:`play_on_workers` (:func:`worker_command`) to its end;
    return its exit status and what it wrote to stderr. Cancelled: the process is
    stopped (:func:`arena.schedule.fleet.wait_child`)."""
    with tempfile.TemporaryFile() as err:
        # forked here, in the main thread: PR_SET_PDEATHSIG follows the forking thread, not the process
        db, env = store.child_db()  # never a password on a command line
        proc = subprocess.Popen(worker_command(db, tid, wid, trust_bots, lease_s, cpu), stdin=subprocess.DEVNULL,
                                stderr=err, env={**os.environ, **env}, preexec_fn=die_with_parent)
        await wait_child(proc)
        err.seek(0)
        return proc.returncode, err.read().decode(errors="replace")


async def _follow(queue: MatchQueue, tid: int, logs: Path, poll: Callable[[], None],
                  steps_over: Callable[[], bool]) -> None:
    """The front's loop of :func:`play_on_workers`: ``poll()`` reads the recorded results when a
    worker committed one (the queue's count of committed matches changed), and at least every
    :data:`FULL_LOOK_S` in any case; the workers' copies of the logs go then
    (:func:`keep_worker_logs`). Returns once ``steps_over()`` and nothing is queued or leased. A
    database that is away (the workers wait too) is looked at again every :data:`POLL_S`."""
    committed: int | None = None  # the queue's done count when the results were last read
    looked = trio.current_time()
    while True:
        try:
            counts = queue.counts(tid)
            if counts.get("done", 0) != committed or trio.current_time() - looked >= FULL_LOOK_S:
                poll()
                committed, looked = counts.get("done", 0), trio.current_time()
                await keep_worker_logs(queue.store, logs, tid)  # the logs are here: the workers' copies go
        except STORAGE_ERRORS:
            await trio.sleep(POLL_S)
            continue
        if steps_over() and not counts.get("queued") and not counts.get("leased"):
            return
        await trio.sleep(POLL_S)


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
            status, said = await _worker_process(store, tid, wid, trust_bots, lease_s, local_cpu(n) if pin else None)
            mistake = [line for line in said.splitlines() if line.startswith("arena: error: ")]
            if status in USER_STATUSES and mistake:  # a bot that cannot start, a bad database...
                raise UserError(mistake[-1].removeprefix("arena: error: "), status)
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
                raise Unavailable(f"the workers keep dying (last exit status {status}): run "
                                  f"`arena worker --db {store.path} --tournament {tid}` to see why")

    async with trio.open_nursery() as nursery:
        for n in range(workers):
            nursery.start_soon(run_worker, n)
        if play_steps is not None:
            nursery.start_soon(steps)
        await _follow(queue, tid, logs, poll, lambda: steps_over and not waiting)
        done = True
        store.finish_tournament(tid)  # the workers see it and exit
        nursery.cancel_scope.deadline = trio.current_time() + 10  # then they are stopped
