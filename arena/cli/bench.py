"""``arena bench``: engine and referee throughput next to a raw loopback baseline
(:mod:`arena.tools.bench`)."""

from __future__ import annotations

import argparse

from arena.bounds import float_in, option_int
from arena.cli.common import Commands, add_command, at_least
from arena.tools.bench import main as bench_main


def add_commands(sub: Commands) -> None:
    """Add ``bench`` to the ``arena`` command tree."""
    b = add_command(sub, "bench")
    b.add_argument("--deals", type=option_int("deals"), default=20000, help="self-play deals for the engine figure")
    b.add_argument("--decisions", type=option_int("decisions"), default=20000, help="decisions for the TCP figures")
    b.add_argument("--flood-s", type=float_in(0.0, 3600.0), default=5.0,
                   help="seconds per window of the flood figures (wrong-token hellos, idle spectators); 0 skips them")
    b.add_argument("--server-s", type=float_in(0.0, 600.0), default=10.0,
                   help="seconds per phase of the instant C bots' figures (one match, 100 at once); 0 skips them")
    b.add_argument("--scale", action="store_true",
                   help="only the fair-clock study: 1,000 then 2,000 concurrent matches of instant C bots")
    b.add_argument("--workers-games", type=at_least(0), default=20, metavar="N",
                   help="workers phase: matches per pair of the 8-bot tournament played on 1, then 2 workers, then "
                        "in one process (default 20: 560 matches, of which each worker's start-up - its bots "
                        "launched - is a small part; 0 skips it)")
    b.add_argument("--db", help="workers phase: the database (e.g. postgresql://...; default a temporary SQLite file)")
    b.add_argument("--only-workers", action="store_true", help="run only the workers phase")
    b.set_defaults(run=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    """``arena bench``: :func:`arena.tools.bench.main` with the parsed options."""
    return bench_main(args)
