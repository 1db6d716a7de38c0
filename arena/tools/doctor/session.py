"""One doctor run: a private arena, the bot launched against it, the scripted matches, the
probes, the bid and goodbye. The verdicts are :mod:`arena.tools.doctor.verdicts`."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.match.core import MatchConfig
from arena.match.runner import MatchRunner, MatchSpec
from arena.match.seat import SendFailed
from arena.net.server import ArenaServer, ServerConfig
from arena.net.tls import CA_ENV, TLS_ENV, server_context, throwaway_certificate
from arena.schedule import cgroups
from arena.schedule.formats.chouette import legal_bids
from arena.schedule.launcher import BotProcess, Limits, Manifest, launch, limits_line, load_manifest
from arena.schedule.tournament import ask_bid
from arena.store.sqlite import Store
from arena.tools.doctor.checks import PIQUET_SITUATIONS, PLAYED_OUT, SITUATIONS
from arena.tools.doctor.ecarte import DEALER_X, ELDER_X, FOLLOW, KING_ELDER, TRUMP, DealPlan, draw_pack
from arena.tools.doctor.limits import (
    BURST_BYTES,
    BURST_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    EXIT_WAIT_S,
    LINGER_S,
    LONG_LINE_BYTES,
    MATCH_CAP_S,
    OPPONENT,
    RETRY_BUDGET_S,
    RETRY_ROUNDS,
)
from arena.tools.doctor.opponent import Opponent
from arena.tools.doctor.piquet import PQ_32, PQ_36, PiquetPlan
from arena.tools.doctor.report import FAIL, PASS, Check, Report
from arena.tools.doctor.transport import Proxy
from arena.tools.doctor.verdicts import Verdicts, _first_bot_line, _tail
from arena.tools.doctor.wire import Wire, _error_text, _quote
from protocol.messages import AuctionView, Goodbye, TimeControl


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


class Doctor(Verdicts):
    """One doctor run; see the module docstring. Call :meth:`run`."""

    def __init__(
        self,
        manifest_path: str | Path,
        move_ms: int = 2000,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        keep_logs: bool | None = None,
        sandbox: bool = False,
        game: str = "ecarte",
        tls: bool = False,
        limits: Limits | None = None,
    ) -> None:
        if game not in ("ecarte", "piquet"):
            raise ValueError(f"unknown game {game!r}: ecarte or piquet")
        if tls and sandbox:
            raise ValueError("TLS is for a bot that connects over TCP: --tls cannot go with --sandbox (stdin/stdout)")
        self.manifest_path = str(manifest_path)
        self.sandbox = sandbox
        self.tls = tls
        self.limits = limits or Limits()
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
        self.tls_files: tuple[Path, Path] = (Path(), Path())  # with tls: the throwaway cert.pem and key.pem
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
        if self.tls:  # the bot's TLS client meets a throwaway certificate, its CA handed over in ARENA_TLS_CA
            try:
                self.tls_files = throwaway_certificate(log_dir)
            except BaseException:
                shutil.rmtree(log_dir, ignore_errors=True)
                raise
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
        report = Report(name, self.manifest_path, self._build_checks(), log_tail=tail, limits=self._limits_note(),
                        limits_brief=self._limits_note(detail=False))
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
        ssl_context = server_context(*map(str, self.tls_files), what="arena doctor --tls:") if self.tls else None
        proxy = Proxy(self.wire, port, linger_s=LINGER_S, ssl_context=ssl_context)
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
            TLS_ENV: "1" if self.tls else "0",  # not the author's own ARENA_TLS: the doctor's port is its own
        }
        if self.tls:
            env[CA_ENV] = str(self.tls_files[0])
        t_launch = trio.current_time()
        try:
            self.proc = await launch(nursery, self.manifest, env, log_dir / "bot.log", self.limits,
                                     sandbox=self.sandbox)
        except (OSError, RuntimeError) as exc:
            self.checks["connects"] = Check("connects", "launch and connect", FAIL, f"cannot start the bot: {exc}")
            return
        if not await self._wait_connected(server, name, t_launch):
            return
        await self._play(server, name, log_dir)
        await self._bid(server, name)
        await self._goodbye(server, name)
        await opponent.aclose()

    def _limits_note(self, detail: bool = True) -> str:
        """How the bot's memory was limited (:func:`arena.schedule.launcher.limits_line`), and
        the peak its cgroup was charged, or that it was killed for going over."""
        line = limits_line(self.limits, detail)
        if self.proc is not None and self.proc.oom_killed:
            line += "; the bot was killed for going over its memory limit"
        elif self.proc is not None and self.proc.memory_peak is not None:
            line += f"; peak use of the bot: {cgroups.human(self.proc.memory_peak)}"
        return line

    def _transport(self) -> str:
        if self.sandbox:
            return "in the sandbox over stdin/stdout (ARENA_TRANSPORT=stdio, docs/protocol.md §3.4)"
        if self.tls:
            return f"over TLS ({TLS_ENV}=1, the doctor's throwaway CA in {CA_ENV})"
        return "over TCP"

    def _tls_note(self) -> str:
        """With ``--tls``, why the bot's TLS handshakes failed, if they did."""
        failures = self.proxy.tls_failures if self.proxy is not None else []
        return f"; its TLS handshake failed: {failures[-1]}" if failures else ""

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
                        f"{now - t_launch:.1f} s after launch (see its output below){self._tls_note()}",
                    )  # fmt: skip
                    return False
            if now > deadline:
                what = "connected to the arena but sent no accepted hello" if wire.connections else "never connected"
                self.checks["connects"] = Check(
                    "connects", "launch and connect", FAIL,
                    f"{what} within {self.connect_timeout_s:.0f} s (ARENA_HOST/ARENA_PORT were "
                    f"127.0.0.1:{self.proxy.port}); see its output below{self._tls_note()}",
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
        spec = MatchSpec(match_id, 1000 + self.match_no, config, (conns[0].name, conns[1].name), packs=packs)
        runner = MatchRunner(spec, conns, log_path=log_dir / f"{match_id}.jsonl")
        with trio.move_on_after(MATCH_CAP_S) as cap:
            result = await runner.run()
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
        view = AuctionView(bot=name, bankroll=1000, bankrolls={name: 1000, self.opponent.name: 880},
                           queue=[self.opponent.name, name], auction=1, reigns=[[self.opponent.name, 120, 1]])
        await ask_bid(conn, auction_id, legal_bids(1000), view)  # the verdict reads the wire
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
