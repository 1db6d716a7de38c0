"""``arena doctor``: the conformance check a bot author runs before submitting a bot.

``arena doctor path/to/bot.toml`` launches the bot from its manifest against a private arena and
prints a pass/fail table, one row per check, quoting the exact line that went wrong.

The package, by concept: :mod:`~arena.tools.doctor.session` (one run: the arena, the bot, the
scripted matches and probes), :mod:`~arena.tools.doctor.transport` (the recording proxy),
:mod:`~arena.tools.doctor.wire` (what crossed the connection, classified), :mod:`~arena.tools.doctor.checks`
(the situations of each game and the global checks), :mod:`~arena.tools.doctor.ecarte` and
:mod:`~arena.tools.doctor.piquet` (the scripted deals), :mod:`~arena.tools.doctor.opponent`,
:mod:`~arena.tools.doctor.verdicts` (from the wire to one row per check), :mod:`~arena.tools.doctor.report`
(the rows and their printing) and :mod:`~arena.tools.doctor.limits`.

How it works:

* **A private arena.** An :class:`~arena.net.server.ArenaServer` on a free loopback port with an
  in-memory :class:`~arena.store.sqlite.Store`; the bot is registered with a fresh token and started
  with :func:`arena.schedule.launcher.launch` (its output captured in a temporary directory, whose tail is
  shown when something fails).
* **A recording proxy.** The bot is told to connect to a small TCP proxy (TLS with ``--tls``: a
  throwaway self-signed certificate for 127.0.0.1, its CA in ``ARENA_TLS_CA``) that relays bytes to
  the server unchanged in the bot-to-server direction and records every line in both
  directions with a timestamp. The proxy is also how the doctor probes the bot's robustness: it
  adds unknown fields to the server's messages of one match, sends messages of an unknown type,
  and a 1 MiB burst of them between two matches (a bot must keep reading).
* **Scripted situations.** Each situation is a real match refereed by
  :class:`~arena.match.referee.Referee` over TCP between the bot and a scripted opponent (an in-process
  trio client registered as a second bot). The first deal of each match comes from a stacked
  pack handed to the engine (``packs``, :func:`arena.games.base.take_pack`: nothing global is
  replaced); later deals come from the engine's seeded shuffle. The first match is played to the target; once one
  match has been, the opponent resigns each later match at the start of its second deal (with
  an action that is not legal), so the bot also meets ``match_end`` with a forfeit. The hands
  and the opponent's moves are chosen so that the bot meets every decision kind and every play
  obligation whatever it plays (``tests/test_doctor.py`` checks this on every path). Some
  situations (its own discards, a short stock) can only be reached if the bot chooses to
  exchange; the opponent then steers the stock size, trying again a few times, and a situation
  the bot's legal choices avoided is reported as ``SKIP``, not as a failure.
* **Piquet** (``--game piquet``): matches dealt by the engine's seeded shuffle, every Piquet
  decision (the discard in the form the bot asked for at ``hello``, both packs, ``look``,
  ``expose``, the play); a chouette ``bid`` outside any match in both games; a request padded
  to 256 KiB (more than the arena ever sends) so a bot with a fixed read buffer fails here; with
  ``--sandbox`` the bot runs under bubblewrap and speaks over stdin/stdout.
* **Verdicts.** Every request the bot received is matched with its answer and with the
  server's ``error`` about it, if any. The server is the authority (an illegal action is what
  the referee rejected), the doctor adds what it expected.
"""

from __future__ import annotations

from pathlib import Path

import trio
from rich.console import Console

from arena.errors import Unavailable, UserError
from arena.schedule.launcher import Limits, sandbox_problem
from arena.tools.doctor.checks import (
    GLOBAL_CHECKS,
    PIQUET_SITUATIONS,
    PLAYED_OUT,
    SITUATIONS,
    classify,
    classify_piquet,
)
from arena.tools.doctor.ecarte import (
    DEALER_X,
    ELDER_X,
    FOLLOW,
    KING_ELDER,
    TRUMP,
    DealPlan,
    deal_pack,
    draw_pack,
    opponent_discard_count,
)
from arena.tools.doctor.limits import CONNECT_TIMEOUT_S, EXIT_WAIT_S, LINGER_S, LONG_LINE_BYTES
from arena.tools.doctor.opponent import Opponent
from arena.tools.doctor.piquet import PQ_32, PQ_36, PiquetPlan
from arena.tools.doctor.report import FAIL, PASS, SKIP, Check, Report, print_report
from arena.tools.doctor.session import Doctor
from arena.tools.doctor.transport import Proxy
from arena.tools.doctor.wire import Req, Wire, WireLine

# --------------------------------------------------------------------------- entry points


async def run_doctor(
    manifest_path: str | Path,
    *,
    move_ms: int = 2000,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    keep_logs: bool | None = None,
    sandbox: bool = False,
    game: str = "ecarte",
    tls: bool = False,
    limits: Limits | None = None,
) -> Report:
    """Run every check on the bot of ``manifest_path`` and return the :class:`Report`. With
    ``sandbox`` the bot runs under bubblewrap and speaks over stdin/stdout; with ``tls`` it
    connects over TLS (``ARENA_TLS=1``) to a throwaway certificate whose CA it is given in
    ``ARENA_TLS_CA``. ``limits``: the bot's resource limits (the defaults of a tournament when
    None); ``Report.limits`` says how its memory was limited (a cgroup or ``RLIMIT_DATA``) and,
    with a cgroup, its peak use. ``ValueError`` for ``tls`` with ``sandbox``;
    :class:`arena.errors.Unavailable` if ``tls`` and no ``openssl`` command makes the certificate."""
    doctor = Doctor(manifest_path, move_ms=move_ms, connect_timeout_s=connect_timeout_s, keep_logs=keep_logs,
                    sandbox=sandbox, game=game, tls=tls, limits=limits)
    return await doctor.run()


def main(manifest_path: str, *, move_ms: int = 2000, verbose: bool = False, sandbox: bool = False,
         game: str = "ecarte", tls: bool = False) -> int:
    """``arena doctor MANIFEST``: run the checks, print the report; 0 if no check failed (a
    situation the scripted deals did not bring about is shown as not exercised and does not
    fail), 1 otherwise. ``sandbox`` (the command's default) runs the bot as the gate does.
    :class:`arena.errors.UserError` for ``tls`` with ``sandbox``; :class:`arena.errors.Unavailable`
    for ``sandbox`` where bubblewrap cannot run."""
    if tls and sandbox:
        raise UserError("--tls checks a bot that connects over TCP with TLS: it cannot go with --sandbox "
                        "(stdin/stdout)")
    if sandbox and (problem := sandbox_problem()) is not None:
        raise Unavailable(f"{problem.split(':')[0]}: the doctor runs bots sandboxed, as the upload gate and the "
                          "ladder do; install bubblewrap, or check the TCP transport alone with --tcp")
    report = trio.run(lambda: run_doctor(manifest_path, move_ms=move_ms, sandbox=sandbox, game=game, tls=tls))
    print_report(Console(), report, verbose=verbose)
    return 0 if report.ok else 1


__all__ = [
    "CONNECT_TIMEOUT_S", "DEALER_X", "ELDER_X", "EXIT_WAIT_S", "FAIL", "FOLLOW", "GLOBAL_CHECKS", "KING_ELDER",
    "LINGER_S", "LONG_LINE_BYTES", "PASS", "PIQUET_SITUATIONS", "PLAYED_OUT", "PQ_32", "PQ_36", "SITUATIONS", "SKIP",
    "TRUMP", "Check", "DealPlan", "Doctor", "Opponent", "PiquetPlan", "Proxy", "Report", "Req", "Wire", "WireLine",
    "classify", "classify_piquet", "deal_pack", "draw_pack", "main", "opponent_discard_count", "print_report",
    "run_doctor",
]
