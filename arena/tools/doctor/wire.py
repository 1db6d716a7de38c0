"""Everything that crossed the bot's connection, recorded and classified as it goes: the
requests and their answers, the bot's lines, the matches."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from arena.games.base import IllegalAction, check_choice
from arena.tools.doctor.checks import classify
from arena.tools.doctor.limits import SNIPPET
from protocol.framing import ProtocolError, decode_client
from protocol.messages import ActionMsg, Compact, Hello


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
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
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
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
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
