"""Shared fixtures: a live arena server on a free loopback port and a scriptable TCP client."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.net.server import ArenaServer, ServerConfig  # noqa: E402
from arena.schedule.launcher import sandbox_available  # noqa: E402
from arena.store.sqlite import Store  # noqa: E402

TRUST_BOTS = not sandbox_available()
"""Tests that are not about isolation run their launched bots sandboxed where bwrap exists (CI
installs it) and trusted where it does not (the default would refuse to launch them)."""
TRUST_ARGS = ["--trust-bots"] if TRUST_BOTS else []
needs_bwrap = pytest.mark.skipif(TRUST_BOTS and os.environ.get("ARENA_REQUIRE_SANDBOX") != "1",
                                 reason="bwrap (Debian bubblewrap) cannot sandbox here")
"""For the sandbox tests: skipped without a working bwrap, unless ``ARENA_REQUIRE_SANDBOX=1``
(set by .ci/run once bwrap is installed), where they run and fail."""


EXAMPLES_SCALE = float(os.environ.get("ARENA_EXAMPLES", "0.2"))
"""Share of each property test's documented example count that runs: a fifth in `make test`
(under 4 minutes), all of it in `make test-slow` (``ARENA_EXAMPLES=1``), which CI runs too."""


def examples(n: int) -> int:
    """``n`` hypothesis examples scaled by :data:`EXAMPLES_SCALE` (at least 10)."""
    return max(10, round(n * EXAMPLES_SCALE))


def slow_bots(folder: Path, bots: dict[str, str], delay_ms: int = 40) -> dict[str, Path]:
    """Sample bots made slower by ``tests/bots/slow/slow.py`` (``delay_ms`` before each action),
    written in ``folder``: ``bots`` maps each bot's name to the sample bot it runs
    (``"random_bot"``, ``"greedy_bot"``, ...); returns ``name -> manifest`` (``<name>.toml``)."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests" / "bots" / "slow" / "slow.py", folder / "slow.py")
    manifests = {}
    for name, module in bots.items():
        shutil.copy(ROOT / "sample_bots" / f"{module}.py", folder / f"{module}.py")
        manifests[name] = folder / f"{name}.toml"
        manifests[name].write_text(f'name = "{name}"\nlanguage = "python"\n'
                                   f'command = ["{{python}}", "slow.py", "{module}", "{delay_ms}"]\n')
    return manifests


def remote_random_bot(port: int, name: str, token: str) -> subprocess.Popen:
    """sample_bots/random_bot.py started as a remote bot (`arena bots add`): it connects over TCP
    to 127.0.0.1:``port`` on its own. Terminate it when done."""
    env = {**os.environ, "ARENA_HOST": "127.0.0.1", "ARENA_PORT": str(port), "ARENA_NAME": name, "ARENA_TOKEN": token}
    return subprocess.Popen([sys.executable, str(ROOT / "sample_bots" / "random_bot.py")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Client:
    """A test bot speaking the protocol over a real TCP socket; records every line received."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = b""
        self.received: list[dict[str, Any]] = []

    @classmethod
    async def connect(cls, port: int) -> Client:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def send(self, obj: Any) -> None:
        await self.send_raw(msgspec.json.encode(obj) + b"\n")

    async def recv(self, timeout: float = 30.0) -> dict[str, Any] | None:
        """Next message, or None at EOF. ``timeout`` only bounds a hang (a loaded machine is slow)."""
        with trio.fail_after(timeout):
            while b"\n" not in self.buf:
                try:
                    data = await self.stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    return None
                self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        msg = msgspec.json.decode(line)
        self.received.append(msg)
        return msg

    async def recv_type(self, *types: str, timeout: float = 30.0) -> dict[str, Any] | None:
        """Skip messages until one of ``types`` (or EOF -> None)."""
        while True:
            msg = await self.recv(timeout)
            if msg is None or msg["type"] in types:
                return msg

    async def hello(self, name: str, token: str) -> dict[str, Any] | None:
        await self.send({"type": "hello", "name": name, "token": token, "protocol": 1})
        return await self.recv()

    async def play(self, policy: Callable[[dict[str, Any]], Any] | None = None, timeout: float = 60.0) -> dict:
        """Answer requests with ``policy(request)`` (default: first legal) until match_end."""
        while True:
            msg = await self.recv(timeout)
            if msg is None or msg["type"] == "match_end":
                return msg
            if msg["type"] == "request":
                action = policy(msg) if policy else msg["legal"][0]
                if action is not None:
                    await self.send({"type": "action", "id": msg["id"], "action": action})

    async def aclose(self) -> None:
        await self.stream.aclose()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "arena.db")
    yield s
    s.close()


REQUIRE_POSTGRES = os.environ.get("ARENA_REQUIRE_POSTGRES") == "1"
"""The PostgreSQL tests skip when PostgreSQL (Debian's ``postgresql``) or psycopg is missing,
unless ``ARENA_REQUIRE_POSTGRES=1`` (set by .ci/run, which installs it): then they fail."""


@pytest.fixture(scope="session")
def pg_cluster():
    """A throwaway PostgreSQL cluster for the whole session (tests/pg_cluster.py), holding a
    template database with the arena schema; stopped and removed at the end."""
    from tests.pg_cluster import start_cluster

    try:
        import psycopg  # noqa: F401

        cluster = start_cluster()
    except (ImportError, RuntimeError) as exc:
        (pytest.fail if REQUIRE_POSTGRES else pytest.skip)(f"no PostgreSQL for this test: {exc}")
    try:
        cluster.sql("CREATE DATABASE arena_template")
        Store(cluster.url("arena_template")).close()
        yield cluster
    finally:
        cluster.destroy()


_pg_databases = iter(range(1, 1 << 30))


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a fresh PostgreSQL database with the arena schema (a copy of the template),
    dropped after the test."""
    name = f"t{next(_pg_databases)}"
    pg_cluster.sql(f"CREATE DATABASE {name} TEMPLATE arena_template")
    yield pg_cluster.url(name)
    pg_cluster.sql(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgres"])
def db_target(request, tmp_path: Path) -> str:
    """A fresh database on each backend in turn: an SQLite file path, then a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def any_store(db_target: str) -> Store:
    """A :class:`Store` on each backend in turn (see ``db_target``)."""
    s = Store(db_target)
    yield s
    s.close()


@pytest.fixture
async def server(store: Store, nursery: trio.Nursery) -> ArenaServer:
    srv = ArenaServer(store, ServerConfig(handshake_timeout_s=30.0))  # a bound, not a race: see test_server
    await nursery.start(srv.serve)
    return srv


async def connect_bot(server: ArenaServer, name: str) -> Client:
    """Register ``name``, connect it and complete the handshake."""
    token = server.store.add_bot(name)
    client = await Client.connect(server.port)
    welcome = await client.hello(name, token)
    assert welcome is not None and welcome["type"] == "welcome", welcome
    with trio.fail_after(30):  # bounds a hang only
        while name not in server.bots:
            await trio.sleep(0.005)
    return client


class _Peer:
    """What :meth:`ArenaServer._handle` asks of a TCP socket: the client's address."""

    def __init__(self, addr: str) -> None:
        self.addr = addr

    def getpeername(self) -> tuple[str, int]:
        return (self.addr, 40000)


def memory_client(server: ArenaServer, nursery: trio.Nursery, addr: str = "127.0.0.1",
                  pair: Callable[[], tuple[Any, Any]] = trio.testing.memory_stream_pair) -> Client:
    """A client of ``server`` over an in-memory stream instead of TCP, served by the server's
    own connection handler (caps per address included) as if it came from ``addr``. With
    ``autojump_clock`` a test of time-outs then runs in virtual time, without sockets: every
    wait is bounded by trio's clock alone, never by how fast this machine is.
    The server need not be listening (no :meth:`ArenaServer.serve`). ``pair``:
    ``trio.testing.lockstep_stream_pair`` for a client whose unread data blocks the server's
    writes at once (no buffer at all), as a full TCP window eventually does."""
    client_end, server_end = pair()
    server_end.socket = _Peer(addr)  # type: ignore[attr-defined]
    nursery.start_soon(server._handle, server_end)
    return Client(client_end)


async def memory_bot(server: ArenaServer, nursery: trio.Nursery, name: str) -> Client:
    """A bot welcomed by ``server`` over an in-memory stream (:func:`memory_client`). It holds a
    launched copy's token (:meth:`ArenaServer.copy_token`), so its hello needs no scrypt check
    in a worker thread (a thread's wait is real time, which an autojump clock would skip)."""
    client = memory_client(server, nursery)
    welcome = await client.hello(name, server.copy_token(name, 0))
    assert welcome is not None and welcome["type"] == "welcome", welcome
    assert await server.wait_for(name, 5) is not None
    return client


@contextlib.contextmanager
def wall_clock_limit(seconds: float) -> Iterator[trio.CancelScope]:
    """Cancel the block after ``seconds`` of *real* time (then the test fails on
    ``trio.Cancelled``/``TooSlowError``), for a test that runs real I/O on a frozen
    ``mock_clock``: trio's own time-outs never fire there, so only this bounds a hang. The bound
    is generous: it only ever ends a test that would otherwise never end."""
    token = trio.lowlevel.current_trio_token()
    scope = trio.CancelScope()

    def expire() -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(scope.cancel)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        with scope:
            yield scope
    finally:
        timer.cancel()
    if scope.cancelled_caught:
        raise trio.TooSlowError(f"still running after {seconds} s of real time")


def cli_in_process(*args: str, capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` through its entry point ``arena.cli.main`` in this process (a subprocess
    costs about a second of imports): its status and output shaped as a finished process."""
    from arena.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)
