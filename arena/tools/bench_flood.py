"""``arena bench`` phase 4, the floods (:func:`flood_rate`): decisions/s of a real server quiet,
during a flood of wrong-token hellos and during a flood of idle spectators, with the server's
memory; and the flooders' ``--role`` sides. See :mod:`arena.tools.bench`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import msgspec
import trio

from arena.match.core import MatchConfig
from arena.match.runner import MatchRunner, MatchSpec
from arena.metrics import METRICS
from arena.net.server import ArenaServer, ServerConfig, raise_fd_limit
from arena.net.spectate import SpectatorHub
from arena.store.sqlite import Store
from arena.tools.bench_proc import HOST, STARTUP_TIMEOUT_S, Child, Lines, encode_json, role_command


@dataclass(frozen=True)
class FloodFigures:
    """Result of :func:`flood_rate`. Rates in decisions per second, memory in MiB (resident
    set of the server's process), counts of connections."""

    quiet_decisions_per_s: float
    hello_decisions_per_s: float
    spectator_decisions_per_s: float
    quiet_rss_mib: float
    hello_peak_rss_mib: float
    cpu_share: tuple[float, float, float]
    """CPU seconds the server's process used per wall second in each window (quiet, hellos,
    spectators; worker threads included): on a shared machine it tells the server's own cost
    from the competition for cores."""
    hello_clients: int
    hello_answers: dict[str, int]
    scrypt_checks: int
    spectators_tried: int
    spectator_answers: dict[str, int]
    window_s: float

    @property
    def spectators_refused(self) -> int:
        """Idle spectators refused at the caps (``server_full``, ``too_many_connections``)."""
        return sum(n for code, n in self.spectator_answers.items() if code != "welcome")


def _rss_mib() -> float:
    """This process's resident set size in MiB (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


async def hello_flood_role(port: int, clients: int, timeout_s: float) -> dict[str, Any]:
    """Subprocess side of the hello flood: ``clients`` tasks, each from its own loopback
    address, send wrong-token ``hello`` lines with fresh names, one connection after another,
    for ``timeout_s`` seconds. Returns the count of each answer code."""
    answers: dict[str, int] = {}

    async def one(i: int) -> None:
        source = f"127.0.{1 + i // 250}.{1 + i % 250}"
        n = 0
        while True:
            n += 1
            try:
                stream = await trio.open_tcp_stream(HOST, port, local_address=source)
            except OSError:
                answers["connect_failed"] = answers.get("connect_failed", 0) + 1
                await trio.sleep(0.01)
                continue
            try:
                hello = {"type": "hello", "name": f"intruder-{i}-{n}", "token": "wrong", "protocol": 1}
                await stream.send_all(encode_json(hello) + b"\n")
                line = await Lines(stream).next()
                code = "closed" if line is None else str(msgspec.json.decode(line).get("code", "welcome"))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                code = "reset"
            answers[code] = answers.get(code, 0) + 1
            await stream.aclose()

    with trio.move_on_after(timeout_s):
        async with trio.open_nursery() as nursery:
            for i in range(clients):
                nursery.start_soon(one, i)
    return answers


async def spectator_flood_role(port: int, count: int, hold_s: float) -> dict[str, Any]:
    """Subprocess side of the spectator flood: ``count`` spectators from 16 loopback addresses
    say ``hello`` and then nothing, holding their connections for ``hold_s`` seconds. Returns
    the count of each first answer (``welcome`` or an error code)."""
    raise_fd_limit()
    answers: dict[str, int] = {}
    held: list[trio.SocketStream] = []

    async def one(i: int) -> None:
        try:
            stream = await trio.open_tcp_stream(HOST, port, local_address=f"127.0.0.{2 + i % 16}")
            await stream.send_all(encode_json({"type": "hello", "name": f"idle{i}", "token": "", "protocol": 1,
                                           "role": "spectator"}) + b"\n")
            line = await Lines(stream).next()
            code = "closed" if line is None else str(msgspec.json.decode(line).get("code", "welcome"))
            held.append(stream)
        except OSError:
            code = "connect_failed"
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            code = "reset"
        answers[code] = answers.get(code, 0) + 1

    with trio.move_on_after(hold_s):
        async with trio.open_nursery() as nursery:
            for i in range(count):
                nursery.start_soon(one, i)
        await trio.sleep_forever()
    for stream in held:
        await stream.aclose()
    return answers


async def _connect_bots(server: Any, port: int, tokens: dict[str, str], timeout_s: float,
                        nursery: trio.Nursery) -> Child:
    """Start the minimal bots' ``--role bots`` subprocess (its bots named and authenticated by
    ``tokens``, gone after ``timeout_s`` seconds) in ``nursery`` and wait until each has connected
    to ``server``; RuntimeError if they do not within :data:`STARTUP_TIMEOUT_S`."""
    bots = Child(role_command(
        "--role", "bots", "--port", str(port), "--timeout", str(timeout_s),
        *(arg for name, token in tokens.items() for arg in ("--bot", f"{name}:{token}")),
    ))  # fmt: skip
    nursery.start_soon(bots.run)
    with trio.move_on_after(STARTUP_TIMEOUT_S):
        for name in tokens:
            await server.wait_for(name, STARTUP_TIMEOUT_S)
    if not all(name in server.bots for name in tokens):
        raise RuntimeError(f"the bench bots did not connect: {bots.failure()}")
    return bots


async def flood_rate(window_s: float = 5.0, clients: int = 200, spectators: int = 1000,
                     seed: int = 1) -> FloodFigures:
    """Phase 4 (see the module docstring): decisions/s quiet, during the hello flood and during
    the spectator flood, each over ``window_s`` seconds of one run, with the server's memory."""
    store = Store(":memory:")
    names = ("bench-a", "bench-b")
    tokens = [store.add_bot(name) for name in names]
    server = ArenaServer(store, ServerConfig(port=0), hub=SpectatorHub())
    rss_peak = 0.0
    try:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            bots = await _connect_bots(server, port, dict(zip(names, tokens, strict=True)),
                                       3 * window_s + 3 * STARTUP_TIMEOUT_S, nursery)

            async def referee_loop() -> None:
                config, matches = MatchConfig(), 0
                while True:
                    a, b = names if matches % 2 == 0 else names[::-1]
                    result = await MatchRunner(MatchSpec(f"flood-{matches}", seed + matches, config, (a, b)),
                                               (server.bots[a], server.bots[b])).run()
                    if result.reason != "target":
                        raise RuntimeError(f"bench match {matches} ended by {result.reason}: {result.detail}; "
                                           f"bots: {bots.failure()}")
                    matches += 1

            def decided() -> float:  # counted by the referee as decisions happen
                return METRICS.registry.get_sample_value("arena_decisions_total", {"game": "ecarte"}) or 0.0

            cpu: list[float] = []

            async def window() -> float:
                nonlocal rss_peak
                d0, t0, c0 = decided(), perf_counter(), time.process_time()
                end = t0 + window_s
                while perf_counter() < end:
                    await trio.sleep(0.1)
                    rss_peak = max(rss_peak, _rss_mib())
                cpu.append((time.process_time() - c0) / (perf_counter() - t0))
                return (decided() - d0) / (perf_counter() - t0)

            nursery.start_soon(referee_loop)
            await trio.sleep(0.5)  # warm up
            quiet = await window()
            quiet_rss = _rss_mib()
            rss_peak = 0.0
            hello = Child(role_command("--role", "hellos", "--port", str(port), "--clients", str(clients),
                                         "--timeout", str(window_s + 1.0)))
            nursery.start_soon(hello.run)
            await trio.sleep(0.5)  # the flood ramps up
            during_hellos = await window()
            hello_peak = rss_peak
            hello_report = await hello.report(STARTUP_TIMEOUT_S)
            spect = Child(role_command("--role", "spectators", "--port", str(port), "--count", str(spectators),
                                         "--timeout", str(window_s + 4.0)))
            nursery.start_soon(spect.run)
            await trio.sleep(2.0)  # the spectators connect
            during_spectators = await window()
            spect_report = await spect.report(STARTUP_TIMEOUT_S)
            nursery.cancel_scope.cancel()
    finally:
        store.close()
    return FloodFigures(quiet, during_hellos, during_spectators, quiet_rss, hello_peak, (cpu[0], cpu[1], cpu[2]),
                        clients, hello_report,
                        server.auth.scrypt_checks, spectators, spect_report, window_s)
