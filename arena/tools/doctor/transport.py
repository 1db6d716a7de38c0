"""The doctor's recording proxy between the bot and the server (TCP on the bot's side, or TLS
with ``--tls``; with ``--sandbox`` the launcher relays the bot's stdin/stdout to it)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from typing import Any

import trio

from arena.tools.doctor.limits import LINGER_S, TLS_HANDSHAKE_S
from arena.tools.doctor.wire import Wire


class Proxy:
    """A loopback TCP relay between the bot and the server that records every line.

    Bot-to-server bytes are forwarded untouched. Server-to-bot lines go through ``rewrite``
    (which may add fields or extra lines) and are written to the bot in one write per batch
    received, as the server wrote them. When the server closes (after ``goodbye``), the bot's
    side stays open until the bot closes it, :meth:`release` is called, or ``linger_s`` passes.
    With ``ssl_context`` the bot's side is TLS (the proxy holds the server's certificate): the
    lines are recorded decrypted, and each failed handshake's reason is kept in ``tls_failures``.
    """

    def __init__(self, wire: Wire, server_port: int, linger_s: float = LINGER_S,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.wire = wire
        self.ssl_context = ssl_context
        self.tls_failures: list[str] = []
        self.server_port = server_port
        self.linger_s = linger_s
        self.port: int | None = None
        self.rewrite: Callable[[bytes, dict[str, Any] | None], list[tuple[bytes, str]]] = (
            lambda raw, msg: [(raw, "server")]
        )
        self.after_welcome: list[bytes] = []
        self.released = trio.Event()
        self.bot_streams: dict[int, trio.abc.Stream] = {}
        self.locks: dict[int, trio.Lock] = {}
        self.slowest_write_s = 0.0

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    def release(self) -> None:
        """Close the bot's side of every connection whose server side has closed."""
        self.released.set()

    async def _handle(self, tcp: trio.SocketStream) -> None:
        bot: trio.abc.Stream = tcp
        if self.ssl_context is not None:
            bot = trio.SSLStream(tcp, self.ssl_context, server_side=True, https_compatible=True)
            try:
                with trio.fail_after(TLS_HANDSHAKE_S):
                    await bot.do_handshake()
            except (trio.BrokenResourceError, trio.TooSlowError) as exc:
                self.tls_failures.append(str(exc.__cause__ or f"no TLS handshake within {TLS_HANDSHAKE_S:g} s"))
                await tcp.aclose()
                return
        self.wire.connections += 1
        conn = self.wire.connections
        self.bot_streams[conn] = bot
        self.locks[conn] = trio.Lock()
        try:
            up = await trio.open_tcp_stream("127.0.0.1", self.server_port)
        except OSError:
            await bot.aclose()
            return
        bot_closed = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._bot_to_server, conn, bot, up, bot_closed)
            nursery.start_soon(self._server_to_bot, conn, up, bot, bot_closed)

    async def _bot_to_server(
        self, conn: int, bot: trio.abc.Stream, up: trio.SocketStream, bot_closed: trio.Event
    ) -> None:
        buf = bytearray()
        up_ok = True
        try:
            while True:
                try:
                    data = await bot.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if not data:
                    break
                if up_ok:
                    try:
                        await up.send_all(data)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        up_ok = False
                buf += data
                while (nl := buf.find(b"\n")) >= 0:
                    line = bytes(buf[:nl])
                    del buf[: nl + 1]
                    self.wire.from_bot(line[:-1] if line.endswith(b"\r") else line, conn)
                if len(buf) > 70_000:  # a runaway line: keep a head for the report
                    self.wire.from_bot(bytes(buf[:2000]) + b"...", conn)
                    buf.clear()
        finally:
            if buf.strip():
                self.wire.from_bot(bytes(buf), conn)
            bot_closed.set()
            with trio.CancelScope(shield=True):
                try:
                    await up.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass

    async def _server_to_bot(
        self, conn: int, up: trio.SocketStream, bot: trio.abc.Stream, bot_closed: trio.Event
    ) -> None:
        buf = bytearray()
        try:
            while True:
                try:
                    data = await up.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if not data:
                    break
                buf += data
                out: list[tuple[bytes, str]] = []
                while (nl := buf.find(b"\n")) >= 0:  # what the server wrote together goes out together
                    raw = bytes(buf[:nl])
                    del buf[: nl + 1]
                    try:
                        msg = json.loads(raw)
                    except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
                        msg = None
                    msg = msg if isinstance(msg, dict) else None
                    out.extend(self.rewrite(raw, msg))
                    if msg is not None and msg.get("type") == "welcome":
                        out.extend((extra, "doctor") for extra in self.after_welcome)
                if out:
                    await self._write(conn, bot, out)
        finally:
            try:
                # the server closed: give the bot the chance to close first (after goodbye)
                with trio.move_on_after(self.linger_s):
                    while not bot_closed.is_set() and not self.released.is_set():
                        await trio.sleep(0.01)
            finally:
                with trio.CancelScope(shield=True):
                    try:
                        await bot.aclose()
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        pass
                self.wire.connection_closed("the connection was closed")

    async def _write(self, conn: int, bot: trio.abc.Stream, lines: list[tuple[bytes, str]]) -> None:
        data = b"".join(raw + b"\n" for raw, _ in lines)
        async with self.locks[conn]:
            for raw, src in lines:
                self.wire.from_server(raw, conn, src)
            t0 = trio.current_time()
            try:
                await bot.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            self.slowest_write_s = max(self.slowest_write_s, trio.current_time() - t0)

    async def inject(self, conn: int, lines: list[bytes]) -> float:
        """Send ``lines`` to the bot on connection ``conn`` now; return the seconds it took."""
        bot = self.bot_streams[conn]
        data = b"".join(raw + b"\n" for raw in lines)
        async with self.locks[conn]:
            for raw in lines:
                self.wire.from_server(raw, conn, "doctor")
            t0 = trio.current_time()
            await bot.send_all(data)
            return trio.current_time() - t0
