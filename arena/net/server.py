"""The TCP listener: handshake, authentication, and the registry of connected bots.

A client's first line must be ``hello`` (within ``handshake_timeout_s``, default 5 s). A bot
is authenticated by name and token against the store (a salted HMAC-SHA256 of a generated token,
scrypt of a chosen one) through :class:`arena.net.auth.Authenticator`: only failures rate limited,
per address, per name and overall (``rate_limited``), a right generated token never refused,
bounded scrypt checks, constant-time comparisons. A name that
is already connected is refused with ``name_in_use``: the first connection keeps its seat. A
``spectator`` (any name, no token) may ``list`` the matches in play and ``subscribe`` to their
feed (see :mod:`arena.net.spectate`). Once welcomed, a bot's :class:`~arena.match.seat.Connection`
waits in :attr:`ArenaServer.bots` until the scheduler seats it in a match. A launched bot runs
as copies (:mod:`arena.schedule.copies`), each with its own token held in memory
(:meth:`ArenaServer.copy_token`): copy 0 waits in ``bots``, copy *k* in ``copies[(name, k)]``.

Caps, so that no anonymous client can exhaust the process's file descriptors or lock bots out
(docs/contests.md, "Anonymous clients and authentication"):

* at most ``max_connections`` TCP connections at once, and ``max_conns_per_addr`` per address;
  beyond them, ``bot_reserve`` more connections are accepted that may only become
  authenticated bots (a spectator there is refused with ``server_full``);
* at most ``max_spectators`` spectators; a spectator that neither sends a line (an empty line
  will do) nor is sent anything for ``spectator_idle_s`` seconds is disconnected with
  ``idle_timeout``;
* bots the server launches itself under the sandbox reach it through
  :meth:`ArenaServer.attach_socket` (a loopback TCP connection whose far end is the bot's stdin
  and stdout: no listener, no caps, no rate limits); :meth:`ArenaServer.attach_local` is the
  same for a stream inside the process;
* at start the soft ``RLIMIT_NOFILE`` is raised to the hard limit (:func:`raise_fd_limit`).

TLS (``tls_cert`` and ``tls_key``, :mod:`arena.net.tls`): every connection accepted on the port
is wrapped in a ``trio.SSLStream`` (server side, TLS 1.2 or later) once its first byte shows a
TLS handshake; a client whose first byte is anything else gets ``tls_required`` in plain text
and is closed before a line of it is read. On a plain port, a client whose first byte is a TLS
handshake gets ``tls_unavailable`` at once. The TLS handshake counts against the caps and
shares the ``handshake_timeout_s`` with the ``hello``; a failed handshake closes that connection
only (``arena_protocol_errors_total{code="tls_handshake"}``). Over TLS the fair clock stamps an
answer with the loop's wake-up (:mod:`arena.match.fairclock`'s rule for streams that are not
plain sockets), not the kernel's arrival stamp.
With TLS on, the server also listens in plain on a free loopback port
(:attr:`ArenaServer.local_port`): the bots it launches itself outside the sandbox (``trust_bots``)
connect there, as they would without TLS.

Every failure is answered with an ``error`` whose code is listed in docs/protocol.md, and
only ever closes that one connection.
"""

from __future__ import annotations

import functools
import hmac
import logging
import resource
import secrets
import socket
import ssl
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from arena import __version__
from arena.errors import UserError
from arena.match.dispatch import Dispatcher
from arena.match.limits import FLEET, LIMITS
from arena.match.seat import Connection
from arena.metrics import METRICS
from arena.names import NAME_RULE, is_valid_name
from arena.net.auth import Authenticator, AuthLimits
from arena.net.spectate import SpectatorHub, Subscriber
from arena.net.tls import HANDSHAKE_RECORD, server_context
from arena.store.sqlite import Store
from arena.wagers.ledger import WagerError
from protocol import PROTOCOL_VERSION
from protocol.framing import LineReader, ProtocolError, decode_client, encode
from protocol.messages import Error, Hello, ListMatches, Matches, PlaceBet, Subscribe, Unsubscribe, Welcome

log = logging.getLogger("arena.net.server")


_IDLE = object()
"""What :meth:`ArenaServer._read_or_idle` returns for an idle spectator."""


class ServerConfig(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """Listener settings. ``port`` 0 picks a free port; times in seconds, sizes in bytes; the
    defaults of ``max_line``, ``handshake_timeout_s`` and ``send_timeout_s`` are
    :class:`arena.match.limits.Limits`'s.

    Caps (see the module docstring): ``max_connections`` TCP connections in all (default 512,
    well below the usual 1,024 file descriptors even when the hard limit cannot be raised),
    ``max_conns_per_addr`` per address, ``bot_reserve`` extra connections for bots only,
    ``max_spectators`` spectators, each dropped after ``spectator_idle_s`` seconds in which it
    sent no line and was sent nothing.
    ``dispatch``: see the field. Authentication (:class:`arena.net.auth.AuthLimits`):
    ``auth_concurrency`` scrypt checks (chosen tokens) at
    once; failed checks: per address ``auth_addr_burst`` failures then ``auth_addr_per_min`` a minute; per name
    ``auth_name_burst`` then ``auth_name_per_min``; in all ``auth_global_burst`` then
    ``auth_global_per_min``. TLS: ``tls_cert`` and ``tls_key`` (see the fields)."""

    host: str = "127.0.0.1"
    port: int = 0
    max_line: int = LIMITS.max_line_bytes
    handshake_timeout_s: float = LIMITS.handshake_timeout_ms / 1000
    send_timeout_s: float = LIMITS.send_timeout_ms / 1000
    max_conns_per_addr: int = 64
    max_connections: int = 512
    bot_reserve: int = 32
    max_spectators: int = 256
    spectator_idle_s: float = 120.0
    auth_concurrency: int = 1
    auth_addr_burst: int = 10
    auth_addr_per_min: float = 30.0
    auth_name_burst: int = 5
    auth_name_per_min: float = 6.0
    auth_global_burst: int = 10
    auth_global_per_min: float = 120.0
    dispatch: bool = True
    """Bots' readers park at one dispatcher task that reads for all of them
    (:mod:`arena.match.dispatch`: cheaper per decision with many matches); False gives each
    connection its own reading task only (the same results; for comparison)."""
    tls_cert: str | None = None
    """PEM file of the server's certificate and its chain: bots and spectators connect over
    TLS (1.2 or later), and the web page is served over HTTPS (:mod:`arena.net.tls`). None:
    plain TCP and HTTP."""
    tls_key: str | None = None
    """PEM file of the certificate's private key (unencrypted; may be ``tls_cert`` itself).
    Given with ``tls_cert``, never alone."""

    def ssl_context(self) -> ssl.SSLContext | None:
        """The server's TLS context from ``tls_cert`` and ``tls_key``, or None without them.
        Raises :class:`arena.errors.UserError` (one line) when only one is given or a file
        cannot be used."""
        if self.tls_cert is None and self.tls_key is None:
            return None
        if self.tls_cert is None or self.tls_key is None:
            given, missing = ("tls_cert", "tls_key") if self.tls_key is None else ("tls_key", "tls_cert")
            raise UserError(f"[server] {given} is set but {missing} is not: give both (the same file if it holds "
                            "the certificate and the key)")
        return server_context(self.tls_cert, self.tls_key)

    def auth_limits(self) -> AuthLimits:
        """The ``auth_*`` keys as :class:`arena.net.auth.AuthLimits`."""
        return AuthLimits(concurrency=self.auth_concurrency, addr_burst=self.auth_addr_burst,
                          addr_per_min=self.auth_addr_per_min, name_burst=self.auth_name_burst,
                          name_per_min=self.auth_name_per_min, global_burst=self.auth_global_burst,
                          global_per_min=self.auth_global_per_min)


def raise_fd_limit() -> int:
    """Raise the soft ``RLIMIT_NOFILE`` of this process to its hard limit; return the soft
    limit now in force (unchanged if the system refuses)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


class ArenaServer:
    """Accepts bots over TCP. ``bots`` maps a connected bot's name to its connection;
    :meth:`wait_for` blocks until a given bot is connected."""

    def __init__(self, store: Store, config: ServerConfig | None = None, hub: SpectatorHub | None = None) -> None:
        self.store = store
        self.config = config or ServerConfig()
        self.ssl_context = self.config.ssl_context()  # a bad certificate or key fails here, in one line
        self.hub = hub
        self.desk: Any = None  # the contest's BettingDesk, if wagers are served
        self.bots: dict[str, Connection] = {}
        self.copies: dict[tuple[str, int], Connection] = {}
        """Copies 1, 2, ... of launched bots, by (name, copy); copy 0 is in ``bots`` (see
        :mod:`arena.schedule.copies`)."""
        self._copy_tokens: dict[str, dict[int, str]] = {}
        self.port: int | None = None
        self.local_port: int | None = None
        """With TLS on, the plain loopback port for the bots this server launches outside the
        sandbox (see the module docstring); None without TLS or before :meth:`serve`."""
        self.auth = Authenticator(store, self.config.auth_limits())
        self.open_connections = 0  # TCP connections counted against max_connections
        self.reserved = 0  # connections in the bots' reserve
        self.spectators = 0
        self.refused: Counter[str] = Counter()  # code -> connections refused or dropped by a cap
        self._per_addr: Counter[str] = Counter()
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.dispatcher: Dispatcher | None = None
        """The bots' readers' dispatcher while serving (``dispatch``), else None."""

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``task_status.started(port)`` reports the bound port."""
        limit = raise_fd_limit()
        need = self.config.max_connections + self.config.bot_reserve
        if need + 64 > limit:
            log.warning("max_connections + bot_reserve = %d is close to the file descriptor limit %d: "
                        "lower them in [server]", need, limit)
        listeners = await trio.open_tcp_listeners(self.config.port, host=self.config.host)
        self.port = listeners[0].socket.getsockname()[1]
        local: list[trio.SocketListener] = []
        if self.ssl_context is not None:
            local = await trio.open_tcp_listeners(0, host="127.0.0.1")
            self.local_port = local[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            if self.config.dispatch and Dispatcher.available():
                self.dispatcher = Dispatcher()
                await nursery.start(self.dispatcher.run)
            self._nursery = nursery
            task_status.started(self.port)
            if local:  # the plain loopback port beside the TLS one
                nursery.start_soon(functools.partial(trio.serve_listeners, self._handle, local,
                                                     handler_nursery=nursery))
            handle = functools.partial(self._handle, tls=self.ssl_context is not None)
            await trio.serve_listeners(handle, listeners, handler_nursery=nursery)

    async def attach_local(self) -> trio.SocketStream:
        """A connection to this server for a bot it launched (the launcher's stdio relay): one
        end of a socket pair inside the process, served like a TCP client but outside every
        cap and rate limit, and for bots only. Returns the client's end. ``RuntimeError`` if
        the server is not serving."""
        if self._nursery is None:
            raise RuntimeError("the server is not serving")
        ours, theirs = trio.socket.socketpair()
        server_end, client_end = trio.SocketStream(ours), trio.SocketStream(theirs)
        self._nursery.start_soon(self._local, server_end)
        return client_end

    def attach_socket(self, sock: socket.socket) -> None:
        """Serve ``sock``, the arena's end of a connected loopback TCP pair whose other end is a
        launched bot's stdin and stdout (:func:`arena.schedule.launcher.launch`): served like a
        TCP client, with the kernel's arrival stamps of the fair clock, but outside every cap and
        rate limit, and for bots only. No relay runs between the two: the bot writes straight
        into the socket the referee reads. ``RuntimeError`` if the server is not serving."""
        if self._nursery is None:
            raise RuntimeError("the server is not serving")
        sock.setblocking(False)
        self._nursery.start_soon(self._local, trio.SocketStream(trio.socket.from_stdlib_socket(sock)))

    async def _local(self, stream: trio.SocketStream) -> None:
        try:
            await self._session(stream, "local", local=True)
        except Exception:  # same last line of defence as for TCP clients
            log.exception("local connection failed")
            await stream.aclose()

    def copy_token(self, name: str, copy: int) -> str:
        """A fresh secret token for copy ``copy`` of the launched bot ``name`` (held in memory
        only, replacing any earlier one): a hello with it is seated as that copy."""
        token = secrets.token_urlsafe(24)
        self._copy_tokens.setdefault(name, {})[copy] = token
        return token

    def _copy_of(self, name: str, token: str) -> int | None:
        """The copy whose token ``token`` is (constant-time compare), or None."""
        found = None
        for copy, expected in self._copy_tokens.get(name, {}).items():
            if hmac.compare_digest(expected.encode(), token.encode()):
                found = copy
        return found

    def connection(self, name: str, copy: int = 0) -> Connection | None:
        """The connection of copy ``copy`` of bot ``name`` (copy 0: the bot itself), or None."""
        return self.bots.get(name) if copy == 0 else self.copies.get((name, copy))

    async def wait_for(self, name: str, timeout_s: float, copy: int = 0) -> Connection | None:
        """The connection of bot ``name`` (its copy ``copy``) once it has connected, or None
        after ``timeout_s``."""
        with trio.move_on_after(timeout_s):
            while True:
                conn = self.connection(name, copy)
                if conn is not None and not conn.closed.is_set():
                    return conn
                await self._changed.wait()
        return None

    async def _refuse(self, stream: trio.SocketStream, code: str, message: str) -> None:
        METRICS.protocol_errors.labels(code).inc()
        if code in ("too_many_connections", "server_full", "rate_limited"):
            self.refused[code] += 1
            METRICS.refused.labels(code).inc()
        with trio.move_on_after(FLEET.refusal_send_ms / 1000):
            try:
                await stream.send_all(encode(Error(code=code, message=message, fatal=True)))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
        await stream.aclose()

    async def _handle(self, stream: trio.SocketStream, tls: bool = False) -> None:
        """One accepted connection: the caps, then with ``tls`` the TLS handshake, then the
        session (:meth:`_session`)."""
        try:
            addr = stream.socket.getpeername()[0]
        except OSError:
            await stream.aclose()
            return
        cfg = self.config
        addr_full = self._per_addr[addr] >= cfg.max_conns_per_addr
        reserve = addr_full or self.open_connections >= cfg.max_connections
        if reserve and self.reserved >= cfg.bot_reserve:
            if addr_full:
                await self._refuse(stream, "too_many_connections", f"at most {cfg.max_conns_per_addr} per address")
            else:
                await self._refuse(stream, "server_full", f"the server holds {cfg.max_connections} connections")
            return
        if reserve:
            self.reserved += 1
        else:
            self.open_connections += 1
            self._per_addr[addr] += 1
        deadline = trio.current_time() + cfg.handshake_timeout_s  # for the TLS handshake and the hello together
        try:
            secured = await self._secure(stream, tls, deadline)
            if secured is not None:
                await self._session(secured, addr, reserve=reserve, deadline=deadline)
        except Exception:  # last line of defence: one connection never takes the server down
            log.exception("connection from %s failed", addr)
            await stream.aclose()
        finally:
            if reserve:
                self.reserved -= 1
            else:
                self.open_connections -= 1
                self._per_addr[addr] -= 1

    async def _first_byte(self, stream: trio.SocketStream, deadline: float) -> bytes | None:
        """The client's first byte, left unread (``MSG_PEEK``): ``b""`` at the end of the
        stream or on an error, None if nothing came before ``deadline``."""
        with trio.move_on_at(deadline):
            try:
                return await stream.socket.recv(1, socket.MSG_PEEK)
            except OSError:
                return b""
        return None

    async def _discard(self, stream: trio.SocketStream) -> None:
        """Read and drop what the client has sent so far (at most ``max_line`` bytes), so that
        closing after an error does not reset the connection under the error."""
        try:
            await stream.receive_some(self.config.max_line)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def _secure(self, stream: trio.SocketStream, tls: bool, deadline: float) -> trio.abc.Stream | None:
        """The stream to hold the session on: ``stream`` itself on a plain port, a
        ``trio.SSLStream`` with its handshake done on a TLS port (``tls``); None once a client
        that speaks the other has been told so (``tls_required``, ``tls_unavailable``: what it
        sent is dropped unread), or a TLS handshake failed or did not finish by ``deadline``
        (the connection is closed then). A stream without a socket (a memory stream in tests)
        is taken as the port's kind."""
        if not isinstance(getattr(stream, "socket", None), trio.socket.SocketType):
            first: bytes | None = bytes([HANDSHAKE_RECORD]) if tls else b"{"
        else:
            first = await self._first_byte(stream, deadline)
        is_tls = first is not None and first[:1] == bytes([HANDSHAKE_RECORD])
        if not tls:
            if is_tls:
                await self._discard(stream)
                await self._refuse(stream, "tls_unavailable",
                                   "this port speaks plain TCP, not TLS: connect without TLS")
                return None
            return stream  # a timeout is the session's to report (handshake_timeout)
        if first is None:
            await self._refuse(stream, "handshake_timeout",
                               f"no TLS handshake within {self.config.handshake_timeout_s} s")
            return None
        if not is_tls:
            if first:
                await self._discard(stream)
                await self._refuse(stream, "tls_required", "this port speaks TLS: connect with TLS (ARENA_TLS=1 or a "
                                   "tls://host:port address, docs/protocol.md §2.1); what you sent was dropped unread")
            else:
                await stream.aclose()
            return None
        assert self.ssl_context is not None
        secured = trio.SSLStream(stream, self.ssl_context, server_side=True, https_compatible=True)
        with trio.move_on_at(deadline):
            try:
                await secured.do_handshake()
                return secured
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.info("TLS handshake failed: %s", exc.__cause__ or exc)
        METRICS.protocol_errors.labels("tls_handshake").inc()
        await secured.aclose()  # https_compatible: closes the TCP connection at once, no close_notify
        return None

    async def _session(self, stream: trio.abc.Stream, addr: str, *, local: bool = False,
                       reserve: bool = False, deadline: float | None = None) -> None:
        """One client from its first line on. ``local``: a launched bot's in-process
        connection; ``reserve``: a connection in the bots' reserve (bots only); ``deadline``:
        when the hello must have come (default: ``handshake_timeout_s`` from now)."""
        reader = LineReader(stream, self.config.max_line)
        line: bytes | None = None
        if deadline is None:
            deadline = trio.current_time() + self.config.handshake_timeout_s
        with trio.move_on_at(deadline) as scope:
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
        if not is_valid_name(hello.name):  # names are data (arena.names): refused before anything uses one
            await self._refuse(stream, "bad_name", f"bad name: a name is {NAME_RULE}")
            return
        if hello.role == "spectator":
            await self._admit_spectator(stream, reader, hello, addr, local, reserve)
            return
        copy = self._copy_of(hello.name, hello.token)
        if copy is None and not await self._authenticate(stream, "bots", hello.name, hello.token, addr, local):
            return
        registry: dict[Any, Connection] = self.copies if copy else self.bots
        key: Any = (hello.name, copy) if copy else hello.name
        if key in registry and not registry[key].closed.is_set():
            await self._refuse(stream, "name_in_use", f"bot {hello.name!r} is already connected")
            return
        conn = Connection(stream, reader, hello.name, "bot", addr, self.config.send_timeout_s)
        conn.legal_form = hello.legal
        conn.dispatcher = self.dispatcher
        registry[key] = conn
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
            if registry.get(key) is conn:
                del registry[key]
            self._notify()

    async def _admit_spectator(self, stream: trio.abc.Stream, reader: LineReader, hello: Hello, addr: str,
                               local: bool, reserve: bool) -> None:
        """A spectator's ``hello``: refused where this server has no feed, on a launched bot's
        connection, in the bots' reserve or with every spectator slot taken; a betting spectator
        when it gives a token that checks; then :meth:`_spectator`."""
        if self.hub is None or local:
            await self._refuse(stream, "unsupported_role", "this server has no spectator feed"
                               if not local else "a launched bot's connection is for the bot only")
            return
        if reserve or self.spectators >= self.config.max_spectators:
            await self._refuse(stream, "server_full", "no spectator slot free: try again later")
            return
        bettor = False
        if hello.token:
            if not await self._authenticate(stream, "spectators", hello.name, hello.token, addr, local):
                return
            bettor = True
        self.spectators += 1
        try:
            await self._spectator(stream, reader, hello.name, bettor)
        finally:
            self.spectators -= 1

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

        last_sent = [trio.current_time()]  # the feed counts as activity: see spectator_idle_s

        async def writer() -> None:
            async for data in sub.receive_channel:
                async with lock:
                    with trio.fail_after(self.config.send_timeout_s):
                        await stream.send_all(data)
                last_sent[0] = trio.current_time()
            if sub.dropped:
                await send(Error(code="too_slow", message="the feed overflowed: read faster", fatal=True))
                await stream.aclose()  # fatal means it: the reader then ends the session

        try:
            await send(Welcome(name=name, server=f"arena {__version__}"))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer)
                errors = 0
                idle_s = self.config.spectator_idle_s
                while True:
                    try:
                        line = await self._read_or_idle(reader, idle_s, last_sent)
                    except ProtocolError as exc:
                        await send(Error(code=exc.code, message=exc.message, fatal=True))
                        break
                    if line is _IDLE:
                        self.refused["idle_timeout"] += 1
                        METRICS.refused.labels("idle_timeout").inc()
                        text = f"nothing sent or received for {idle_s:g} s: send any line (an empty one will do)"
                        await send(Error(code="idle_timeout", fatal=True, message=text))
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
                    await self._spectator_asks(sub, bettor, msg, send)
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

    async def _spectator_asks(self, sub: Subscriber, bettor: bool, msg: Any,
                              send: Callable[[Any], Awaitable[None]]) -> None:
        """Answer one decoded message of spectator ``sub`` through ``send``: ``list``,
        ``subscribe``, ``unsubscribe``, ``bet`` (for a ``bettor``); anything else is ``wrong_role``."""
        assert self.hub is not None
        if isinstance(msg, ListMatches):
            await send(Matches(matches=self.hub.listing()))
        elif isinstance(msg, Subscribe):
            if not self.hub.subscribe(sub, msg.match_id):
                await send(Error(code="unknown_match", message=f"no match {msg.match_id!r} in play"))
        elif isinstance(msg, Unsubscribe):
            self.hub.unsubscribe(sub, msg.match_id)
        elif isinstance(msg, PlaceBet):
            await send(self._bet(sub.name, bettor, msg))
        else:
            text = "a spectator can only list, subscribe, unsubscribe and bet"
            await send(Error(code="wrong_role", message=text))

    @staticmethod
    async def _read_or_idle(reader: LineReader, idle_s: float, last_sent: list[float]) -> bytes | None | object:
        """A spectator's next line (None at end of stream), or :data:`_IDLE` once it has sent
        no line and been sent nothing for ``idle_s`` seconds (``last_sent[0]``: when the feed
        last wrote to it)."""
        start = trio.current_time()
        while True:
            deadline = max(start, last_sent[0]) + idle_s
            with trio.move_on_at(deadline):
                return await reader.read_line()
            if max(start, last_sent[0]) + idle_s <= trio.current_time():
                return _IDLE

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

    async def _authenticate(self, stream: trio.SocketStream, table: str, name: str, token: str, addr: str,
                            local: bool) -> bool:
        """Check ``name``'s token in ``table`` (``bots`` or ``spectators``); on failure refuse
        the connection with ``auth_failed`` or ``rate_limited`` and return False."""
        verdict = await self.auth.check(table, name, token, addr, local=local)
        if verdict == "ok":
            return True
        if verdict == "rate_limited":
            wait = self.auth.retry_after_s(name, addr, table)
            await self._refuse(stream, "rate_limited", f"too many failed token checks: try again in {wait:.0f} s")
        elif table == "bots":
            await self._refuse(stream, "auth_failed", "unknown bot name or wrong token")
        else:
            await self._refuse(stream, "auth_failed", "unknown spectator or wrong token")
        return False
