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
  machine-readable ``code``, and what :func:`~arena.match.replay.replay` needs to judge it again: the line the bot
  sent (``raw``, ``raw_len``), a timeout's times (``ms``); see :class:`LogIncident`;
* ``result`` - the final result.

No wall-clock time or duration is written, so the same seed and the same bot actions
give a byte-identical log (durations live in the database).

Compression: a log whose path ends in ``.gz`` (what tournaments and contests write,
``<match_id>.jsonl.gz``) is one gzip stream (RFC 1952, ``zcat`` reads it) written with no name
and no time in its header, so it too is byte-identical from run to run. Readers
(:func:`read_bytes`, :func:`read_log`, :func:`~arena.match.replay.verify_file`) recognise gzip by its magic bytes,
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

This module writes and reads the lines; :mod:`arena.match.replay` replays and verifies a log,
:mod:`arena.match.views` gives what each reader may see of it.
"""

from __future__ import annotations

import base64
import binascii
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

from arena.games.base import SeenBy
from protocol.messages import GameEvent

_encoder = msgspec.json.Encoder()
_encode = _encoder.encode
_encode_lines = _encoder.encode_lines
_sha256 = hashlib.sha256
_hexlify = binascii.hexlify

BUFFER_BYTES = 8 * 1024
"""Lines are gathered in memory and handed to the file (and its compressor) in pieces of about
this many bytes, at :meth:`MatchLog.flush` and at :meth:`MatchLog.close`: one write per piece
instead of one per line (a line costs the compressor as much in calls as in bytes). Small enough
that compressing a piece, which happens inside the decision whose line filled it, holds the
loop for a fraction of a millisecond: with 64 KB, matches started together filled their pieces
together and each compression took about 1 ms, which set the p99 of 100 matches of thinking
bots (issue 24 item 3). The compressor is never flushed between pieces, so the ``.gz`` bytes do
not depend on this size."""

COMPRESS_LEVEL = 6
"""zlib level of ``.gz`` logs. Measured on 40 seeded Écarté matches of instant bots in the version
2 format: level 3 gives 6.6 KB a match (8.7 KB the largest, over the 8 KB a match may take), level
6 gives 5.2 KB (6.8 KB) for 0.4 ms more CPU per match, still less than version 1 logs took at
level 3 (docs/contests.md, "Disk per match")."""

LOG_VERSION = 2
"""The format written (the header's ``"v"``; a log without it is version 1). Version 2: event
lines without ``seq`` and ``hidden`` (:class:`LogSeen`), one hash per block of lines
(:data:`HASH_EVERY`), each seat's legal form in the header (``"forms"``), and rejected answers,
protocol faults and timeouts with what :func:`~arena.match.replay.replay` needs to judge them again
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
    events, and ``seen_by != [0, 1]``): readers (:func:`read_log`, :func:`~arena.match.replay.verify_bytes`) put
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

    Version 2 logs add what :func:`~arena.match.replay.replay` needs to judge the charge again:

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
        out["raw"] = head.decode("utf-8", "backslashreplace")
        out["raw_b64"] = base64.b64encode(head).decode()
    return out


def raw_bytes(line: dict[str, Any]) -> bytes | None:
    """The bytes an incident line kept of what the bot sent (see :func:`raw_fields`), or None."""
    if line.get("raw_b64") is not None:
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
        if type(objs) is not list:
            objs = list(objs)
        count = len(objs)
        if not count:
            return
        buf = self._buf
        buf += _encode_lines(objs)  # each object's JSON and a newline, in one call
        self._open += count
        if seal or self._open >= HASH_EVERY or self._prev is _GENESIS:
            # the block's lines since the buffer's last hand-over, hashed in one piece: each with
            # its newline but the last, which is hashed without its newline (and hash field)
            h = self._block
            if h is None:  # the whole block in the buffer: hashed in one call
                digest = _hexlify(_sha256(self._prev + buf[self._start:-1]).digest())
            else:
                h.update(buf[self._start:-1])
                digest = _hexlify(h.digest())
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


_FLUSHED = b"\x00\x00\xff\xff"
"""How a deflate stream flushed with ``Z_SYNC_FLUSH`` ends (an empty stored block): a gzip log
whose file ends so was flushed and never closed (a whole one ends with its length, under 4 GB)."""


def finish_logs(directory: str | Path) -> int:
    """Complete the gzip logs (``*.jsonl.gz``) in ``directory`` that were flushed but never closed
    (:func:`complete_gzip`), as their writer's close would have: a match's result is committed
    after its log's last flush and before its close (:class:`arena.match.referee.Referee`), so
    a process killed in between leaves a recorded match with an unfinished file. A resumed
    tournament calls this first: its logs are then byte for byte those of a run never killed (a
    log cut elsewhere belongs to a match not recorded, which is played again and rewritten).
    Each file is replaced whole (a temporary file renamed over it). Returns how many were
    completed; files it cannot read or complete are left as they are."""
    done = 0
    folder = Path(directory)
    if not folder.is_dir():
        return 0
    for path in sorted(folder.glob("*.jsonl.gz")):
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                if f.tell() < len(_FLUSHED):
                    continue
                f.seek(-len(_FLUSHED), 2)
                if f.read() != _FLUSHED:
                    continue
                f.seek(0)
                data = complete_gzip(f.read())
            part = path.with_name(path.name + ".part")
            part.write_bytes(data)
            part.replace(path)
            done += 1
        except (OSError, ChainError):
            continue
    return done


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
