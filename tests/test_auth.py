"""Authentication lets every bot in and cannot be turned into a denial of service
(arena/net/auth.py): generated tokens checked with a fast keyed hash, chosen and old tokens with
scrypt (bounded), only failures counted against the rate limits, old scrypt rows still valid.
Policy tests run on trio's MockClock, without sockets; the last ones go through a real socket."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from pathlib import Path

import pytest
import trio
from sqlalchemy import text

from arena.errors import DatabaseError
from arena.net.auth import Authenticator, AuthLimits, RateLimiter, TokenBucket
from arena.net.server import ArenaServer, ServerConfig
from arena.store import sqlite as store_module
from arena.store.schema import HEAD
from arena.store.sqlite import (
    FAST,
    SLOW,
    Store,
    TokenHash,
    fast_token_hash,
    hash_token,
    looks_generated,
)
from arena.store.upgrade import state, upgrade
from tests.conftest import Client, connect_bot
from tests.legacy_db import as_legacy


def stand_in(token: str, salt: bytes) -> bytes:
    """Stands in for scrypt in policy tests (same shape: 32 bytes from token and salt)."""
    return hashlib.sha256(salt + token.encode()).digest()


@pytest.fixture
def mem_store():
    s = Store(":memory:")
    yield s
    s.close()


def auth_with(store: Store, **limits) -> Authenticator:
    """An authenticator whose slow scheme is :func:`stand_in` (see :func:`register_slow`)."""
    return Authenticator(store, AuthLimits(**limits), hasher=stand_in)


def register_slow(store: Store, name: str, token: str, table: str = "bots") -> None:
    """A row under the slow scheme whose hash is :func:`stand_in`'s (scrypt's place in these tests)."""
    salt = b"s" * 16
    store.run(text(f"DELETE FROM {table} WHERE name=:name"), {"name": name})
    store.run(text(f"INSERT INTO {table}(name, salt, token_hash, hash_scheme, created_at) "
                   "VALUES (:name, :salt, :digest, :scheme, 0)"),
              {"name": name, "salt": salt, "digest": stand_in(token, salt), "scheme": SLOW})


def spent(auth: Authenticator) -> float:
    """Failure budget spent so far, over every bucket (0 when none was ever taken)."""
    return sum(b.capacity - b.tokens for rl in (auth.by_addr, auth.by_name, auth.overall)
               for b in rl.buckets.values())


# ---------------------------------------------------------------------------- buckets


def test_token_bucket_refills_at_its_rate():
    b = TokenBucket(capacity=2, per_s=0.5, now=0.0)
    assert b.take(0.0) and b.take(0.0) and not b.take(0.0)
    assert b.wait_s(0.0) == pytest.approx(2.0)
    assert not b.take(1.9)
    assert b.take(2.0) and not b.take(2.0)
    b.give(2.0)
    assert b.take(2.0)
    assert b.full(100.0) and b.tokens == 2


def test_rate_limiter_memory_is_bounded_by_max_keys():
    rl = RateLimiter(capacity=1, per_s=0.001, max_keys=100)
    for i in range(10_000):
        rl.take(f"10.0.{i // 256}.{i % 256}", now=0.0)
    assert len(rl.buckets) <= 100


# ---------------------------------------------------------------------------- the store's hashes


def test_generated_tokens_are_stored_fast_and_chosen_ones_with_scrypt(mem_store):
    token = mem_store.add_bot("alice")
    assert looks_generated(token)
    secret = mem_store.bot_secret("alice")
    assert secret.scheme == FAST and secret.digest == fast_token_hash(token, secret.salt)
    assert secret.matches(token) and not secret.matches(token[:-1] + ("A" if token[-1] != "A" else "B"))
    assert mem_store.add_bot("bob", "my own words") == "my own words"
    chosen = mem_store.bot_secret("bob")
    assert chosen.scheme == SLOW and chosen.digest == hash_token("my own words", chosen.salt)
    assert mem_store.add_spectator("carol") and mem_store.spectator_secret("carol").scheme == FAST
    assert mem_store.add_spectator("dan", "dan-words") == "dan-words"
    assert mem_store.spectator_secret("dan").scheme == SLOW
    _, author_secret = mem_store.add_author("erin")
    assert mem_store.author_secret("erin").scheme == FAST and mem_store.author_secret("erin").matches(author_secret)
    shared = secrets.token_urlsafe(24)  # a benchmark's one token for many bots, made by the caller
    assert mem_store.add_bot("gus", shared, generated=True) == shared and mem_store.bot_secret("gus").scheme == FAST
    with pytest.raises(ValueError, match="token_urlsafe"):
        mem_store.add_bot("hal", "my own words", generated=True)
    mem_store.add_launched_bot("fay")  # no token anyone holds, and nothing slow to hash for it
    assert mem_store.bot_secret("fay").scheme == FAST and not mem_store.check_token("fay", "")
    raw = b"".join(bytes(v) if isinstance(v, bytes) else str(v).encode() for r in mem_store.db.execute(
        "SELECT * FROM bots") for v in r)
    assert token.encode() not in raw and b"my own words" not in raw


def test_store_check_token_checks_each_row_its_own_way(mem_store):
    token = mem_store.add_bot("alice")
    mem_store.add_bot("bob", "chosen")
    assert mem_store.check_token("alice", token) and not mem_store.check_token("alice", token + "x")
    assert mem_store.check_token("bob", "chosen") and not mem_store.check_token("bob", "chosen!")
    assert not mem_store.check_token("nobody", token) and mem_store.bot_secret("nobody") is None


def test_looks_generated_is_the_shape_the_arena_issues():
    assert all(looks_generated(secrets.token_urlsafe(24)) for _ in range(100))
    for token in ("short", "x" * 31, "x" * 33, "a" * 31 + "!", "é" * 32, "a" * 31 + " "):
        assert not looks_generated(token), token


# ---------------------------------------------------------------------------- right tokens get in


async def test_many_right_tokens_at_once_are_all_accepted_and_spend_nothing(mem_store, mock_clock):
    """200 bots of one address (one host, or behind one NAT) with a budget of one failure:
    every one is welcomed, on the event loop (no thread, no scrypt), and no bucket is touched."""
    tokens = {f"b{i}": mem_store.add_bot(f"b{i}") for i in range(200)}
    auth = auth_with(mem_store, addr_burst=1, name_burst=1, global_burst=1)
    got: list[str] = []

    async def hello(name: str) -> None:
        got.append(await auth.check("bots", name, tokens[name], "10.0.0.1"))

    async with trio.open_nursery() as nursery:
        for name in tokens:
            nursery.start_soon(hello, name)
    assert got == ["ok"] * 200 and auth.fast_checks == 200 and auth.scrypt_checks == 0
    assert auth.failures == 0 and spent(auth) == 0


async def test_a_thousand_registered_bots_in_one_burst_are_all_welcomed(mem_store, mock_clock):
    """The issue's target as a count: 1,000 bots, from 1,000 addresses and again all from one,
    with the default limits, at the same instant of trio's clock."""
    tokens = {f"bot{i:04}": mem_store.add_bot(f"bot{i:04}") for i in range(1000)}
    auth = Authenticator(mem_store)
    for spread in (True, False):
        got: list[str] = []

        async def hello(name: str, addr: str, got: list[str] = got) -> None:
            got.append(await auth.check("bots", name, tokens[name], addr))

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for i, name in enumerate(tokens):
                nursery.start_soon(hello, name, f"10.{i // 250}.{i % 250}.1" if spread else "10.9.9.9")
        assert len(got) == 1000 and got.count("ok") == 1000
        assert trio.current_time() == start  # nobody waited for a bucket to refill
    assert auth.scrypt_checks == 0 and auth.failures == 0


async def test_right_generated_tokens_get_in_while_a_flood_spends_every_budget(mem_store, mock_clock):
    """Wrong tokens from everywhere empty the overall bucket and the attacker's address bucket;
    the contest's bots (fast rows) still get in, even from the flooding address."""
    tokens = {f"b{i}": mem_store.add_bot(f"b{i}") for i in range(20)}
    auth = auth_with(mem_store)
    flood = [await auth.check("bots", f"b{i % 20}", "guess", f"10.6.{i // 200}.{i % 200}") for i in range(500)]
    assert flood.count("failed") == auth.limits.global_burst == auth.failures
    assert flood.count("rate_limited") == 500 - auth.limits.global_burst
    assert auth.overall.buckets["*"].tokens < 1
    for name, token in tokens.items():
        assert await auth.check("bots", name, token, "10.6.0.1") == "ok"  # an attacker's address, too


# ---------------------------------------------------------------------------- wrong tokens are bounded


async def test_wrong_tokens_from_one_address_are_rate_limited(mem_store, mock_clock):
    token = mem_store.add_bot("alice")
    register_slow(mem_store, "sam", "sams-words")
    auth = auth_with(mem_store, addr_burst=3, addr_per_min=6, name_burst=100)
    verdicts = [await auth.check("bots", f"name{i}", "wrong", "10.0.0.1") for i in range(6)]
    assert verdicts == ["failed"] * 3 + ["rate_limited"] * 3 and auth.failures == 3
    assert await auth.check("bots", "alice", token + "x", "10.0.0.1") == "rate_limited"
    assert await auth.check("bots", "alice", token, "10.0.0.1") == "ok"  # generated: never refused
    # a chosen token (scrypt) is refused while its address is over budget, before any hashing
    assert await auth.check("bots", "sam", "sams-words", "10.0.0.1") == "rate_limited"
    assert auth.scrypt_checks == 0
    assert await auth.check("bots", "sam", "sams-words", "10.0.0.2") == "ok"  # another address is unaffected
    auth._verified.clear()
    assert auth.retry_after_s("sam", "10.0.0.1") == pytest.approx(10.0)
    mock_clock.jump(10.0)  # 6 a minute: one token back every 10 s
    assert await auth.check("bots", "sam", "sams-words", "10.0.0.1") == "ok"
    assert auth.retry_after_s("x", "10.0.0.1") == pytest.approx(0.0)  # the right token gave its token back


async def test_wrong_tokens_for_one_name_are_limited_across_addresses(mem_store, mock_clock):
    register_slow(mem_store, "alice", "right")
    auth = auth_with(mem_store, addr_burst=100, name_burst=2, name_per_min=1)
    got = [await auth.check("bots", "alice", "guess", f"10.0.0.{i}") for i in range(5)]
    assert got == ["failed", "failed", "rate_limited", "rate_limited", "rate_limited"]
    assert auth.scrypt_checks == 2
    assert auth.retry_after_s("alice", "10.0.0.9") == pytest.approx(60.0)
    assert await auth.check("bots", "bob", "guess", "10.0.0.1") == "failed"  # other names unaffected
    mock_clock.jump(60.0)
    assert await auth.check("bots", "alice", "right", "10.0.0.7") == "ok"


async def test_failures_are_limited_overall_across_addresses_and_names(mem_store, mock_clock):
    register_slow(mem_store, "alice", "right")
    auth = auth_with(mem_store, global_burst=3, global_per_min=60)
    got = [await auth.check("bots", f"fresh{i}", "x", f"10.1.0.{i}") for i in range(5)]
    assert got == ["failed"] * 3 + ["rate_limited"] * 2 and auth.failures == 3
    assert auth.by_addr.buckets["10.1.0.4"].tokens == auth.limits.addr_burst  # refunded when refused
    assert await auth.check("bots", "alice", "right", "10.1.0.9") == "rate_limited"  # scrypt: over budget
    mock_clock.jump(1.0)
    assert await auth.check("bots", "alice", "right", "10.1.0.9") == "ok"


async def test_a_parallel_flood_of_wrong_chosen_tokens_hashes_at_most_the_burst(mem_store, mock_clock):
    """30 wrong tokens at once for a scrypt row: the burst is reserved before hashing, the rest
    wait for its outcome and are then refused; no more scrypt than the budget."""
    register_slow(mem_store, "sam", "right")
    auth = auth_with(mem_store, addr_burst=4, name_burst=100)
    got: list[str] = []

    async def guess(i: int) -> None:
        got.append(await auth.check("bots", "sam", f"guess{i}", "10.0.0.1"))

    async with trio.open_nursery() as nursery:
        for i in range(30):
            nursery.start_soon(guess, i)
    assert sorted(got) == ["failed"] * 4 + ["rate_limited"] * 26
    assert auth.scrypt_checks == 4 and not auth._pending


async def test_a_crowd_of_right_chosen_tokens_waits_its_turn_instead_of_being_refused(mem_store, mock_clock):
    """60 bots with scrypt rows (chosen tokens, or a database from before schema 9) arrive at
    once from one address whose budget is 3: each check reserves, the right ones give back, the
    others wait for that instead of being refused: all 60 get in."""
    for i in range(60):
        register_slow(mem_store, f"s{i}", f"words of s{i}")
    auth = auth_with(mem_store, addr_burst=3, global_burst=3, concurrency=2)
    got: list[str] = []

    async def hello(i: int) -> None:
        got.append(await auth.check("bots", f"s{i}", f"words of s{i}", "10.0.0.1"))

    async with trio.open_nursery() as nursery:
        for i in range(60):
            nursery.start_soon(hello, i)
    assert got == ["ok"] * 60 and auth.scrypt_checks == 60 and auth.failures == 0 and spent(auth) == 0


async def test_a_cancelled_slow_check_gives_its_reservation_back(mem_store, mock_clock):
    """One scrypt at a time: A hashes (stuck in its thread), B has reserved its budget and waits
    for the thread, C (A's address, whose budget A holds) waits for A's outcome. All are
    cancelled (the clients hung up): nothing stays reserved and no budget is spent."""
    register_slow(mem_store, "sam", "right")
    release = threading.Event()

    def stuck(token: str, salt: bytes) -> bytes:
        release.wait(10)
        return stand_in(token, salt)

    auth = Authenticator(mem_store, AuthLimits(addr_burst=1, concurrency=1), hasher=stuck)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(auth.check, "bots", "sam", "right", "10.0.0.1")  # A
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(auth.check, "bots", "sam", "guess", "10.0.0.2")  # B
        nursery.start_soon(auth.check, "bots", "sam", "guess", "10.0.0.1")  # C
        await trio.testing.wait_all_tasks_blocked()
        assert auth._pending[(id(auth.overall), "*")] == 2 and auth.scrypt_checks == 2
        nursery.cancel_scope.cancel()
        release.set()
    assert not auth._pending and spent(auth) == 0 and auth.failures == 0


# ---------------------------------------------------------------------------- old rows, cache, tables


def schema8_database(target: str | Path, rows: dict[str, str]) -> None:
    """A database as main at schema 8 left it (SQLite file or PostgreSQL URL): no
    ``hash_scheme`` column, every token hash scrypt."""
    store = Store(target)
    for name, token in rows.items():
        store.add_bot(name, token)  # a chosen token: scrypt, as every token was then
    for table in ("bots", "spectators", "authors"):
        store.run(text(f"ALTER TABLE {table} DROP COLUMN hash_scheme"))
    as_legacy(store, 8)
    store.close()
    with pytest.raises(DatabaseError, match="arena db upgrade --db"):  # refused until upgraded
        Store(target)
    upgrade(str(target))


def test_a_schema8_database_keeps_its_tokens_valid_on_both_databases(db_target, monkeypatch):
    monkeypatch.setitem(store_module.SCRYPT, "n", 2**10)  # still scrypt, at a test's cost
    token = "Zx9_" + "q" * 28  # the shape `arena bots add` printed
    schema8_database(db_target, {"old": token})
    store = Store(db_target)
    try:
        assert state(store.connection) == ("current", HEAD)
        old = store.bot_secret("old")
        assert old.scheme == SLOW and store.check_token("old", token) and not store.check_token("old", token[:-1])
        new_token = store.add_bot("new")
        assert store.bot_secret("new").scheme == FAST and store.check_token("new", new_token)
        assert store.upgrade_token_hash("bots", "old", old, token)
        assert store.bot_secret("old") == TokenHash(old.salt, fast_token_hash(token, old.salt), FAST)
        assert store.check_token("old", token) and not store.check_token("old", new_token)
        assert not store.upgrade_token_hash("bots", "old", old, token)  # the row is no longer `old`
    finally:
        store.close()


async def test_old_scrypt_rows_still_verify_and_are_upgraded_once(tmp_path, monkeypatch, mock_clock):
    monkeypatch.setitem(store_module.SCRYPT, "n", 2**10)  # still scrypt, at a test's cost
    old_token = "Zx9_" + "q" * 28  # the shape `arena bots add` printed
    schema8_database(tmp_path / "old.db", {"old": old_token, "kept": "a phrase someone chose"})
    store = Store(tmp_path / "old.db")
    before = store.bot_secret("old")
    assert before.scheme == SLOW and store.check_token("old", old_token) and not store.check_token("old", "x")
    auth = Authenticator(store)
    assert await auth.check("bots", "old", old_token[:-1] + "r", "10.0.0.1") == "failed"
    assert await auth.check("bots", "old", old_token, "10.0.0.1") == "ok" and auth.scrypt_checks == 2
    after = store.bot_secret("old")
    assert after == TokenHash(before.salt, fast_token_hash(old_token, before.salt), FAST) and auth.upgraded == 1
    auth._verified.clear()
    assert await auth.check("bots", "old", old_token, "10.0.0.1") == "ok" and auth.scrypt_checks == 2
    assert await auth.check("bots", "kept", "a phrase someone chose", "10.0.0.1") == "ok"
    assert store.bot_secret("kept").scheme == SLOW  # not the shape of a generated token: stays scrypt
    assert store.check_token("old", old_token) and store.check_token("kept", "a phrase someone chose")
    store.close()


async def test_an_upgrade_never_overwrites_a_token_replaced_meanwhile(mem_store, mock_clock):
    old_token = "A" * 32
    register_slow(mem_store, "alice", old_token)
    stale = mem_store.bot_secret("alice")
    new_token = mem_store.add_bot("alice")  # the organiser re-issued the token during the check
    assert not mem_store.upgrade_token_hash("bots", "alice", stale, old_token)
    assert mem_store.check_token("alice", new_token) and not mem_store.check_token("alice", old_token)
    with pytest.raises(ValueError):
        mem_store.upgrade_token_hash("matches", "alice", stale, old_token)


async def test_a_verified_chosen_token_is_cached_and_the_cache_follows_token_changes(mem_store, mock_clock):
    register_slow(mem_store, "alice", "right")
    auth = auth_with(mem_store)
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    assert auth.scrypt_checks == 1  # the reconnect paid no hash
    assert await auth.check("bots", "alice", "wrong", "10.0.0.1") == "failed"
    assert auth.scrypt_checks == 2  # a wrong token is never answered by the cache
    salt = b"t" * 16  # the organiser sets a new token: new salt, the old token no longer works
    mem_store.db.execute("UPDATE bots SET salt=?, token_hash=? WHERE name='alice'", (salt, stand_in("new", salt)))
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "failed"
    assert await auth.check("bots", "alice", "new", "10.0.0.1") == "ok"


async def test_an_attacker_failing_under_a_bots_name_cannot_lock_it_out_once_verified(mem_store, mock_clock):
    register_slow(mem_store, "alice", "right")
    auth = auth_with(mem_store, name_burst=3)
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    for i in range(10):
        await auth.check("bots", "alice", f"guess{i}", f"10.9.0.{i}")
    assert await auth.check("bots", "alice", "guess", "10.9.9.9") == "rate_limited"
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"  # answered from the cache


async def test_local_connections_are_not_rate_limited(mem_store, mock_clock):
    register_slow(mem_store, "alice", "right")
    auth = auth_with(mem_store, addr_burst=1, name_burst=1)
    for _ in range(3):
        assert await auth.check("bots", "alice", "wrong", "local", local=True) == "failed"
        assert await auth.check("bots", "nobody", "wrong", "local", local=True) == "failed"
    auth._verified.clear()
    assert await auth.check("bots", "alice", "right", "local", local=True) == "ok"
    assert auth.scrypt_checks == 4 and spent(auth) == 0


async def test_spectator_and_author_accounts_go_through_the_same_checks(mem_store, mock_clock):
    token = mem_store.add_spectator("carol")
    mem_store.add_spectator("dan", "dans-words")
    _, secret = mem_store.add_author("erin")
    auth = Authenticator(mem_store, AuthLimits(addr_burst=2))  # real scrypt for dan
    assert await auth.check("spectators", "carol", token, "10.0.0.1") == "ok"
    assert await auth.check("spectators", "dan", "dans-words", "10.0.0.1") == "ok" and auth.scrypt_checks == 1
    assert await auth.check("authors", "erin", secret, "10.0.0.1") == "ok"
    assert await auth.check("spectators", "carol", "nope", "10.0.0.1") == "failed"
    assert await auth.check("bots", "carol", token, "10.0.0.1") == "failed"  # not a bot
    assert await auth.check("spectators", "carol", "nope", "10.0.0.1") == "rate_limited"
    assert await auth.check("authors", "erin", secret, "10.0.0.1") == "ok"  # generated: still welcome


async def test_concurrent_scrypt_checks_are_bounded(mem_store):
    running = 0
    peak = 0
    lock = threading.Lock()

    def slow_hash(token: str, salt: bytes) -> bytes:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return stand_in(token, salt)

    for i in range(12):
        register_slow(mem_store, f"n{i}", "right")
    auth = Authenticator(mem_store, AuthLimits(concurrency=2, addr_burst=100, name_burst=100, global_burst=100),
                         hasher=slow_hash)
    async with trio.open_nursery() as nursery:
        for i in range(12):
            nursery.start_soon(auth.check, "bots", f"n{i}", "wrong", f"10.0.0.{i}")
    assert auth.scrypt_checks == 12 and 1 <= peak <= 2


# ---------------------------------------------------------------------------- over TCP


async def test_a_wrong_token_flood_over_tcp_is_refused_and_the_real_bots_get_in(store, nursery):
    """30 parallel wrong-token hellos from 127.0.0.2: every one is refused with auth_failed or
    rate_limited, at most the burst are answered auth_failed and no scrypt runs; a bot on
    127.0.0.1 and a bot on the flooding address itself still connect."""
    srv = ArenaServer(store, ServerConfig(handshake_timeout_s=5, auth_addr_burst=4, auth_name_burst=100))
    await nursery.start(srv.serve)
    store.add_bot("victim")
    neighbour_token = store.add_bot("neighbour")
    codes: list[str] = []

    async def attacker(i: int) -> None:
        stream = await trio.open_tcp_stream("127.0.0.1", srv.port, local_address="127.0.0.2")
        client = Client(stream)
        msg = await client.hello("victim" if i % 2 else f"nobody{i}", "wrong-token")
        codes.append(msg["code"])
        await client.aclose()

    async with trio.open_nursery() as flood:
        for i in range(30):
            flood.start_soon(attacker, i)
    assert len(codes) == 30 and set(codes) <= {"auth_failed", "rate_limited"}
    assert codes.count("auth_failed") <= 4 and codes.count("rate_limited") >= 26
    assert srv.auth.failures <= 4 and srv.auth.scrypt_checks == 0
    client = await connect_bot(srv, "alice")  # from 127.0.0.1: its own budget
    assert "alice" in srv.bots
    neighbour = Client(await trio.open_tcp_stream("127.0.0.1", srv.port, local_address="127.0.0.2"))
    assert (await neighbour.hello("neighbour", neighbour_token))["type"] == "welcome"
    await client.aclose()
    await neighbour.aclose()


@pytest.mark.slow
async def test_a_thousand_remote_bots_are_welcomed_after_a_restart(tmp_path):
    """The end-to-end study (arena.tools.bench_auth) at full size: 1,000 registered bots in a
    subprocess say hello within one second of the server's start and every one is welcomed,
    then again while 100 clients flood wrong tokens: the bots all get in, no wrong token does,
    and the failures stay within the overall budget (a burst of 10, then 2 a second over the
    run's window). Counts, not seconds: how long it took is the bench's figure, never asserted."""
    from arena.tools.bench_auth import measure

    quiet = await measure(1000, tmp_path / "quiet.db")
    assert quiet.answers == {"welcome": 1000} and quiet.welcomed == 1000
    assert quiet.scrypt_checks == 0 and quiet.failures == 0
    flood = await measure(1000, tmp_path / "flood.db", flooders=100)
    assert flood.answers == {"welcome": 1000} and flood.welcomed == 1000
    assert "welcome" not in flood.flood_answers and flood.flood_answers.get("rate_limited", 0) > 0
    # every auth_failed answer is a counted failure (a flooder stopped mid-hello may miss its answer)
    assert flood.flood_answers.get("auth_failed", 0) <= flood.failures <= 10 + 2 * flood.window_s + 1
