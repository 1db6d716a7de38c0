"""A running contest's retention (``[retention]``, docs/contests.md "Running a season"): a minute
after the start, then once a day, ``arena archive`` with the contest's database, logs and
retention (:func:`arena.store.log_archive.apply_retention`), in a **child process** at the
fitter's lower priority (:data:`arena.schedule.fitter.NICE`), tied to the server's life.

Not a thread of the server: the first run on a season's store walks weeks of matches (7.7 million
on the bench's 10-million-match store), and in a thread its Python work held the interpreter's
lock against the server's own: the leaderboard's p99 went from 1.4 ms to 213 ms while it ran
(``make bench-season`` on SQLite). In a process of its own it competes for the cores only, at a
lower priority, and the server's loop never waits for it.

The database's password, if any, goes in the child's environment, never on its command line
(:meth:`arena.store.sqlite.Store.child_db`). Cancelled (the server stops), the child is stopped
(SIGTERM, then SIGKILL): a run is safe to interrupt at any point, and the next one goes on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from arena.schedule.fitter import niced_child
from arena.schedule.fleet import wait_child
from arena.store.log_archive import DAY_S, RETENTION_KEYS, Retention

log = logging.getLogger("arena.schedule.retention")

EVERY_S = float(DAY_S)
"""How often a running contest applies its retention (seconds)."""
FIRST_S = 60.0
"""How long after its start a contest applies its retention the first time (seconds): not while
the bots are connecting."""


class RetentionFailed(Exception):
    """A retention run that exited with an error; the message is what it said (one line)."""


def archive_command(db: str, logs: str | Path, retention: Retention) -> list[str]:
    """The command line of one run: ``arena archive`` with ``db`` (a path, or a URL without its
    password), ``logs`` and every key of ``retention`` (days)."""
    cmd = [sys.executable, "-m", "arena.cli", "archive", "--db", db, "--logs", str(logs)]
    for key in RETENTION_KEYS:
        cmd += [f"--{key.replace('_', '-')}", repr(float(getattr(retention, key)))]
    return cmd


async def run_retention(store: Any, logs: str | Path, retention: Retention) -> str:
    """Apply ``retention`` once to ``store``'s database (its :meth:`child_db`) and ``logs``, in a
    niced child process; return the line saying what it did. Raises :class:`RetentionFailed`
    with the child's last line if it failed (a full disk, a busy archive folder), ``OSError`` if
    it could not start."""
    db, env = store.child_db()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # forked here, in the main thread: PR_SET_PDEATHSIG follows the forking thread
        proc = subprocess.Popen(archive_command(db, logs, retention), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, env={**os.environ, **env}, preexec_fn=niced_child)
        status = await wait_child(proc)
        out.seek(0)
        err.seek(0)
        said = out.read().decode(errors="replace").strip()
        complaint = err.read().decode(errors="replace").strip()
    if status != 0:
        last = complaint.splitlines()[-1] if complaint else f"exit status {status}"
        raise RetentionFailed(last.removeprefix("arena: error: "))
    return said


async def keep_retention(store: Any, logs: str | Path, retention: Retention, first_s: float = FIRST_S,
                         every_s: float = EVERY_S) -> None:
    """Apply ``retention`` ``first_s`` seconds from now, then every ``every_s``, until cancelled,
    each time with :func:`run_retention`. A failed run is logged (one line) and tried again at the
    next."""
    await trio.sleep(first_s)
    while True:
        try:
            log.info("retention: %s", await run_retention(store, logs, retention))
        except (RetentionFailed, OSError) as exc:
            log.warning("retention failed (tried again in %.0f s): %s", every_s, exc)
        await trio.sleep(every_s)
