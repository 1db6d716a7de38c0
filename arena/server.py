"""The TCP listener: handshake, authentication, and the registry of connected bots.

A client's first line must be ``hello`` (within ``handshake_timeout_s``, default 5 s). A bot
is authenticated by name and token against the store (a salted scrypt hash, checked in a
worker thread so the event loop never stalls). A name that is already connected is refused
with ``name_in_use``: the first connection keeps its seat. A ``spectator`` (any name, no
token) may ``list`` the matches in play and ``subscribe`` to their feed (see
:mod:`arena.spectate`). Each address may hold at most
``max_conns_per_addr`` connections. Once welcomed, a bot's :class:`~arena.seat.Connection`
waits in :attr:`ArenaServer.bots` until the scheduler seats it in a match.

Every failure is answered with an ``error`` whose code is listed in docs/protocol.md, and
only ever closes that one connection.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import msgspec
import trio

from arena import __version__
from arena.metrics import METRICS
from arena.seat import Connection
from arena.spectate import SpectatorHub, Subscriber
from arena.store import Store, hash_token
from arena.wagers import WagerError
from protocol import PROTOCOL_VERSION
from protocol.framing import DEFAULT_MAX_LINE, LineReader, ProtocolError, decode_client, encode
from protocol.messages import Error, Hello, ListMatches, Matches, PlaceBet, Subscribe, Unsubscribe, Welcome

log = logging.getLogger("arena.server")


class ServerConfig(msgspec.Struct, omit_defaults=True):
    """Listener settings. ``port`` 0 picks a free port; times in seconds, sizes in bytes."""

    host: str = "127.0.0.1"
    port: int = 0
    max_line: int = DEFAULT_MAX_LINE
    handshake_timeout_s: float = 5.0
    send_timeout_s: float = 10.0
    max_conns_per_addr: int = 64


class ArenaServer:
    """Accepts bots over TCP. ``bots`` maps a connected bot's name to its connection;
    :meth:`wait_for` blocks until a given bot is connected."""

    def __init__(self, store: Store, config: ServerConfig | None = None, hub: SpectatorHub | None = None) -> None:
        self.store = store
        self.config = config or ServerConfig()
        self.hub = hub
        self.desk: Any = None  # the contest's BettingDesk, if wagers are served
        self.bots: dict[str, Connection] = {}
        self.port: int | None = None
        self._per_addr: Counter[str] = Counter()
        self._changed = trio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``task_status.started(port)`` reports the bound port."""
        listeners = await trio.open_tcp_listeners(self.config.port, host=self.config.host)
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    async def wait_for(self, name: str, timeout_s: float) -> Connection | None:
        """The connection of bot ``name`` once it has connected, or None after ``timeout_s``."""
        with trio.move_on_after(timeout_s):
            while True:
                conn = self.bots.get(name)
                if conn is not None and not conn.closed.is_set():
                    return conn
                await self._changed.wait()
        return None

    async def _refuse(self, stream: trio.SocketStream, code: str, message: str) -> None:
        METRICS.protocol_errors.labels(code).inc()
        with trio.move_on_after(1):
            try:
                await stream.send_all(encode(Error(code=code, message=message, fatal=True)))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
        await stream.aclose()

    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            addr = stream.socket.getpeername()[0]
        except OSError:
            await stream.aclose()
            return
        if self._per_addr[addr] >= self.config.max_conns_per_addr:
            await self._refuse(stream, "too_many_connections", f"at most {self.config.max_conns_per_addr} per address")
            return
        self._per_addr[addr] += 1
        try:
            await self._session(stream, addr)
        except Exception:  # last line of defence: one connection never takes the server down
            log.exception("connection from %s failed", addr)
            await stream.aclose()
        finally:
            self._per_addr[addr] -= 1

    async def _session(self, stream: trio.SocketStream, addr: str) -> None:
        reader = LineReader(stream, self.config.max_line)
        line: bytes | None = None
        with trio.move_on_after(self.config.handshake_timeout_s) as scope:
            try:
                line = await reader.read_line()
            except ProtocolError as exc:
                await self._refuse(stream, exc.code, exc.message)
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await stream.aclose()
                return
        if scope.cancelled_caught:
            await self._refuse(stream, "handshake_timeout", f"no hello within {self.config.handshake_timeout_s} s")
            return
        if line is None:
            await stream.aclose()
            return
        try:
            hello = decode_client(line)
        except ProtocolError as exc:
            await self._refuse(stream, exc.code, exc.message)
            return
        if not isinstance(hello, Hello):
            await self._refuse(stream, "expected_hello", "the first line must be a hello message")
            return
        if hello.protocol != PROTOCOL_VERSION:
            await self._refuse(stream, "bad_version", f"this server speaks protocol {PROTOCOL_VERSION}")
            return
        if hello.role == "spectator":
            if self.hub is None:
                await self._refuse(stream, "unsupported_role", "this server has no spectator feed")
                return
            bettor = False
            if hello.token:
                secret = self.store.spectator_secret(hello.name)
                salt, expected = secret if secret else (b"0" * 16, b"")
                digest = await trio.to_thread.run_sync(hash_token, hello.token, salt)
                if secret is None or digest != expected:
                    await self._refuse(stream, "auth_failed", "unknown spectator or wrong token")
                    return
                bettor = True
            await self._spectator(stream, reader, hello.name, bettor)
            return
        if not await self._authenticate(hello.name, hello.token):
            await self._refuse(stream, "auth_failed", "unknown bot name or wrong token")
            return
        if hello.name in self.bots and not self.bots[hello.name].closed.is_set():
            await self._refuse(stream, "name_in_use", f"bot {hello.name!r} is already connected")
            return
        conn = Connection(stream, reader, hello.name, "bot", addr, self.config.send_timeout_s)
        conn.legal_form = hello.legal
        self.bots[hello.name] = conn
        METRICS.connections.labels("bot").inc()
        try:
            await conn.send(Welcome(name=hello.name, server=f"arena {__version__}"))
            self._notify()
            await conn.run_reader()
        except Exception:
            log.exception("bot %s failed", hello.name)
        finally:
            METRICS.connections.labels("bot").dec()
            await conn.aclose()
            if self.bots.get(hello.name) is conn:
                del self.bots[hello.name]
            self._notify()

    async def _spectator(self, stream: trio.SocketStream, reader: LineReader, name: str, bettor: bool) -> None:
        """A spectator: ``list``, ``subscribe`` and ``unsubscribe``, and ``bet`` when
        authenticated (``bettor``); the feed is written by a second task from the subscriber's
        queue. A spectator that does not read fast enough is disconnected (``too_slow``); the
        matches never wait for it."""
        assert self.hub is not None
        sub = Subscriber(name)
        self.hub.add(sub)
        if bettor and self.desk is not None:
            self.desk.subscribers[name] = sub
        METRICS.connections.labels("spectator").inc()
        lock = trio.Lock()

        async def send(msg: Any) -> None:
            async with lock:
                with trio.fail_after(self.config.send_timeout_s):
                    await stream.send_all(encode(msg))

        async def writer() -> None:
            async for data in sub.receive_channel:
                async with lock:
                    with trio.fail_after(self.config.send_timeout_s):
                        await stream.send_all(data)
            if sub.dropped:
                await send(Error(code="too_slow", message="the feed overflowed: read faster", fatal=True))
                await stream.aclose()  # fatal means it: the reader then ends the session

        try:
            await send(Welcome(name=name, server=f"arena {__version__}"))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer)
                errors = 0
                while True:
                    try:
                        line = await reader.read_line()
                    except ProtocolError as exc:
                        await send(Error(code=exc.code, message=exc.message, fatal=True))
                        break
                    if line is None:
                        break
                    if not line.strip():
                        continue
                    try:
                        msg = decode_client(line)
                    except ProtocolError as exc:
                        errors += 1
                        await send(Error(code=exc.code, message=exc.message, fatal=errors >= 100))
                        if errors >= 100:
                            break
                        continue
                    if isinstance(msg, ListMatches):
                        await send(Matches(matches=self.hub.listing()))
                    elif isinstance(msg, Subscribe):
                        if not self.hub.subscribe(sub, msg.match_id):
                            await send(Error(code="unknown_match", message=f"no match {msg.match_id!r} in play"))
                    elif isinstance(msg, Unsubscribe):
                        self.hub.unsubscribe(sub, msg.match_id)
                    elif isinstance(msg, PlaceBet):
                        await send(self._bet(name, bettor, msg))
                    else:
                        text = "a spectator can only list, subscribe, unsubscribe and bet"
                        await send(Error(code="wrong_role", message=text))
                nursery.cancel_scope.cancel()
        except* (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError):
            pass  # the spectator went away or stopped reading: nothing to report
        finally:
            METRICS.connections.labels("spectator").dec()
            self.hub.remove(sub)
            if self.desk is not None and self.desk.subscribers.get(name) is sub:
                del self.desk.subscribers[name]
            with trio.CancelScope(shield=True):
                await stream.aclose()

    def _bet(self, name: str, bettor: bool, msg: PlaceBet) -> Any:
        """A spectator's stake: ``bet_placed``, or an error with the wager's code."""
        if self.desk is None:
            return Error(code="betting_disabled", message="this server takes no bets")
        if not bettor:
            return Error(code="not_authenticated", message="betting needs a spectator account: hello with your token")
        try:
            return self.desk.place(name, msg.match_id, msg.seat, msg.cents)
        except WagerError as exc:
            return Error(code=exc.code, message=str(exc))

    async def _authenticate(self, name: str, token: str) -> bool:
        row = self.store.db.execute("SELECT salt, token_hash FROM bots WHERE name=?", (name,)).fetchone()
        salt, expected = (row["salt"], row["token_hash"]) if row else (b"0" * 16, b"")
        digest = await trio.to_thread.run_sync(hash_token, token, salt)
        return bool(row) and digest == expected
