"""JSONL match logs: one JSON object per line, enough to replay a match exactly.

Line kinds (field ``"type"``):

* ``match``  - header: format version ``v`` (2; absent in version 1 logs), match id, game, seed,
  rules, time control, bot names per seat, and ``forms``: the legal form each seat asked for at
  ``hello`` (``full`` or ``compact``: what its requests' ``legal`` field held);
* ``event``  - a game event with ``seen_by`` (the seats that saw it); version 1 logs also wrote
  ``seq`` and ``hidden`` (true when not both seats saw it), which readers put back
  (:func:`normalise`);
* ``action`` - the action a seat answered (or the referee chose, ``auto``: true) for a decision;
* ``incident`` - a charge against a seat (timeout, illegal action, protocol error, ...) with its
  machine-readable ``code``, and what :func:`replay` needs to judge it again: the line the bot
  sent (``raw``, ``raw_len``), a timeout's times (``ms``); see :class:`LogIncident`;
* ``result`` - the final result.

No wall-clock time or duration is written, so the same seed and the same bot actions
give a byte-identical log (durations live in the database).

Compression: a log whose path ends in ``.gz`` (what tournaments and contests write,
``<match_id>.jsonl.gz``) is one gzip stream (RFC 1952, ``zcat`` reads it) written with no name
and no time in its header, so it too is byte-identical from run to run. Readers
(:func:`read_bytes`, :func:`read_log`, :func:`verify_file`) recognise gzip by its magic bytes,
whatever the name. The hash chain is over the uncompressed lines.

Tamper evidence: lines are grouped in blocks (one decision's lines, gathered until a block holds
:data:`HASH_EVERY` lines; the header and the result are blocks of their own). A block is chained
to the one before by the SHA-256 (hex) of the previous block's full hash followed by its lines
(the last without its hash field; the first block chains from :data:`GENESIS`), and its last line
ends with ``"hash"``: the first :data:`HASH_CHARS` hex digits of that hash. Version 1 logs made
every line a block (and the oldest held all 64 digits); readers accept all three. Changing,
inserting or deleting a line breaks the chain from its block on and :func:`verify_chain` names
that block's lines; the full last hash is stored with the result in the database, so even a
rewritten chain is caught given that hash (``arena replay LOG --db arena.db``).

Why short hashes, and one per block: a hash is random hex that nothing compresses. The full 64
digits were two thirds of a compressed log (13.8 KB of an Écarté match of the sample bots, of
which 7.6 KB hashes); 8 digits on every line were still a third of an instant bot's. The chain
itself is unchanged (every full hash is recomputed from the lines, and the last one is compared
with the database's); what a block stores is a check that finds the first altered block. 32 bits
miss an accidental change once in 4 billion blocks, and they cost nothing in protection against a
forger: anyone who edits a line can recompute every hash after it, full or short, and only the
last hash, kept apart in the database, catches that.

Size (version 2 against version 1, bytes per match, gzip level :data:`COMPRESS_LEVEL`; measured
by :mod:`arena.tools.log_size` and a seeded tournament): Écarté sample bots (greedy and random)
1.9 KB (3.8 KB), instant bots (the first legal action; the longest matches) 5.4 KB, at most 6.8 KB
(17.7 KB, at most 23.3 KB); Piquet 4.4-4.6 KB (11.6 KB). What made the difference: no ``seq``
(3 KB of an instant bot's Écarté log) and ``hidden`` on event lines, a hash per block rather than
per line, and level 6 rather than 3; writing a log still costs less CPU than before
(docs/contests.md, "Disk per match").
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import msgspec

from arena.games.base import IllegalAction, SeenBy, offer
from protocol.messages import GameEvent, Rules, TimeControl

_encoder = msgspec.json.Encoder()
_encode = _encoder.encode
_sha256 = hashlib.sha256

BUFFER_BYTES = 64 * 1024
"""Lines are gathered in memory and handed to the file (and its compressor) in pieces of about
this many bytes, at :meth:`MatchLog.flush` and at :meth:`MatchLog.close`: one write per piece
instead of one per line (a line costs the compressor as much in calls as in bytes)."""

COMPRESS_LEVEL = 6
"""zlib level of ``.gz`` logs. Measured on 40 seeded Écarté matches of instant bots in the version
2 format: level 3 gives 6.6 KB a match (8.7 KB the largest, over the 8 KB a match may take), level
6 gives 5.2 KB (6.8 KB) for 0.4 ms more CPU per match, still less than version 1 logs took at
level 3 (docs/contests.md, "Disk per match")."""

LOG_VERSION = 2
"""The format written (the header's ``"v"``; a log without it is version 1). Version 2: event
lines without ``seq`` and ``hidden`` (:class:`LogSeen`), one hash per block of lines
(:data:`HASH_EVERY`), each seat's legal form in the header (``"forms"``), and rejected answers,
protocol faults and timeouts with what :func:`replay` needs to judge them again
(:class:`LogIncident`). Readers take both versions."""

RAW_BYTES = 512
"""Bytes of a rejected or faulty line kept in its incident (``raw``; its length in ``raw_len``)."""

HASH_EVERY = 16
"""A block of lines shares one hash (on its last line) once it holds this many lines; a block
ends only at the end of a :meth:`MatchLog.write_all` call (one decision's lines), and a single
:meth:`MatchLog.write` (the header, the result) always ends one. Each hash is 8 bytes of hex
that nothing compresses: one per line was a third of an instant bot's Écarté log."""

HASH_CHARS = 8
"""Hex digits of each line's hash written in its ``"hash"`` field (32 bits; see the module
docstring). The chain is over the full hashes, and :attr:`MatchLog.last_hash` is full."""


class LogEvent(msgspec.Struct, tag_field="type", tag="event", gc=False):
    """An engine event in the log (``seen_by``: seats that saw it; ``hidden``: not both)."""

    seq: int
    seen_by: list[int]
    hidden: bool
    event: GameEvent


class LogSeen(msgspec.Struct, tag_field="type", tag="event", gc=False):
    """An engine event in a version 2 log: ``seen_by`` (the seats that saw it) and the event.
    The ``seq`` and ``hidden`` of :class:`LogEvent` are left out (the line's rank among the
    events, and ``seen_by != [0, 1]``): readers (:func:`read_log`, :func:`verify_bytes`) put
    them back. It also decodes a version 1 event line (those two fields are ignored)."""

    seen_by: list[int]
    event: GameEvent


class LogAction(msgspec.Struct, tag_field="type", tag="action", omit_defaults=True, gc=False):
    """A seat's action for one decision; ``auto`` when the referee played it (§E8.1)."""

    seat: int
    decision: str
    action: Any
    auto: bool = False


class LogIncident(msgspec.Struct, tag_field="type", tag="incident", omit_defaults=True, gc=False):
    """An error charged to ``seat``: ``code`` the machine-readable reason (the protocol error
    code sent to the bot: ``illegal_action``, ``wrong_decision``, ``timeout``, ``bad_json``, ...;
    ``disconnect``, ``not_connected``), ``detail`` a readable sentence.

    Version 2 logs add what :func:`replay` needs to judge the charge again:

    * ``raw``: the line the bot sent, as text (its first :data:`RAW_BYTES` bytes, UTF-8, bytes
      that are not UTF-8 as ``\\xNN`` escapes) and ``raw_len`` its whole length in bytes (newline
      excluded), for a rejected answer and for a protocol fault caused by a line;
    * ``action``: the action as decoded, when the raw line was cut and the action encodes in at
      most :data:`RAW_BYTES` bytes (so a long line around a short action is still re-checked);
    * ``legal``: what the refused answer's request offered (its ``legal`` field as sent: the
      full list, or the compact description), or when that encodes in more than
      :data:`RAW_BYTES` bytes (a Piquet discard's full list), ``legal_sha``: the first 16 hex
      digits of the SHA-256 of its encoding;
    * ``ms``: ``[elapsed, allowed]`` of a timeout (milliseconds: how long the decision was
      charged, and the deadline it had: move time + bank left + grace).
    """

    seat: int
    code: str
    detail: str
    raw: str | None = None
    raw_len: int | None = None
    raw_b64: str | None = None
    action: Any = msgspec.UNSET
    legal: Any = msgspec.UNSET
    legal_sha: str | None = None
    ms: list[int] | None = None


def offered_fields(legal: Any) -> dict[str, Any]:
    """The ``legal`` or ``legal_sha`` field of a refused answer's incident (:class:`LogIncident`)
    for the ``legal`` field its request carried (a list, or a :class:`protocol.messages.Compact`)."""
    encoded = _encode(legal)
    if len(encoded) <= RAW_BYTES:
        return {"legal": legal}
    return {"legal_sha": _sha256(encoded).hexdigest()[:16]}


def raw_fields(line: bytes | bytearray | memoryview) -> dict[str, Any]:
    """The ``raw`` fields of an incident (:class:`LogIncident`) for a line a bot sent (without its
    newline): its first :data:`RAW_BYTES` bytes as text, its length; when those bytes are not
    UTF-8 (or a character is cut), also ``raw_b64``, the exact bytes in base64, and ``raw`` shows
    the others as ``\\xNN``."""
    head = bytes(line[:RAW_BYTES])
    out: dict[str, Any] = {"raw_len": len(line)}
    try:
        out["raw"] = head.decode()
    except UnicodeDecodeError:
        import base64

        out["raw"] = head.decode("utf-8", "backslashreplace")
        out["raw_b64"] = base64.b64encode(head).decode()
    return out


def raw_bytes(line: dict[str, Any]) -> bytes | None:
    """The bytes an incident line kept of what the bot sent (see :func:`raw_fields`), or None."""
    if line.get("raw_b64") is not None:
        import base64

        return base64.b64decode(line["raw_b64"])
    raw = line.get("raw")
    return None if raw is None else raw.encode()


class MatchLog:
    """Writes one match's JSONL log to ``path`` (parent directories are created).

    Use as a context manager or call :meth:`close`. Lines are kept in memory until about
    :data:`BUFFER_BYTES` have gathered, and written at :meth:`flush` and close; a crash loses
    at most the unflushed tail of an unfinished match (which is replayed anyway).

    Storage faults never raise: an ``OSError`` opening, writing, flushing or closing the file
    (a full disk, a read-only path) is kept in :attr:`error`, the file is abandoned and later
    lines are dropped. The referee then aborts the match (see :mod:`arena.store.health`).
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._fh: io.BufferedIOBase | None = None  # what lines are written to: the file, or gzip over it
        self._raw: io.BufferedWriter | None = None  # the file itself
        self.error: OSError | None = None
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self._raw = open(self.path, "wb")  # noqa: SIM115 - closed in close()
                if self.path.suffix == ".gz":
                    self._fh = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0,
                                             compresslevel=COMPRESS_LEVEL)
            except OSError as exc:
                self.error = exc
        self.seq = 0
        self._prev = _GENESIS  # the last block's hash, as ASCII hex
        self._block: Any = None  # the open block's running hash (lines since the last hash), or None
        self._open = 0  # lines in the open block
        self._buf = bytearray()  # lines not yet handed to the file
        self._start = 0  # where the open block's lines not yet hashed begin in _buf

    @property
    def last_hash(self) -> str:
        """The hash of the last block written (:data:`GENESIS` before the first): the whole
        log's once its last line (the result, :meth:`write`) is written."""
        return self._prev.decode()

    def _failed(self, exc: OSError) -> None:
        """Keep the first storage error and abandon the file."""
        if self.error is None:
            self.error = exc
        fh, self._fh = self._fh, None
        raw, self._raw = self._raw, None
        for f in (fh, raw):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass

    def write(self, obj: Any) -> None:
        """Append one line (any msgspec-encodable object that encodes to a JSON object) that
        ends its block: it carries the ``hash`` of the lines since the last hash and itself."""
        self.write_all((obj,), seal=True)

    def write_all(self, objs: Iterable[Any], seal: bool = False) -> None:
        """Append one line per object, in order: the referee's call, once per decision. The
        last line ends the block (carries its hash) if ``seal``, once the block holds
        :data:`HASH_EVERY` lines, or if it is the log's first call (the header); other lines
        carry no hash and are chained by the block's.

        The chain: a block's hash is the SHA-256 (hex) of the previous block's full hash, then
        each of its lines but the last with its newline, then the last line without its hash
        field. A block of one line is therefore hashed as in version 1 logs, where every line
        was a block."""
        if self._fh is None:
            return  # no file, no chain to keep
        buf = self._buf
        count = 0
        for obj in objs:
            buf += _encode(obj)
            buf += b"\n"
            count += 1
        if not count:
            return
        self._open += count
        if seal or self._open >= HASH_EVERY or self._prev is _GENESIS:
            # the block's lines since the buffer's last hand-over, hashed in one piece: each with
            # its newline but the last, which is hashed without its newline (and hash field)
            h = self._block
            if h is None:
                h = _sha256(self._prev)
            h.update(buf[self._start:-1])
            digest = h.hexdigest().encode()
            del buf[-2:]  # the closing brace and the newline: the hash field goes before them
            buf += b',"hash":"%b"}\n' % digest[:HASH_CHARS]
            self._prev = digest
            self._block = None
            self._open = 0
            self._start = len(buf)
        if len(buf) >= BUFFER_BYTES:
            self._spill()

    def _spill(self) -> None:
        """Hand the gathered lines to the file (errors: see :attr:`error`); the lines of the
        open block go into its running hash first."""
        buf = self._buf
        if self._open and self._start < len(buf):
            if self._block is None:
                self._block = _sha256(self._prev)
            self._block.update(buf[self._start:])
        if self._fh is not None and buf:
            try:
                self._fh.write(buf)
            except OSError as exc:
                self._failed(exc)
        buf.clear()
        self._start = 0

    def flush(self) -> None:
        """Push the lines written so far to the operating system (errors: see :attr:`error`)."""
        self._spill()
        if self._fh is not None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._failed(exc)

    def event(self, event: GameEvent | msgspec.Raw, seen_by: SeenBy) -> None:
        """Append an engine event with its visibility; ``event`` may be the event already
        encoded (:func:`protocol.framing.encode_event`), which is then not encoded again."""
        self.seq += 1
        # an event already encoded is written as its bytes (msgspec encodes a Raw as it is); LogSeen's
        # field is typed for what its readers decode, a GameEvent
        self.write(LogSeen(list(seen_by), cast(GameEvent, event)))

    def action(self, seat: int, decision: str, action: Any, auto: bool = False) -> None:
        """Append a seat's action (its own block)."""
        self.write(LogAction(seat, decision, action, auto))

    def incident(self, seat: int, code: str, detail: str) -> None:
        """Append an error charged to a seat (its own block)."""
        self.write(LogIncident(seat, code, detail))

    def close(self) -> None:
        """Flush and close the file (errors: see :attr:`error`)."""
        self._spill()
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()
            except OSError as exc:
                if self.error is None:
                    self.error = exc
        raw, self._raw = self._raw, None
        if raw is not None:
            try:
                raw.close()
            except OSError as exc:
                if self.error is None:
                    self.error = exc

    def __enter__(self) -> MatchLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


GENESIS = "0" * 64
"""The hash the first line of every log chains from."""
_GENESIS = GENESIS.encode()
_HASH_SUFFIX = re.compile(rb',"hash":"([0-9a-f]{%d}|[0-9a-f]{64})"\}$' % HASH_CHARS)


class ChainError(ValueError):
    """A match log whose hash chain is broken; the message names the first bad line."""


def verify_chain(raw: bytes, expected_last: str | None = None) -> str:
    """Check the hash chain of a log's uncompressed bytes; return the last (full) hash.

    Lines are grouped in blocks, each ending on a line with a ``"hash"`` field (every line, in
    version 1 logs; see :meth:`MatchLog.write_all`). Each block's hash is recomputed from the
    previous block's full hash and its lines; the ``"hash"`` field must be that hash or its
    first :data:`HASH_CHARS` digits. Raises :class:`ChainError` naming the first line (or block
    of lines) whose hash does not follow from the one before, a log cut after lines that no hash
    covers yet, or a last hash that differs from ``expected_last`` (the one stored in the
    database when the match was recorded).
    """
    prev = GENESIS.encode()
    if not raw:
        raise ChainError("the log is empty: not a match log, or one cut before its first line")
    lines = raw.split(b"\n")
    whole = not lines[-1]
    if whole:
        lines.pop()
    h = None
    first = 0  # the open block's first line number (0: no block open)
    for n, line in enumerate(lines, start=1):
        m = _HASH_SUFFIX.search(line)
        if m is None:
            if n == len(lines) and not whole:
                raise ChainError(f"the log ends in the middle of line {n}: truncated (a crash mid-match, or a "
                                 "partial copy); the lines before it verify")
            if n == 1:
                if not line.startswith(b'{"type":"match"'):
                    raise ChainError("not a match log: its first line is no match header (a foreign, random or "
                                     "corrupt file)")
                raise ChainError("line 1: no hash (the log is corrupt from there)")
            if h is None:
                h = _sha256(prev)
                first = n
            h.update(line)
            h.update(b"\n")
            continue
        body = line[: m.start()] + b"}"
        if h is None:
            full = _sha256(prev + body).hexdigest().encode()
        else:
            h.update(body)
            full = h.hexdigest().encode()
        if not full.startswith(m.group(1)):
            where = f"line {n}" if h is None else f"lines {first}-{n}"
            raise ChainError(f"{where}: hash does not chain from line {(first or n) - 1} "
                             "(altered, inserted or removed)")
        prev = full
        h = None
        first = 0
    if h is not None:
        raise ChainError(f"lines {first}-{len(lines)} carry no hash: the log was cut before the line that would "
                         "(a crash mid-match, or a partial copy); the lines before them verify")
    last = prev.decode()
    if expected_last is not None and last != expected_last:
        raise ChainError(f"the log's last hash {last[:12]}… differs from the recorded {expected_last[:12]}…")
    return last


def read_bytes(path: str | Path) -> bytes:
    """The uncompressed bytes of a match log, plain or gzip (recognised by its magic bytes). A
    gzip log cut short (a crash mid-match) gives the lines written before the cut. Raises
    ``OSError`` if it cannot be read, :class:`ChainError` if its gzip data is corrupt."""
    return decompress(Path(path).read_bytes())


def decompress(data: bytes) -> bytes:
    """A match log's bytes as written (plain or gzip) uncompressed: see :func:`read_bytes`.
    Raises :class:`ChainError` for gzip data that is corrupt (a bad block, a wrong CRC-32)."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    except zlib.error as exc:
        raise ChainError(f"the log's gzip data is corrupt ({exc})") from None


_EMPTY_FINAL_BLOCK = b"\x03\x00"
"""A deflate stream's last block, empty (fixed Huffman codes, end of block): what zlib writes when
a stream flushed with ``Z_SYNC_FLUSH`` is finished with nothing more to compress."""


def complete_gzip(data: bytes) -> bytes:
    """A gzip log taken after a flush but before its close (a worker's copy committed with the
    result, :meth:`arena.store.sqlite.Store.put_match_log`) made a whole gzip file, as its
    writer's close would have made it: the empty last block and the trailer (CRC-32 and length
    of the lines). Data that is already whole, or not gzip, is returned as it is. Raises
    :class:`ChainError` if it is gzip that cannot be completed (corrupt, or cut mid-block)."""
    if data[:2] != b"\x1f\x8b":
        return data
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        raw = d.decompress(data)
    except zlib.error as exc:
        raise ChainError(f"the log's gzip data is corrupt ({exc})") from None
    if d.eof:
        return data
    whole = data + _EMPTY_FINAL_BLOCK + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF)
    try:
        if zlib.decompress(whole, 16 + zlib.MAX_WBITS) == raw:
            return whole
    except zlib.error:
        pass
    raise ChainError("the log's gzip data stops in the middle of a block: it cannot be completed")


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Read a match log back as a list of dicts (one per line, ``hash`` fields removed; a
    version 2 event line gets back the ``seq`` and ``hidden`` of version 1, see :class:`LogSeen`)."""
    lines = [msgspec.json.decode(line) for line in read_bytes(path).splitlines() if line.strip()]
    return normalise(lines)


def normalise(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lines`` (decoded log lines, changed in place and returned) without their ``hash``
    fields, every event line with its ``seq`` (its rank among the events) and ``hidden``
    (``seen_by`` is not both seats), as version 1 logs wrote them."""
    seq = 0
    for line in lines:
        line.pop("hash", None)
        if line.get("type") == "event":
            seq += 1
            if "seq" not in line:
                line["seq"] = seq
                line["hidden"] = line.get("seen_by") != [0, 1]
    return lines


class ReplayError(ValueError):
    """A match log that the rules engine does not reproduce; the message names the line."""


ENGINE_CODES = ("illegal_action", "wrong_decision")
"""Incident codes of answers the rules refused (:class:`arena.games.base.IllegalAction`)."""

LINE_CODES = ("bad_utf8", "bad_json", "not_object", "missing_type", "unknown_type", "bad_message")
"""Incident codes of a line that is not a valid message (:func:`protocol.framing.decode_client`)."""

STATE_CODES = {"duplicate_answer": "ActionMsg", "not_your_turn": "ActionMsg", "unknown_request": "ActionMsg",
               "unexpected_hello": "Hello"}
"""Incident codes of a valid message sent at the wrong moment, with the message it must be."""

OFFERED_MAX = 40
"""Legal actions listed with a rejection in a replay (``offered``); more are counted instead."""


class _Judge:
    """The charges of a version 2 log, judged again as :func:`replay` meets them (see there)."""

    def __init__(self, header: dict[str, Any], engine: Any) -> None:
        from arena.match.limits import LIMITS

        cfg = header["config"]  # a MatchConfig (arena.match.core), its defaults left out
        self.engine = engine
        self.strict = header.get("v", 1) >= 2
        forms = header.get("forms") or ["full", "full"]
        self.compact = [f == "compact" for f in forms]
        self.on_timeout = cfg.get("on_timeout", LIMITS.on_timeout)
        self.max_strikes = cfg.get("max_strikes", LIMITS.max_strikes)
        self.max_illegal = cfg.get("max_illegal", LIMITS.max_illegal)
        t = msgspec.convert(cfg.get("time", {}), TimeControl)
        self.move_ms = t.move_ms
        self.bank_ms = t.bank_ms
        self.grace_ms = t.grace_ms
        self.illegal = [0, 0]
        self.strikes = [0, 0]
        self.allowed = [self.move_ms + self.bank_ms + self.grace_ms] * 2
        self.ended: tuple[int, str, int] | None = None  # (seat, forfeit reason, line) once a charge ends the match
        self.auto_due: int | None = None  # the seat whose timeout the referee answers with the next line
        self.charges: list[int] = [0, 0]  # incidents per seat
        self.rechecked = 0

    def action(self, n: int, line: dict[str, Any]) -> None:
        """An accepted (or auto) action at line ``n``, before it is applied."""
        if self.ended is not None:
            seat, reason, at = self.ended
            raise ReplayError(f"line {n}: an action after line {at}, which ends the match ({reason} of seat {seat})")
        auto = bool(line.get("auto"))
        if self.strict and auto != (self.auto_due == line["seat"]):
            what = "played by the referee without a timeout" if auto else "of its own where the referee had to play"
            raise ReplayError(f"line {n}: seat {line['seat']} has an action {what}")
        if auto and self.strict and line["action"] != msgspec.to_builtins(self.engine.auto_action()):
            raise ReplayError(f"line {n}: the referee played {line['action']!r} for seat {line['seat']}, "
                              f"not the first legal action {self.engine.auto_action()!r}")
        self.auto_due = None

    def incident(self, n: int, line: dict[str, Any]) -> None:
        """A charge at line ``n``: judged again when the log holds what it needs."""
        seat, code = line["seat"], line["code"]
        if seat not in (0, 1):
            raise ReplayError(f"line {n}: an incident of seat {seat!r}")
        self.charges[seat] += 1
        if not self.strict or self.ended is not None:
            return
        engine = self.engine
        if code in ENGINE_CODES or code == "timeout":
            if engine.over or engine.to_act != seat:
                raise ReplayError(f"line {n}: seat {seat} charged with {code} but no decision of theirs was pending")
        if code in ENGINE_CODES:
            self._illegal(n, line)
            self.illegal[seat] += 1
            if self.illegal[seat] > self.max_illegal:
                self.ended = (seat, "forfeit_illegal", n)
        elif code == "timeout":
            self._timeout(n, line)
        elif code in LINE_CODES or code in STATE_CODES or code == "line_too_long":
            self._line(n, line)
            self.ended = (seat, "forfeit_protocol", n)
        elif code in ("disconnect", "not_connected"):
            self.ended = (seat, "forfeit_disconnect", n)
        else:  # truncated, too_many_errors and the like: a protocol fault that nothing logged can re-check
            self.ended = (seat, "forfeit_protocol", n)

    @staticmethod
    def _offered(offered: Any) -> Any:
        """What a rejection's ``offered`` shows of the legal actions (the first :data:`OFFERED_MAX`)."""
        legal = msgspec.to_builtins(offered)
        if isinstance(legal, list) and len(legal) > OFFERED_MAX:
            return {"first": legal[:OFFERED_MAX], "count": len(legal)}
        return legal

    def _illegal(self, n: int, line: dict[str, Any]) -> None:
        """The answer the referee refused must be refused by the rules, with the same code."""
        from protocol.framing import ProtocolError, decode_client
        from protocol.messages import ActionMsg

        seat, code = line["seat"], line["code"]
        legal = offer(self.engine, self.compact[seat])
        if "legal" in line or "legal_sha" in line:
            sent = line["legal"] if "legal" in line else line["legal_sha"]
            rebuilt = msgspec.to_builtins(legal) if "legal" in line else offered_fields(legal).get("legal_sha")
            if sent != rebuilt:
                raise ReplayError(f"line {n}: seat {seat} was sent {sent!r} as its legal actions, but the engine "
                                  f"offers {rebuilt!r}")
        line["offered"] = self._offered(legal)
        raw = raw_bytes(line)
        if "action" in line:
            action = line["action"]
        elif raw is not None and line.get("raw_len") == len(raw):
            try:
                msg = decode_client(raw)
            except ProtocolError as exc:
                raise ReplayError(f"line {n}: seat {seat}'s answer was refused as {code}, but it is no valid "
                                  f"message ({exc.code})") from None
            if not isinstance(msg, ActionMsg):
                raise ReplayError(f"line {n}: seat {seat}'s line refused as {code} is no action")
            action = msg.action
        elif raw is not None and (line.get("raw_len") or 0) > RAW_BYTES:
            self.rechecked += 1  # an action longer than RAW_BYTES: no legal action is anywhere near
            return
        else:
            raise ReplayError(f"line {n}: seat {seat}'s refused answer ({code}) is not in the log")
        engine = self.engine
        try:
            engine.apply(action)
        except IllegalAction as exc:
            if exc.code != code:
                raise ReplayError(f"line {n}: seat {seat}'s answer {action!r} was refused as {code}, the rules "
                                  f"say {exc.code}") from None
        else:
            raise ReplayError(f"line {n}: the referee refused seat {seat}'s answer {action!r} ({code}), but the "
                              "rules accept it")
        self.rechecked += 1

    def _timeout(self, n: int, line: dict[str, Any]) -> None:
        """A timeout must be over the deadline it had, and that deadline within the time control."""
        seat = line["seat"]
        ms = line.get("ms")
        if ms is None:
            raise ReplayError(f"line {n}: seat {seat}'s timeout does not say its times")
        elapsed, allowed = ms
        least = self.move_ms + self.grace_ms
        if not elapsed >= allowed or not least <= allowed <= self.allowed[seat]:
            raise ReplayError(f"line {n}: seat {seat}'s timeout took {elapsed} ms of {allowed} ms allowed, not "
                              f"a timeout under move {self.move_ms} ms, bank left at most "
                              f"{self.allowed[seat] - least} ms, grace {self.grace_ms} ms")
        self.allowed[seat] = least  # the bank is spent by a timeout
        self.rechecked += 1
        if self.on_timeout == "auto" and self.strikes[seat] < self.max_strikes:
            self.strikes[seat] += 1
            self.auto_due = seat
        else:
            self.ended = (seat, "forfeit_timeout", n)

    def _line(self, n: int, line: dict[str, Any]) -> None:
        """A line refused as no valid message must be refused as such by the framing again."""
        from arena.match.limits import Limits
        from protocol.framing import ProtocolError, decode_client

        seat, code = line["seat"], line["code"]
        raw = raw_bytes(line)
        if raw is None:
            raise ReplayError(f"line {n}: seat {seat}'s line refused as {code} is not in the log")
        size = line.get("raw_len") or 0
        if code == "line_too_long":  # over the server's max_line_bytes, which is at least its lowest setting
            if size <= _least_max_line(Limits):
                raise ReplayError(f"line {n}: seat {seat}'s line of {size} bytes was refused as too long")
            self.rechecked += 1
            return
        if size != len(raw):
            self.rechecked += 1  # cut: what is kept was shown to the author; the code cannot be re-derived
            return
        try:
            msg = decode_client(raw)
        except ProtocolError as exc:
            if code in STATE_CODES or exc.code != code:
                raise ReplayError(f"line {n}: seat {seat}'s line was refused as {code}, the framing says "
                                  f"{exc.code}") from None
        else:
            if type(msg).__name__ != STATE_CODES.get(code):
                raise ReplayError(f"line {n}: seat {seat}'s line was refused as {code}, but it is a valid "
                                  f"{type(msg).__name__} message")
        self.rechecked += 1

    def result(self, result: dict[str, Any]) -> None:
        """The result must be the forfeit the charges call for, and none without one."""
        if not self.strict:
            return
        reason = result["reason"]
        if self.auto_due is not None:
            raise ReplayError(f"seat {self.auto_due} timed out and the referee never played for it")
        if self.ended is not None:
            seat, why, at = self.ended
            if reason == "aborted":
                return
            if reason != why or result["faulty"] != seat or result["winner"] != 1 - seat:
                raise ReplayError(f"line {at} ends the match by {why} of seat {seat}, but the result says {reason} "
                                  f"(faulty {result['faulty']}, winner {result['winner']})")
        elif reason.startswith("forfeit"):
            raise ReplayError(f"the result says {reason} of seat {result['faulty']}, but no incident in the log "
                              "calls for it")


def _least_max_line(limits: Any) -> int:
    """The lowest ``max_line_bytes`` a server may be set to (:class:`arena.match.limits.Limits`)."""
    import typing

    hints = typing.get_type_hints(limits, include_extras=True)["max_line_bytes"]
    least: int = next(m.ge for m in getattr(hints, "__metadata__", ()) if getattr(m, "ge", None) is not None)
    return least


def replay(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Re-run the rules engine on a match log and check every line against it.

    ``lines`` as returned by :func:`read_log`. The header's game, seed and config rebuild the
    engine; each ``action`` is applied and every ``event`` line must equal, in order and with
    the same ``seen_by``, the event the engine emits; the ``result`` must match the engine's
    final scores (and winner, for a match played to the target). Returns the result line.

    In a version 2 log (the header's ``"v"``) every charge is judged again too: an answer
    refused by the rules (``illegal_action``, ``wrong_decision``) is applied to the engine as it
    was then and must be refused with the same code; a line refused by the framing
    (``bad_json``, ...) must be refused again with the same code; a timeout's elapsed time must
    exceed the deadline it had, and that deadline fit the time control; the referee's ``auto``
    action must follow a timeout and be the first legal action; no action may follow the charge
    that ends the match, and a forfeit result must be the one its incidents call for. Each
    re-checked rejection gets ``offered``: what the seat was offered (the full legal list or the
    compact description, rebuilt from the engine and the seat's form in the header's ``forms``).
    The result line gets ``rechecked``: the charges judged again.

    Raises :class:`ReplayError` at the first discrepancy.
    """
    import random

    from arena.games import GAMES

    if not lines or lines[0].get("type") != "match":
        raise ReplayError("line 1: a match log starts with a 'match' header")
    header = lines[0]
    # the engine needs only the rules of the header's config (arena.match.referee.MatchConfig)
    rules = msgspec.convert(header["config"].get("rules", {}), Rules)
    engine = GAMES[header["game"]](rules, random.Random(header["seed"]))
    judge = _Judge(header, engine)
    expected = [(msgspec.to_builtins(e), list(s)) for e, s in engine.start()]
    pos = 0
    result: dict[str, Any] | None = None
    for n, line in enumerate(lines[1:], start=2):
        kind = line.get("type")
        if kind == "event":
            if pos >= len(expected):
                raise ReplayError(f"line {n}: event {line['event']} that the engine never emitted")
            ev, seen = expected[pos]
            if line["event"] != ev or line["seen_by"] != seen:
                raise ReplayError(f"line {n}: log has {line['event']} seen by {line['seen_by']}, engine {ev} {seen}")
            pos += 1
        elif kind == "action":
            if pos != len(expected):
                raise ReplayError(f"line {n}: action before the engine's events were all logged")
            if engine.to_act != line["seat"] or engine.decision != line["decision"]:
                raise ReplayError(f"line {n}: seat {line['seat']} acts on {line['decision']!r} but the engine "
                                  f"waits for seat {engine.to_act} on {engine.decision!r}")
            judge.action(n, line)
            try:
                events = engine.apply(line["action"])
            except ValueError as exc:
                raise ReplayError(f"line {n}: action {line['action']!r} rejected: {exc}") from None
            expected.extend((msgspec.to_builtins(e), list(s)) for e, s in events)
        elif kind == "incident":
            if 0 < pos != len(expected) and judge.strict:  # none logged: the match never began
                raise ReplayError(f"line {n}: incident before the engine's events were all logged")
            judge.incident(n, line)
        elif kind == "result":
            result = line
        else:
            raise ReplayError(f"line {n}: unknown line type {kind!r}")
    if result is None:
        raise ReplayError("the log has no result line")
    judge.result(result)
    result["rechecked"] = judge.rechecked
    if len(lines) == 2 + sum(line.get("type") == "incident" for line in lines) and result["reason"] in NOT_PLAYED:
        if result["scores"] != [0, 0]:
            raise ReplayError(f"a match never started has scores {result['scores']}")
        return result  # ended before its first event: a bot never connected (see :func:`write_unplayed`)
    if pos != len(expected):
        raise ReplayError(f"the log stops before the engine's event {expected[pos][0]}")
    if result["scores"] != engine.scores or result["manches"] != engine.manches:
        raise ReplayError(f"result scores {result['scores']} but the engine has {engine.scores}")
    if result["reason"] == "target" and (not engine.over or result["winner"] != engine.winner):
        raise ReplayError(f"result winner {result['winner']} but the engine's is {engine.winner}")
    return result


PUBLIC_DETAIL = ("timeout", "disconnect", "not_connected", "too_many_errors")
"""Incident codes whose ``detail`` anyone may read (it names no card); the others' details
(an illegal action's names the cards in the hand) are the seat's own."""

_OWN_FIELDS = ("raw", "raw_len", "raw_b64", "action", "offered", "legal", "legal_sha")
"""An incident's fields only its own seat's author may see: what the bot sent, what it was offered."""


def incident_for_others(line: dict[str, Any]) -> dict[str, Any]:
    """An incident as anyone but its seat may see it: its seat and code, the detail only for
    :data:`PUBLIC_DETAIL` codes, never what the bot sent."""
    out = {k: v for k, v in line.items() if k not in _OWN_FIELDS}
    if out.get("code") not in PUBLIC_DETAIL:
        out["detail"] = ""
    return out


def result_for_others(line: dict[str, Any]) -> dict[str, Any]:
    """The result line as anyone but its faulty seat may see it: the detail of a forfeit for an
    illegal action (the rule's message names cards in the hand) cut to the bot's name and code."""
    if line.get("reason") != "forfeit_illegal":
        return line
    return {**line, "detail": ": ".join(str(line.get("detail", "")).split(": ")[:2])}


def public_view(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a spectator or a log consumer marked *public* may read of a match log.

    Keeps the header without its ``seed`` (the seed alone would reveal every card), the
    events both seats saw, incidents (seat and code; see :func:`incident_for_others`) and the
    result (a forfeit's detail without cards, :func:`result_for_others`); drops hidden events
    (hands, exchanges' cards, the deck order) and ``action`` lines (a discard names the cards
    thrown). The public therefore knows the same as, or less than, either seat at every point.
    """
    out = []
    for line in lines:
        kind = line.get("type")
        if kind == "match":
            out.append({k: v for k, v in line.items() if k != "seed"})
        elif kind == "event":
            if not line["hidden"]:
                out.append(line)
        elif kind == "incident":
            out.append(incident_for_others(line))
        elif kind == "result":
            out.append(result_for_others(line))
    return out


def seat_view(lines: list[dict[str, Any]], seat: int) -> list[dict[str, Any]]:
    """What the author of the bot in ``seat`` may read of a match log (``lines`` as
    :func:`read_log` or :func:`verify_bytes` give them): the header without its ``seed``, the
    events ``seat`` saw, its own actions, its own incidents whole (what its bot sent, what it
    was offered: ``raw``, ``action``, ``offered``), the opponent's incidents as the public sees
    them (no raw answer, no detail naming cards), and the result. Never the opponent's hidden
    events, actions or answers. ``ValueError`` for a seat other than 0 or 1."""
    if seat not in (0, 1):
        raise ValueError(f"seat is 0 or 1, not {seat!r}")
    out = []
    for line in lines:
        kind = line.get("type")
        if kind == "match":
            out.append({k: v for k, v in line.items() if k != "seed"})
        elif kind == "event":
            if seat in line["seen_by"]:
                out.append(line)
        elif kind in ("action", "incident"):
            if line.get("seat") == seat:
                out.append(line)
            elif kind == "incident":
                out.append(incident_for_others(line))
        elif kind == "result":
            out.append(line if line.get("faulty") == seat else result_for_others(line))
    return out


def describe(line: dict[str, Any], names: list[str]) -> str:
    """One log line as a readable sentence (``names``: bot names per seat)."""
    kind = line.get("type")

    def who(seat: Any) -> str:
        return names[seat] if isinstance(seat, int) and 0 <= seat < len(names) else str(seat)

    if kind == "match":
        seed = line.get("seed", "hidden")
        return f"match {line['match_id']}: {line['game']}, {who(0)} (seat 0) v {who(1)} (seat 1), seed {seed}"
    if kind == "action":
        auto = " (played by the referee)" if line.get("auto") else ""
        return f"  {who(line['seat'])} -> {line['decision']}: {line['action']}{auto}"
    if kind == "incident":
        text = f"  ! {who(line['seat'])}: {line['code']}" + (f": {line['detail']}" if line.get("detail") else "")
        if line.get("raw") is not None:
            size = line.get("raw_len", 0)
            cut = f", the first {RAW_BYTES} shown" if size > len(raw_bytes(line) or b"") else ""
            text += f"\n      it sent ({size:,} bytes{cut}): {line['raw']}"
        if "offered" in line:
            offered = line["offered"]
            if isinstance(offered, dict) and "count" in offered:
                offered = f"{offered['count']} actions, the first {OFFERED_MAX}: {offered['first']}"
            text += f"\n      it was offered: {offered}"
        return text
    if kind == "result":
        w = "nobody" if line["winner"] is None else who(line["winner"])
        return f"result: {w} wins ({line['reason']}), scores {line['scores']}"
    ev = line["event"]
    k = ev["kind"]
    seen = ", ".join(who(s) for s in line["seen_by"]) or "nobody"
    mark = f"  [hidden: seen by {seen}]" if line.get("hidden") else ""
    if k == "deal_start":
        trump = f", turn-up {ev['turn_up']} (trump {ev['trump']})" if ev.get("turn_up") else ""
        text = f"deal {ev['deal']}: {who(ev['dealer'])} deals{trump}, stock {ev['stock']}"
    elif k == "hand":
        text = f"  {who(ev['seat'])} holds {' '.join(ev['cards'])}"
    elif k == "deck":
        text = f"  pack {' '.join(ev['cards'])}"
    elif k == "call":
        text = f"  {who(ev['seat'])}: {ev['call']}"
    elif k == "exchange":
        cards = f" ({' '.join(ev['discarded'])} for {' '.join(ev['drawn'])})" if ev.get("discarded") is not None else ""
        text = f"  {who(ev['seat'])} exchanges {ev['count']}{cards}, stock {ev['stock']}"
    elif k == "play":
        text = f"  {who(ev['seat'])} plays {ev['card']}"
    elif k == "trick":
        text = f"  trick {ev['trick']} to {who(ev['winner'])}: {' '.join(ev['cards'])}"
    elif k == "score":
        detail = f" ({ev['detail']})" if ev.get("detail") else ""
        text = f"  {who(ev['seat'])} scores {ev['points']} for {ev['reason']}{detail}: {ev['scores']}"
    elif k == "king":
        text = f"  {who(ev['seat'])} {'announces' if ev.get('announced', True) else 'does not announce'} {ev['card']}"
    elif k == "deal_end":
        text = f"  end of deal {ev['deal']}: tricks {ev['tricks']}, points {ev['points']}, scores {ev['scores']}"
    else:
        text = f"  {k}: " + ", ".join(f"{a}={b}" for a, b in ev.items() if a != "kind")
    return text + mark


def verify_file(path: str | Path, expected_last: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Verify a match log file: its hash chain (and last hash, if given) then an engine replay
    (:func:`replay`). Returns ``(lines, result line)``; raises :class:`ChainError` or
    :class:`ReplayError` (also for a chained file that is not a match log: deep JSON, fields
    missing or of the wrong type), never anything else but ``OSError``."""
    return verify_bytes(read_bytes(path), expected_last)


def verify_bytes(raw: bytes, expected_last: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """:func:`verify_file` of a log's uncompressed bytes (:func:`decompress`), wherever they were
    read (a file, an archive bundle, the database)."""
    verify_chain(raw, expected_last)
    try:  # the hash chain is no signature: anyone can chain a hostile file, and it gets a clear error too
        lines = [msgspec.json.decode(line) for line in raw.splitlines() if line.strip()]
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ReplayError(f"a line is not JSON (or is nested too deep): {exc}") from None
    if not all(isinstance(line, dict) for line in lines):
        raise ReplayError("every line of a match log is a JSON object")
    normalise(lines)
    try:
        return lines, replay(lines)
    except (KeyError, IndexError, TypeError, AttributeError, msgspec.ValidationError) as exc:
        raise ReplayError(f"malformed match log: {type(exc).__name__}: {' '.join(str(exc).split())}") from None


NOT_PLAYED = ("forfeit_disconnect", "aborted")
"""Result reasons of a match that can end before its first event (a bot never connected)."""


def write_unplayed(path: str | Path, header: dict[str, Any], incidents: list[tuple[int, str, str]],
                   result: dict[str, Any]) -> str | None:
    """Write the log of a match that never started (a bot not connected): its header (as the
    referee writes it: ``type`` ``match``, match id, game, seed, bots, config), one incident per
    absent seat ``(seat, code, detail)``, and the result line. Returns the last hash, or None
    if the log could not be written (:attr:`MatchLog.error`)."""
    with MatchLog(path) as log:
        log.write({"type": "match", "v": LOG_VERSION, **header})
        for seat, code, detail in incidents:
            log.incident(seat, code, detail)
        log.write({"type": "result", **result})
    return log.last_hash if log.error is None else None
