"""Money survives a crash (ecarte.md §E9.1; contests.md "Wagers after a crash").

A real ``arena serve`` process with two launched sample bots and short betting windows is killed
with SIGKILL at seeded random moments while real betting spectators (TCP clients with account
tokens) stake on its matches: inside a betting window, while a match is played on a closed book,
around a settlement. After every restart the books the dead server left are settled at once
(aborted match: every stake returned; a result already committed: paid as it would have been),
in the same commit as the matches' ``aborted`` status; at the end no stake stays held, the
bettors' balances plus the house equal the deposits, and each bettor's balance is exactly their
deposit less their stakes plus what the history of settled bets returned and paid them.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from arena.net.spectate import SpectatorHub
from arena.store.sqlite import Store
from arena.wagers.desk import BettingDesk
from arena.wagers.ledger import LedgerRecord
from tests.conftest import Client

ROOT = Path(__file__).resolve().parent.parent
KILLS = 3
"""SIGKILLs per run (each at a seeded random moment after betting first opens)."""
BETTORS = {"ann": 5000, "ben": 3000, "cid": 800}
"""Betting spectators and their deposits, in cents."""


def start(cfg: Path) -> tuple[subprocess.Popen, int]:
    """Start ``arena serve`` and return it with its TCP port (read from its first line)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "tcp://" not in line:
        proc.kill()
        raise AssertionError(f"arena serve did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    port = int(line.split("tcp://", 1)[1].split(",", 1)[0].rsplit(":", 1)[1])
    return proc, port


def ledger_state(db: Path) -> tuple[LedgerRecord, int]:
    with sqlite3.connect(db) as c:
        snapshot, levies = c.execute("SELECT snapshot, settled_levies FROM wager_ledger WHERE id=1").fetchone()
    return msgspec.json.decode(snapshot, type=LedgerRecord), levies


def newest_tournament(db: Path) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT MAX(id) FROM tournaments").fetchone()[0]


async def bet_until_killed(port: int, tokens: dict[str, str], rng: random.Random, proc: subprocess.Popen,
                           placed: list[dict[str, Any]]) -> float:
    """Bettors stake on every match that opens; once the first window opens, wait a random time
    and SIGKILL the server. Returns that delay (s)."""
    opened = trio.Event()
    delay = rng.uniform(0.0, 1.6)
    plans = {name: random.Random(rng.random()) for name in tokens}

    async def bettor(name: str) -> None:
        c = await Client.connect(port)
        await c.send({"type": "hello", "name": name, "token": tokens[name], "role": "spectator", "protocol": 1})
        welcome = await c.recv(timeout=30)
        assert welcome is not None and welcome["type"] == "welcome", welcome
        r = plans[name]
        while True:
            msg = await c.recv(timeout=60)
            if msg is None:
                return
            if msg["type"] == "betting":
                opened.set()
                for _ in range(r.randint(1, 2)):
                    await c.send({"type": "bet", "match_id": msg["match_id"], "seat": r.randint(0, 1),
                                  "cents": r.choice([10, 25, 60, 150, 400])})
            elif msg["type"] == "bet_placed":
                placed.append(msg)

    async with trio.open_nursery() as nursery:
        for name in tokens:
            nursery.start_soon(bettor, name)
        with trio.fail_after(60):
            await opened.wait()
        await trio.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        await trio.to_thread.run_sync(proc.wait)
        nursery.cancel_scope.cancel()
    return delay


@pytest.mark.slow
def test_sigkill_during_betting_returns_every_stake_and_conserves_money(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    store = Store(db)
    for name in ("greedy", "random"):
        store.submit_bot(name, str(ROOT / "sample_bots" / f"{name}.toml"))
    tokens = {name: store.add_spectator(name) for name in BETTORS}
    desk = BettingDesk(store, SpectatorHub())
    for name, cents in BETTORS.items():
        desk.deposit(name, cents)
    store.close()
    cfg = tmp_path / "contest.toml"
    cfg.write_text(f'db = "{db}"\nlogs = "{tmp_path / "logs"}"\nhttp_port = 0\nbetting_s = 0.4\n'
                   "duplicate = false\nconcurrency = 1\nshutdown_grace_s = 0.2\nseed = 3\n"
                   "[server]\nport = 0\n[time]\nmove_ms = 2000\n")
    rng = random.Random(20261124)
    placed: list[dict[str, Any]] = []
    delays, recovered_books, restarts_checked = [], 0, 0
    for _ in range(KILLS):
        proc, port = start(cfg)
        try:
            # the restart settled everything the previous server left: only the books of this
            # server's own tournament may be unsettled now
            tid = newest_tournament(db)
            record, _ = ledger_state(db)
            assert all(b.match_id.startswith(f"t{tid}-") for b in record.books), (tid, record.books)
            held = sum(bet.stake - bet.returned for b in record.books for bet in b.bets if bet.status == "held")
            assert sum(record.accounts.values()) + held + record.house == sum(BETTORS.values())
            assert record.total_deposited == sum(BETTORS.values())
            restarts_checked += 1
            delays.append(trio.run(bet_until_killed, port, tokens, rng, proc, placed))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        record, _ = ledger_state(db)
        recovered_books += sum(1 for b in record.books if b.state != "settled")
    # a last restart recovers the last kill; then a clean stop
    proc, _ = start(cfg)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

    store = Store(db)
    ledger = BettingDesk(store, SpectatorHub()).ledger
    assert ledger.books == [] and ledger.held == 0  # no stake stays held
    deposits = sum(BETTORS.values())
    assert ledger.total_deposited == deposits
    assert sum(ledger.accounts.values()) + ledger.house == deposits
    rows = store.db.execute(
        "SELECT w.match_key, w.bettor, w.stake, w.returned, w.payout, w.levy, w.status, m.status, m.reason "
        "FROM wager_bets w LEFT JOIN matches m ON m.match_key = w.match_key"
    ).fetchall()
    assert len(rows) >= len(placed) > 0
    for key, _bettor, stake, returned, _payout, _levy, status, match_status, reason in rows:
        if match_status != "done":  # aborted by a kill (or by the clean stop): every stake back
            assert match_status == "aborted" and status == "returned" and returned == stake, (key, status)
        else:  # the ledger agrees with the recorded result
            assert status in ("won", "lost", "returned"), (key, status)
            if status == "won":
                assert reason not in ("aborted", "draw") and not reason.startswith("forfeit_")
    for name, cents in BETTORS.items():
        mine = [r for r in rows if r[1] == name]
        expected = cents - sum(r[2] for r in mine) + sum(r[3] + r[4] for r in mine)
        assert ledger.balance(name) == expected, (name, ledger.balance(name), expected)
    assert ledger.house == sum(r[5] for r in rows)
    aborted_with_bets = {r[0] for r in rows if r[7] == "aborted"}
    print(f"\n[crash] {KILLS} SIGKILLs at {', '.join(f'{d:.2f}' for d in delays)} s after betting opened; "
          f"{len(rows)} bets recorded ({len(placed)} acknowledged), {recovered_books} books left unsettled by "
          f"the kills and settled at restart, {len(aborted_with_bets)} aborted matches with every stake returned; "
          f"{len(BETTORS)} bettors' balances + house = {deposits} cents deposited, checked at "
          f"{restarts_checked} starts (the first, then after each kill but the last) and after the final restart")
    assert recovered_books >= 1  # the kills did hit betting windows or matches in play


async def test_a_result_committed_just_before_a_crash_is_paid_and_the_unfinished_match_voided(tmp_path: Path,
                                                                                             db_target: str):
    """The two writes of a match's end (its result, then its book's settlement) are not one
    transaction: a crash between them must not leave the ledger disagreeing with the result.
    At restart the book of a match recorded ``done`` is paid by that result, and the book of a
    match left ``pending`` is voided in the same commit that marks the match ``aborted``."""
    from arena.match.referee import MatchResult
    from arena.net.server import ServerConfig
    from arena.schedule.contest import Contest, ContestConfig
    from arena.schedule.formats import Pairing

    store = Store(db_target)
    tid = store.create_tournament("ecarte", "ladder", 1, {}, [], [])
    played = store.add_match(tid, "ecarte", Pairing(index=0, bot0="a", bot1="b", seed=1))
    cut = store.add_match(tid, "ecarte", Pairing(index=1, bot0="a", bot1="b", seed=2))
    desk = BettingDesk(store, SpectatorHub())
    desk.deposit("ann", 1000)
    desk.deposit("ben", 1000)
    for key in (played.match_key, cut.match_key):
        desk.open(key, ["a", "b"], 1000)
        desk.place("ann", key, 0, 200)
        desk.place("ben", key, 1, 200)
        desk.close(key)
    store.record_result(played.match_key, MatchResult(match_id=played.match_key, winner=0, reason="target",
                                                      scores=[5, 2], manches=[0, 0]), None)
    # the server dies here: `played` is recorded, its book closed; `cut` is in play
    cfg = ContestConfig(db=db_target, logs=str(tmp_path / "logs"), http_port=0,
                        server=ServerConfig(port=0), max_matches=0)
    contest = Contest(cfg, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        contest.stop()
    ledger = BettingDesk(store, SpectatorHub()).ledger
    assert ledger.books == [] and ledger.held == 0
    assert ledger.balance("ann") == 1000 - 200 + (2 * 200 - 10)  # won `played` (5% levy), `cut` returned
    assert ledger.balance("ben") == 1000 - 200  # lost `played`, `cut` returned
    assert ledger.house == 10
    assert store.match_row(cut.match_key).status == "aborted"
    statuses = dict(store.db.execute("SELECT bettor || ' ' || match_key, status FROM wager_bets").fetchall())
    assert statuses == {f"ann {played.match_key}": "won", f"ben {played.match_key}": "lost",
                        f"ann {cut.match_key}": "returned", f"ben {cut.match_key}": "returned"}


def test_a_deposit_from_another_process_is_never_overwritten_by_the_server(db_target: str):
    """``arena spectators add`` runs in its own process while the server holds its own desk on
    the same database: each change re-reads the ledger in its transaction, so neither the
    deposit nor the server's bets are lost (before, the server's next save overwrote the deposit
    while ``total_deposited`` kept it: money vanished)."""
    server = BettingDesk(Store(db_target), SpectatorHub())
    cli = BettingDesk(Store(db_target), SpectatorHub())
    server.deposit("ann", 500)
    server.open("t1-m0001", ["a", "b"], 1000)
    cli.deposit("ann", 300)  # another process, while the book is open
    cli.deposit("ben", 700)
    server.place("ann", "t1-m0001", 0, 650)  # needs the 300 deposited by the other process
    server.settle("t1-m0001", None, "aborted")
    ledger = BettingDesk(Store(db_target), SpectatorHub()).ledger
    assert ledger.accounts == {"ann": 800, "ben": 700} and ledger.total_deposited == 1500


async def test_a_clean_shutdown_during_a_betting_window_returns_the_stakes_at_once(tmp_path: Path):
    """SIGTERM (here :meth:`Contest.stop`) while betting is open: the book is settled as void
    before the server exits, not left holding the stakes until the next start."""
    from arena.net.server import ServerConfig
    from arena.schedule.contest import Contest, ContestConfig
    from tests.conftest import connect_bot

    store = Store(tmp_path / "arena.db")
    desk = BettingDesk(store, SpectatorHub())
    desk.deposit("ann", 1000)
    cfg = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                        server=ServerConfig(port=0), betting_s=30, shutdown_grace_s=0.1)
    contest = Contest(cfg, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(contest.run)
        bots = [await connect_bot(contest.server, name) for name in ("alice", "bob")]
        with trio.fail_after(60):
            while not contest.desk.ledger.books:
                await trio.sleep(0.02)
        key = contest.desk.ledger.books[0].match_id
        contest.desk.place("ann", key, 0, 400)
        contest.stop()
    for bot in bots:
        await bot.aclose()
    ledger = BettingDesk(store, SpectatorHub()).ledger
    assert ledger.books == [] and ledger.balance("ann") == 1000
    assert store.db.execute("SELECT status FROM wager_bets WHERE match_key=?", (key,)).fetchone()[0] == "returned"
