"""Storage faults (a full disk, a read-only path) pause the contest; they never stop it.

The contest server writes two things: match logs (:class:`arena.match.log.MatchLog`) and the
database (:class:`arena.store.sqlite.Store`). When either write fails with an ``OSError`` or a
``sqlite3.Error`` (``ENOSPC``, ``EROFS``, "database or disk is full", "attempt to write a
readonly database", ...), or on PostgreSQL with
:class:`arena.store.postgres.DatabaseLost` (a ``ConnectionError``, so an ``OSError``: the
connection lost, the server stopped or restarting, its disk full; the store reconnects by itself
at the next write):

* the match concerned ends, at most: a log that cannot be written aborts its match (reason
  ``aborted``, the error in its ``detail``);
* :meth:`StorageHealth.fail` **pauses scheduling**: no new match starts. The pause is logged
  once (one clear line at ERROR level, saying what failed and that scheduling resumes by
  itself), shown by the metric ``arena_storage_paused`` (1) and in ``GET /api/status``;
* a result (or any other write) that could not be committed is **retried**, not dropped:
  :meth:`StorageHealth.commit` calls it again every ``retry_s`` seconds until it succeeds; the
  match's bots hear ``match_end`` only after it did (results are committed before they are
  announced);
* every ``retry_s`` seconds a probe (``probe``, given by the contest: write and remove a small
  file in the logs directory, and a write transaction in the database) checks the storage;
  once it succeeds and no write is waiting, scheduling **resumes** (logged, metric back to 0).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import trio

from arena.metrics import METRICS

log = logging.getLogger("arena.storage")

STORAGE_ERRORS: tuple[type[BaseException], ...] = (OSError, sqlite3.Error)
"""The exceptions that mean "the storage failed" (rather than a bug)."""

T = TypeVar("T")


class StorageHealth:
    """Whether storage works, and the writes waiting for it (see the module docstring).

    ``probe()`` raises one of :data:`STORAGE_ERRORS` while storage is not usable (None: the
    waiting writes are the only probe). ``on_resume`` callbacks are called (no argument) when
    scheduling may go on. Times in seconds on trio's clock."""

    def __init__(self, retry_s: float = 5.0, probe: Callable[[], None] | None = None) -> None:
        self.retry_s = retry_s
        self.probe = probe
        self.reason = ""
        self.paused_since: float | None = None
        self.waiting = 0  # writes being retried
        self.failures = 0
        self.on_resume: list[Callable[[], None]] = []
        self._resumed = trio.Event()
        self._resumed.set()

    @property
    def paused(self) -> bool:
        """True while scheduling is paused by a storage fault."""
        return self.paused_since is not None

    def state(self) -> dict[str, Any]:
        """The visible state: ``{"paused": bool, "reason": str, "waiting_writes": int}``."""
        return {"paused": self.paused, "reason": self.reason, "waiting_writes": self.waiting}

    def fail(self, what: str, exc: BaseException) -> None:
        """Record that writing ``what`` (``"match log"``, ``"database"``, ...) failed with
        ``exc``; pause scheduling (logged once per pause)."""
        self.failures += 1
        METRICS.storage_errors.labels(what).inc()
        self.reason = f"{what}: {exc}"
        if self.paused_since is None:
            self.paused_since = trio.current_time()
            self._resumed = trio.Event()
            METRICS.storage_paused.set(1)
            log.error("storage fault, scheduling paused (%s); matches resume by themselves when it is writable "
                      "again (checked every %g s)", self.reason, self.retry_s)

    def _resume(self) -> None:
        if self.paused_since is None:
            return
        log.warning("storage writable again after %.0f s: scheduling resumes", trio.current_time() - self.paused_since)
        self.paused_since = None
        self.reason = ""
        METRICS.storage_paused.set(0)
        self._resumed.set()
        for cb in self.on_resume:
            cb()


    async def commit(self, what: str, write: Callable[..., T], *args: Any) -> T:
        """Call ``write(*args)``; while it raises one of :data:`STORAGE_ERRORS`, pause, wait
        ``retry_s`` and call it again. Returns what it returned. (Other exceptions propagate:
        they are bugs, or refusals such as a result recorded twice.)"""
        counted = False
        try:
            while True:
                try:
                    return write(*args)
                except STORAGE_ERRORS as exc:
                    self.fail(what, exc)
                    if not counted:
                        self.waiting += 1
                        counted = True
                await trio.sleep(self.retry_s)
        finally:
            if counted:
                self.waiting -= 1

    def check(self) -> bool:
        """Run the probe once; resume if it passes and no write is waiting. True if resumed."""
        if not self.paused:
            return True
        if self.probe is not None:
            try:
                self.probe()
            except STORAGE_ERRORS as exc:
                self.reason = f"still failing: {exc}"
                return False
        if self.waiting:
            return False
        self._resume()
        return True

    async def watch(self) -> None:
        """Run forever: while paused, :meth:`check` every ``retry_s`` seconds."""
        while True:
            await trio.sleep(self.retry_s)
            self.check()
