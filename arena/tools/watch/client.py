"""The network and terminal side of ``arena watch``: connect as a spectator, follow the feed
into a :class:`~arena.tools.watch.state.WatchState`, draw it live or once (:mod:`arena.tools.watch`)."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
from rich.console import Console
from rich.live import Live
from rich.text import Text

from arena.errors import UNAVAILABLE, UserError
from arena.net.tls import ca_file, open_stream, split_address, tls_asked
from arena.tools.watch.state import WatchState
from protocol import PROTOCOL_VERSION
from protocol.framing import LineReader, ProtocolError


class WatchError(Exception):
    """The server refused us or went away; the message says why."""


async def _send(stream: trio.abc.Stream, obj: dict[str, Any]) -> None:
    await stream.send_all(msgspec.json.encode(obj) + b"\n")


KEEPALIVE_S = 30.0
"""After this many seconds without a line from the server, the watcher sends an empty line, so
that the server does not drop it as an idle spectator (docs/protocol.md §13.6)."""


async def _recv(reader: LineReader) -> dict[str, Any] | None:
    """The next message as a dict, or None at the end of the stream (blank lines skipped).
    Sends an empty line to the server (a keepalive) every :data:`KEEPALIVE_S` seconds of quiet."""
    while True:
        line = b""
        with trio.move_on_after(KEEPALIVE_S) as quiet:
            try:
                line = await reader.read_line()
            except ProtocolError as exc:
                raise WatchError(f"bad data from the server: {exc.message}") from None
        if quiet.cancelled_caught:
            await reader.stream.send_all(b"\n")
            continue
        if line is None:
            return None
        if not line.strip():
            continue
        try:
            msg = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):  # a hostile server's line: skipped, never a crash
            continue
        if isinstance(msg, dict):
            return msg


class FellBehind(WatchError):
    """The server dropped the feed because the watcher read it too slowly (``too_slow``), or
    closed it without a goodbye: the watcher connects again and goes on from the live state."""


CATCH_UP_LIMIT = 20
"""Reconnections in a row after falling behind (with no match seen to its end between them)
before the watcher gives up."""


async def _watch(host: str, port: int, match: str | None, once: bool, name: str, console: Console,
                 tls: bool = False, ca: str | None = None) -> int:
    """Follow (see :func:`_session`); after falling behind the live feed, say so in one line,
    connect again and go on from the live state: the exit status."""
    for _ in range(CATCH_UP_LIMIT):
        try:
            return await _session(host, port, match, once, name, console, tls, ca)
        except FellBehind as exc:
            console.print(Text(f"fell behind the live feed ({exc}): skipping to the live state"))
    console.print(Text.assemble(("error:", "red"), f" fell behind the live feed {CATCH_UP_LIMIT} times in a row: "
                                "this terminal cannot keep up; follow one match (arena watch MATCH_ID)"))
    return 1


async def _session(host: str, port: int, match: str | None, once: bool, name: str, console: Console,
                   tls: bool = False, ca: str | None = None) -> int:
    """Connect (TLS with ``tls``, verified against ``ca`` or the system's trust store), say
    hello as a spectator, list, subscribe and follow; the exit status. Raises
    :class:`FellBehind` when the server drops the feed for reading too slowly."""
    try:
        stream = await open_stream(host, port, tls=tls, ca=ca)
    except OSError as exc:
        console.print(Text.assemble(("error:", "red"), f" cannot connect to {host}:{port}: {exc.strerror or exc}; "
                                    "start the contest server (arena serve) or fix --host/--port"), soft_wrap=True)
        return UNAVAILABLE
    except UserError as exc:  # TLS: a certificate not accepted, a port that does not speak TLS, a CA file
        console.print(Text.assemble(("error:", "red"), f" {exc}"), soft_wrap=True)
        return exc.status
    reader = LineReader(stream)
    state = WatchState(follow=match)
    async with stream:
        try:
            await _send(stream, {"type": "hello", "name": name, "token": "", "protocol": PROTOCOL_VERSION,
                                 "role": "spectator"})
            welcome = await _recv(reader)
            if welcome is None or welcome.get("type") != "welcome":
                why = f"{welcome.get('code')}: {welcome.get('message')}" if welcome else "connection closed"
                raise WatchError(f"the server refused the spectator: {why}")
            await _send(stream, {"type": "list"})
            while not state.listed:
                msg = await _recv(reader)
                if msg is None:
                    raise WatchError("connection closed")
                state.apply(msg)
            listed = [info.get("match_id") for info in state.listing]
            if match is not None and match not in listed:
                live = ", ".join(map(str, listed)) or "none"
                raise WatchError(f"no match {match!r} in play (in play: {live})")
            await _send(stream, {"type": "subscribe", "match_id": match or "*"})
            if once or not console.is_terminal:
                status = await _follow_plain(reader, state, match, once, console)
            else:
                status = await _follow_live(reader, state, match, console)
            await _leave(stream, reader, match or "*")
            return status
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            console.print(Text.assemble(("error:", "red"), f" connection lost: {exc}"))
            return UNAVAILABLE
        except FellBehind:
            raise
        except WatchError as exc:
            console.print(Text.assemble(("error:", "red"), f" {exc}"))
            return 1


async def _leave(stream: trio.abc.Stream, reader: LineReader, match_id: str) -> None:
    """Close politely: stop the feed, say we are done writing, and read what is still in
    flight until the server closes (closing with unread data would reset the connection)."""
    with trio.move_on_after(2):
        try:
            await _send(stream, {"type": "unsubscribe", "match_id": match_id})
            if isinstance(stream, trio.abc.HalfCloseableStream):  # TLS has no half-close: the server closes
                await stream.send_eof()
            while await reader.read_line() is not None:
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ProtocolError):
            pass


def _fatal(state: WatchState) -> str | None:
    """The fatal error the server sent, if any; raises :class:`FellBehind` for ``too_slow``."""
    err = state.error
    if err is not None and err.get("code") == "too_slow":
        state.error = None
        raise FellBehind(f"the server dropped it: {err.get('message')}")
    if err is not None and (err.get("fatal") or err.get("code") == "unknown_match"):
        return f"{err.get('code')}: {err.get('message')}"
    return None


async def _follow_plain(reader: LineReader, state: WatchState, match: str | None, once: bool,
                        console: Console) -> int:
    """No terminal to redraw (or ``once``): print a snapshot of each match followed when it
    ends; with ``once``, only the first one, then stop."""
    printed = 0
    while True:
        msg = await _recv(reader)
        if msg is None:
            if state.goodbye is None and printed == 0 and not once:
                raise FellBehind("the server closed the connection without a goodbye")
            console.print("the server closed the connection")
            return 0 if printed else 1
        shown = state.current
        state.apply(msg)
        if (why := _fatal(state)) is not None:
            raise WatchError(why)
        if msg.get("type") == "watch_end" and msg.get("match_id") == shown:
            console.print(state.render(shown))
            printed += 1
            if once or match is not None:
                return 0
        if state.goodbye is not None:
            console.print(Text(f"server: goodbye ({state.goodbye})"))
            return 0


async def _follow_live(reader: LineReader, state: WatchState, match: str | None, console: Console) -> int:
    """Redraw the view four times a second until the match asked for ends (or, following every
    match, until the server goes away). Raises :class:`FellBehind` or :class:`WatchError`."""
    failure: WatchError | None = None
    with Live(state.render(), console=console, auto_refresh=False, transient=False) as live:
        async with trio.open_nursery() as nursery:

            async def ticker() -> None:
                while True:
                    await trio.sleep(0.25)
                    live.update(state.render(), refresh=True)

            nursery.start_soon(ticker)
            while True:
                msg = await _recv(reader)
                if msg is None:
                    live.update(state.render(), refresh=True)
                    if state.goodbye is None:  # dropped without a word: the feed overflowed meanwhile
                        failure = FellBehind("the server closed the connection without a goodbye")
                    break
                state.apply(msg)
                try:
                    if (why := _fatal(state)) is not None:
                        failure = WatchError(why)
                except FellBehind as exc:
                    failure = exc
                if failure is not None or state.goodbye is not None:
                    break
                # no redraw per message: the ticker redraws four times a second, so a busy feed
                # costs the terminal no more (a redraw per message is what fell behind)
                if match is not None and msg.get("type") == "watch_end" and msg.get("match_id") == match:
                    break
            nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if state.goodbye is not None:
        console.print(Text(f"server: goodbye ({state.goodbye})"))
    return 0


def main(host: str, port: int, match: str | None, *, once: bool = False, name: str = "watcher", tls: bool = False,
         ca: str | None = None) -> int:
    """``arena watch``: follow ``match`` (or every match) on the contest server at
    ``host:port`` (``host`` may be ``tls://host[:port]``). TLS with ``tls``, ``ARENA_TLS=1`` or a
    ``tls://`` host, the server's certificate checked against ``ca`` (default ``$ARENA_TLS_CA``,
    else the system's trust store). With ``once``, print one snapshot when the first match
    followed is over and return. Returns the exit status (0 fine, 1 refused, 2 a bad address or
    CA file, 3 unreachable or TLS failed, 130 interrupted)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=110)
    try:
        host, port, tls_address = split_address(host, port)
    except UserError as exc:
        console.print(Text.assemble(("error:", "red"), f" --host: {exc}"), soft_wrap=True)
        return exc.status
    try:
        return trio.run(_watch, host, port, match, once, name, console, tls_address or tls_asked(tls), ca_file(ca))
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:  # Ctrl-C while the live view's tasks were running
        interrupted, rest = group.split(KeyboardInterrupt)
        if interrupted is not None and rest is None:
            return 130
        raise
