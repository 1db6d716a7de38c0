"""``arena serve``: a long-running contest server.

One process serves, on trio:

* TCP for bots and spectators (:class:`arena.server.ArenaServer`), the protocol of
  docs/protocol.md;
* HTTP for the web page, its live feed and Prometheus ``/metrics`` (:mod:`arena.web`).

It schedules matches continuously among the bots that are connected and idle (a *ladder*):
``pairing = "round-robin"`` plays next the ready pair that has met least, ``"rating"`` pairs
bots close on the persistent ladder. Each scheduled unit is a duplicate pair (two matches, one
seed, seats swapped) unless ``duplicate = false``. Every result is committed (and the persistent
Elo of both bots updated in the same transaction) before anyone hears of it.

Bots submitted with ``arena bots submit`` are launched by the server itself, contained by
:mod:`arena.launcher`, and relaunched if they die. Remote bots registered with
``arena bots add`` connect from anywhere with their token.

SIGTERM (or Ctrl-C) shuts down cleanly: no new match starts; matches in play get
``shutdown_grace_s`` to finish, and any still running are recorded as ``aborted``; every client
gets ``goodbye``; launched bots are stopped. Nothing is lost.

The configuration is a TOML file (see docs/contest.example.toml and :class:`ContestConfig`).
"""

from __future__ import annotations

import random
import signal
import tomllib
from collections import Counter
from pathlib import Path
from typing import Literal

import msgspec
import trio

from arena.copies import PAIR_COPIES, bot_log, launch_copy, secrets_of
from arena.formats import Pairing, derive_seed
from arena.launcher import BotProcess, Limits, SandboxError, load_manifest
from arena.metrics import METRICS
from arena.referee import MatchConfig
from arena.server import ArenaServer, ServerConfig
from arena.spectate import SpectatorHub, Subscriber
from arena.store import Store
from arena.tournament import play_match
from arena.wagers import Ledger, LedgerRecord, WagerError
from protocol.messages import BetPlaced, BetSettled, Betting, Goodbye, Rules, TimeControl


class ContestConfig(msgspec.Struct, forbid_unknown_fields=True):
    """A contest: every key of the TOML file (sections ``[rules]``, ``[time]``, ``[server]``,
    ``[limits]``; the rest at the top level). Units: seconds (``*_s``), milliseconds (``*_ms``)."""

    name: str = "arena"
    game: Literal["ecarte", "piquet"] = "ecarte"
    db: str = "arena.db"
    logs: str = "logs"
    pairing: Literal["round-robin", "rating"] = "round-robin"
    duplicate: bool = True
    concurrency: int = 2
    seed: int | None = None
    """Seed of the match seeds; None: a fresh random one at each start (recorded)."""
    max_matches: int | None = None
    """Stop scheduling after this many matches (None: run until SIGTERM)."""
    reveal_delay_s: float = 0.0
    shutdown_grace_s: float = 10.0
    betting_s: float = 0.0
    """Gallery wagers (ecarte.md §E9.1): seconds betting stays open before each match (0: none)."""
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    sandbox: bool = False
    """Kept for old contest files: submitted bots are sandboxed unless ``trust_bots``."""
    trust_bots: bool = False
    """UNSAFE: launch submitted bots as plain processes, without bubblewrap (docs/contests.md,
    "Security model"); without it and without ``bwrap`` they are not launched at all."""
    duplicate_remote: bool = False
    """Play duplicate pairs with remote bots too (trusting them not to remember a pack: one
    connection plays both halves); otherwise their units are two unpaired matches."""
    on_timeout: Literal["forfeit", "auto"] = "forfeit"
    max_strikes: int = 3
    max_illegal: int = 0
    rules: Rules = msgspec.field(default_factory=Rules)
    time: TimeControl = msgspec.field(default_factory=TimeControl)
    server: ServerConfig = msgspec.field(default_factory=lambda: ServerConfig(port=7000))
    limits: Limits = msgspec.field(default_factory=Limits)

    def match_config(self) -> MatchConfig:
        """How each match of the contest is played."""
        return MatchConfig(game=self.game, rules=self.rules, time=self.time, on_timeout=self.on_timeout,
                           max_strikes=self.max_strikes, max_illegal=self.max_illegal)


def load_config(path: str | Path) -> ContestConfig:
    """Read a contest TOML file; ``ValueError`` naming the file and the bad key."""
    from arena.games import validate_rules

    try:
        raw = tomllib.loads(Path(path).read_text())
        if isinstance(raw.get("server"), dict):
            raw["server"].setdefault("port", 7000)  # the documented default, also with a [server] table
        cfg = msgspec.convert(raw, ContestConfig)
    except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    validate_rules(cfg.game, cfg.rules)
    if cfg.concurrency < 1:
        raise ValueError(f"{path}: concurrency must be at least 1")
    return cfg


class BettingDesk:
    """The contest's gallery wagers (ecarte.md §E9.1): the pure :class:`arena.wagers.Ledger`,
    saved to the database after every change (a checked snapshot, plus the settled bets as
    history rows in the same transaction), and the feeds of the betting spectators connected,
    who are told of each bet's outcome. Amounts in cents."""

    def __init__(self, store: Store, hub: SpectatorHub) -> None:
        self.store = store
        self.hub = hub
        loaded = store.load_ledger()
        if loaded is None:
            self.ledger, self.settled_levies = Ledger(), 0
        else:
            record = msgspec.json.decode(loaded[0], type=LedgerRecord)
            self.ledger, self.settled_levies = Ledger.restore(record, settled_levies=loaded[1]), loaded[1]
        self.subscribers: dict[str, Subscriber] = {}

    def save(self, settled: list[tuple] = ()) -> None:
        """Persist the ledger (and settled bets)."""
        self.store.save_ledger(msgspec.json.encode(self.ledger.snapshot()), self.settled_levies, list(settled))

    def deposit(self, name: str, cents: int) -> int:
        """Credit a spectator's bankroll (the only way money enters); returns the balance."""
        balance = self.ledger.deposit(name, cents)
        self.save()
        return balance

    def open(self, match_id: str, bots: list[str], closes_ms: int) -> None:
        """Open the book of a match and tell every spectator."""
        self.ledger.open_book(match_id)
        self.save()
        self.hub.announce(Betting(match_id=match_id, bots=bots, closes_ms=closes_ms))

    def place(self, bettor: str, match_id: str, seat: int, cents: int) -> BetPlaced:
        """Take a stake; raises :class:`arena.wagers.WagerError` (with its ``code``)."""
        self.ledger.book(match_id).place(bettor, seat, cents)
        self.save()
        return BetPlaced(match_id=match_id, seat=seat, cents=cents, balance=self.ledger.balance(bettor))

    def close(self, match_id: str) -> None:
        """Close betting: the heavier side is refunded newest first."""
        self.ledger.book(match_id).close()
        self.save()

    def settle(self, match_id: str, winner: int | None, reason: str) -> None:
        """Pay out (or return everything for a forfeit, abort or draw) and tell the bettors."""
        try:
            book = self.ledger.book(match_id)
        except WagerError:
            return
        result = book.settle(winner, reason)
        self.settled_levies += result.levy
        self.ledger.forget(match_id)
        rows = [(match_id, b.seq, b.bettor, b.seat, b.stake, b.matched, b.returned, b.payout, b.levy, b.status,
                 reason) for b in result.bets]
        self.save(rows)
        for b in result.bets:
            sub = self.subscribers.get(b.bettor)
            if sub is not None:
                sub.push(BetSettled(match_id=match_id, seat=b.seat, stake=b.stake, returned=b.returned,
                                    payout=b.payout, status=b.status, balance=self.ledger.balance(b.bettor)))


class Contest:
    """A running contest; see the module docstring. ``port`` and ``http_port`` are the bound
    ports once :meth:`run` has started (``task_status.started()`` reports them)."""

    def __init__(self, config: ContestConfig, store: Store | None = None) -> None:
        self.config = config
        self.store = store or Store(config.db)
        self.hub = SpectatorHub(config.reveal_delay_s)
        self.server = ArenaServer(self.store, config.server, hub=self.hub)
        self.desk = BettingDesk(self.store, self.hub)
        self.server.desk = self.desk
        self.seed = config.seed if config.seed is not None else random.SystemRandom().getrandbits(31)
        self.tournament_id = 0
        self.busy: set[str] = set()
        self.running = 0
        self.matches_started = 0
        self.stopping = trio.Event()
        self.procs: dict[tuple[str, int], BotProcess] = {}
        self.launched: set[str] = set()  # names of the submitted bots, launched as copies
        self.copies = PAIR_COPIES if config.duplicate else 1
        self.port: int | None = None
        self.http_port: int | None = None
        self._changed = trio.Event()

    # ------------------------------------------------------------------ scheduling

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def ready_bots(self) -> list[str]:
        """Connected, idle bots, by name (a launched bot once all its copies are connected)."""
        return sorted(n for n, c in self.server.bots.items() if not c.closed.is_set() and n not in self.busy
                      and (n not in self.launched or all(self.server.connection(n, k) for k in range(self.copies))))

    def next_pair(self) -> tuple[str, str] | None:
        """The pair to play next among ready bots (see ``pairing``), or None."""
        ready = self.ready_bots()
        if len(ready) < 2:
            return None
        met = Counter()
        for b0, b1 in self.store.db.execute(
            "SELECT bot0, bot1 FROM matches WHERE game=? AND status='done'", (self.config.game,)
        ):
            met[frozenset((b0, b1))] += 1
        pairs = [(a, b) for i, a in enumerate(ready) for b in ready[i + 1 :]]
        if self.config.pairing == "round-robin" and self.running:
            # with few bots the idle ones are often the pair that just played: rather than
            # replay it, wait for a busy bot whose pairing is due (round-robin fairness)
            connected = sorted(n for n, c in self.server.bots.items() if not c.closed.is_set())
            least = min(met[frozenset((a, b))] for i, a in enumerate(connected) for b in connected[i + 1 :])
            pairs = [p for p in pairs if met[frozenset(p)] <= least]
            if not pairs:
                return None
        if self.config.pairing == "rating":
            elo = {bot: r for bot, r, _ in self.store.ladder(self.config.game)}
            return min(pairs, key=lambda p: (abs(elo.get(p[0], 1500) - elo.get(p[1], 1500)),
                                             met[frozenset(p)], p))
        return min(pairs, key=lambda p: (met[frozenset(p)], p))

    async def _play_unit(self, a: str, b: str) -> None:
        """A duplicate pair (or one match) between ``a`` and ``b``."""
        cfg = self.config
        try:
            k = self.matches_started
            seed = derive_seed(self.seed, "ladder", k)
            legs = [(a, b), (b, a)] if cfg.duplicate else [(a, b)]
            # a remote bot plays both halves itself: paired only if the organiser trusts it to
            paired = cfg.duplicate and (cfg.duplicate_remote or {a, b} <= self.launched)
            pair = f"{a}|{b}|{k}" if paired else None
            self.matches_started += len(legs)
            for i, (x, y) in enumerate(legs):
                if self.stopping.is_set() and i > 0:
                    break
                leg_seed = seed if paired or i == 0 else derive_seed(self.seed, "ladder", k + i)
                copies = (i % self.copies if x in self.launched and paired else 0,
                          i % self.copies if y in self.launched and paired else 0)
                p = Pairing(index=k + i, bot0=x, bot1=y, seed=leg_seed, pair=pair)
                row = self.store.add_match(self.tournament_id, cfg.game, p)
                logs = Path(cfg.logs) / f"t{self.tournament_id}"
                betting = cfg.betting_s > 0
                if betting:
                    self.desk.open(row.match_key, [x, y], int(cfg.betting_s * 1000))
                    await trio.sleep(cfg.betting_s)
                    self.desk.close(row.match_key)
                result = None
                try:
                    result = await play_match(self.store, self.server, row, cfg.match_config(), logs,
                                              hub=self.hub, pair=pair, abort_on_cancel=True, copies=copies)
                finally:
                    if betting:  # settled whatever happened: an aborted match returns every stake
                        self.desk.settle(row.match_key, result.winner if result else None,
                                         result.reason if result else "aborted")
        finally:
            self.busy.difference_update((a, b))
            self.running -= 1
            self._poke()

    async def _scheduler(self, nursery: trio.Nursery) -> None:
        cfg = self.config
        while not self.stopping.is_set():
            limit_hit = cfg.max_matches is not None and self.matches_started >= cfg.max_matches
            pair = None if limit_hit or self.running >= cfg.concurrency else self.next_pair()
            METRICS.queue_depth.set(len(self.ready_bots()) // 2)
            if pair is None:
                with trio.move_on_after(0.5):  # bots come and go: look again now and then
                    await self._changed.wait()
                continue
            self.busy.update(pair)
            self.running += 1
            nursery.start_soon(self._play_unit, *pair)

    # ------------------------------------------------------------------ launched bots

    async def _launch_submitted(self, nursery: trio.Nursery) -> None:
        """Launch every submitted bot (as ``self.copies`` copies, :mod:`arena.copies`) and
        relaunch any copy that dies (at most once a second)."""
        rows = self.store.submissions()
        hide = secrets_of(self.store.path, self.config.logs)
        while not self.stopping.is_set():
            self.launched = {row[0] for row in rows}
            for name, manifest_path, sandbox in rows:
                for copy in range(self.copies):
                    proc = self.procs.get((name, copy))
                    if proc is not None and proc.running:
                        continue
                    try:
                        m = load_manifest(manifest_path)
                    except ValueError:
                        continue
                    m.name = name  # its stored token was never shown: each copy gets its own
                    env = {"ARENA_HOST": self.config.server.host, "ARENA_PORT": str(self.port),
                           "ARENA_BOT_SEED": str(derive_seed(self.seed, "bot", name))}
                    others = [str(Path(r[1]).parent) for r in rows if r[0] != name]
                    try:
                        log = bot_log(Path(self.config.logs), self.store.bot_id(name), copy)
                        self.procs[(name, copy)] = await launch_copy(
                            nursery, self.server, m, copy, env, log, self.config.limits,
                            bool(sandbox) or self.config.sandbox or not self.config.trust_bots, hide, others)
                    except (OSError, SandboxError, KeyError):  # KeyError: removed meanwhile
                        continue
            with trio.move_on_after(1.0):
                await self.stopping.wait()
            rows = self.store.submissions()

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until SIGTERM/SIGINT or :meth:`stop`; then shut down cleanly."""
        from arena.web import serve_http

        cfg = self.config
        self.store.db.execute(  # a previous server that died left ladder matches pending: they never finished
            "UPDATE matches SET status='aborted', reason='aborted', detail='server stopped' WHERE status='pending' "
            "AND tournament_id IN (SELECT id FROM tournaments WHERE format='ladder')"
        )
        self.tournament_id = self.store.create_tournament(cfg.game, "ladder", self.seed, cfg, [], [])
        async with trio.open_nursery() as outer:
            self.hub.nursery = outer
            self.port = await outer.start(self.server.serve)
            self.http_port = await outer.start(serve_http, self, cfg.http_host, cfg.http_port)
            outer.start_soon(self._signals)
            outer.start_soon(self._launch_submitted, outer)
            task_status.started((self.port, self.http_port))
            async with trio.open_nursery() as matches:
                sched = trio.CancelScope()

                async def scheduler() -> None:
                    with sched:
                        await self._scheduler(matches)

                matches.start_soon(scheduler)
                await self.stopping.wait()
                sched.cancel()
                with trio.move_on_after(cfg.shutdown_grace_s):
                    while self.running:
                        await self._changed.wait()
                matches.cancel_scope.cancel()  # still running: recorded as aborted by play_match
            await self._goodbye()
            self.store.finish_tournament(self.tournament_id)
            outer.cancel_scope.cancel()

    def stop(self) -> None:
        """Begin a clean shutdown (what SIGTERM does)."""
        self.stopping.set()
        self._poke()

    async def _signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.stop()
                return

    async def _goodbye(self) -> None:
        self.hub.announce(Goodbye(reason="server shutting down"))
        with trio.CancelScope(shield=True):
            await trio.sleep(0.05)  # let spectator writers flush the goodbye
            for conn in [*self.server.bots.values(), *self.server.copies.values()]:
                with trio.move_on_after(1):
                    try:
                        await conn.send(Goodbye(reason="server shutting down"))
                    except Exception:  # noqa: BLE001 - already gone
                        pass
                await conn.aclose("shutdown")
            with trio.move_on_after(5):
                for proc in self.procs.values():
                    await proc.stop()
            for proc in self.procs.values():
                proc.stop_now()
