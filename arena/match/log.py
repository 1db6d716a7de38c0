"""JSONL match logs: one JSON object per line, enough to replay a match exactly.

Line kinds (field ``"type"``):

* ``match``  - header: match id, game, seed, rules, time control, bot names per seat;
* ``event``  - a game event with ``seen_by`` (the seats that saw it) and ``hidden``
  (true when not both seats saw it: a hand, a discard, the deck order);
* ``action`` - the action a seat answered (or the referee chose, ``auto``: true) for a decision;
* ``incident`` - an error charged to a seat (timeout, illegal action, protocol error, ...);
* ``result`` - the final result.

No wall-clock time or duration is written, so the same seed and the same bot actions
give a byte-identical log (durations live in the database).

Compression: a log whose path ends in ``.gz`` (what tournaments and contests write,
``<match_id>.jsonl.gz``) is one gzip stream (RFC 1952, ``zcat`` reads it) written with no name
and no time in its header, so it too is byte-identical from run to run. Readers
(:func:`read_bytes`, :func:`read_log`, :func:`verify_file`) recognise gzip by its magic bytes,
whatever the name. The hash chain is over the uncompressed lines.

Tamper evidence: every line is chained to the one before by the SHA-256 (hex) of the previous
line's full hash followed by this line's bytes without its hash field (the first line chains
from :data:`GENESIS`). Each line ends with ``"hash"``: the first :data:`HASH_CHARS` hex digits of
its hash (logs written before this version hold all 64; readers accept both). Changing,
inserting or deleting a line breaks the chain from there on and :func:`verify_chain` names the
first line whose hash does not follow; the full last hash is stored with the result in the
database, so even a rewritten chain is caught given that hash (``arena replay LOG --db
arena.db``).

Why a short hash on each line: a hash is random hex that nothing compresses, and the full 64
digits were two thirds of a compressed log (13.8 KB of an Écarté match of the sample bots, of
which 7.6 KB hashes). The chain itself is unchanged (every full hash is recomputed from the
lines, and the last one is compared with the database's); what a line stores is a check that
finds the first altered line. 32 bits miss an accidental change once in 4 billion lines, and
they cost nothing in protection against a forger: anyone who edits a line can recompute every
hash after it, full or short, and only the last hash, kept apart in the database, catches that.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from arena.games.base import BOTH, SeenBy
from protocol.messages import GameEvent, Rules

_encoder = msgspec.json.Encoder()
_encode = _encoder.encode
_sha256 = hashlib.sha256

BUFFER_BYTES = 64 * 1024
"""Lines are gathered in memory and handed to the file (and its compressor) in pieces of about
this many bytes, at :meth:`MatchLog.flush` and at :meth:`MatchLog.close`: one write per piece
instead of one per line (a line costs the compressor as much in calls as in bytes)."""

COMPRESS_LEVEL = 3
"""zlib level of ``.gz`` logs. Measured on 204 seeded Écarté matches of the sample bots (with
the short hashes, :data:`HASH_CHARS`): level 3 gives 5.0 KB a match for the CPU of the full-hash
logs at level 3 (13.8 KB); level 6 gives 4.4 KB for twice the compression CPU, 9 gives 4.1 KB
for five times (docs/contests.md, "Disk per match")."""

HASH_CHARS = 8
"""Hex digits of each line's hash written in its ``"hash"`` field (32 bits; see the module
docstring). The chain is over the full hashes, and :attr:`MatchLog.last_hash` is full."""


class LogEvent(msgspec.Struct, tag_field="type", tag="event", gc=False):
    """An engine event in the log (``seen_by``: seats that saw it; ``hidden``: not both)."""

    seq: int
    seen_by: list[int]
    hidden: bool
    event: GameEvent


class LogAction(msgspec.Struct, tag_field="type", tag="action", omit_defaults=True, gc=False):
    """A seat's action for one decision; ``auto`` when the referee played it (§E8.1)."""

    seat: int
    decision: str
    action: Any
    auto: bool = False


class LogIncident(msgspec.Struct, tag_field="type", tag="incident", gc=False):
    """An error charged to ``seat`` with its protocol ``code`` and a readable ``detail``."""

    seat: int
    code: str
    detail: str


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
        self._fh = None
        self._raw = None
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
        self._prev = GENESIS.encode()  # the last line's hash, as ASCII hex
        self._buf = bytearray()  # lines not yet handed to the file

    @property
    def last_hash(self) -> str:
        """The hash of the last line written (:data:`GENESIS` before the first)."""
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
        """Append one line (any msgspec-encodable object that encodes to a JSON object),
        chained to the previous line by its ``hash``."""
        self.write_all((obj,))

    def write_all(self, objs: Iterable[Any]) -> None:
        """Append one line per object, in order (see :meth:`write`): the referee's call, once
        per decision."""
        if self._fh is None:
            return  # no file, no chain to keep
        buf = self._buf
        digest = self._prev
        for obj in objs:
            body = _encode(obj)
            digest = _sha256(digest + body).hexdigest().encode()
            buf += body
            del buf[-1]  # the closing brace: the hash field goes before it
            buf += b',"hash":"'
            buf += digest[:HASH_CHARS]
            buf += b'"}\n'
        self._prev = digest
        if len(buf) >= BUFFER_BYTES:
            self._spill()

    def _spill(self) -> None:
        """Hand the gathered lines to the file (errors: see :attr:`error`)."""
        if self._fh is not None and self._buf:
            try:
                self._fh.write(self._buf)
            except OSError as exc:
                self._failed(exc)
        self._buf.clear()

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
        self.write(LogEvent(self.seq, list(seen_by), seen_by != BOTH, event))

    def action(self, seat: int, decision: str, action: Any, auto: bool = False) -> None:
        """Append a seat's action."""
        self.write(LogAction(seat, decision, action, auto))

    def incident(self, seat: int, code: str, detail: str) -> None:
        """Append an error charged to a seat."""
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
_HASH_SUFFIX = re.compile(rb',"hash":"([0-9a-f]{%d}|[0-9a-f]{64})"\}$' % HASH_CHARS)


class ChainError(ValueError):
    """A match log whose hash chain is broken; the message names the first bad line."""


def verify_chain(raw: bytes, expected_last: str | None = None) -> str:
    """Check the hash chain of a log's uncompressed bytes; return the last (full) hash.

    Each line's hash is recomputed from the previous line's full hash and this line; its
    ``"hash"`` field must be that hash or its first :data:`HASH_CHARS` digits. Raises
    :class:`ChainError` naming the first line whose hash does not follow from the previous one,
    or if the last hash differs from ``expected_last`` (the one stored in the database when the
    match was recorded).
    """
    prev = GENESIS.encode()
    lines = raw.splitlines()
    if not lines:
        raise ChainError("the log is empty: not a match log, or one cut before its first line")
    for n, line in enumerate(lines, start=1):
        m = _HASH_SUFFIX.search(line)
        if m is None:
            if n == len(lines) and not raw.endswith(b"\n"):
                raise ChainError(f"the log ends in the middle of line {n}: truncated (a crash mid-match, or a "
                                 "partial copy); the lines before it verify")
            if n == 1 and not line.startswith(b'{"type":"match"'):
                raise ChainError("not a match log: its first line is no match header (a foreign, random or "
                                 "corrupt file)")
            raise ChainError(f"line {n}: no hash (the log is corrupt from there)")
        body = line[: m.start()] + b"}"
        full = _sha256(prev + body).hexdigest().encode()
        if not full.startswith(m.group(1)):
            raise ChainError(f"line {n}: hash does not chain from line {n - 1} (altered, inserted or removed)")
        prev = full
    prev = prev.decode()
    if expected_last is not None and prev != expected_last:
        raise ChainError(f"the log's last hash {prev[:12]}… differs from the recorded {expected_last[:12]}…")
    return prev


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
    """Read a match log back as a list of dicts (one per line, ``hash`` fields removed)."""
    lines = [msgspec.json.decode(line) for line in read_bytes(path).splitlines() if line.strip()]
    for line in lines:
        line.pop("hash", None)
    return lines


class ReplayError(ValueError):
    """A match log that the rules engine does not reproduce; the message names the line."""


def replay(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Re-run the rules engine on a match log and check every line against it.

    ``lines`` as returned by :func:`read_log`. The header's game, seed and config rebuild the
    engine; each ``action`` is applied and every ``event`` line must equal, in order and with
    the same ``seen_by``, the event the engine emits; the ``result`` must match the engine's
    final scores (and winner, for a match played to the target). Returns the result line.
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
            try:
                events = engine.apply(line["action"])
            except ValueError as exc:
                raise ReplayError(f"line {n}: action {line['action']!r} rejected: {exc}") from None
            expected.extend((msgspec.to_builtins(e), list(s)) for e, s in events)
        elif kind == "result":
            result = line
        elif kind != "incident":
            raise ReplayError(f"line {n}: unknown line type {kind!r}")
    if result is None:
        raise ReplayError("the log has no result line")
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


def public_view(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a spectator or a log consumer marked *public* may read of a match log.

    Keeps the header without its ``seed`` (the seed alone would reveal every card), the
    events both seats saw, incidents and the result; drops hidden events (hands, exchanges'
    cards, the deck order) and ``action`` lines (a discard names the cards thrown). The
    public therefore knows the same as, or less than, either seat at every point.
    """
    out = []
    for line in lines:
        kind = line.get("type")
        if kind == "match":
            out.append({k: v for k, v in line.items() if k != "seed"})
        elif kind == "event":
            if not line["hidden"]:
                out.append(line)
        elif kind in ("incident", "result"):
            out.append(line)
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
        return f"  ! {who(line['seat'])}: {line['code']}: {line['detail']}"
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
    for line in lines:
        line.pop("hash", None)
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
        log.write({"type": "match", **header})
        for seat, code, detail in incidents:
            log.incident(seat, code, detail)
        log.write({"type": "result", **result})
    return log.last_hash if log.error is None else None
