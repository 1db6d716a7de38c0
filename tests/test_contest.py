"""``arena serve``: a ladder among connected bots (submitted and remote), the HTTP API,
Prometheus metrics scraped over HTTP, and a clean shutdown on SIGTERM."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import trio
from prometheus_client.parser import text_string_to_metric_families

from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig, load_config
from arena.store.sqlite import Store
from tests.conftest import TRUST_BOTS, remote_random_bot

ROOT = Path(__file__).resolve().parent.parent


def config(tmp_path: Path, **kw) -> ContestConfig:
    return ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                         server=ServerConfig(port=0), seed=7, **{"trust_bots": TRUST_BOTS, **kw})


async def wait_matches(store: Store, n: int, timeout: float = 60) -> None:
    with trio.fail_after(timeout):
        while store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done'").fetchone()[0] < n:
            await trio.sleep(0.1)


def metric(families, name: str, **labels) -> float:
    for fam in families:
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise KeyError(name)


async def test_example_config_parses():
    cfg = load_config(ROOT / "docs" / "contest.example.toml")
    assert cfg.game == "ecarte" and cfg.time.move_ms == 2000 and cfg.server.port == 7000


async def test_ladder_api_metrics_and_a_remote_bot(tmp_path, monkeypatch):
    import arena.schedule.contest as contest_module
    from arena.metrics import METRICS

    # the fit's gauges are process-wide: a fitter of an earlier test in this process leaves its
    # figures there (a ratings-only fit: arena_ladder_fit_full 0), which the wait below for this
    # contest's first fit would take for it
    for gauge in (METRICS.fit_seconds, METRICS.fit_cpu, METRICS.fit_full, METRICS.full_fit_seconds,
                  METRICS.full_fit_cpu, METRICS.fit_lag, METRICS.fit_age):
        gauge.clear()
    policies = []
    real_spawn = contest_module.spawn
    monkeypatch.setattr(contest_module, "spawn", lambda store, game, policy: (policies.append(policy),
                                                                              real_spawn(store, game, policy))[1])
    store = Store(tmp_path / "arena.db")
    store.submit_bot("greedy", str(ROOT / "sample_bots" / "greedy.toml"))
    store.submit_bot("random", str(ROOT / "sample_bots" / "random.toml"))
    token = store.add_bot("remote")  # `arena bots add remote`: it connects on its own
    contest = Contest(config(tmp_path, max_matches=16, fit_intervals_s=45.0), store)
    async with trio.open_nursery() as nursery:
        port, http_port = await nursery.start(contest.run)
        remote = remote_random_bot(port, "remote", token)
        try:
            await wait_matches(store, 16)
            with trio.fail_after(60):  # the background fit (arena.schedule.fitter) catches up
                while store.ladder_state("ecarte")["fitted_results"] < 16:
                    await trio.sleep(0.1)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}") as http:
                board = (await http.get("/api/leaderboard")).json()["leaderboard"]
                page = await http.get("/")
                with trio.fail_after(30):  # the server's FitWatch has seen a fit of the fitter's process
                    while "arena_ladder_full_fit_cpu_seconds{" not in (scrape := (await http.get("/metrics")).text):
                        await trio.sleep(0.5)
        finally:
            remote.terminate()
            contest.stop()
    names = {row["bot"] for row in board}
    assert names == {"greedy", "random", "remote"}  # the remote bot got into the ladder
    assert sum(row["games"] for row in board) == 2 * 16
    assert board[0]["bot"] == "greedy"
    # each bot's rating carries the half-width of its 95% interval (the ladder's fit, arena/stats/ladder.py)
    assert all(0 < row["interval"] < 2000 and row["games"] > 0 and "elo" in row for row in board)
    assert page.status_code == 200 and "EventSource" in page.text
    families = list(text_string_to_metric_families(scrape))
    assert metric(families, "arena_matches_finished_total", game="ecarte", reason="target") >= 16
    assert metric(families, "arena_decisions_total", game="ecarte") > 100
    assert metric(families, "arena_decision_latency_seconds_count") > 0  # one series for all bots
    assert metric(families, "arena_connections", role="bot") >= 2
    assert [p.intervals_s for p in policies] == [45.0]  # the contest file's fit_intervals_s, to the fitter's process
    assert metric(families, "arena_ladder_fit_full", game="ecarte") == 1  # 3 bots: the intervals at every fit
    assert metric(families, "arena_ladder_fit_cpu_seconds", game="ecarte") >= 0
    assert metric(families, "arena_ladder_full_fit_cpu_seconds", game="ecarte") >= 0
    assert metric(families, "arena_ladder_full_fit_seconds", game="ecarte") >= 0
    for name in ("arena_matches_in_play", "arena_spectators", "arena_scheduler_queue_depth"):
        assert any(f.name == name for f in families), name
    with sqlite3.connect(tmp_path / "arena.db") as db:
        assert db.execute("SELECT COUNT(*) FROM matches WHERE status='pending'").fetchone()[0] == 0
        hashes = db.execute("SELECT log_hash FROM matches WHERE status='done'").fetchall()
    assert all(h[0] for h in hashes)


def test_sigterm_finishes_or_aborts_matches_and_loses_nothing(tmp_path):
    db = tmp_path / "arena.db"
    store = Store(db)
    for name in ("greedy", "random", "cautious", "highcard"):
        store.submit_bot(name, str(ROOT / "sample_bots" / f"{name}.toml"))
    store.close()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'db = "{db}"\nlogs = "{tmp_path / "logs"}"\nhttp_port = 0\nshutdown_grace_s = 0.2\n'
                   f'trust_bots = {"true" if TRUST_BOTS else "false"}\n'
                   '[server]\nport = 0\n[time]\nmove_ms = 2000\n')
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            time.sleep(0.1)
            try:
                with sqlite3.connect(db) as c:
                    if c.execute("SELECT COUNT(*) FROM matches WHERE status='done'").fetchone()[0] >= 6:
                        break
            except sqlite3.OperationalError:
                pass
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped cleanly" in out
    with sqlite3.connect(db) as c:
        statuses = dict(c.execute("SELECT status, COUNT(*) FROM matches GROUP BY status").fetchall())
        assert "pending" not in statuses and statuses.get("done", 0) >= 6
        assert c.execute("SELECT status FROM tournaments").fetchone()[0] == "finished"


async def test_gallery_wagers_over_tcp(tmp_path):
    """Two betting spectators stake on the first match (ecarte.md §E9.1): sides balanced by
    refunding the newest bet, the winner paid 2 x stake less 5%, money conserved, every bettor
    told; a watcher without a token cannot bet, a wrong token is refused."""
    from arena.net.spectate import SpectatorHub
    from arena.wagers.desk import BettingDesk
    from tests.conftest import Client

    store = Store(tmp_path / "arena.db")
    store.submit_bot("greedy", str(ROOT / "sample_bots" / "greedy.toml"))
    store.submit_bot("random", str(ROOT / "sample_bots" / "random.toml"))
    tokens = {n: store.add_spectator(n) for n in ("ann", "ben")}
    desk = BettingDesk(store, SpectatorHub())
    desk.deposit("ann", 1000)
    desk.deposit("ben", 1000)
    contest = Contest(config(tmp_path, max_matches=2, betting_s=1.5, concurrency=1), store)
    async with trio.open_nursery() as nursery:
        port, _ = await nursery.start(contest.run)

        async def join(name, token):
            c = await Client.connect(port)
            await c.send({"type": "hello", "name": name, "token": token, "role": "spectator"})
            return c, await c.recv()

        ann, w1 = await join("ann", tokens["ann"])
        ben, w2 = await join("ben", tokens["ben"])
        nobody, w3 = await join("nobody", "")
        liar, refused = await join("ann", "wrong-token")
        assert w1["type"] == w2["type"] == w3["type"] == "welcome" and refused["code"] == "auth_failed"
        betting = await ann.recv_type("betting", timeout=30)
        mid = betting["match_id"]
        await ann.send({"type": "bet", "match_id": mid, "seat": 0, "cents": 300})
        assert (await ann.recv_type("bet_placed", "error"))["balance"] == 700
        await ben.send({"type": "bet", "match_id": mid, "seat": 1, "cents": 100})
        assert (await ben.recv_type("bet_placed", "error"))["balance"] == 900
        await ben.send({"type": "bet", "match_id": mid, "seat": 1, "cents": 5})
        assert (await ben.recv_type("bet_placed", "error"))["code"] == "below_minimum"
        await nobody.send({"type": "bet", "match_id": mid, "seat": 0, "cents": 50})
        assert (await nobody.recv_type("bet_placed", "error"))["code"] == "not_authenticated"
        a_settled = await ann.recv_type("bet_settled", timeout=60)
        b_settled = await ben.recv_type("bet_settled", timeout=60)
        contest.stop()
    row = store.match_row(mid)
    winner = store.match_by_index(row.tournament_id, row.idx)["winner_seat"]
    # ann 300 on seat 0 vs ben 100 on seat 1: 200 of ann's stake is returned at the close
    assert a_settled["returned"] >= 200 and a_settled["stake"] == 300
    if winner == 0:
        assert a_settled["payout"] == 2 * 100 - 5 and a_settled["balance"] == 700 + 200 + 195
        assert b_settled["payout"] == 0 and b_settled["balance"] == 900
    else:
        assert b_settled["payout"] == 195 and b_settled["balance"] == 900 + 195
        assert a_settled["balance"] == 700 + 200
    fresh = BettingDesk(store, SpectatorHub())  # reload the ledger from the database
    assert sum(fresh.ledger.accounts.values()) + fresh.ledger.house == 2000
    assert fresh.ledger.house == 5
    rows = store.db.execute("SELECT bettor, status FROM wager_bets ORDER BY seq").fetchall()
    assert sorted(r[0] for r in rows) == ["ann", "ben"]
