"""Newline framing and decoding, with a maximum line length.

One JSON object per line, UTF-8, ``\\n`` terminated (a trailing ``\\r`` is tolerated). A line
longer than ``max_line`` bytes is rejected as soon as the reader holds more than ``max_line``
bytes without a newline, so a hostile peer can never make us buffer more than
``max_line + chunk`` bytes.

Every decoding failure raises :class:`ProtocolError` with one of the codes listed in
``docs/protocol.md`` (``bad_utf8``, ``bad_json``, ``not_object``, ``missing_type``,
``unknown_type``, ``bad_message``, ``line_too_long``), and nothing else: the whole line must be
UTF-8 (also inside fields the receiver ignores), and JSON nested deeper than the decoder can
follow (:data:`MAX_DEPTH` levels is always accepted; a few hundred is the limit) is ``bad_json``
rather than a ``RecursionError``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol.messages import ClientMessage, ErrorCode, ServerMessage

DEFAULT_MAX_LINE = 64 * 1024
"""Default maximum line length in bytes, newline excluded (design.md: 64 KiB)."""

_KNOWN_CLIENT_TYPES = {"hello", "action", "list", "subscribe", "unsubscribe", "bet"}
_KNOWN_SERVER_TYPES = {
    "welcome", "match_start", "event", "request", "match_end", "error", "goodbye",
    "matches", "watch", "spectate", "reveal", "watch_end", "betting", "bet_placed", "bet_settled",
}


class ProtocolError(Exception):
    """A line that is not a valid message. ``code`` is the protocol error code; ``fatal`` is
    True when the connection cannot continue (the stream can no longer be split into lines)."""

    def __init__(self, code: ErrorCode, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fatal = fatal


MAX_DEPTH = 64
"""Nesting depth of JSON arrays and objects every decoder here accepts (a message needs 4).
Deeper lines are refused as ``bad_json`` once the decoder's recursion limit is reached, never
with an exception other than :class:`ProtocolError`."""

_encoder = msgspec.json.Encoder()
_client_decoder: msgspec.json.Decoder[ClientMessage] = msgspec.json.Decoder(ClientMessage)
_server_decoder: msgspec.json.Decoder[ServerMessage] = msgspec.json.Decoder(ServerMessage)
_any_decoder = msgspec.json.Decoder()


def encode(msg: msgspec.Struct) -> bytes:
    """Encode one message as a JSON line (bytes ending in ``\\n``)."""
    return _encoder.encode(msg) + b"\n"


def encode_event(event: msgspec.Struct) -> msgspec.Raw:
    """A game event encoded once, for every place it goes: the match log
    (:meth:`arena.match.log.MatchLog.event`), the spectators
    (:meth:`arena.net.spectate.SpectatorHub.event`, its ``raw``) and each seat's ``event``
    message (``EventMsg(event=raw)``). msgspec copies a :class:`msgspec.Raw` into the line it
    encodes instead of encoding the struct again; the bytes are the same."""
    return msgspec.Raw(_encoder.encode(event))


append_json = _encoder.encode_into
"""``append_json(msg, buf, -1)`` appends ``msg`` as JSON to ``buf``, without the newline (the
caller adds it): :func:`encode_into` one Python call shorter, for loops run per decision."""


def encode_into(msg: msgspec.Struct, buf: bytearray) -> None:
    """Append one message as a JSON line to ``buf`` (no intermediate copy)."""
    _encoder.encode_into(msg, buf, -1)
    buf += b"\n"


def _utf8_error(line: bytes) -> ProtocolError | None:
    """``bad_utf8`` if any byte of ``line`` is not UTF-8 (msgspec skips unknown fields unread)."""
    if line.isascii():
        return None
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ProtocolError("bad_utf8", f"line is not valid UTF-8 (byte {exc.start})")
    return None


def _too_deep() -> ProtocolError:
    return ProtocolError("bad_json", "line is not JSON the server accepts: arrays and objects nested too deep")


def _classify(line: bytes, known: set[str], err: Exception) -> ProtocolError:
    bad = _utf8_error(line)
    if bad is not None:
        return bad
    if isinstance(err, RecursionError):
        return _too_deep()
    try:
        value: Any = _any_decoder.decode(line)
    except msgspec.DecodeError as exc:
        return ProtocolError("bad_json", f"line is not JSON: {exc}")
    except RecursionError:
        return _too_deep()
    if not isinstance(value, dict):
        return ProtocolError("not_object", f"a message is a JSON object, got {type(value).__name__}")
    if "type" not in value:
        return ProtocolError("missing_type", 'a message needs a "type" field')
    if not isinstance(value["type"], str) or value["type"] not in known:
        shown = repr(value["type"])[:40]
        return ProtocolError("unknown_type", f"unknown message type {shown}")
    return ProtocolError("bad_message", f"invalid {value['type']!r} message: {err}")


def decode_client(line: bytes) -> ClientMessage:
    """Decode one line (without its newline) sent by a bot or spectator.

    Raises :class:`ProtocolError` (non-fatal) naming what is wrong, and never anything else
    (invalid UTF-8 anywhere in the line is ``bad_utf8``, nesting too deep ``bad_json``).
    """
    try:
        msg = _client_decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError) as exc:
        raise _classify(line, _KNOWN_CLIENT_TYPES, exc) from None
    bad = _utf8_error(line)
    if bad is not None:
        raise bad
    return msg


def decode_server(line: bytes) -> ServerMessage:
    """Decode one line sent by the server (used by tests, benchmarks and ``arena doctor``)."""
    try:
        msg = _server_decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError) as exc:
        raise _classify(line, _KNOWN_SERVER_TYPES, exc) from None
    bad = _utf8_error(line)
    if bad is not None:
        raise bad
    return msg


REFUSED_KEEP = 512
"""Bytes of a refused line a :class:`LineReader` keeps (:attr:`LineReader.refused`)."""


class LineReader:
    """Split a byte stream into lines, never holding more than ``max_line + chunk`` bytes.

    ``stream`` is anything with ``async receive_some(max_bytes) -> bytes`` (a trio stream).
    :meth:`read_line` returns the next line without its ``\\n`` (and without a trailing
    ``\\r``), ``None`` at a clean end of stream, and raises :class:`ProtocolError` (fatal)
    with code ``line_too_long`` when a line exceeds ``max_line`` bytes, or ``truncated`` when
    the stream ends inside a line.
    """

    def __init__(self, stream: Any, max_line: int = DEFAULT_MAX_LINE, chunk: int = 65536) -> None:
        self.stream = stream
        self.max_line = max_line
        self.chunk = chunk
        self._buf = bytearray()
        self._scan = 0  # bytes of _buf already known to hold no newline
        self.refused: tuple[bytes, int] = (b"", 0)
        """The line this reader last refused (``line_too_long``, ``truncated``): its first
        :data:`REFUSED_KEEP` bytes and the number of its bytes received, for the match log."""

    async def read_line(self) -> bytes | None:
        """Return the next line, ``None`` at end of stream; see the class docstring."""
        while True:
            line = self.pop_line()
            if line is not None:
                return line
            data = await self.stream.receive_some(self.chunk)
            if not data:
                self.end()
                return None
            self._buf += data

    def pop_line(self) -> bytes | None:
        """The next complete line already buffered (without ``\\n``, trailing ``\\r`` removed), or
        None if more bytes are needed (hand them to :meth:`feed`). Raises :class:`ProtocolError`
        ``line_too_long`` (fatal). For readers that receive the bytes themselves."""
        buf = self._buf
        if not buf:  # the usual case once a read's lines are taken
            self._scan = 0
            return None
        nl = buf.find(b"\n", self._scan)
        if nl >= 0:
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            self._scan = 0
            if nl > self.max_line:
                self.refused = (line[:REFUSED_KEEP], nl)
                raise ProtocolError("line_too_long", f"line longer than {self.max_line} bytes", fatal=True)
            if line.endswith(b"\r"):
                line = line[:-1]
            return line
        self._scan = len(buf)
        if self._scan > self.max_line:
            self.refused = (bytes(buf[:REFUSED_KEEP]), len(buf))
            buf.clear()
            raise ProtocolError("line_too_long", f"line longer than {self.max_line} bytes", fatal=True)
        return None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet taken as lines."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray) -> None:
        """Append bytes received (see :meth:`pop_line`)."""
        self._buf += data

    def end(self) -> None:
        """The stream ended: raises :class:`ProtocolError` ``truncated`` (fatal) if it ended
        inside a line."""
        if self._buf:
            self.refused = (bytes(self._buf[:REFUSED_KEEP]), len(self._buf))
            self._buf.clear()
            raise ProtocolError("truncated", "connection closed inside a line", fatal=True)
