"""The verdicts: from what crossed the wire to one row per check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.tools.doctor.checks import GLOBAL_CHECKS, PLAYED_OUT
from arena.tools.doctor.limits import LONG_LINE_BYTES
from arena.tools.doctor.report import FAIL, PASS, SKIP, Check
from arena.tools.doctor.wire import BotLine, Req, Wire, _error_text, _quote, _short_json


class Verdicts:
    """The checks of a :class:`arena.tools.doctor.session.Doctor` run, built from its recorded wire
    (``self.wire``), its runs and probes; mixed into the ``Doctor``."""

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
