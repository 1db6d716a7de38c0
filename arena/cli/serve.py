"""``arena serve``: the long-lived contest server."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import trio

from arena.authors.pages import MOUNTS as AUTHOR_MOUNTS
from arena.bounds import option_int
from arena.cli.common import Commands, add_command, make_console
from arena.errors import Unavailable
from arena.gc_policy import tune_for_server
from arena.names import plain
from arena.net.tls import exposure_warning
from arena.schedule.contest import Contest, ContestConfig, load_config
from arena.schedule.launcher import sandbox_problem
from arena.store.postgres import is_url
from arena.store.postgres import shown as shown_db


def add_commands(sub: Commands) -> None:
    """Add ``serve`` to the ``arena`` command tree."""
    sv = add_command(sub, "serve")
    sv.add_argument("--config", required=True, help="contest TOML file (see docs/contest.example.toml)")
    sv.add_argument("--workers", type=option_int("workers"), metavar="N",
                    help="worker processes that play the matches between submitted bots (default: the contest "
                         "file's workers, 0: all in this process)")
    sv.set_defaults(run=cmd_serve)


def _serve_paths(config: ContestConfig) -> list[str]:
    """What ``arena serve`` creates on its first start with ``config``: the SQLite database
    (and its WAL files), the logs and uploads folders."""
    paths = [config.logs, config.uploads.dir]
    if not is_url(config.db):
        paths += [config.db, f"{config.db}-wal", f"{config.db}-shm"]
    return paths


def cmd_serve(args: argparse.Namespace) -> int:
    """``arena serve``: run until SIGTERM / Ctrl-C, then shut down cleanly."""
    console = make_console()
    config = load_config(args.config)
    if args.workers is not None:
        config.workers = args.workers
    if not config.trust_bots and (problem := sandbox_problem()) is not None:
        line = problem.replace("pass --trust-bots", "set trust_bots = true")
        console.print(plain(f"submitted bots will not be launched: {line}", "red"), soft_wrap=True)
    made = [p for p in _serve_paths(config) if not os.path.lexists(p)]  # removed again if the start fails
    contest = Contest(config, web_mounts=AUTHOR_MOUNTS)  # the author pages on the contest's site
    tls = config.server.tls_cert is not None  # the web page's HTTPS comes from the same files
    if (warning := exposure_warning(config.server.host, tls, config.http_host, tls)) is not None:
        console.print(plain(warning, "yellow"), soft_wrap=True)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            ports = await nursery.start(contest.run)
            tune_for_server()  # start-up is over: a server's garbage collection (arena/gc_policy.py)
            tcp, http = ("tls", "https") if tls else ("tcp", "http")
            console.print(plain(f"{config.name}: bots and spectators on {tcp}://{config.server.host}:{ports[0]}, "
                          f"web and /metrics on {http}://{config.http_host}:{ports[1]}/  (Ctrl-C or SIGTERM to stop)"))

    try:
        trio.run(main)
    except BaseException:
        if contest.http_port is None:  # it never served: leave no new database or folder behind
            contest.store.close()
            for path in made:
                shutil.rmtree(path) if os.path.isdir(path) else Path(path).unlink(missing_ok=True)
        raise
    done = contest.store.finished_matches(contest.tournament_id)
    if fault := contest.unsaved or contest.health.reason:  # a full or read-only disk: nothing recorded is lost
        what, _, why = fault.partition(": ")
        raise Unavailable(f"stopped while the {what} could not be written ({why}): {done} matches recorded in "
                          f"{shown_db(config.db)}, none lost; the matches left in play are aborted at the next "
                          "start; free the disk (or make it writable) before starting again")
    console.print(plain(f"stopped cleanly: {done} matches recorded in {shown_db(config.db)}"))
    return 0
