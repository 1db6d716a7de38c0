"""The floor under the server's cost per decision (``make bench``, :mod:`arena.tools.bench_server`
phase 1): the instant C bot built, the **match core alone** (:func:`core_alone`: the matches
straight through :class:`~arena.match.core.MatchCore` and their logs, no I/O) and two raw
ping-pong baselines with the same line sizes (:func:`trio_pingpong`, :func:`blocking_pingpong`):
a trio echo server and a plain blocking-socket loop answering an instant C client."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from time import perf_counter

import trio

from arena.match.core import MatchConfig, MatchCore, result_line
from arena.match.log import MatchLog
from protocol.framing import decode_client

SOURCE = Path(__file__).resolve().parents[2] / "sample_bots" / "bench" / "instant.c"
"""The instant bot's source."""

BINARY = SOURCE.with_suffix("")
"""Where :func:`build_instant_bot` puts the instant bot."""

HOST = "127.0.0.1"


def build_instant_bot(cc: str = "gcc") -> Path:
    """Compile :data:`SOURCE` into :data:`BINARY` unless it is up to date (what
    ``make sample_bots/bench/instant`` does). Returns the binary's path. Raises
    ``RuntimeError`` with one line if the compiler is missing or fails."""
    if BINARY.exists() and BINARY.stat().st_mtime >= SOURCE.stat().st_mtime:
        return BINARY
    if shutil.which(cc) is None:
        raise RuntimeError(f"{cc} not found: the benchmark's instant bot is C ({SOURCE}); install gcc")
    done = subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Wextra", "-o", str(BINARY), str(SOURCE)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{cc} could not build {SOURCE}: {done.stderr.strip()[-500:]}")
    return BINARY


@dataclass(frozen=True)
class PingPongFigures:
    """A ping-pong baseline: ``rounds`` round trips in ``seconds`` (client clock), the server
    using ``cpu_s`` seconds of CPU; lines of ``request_bytes`` (server) and ``answer_bytes``
    (client), newlines included."""

    kind: str
    rounds: int
    seconds: float
    cpu_s: float
    request_bytes: int
    answer_bytes: int

    @property
    def round_trips_per_s(self) -> float:
        """Round trips per second."""
        return self.rounds / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_round_trip(self) -> float:
        """Server CPU per round trip in µs."""
        return self.cpu_s * 1e6 / self.rounds if self.rounds else 0.0


@dataclass(frozen=True)
class CoreFigures:
    """The match core without I/O: ``decisions`` in ``matches`` Écarté matches, ``core_s``
    seconds spent in the core's own calls (:class:`~arena.match.core.MatchCore`: the rules, the
    fault policy, the requests and events encoded) and ``log_s`` more in writing their match
    logs (the hash chain and gzip, :class:`~arena.match.log.MatchLog`)."""

    decisions: int
    matches: int
    core_s: float
    log_s: float

    @property
    def core_us(self) -> float:
        """The core's time per decision in µs, without the log."""
        return self.core_s * 1e6 / self.decisions if self.decisions else 0.0

    @property
    def log_us(self) -> float:
        """The log's time per decision in µs."""
        return self.log_s * 1e6 / self.decisions if self.decisions else 0.0


def core_alone(seconds: float = 5.0, seed: int = 1, max_decisions: int = 10**9) -> CoreFigures:
    """What a decision costs before any I/O: Écarté matches played straight through the match
    core, the same seeds and configuration as :func:`one_match`, for ``seconds`` seconds (or
    ``max_decisions`` decisions), finishing the match in play. The "bot" answers the first
    legal action, as the instant bot does; building its answer line is not counted, decoding
    it is (the server does that). Only the core's and the log's calls are timed, in CPU time
    (:func:`time.thread_time` around each, less the clock's own cost per interval measured by
    :func:`clock_cost`: on a busy machine wall time would count the other programs' turns), so
    the figures are a floor under phase 1's CPU per decision, comparable with the ping-pong
    baselines' CPU per round trip: phase 1 adds the sockets, the event loop and the driver
    (:mod:`arena.match.referee`, :mod:`arena.match.seat`)."""
    import msgspec

    config = MatchConfig()
    encode_answer = msgspec.json.Encoder().encode
    decisions = matches = intervals = 0
    core_s = log_s = 0.0
    clock = time.thread_time
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as logs:
        t_end = perf_counter() + seconds
        while perf_counter() < t_end and decisions < max_decisions:
            path = Path(logs) / f"m{matches}.jsonl.gz"
            t0 = clock()
            core = MatchCore(f"bench-{matches}", seed + matches, config, ("instant-a", "instant-b"))
            outs = [core.start(), core.begin()]
            t1 = clock()
            log = MatchLog(path)
            for out in outs:
                log.write_all(out.log)
            t2 = clock()
            core_s += t1 - t0
            log_s += t2 - t1
            out = outs[-1]
            t_ns = 0
            while core.result is None:
                if out.asked is None:
                    raise RuntimeError(f"bench match {matches}: the core asked nobody")
                seat, rid = out.asked
                line = encode_answer({"type": "action", "id": rid, "action": core.engine.legal_actions()[0]})
                t0 = clock()
                core.sent(seat, t_ns)
                out = core.answer(seat, rid, decode_client(line).action, t_ns + 10_000)
                t1 = clock()
                log.write_all(out.log)
                t2 = clock()
                core_s += t1 - t0
                log_s += t2 - t1
                t_ns += 1_000_000
            result = core.result
            if result.reason != "target":
                raise RuntimeError(f"bench match {matches} ended by {result.reason}: {result.detail}")
            t0 = clock()
            core.match_end()
            t1 = clock()
            log.write(result_line(result))
            log.close()
            t2 = clock()
            core_s += t1 - t0
            log_s += t2 - t1
            path.unlink(missing_ok=True)
            decisions += result.decisions
            matches += 1
            intervals += result.decisions + 2  # per timed part: the start, each decision, the end
    cost = clock_cost()
    return CoreFigures(decisions, matches, max(0.0, core_s - intervals * cost), max(0.0, log_s - intervals * cost))


def clock_cost(calls: int = 20_000) -> float:
    """CPU seconds one call of :func:`time.thread_time` costs (the mean over ``calls`` calls):
    what an interval timed with it holds of the clock itself (about 0.5 µs here)."""
    clock = time.thread_time
    c0 = clock()
    for _ in range(calls):
        clock()
    return (clock() - c0) / (calls + 1)





# --------------------------------------------------------------------------- baselines


def _line(size: int, fill: bytes) -> bytes:
    return fill * (max(1, size) - 1) + b"\n"


def _client(binary: Path, port: int, size: int, rounds: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, ARENA_HOST=HOST, ARENA_PORT=str(port), ARENA_PINGPONG=f"{max(1, size)},{rounds}")
    return subprocess.Popen([str(binary)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _client_figures(kind: str, proc: subprocess.Popen[bytes], cpu_s: float, request_size: int,
                    answer_size: int) -> PingPongFigures:
    out, err = proc.communicate(timeout=120)
    try:
        rounds_s, seconds_s = out.decode().split()
        return PingPongFigures(kind, int(rounds_s), float(seconds_s), cpu_s, max(1, request_size), max(1, answer_size))
    except ValueError:
        raise RuntimeError(f"the {kind} ping-pong client failed: {err.decode(errors='replace')[-300:]}") from None


async def trio_pingpong(request_size: int, answer_size: int, rounds: int) -> PingPongFigures:
    """A raw trio echo server in this process (``trio.serve_tcp``, one task per connection,
    ``send_all`` of a ``request_size``-byte line for every line read) and an instant C client
    sending ``answer_size``-byte lines, ``rounds`` times."""
    binary = build_instant_bot()
    reply = _line(request_size, b"r")

    async def handler(stream: trio.SocketStream) -> None:
        buf = bytearray()
        try:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buf += data
                while (nl := buf.find(b"\n")) >= 0:
                    del buf[: nl + 1]
                    await stream.send_all(reply)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host=HOST))
        port = listeners[0].socket.getsockname()[1]
        c0 = time.process_time()
        proc = _client(binary, port, answer_size, rounds)
        while proc.poll() is None:
            await trio.sleep(0.05)
        cpu = time.process_time() - c0
        nursery.cancel_scope.cancel()
    return _client_figures("trio", proc, cpu, request_size, answer_size)


def blocking_pingpong(request_size: int, answer_size: int, rounds: int) -> PingPongFigures:
    """A blocking-socket echo loop in this process (``recv`` then ``sendall``, no event loop)
    and an instant C client sending ``answer_size``-byte lines, ``rounds`` times."""
    binary = build_instant_bot()
    reply = _line(request_size, b"r")
    with socket.create_server((HOST, 0)) as listener:
        port = listener.getsockname()[1]
        c0 = time.process_time()
        proc = _client(binary, port, answer_size, rounds)
        listener.settimeout(30.0)
        conn, _ = listener.accept()
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                buf += data
                while (nl := buf.find(b"\n")) >= 0:
                    del buf[: nl + 1]
                    conn.sendall(reply)
        cpu = time.process_time() - c0
    return _client_figures("blocking", proc, cpu, request_size, answer_size)
