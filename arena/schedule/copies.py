"""Duplicate twins are played by different copies of each launched bot.

A duplicate pair (ecarte.md §E8.2) deals the same pack twice with the seats swapped, so each bot
holds in the second half the cards its opponent held in the first. A bot that remembers the hand
it was dealt in the first half would know its opponent's hand in the second. Hiding that memory
is not enough (a process remembers in memory), so a launched bot runs as ``copies`` separate
processes (two when pairs are played), each in its own sandbox with a private ``/tmp`` and a
read-only directory (:mod:`arena.schedule.launcher`): nothing one copy writes is seen by the other or
survives it. :class:`Halves` hands the first half of every pair that starts to copy 0 of both
bots and the other half to copy 1: a copy never plays both halves of one pair, so it never
meets a pack it has seen. Packs are dealt from the pair's own seed, so an unpaired match or
another pair deals other packs.

Identity: each copy connects with its own token, held in the server's memory only
(:meth:`arena.net.server.ArenaServer.copy_token`); copy 0 is seated in ``server.bots`` under the
bot's name, copy *k* >= 1 in ``server.copies[(name, k)]``. Results, ratings and the names shown
are the bot's name: a copy is invisible outside the server.

What it cannot cover: a remote bot (one TCP connection, a process we do not run) plays both
halves itself, and unsandboxed copies (``--trust-bots``) can share a file. A contest therefore
plays a remote bot's matches unpaired with independent seeds unless its organiser sets
``duplicate_remote = true`` (see docs/contests.md, "Security model").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import trio

from arena.errors import Unavailable
from arena.schedule.botlog import tail
from arena.schedule.formats import Pairing
from arena.schedule.launcher import BotProcess, Limits, Manifest, launch
from arena.store.postgres import is_url

PAIR_COPIES = 2
"""Copies of each launched bot when duplicate pairs are played (one per half)."""


class Halves:
    """Which copy of each bot plays a match. ``copies(name)`` is the number of copies bot
    ``name`` runs as (1 for a remote bot). The first match of a pair key to start is played by
    copy 0 of both bots, the second by copy 1 (copy ``half % copies`` in general); a match
    without a pair key by copy 0."""

    def __init__(self, copies: Callable[[str], int]) -> None:
        self.copies = copies
        self._started: dict[str, int] = {}

    def assign(self, pairing: Pairing) -> tuple[int, int]:
        """The copies ``(copy of bot0, copy of bot1)`` that play ``pairing``."""
        if pairing.pair is None:
            return (0, 0)
        half = self._started.get(pairing.pair, 0)
        self._started[pairing.pair] = half + 1
        if half >= 1:
            self._started.pop(pairing.pair)  # a pair has two halves: forget it once both started
        return (half % self.copies(pairing.bot0), half % self.copies(pairing.bot1))


def bot_log(logs: Path, bot_id: int, copy: int) -> Path:
    """Where copy ``copy`` of the bot with database id ``bot_id`` writes its output: derived
    from ids only, never from a name."""
    return logs / "bots" / f"b{bot_id}-c{copy}.log"


async def launch_copy(
    nursery: trio.Nursery,
    server,  # arena.net.server.ArenaServer (not imported: no cycle)
    manifest: Manifest,
    copy: int,
    env: dict[str, str],
    log_path: Path,
    limits: Limits,
    sandbox: bool,
    hide: Sequence[str | Path] = (),
    others: Sequence[str | Path] = (),
) -> BotProcess:
    """Launch copy ``copy`` of the bot of ``manifest`` with a fresh copy token (``env`` gives
    ``ARENA_HOST``, ``ARENA_PORT``, ``ARENA_BOT_SEED``; ``ARENA_NAME`` and ``ARENA_TOKEN`` are
    set here). A sandboxed copy's stdin and stdout are a socket ``server`` serves directly
    (:meth:`arena.net.server.ArenaServer.attach_socket`). Raises what
    :func:`arena.schedule.launcher.launch` raises."""
    full = {**env, "ARENA_NAME": manifest.name, "ARENA_TOKEN": server.copy_token(manifest.name, copy)}
    return await launch(nursery, manifest, full, log_path, limits, sandbox, hide, others,
                        attach=server.attach_socket)


def secrets_of(store_path: str, logs_dir: str | Path) -> list[str]:
    """The paths no launched bot may read: our logs directory (created here, so that it can be
    hidden) and our database file (a PostgreSQL database is no file: the sandbox has no network
    and no view of its socket)."""
    Path(logs_dir).mkdir(parents=True, exist_ok=True)
    out = [str(Path(logs_dir).resolve())]
    if store_path != ":memory:" and not is_url(store_path):
        out.append(str(Path(store_path).resolve()))
    return out


def _fix(manifest: Manifest, shown: Path | None) -> str:
    hint = ""
    program = manifest.command[0]
    if os.path.isabs(program) and not Path(program).is_relative_to(manifest.directory):
        hint = " (a sandboxed bot sees only its own folder: name the program by a path relative to it)"
    return (f"{hint}; fix `command` in its manifest (`arena doctor {shown or 'MANIFEST'}` shows what it does)")


def launch_failure(manifest: Manifest, manifest_path: str | Path | None, exc: OSError) -> Unavailable:
    """The one-line error (exit 3) for a bot whose program cannot be executed at all (``exc``
    from the launch), in the words of :func:`start_failure`."""
    shown = Path(manifest_path) if manifest_path else None
    where = str(shown.parent) if shown else manifest.directory
    return Unavailable(f"bot {manifest.name} ({shown or 'no manifest'}) did not start: {' '.join(manifest.command)!r}, "
                       f"run in {where}, cannot be executed ({exc.strerror or exc}){_fix(manifest, shown)}")


def start_failure(proc: BotProcess, manifest_path: str | Path | None, timeout_s: float, folder: str | None = None,
                  start: int = 0) -> Unavailable:
    """The one-line error (exit 3) for a bot that did not start: its manifest, the command as
    written there, the folder it ran in as its author knows it (``folder``, by default the
    manifest's), whether it exited (and how) or never connected within ``timeout_s``, and the
    last lines of its output (written from byte ``start`` of its log), with the fix."""
    m = proc.manifest
    code = proc.process.returncode
    what = (f"exited with status {code}" if code is not None and code >= 0 else
            f"was killed by signal {-code}" if code is not None else f"did not connect within {timeout_s:g} s")
    shown = Path(manifest_path) if manifest_path else None
    where = folder or (str(shown.parent) if shown else m.directory)
    last: list[str] = []
    for line in tail(proc.log_path, start=start):  # the author's folder, not where an archive was unpacked
        line = line.replace(m.directory, where)
        if not last or last[-1] != line:
            last.append(line)
    said = f"; its last output: {' | '.join(last)}" if last else "; it wrote nothing"
    return Unavailable(f"bot {m.name} ({shown or 'no manifest'}) did not start: {' '.join(m.command)!r}, run in "
                       f"{where}, {what} before its hello{said}{_fix(m, shown)}")
