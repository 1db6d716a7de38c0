"""``arena bench``: engine and referee throughput, next to a raw loopback baseline.

Three phases, all in one run on one machine, each bounded in time:

1. **Engine** (:func:`engine_deals_per_second`): Écarté random self-play on one core, no I/O.
   Figure: deals per second (target :data:`ENGINE_TARGET_DEALS_PER_S`) and decisions per deal.
   Then Piquet, with full legal lists and with compact discard requests (docs/protocol.md
   §8.13; target ratio :data:`PIQUET_COMPACT_TARGET_RATIO`), and the bytes the server writes
   per Piquet match in each form with its largest line (:func:`piquet_wire`).
2. **Referee** (:func:`referee_rate`): a real :class:`~arena.net.server.ArenaServer` on a loopback
   port, two registered minimal bots (each answers every ``request`` with ``legal[0]``) and
   :class:`~arena.match.referee.Referee` matches played back to back. Figure: decisions per second,
   plus the average size in bytes of the ``request`` lines and ``action`` lines on the wire.
3. **Baseline** (:func:`pingpong_rate`): a raw trio TCP ping-pong with the same line sizes,
   the same newline framing and the same process layout as phase 2. Figure: round trips per
   second, and the ratio referee decisions/s ÷ ping-pong round trips/s (target at least
   :data:`REFEREE_TARGET_RATIO`).

4. **Floods** (:func:`flood_rate`, ``--flood-s`` seconds per window, 0 to skip): a real
   :class:`~arena.net.server.ArenaServer` with its default caps and a spectator feed refereeing
   matches back to back, as in phase 2. Three windows of the same run: quiet; while 200
   clients send wrong-token ``hello`` lines in parallel, again and again, each from its own
   loopback address with fresh names (the worst case for per-address and per-name limits);
   and while 1,000 idle spectators from 16 loopback addresses try to connect and stay. Figures:
   decisions per second in each window, the server process's resident memory (quiet, and the
   peak during the hello flood), the answers the flooders got, scrypt checks run, and how
   many idle spectators were welcomed and refused at the caps.

Process layout: the server side (arena server, referee, ping-pong server) runs in this
process; the two minimal bots (one subprocess, two connections) and the ping-pong client
(one subprocess) run as ``python -m arena.tools.bench --role bots|client ...``, so on a 2-core
machine the server has a core of its own. Times are measured with :func:`time.perf_counter`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from time import perf_counter
from typing import Any

import msgspec
import trio

from arena.match.core import MatchConfig
from arena.match.runner import MatchRunner, MatchSpec
from arena.net.server import ArenaServer, ServerConfig
from arena.store.sqlite import Store
from arena.tools import bench_server
from arena.tools.bench_engine import (
    WIRE_MATCHES,
    EngineFigures,
    WireFigures,
    engine_deals_per_second,
    piquet_forms,
    piquet_wire,
)
from arena.tools.bench_flood import FloodFigures, flood_rate, hello_flood_role, spectator_flood_role
from arena.tools.bench_proc import (
    DEFAULT_MAX_SECONDS,
    HOST,
    STARTUP_TIMEOUT_S,
    Child,
    Lines,
    encode_json,
    role_command,
)
from arena.tools.bench_workers import print_workers, workers_phase

ENGINE_TARGET_DEALS_PER_S = 20_000
"""The engine's target throughput in deals per second (random self-play, one core)."""

REFEREE_TARGET_RATIO = 0.5
"""The referee's target: decisions/s at least this fraction of ping-pong round trips/s."""

PIQUET_COMPACT_TARGET_RATIO = 5.0
"""Issue 12's target: Piquet deals/s with compact discard requests at least this many times
the deals/s with full legal lists, measured in the same run."""

LARGEST_LINE_TARGET = 2048
"""Issue 12's target: no server line of a Piquet match in the compact form is longer than
this (bytes, newline included)."""


@dataclass
class WireStats:
    """What the minimal bots saw on their connections (both bots summed).

    ``received[type] = [lines, bytes]`` per server message type (bytes include the newline);
    ``answers``/``answer_bytes``: ``action`` lines sent and their bytes (newline included).
    """

    received: dict[str, list[int]] = field(default_factory=dict)
    answers: int = 0
    answer_bytes: int = 0

    def saw(self, kind: str, nbytes: int) -> None:
        """Count one received line of type ``kind`` and ``nbytes`` bytes."""
        entry = self.received.get(kind)
        if entry is None:
            self.received[kind] = [1, nbytes]
        else:
            entry[0] += 1
            entry[1] += nbytes

    def lines(self, kind: str) -> int:
        """Lines of type ``kind`` received."""
        return self.received.get(kind, [0, 0])[0]

    def nbytes(self, kind: str) -> int:
        """Bytes of lines of type ``kind`` received (newlines included)."""
        return self.received.get(kind, [0, 0])[1]

@dataclass(frozen=True)
class RefereeFigures:
    """Result of :func:`referee_rate`: decisions, matches and deals refereed in ``seconds``
    (wall time of the match loop), and what the bots saw on the wire (:class:`WireStats`)."""

    decisions: int
    matches: int
    deals: int
    seconds: float
    wire: WireStats

    @property
    def decisions_per_s(self) -> float:
        """Decisions per second (each one a request/answer round trip plus its events)."""
        return self.decisions / self.seconds

    @property
    def avg_request_bytes(self) -> float:
        """Average ``request`` line size in bytes, newline included."""
        return self.wire.nbytes("request") / self.wire.lines("request")

    @property
    def avg_answer_bytes(self) -> float:
        """Average ``action`` (answer) line size in bytes, newline included."""
        return self.wire.answer_bytes / self.wire.answers

    @property
    def lines_per_decision(self) -> float:
        """Server-to-bot lines of any type per decision (requests, events, match start/end)."""
        return sum(n for n, _ in self.wire.received.values()) / self.decisions

    @property
    def bytes_per_decision(self) -> float:
        """Server-to-bot bytes of any type per decision."""
        return sum(b for _, b in self.wire.received.values()) / self.decisions


@dataclass(frozen=True)
class PingPongFigures:
    """Result of :func:`pingpong_rate`: ``rounds`` round trips in ``seconds`` (client clock);
    ``request_bytes``/``answer_bytes``: the line sizes used (newline included);
    ``client_received``/``server_received``: total bytes each side read (for checking)."""

    rounds: int
    seconds: float
    request_bytes: int
    answer_bytes: int
    client_received: int
    server_received: int

    @property
    def round_trips_per_s(self) -> float:
        """Round trips per second."""
        return self.rounds / self.seconds


# --------------------------------------------------------------------------- phase 2: referee


class _Incoming(msgspec.Struct):
    """The fields of a server line a minimal bot looks at (the rest is skipped by msgspec)."""

    type: str
    id: int = 0
    legal: list[Any] = []


_decode_incoming = msgspec.json.Decoder(_Incoming).decode


async def _minimal_bot(port: int, name: str, token: str, stats: WireStats) -> None:
    """Connect as bot ``name``, answer every request with ``legal[0]`` until the server
    closes the connection; count every received line in ``stats``."""
    stream = await trio.open_tcp_stream(HOST, port)
    await stream.send_all(encode_json({"type": "hello", "name": name, "token": token}) + b"\n")
    lines = Lines(stream)
    while (line := await lines.next()) is not None:
        msg = _decode_incoming(line)
        stats.saw(msg.type, len(line) + 1)
        if msg.type == "request":
            answer = encode_json({"type": "action", "id": msg.id, "action": msg.legal[0]}) + b"\n"
            try:
                await stream.send_all(answer)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                break
            stats.answers += 1
            stats.answer_bytes += len(answer)
    await stream.aclose()


async def _bots_role(port: int, credentials: list[tuple[str, str]], timeout_s: float) -> dict[str, Any]:
    """Subprocess side of phase 2: run the minimal bots until the server closes them (or
    ``timeout_s`` seconds pass); return the summed :class:`WireStats` as a dict."""
    stats = WireStats()
    with trio.move_on_after(timeout_s):
        async with trio.open_nursery() as nursery:
            for name, token in credentials:
                nursery.start_soon(_minimal_bot, port, name, token, stats)
    return {"received": stats.received, "answers": stats.answers, "answer_bytes": stats.answer_bytes}


async def referee_rate(
    n_decisions: int, seed: int = 1, max_seconds: float = DEFAULT_MAX_SECONDS
) -> RefereeFigures:
    """Referee matches over loopback TCP until at least ``n_decisions`` decisions were made.

    Starts an :class:`~arena.net.server.ArenaServer` (in-memory store, free port), registers two
    bots, runs the minimal bots in a subprocess, waits until both are connected, then plays
    matches (seed ``seed + i``, seats alternating) back to back with default
    :class:`~arena.match.referee.MatchConfig`. Only the match loop is timed. Stops after
    ``max_seconds`` seconds at a match boundary in any case. A match that does not end by
    reaching the target (a forfeit) is an error.
    """
    store = Store(":memory:")
    names = ("bench-a", "bench-b")
    tokens = [store.add_bot(name) for name in names]
    server = ArenaServer(store, ServerConfig(port=0))
    config = MatchConfig()
    decisions = matches = deals = 0
    try:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            bots = Child(
                role_command(
                    "--role", "bots", "--port", str(port), "--timeout", str(max_seconds + STARTUP_TIMEOUT_S),
                    *(arg for name, token in zip(names, tokens, strict=True) for arg in ("--bot", f"{name}:{token}")),
                )
            )
            nursery.start_soon(bots.run)
            with trio.move_on_after(STARTUP_TIMEOUT_S):
                for name in names:
                    await server.wait_for(name, STARTUP_TIMEOUT_S)
            if not all(name in server.bots for name in names):
                raise RuntimeError(f"the bench bots did not connect: {bots.failure()}")

            t0 = perf_counter()
            while decisions < n_decisions and perf_counter() - t0 < max_seconds:
                a, b = names if matches % 2 == 0 else names[::-1]
                result = await MatchRunner(MatchSpec(f"bench-{matches}", seed + matches, config, (a, b)),
                                           (server.bots[a], server.bots[b])).run()
                if result.reason != "target":
                    raise RuntimeError(f"bench match {matches} ended by {result.reason}: {result.detail}")
                decisions += result.decisions
                deals += result.deals
                matches += 1
            seconds = perf_counter() - t0

            for conn in list(server.bots.values()):
                await conn.aclose("bench over")
            report = await bots.report(STARTUP_TIMEOUT_S)
            nursery.cancel_scope.cancel()
    finally:
        store.close()
    wire = WireStats(report["received"], report["answers"], report["answer_bytes"])
    return RefereeFigures(decisions, matches, deals, seconds, wire)


# --------------------------------------------------------------------------- phase 3: baseline


async def _client_role(port: int, rounds: int, size: int, timeout_s: float) -> dict[str, Any]:
    """Subprocess side of phase 3: ``rounds`` times, send a line of ``size`` bytes (newline
    included) and wait for the reply line. Times the loop; stops after ``timeout_s`` seconds."""
    stream = await trio.open_tcp_stream(HOST, port)
    lines = Lines(stream)
    line = b"a" * (size - 1) + b"\n"
    done = received = 0
    t0 = perf_counter()
    with trio.move_on_after(timeout_s):
        for _ in range(rounds):
            await stream.send_all(line)
            reply = await lines.next()
            if reply is None:
                break
            received += len(reply) + 1
            done += 1
    seconds = perf_counter() - t0
    await stream.aclose()
    return {"rounds": done, "seconds": seconds, "received": received}


async def pingpong_rate(
    n_rounds: int, request_size: int, answer_size: int, max_seconds: float = DEFAULT_MAX_SECONDS
) -> PingPongFigures:
    """Raw trio loopback ping-pong: ``n_rounds`` round trips, timed by the client.

    The server (this process, ``trio.serve_tcp``) answers every line it receives with a line of
    ``request_size`` bytes; the client (a subprocess, like the bots of :func:`referee_rate`)
    sends lines of ``answer_size`` bytes. Sizes include the newline and are at least 1.
    """
    request_size = max(1, int(request_size))
    answer_size = max(1, int(answer_size))
    reply = b"r" * (request_size - 1) + b"\n"
    server_received = 0

    async def handler(stream: trio.SocketStream) -> None:
        nonlocal server_received
        lines = Lines(stream)
        try:
            while (line := await lines.next()) is not None:
                server_received += len(line) + 1
                await stream.send_all(reply)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host=HOST))
        port = listeners[0].socket.getsockname()[1]
        client = Child(
            role_command(
                "--role", "client", "--port", str(port), "--rounds", str(n_rounds),
                "--size", str(answer_size), "--timeout", str(max_seconds),
            )
        )
        nursery.start_soon(client.run)
        report = await client.report(max_seconds + STARTUP_TIMEOUT_S)
        nursery.cancel_scope.cancel()
    return PingPongFigures(
        report["rounds"], report["seconds"], request_size, answer_size, report["received"], server_received
    )


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class BenchReport:
    """The three phases' figures from one run, and the ratios printed by :func:`main`."""

    engine: EngineFigures
    referee: RefereeFigures
    pingpong: PingPongFigures
    seconds: float
    piquet: EngineFigures | None = None
    """Piquet random self-play with full legal lists (today's protocol 1 default)."""
    piquet_compact: EngineFigures | None = None
    """Piquet random self-play with compact discard requests (target: at least
    :data:`PIQUET_COMPACT_TARGET_RATIO` times :attr:`piquet`)."""
    wire: tuple[WireFigures, WireFigures] | None = None
    """Piquet server bytes per match and largest line, full form then compact form."""
    flood: FloodFigures | None = None
    """Phase 4 (issue 9), when run."""

    @property
    def piquet_ratio(self) -> float:
        """Compact-form Piquet deals/s ÷ full-form Piquet deals/s (0 when not measured)."""
        if self.piquet is None or self.piquet_compact is None:
            return 0.0
        return self.piquet_compact.deals_per_s / self.piquet.deals_per_s

    @property
    def engine_ratio(self) -> float:
        """Engine deals/s ÷ :data:`ENGINE_TARGET_DEALS_PER_S` (1.0 = on target)."""
        return self.engine.deals_per_s / ENGINE_TARGET_DEALS_PER_S

    @property
    def referee_ratio(self) -> float:
        """Referee decisions/s ÷ ping-pong round trips/s (target :data:`REFEREE_TARGET_RATIO`)."""
        return self.referee.decisions_per_s / self.pingpong.round_trips_per_s


def run_bench(
    n_deals: int, n_decisions: int, seed: int = 1, progress: Any = None, flood_s: float = 0.0
) -> BenchReport:
    """Run the three phases in order: the engine on ``n_deals`` deals, the referee on
    ``n_decisions`` decisions, then ``n_decisions`` ping-pong round trips with the line sizes
    the referee's bots measured; then, if ``flood_s`` > 0, the floods of phase 4 with windows
    of ``flood_s`` seconds. ``progress(text)``, if given, is told of each phase."""
    if n_deals < 1 or n_decisions < 1:
        raise ValueError("--deals and --decisions must be at least 1")
    say = progress or (lambda text: None)
    t0 = perf_counter()
    say(f"1/3 engine: random self-play, {n_deals:,} deals")
    engine = engine_deals_per_second(n_deals, seed)
    say(f"2/3 referee over loopback TCP, {n_decisions:,} decisions")
    referee = trio.run(referee_rate, n_decisions, seed)
    req, ans = round(referee.avg_request_bytes), round(referee.avg_answer_bytes)
    say(f"3/3 ping-pong baseline, {n_decisions:,} round trips of {req} B / {ans} B")
    pingpong = trio.run(pingpong_rate, n_decisions, req, ans)
    n_piquet = max(1, n_deals // 20)
    say(f"Piquet: engine with full lists, then compact requests, {n_piquet:,} deals each; bytes per match")
    piquet, piquet_compact = piquet_forms(n_piquet, seed)
    wire = (piquet_wire(WIRE_MATCHES, seed), piquet_wire(WIRE_MATCHES, seed, compact=True))
    flood = None
    if flood_s > 0:
        say(f"4/4 floods: 200 wrong-token hellos, then 1,000 idle spectators, {flood_s:g} s windows")
        flood = trio.run(flood_rate, flood_s)
    return BenchReport(engine, referee, pingpong, perf_counter() - t0, piquet, piquet_compact, wire, flood)


def _machine() -> str:
    """One line describing this machine and the software measured."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    return (
        f"{platform.machine()}, {usable} usable cores, load average "
        + ("/".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a")
        + f"; Python {platform.python_version()}, trio {trio.__version__}, msgspec {msgspec.__version__}"
    )


def print_report(console: Any, report: BenchReport) -> None:
    """Print ``report`` on a rich ``console``: a table of figure, value, unit,
    baseline/target and ratio, then the counts behind each figure."""
    from rich import box
    from rich.table import Table

    e, r, p = report.engine, report.referee, report.pingpong

    def ratio(value: float, target: float) -> str:
        colour = "green" if value >= target else "red"
        return f"[{colour}]{value:.2f}[/{colour}]"

    table = Table(title="arena bench", box=box.SIMPLE_HEAVY)
    for col, just in (("figure", "left"), ("value", "right"), ("unit", "left"),
                      ("baseline / target", "left"), ("ratio", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    table.add_row("engine: random self-play, 1 core", f"{e.deals_per_s:,.0f}", "deals/s",
                  f"target {ENGINE_TARGET_DEALS_PER_S:,} deals/s", ratio(report.engine_ratio, 1.0))
    table.add_row("engine: decisions per deal", f"{e.decisions_per_deal:.2f}", "decisions/deal", "", "")
    if report.piquet is not None:
        q = report.piquet
        table.add_row("Piquet engine, full legal lists, 1 core", f"{q.deals_per_s:,.0f}", "deals/s",
                      f"{q.decisions_per_deal:.1f} decisions/deal", "")
    if report.piquet is not None and report.piquet_compact is not None:
        q = report.piquet_compact
        table.add_row("Piquet engine, compact requests, 1 core", f"{q.deals_per_s:,.0f}", "deals/s",
                      f"target ≥ {PIQUET_COMPACT_TARGET_RATIO:.0f}x the full lists",
                      ratio(report.piquet_ratio, PIQUET_COMPACT_TARGET_RATIO))
    if report.wire is not None:
        for w in report.wire:
            table.add_row(f"Piquet server bytes per match, {w.form}", f"{w.bytes_per_match:,.0f}", "bytes",
                          f"{w.matches} matches, both seats", "")
        for w in report.wire:
            target = f"target < {LARGEST_LINE_TARGET:,} B" if w.form == "compact" else ""
            table.add_row(f"  largest Piquet line, {w.form}", f"{w.largest:,}", "bytes",
                          f"{w.largest_kind} {target}".strip(),
                          ratio(LARGEST_LINE_TARGET / w.largest, 1.0) if target else "")
    table.add_row("referee over loopback TCP", f"{r.decisions_per_s:,.0f}", "decisions/s",
                  f"ping-pong {p.round_trips_per_s:,.0f}/s; target ≥ {REFEREE_TARGET_RATIO}",
                  ratio(report.referee_ratio, REFEREE_TARGET_RATIO))
    table.add_row("  request line, average", f"{r.avg_request_bytes:,.0f}", "bytes", "", "")
    table.add_row("  answer line, average", f"{r.avg_answer_bytes:,.0f}", "bytes", "", "")
    table.add_row("  server→bot lines", f"{r.lines_per_decision:.2f}", "lines/decision",
                  f"{r.bytes_per_decision:,.0f} bytes/decision", "")
    table.add_row("ping-pong, raw trio, same sizes", f"{p.round_trips_per_s:,.0f}", "round trips/s", "", "")
    f = report.flood
    if f is not None:
        q, h, v = f.cpu_share
        table.add_row("server, quiet (phase 4 baseline)", f"{f.quiet_decisions_per_s:,.0f}", "decisions/s",
                      f"RSS {f.quiet_rss_mib:,.0f} MiB, CPU {q:.2f}", "")
        table.add_row(f"  during {f.hello_clients} parallel wrong-token hellos", f"{f.hello_decisions_per_s:,.0f}",
                      "decisions/s", f"peak RSS {f.hello_peak_rss_mib:,.0f} MiB, CPU {h:.2f}",
                      f"{f.hello_decisions_per_s / f.quiet_decisions_per_s:.2f}")
        table.add_row(f"  during {f.spectators_tried:,} idle spectators", f"{f.spectator_decisions_per_s:,.0f}",
                      "decisions/s", f"{f.spectators_refused:,} refused at the caps, CPU {v:.2f}",
                      f"{f.spectator_decisions_per_s / f.quiet_decisions_per_s:.2f}")
    console.print(table)
    console.print(
        f"engine: {e.deals:,} deals, {e.decisions:,} decisions, {e.matches:,} matches in {e.seconds:.2f} s\n"
        f"referee: {r.decisions:,} decisions ({r.wire.answers:,} answers sent by the bots), "
        f"{r.matches:,} matches, {r.deals:,} deals in {r.seconds:.2f} s\n"
        f"ping-pong: {p.rounds:,} round trips of {p.request_bytes} B / {p.answer_bytes} B in {p.seconds:.2f} s\n"
        "layout: server side in this process; bots and ping-pong client in one subprocess each\n"
        f"whole run: {report.seconds:.1f} s"
    )
    if f is not None:
        answers = ", ".join(f"{code} {n:,}" for code, n in sorted(f.hello_answers.items()))
        seen = ", ".join(f"{code} {n:,}" for code, n in sorted(f.spectator_answers.items()))
        console.print(f"floods ({f.window_s:g} s windows, flooders in subprocesses): hello answers: {answers}; "
                      f"scrypt checks run: {f.scrypt_checks:,}; idle spectators: {seen}")


def main(args: argparse.Namespace) -> int:
    """``arena bench``: run :func:`run_bench` with ``args.deals`` and ``args.decisions`` and
    print the report. Returns the exit code: 0, or 2 for a count below 1."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=110)  # a file or a pipe: do not wrap at 80 columns
    if args.deals < 1 or args.decisions < 1:
        console.print("[red]error:[/red] --deals and --decisions must be at least 1")
        return 2
    console.print(f"[bold]arena bench[/bold] on {_machine()}")
    say = lambda text: console.print(f"[dim]{text}...[/dim]")  # noqa: E731
    server_s = getattr(args, "server_s", 0.0)
    if getattr(args, "scale", False):
        return _server_bench(console, say, max(server_s, SCALE_SECONDS), concurrent=0, scale=SCALE_MATCHES)
    if getattr(args, "workers_games", 0) > 0:  # the workers phase (arena.tools.bench_workers)
        phase = workers_phase(args.workers_games, args.db, progress=say)
        print_workers(console, phase, args.db)
        if args.only_workers:
            return 0
    report = run_bench(args.deals, args.decisions, progress=say, flood_s=getattr(args, "flood_s", 0.0))
    print_report(console, report)
    if server_s > 0:
        return _server_bench(console, say, server_s, concurrent=100, scale=())
    return 0


SCALE_MATCHES = (1000, 2000)
"""``arena bench --scale`` (``make bench-scale``): the concurrent matches of the fair-clock study."""

SCALE_SECONDS = 20.0
"""The shortest window of each ``--scale`` phase, in seconds (after the bots have connected):
starting 2,000 matches at once takes the server seconds by itself."""


def _server_bench(console: Any, say: Any, seconds: float, concurrent: int, scale: tuple[int, ...]) -> int:
    """Run and print :mod:`arena.tools.bench_server`; 1 with one line if the instant C bot
    cannot be built."""
    try:
        bench_server.build_instant_bot()
    except RuntimeError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 1
    figures = bench_server.run_server_bench(seconds, concurrent, scale, progress=say)
    bench_server.print_server_bench(console, figures)
    return 0


# --------------------------------------------------------------------------- subprocess roles


def _role_main(argv: Sequence[str]) -> int:
    """Entry of ``python -m arena.tools.bench --role bots|client``; prints one JSON report line."""
    parser = argparse.ArgumentParser(prog="python -m arena.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["bots", "client", "hellos", "spectators"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=DEFAULT_MAX_SECONDS, help="seconds")
    parser.add_argument("--bot", action="append", default=[], metavar="NAME:TOKEN", help="bots role")
    parser.add_argument("--rounds", type=int, default=1000, help="client role: round trips")
    parser.add_argument("--size", type=int, default=64, help="client role: line size in bytes")
    parser.add_argument("--clients", type=int, default=200, help="hellos role: parallel flooders")
    parser.add_argument("--count", type=int, default=1000, help="spectators role: idle spectators")
    args = parser.parse_args(argv)
    if args.role == "bots":
        credentials = [tuple(spec.split(":", 1)) for spec in args.bot]
        report = trio.run(_bots_role, args.port, credentials, args.timeout)
    elif args.role == "hellos":
        report = trio.run(hello_flood_role, args.port, args.clients, args.timeout)
    elif args.role == "spectators":
        report = trio.run(spectator_flood_role, args.port, args.count, args.timeout)
    else:
        report = trio.run(_client_role, args.port, args.rounds, args.size, args.timeout)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_role_main(sys.argv[1:]))
