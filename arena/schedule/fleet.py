"""One fleet of bots: launching, connecting, saying goodbye to and stopping bot copies, once for
the tournament, the worker and the contest alike (issue 23), and playing a scheduled match
between two of them (:meth:`Fleet.play`, the one way a driver of :mod:`arena.schedule` plays a
stored match: :class:`arena.match.runner.MatchRunner` with its result going to the store
through a :class:`StoreSink`).

Every time-out here is a field of :class:`arena.match.limits.FleetLimits` (milliseconds),
beside :class:`~arena.match.limits.Limits`. The drivers keep what makes them different: what to
play next, which bots to launch (a tournament's manifests, a worker's archives, a contest's
submissions) and where results go (the store; under a lease for a worker).

The shutdown sequence (:meth:`Fleet.stop_all`): ``goodbye`` to every connected copy (each
within ``goodbye_ms``), its connection closed, then every process stopped (each given
``exit_grace_ms`` to exit on its own, then SIGTERM, ``term_grace_ms``, SIGKILL; all within
``stop_ms``), and whatever is left killed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import trio

from arena.match.core import MatchConfig, MatchResult
from arena.match.limits import FLEET, FleetLimits
from arena.match.log import MatchLog
from arena.match.runner import LogRef, MatchRunner, MatchSpec, Spectators
from arena.match.seat import Connection
from arena.schedule.admission import admit
from arena.schedule.copies import launch_copy
from arena.schedule.launcher import BotProcess, Limits, Manifest
from arena.store.health import STORAGE_ERRORS, StorageHealth
from arena.store.sqlite import MatchRow
from protocol.messages import Goodbye

Key = tuple[str, int]
"""A copy of a bot: ``(name, copy)``."""
Commit = Callable[[str, MatchResult, str | None, str | None], None]
"""``commit(match_key, result, log path, log hash)``: :meth:`arena.store.sqlite.Store.record_result`,
or a worker's commit under its lease."""
OnResult = Callable[[MatchRow, MatchResult], None]


class StoreSink:
    """Where the result of ``row`` goes: ``commit`` (see :data:`Commit`), retried while storage
    fails when ``health`` is given (else a storage error propagates: a tournament can resume);
    then ``on_result(row, result)``. Storage faults of the match log pause ``health``'s
    scheduling."""

    def __init__(self, row: MatchRow, commit: Commit, health: StorageHealth | None = None,
                 on_result: OnResult | None = None) -> None:
        self.row = row
        self.commit = commit
        self.health = health
        self.on_result = on_result

    def _args(self, result: MatchResult, log: LogRef | None) -> tuple[str, MatchResult, str | None, str | None]:
        return (self.row.match_key, result, log.path if log else None, log.last_hash if log else None)

    async def record(self, result: MatchResult, log: LogRef | None) -> None:
        """Commit (retried under ``health``), then tell ``on_result``."""
        if self.health is None:
            self.commit(*self._args(result, log))
        else:
            await self.health.commit("database", self.commit, *self._args(result, log))
        if self.on_result is not None:
            self.on_result(self.row, result)

    def record_now(self, result: MatchResult, log: LogRef | None) -> None:
        """Commit once (a cancellation): a storage error leaves the match pending (the next start
        marks it aborted)."""
        try:
            self.commit(*self._args(result, log))
        except STORAGE_ERRORS:
            return
        if self.on_result is not None:
            self.on_result(self.row, result)

    def storage_fault(self, what: str, error: OSError) -> None:
        """Pause scheduling under ``health`` (nothing without it: the result says it)."""
        if self.health is not None:
            self.health.fail(what, error)


class Fleet:
    """The bot copies one driver runs on its ``server`` (an :class:`arena.net.server.ArenaServer`),
    with the time-outs of ``limits``. ``procs``: the running copies by :data:`Key`."""

    def __init__(self, server: Any, limits: FleetLimits = FLEET) -> None:
        self.server = server
        self.limits = limits
        self.procs: dict[Key, BotProcess] = {}
        self.relaunched: set[Key] = set()
        """Copies relaunched once already (:meth:`relaunch_dead`)."""

    # ------------------------------------------------------------------ launching and connecting

    async def launch(self, nursery: trio.Nursery, manifest: Manifest, copy: int, env: dict[str, str],
                     log_path: Path, limits: Limits, sandbox: bool, hide: Sequence[str | Path] = (),
                     others: Sequence[str | Path] = ()) -> BotProcess:
        """Launch copy ``copy`` of ``manifest``'s bot (:func:`arena.schedule.copies.launch_copy`)
        and keep it in :attr:`procs`. Raises what the launch raises (``OSError``: a program
        that cannot be executed; :class:`~arena.schedule.launcher.SandboxError`)."""
        proc = await launch_copy(nursery, self.server, manifest, copy, env, log_path, limits, sandbox, hide, others)
        self.procs[(manifest.name, copy)] = proc
        return proc

    async def wait_for_hello(self, proc: BotProcess, copy: int, timeout_ms: int | None = None) -> Connection | None:
        """The connection of copy ``copy`` of ``proc``'s bot once it said ``hello``, or None if
        its process exits first or ``timeout_ms`` (default ``limits.connect_ms``) pass."""
        name = proc.manifest.name
        poll_s = self.limits.hello_poll_ms / 1000
        with trio.move_on_after((self.limits.connect_ms if timeout_ms is None else timeout_ms) / 1000):
            while True:
                conn = await self.server.wait_for(name, poll_s, copy)
                if conn is not None:
                    return conn
                if not proc.running:
                    return None
        return None

    async def relaunch_dead(self, name: str, copies: Sequence[int], start: Callable[[int], Awaitable[Any]],
                            timeout_ms: int | None = None) -> None:
        """Before a match: each copy of ``name`` in ``copies`` that is not connected and whose
        process died is launched again by ``start(copy)``, once per fleet, and waited for
        (``timeout_ms``, default ``limits.connect_ms``); a copy still absent loses its match."""
        for copy in copies:
            key = (name, copy)
            if self.server.connection(name, copy) is not None or key in self.relaunched:
                continue
            proc = self.procs.get(key)
            if proc is not None and not proc.running:
                self.relaunched.add(key)
                await start(copy)
                await self.server.wait_for(name, (self.limits.connect_ms if timeout_ms is None else timeout_ms) / 1000,
                                           copy)

    def seats(self, names: tuple[str, str], copies: tuple[int, int]) -> tuple[Connection | None, Connection | None]:
        """The connections of copy ``copies[s]`` of bot ``names[s]`` per seat (None: not connected)."""
        return (self.server.connection(names[0], copies[0]), self.server.connection(names[1], copies[1]))

    # ------------------------------------------------------------------ stopping

    async def stop_process(self, proc: BotProcess) -> None:
        """Stop one process (:meth:`arena.schedule.launcher.BotProcess.stop` with the fleet's
        graces), within ``stop_ms``, then kill what is left."""
        lim = self.limits
        with trio.move_on_after(lim.stop_ms / 1000):
            await proc.stop(lim.term_grace_ms / 1000, lim.exit_grace_ms / 1000, lim.reap_ms / 1000)
        proc.stop_now()

    async def stop_copy(self, key: Key) -> None:
        """Stop copy ``key`` (if running) and forget it (a new version is launched next)."""
        proc = self.procs.pop(key, None)
        self.relaunched.discard(key)
        if proc is not None:
            await self.stop_process(proc)

    async def goodbye(self, reason: str) -> None:
        """``goodbye`` (``reason``: docs/protocol.md §6.2) to every connected copy, each within
        ``goodbye_ms``, and its connection closed."""
        for conn in [*self.server.bots.values(), *self.server.copies.values()]:
            with trio.move_on_after(self.limits.goodbye_ms / 1000):
                try:
                    await conn.send(Goodbye(reason=reason))  # type: ignore[arg-type]
                except Exception:  # noqa: BLE001 - a bot already gone is fine
                    pass
            await conn.aclose(reason)

    async def stop_all(self, reason: str) -> None:
        """The shutdown sequence (module docstring), shielded from cancellation: goodbye, then
        every process stopped within ``stop_ms``, then whatever is left killed."""
        lim = self.limits
        with trio.CancelScope(shield=True):
            await self.goodbye(reason)
            with trio.move_on_after(lim.stop_ms / 1000):
                for proc in self.procs.values():
                    await proc.stop(lim.term_grace_ms / 1000, lim.exit_grace_ms / 1000, lim.reap_ms / 1000)
            for proc in self.procs.values():
                proc.stop_now()

    # ------------------------------------------------------------------ playing

    async def play(self, row: MatchRow, config: MatchConfig, logs: Path, sink: StoreSink, *,
                   copies: tuple[int, int] = (0, 0), hub: Spectators | None = None, pair: str | None = None,
                   on_cancel: Literal["leave", "abort"] = "leave",
                   log_factory: Callable[[Path | None], MatchLog] = MatchLog) -> MatchResult:
        """Play the stored match ``row`` between copy ``copies[s]`` of each bot (absent: it
        loses), its log at ``logs/<match_key>.jsonl.gz``, its result to ``sink``
        (:class:`arena.match.runner.MatchRunner`). Admission control first
        (:mod:`arena.schedule.admission`): no bot is charged for the server's own queue."""
        await admit()
        names = (row.bot0, row.bot1)
        log_path = logs / f"{row.match_key}.jsonl.gz"  # gzip (arena.match.log): under a third of the bytes
        try:
            (logs / f"{row.match_key}.jsonl").unlink(missing_ok=True)  # a partial plain log of an older version's run
        except OSError:  # a read-only or missing logs folder: the match log's own open says so
            pass
        spec = MatchSpec(row.match_key, row.seed, config, names, pair)
        return await MatchRunner(spec, self.seats(names, copies), sink, log_path, hub=hub, on_cancel=on_cancel,
                                 log_factory=log_factory).run()


async def stop_child(proc: subprocess.Popen, limits: FleetLimits = FLEET) -> None:
    """Stop a child process of ours (a local ``arena worker``) if it runs: SIGTERM (it releases
    its match and stops its bots), ``worker_stop_ms`` to exit, then SIGKILL. Shielded."""
    if proc.poll() is not None:
        return
    with trio.CancelScope(shield=True):
        proc.terminate()
        with trio.move_on_after(limits.worker_stop_ms / 1000):
            while proc.poll() is None:
                await trio.sleep(limits.process_poll_ms / 1000)
        if proc.poll() is None:
            proc.kill()


async def wait_child(proc: subprocess.Popen, limits: FleetLimits = FLEET) -> int:
    """Wait for a child process to exit (looked at every ``process_poll_ms``); its status. A
    cancellation stops it first (:func:`stop_child`)."""
    try:
        while proc.poll() is None:
            await trio.sleep(limits.process_poll_ms / 1000)
    finally:
        await stop_child(proc, limits)
    return proc.returncode


__all__ = ["Fleet", "StoreSink", "stop_child", "wait_child"]
