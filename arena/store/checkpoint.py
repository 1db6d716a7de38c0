"""WAL checkpoints of the contest server's SQLite store, in a thread of their own (issue 21).

SQLite in WAL mode appends every committed page to the ``-wal`` file; a *checkpoint* copies
those pages back into the database file (random writes, and an ``fsync`` of each file). By
default the connection whose commit takes the WAL past 1,000 pages does it, inside that commit.
In ``arena serve`` that connection is the server's, on its trio loop: every match, spectator and
page then waits for the disk. On a season's store the pages of a result are scattered over
large B-trees, so each checkpoint writes more of them, and while another process holds a long
read (the ladder's fitter reading its units) no checkpoint can complete: the WAL grows (115 MB in
25 s of a 500-bot contest, measured) and the first commit after the read copies all of it back
(a 160-550 ms stall of the whole server measured on the 10-million-match store).

:class:`Checkpointer` turns the server connection's automatic checkpoints off while it runs
(``PRAGMA wal_autocheckpoint=0``) and runs ``PRAGMA wal_checkpoint(PASSIVE)`` every
:data:`INTERVAL_S` on a connection of its own, in a worker thread: SQLite releases Python's
interpreter lock while it copies, and a passive checkpoint never waits for, nor blocks, the
server's readers and writer. The server's commits then only append to the WAL. Other processes
on the same database (workers, the fitter, the CLI) keep SQLite's default.

PostgreSQL stores and ``:memory:`` have no WAL file: :func:`for_store` gives None for them.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import trio

log = logging.getLogger("arena.store.checkpoint")

INTERVAL_S = 0.5
"""Seconds between two checkpoints (the WAL gains a few hundred pages meanwhile at full speed)."""
AUTO_PAGES = 1000
"""SQLite's own default: a commit that takes the WAL past this many pages checkpoints it."""


class Checkpointer:
    """Checkpoints of the SQLite database at ``path`` off the server's loop (module docstring):
    while :meth:`run` runs, the connection ``server`` makes none of its own (SQLite's default,
    every :data:`AUTO_PAGES` pages, is back once it ends). ``runs`` counts the checkpoints made,
    ``frames`` the WAL pages they copied back."""

    def __init__(self, path: str, server: sqlite3.Connection, interval_s: float = INTERVAL_S) -> None:
        self.path = path
        self.server = server
        self.interval_s = interval_s
        self.runs = 0
        self.frames = 0
        self.last: tuple[int, int, int] | None = None
        """What the last checkpoint reported (see :meth:`checkpoint`), None before the first."""
        self._db: sqlite3.Connection | None = None
        self._failing = False

    def checkpoint(self) -> tuple[int, int, int]:
        """One passive checkpoint, blocking (run it in a thread): ``(busy, WAL pages, pages
        checkpointed)`` as SQLite reports them (``busy`` 1: a reader or a checkpoint in another
        process held it back; the rest is copied next time). Raises ``sqlite3.Error``."""
        if self._db is None:  # used by one thread at a time (run awaits each call)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        busy, pages, done = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.runs += 1
        self.frames += max(0, done)
        self.last = (busy, pages, done)
        return self.last

    async def run(self) -> None:
        """Checkpoint every ``interval_s`` in a worker thread until cancelled; then close the
        connection. A failing checkpoint (a full or read-only disk) is logged once and tried
        again at the next interval: the server's own writes report the storage fault."""
        self.server.execute("PRAGMA wal_autocheckpoint=0")
        try:
            while True:
                await trio.sleep(self.interval_s)
                try:
                    await trio.to_thread.run_sync(self.checkpoint)
                    self._failing = False
                except sqlite3.Error as exc:
                    if not self._failing:
                        log.warning("WAL checkpoint of %s failed (%s); trying again", self.path, exc)
                    self._failing = True
        finally:
            self.server.execute(f"PRAGMA wal_autocheckpoint={AUTO_PAGES}")
            self.close()

    def close(self) -> None:
        """Close the checkpoint connection (the server's own close checkpoints what is left)."""
        if self._db is not None:
            self._db.close()
            self._db = None


def for_store(store: Any) -> Checkpointer | None:
    """A :class:`Checkpointer` for ``store`` (an :class:`arena.store.sqlite.Store`, whose
    connection's checkpoints it takes over while it runs), or None for PostgreSQL and
    ``:memory:`` (nothing to do)."""
    if store.dialect != "sqlite" or store.path == ":memory:":
        return None
    return Checkpointer(store.path, store.db)
