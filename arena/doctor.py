"""``arena doctor``: the conformance check a bot author runs before submitting a bot.

``arena doctor path/to/bot.toml`` launches the bot from its manifest against a private arena and
prints a pass/fail table, one row per check, quoting the exact line that went wrong.

How it works:

* **A private arena.** An :class:`~arena.server.ArenaServer` on a free loopback port with an
  in-memory :class:`~arena.store.Store`; the bot is registered with a fresh token and started
  with :func:`arena.launcher.launch` (its output captured in a temporary directory, whose tail is
  shown when something fails).
* **A recording proxy.** The bot is told to connect to a small TCP proxy that relays bytes to
  the server unchanged in the bot-to-server direction and records every line in both
  directions with a timestamp. The proxy is also how the doctor probes the bot's robustness: it
  adds unknown fields to the server's messages of one match, sends messages of an unknown type,
  and a 1 MiB burst of them between two matches (a bot must keep reading).
* **Scripted situations.** Each situation is a real match refereed by
  :class:`~arena.referee.Referee` over TCP between the bot and a scripted opponent (an in-process
  trio client registered as a second bot). The first deal of each match comes from a stacked
  pack handed to the engine (``packs``, :func:`arena.games.base.take_pack`: nothing global is
  replaced); later deals come from the engine's seeded shuffle. The first match is played to the target; once one
  match has been, the opponent resigns each later match at the start of its second deal (with
  an action that is not legal), so the bot also meets ``match_end`` with a forfeit. The hands
  and the opponent's moves are chosen so that the bot meets every decision kind and every play
  obligation whatever it plays (``tests/test_doctor.py`` checks this on every path). Some
  situations (its own discards, a short stock) can only be reached if the bot chooses to
  exchange; the opponent then steers the stock size, trying again a few times, and a situation
  the bot's legal choices avoided is reported as ``SKIP``, not as a failure.
* **Verdicts.** Every request the bot received is matched with its answer and with the
  server's ``error`` about it, if any. The server is the authority (an illegal action is what
  the referee rejected), the doctor adds what it expected.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import trio
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.cards import PACK_32
from arena.clock import Clock
from arena.formats.chouette import legal_bids
from arena.games.base import IllegalAction, check_choice, quote
from arena.games.ecarte import RANK
from arena.launcher import BotProcess, Manifest, launch, load_manifest
from arena.matchlog import MatchLog
from arena.referee import MatchConfig, Referee
from arena.seat import Seat, SeatFault, SendFailed
from arena.server import ArenaServer, ServerConfig
from arena.store import Store
from protocol.framing import LineReader, ProtocolError, decode_client
from protocol.messages import ActionMsg, AuctionView, Compact, Goodbye, Hello, Rules, TimeControl

OPPONENT = "doctor-opponent"
CONNECT_TIMEOUT_S = 20.0
"""As in a tournament (docs/protocol.md §3.3): the bot must connect within 20 s."""
LINGER_S = 3.0
"""After ``goodbye``: how long the bot may stay connected before the doctor closes its side."""
EXIT_WAIT_S = 2.0
"""After the connection is closed: how long the bot may take to exit."""
MATCH_CAP_S = 60.0
"""Upper bound of one scripted match (a bot near the time limit on every move)."""
BURST_BYTES = 1 << 20
"""Unknown-type lines sent between two matches: more than the socket buffers hold, so a bot
that stops reading cannot take them all."""
BURST_TIMEOUT_S = 10.0
RETRY_ROUNDS = 30
RETRY_BUDGET_S = 8.0
"""Extra matches for the exchange situations: at most this many rounds, started within this
many seconds of the first match."""
SNIPPET = 400
"""Longest quote of a wire line in the report (characters)."""
LONG_LINE_BYTES = 256 * 1024
"""The long-line probe: one request padded with an unknown field to this many bytes (newline
included), more than the longest line the arena sends (a full-form Piquet discard request
with 36 cards, about 131 KB), so a bot whose read buffer has a fixed size fails here and not
in a contest."""

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


# --------------------------------------------------------------------------- what the checks are

SITUATIONS: list[tuple[str, str, bool]] = [
    # key, title, forced (the scripted deal reaches it whatever the bot chooses)
    ("propose", "propose (elder)", True),
    ("respond", "respond (dealer)", True),
    ("discard_elder", "discard as elder (1..k)", False),
    ("discard_dealer", "discard as dealer (0..k)", False),
    ("king_elder", "king announcement as elder", True),
    ("king_dealer", "king announcement as dealer", True),
    ("lead", "play: lead", True),
    ("follow_win", "play: follow and win", True),
    ("follow_low", "play: follow, cannot win", True),
    ("trump", "play: trump when void", True),
    ("any", "play: anything (void, no trump)", True),
    ("short", "short stock (k < 5)", False),
    ("skip", "dealer's discard skipped", False),
    ("bid", "chouette bid (outside a match)", True),
]
PIQUET_SITUATIONS: list[tuple[str, str, bool]] = [
    # piquet.md §P4-§P6; the discard in the form the bot asked for at hello (protocol.md §8.13)
    ("pq_discard_elder", "Piquet discard as elder (1..5)", True),
    ("pq_discard_younger", "Piquet discard as younger (0..talon)", True),
    ("pq_36", "Piquet discard, 36 cards (elder 1..8)", True),
    ("pq_look", "Piquet look (elder took fewer than his maximum)", False),
    ("pq_expose", "Piquet expose (cards left in the talon)", False),
    ("pq_lead", "Piquet play: lead", True),
    ("pq_follow", "Piquet play: follow suit", True),
    ("pq_void", "Piquet play: void in the suit led", False),
    ("bid", "chouette bid (outside a match)", True),
]
PLAYED_OUT = frozenset({"target", "rubicon", "cent", "draw"})
"""Match-end reasons of a match played to its end (docs/protocol.md §12)."""
GLOBAL_CHECKS: list[tuple[str, str]] = [
    ("full_match", "full match to the target"),
    ("in_time", "answers in time"),
    ("legal", "answers are legal"),
    ("ids", "answers carry the request id"),
    ("once", "one answer per request"),
    ("wellformed", "well-formed lines"),
    ("reading", "keeps reading"),
    ("fields", "unknown fields ignored"),
    ("long", "reads long lines"),
    ("types", "unknown message types ignored"),
    ("goodbye", "goodbye"),
]


@dataclass
class Check:
    """One row of the report."""

    key: str
    title: str
    status: str
    details: str


@dataclass
class Report:
    """The outcome of a doctor run: the checks in order, the bot's output tail, the wire."""

    bot: str
    manifest: str
    checks: list[Check]
    log_tail: str = ""
    log_dir: str = ""
    seconds: float = 0.0
    transcript: list[WireLine] = field(default_factory=list)
    secret: str = ""  # the bot's token, masked when the transcript is printed

    @property
    def ok(self) -> bool:
        """True when no check failed (a skipped check is not a failure)."""
        return all(c.status != FAIL for c in self.checks)

    def check(self, key: str) -> Check:
        """The check named ``key`` (raises ``KeyError``)."""
        for c in self.checks:
            if c.key == key:
                return c
        raise KeyError(key)

    def summary(self) -> str:
        """``N checks, M passed`` (and the failed and skipped counts when there are any)."""
        n = len(self.checks)
        passed = sum(c.status == PASS for c in self.checks)
        failed = sum(c.status == FAIL for c in self.checks)
        skipped = sum(c.status == SKIP for c in self.checks)
        text = f"{n} checks, {passed} passed"
        if failed:
            text += f", {failed} failed"
        if skipped:
            text += f", {skipped} not exercised"
        return text


# --------------------------------------------------------------------------- the wire, recorded


@dataclass
class WireLine:
    """One line between the bot and the server. ``src``: ``bot`` (bot to server), ``server``
    (server to bot, possibly with fields added by the doctor) or ``doctor`` (a line the doctor
    sent to the bot on its own). ``t`` is trio time; ``conn`` numbers the bot's connections."""

    n: int
    t: float
    src: str
    raw: bytes
    msg: dict[str, Any] | None
    conn: int


@dataclass
class BotLine:
    """A line the bot sent, classified. ``kind``: ``hello``, ``answer``, ``duplicate``,
    ``late``, ``wrong_id``, ``malformed``, ``unexpected_hello``, ``after_goodbye``."""

    line: WireLine
    kind: str
    problem: str = ""
    sent_id: int | None = None
    server_error: WireLine | None = None


@dataclass
class Req:
    """A request the bot received, its situation tags, and what became of it."""

    id: int
    match_id: str
    decision: str
    legal: list[Any] | dict[str, Any]  # a dict in the compact form (docs/protocol.md §8.13)
    state: dict[str, Any]
    time_ms: int
    line: WireLine
    tags: list[str]
    probes: list[str] = field(default_factory=list)
    answer: BotLine | None = None
    errors: list[WireLine] = field(default_factory=list)
    ended: dict[str, Any] | None = None  # match_end that arrived while it was pending
    lost: str = ""  # the connection ended while it was pending

    @property
    def answer_ms(self) -> float | None:
        if self.answer is None:
            return None
        return (self.answer.line.t - self.line.t) * 1000

    def error_codes(self) -> list[str]:
        return [e.msg.get("code", "?") for e in self.errors if e.msg]

    def answered_legally(self) -> bool:
        """The doctor's own check of the answer: an element of ``legal`` (a discard as a set)."""
        return self.answer is not None and _is_legal((self.answer.line.msg or {}).get("action"), self.legal)

    def failure(self) -> tuple[str, str] | None:
        """``(kind, description)`` when this request went wrong, else None. ``kind`` is the
        global check it belongs to (``in_time``, ``legal``) or ``answer`` (no valid answer:
        the cause is reported by the check of the line that caused it, or the bot left)."""
        codes = self.error_codes()
        if "timeout" in codes:
            return "in_time", self.describe("no answer within the time limit")
        if "illegal_action" in codes or "wrong_decision" in codes:
            return "legal", self.describe("illegal answer")
        if self.answer is not None and not self.answered_legally():
            return "legal", self.describe("illegal answer")
        if self.answer is None:
            if self.ended is not None:
                end = self.ended
                why = f"the match ended while it was pending ({end.get('reason')}: {end.get('detail')})"
                return "answer", self.describe(f"no valid answer: {why}")
            if self.lost:
                return "answer", self.describe(f"no answer: {self.lost}")
            return "answer", self.describe("no answer")
        return None

    def describe(self, headline: str) -> str:
        deal = self.state.get("deal", "?")
        parts = [
            f"{headline}: request {self.id} ({self.decision}, {self.match_id} deal {deal}, "
            f"legal {_short_json(self.legal)})"
        ]
        if self.answer is not None:
            ms = self.answer_ms or 0.0
            parts.append(f"bot sent: {_quote(self.answer.line.raw)} after {ms:.0f} ms")
        else:
            parts.append("bot sent: nothing")
        for err in self.errors:
            parts.append(f"server: {_error_text(err)}")
        parts.append(
            f"expected: one action with id {self.id}, one of legal, within {self.time_ms} ms"
        )
        return "\n".join(parts)


@dataclass
class MatchRec:
    """One match as the bot saw it."""

    match_id: str
    seat: int
    start: WireLine
    deals: int = 0
    end: dict[str, Any] | None = None
    requests: int = 0


def _short_json(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + f"… ({len(raw)} bytes)"


def _error_text(err: WireLine) -> str:
    m = err.msg or {}
    fatal = " (fatal)" if m.get("fatal") else ""
    return f"error {m.get('code')}: {m.get('message')}{fatal}"


def _is_legal(action: Any, legal: list[Any] | dict[str, Any]) -> bool:
    """Is ``action`` one of ``legal``? A discard is compared as a set of distinct cards; a
    compact ``legal`` (docs/protocol.md §8.13) is checked against its description."""
    if isinstance(legal, dict):
        try:
            check_choice(action, msgspec.convert(legal, Compact).choose, "", "", "the bot")
        except (IllegalAction, msgspec.ValidationError):
            return False
        return True
    if isinstance(action, list):
        if not all(isinstance(c, str) for c in action) or len(set(action)) != len(action):
            return False
        want = sorted(action)
        return any(isinstance(opt, list) and sorted(opt) == want for opt in legal)
    return isinstance(action, (str, int)) and not isinstance(action, bool) and action in legal


def classify(request: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """The situation tags of a request (see :data:`SITUATIONS`), from its state and the events
    sent in front of it."""
    decision = request.get("decision")
    state = request.get("state") or {}
    seat, elder = state.get("seat"), state.get("elder")
    tags: list[str] = []
    if decision == "bid":
        return ["bid"]
    if state.get("game") == "piquet":
        return classify_piquet(decision, state)
    if decision == "propose":
        tags.append("propose")
    elif decision == "respond":
        tags.append("respond")
    elif decision == "discard":
        tags.append("discard_elder" if seat == elder else "discard_dealer")
        if state.get("stock", 21) < 5:
            tags.append("short")
    elif decision == "king":
        tags.append("king_elder" if seat == elder else "king_dealer")
    elif decision == "play":
        trick = state.get("trick") or []
        hand = state.get("hand") or []
        if not trick:
            tags.append("lead")
        else:
            lead = trick[0]["card"]
            same = [c for c in hand if c[1] == lead[1]]
            if same:
                higher = any(RANK[c[0]] > RANK[lead[0]] for c in same)
                tags.append("follow_win" if higher else "follow_low")
            elif any(c[1] == state.get("trump") for c in hand):
                tags.append("trump")
            else:
                tags.append("any")
    if seat != elder and decision != "discard":
        for ev in events:
            if ev.get("kind") == "exchange" and ev.get("seat") == elder and ev.get("stock") == 0:
                tags.append("skip")
                break
    return tags


def classify_piquet(decision: Any, state: dict[str, Any]) -> list[str]:
    """The Piquet situation tags (see :data:`PIQUET_SITUATIONS`) of a request."""
    if decision == "discard":
        tags = ["pq_discard_elder" if state.get("seat") == state.get("elder") else "pq_discard_younger"]
        if (state.get("talon") or 0) + sum(state.get("exchanged") or [0, 0]) >= 12:
            tags.append("pq_36")
        return tags
    if decision in ("look", "expose"):
        return [f"pq_{decision}"]
    if decision == "play":
        trick = state.get("trick") or []
        if not trick:
            return ["pq_lead"]
        suit = trick[0]["card"][1]
        return ["pq_follow" if any(c[1] == suit for c in state.get("hand") or []) else "pq_void"]
    return []


class Wire:
    """Everything that crossed the bot's connection, classified as it goes."""

    def __init__(self) -> None:
        self.lines: list[WireLine] = []
        self.bot_lines: list[BotLine] = []
        self.reqs: list[Req] = []
        self.by_id: dict[int, Req] = {}
        self.pending: Req | None = None
        self.batch: list[dict[str, Any]] = []
        self.matches: dict[str, MatchRec] = {}
        self.current: MatchRec | None = None
        self.met: set[str] = set()
        self.hello: WireLine | None = None
        self.welcome: WireLine | None = None
        self.refusal: WireLine | None = None
        self.connections = 0
        self.first_line_seen: set[int] = set()
        self.welcomed_conns: set[int] = set()
        self.goodbye_t: float | None = None
        self.probes_next: list[str] = []
        self.lost_probes: set[str] = set()
        self.probe_reqs: dict[str, list[Req]] = {}

    def _add(self, src: str, raw: bytes, msg: dict[str, Any] | None, conn: int) -> WireLine:
        wl = WireLine(len(self.lines), trio.current_time(), src, raw, msg, conn)
        self.lines.append(wl)
        return wl

    # ------------------------------------------------------------------ server/doctor -> bot

    def from_server(self, raw: bytes, conn: int, src: str = "server") -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            msg = None
        if not isinstance(msg, dict):
            msg = None
        wl = self._add(src, raw, msg, conn)
        if src == "doctor":
            probe = {"doctor_notice": "types", "doctor_padding": "burst"}.get((msg or {}).get("type", ""))
            if probe and probe not in self.probes_next:
                self.probes_next.append(probe)
            return
        if msg is None:
            return
        kind = msg.get("type")
        if kind == "welcome":
            self.welcome = wl
            self.welcomed_conns.add(conn)
        elif kind == "error":
            self._server_error(wl, conn)
        elif kind == "match_start":
            mid = str(msg.get("match_id"))
            self.current = MatchRec(mid, msg.get("seat", -1), wl)
            self.matches[mid] = self.current
            self.batch = []
        elif kind == "event":
            ev = msg.get("event") or {}
            self.batch.append(ev)
            if ev.get("kind") == "deal_start" and self.current is not None:
                self.current.deals += 1
        elif kind == "request":
            self._request(wl, msg)
        elif kind == "match_end":
            mid = str(msg.get("match_id"))
            rec = self.matches.get(mid)
            if rec is not None:
                rec.end = msg
            if self.pending is not None and self.pending.match_id == mid:
                self.pending.ended = msg
                self.pending = None
            self.batch = []
        elif kind == "goodbye":
            self.goodbye_t = wl.t

    def _request(self, wl: WireLine, msg: dict[str, Any]) -> None:
        tags = classify(msg, self.batch)
        req = Req(
            id=msg.get("id", -1),
            match_id=str(msg.get("match_id")),
            decision=str(msg.get("decision")),
            legal=msg["legal"] if isinstance(msg.get("legal"), dict) else list(msg.get("legal") or []),
            state=dict(msg.get("state") or {}),
            time_ms=int(msg.get("time_ms") or 0),
            line=wl,
            tags=tags,
            probes=self.probes_next,
        )
        for probe in self.probes_next:
            self.probe_reqs.setdefault(probe, []).append(req)
        self.probes_next = []
        self.batch = []
        self.reqs.append(req)
        self.by_id[req.id] = req
        self.pending = req
        self.met.update(tags)
        if self.current is not None:
            self.current.requests += 1

    def _server_error(self, wl: WireLine, conn: int) -> None:
        msg = wl.msg or {}
        if conn not in self.welcomed_conns:
            self.refusal = wl
            for bl in reversed(self.bot_lines):
                if bl.line.conn == conn and bl.server_error is None:
                    bl.server_error = wl
                    break
            return
        rid = msg.get("id")
        req = self.by_id.get(rid) if isinstance(rid, int) else None
        code = msg.get("code")
        if req is not None and code in ("timeout", "illegal_action", "wrong_decision"):
            req.errors.append(wl)
            if code == "timeout" and self.pending is req:
                self.pending = None
            return
        # a fault about a line: attach it to the latest bot line it can be about
        for bl in reversed(self.bot_lines):
            if bl.server_error is not None or bl.kind in ("hello", "answer"):
                continue
            if rid is None or bl.sent_id == rid:
                bl.server_error = wl
                return
        for bl in reversed(self.bot_lines):  # e.g. an answer the server judged otherwise
            if bl.server_error is None and (rid is None or bl.sent_id == rid):
                bl.server_error = wl
                return

    # ------------------------------------------------------------------ bot -> server

    def from_bot(self, raw: bytes, conn: int) -> None:
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        wl = self._add("bot", raw, parsed if isinstance(parsed, dict) else None, conn)
        first = conn not in self.first_line_seen
        self.first_line_seen.add(conn)
        if self.goodbye_t is not None:
            self.bot_lines.append(BotLine(wl, "after_goodbye", "sent after goodbye"))
            return
        if not raw.strip() and not first:
            return  # blank lines are ignored after the handshake (docs/protocol.md §2)
        try:
            msg = decode_client(raw)
        except ProtocolError as exc:
            self.bot_lines.append(BotLine(wl, "malformed", f"{exc.code}: {exc.message}"))
            return
        if first:
            if isinstance(msg, Hello):
                self.hello = wl
                self.bot_lines.append(BotLine(wl, "hello"))
            else:
                self.bot_lines.append(BotLine(wl, "malformed", "the first line must be a hello"))
            return
        if isinstance(msg, Hello):
            self.bot_lines.append(BotLine(wl, "unexpected_hello", "hello sent again after the handshake"))
            return
        assert isinstance(msg, ActionMsg)
        rid = msg.id
        pending = self.pending
        if pending is not None and rid == pending.id:
            bl = BotLine(wl, "answer", sent_id=rid)
            pending.answer = bl
            self.pending = None
            self.bot_lines.append(bl)
            return
        req = self.by_id.get(rid)
        if req is not None and req.answer is not None:
            problem = f"a second answer to request {rid} (first: {_quote(req.answer.line.raw)})"
            self.bot_lines.append(BotLine(wl, "duplicate", problem, rid))
        elif req is not None:
            self.bot_lines.append(BotLine(wl, "late", f"an answer to request {rid} after it expired", rid))
        elif pending is not None:
            problem = f"answered id {rid} while request {pending.id} was pending"
            self.bot_lines.append(BotLine(wl, "wrong_id", problem, rid))
        else:
            problem = f"an action with id {rid}, but no request was pending"
            self.bot_lines.append(BotLine(wl, "wrong_id", problem, rid))

    def connection_closed(self, why: str) -> None:
        if self.pending is not None:
            self.pending.lost = why
            self.pending = None
        if self.goodbye_t is None:
            self.lost_probes.update(self.probes_next)  # the bot left right after a probe
        self.probes_next = []


# --------------------------------------------------------------------------- the proxy


class Proxy:
    """A loopback TCP relay between the bot and the server that records every line.

    Bot-to-server bytes are forwarded untouched. Server-to-bot lines go through ``rewrite``
    (which may add fields or extra lines) and are written to the bot in one write per batch
    received, as the server wrote them. When the server closes (after ``goodbye``), the bot's
    side stays open until the bot closes it, :meth:`release` is called, or ``linger_s`` passes.
    """

    def __init__(self, wire: Wire, server_port: int, linger_s: float = LINGER_S) -> None:
        self.wire = wire
        self.server_port = server_port
        self.linger_s = linger_s
        self.port: int | None = None
        self.rewrite: Callable[[bytes, dict[str, Any] | None], list[tuple[bytes, str]]] = (
            lambda raw, msg: [(raw, "server")]
        )
        self.after_welcome: list[bytes] = []
        self.released = trio.Event()
        self.bot_streams: dict[int, trio.SocketStream] = {}
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

    async def _handle(self, bot: trio.SocketStream) -> None:
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
        self, conn: int, bot: trio.SocketStream, up: trio.SocketStream, bot_closed: trio.Event
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
        self, conn: int, up: trio.SocketStream, bot: trio.SocketStream, bot_closed: trio.Event
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
                    except ValueError:
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

    async def _write(self, conn: int, bot: trio.SocketStream, lines: list[tuple[bytes, str]]) -> None:
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


# --------------------------------------------------------------------------- stacked packs


def deal_pack(elder: str, dealer: str, turn_up: str, stock: str = "") -> list[str]:
    """A 32-card pack dealt 3-2 (ecarte.md §E2.4): elder gets pack positions 0-2 and 6-7, the
    dealer 3-5 and 8-9, the 11th card is the turn-up, then ``stock`` from the top; the cards not
    named follow in pack order."""
    e, d, top = elder.split(), dealer.split(), stock.split()
    pack = e[:3] + d[:3] + e[3:] + d[3:] + [turn_up] + top
    pack += [c for c in PACK_32 if c not in pack]
    if len(pack) != 32 or sorted(pack) != sorted(PACK_32):
        raise ValueError(f"not a pack: {pack}")
    return pack


def draw_pack(dealer: int) -> list[str]:
    """A pack for the draw for first dealer (§E2.1) that makes ``dealer`` deal first."""
    top = ["Kc", "7d"] if dealer == 0 else ["7d", "Kc"]
    return top + [c for c in PACK_32 if c not in top]


@dataclass(frozen=True)
class DealPlan:
    """The first deal of a scripted match: the hands, the bot's role, and the opponent's moves.

    ``propose``/``respond``: the opponent's call (``adaptive``: exchange while the bot still has
    exchange situations to meet). ``leads``: cards the opponent leads, first one in its hand.
    ``goals``: the situation tags the deal aims at."""

    name: str
    bot_role: str
    elder: str
    dealer: str
    turn_up: str
    stock: str = ""
    propose: str = "play"
    respond: str = "refuse"
    leads: tuple[str, ...] = ()
    goals: tuple[str, ...] = ()

    def pack(self) -> list[str]:
        return deal_pack(self.elder, self.dealer, self.turn_up, self.stock)


@dataclass(frozen=True)
class PiquetPlan:
    """A scripted Piquet match: the rules, dealt from the engine's seeded shuffle (any deal
    meets the forced Piquet situations); the opponent takes one card as elder and none as
    younger, so the talon keeps cards for the bot's ``look`` and ``expose``."""

    name: str
    rules: Rules
    goals: tuple[str, ...]
    bot_role: str = "any"


PQ_32 = PiquetPlan("piquet-32", Rules(), goals=(
    "pq_discard_elder", "pq_discard_younger", "pq_look", "pq_expose", "pq_lead", "pq_follow", "pq_void"))
PQ_36 = PiquetPlan("piquet-36", Rules(pack=36, packets=3, scoring="cent"), goals=(
    "pq_36", "pq_discard_elder", "pq_discard_younger", "pq_look", "pq_expose"))


WEAK_STOCK = "9d Td Ad Jd Qd 7s 8s 9s Ts As Js Qs Tc Ac Jc Qc 8h 9h Kc Kd Ks"
"""Trumps are hearts: 16 weak plain cards on top, the two low trumps and the kings last, so a
bot that exchanges keeps a weak hand and goes on exchanging."""

KING_ELDER = DealPlan(
    "king-elder", "elder", elder="Ks 7h 8h 7c 8c", dealer="Ac Tc 9d Td Ad", turn_up="9s",
    respond="refuse", goals=("propose", "king_elder", "lead"),
)  # fmt: skip
FOLLOW = DealPlan(
    "follow", "dealer", elder="Kd Jc Ah Th 9h", dealer="8c Qc 7d 9d Ks", turn_up="8s",
    propose="play", leads=("Kd", "Jc"), goals=("king_dealer", "follow_low", "follow_win", "lead"),
)  # fmt: skip
TRUMP = DealPlan(
    "trump", "dealer", elder="Kh As Js Qs Ks", dealer="7s 8c 9c 7d 8d", turn_up="9s",
    propose="play", leads=("Kh", "Js", "Qs", "Ks", "As"), goals=("trump", "lead", "any"),
)  # fmt: skip
DEALER_X = DealPlan(
    "dealer-exchange", "dealer", elder="Kh Qh Jh Ah Th", dealer="7c 8c 9c 7d 8d", turn_up="7h",
    stock=WEAK_STOCK, propose="adaptive", goals=("respond", "discard_dealer", "short", "skip"),
)  # fmt: skip
ELDER_X = DealPlan(
    "elder-exchange", "elder", elder="7c 8c 9c 7d 8d", dealer="Kh Qh Jh Ah Th", turn_up="7h",
    stock=WEAK_STOCK, respond="adaptive", goals=("propose", "discard_elder", "short"),
)  # fmt: skip


@cache
def _reach(stock: int, xmin: int, goal: str, depth: int) -> bool:
    if stock <= 0 or depth == 0:
        return False
    for x in range(xmin, min(5, stock) + 1):
        rest = stock - x
        if _hit(rest, x, goal):
            return True
        after_bot = rest - min(5, rest)  # assume the bot takes as many as it may
        if rest > 0 and after_bot > 0 and _reach(after_bot, xmin, goal, depth - 1):
            return True
    return False


def _hit(rest: int, x: int, goal: str) -> bool:
    if goal == "short":
        return 1 <= rest <= 4  # the bot discards next with fewer than 5 cards in the stock
    return rest == 0 and x >= 1  # "skip": elder (the opponent) empties the stock


def opponent_discard_count(stock: int, xmin: int, goal: str | None, fast: bool = False) -> int:
    """How many cards the scripted opponent discards to steer the stock toward ``goal``:
    ``short`` (the bot's next discard sees fewer than 5 cards) or ``skip`` (the opponent, elder,
    empties the stock so the bot's discard as dealer is skipped).

    Gentle (default): as few cards as still reach the goal, so the bot keeps drawing the weak
    cards on top of the stock (a bot that exchanges on weak hands goes on exchanging). ``fast``:
    the fewest rounds, for a bot that exchanges at random."""
    top = min(5, stock)
    if goal is None:
        return xmin
    for x in range(xmin, top + 1):
        if _hit(stock - x, x, goal):
            return x
    if fast and goal == "skip" and stock - top <= 6:
        return max(xmin, min(top, stock - 6))  # leave 6: nearly any discard of the bot leaves 1..5
    order = range(top, xmin - 1, -1) if fast else range(xmin, top + 1)
    for x in order:
        rest = stock - x
        after_bot = rest - min(5, rest)
        if rest > 0 and after_bot > 0 and _reach(after_bot, xmin, goal, 6):
            return x
    return top


# --------------------------------------------------------------------------- scripted opponent

RESIGN = "doctor-opponent-resigns"


class Opponent:
    """The scripted opponent: a trio TCP client registered as a second bot. For the first deal
    of a match it follows that match's :class:`DealPlan`; afterwards it plays quickly (no
    exchanges, first legal card), or resigns when ``resign`` says so for that match."""

    def __init__(self, name: str, token: str, port: int, wire: Wire) -> None:
        self.name = name
        self.token = token
        self.port = port
        self.wire = wire
        self.plans: dict[str, DealPlan] = {}
        self.resign: dict[str, bool] = {}
        self.fast: dict[str, bool] = {}
        self.stream: trio.SocketStream | None = None

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        stream = await trio.open_tcp_stream("127.0.0.1", self.port)
        self.stream = stream
        reader = LineReader(stream, 1 << 22)  # full-form Piquet discards: up to 131 KB a line
        hello = {"type": "hello", "name": self.name, "token": self.token, "protocol": 1, "role": "bot"}
        await stream.send_all(msgspec.json.encode(hello) + b"\n")
        first = await reader.read_line()
        if first is None or json.loads(first).get("type") != "welcome":
            raise RuntimeError(f"the scripted opponent was refused: {first!r}")
        task_status.started()
        while True:
            try:
                line = await reader.read_line()
            except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
                return
            if line is None:
                return
            msg = json.loads(line)
            if msg.get("type") == "request":
                out = {"type": "action", "id": msg["id"], "action": self.decide(msg)}
                try:
                    await stream.send_all(msgspec.json.encode(out) + b"\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

    def decide(self, req: dict[str, Any]) -> Any:
        """The opponent's action for ``req`` (a decoded ``request``)."""
        legal = req["legal"]
        state = req["state"]
        decision = req["decision"]
        plan = self.plans.get(req["match_id"]) if state.get("deal") == 1 else None
        met = self.wire.met
        if state.get("deal", 1) > 1 and self.resign.get(req["match_id"]):
            return RESIGN  # not a legal action: the match ends at once (forfeit_illegal)
        if decision == "king":
            return "announce"
        if decision == "play":
            if plan is not None and not state["trick"]:
                for card in plan.leads:
                    if card in legal:
                        return card
            return legal[0]
        if plan is None:
            return {"propose": "play", "respond": "refuse"}.get(decision, legal[0])
        stock = state["stock"]
        if decision == "propose":
            if plan.propose != "adaptive":
                return plan.propose
            first = state["proposals"] == 0
            wanted = {"discard_dealer", "short", "skip"} - met
            return "propose" if first or (wanted and stock > 0) else "play"
        if decision == "respond":
            if plan.respond != "adaptive":
                return plan.respond
            return "accept" if {"discard_elder", "short"} - met else "refuse"
        if decision == "discard":
            me_elder = state["seat"] == state["elder"]
            xmin = 1 if me_elder else 0
            if "short" not in met:
                goal: str | None = "short"
            elif me_elder and "skip" not in met:
                goal = "skip"
            else:
                goal = None
            x = opponent_discard_count(stock, xmin, goal, fast=self.fast.get(req["match_id"], False))
            hand = state["hand"]
            choice = hand[:x]
            return choice if any(sorted(choice) == sorted(opt) for opt in legal) else legal[0]
        return legal[0]

    async def aclose(self) -> None:
        if self.stream is not None:
            with trio.CancelScope(shield=True):
                try:
                    await self.stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass


# --------------------------------------------------------------------------- the run


@dataclass
class Scenario:
    """One scripted match: its plan, the bot's seat, and its probes."""

    plan: DealPlan | PiquetPlan
    seat: int
    probe: str = ""  # "types": unknown type in the first batch; "fields": extra fields
    fast: bool = False  # the opponent steers the stock in the fewest rounds


@dataclass
class MatchRun:
    """What became of a scenario's match."""

    scenario: Scenario
    match_id: str
    reason: str = ""
    faulty_bot: bool = False
    cut: str = ""


def _extra_fields(msg: dict[str, Any]) -> bytes:
    """``msg`` with unknown fields added: first at the top level, last in nested objects."""
    out: dict[str, Any] = {"doctor_extra": {"note": "an unknown field: ignore it", "n": [1, None, True]}}
    out.update(msg)
    for key in ("event", "state", "rules", "time"):
        if isinstance(msg.get(key), dict):
            out[key] = {**msg[key], "doctor_note": "unknown field"}
    return msgspec.json.encode(out)


UNKNOWN_TYPE = msgspec.json.encode(
    {"type": "doctor_notice", "text": "a message type from a later protocol version: ignore it", "level": 1}
)


def _padded(msg: dict[str, Any], size: int) -> bytes:
    """``msg`` with an unknown field ``doctor_padding`` making the line ``size`` bytes long
    (newline excluded)."""
    base = msgspec.json.encode({**msg, "doctor_padding": ""})
    return msgspec.json.encode({**msg, "doctor_padding": "." * max(0, size - len(base))})


def _padding(total: int) -> list[bytes]:
    lines = []
    size = 0
    i = 0
    while size < total:
        line = msgspec.json.encode({"type": "doctor_padding", "n": i, "pad": "." * 1000})
        lines.append(line)
        size += len(line) + 1
        i += 1
    return lines


class Doctor:
    """One doctor run; see the module docstring. Call :meth:`run`."""

    def __init__(
        self,
        manifest_path: str | Path,
        move_ms: int = 2000,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        keep_logs: bool | None = None,
        sandbox: bool = False,
        game: str = "ecarte",
    ) -> None:
        if game not in ("ecarte", "piquet"):
            raise ValueError(f"unknown game {game!r}: ecarte or piquet")
        self.manifest_path = str(manifest_path)
        self.sandbox = sandbox
        self.game = game
        self.situations = SITUATIONS if game == "ecarte" else PIQUET_SITUATIONS
        self.move_ms = move_ms
        self.connect_timeout_s = connect_timeout_s
        self.keep_logs = keep_logs
        self.wire = Wire()
        self.manifest: Manifest | None = None
        self.proc: BotProcess | None = None
        self.runs: list[MatchRun] = []
        self.checks: dict[str, Check] = {}
        self.burst: dict[str, Any] = {}
        self.goodbye_result: tuple[str, str] | None = None
        self.gone = ""  # why the bot stopped playing early
        self.fields_match = ""
        self.fields_left = 0
        self.types_match = ""
        self.long_match = ""
        self.match_no = 0
        self.proxy: Proxy | None = None
        self.token = ""
        self.t_matches = 0.0
        self.left_note = ""  # how the bot left, when it left before goodbye

    # ------------------------------------------------------------------ entry point

    async def run(self) -> Report:
        t0 = time.monotonic()
        log_dir = Path(tempfile.mkdtemp(prefix="arena-doctor-"))
        try:
            self.manifest = load_manifest(self.manifest_path)
        except ValueError as exc:
            checks = [Check("manifest", "manifest", FAIL, str(exc))]
            checks += self._not_run("the manifest could not be read")
            shutil.rmtree(log_dir, ignore_errors=True)
            return Report("?", self.manifest_path, checks, seconds=time.monotonic() - t0)
        name = self.manifest.name
        self.checks["manifest"] = Check(
            "manifest", "manifest", PASS, f"name {name!r}, command {' '.join(self.manifest.command)}"
        )
        store = Store(":memory:")
        try:
            async with trio.open_nursery() as nursery:
                try:
                    await self._session(nursery, store, log_dir)
                finally:
                    if self.proc is not None:
                        with trio.CancelScope(shield=True):
                            await self.proc.stop(grace_s=0.5)
                    if self.proxy is not None:
                        self.proxy.release()
                    nursery.cancel_scope.cancel()
        finally:
            store.close()
        log_path = log_dir / "bot.log"
        tail = _tail(log_path)
        report = Report(name, self.manifest_path, self._build_checks(), log_tail=tail)
        report.transcript = self.wire.lines
        report.secret = self.token
        report.seconds = time.monotonic() - t0
        keep = self.keep_logs if self.keep_logs is not None else not report.ok
        if keep:
            report.log_dir = str(log_dir)
        else:
            shutil.rmtree(log_dir, ignore_errors=True)
        return report

    async def _session(self, nursery: trio.Nursery, store: Store, log_dir: Path) -> None:
        assert self.manifest is not None
        name = self.manifest.name
        server = ArenaServer(store, ServerConfig(host="127.0.0.1", port=0))
        port = await nursery.start(server.serve)
        proxy = Proxy(self.wire, port, linger_s=LINGER_S)
        proxy.rewrite = self._rewrite
        proxy.after_welcome = [UNKNOWN_TYPE]
        proxy_port = await nursery.start(proxy.serve)
        self.proxy = proxy

        opp_name = OPPONENT if name != OPPONENT else OPPONENT + "-2"
        opponent = Opponent(opp_name, store.add_bot(opp_name), port, self.wire)
        await nursery.start(opponent.run)
        self.opponent = opponent

        try:
            token = self.token = store.add_bot(name)
        except ValueError as exc:
            self.checks["connects"] = Check("connects", "launch and connect", FAIL, f"name {name!r}: {exc}")
            return
        env = {
            "ARENA_HOST": "127.0.0.1",
            "ARENA_PORT": str(proxy_port),
            "ARENA_NAME": name,
            "ARENA_TOKEN": token,
            "ARENA_BOT_SEED": "20260101",
        }
        t_launch = trio.current_time()
        try:
            self.proc = await launch(nursery, self.manifest, env, log_dir / "bot.log", sandbox=self.sandbox)
        except (OSError, RuntimeError) as exc:
            self.checks["connects"] = Check("connects", "launch and connect", FAIL, f"cannot start the bot: {exc}")
            return
        if not await self._wait_connected(server, name, t_launch):
            return
        await self._play(server, name, log_dir)
        await self._bid(server, name)
        await self._goodbye(server, name)
        await opponent.aclose()

    def _transport(self) -> str:
        if self.sandbox:
            return "in the sandbox over stdin/stdout (ARENA_TRANSPORT=stdio, docs/protocol.md §3.4)"
        return "over TCP"

    def _redact(self, text: str) -> str:
        return text.replace(self.token, "<ARENA_TOKEN>") if self.token else text

    async def _wait_connected(self, server: ArenaServer, name: str, t_launch: float) -> bool:
        assert self.proc is not None
        deadline = t_launch + self.connect_timeout_s
        exited_at: float | None = None
        while True:
            wire = self.wire
            if wire.welcome is not None:
                hello = self._redact(_quote(wire.hello.raw)) if wire.hello else "?"
                ms = (wire.welcome.t - t_launch) * 1000
                self.checks["connects"] = Check(
                    "connects", "launch and connect", PASS,
                    f"connected and welcomed {ms:.0f} ms after launch, {self._transport()}; hello: {hello}",
                )  # fmt: skip
                with trio.move_on_after(1):  # the server registers it just before the welcome
                    await server.wait_for(name, 1)
                return True
            if wire.refusal is not None:
                sent = self._redact(_quote(wire.hello.raw) if wire.hello else _first_bot_line(wire))
                self.checks["connects"] = Check(
                    "connects", "launch and connect", FAIL,
                    f"hello refused: server: {_error_text(wire.refusal)}\nbot sent: {sent}",
                )  # fmt: skip
                return False
            now = trio.current_time()
            if not self.proc.running:
                exited_at = exited_at or now
                if now - exited_at > 0.3:  # let the last lines and the log arrive
                    code = self.proc.process.returncode
                    what = "connected, but " if wire.connections else "never connected: "
                    self.checks["connects"] = Check(
                        "connects", "launch and connect", FAIL,
                        f"{what}the bot exited with status {code} "
                        f"{now - t_launch:.1f} s after launch (see its output below)",
                    )  # fmt: skip
                    return False
            if now > deadline:
                what = "connected to the arena but sent no accepted hello" if wire.connections else "never connected"
                self.checks["connects"] = Check(
                    "connects", "launch and connect", FAIL,
                    f"{what} within {self.connect_timeout_s:.0f} s (ARENA_HOST/ARENA_PORT were "
                    f"127.0.0.1:{self.proxy.port}); see its output below",
                )  # fmt: skip
                return False
            await trio.sleep(0.01)

    # ------------------------------------------------------------------ the scripted matches

    async def _play_piquet(self, server: ArenaServer, name: str, log_dir: Path) -> None:
        """The first match is played to its end (six deals), later ones are resigned by the
        opponent after their first deal; then more while a situation the bot's choices decide
        (look, expose, a void) is missing, within the time budget."""
        first = [
            Scenario(PQ_32, 0, probe="types"),
            Scenario(PQ_32, 1, probe="long"),
            Scenario(PQ_36, 0, probe="fields"),
            Scenario(PQ_36, 1, probe="burst"),
        ]
        self.t_matches = trio.current_time()
        for sc in first:
            if not await self._match(server, name, sc, log_dir):
                return
        for i in range(RETRY_ROUNDS):
            if not {"pq_look", "pq_expose", "pq_void"} - self.wire.met:
                break
            if trio.current_time() - self.t_matches > RETRY_BUDGET_S:
                break
            if not await self._match(server, name, Scenario(PQ_32 if i % 2 else PQ_36, i % 2), log_dir):
                return

    async def _play(self, server: ArenaServer, name: str, log_dir: Path) -> None:
        if self.game == "piquet":
            await self._play_piquet(server, name, log_dir)
            return
        first = [
            Scenario(KING_ELDER, 0, probe="types"),
            Scenario(FOLLOW, 1, probe="long"),
            Scenario(TRUMP, 0),
            Scenario(DEALER_X, 1, probe="fields"),
            Scenario(ELDER_X, 0, probe="burst"),
        ]
        self.t_matches = trio.current_time()
        for sc in first:
            if not await self._match(server, name, sc, log_dir):
                return
        # the exchange situations depend on the bot's choices: try again while some are missing,
        # within a time budget, and not at all for a bot that never exchanges
        for i in range(RETRY_ROUNDS):
            met = self.wire.met
            if i >= 1 and not {"discard_elder", "discard_dealer"} & met:
                break
            if trio.current_time() - self.t_matches > RETRY_BUDGET_S:
                break
            for plan, wants in ((DEALER_X, {"discard_dealer", "short", "skip"}), (ELDER_X, {"discard_elder", "short"})):
                if wants - self.wire.met:
                    if not await self._match(server, name, Scenario(plan, i % 2, fast=i % 2 == 1), log_dir):
                        return
        # a forced situation cut off by a fault: replay its deal once
        for run in list(self.runs):
            missing = set(run.scenario.plan.goals) - self.wire.met
            if run.faulty_bot and missing and not run.scenario.plan.name.endswith("exchange"):
                if not await self._match(server, name, Scenario(run.scenario.plan, 1 - run.scenario.seat), log_dir):
                    return

    async def _match(self, server: ArenaServer, name: str, sc: Scenario, log_dir: Path) -> bool:
        """Play one scripted match; False when the bot is gone."""
        conn = server.bots.get(name)
        opp = server.bots.get(self.opponent.name)
        if conn is None or conn.closed.is_set():
            self.gone = self.gone or "the bot was no longer connected"
            return False
        if opp is None or opp.closed.is_set():
            raise RuntimeError("the scripted opponent lost its connection")
        if sc.probe == "burst" and not await self._burst():
            return False
        self.match_no += 1
        match_id = f"t1-m{self.match_no:04d}"
        run = MatchRun(sc, match_id)
        self.runs.append(run)
        bot_seat = sc.seat
        dealer_seat = bot_seat if sc.plan.bot_role == "dealer" else 1 - bot_seat
        if isinstance(sc.plan, DealPlan):
            self.opponent.plans[match_id] = sc.plan
        self.opponent.fast[match_id] = sc.fast
        # once a match has been played to the target, the opponent resigns after the first deal
        self.opponent.resign[match_id] = any(
            m.end is not None and m.end.get("reason") in PLAYED_OUT for m in self.wire.matches.values()
        )
        if sc.probe == "fields":
            self.fields_match, self.fields_left = match_id, 2
        elif sc.probe == "types":
            self.types_match = match_id
        elif sc.probe == "long":
            self.long_match = match_id
        conns = (conn, opp) if bot_seat == 0 else (opp, conn)
        if isinstance(sc.plan, PiquetPlan):
            config = MatchConfig(game="piquet", rules=sc.plan.rules, time=TimeControl(move_ms=self.move_ms))
            packs: list[list[str]] = []
        else:
            config = MatchConfig(time=TimeControl(move_ms=self.move_ms))
            packs = [draw_pack(dealer_seat), sc.plan.pack()]  # the engine deals these, then shuffles
        with MatchLog(log_dir / f"{match_id}.jsonl") as log:
            referee = Referee(match_id, 1000 + self.match_no, config, conns, log, packs=packs)
            with trio.move_on_after(MATCH_CAP_S) as cap:
                result = await referee.run()
        if cap.cancelled_caught:
            run.cut = f"stopped by the doctor after {MATCH_CAP_S:.0f} s"
            run.faulty_bot = True
        else:
            run.reason = result.reason
            run.faulty_bot = result.faulty == bot_seat
        if result_gone := (conn.closed.is_set()):
            self.gone = f"the bot's connection closed during {match_id}"
        await trio.sleep(0)  # let the proxy record what is still in flight
        return not result_gone

    async def _bid(self, server: ArenaServer, name: str) -> None:
        """A chouette auction's ``bid`` (docs/protocol.md §8.12): a request outside any match,
        answered with an integer of ``legal``. As in a tournament, a bid outside ``legal`` gets
        ``illegal_action`` (not fatal) and a missing one counts as 0."""
        conn = server.bots.get(name)
        if conn is None or conn.closed.is_set():
            self.gone = self.gone or "the bot was no longer connected"
            return
        auction_id = "t1-a0001"
        seat = Seat(conn, 0, auction_id, Clock(TimeControl()))
        view = AuctionView(bot=name, bankroll=1000, bankrolls={name: 1000, self.opponent.name: 880},
                           queue=[self.opponent.name, name], auction=1, reigns=[[self.opponent.name, 120, 1]])
        legal = legal_bids(1000)
        seat.attach()
        try:
            answer = await seat.ask("bid", legal, view)
            if answer.action not in legal or isinstance(answer.action, bool):
                await conn.send_error("illegal_action", f"bid {quote(answer.action)} is not in legal; counted as 0",
                                      id=answer.id)
        except SeatFault:
            pass
        finally:
            seat.detach()
        await trio.sleep(0.05)  # let the proxy record what is still in flight

    async def _burst(self) -> bool:
        """Send 1 MiB of unknown-type lines while the bot is idle between matches."""
        conn_no = self.wire.connections
        lines = _padding(BURST_BYTES)
        self.burst = {"bytes": sum(len(x) + 1 for x in lines), "lines": len(lines)}
        with trio.move_on_after(BURST_TIMEOUT_S) as scope:
            try:
                self.burst["seconds"] = await self.proxy.inject(conn_no, lines)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self.burst["error"] = f"the connection broke during the burst: {exc!r}"
                self.gone = "the connection broke while the doctor sent 1 MiB of lines"
                return False
        if scope.cancelled_caught:
            self.burst["error"] = f"the bot had not read 1 MiB of lines after {BURST_TIMEOUT_S:.0f} s"
            self.gone = "the bot stopped reading"
            return False
        return True

    def _rewrite(self, raw: bytes, msg: dict[str, Any] | None) -> list[tuple[bytes, str]]:
        """Server-to-bot lines: add unknown fields (probe ``fields``) or an unknown message type
        in front of the first request (probe ``types``)."""
        if msg is None:
            return [(raw, "server")]
        mid = msg.get("match_id")
        kind = msg.get("type")
        if self.fields_left and mid == self.fields_match:
            if kind == "request":
                self.fields_left -= 1
            if "fields" not in self.wire.probes_next:
                self.wire.probes_next.append("fields")
            return [(_extra_fields(msg), "server")]
        if self.long_match and mid == self.long_match and kind == "request":
            self.long_match = ""
            self.wire.probes_next.append("long")
            return [(_padded(msg, LONG_LINE_BYTES - 1), "server")]
        if self.types_match and mid == self.types_match and kind == "request":
            self.types_match = ""
            return [(UNKNOWN_TYPE, "doctor"), (raw, "server")]
        return [(raw, "server")]

    # ------------------------------------------------------------------ goodbye

    async def _goodbye(self, server: ArenaServer, name: str) -> None:
        conn = server.bots.get(name)
        proc = self.proc
        assert proc is not None
        if conn is None or conn.closed.is_set():
            gone = self.gone or "it was no longer connected"
            with trio.move_on_after(1):
                await proc.process.wait()
            self.left_note = self._left()
            self.goodbye_result = (FAIL, f"not sent, {gone}: {self.left_note}")
            return
        t0 = trio.current_time()
        try:
            await conn.send(Goodbye(reason="doctor finished"))
        except SendFailed as exc:
            self.goodbye_result = (FAIL, f"goodbye could not be sent: {exc}")
            return
        await conn.aclose("goodbye")
        with trio.move_on_after(LINGER_S):
            await proc.process.wait()
        stayed = ""
        if proc.running:
            stayed = f"stayed connected {LINGER_S:.0f} s after goodbye without a word; "
            self.proxy.release()
            with trio.move_on_after(EXIT_WAIT_S):
                await proc.process.wait()
        after = [bl for bl in self.wire.bot_lines if bl.kind == "after_goodbye"]
        if after:
            self.goodbye_result = (FAIL, f"the bot sent a line after goodbye: {_quote(after[0].line.raw)}")
            return
        if proc.running:
            self.goodbye_result = (
                FAIL,
                f"{stayed}still running {EXIT_WAIT_S:.0f} s after the connection was closed "
                "(docs/protocol.md §3.3: exit with status 0 on goodbye or end of stream; a tournament kills it)",
            )
            return
        code = proc.process.returncode
        ms = (trio.current_time() - t0) * 1000
        if code != 0:
            self.goodbye_result = (FAIL, f"{stayed}exited with status {code} after goodbye (see its output below)")
            return
        if stayed:
            self.goodbye_result = (PASS, f"{stayed}exited with status 0 when the connection was closed")
        else:
            self.goodbye_result = (PASS, f"exited with status 0, {ms:.0f} ms after goodbye")

    # ------------------------------------------------------------------ verdicts

    def _not_run(self, why: str) -> list[Check]:
        keys = ["connects"] + [k for k, _, _ in self.situations] + [k for k, _ in GLOBAL_CHECKS]
        titles = {"connects": "launch and connect"} | {k: t for k, t, _ in self.situations} | dict(GLOBAL_CHECKS)
        out = []
        for k in keys:
            if k in self.checks:
                out.append(self.checks[k])
            else:
                out.append(Check(k, titles[k], SKIP, f"not run: {why}"))
        return out

    def _build_checks(self) -> list[Check]:
        checks = [self.checks["manifest"]]
        if self.checks.get("connects", Check("", "", FAIL, "")).status != PASS:
            if "connects" not in self.checks:
                self.checks["connects"] = Check("connects", "launch and connect", FAIL, "the doctor stopped early")
            return checks + self._not_run("the bot did not connect")
        checks.append(self.checks["connects"])
        wire = self.wire
        reqs = wire.reqs
        if self.left_note:
            for r in reqs:
                if r.lost:
                    r.lost += f"; {self.left_note}"
        for key, title, forced in self.situations:
            checks.append(self._situation(key, title, forced, [r for r in reqs if key in r.tags]))
        checks.append(self._full_match())
        checks += self._answers()
        checks.append(self._reading())
        fields = ("every line of the first two requests' batches of a match carried unknown fields "
                  "(at the top level, in the event, the state, the rules)")  # fmt: skip
        checks.append(self._probe("fields", "unknown fields ignored", fields))
        types = "a message of unknown type was sent after welcome and in front of a request"
        checks.append(self._probe("types", "unknown message types ignored", types))
        long = (f"a request line of {LONG_LINE_BYTES:,} bytes (an unknown field padding it; the longest line "
                "the arena sends is about 131 KB: a full-form Piquet discard with 36 cards)")
        checks.append(self._probe("long", "reads long lines", long))
        status, details = self.goodbye_result or (SKIP, f"not run: {self.gone or 'the doctor stopped early'}")
        checks.append(Check("goodbye", "goodbye", status, details))
        return checks

    def _cut_note(self, key: str) -> str:
        """Why a situation may not have been reached: a match ended early by the bot's fault."""
        cut = [r for r in self.runs if key in r.scenario.plan.goals and (r.faulty_bot or r.cut)]
        if cut:
            r = cut[0]
            rec = self.wire.matches.get(r.match_id)
            end = rec.end if rec else None
            why = r.cut or (f"{end.get('reason')}: {end.get('detail')}" if end else r.reason)
            return f"{r.match_id} ended before it ({why})"
        if self.gone:
            return self.gone
        return ""

    def _situation(self, key: str, title: str, forced: bool, reqs: list[Req]) -> Check:
        if not reqs:
            note = self._cut_note(key)
            if note:
                return Check(key, title, SKIP, f"not reached: {note}")
            if forced:
                return Check(key, title, FAIL, "not reached, although a scripted deal forces it (a doctor bug?)")
            return Check(key, title, SKIP, f"not exercised: {self._choices_note(key)}")
        bad = [(r, f) for r in reqs if (f := r.failure())]
        if bad:
            r, (_, text) = bad[0]
            more = f"\n({len(bad)} of {len(reqs)} such requests went wrong)" if len(bad) > 1 else ""
            return Check(key, title, FAIL, text + more)
        ex = max(reqs, key=lambda r: len(r.legal)) if key.startswith(("follow", "trump", "any", "lead")) else reqs[0]
        assert ex.answer is not None and ex.answer.line.msg is not None
        action = _short_json(ex.answer.line.msg.get("action"), 60)
        extra = ""
        if key in ("follow_win", "follow_low", "trump", "any"):
            extra = f"{ex.state['trick'][0]['card']} led, hand {_short_json(ex.state.get('hand'))}, "
        elif key == "short":
            extra = f"{ex.state.get('stock')} cards in the stock, "
        elif key == "skip":
            extra = "elder's exchange emptied the stock, no discard was asked, then "
        elif key.startswith("pq_discard") or key == "pq_36":
            form = ("compact form, as the bot asked at hello" if isinstance(ex.legal, dict)
                    else "full form: ask for the compact one at hello for short lines (protocol.md §8.13)")
            extra = f"{form}, {len(ex.line.raw) + 1:,}-byte request, "
        return Check(
            key, title, PASS,
            f"{len(reqs)} met, all answered legally in time; e.g. request {ex.id} ({ex.match_id}): "
            f"{extra}legal {_short_json(ex.legal, 80)}, answered {action}",
        )  # fmt: skip

    def _choices_note(self, key: str) -> str:
        counts: dict[str, dict[str, int]] = {}
        for r in self.wire.reqs:
            if r.decision in ("propose", "respond") and r.answer and r.answer.line.msg:
                a = str(r.answer.line.msg.get("action"))
                counts.setdefault(r.decision, {}).setdefault(a, 0)
                counts[r.decision][a] += 1
        stats = "; ".join(
            f"{d}: " + ", ".join(f"{a} x{n}" for a, n in sorted(c.items())) for d, c in sorted(counts.items())
        )
        reason = {
            "discard_elder": "the bot never exchanged as elder",
            "discard_dealer": "the bot never accepted an exchange as dealer",
            "short": "the bot's exchanges never ran the stock below 5 cards",
            "skip": "the bot never accepted an exchange when elder could empty the stock",
            "pq_look": "the bot always took its maximum as elder",
            "pq_expose": "the bot always took every card left in the talon as younger",
            "pq_void": "the bot was never void in a suit led",
        }.get(key, "the bot's choices avoided it")
        tries = sum(1 for r in self.runs if key in r.scenario.plan.goals)
        return (
            f"{reason} in {tries} scripted deals (legal, but this situation is untested); "
            f"its calls: {stats or 'none'}"
        )

    def _full_match(self) -> Check:
        key, title = "full_match", "full match to the target"
        ended = [m for m in self.wire.matches.values() if m.end is not None]
        target = [m for m in ended if m.end and m.end.get("reason") in PLAYED_OUT]
        if not target:
            if not ended:
                return Check(key, title, SKIP if self.gone else FAIL, f"no match ended: {self.gone or '?'}")
            reasons = ", ".join(f"{m.match_id}: {m.end.get('reason')} ({m.end.get('detail')})" for m in ended if m.end)
            return Check(key, title, FAIL, f"no match was played to the target: {reasons}")
        m = target[0]
        assert m.end is not None
        later = [x for x in self.wire.matches.values() if x.start.n > m.start.n and x.requests]
        then = "; the bot then played the next match" if later else ""
        end = m.end
        return Check(
            key, title, PASS,
            f"{len(target)} of {len(self.wire.matches)} matches played to the target, match_end each time; "
            f"e.g. {m.match_id}: seat {m.seat}, {m.deals} deals, {m.requests} requests, scores "
            f"{end.get('scores')}, you: {end.get('you')}{then}",
        )  # fmt: skip

    def _answers(self) -> list[Check]:
        wire = self.wire
        reqs = wire.reqs
        out = []
        # in time
        slow = [(r, f) for r in reqs if (f := r.failure()) and f[0] == "in_time"]
        times = [ms for r in reqs if (ms := r.answer_ms) is not None]
        limit = reqs[0].time_ms if reqs else self.move_ms
        late = [bl for bl in wire.bot_lines if bl.kind == "late"]
        if slow:
            text = slow[0][1][1]
            if late:
                text += f"\nlate answer: {_quote(late[0].line.raw)}"
            out.append(Check("in_time", "answers in time", FAIL, text + _count(slow, reqs)))
        elif not reqs:
            out.append(Check("in_time", "answers in time", SKIP, f"no request was answered: {self.gone or '?'}"))
        else:
            mean = sum(times) / len(times) if times else 0.0
            out.append(Check(
                "in_time", "answers in time", PASS,
                f"{len(times)} answers, mean {mean:.1f} ms, slowest {max(times, default=0):.0f} ms "
                f"(limit {limit} ms, measured at the proxy)",
            ))  # fmt: skip
        # legal
        bad = [(r, f) for r in reqs if (f := r.failure()) and f[0] == "legal"]
        if bad:
            out.append(Check("legal", "answers are legal", FAIL, bad[0][1][1] + _count(bad, reqs)))
        elif reqs:
            out.append(Check("legal", "answers are legal", PASS, f"{len(times)} answers, each one element of legal"))
        else:
            out.append(Check("legal", "answers are legal", SKIP, "no request was answered"))
        # ids
        wrong = [bl for bl in wire.bot_lines if bl.kind == "wrong_id"]
        if wrong:
            out.append(Check("ids", "answers carry the request id", FAIL, _bot_line_text(wrong[0])))
        else:
            out.append(Check("ids", "answers carry the request id", PASS if reqs else SKIP,
                             f"{len(times)} answers repeated the id of the pending request"))  # fmt: skip
        # once
        dup = [bl for bl in wire.bot_lines if bl.kind == "duplicate"]
        if dup:
            out.append(Check("once", "one answer per request", FAIL, _bot_line_text(dup[0])))
        else:
            out.append(Check("once", "one answer per request", PASS if reqs else SKIP,
                             "no request was answered twice"))  # fmt: skip
        # well-formed
        badl = [bl for bl in wire.bot_lines if bl.kind in ("malformed", "unexpected_hello")]
        if badl:
            out.append(Check("wellformed", "well-formed lines", FAIL, _bot_line_text(badl[0])))
        else:
            n = sum(1 for bl in wire.bot_lines if bl.kind != "after_goodbye")
            out.append(Check("wellformed", "well-formed lines", PASS,
                             f"{n} lines, each a JSON object with a known type and valid fields"))  # fmt: skip
        return out

    def _reading(self) -> Check:
        key, title = "reading", "keeps reading"
        slow = self.proxy.slowest_write_s
        if "error" in self.burst:
            return Check(key, title, FAIL, self.burst["error"])
        probe = self.wire.probe_reqs.get("burst", [])
        if "burst" in self.wire.lost_probes:
            return Check(key, title, FAIL, f"after 1 MiB of unknown-type lines between matches, {self._left()}")
        if not self.burst or not probe:
            return Check(key, title, SKIP, f"not reached: {self.gone or 'the burst was not sent'}")
        req = probe[0]
        f = req.failure()
        kib = self.burst["bytes"] // 1024
        if f:
            return Check(key, title, FAIL, f"after {kib} KiB of unknown-type lines between matches:\n{f[1]}")
        if slow > 2.0:
            return Check(key, title, FAIL, f"a write to the bot was blocked for {slow:.1f} s: it does not read")
        return Check(
            key, title, PASS,
            f"took {self.burst['lines']} lines ({kib} KiB) between matches in {self.burst['seconds'] * 1000:.0f} ms, "
            f"then answered request {req.id} in {req.answer_ms:.0f} ms; longest blocked write {slow * 1000:.0f} ms",
        )  # fmt: skip

    def _probe(self, key: str, title: str, what: str) -> Check:
        reqs = self.wire.probe_reqs.get(key, [])
        if key in self.wire.lost_probes:
            return Check(key, title, FAIL, f"{what}; before its next request {self._left()}")
        replies = self._replies_to_doctor_lines() if key == "types" else ""
        if replies:
            return Check(key, title, FAIL, f"{what}; the bot answered it:\n{replies}")
        if not reqs:
            return Check(key, title, SKIP, f"not reached: {self.gone or 'no probe was sent'}")
        for r in reqs:
            f = r.failure()
            if f:
                hint = ("\na bot must read lines of any length (docs/protocol.md §2): grow the read buffer "
                        "with the line" if key == "long" else "")
                return Check(key, title, FAIL, f"{what}; then:\n{f[1]}{hint}")
        ids = ", ".join(str(r.id) for r in reqs)
        verb = "was" if len(reqs) == 1 else "were"
        return Check(key, title, PASS, f"{what}; request{'s' * (len(reqs) > 1)} {ids} {verb} answered legally in time")

    def _left(self) -> str:
        """How the bot went away (connection closed, process status)."""
        if self.left_note:
            return self.left_note
        if self.proc is not None and not self.proc.running:
            return f"the bot left: its process exited with status {self.proc.process.returncode} (see its output below)"
        return "the bot left: it closed the connection"

    def _replies_to_doctor_lines(self) -> str:
        """A bot line sent right after a doctor line, while no request was pending."""
        lines = self.wire.lines
        for i, wl in enumerate(lines):
            if wl.src != "doctor":
                continue
            for nxt in lines[i + 1 :]:
                if nxt.src == "server" and nxt.msg and nxt.msg.get("type") == "request":
                    break
                if nxt.src == "bot":
                    for bl in self.wire.bot_lines:
                        if bl.line is nxt and bl.kind not in ("answer", "hello"):
                            return _bot_line_text(bl)
        return ""


def _count(bad: list[Any], reqs: list[Req]) -> str:
    return f"\n({len(bad)} of {len(reqs)} requests)" if len(bad) > 1 else ""


def _bot_line_text(bl: BotLine) -> str:
    parts = [f"{bl.problem}", f"bot sent: {_quote(bl.line.raw)}"]
    if bl.server_error is not None:
        parts.append(f"server: {_error_text(bl.server_error)}")
    return "\n".join(parts)


def _first_bot_line(wire: Wire) -> str:
    for wl in wire.lines:
        if wl.src == "bot":
            return _quote(wl.raw)
    return "nothing"


def _tail(path: Path, lines: int = 15, limit: int = 3000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data[-limit:].decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- entry points


async def run_doctor(
    manifest_path: str | Path,
    *,
    move_ms: int = 2000,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    keep_logs: bool | None = None,
    sandbox: bool = False,
    game: str = "ecarte",
) -> Report:
    """Run every check on the bot of ``manifest_path`` and return the :class:`Report`. With
    ``sandbox`` the bot runs under bubblewrap and speaks over stdin/stdout."""
    doctor = Doctor(manifest_path, move_ms=move_ms, connect_timeout_s=connect_timeout_s, keep_logs=keep_logs,
                    sandbox=sandbox, game=game)
    return await doctor.run()


STYLE = {PASS: "bold green", FAIL: "bold red", SKIP: "yellow"}


def print_report(console: Console, report: Report, verbose: bool = False) -> None:
    """Print the table (check, result, details), the bot's output tail when something failed
    (or with ``verbose``), the transcript with ``verbose``, and the summary line."""
    if verbose:
        console.rule("wire transcript (← to the bot, → from the bot)")
        t0 = report.transcript[0].t if report.transcript else 0.0
        for wl in report.transcript:
            arrow = "→" if wl.src == "bot" else ("⇠" if wl.src == "doctor" else "←")
            text = wl.raw.decode("utf-8", errors="replace")
            if report.secret:
                text = text.replace(report.secret, "<ARENA_TOKEN>")
            if len(text) > 200:
                text = text[:199] + "…"
            console.print(Text(f"{(wl.t - t0) * 1000:9.1f} ms {arrow} {text}"), soft_wrap=True)
    table = Table(title=f"arena doctor: {report.bot} ({report.manifest})", show_lines=True)
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("details", overflow="fold")
    for c in report.checks:
        table.add_row(Text(c.title), Text(c.status, style=STYLE[c.status]), Text(c.details))
    console.print(table)
    if report.log_tail and (verbose or not report.ok):
        console.rule("last lines of the bot's output")
        console.print(Text(report.log_tail))
    if report.log_dir:
        console.print(Text(f"bot output and match logs kept in {report.log_dir}"))
    console.print(Text(f"{report.summary()} ({report.seconds:.1f} s)", style="bold green" if report.ok else "bold red"))


def main(manifest_path: str, *, move_ms: int = 2000, verbose: bool = False, sandbox: bool = False,
         game: str = "ecarte") -> int:
    """``arena doctor MANIFEST``: run the checks, print the report; 0 if every check passed
    (skipped situations included), 1 otherwise."""
    report = trio.run(lambda: run_doctor(manifest_path, move_ms=move_ms, sandbox=sandbox, game=game))
    print_report(Console(), report, verbose=verbose)
    return 0 if report.ok else 1


__all__ = ["Check", "Report", "main", "print_report", "run_doctor"]
