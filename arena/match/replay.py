"""Replaying a match log: the rules engine run again on its actions, every line checked against
it, and (in a version 2 log) every charge judged again (:func:`replay`); :func:`verify_file` and
:func:`verify_bytes` check a log's hash chain (:func:`arena.match.log.verify_chain`) then replay it.
The format of the lines is :mod:`arena.match.log`'s.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, get_type_hints

import msgspec

from arena.games import GAMES
from arena.games.base import IllegalAction, offer
from arena.match.limits import LIMITS, Limits
from arena.match.log import RAW_BYTES, normalise, offered_fields, raw_bytes, read_bytes, verify_chain
from protocol.framing import ProtocolError, decode_client
from protocol.messages import ActionMsg, Rules, TimeControl


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
    hints = get_type_hints(limits, include_extras=True)["max_line_bytes"]
    least: int = next(m.ge for m in getattr(hints, "__metadata__", ()) if getattr(m, "ge", None) is not None)
    return least


def replay(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Re-run the rules engine on a match log and check every line against it.

    ``lines`` as returned by :func:`~arena.match.log.read_log`. The header's game, seed and config rebuild the
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
        return result  # ended before its first event: a bot never connected (arena.match.log.write_unplayed)
    if pos != len(expected):
        raise ReplayError(f"the log stops before the engine's event {expected[pos][0]}")
    if result["scores"] != engine.scores or result["manches"] != engine.manches:
        raise ReplayError(f"result scores {result['scores']} but the engine has {engine.scores}")
    if result["reason"] == "target" and (not engine.over or result["winner"] != engine.winner):
        raise ReplayError(f"result winner {result['winner']} but the engine's is {engine.winner}")
    return result


def verify_file(path: str | Path, expected_last: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Verify a match log file: its hash chain (and last hash, if given) then an engine replay
    (:func:`replay`). Returns ``(lines, result line)``; raises :class:`~arena.match.log.ChainError` or
    :class:`ReplayError` (also for a chained file that is not a match log: deep JSON, fields
    missing or of the wrong type), never anything else but ``OSError``."""
    return verify_bytes(read_bytes(path), expected_last)


def verify_bytes(raw: bytes, expected_last: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """:func:`verify_file` of a log's uncompressed bytes (:func:`~arena.match.log.decompress`), wherever they were
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
