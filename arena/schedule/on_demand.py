"""Test matches on demand (issue 22 item 6): unrated games an author asks for between their bot
and a ladder bot, played by the contest server when both bots are free.

**Asking** (:meth:`OnDemand.request`, from the author page's form, ``POST /author/api/tests`` or
``arena bots test``): the author's own bot, a ladder bot (any other bot of the contest), and a
number of games. The author's bot takes seat 0 in the first game, seat 1 in the second, and so
on; each game has a fresh random seed. Quota: at most ``[authors] test_games_per_day`` games a
day per author (a UTC day: the count starts again at 00:00 UTC), at most
``test_games_per_request`` in one request; every game asked counts, played or not. Beyond the
quota the request is refused whole (:class:`Refusal`, HTTP 429, with the seconds until the
reset).

**Playing** (:meth:`OnDemand.start_one`, called by the contest's scheduler): the ladder chooses
first. Only when the scheduler starts no ladder unit (every slot taken, or no pair it wants
now) does it look at the oldest :data:`SCAN` queued games and start the first whose two bots are
both connected and idle, as one match (copy 0 of each launched bot, no duplicate twin). At most
``test_slots`` test games play at once, on top of the ladder's ``concurrency``; a bot in a test
game is busy for the ladder, for one match only, and queues behind the waiting bots when it is
done (the ladder's first come, first served). So test games fill the gaps between ladder
matches and never take a slot or a pair the ladder wanted at that moment. A game whose bots are
not both free within ``test_queue_hours`` is dropped (``aborted``, ``expired``); games a stopped
server left playing are queued again at the next start.

**Unrated**: a test game is never a row of ``matches``: its result goes to ``test_matches`` only
(:mod:`arena.store.test_matches`), so no ladder unit, pair count, rating, leaderboard, public
history, spectator feed or wager ever sees it. Its full log (both seats) is written to
``<logs>/tests/x<id>.jsonl.gz`` for the organiser (``arena replay`` checks it).

**What the author sees** (:class:`SeatLog`, :func:`seat_view`): their seat's view only: the
events their seat saw (never the other seat's hand, discards or the pack), their own bot's
decisions, their own incidents in full and the other seat's by code only, the result; and
beside each of their bot's decisions the output (stderr) their bot wrote while it made that
decision, as CodinGame shows it. The other bot's output is never read. The output is
attributed by position in the bot's output log (:mod:`arena.schedule.botlog`): at each of its
decisions the position is the log's size plus the bytes still waiting in the pipe the launcher
relays to it (``FIONREAD``), so what the bot wrote before answering is never attributed to a
later decision, whatever the order in which the server's tasks ran. A remote bot's output is
not captured (it runs elsewhere). The opponent's author is not told of the test at all: it is
not on their page (their bot's own log holds what it printed, as for any game).
"""

from __future__ import annotations

import fcntl
import logging
import random
import struct
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.match.log import LogAction, LogEvent, LogIncident, LogSeen, MatchLog, incident_for_others, result_for_others
from arena.match.referee import MatchResult
from arena.schedule.fleet import StoreSink
from arena.store import test_matches as rows
from arena.store.health import STORAGE_ERRORS
from arena.store.sqlite import MatchRow

log = logging.getLogger("arena.schedule.on_demand")

SCAN = 64
"""Queued games the scheduler looks at each time it may start one (the oldest first)."""
OUTPUT_PER_DECISION = 8 * 1024
"""The most of a bot's output shown beside one decision (its last bytes; the rest is cut)."""
OUTPUT_PER_MATCH = 1 << 20
"""The most of a bot's output read for one test game."""
SETTLE_S = 1.0
"""After a game, how long (seconds) to wait for the launcher's relay to write the bot's last output."""
DAY_S = 86400
OTHER_DETAIL = "(the other seat's incident: its details are not shown)"
"""What stands for the detail of an incident of the other seat (it may quote that bot's answer)."""


class AuthorsConfig(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[authors]`` section of a contest file: test matches on demand (docs/contests.md,
    "Test matches")."""

    test_games_per_day: int = 50
    """Test games one author may ask for in a UTC day (0: test matches are off)."""
    test_games_per_request: int = 20
    """The most games one request may ask for."""
    test_slots: int = 1
    """Test games played at once, on top of the ladder's ``concurrency``."""
    test_queue_hours: float = 24.0
    """A test game whose bots were not both free within this many hours is dropped."""

    def __post_init__(self) -> None:
        for key in ("test_games_per_day", "test_games_per_request", "test_slots"):
            if not 0 <= getattr(self, key) <= 100_000:
                raise ValueError(f"[authors] {key} must be between 0 and 100000, not {getattr(self, key)!r}")
        if not 0 < self.test_queue_hours <= 24 * 365:
            raise ValueError(f"[authors] test_queue_hours must be over 0 and at most a year, not "
                             f"{self.test_queue_hours!r}")


class Refusal(Exception):
    """A test request refused: ``status`` (HTTP), ``code``, a one-line ``message`` saying what to
    do, and ``retry_after_s`` (the seconds until the quota resets) for a 429."""

    def __init__(self, status: int, code: str, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


def day_window(now: float) -> tuple[float, float]:
    """``(start, end)`` of the UTC day holding ``now`` (Unix seconds)."""
    start = now - now % DAY_S
    return start, start + DAY_S


def _in(seconds: float) -> str:
    minutes = max(1, int(seconds + 59) // 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def pending_bytes(stream: Any) -> int:
    """Bytes written into the pipe behind ``stream`` (a trio ``FdStream``) not yet read; 0 if
    it is gone."""
    if stream is None:
        return 0
    try:
        got = fcntl.ioctl(stream.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except (OSError, ValueError, AttributeError):
        return 0
    return struct.unpack("i", got)[0]


def output_position(proc: Any) -> Callable[[], int]:
    """How far the output of a launched bot copy (:class:`arena.schedule.launcher.BotProcess`)
    has got: the size of its log plus what waits in the pipe relayed into it."""
    pipe = proc.process.stderr if proc.process.stderr is not None else proc.process.stdout

    def position() -> int:
        try:
            size = proc.log_path.stat().st_size
        except OSError:
            size = 0
        return size + pending_bytes(pipe)

    return position


def _plain(obj: Any) -> dict[str, Any]:
    """A log line object (a struct, maybe holding pre-encoded JSON) as plain JSON data."""
    return msgspec.json.decode(msgspec.json.encode(obj))


class SeatLog(MatchLog):
    """A match log that also keeps seat ``seat``'s view of the match (:attr:`lines`) and the
    output position of that seat's bot at each of its decisions (:attr:`marks`: the position at
    the start, then one per decision). ``position`` is None for a bot whose output is not
    captured."""

    def __init__(self, path: Path | None, seat: int, position: Callable[[], int] | None) -> None:
        super().__init__(path)
        self.seat = seat
        self.position = position
        self.lines: list[dict[str, Any]] = []
        self.marks: list[int] = [position()] if position is not None else []

    def write_all(self, objs: Any, seal: bool = False) -> None:
        objs = list(objs)
        for obj in objs:
            self._see(obj)
        super().write_all(objs, seal=seal)

    def _see(self, obj: Any) -> None:
        seat = self.seat
        if isinstance(obj, (LogSeen, LogEvent)):
            if seat in obj.seen_by:
                self.lines.append(_plain(obj))
        elif isinstance(obj, LogAction):
            if obj.seat == seat:  # the other seat's actions show through the events it saw (a discard does not)
                line = _plain(obj)
                if self.position is not None:
                    self.marks.append(self.position())
                    line["decision_no"] = len(self.marks) - 2
                self.lines.append(line)
        elif isinstance(obj, LogIncident):
            line = _plain(obj)
            self.lines.append(line if obj.seat == seat else {**incident_for_others(line),
                                                             "detail": OTHER_DETAIL})
        elif isinstance(obj, dict) and obj.get("type") == "match":
            self.lines.append({"type": "match", "match_id": obj.get("match_id"), "game": obj.get("game"),
                               "bots": obj.get("bots"), "seat": seat})
        elif isinstance(obj, dict) and obj.get("type") == "result":
            line = _plain(obj)
            self.lines.append(line if line.get("faulty") == seat else result_for_others(line))


def slices(data: bytes, start: int, marks: list[int], end: int) -> tuple[list[str], str]:
    """The output of each decision and what came after the last one: ``data`` holds the log's
    bytes from position ``start``; decision ``k`` wrote the bytes between ``marks[k]`` and
    ``marks[k + 1]`` (``marks[0]``: the match's start), the rest up to ``end`` came after. Each
    piece is at most :data:`OUTPUT_PER_DECISION` bytes (its last ones), decoded leniently."""

    def piece(a: int, b: int) -> str:
        raw = data[max(0, a - start):max(0, b - start)]
        cut = len(raw) > OUTPUT_PER_DECISION
        text = raw[-OUTPUT_PER_DECISION:].decode("utf-8", "replace")
        return ("[... earlier output cut]\n" if cut else "") + text

    per = [piece(marks[k], marks[k + 1]) for k in range(len(marks) - 1)]
    return per, piece(marks[-1], end) if marks else ""


def seat_view(lines: list[dict[str, Any]], outputs: list[str] | None, after: str, note: str = "") -> dict[str, Any]:
    """The author's view of a test game as stored (JSON): ``{"lines": [...], "output_captured",
    "after", "note"}``; each own ``action`` line gets ``"output"`` (its decision's output, or None
    when not captured)."""
    out = []
    for line in lines:
        if line.get("type") == "action":
            k = line.pop("decision_no", None)
            line = {**line, "output": outputs[k] if outputs is not None and k is not None and k < len(outputs)
                    else None}
        out.append(line)
    return {"lines": out, "output_captured": outputs is not None, "after": after, "note": note}


class OnDemand:
    """The test matches of ``contest`` (an :class:`arena.schedule.contest.Contest`); see the
    module docstring. ``now`` is the wall clock (Unix seconds) of quotas and stamps: tests
    inject their own."""

    def __init__(self, contest: Any, now: Callable[[], float] = time.time) -> None:
        self.contest = contest
        self.now = now
        self.config: AuthorsConfig = contest.config.authors
        self.running = 0
        self.maybe_queued = True
        """False once a look found the queue empty; a request sets it again."""
        self._expired_at = 0.0
        self._rng = random.SystemRandom()

    # ------------------------------------------------------------------ asking

    def quota(self, author: dict[str, Any]) -> dict[str, Any]:
        """``{"per_day", "used", "left", "resets_at" (Unix seconds), "per_request"}`` for ``author``."""
        per_day = self.config.test_games_per_day
        now = self.now()
        start, end = day_window(now)
        used = rows.asked_since(self.contest.store, author["id"], start, per_day + 1)
        return {"per_day": per_day, "used": used, "left": max(0, per_day - used), "resets_at": end,
                "per_request": self.config.test_games_per_request}

    def request(self, author: dict[str, Any], bot: str, vs: str, games: Any) -> dict[str, Any]:
        """Queue ``games`` test games of the author's ``bot`` against ladder bot ``vs``. Returns
        ``{"tests": [ids], "bot", "vs", "games", "quota"}``; raises :class:`Refusal` (400 a bad
        number, 404 a bot that is not theirs or no such opponent, 403 test matches off, 429 over
        the day's quota with the seconds until it resets)."""
        store, cfg = self.contest.store, self.config
        if cfg.test_games_per_day == 0:
            raise Refusal(403, "tests_off", "this contest does not play test matches")
        if isinstance(games, bool) or not isinstance(games, int):
            try:
                games = int(str(games).strip())
            except ValueError:
                raise Refusal(400, "bad_games", f"games must be a whole number, not {str(games)[:40]!r}") from None
        if not 1 <= games <= cfg.test_games_per_request:
            raise Refusal(400, "bad_games", f"ask for 1 to {cfg.test_games_per_request} games, not {games}")
        owner = store.bot_owner(bot)
        if owner is None or owner[0] != author["id"]:
            raise Refusal(404, "no_such_bot", f"no bot of yours named {bot[:40]!r}: `arena bots upload` it first")
        if vs == bot:
            raise Refusal(400, "same_bot", "choose another bot as the opponent: a bot cannot play itself")
        try:
            store.bot_id(vs)
        except KeyError:
            raise Refusal(404, "no_such_opponent", f"no bot named {vs[:40]!r} in this contest: pick one from the "
                          "leaderboard") from None
        now = self.now()
        start, end = day_window(now)
        plan = [(i % 2, self._rng.getrandbits(31)) for i in range(games)]
        got = rows.add(store, author["id"], bot, vs, self.contest.config.game, plan, now, cfg.test_games_per_day,
                       start)
        if isinstance(got, int):
            raise Refusal(429, "quota", f"at most {cfg.test_games_per_day} test games a day: you have asked for "
                          f"{got} today and {games} more would pass it; the quota resets at 00:00 UTC (in "
                          f"{_in(end - now)})", retry_after_s=int(end - now) + 1)
        self.maybe_queued = True
        self.contest._poke()
        return {"tests": got, "bot": bot, "vs": vs, "games": games, "quota": self.quota(author)}

    # ------------------------------------------------------------------ playing

    def recover(self) -> None:
        """At start: games a stopped server left playing are queued again."""
        if rows.requeue_playing(self.contest.store):
            self.maybe_queued = True

    def start_one(self, nursery: trio.Nursery) -> bool:
        """Start the oldest queued test game whose two bots are both ready, if a test slot is
        free; True if one started (the scheduler calls this when the ladder starts nothing)."""
        contest = self.contest
        if self.running >= self.config.test_slots or not self.maybe_queued:
            return False
        store, now = contest.store, self.now()
        if now - self._expired_at > 60:
            self._expired_at = now
            rows.expire(store, now - self.config.test_queue_hours * 3600, now,
                        f"not played: the two bots were not both free within {self.config.test_queue_hours:g} h")
        queue = rows.queued(store, SCAN)
        if not queue:
            self.maybe_queued = False
            return False
        ready = set(contest.ready_bots())
        for row in queue:
            if row["bot"] in ready and row["opponent"] in ready and rows.start(store, row["id"], now):
                contest.busy.update((row["bot"], row["opponent"]))
                self.running += 1
                nursery.start_soon(self._play, row)
                return True
        return False

    async def _play(self, row: dict[str, Any]) -> None:
        """Play one test game and record it (see the module docstring)."""
        contest = self.contest
        bot, opponent, seat = row["bot"], row["opponent"], row["seat"]
        bot0, bot1 = (bot, opponent) if seat == 0 else (opponent, bot)
        key = f"x{row['id']}"
        match = MatchRow(id=0, tournament_id=0, idx=0, match_key=key, game=row["game"], bot0=bot0, bot1=bot1,
                         seed=row["seed"], status="pending")
        proc = contest.procs.get((bot, 0))
        position = output_position(proc) if proc is not None else None
        seat_log: list[SeatLog] = []
        results: list[MatchResult] = []

        def open_log(path: Path | None) -> SeatLog:
            seat_log.append(SeatLog(path, seat, position))
            return seat_log[0]

        def keep(match_key: str, result: MatchResult, log_path: str | None, log_hash: str | None) -> None:
            results.append(result)

        try:
            try:
                result = await contest.fleet.play(match, contest.config.match_config(),
                                                  Path(contest.config.logs) / "tests", StoreSink(match, keep),
                                                  log_factory=open_log)
            except trio.Cancelled:
                with trio.CancelScope(shield=True):  # a shutdown: played again from its seed at the next start
                    self._requeue(row["id"])
                raise
            except Exception:  # a bug in one test game ends that game, never the server
                log.exception("test match %s failed", key)
                self._finish(row["id"], None, "aborted", None, "internal error (see the server's log)")
                return
            view = await self._view(seat_log[0] if seat_log else None, proc, position)
            self._finish(row["id"], result, "aborted" if result.reason == "aborted" else "done", view, result.detail)
        finally:
            contest.busy.difference_update((bot, opponent))
            contest.pairing.idle(bot, opponent)
            self.running -= 1
            contest._poke()

    def _requeue(self, test_id: int) -> None:
        try:
            rows.requeue(self.contest.store, test_id)
        except STORAGE_ERRORS:  # left playing: the next start queues it again
            pass

    def _finish(self, test_id: int, result: MatchResult | None, status: str, view: dict[str, Any] | None,
                detail: str | None) -> None:
        try:
            rows.finish(self.contest.store, test_id, status=status,
                        winner_seat=result.winner if result else None,
                        scores=list(result.scores) if result else [0, 0],
                        reason=result.reason if result else "aborted", detail=detail or "", view=view, now=self.now())
        except STORAGE_ERRORS as exc:  # left playing: queued again at the next start
            self.contest.health.fail("database", exc)

    async def _view(self, seat_log: SeatLog | None, proc: Any, position: Callable[[], int] | None) -> dict | None:
        """The author's view of the game just played, with their bot's output per decision."""
        if seat_log is None:
            return None
        if position is None or proc is None:
            return seat_view(seat_log.lines, None, "", "your bot's output is not captured here: it runs on your "
                             "side (a remote bot)")
        end = position()
        with trio.move_on_after(SETTLE_S):  # the relay writes what was still in the pipe
            while _size(proc.log_path) < end:
                await trio.sleep(0.01)
        marks = seat_log.marks
        start = marks[0]
        size = _size(proc.log_path)
        if size < start:  # restarted meanwhile: a fresh log
            return seat_view(seat_log.lines, None, "", "your bot was restarted during the game: its output is on "
                             "your page under 'captured output'")
        stop = min(end, start + OUTPUT_PER_MATCH)
        try:
            with open(proc.log_path, "rb") as fh:
                fh.seek(start)
                data = fh.read(stop - start)
        except OSError:
            data = b""
        per, after = slices(data, start, marks, min(end, stop))
        return seat_view(seat_log.lines, per, after)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
