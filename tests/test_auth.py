"""Authentication cannot be turned into a denial of service (arena/net/auth.py): bounded scrypt
checks, failures rate limited per address and per name, verified tokens cached, and the
policy seen from a real socket. Policy tests run on trio's MockClock, without sockets."""

from __future__ import annotations

import threading
import time

import pytest
import trio

from arena.net.auth import Authenticator, AuthLimits, RateLimiter, TokenBucket
from arena.net.server import ArenaServer, ServerConfig
from arena.store.sqlite import Store, hash_token
from tests.conftest import Client, connect_bot


def fast_hash(token: str, salt: bytes) -> bytes:
    """Stands in for scrypt in policy tests (same shape: 32 bytes from token and salt)."""
    import hashlib

    return hashlib.sha256(salt + token.encode()).digest()


@pytest.fixture
def mem_store():
    s = Store(":memory:")
    yield s
    s.close()


def auth_with(store: Store, **limits) -> Authenticator:
    # tokens registered by Store use scrypt; re-register them with the fast hash
    return Authenticator(store, AuthLimits(**limits), hasher=fast_hash)


def register(store: Store, name: str, token: str) -> None:
    """A bot whose stored hash is the fast hash (so the policy tests need no scrypt)."""
    salt = b"s" * 16
    store.db.execute("INSERT OR REPLACE INTO bots(name, salt, token_hash, created_at) VALUES (?,?,?,0)",
                     (name, salt, fast_hash(token, salt)))


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


async def test_wrong_tokens_from_one_address_are_rate_limited_without_hashing(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store, addr_burst=3, addr_per_min=6, name_burst=100)
    verdicts = [await auth.check("bots", f"name{i}", "wrong", "10.0.0.1") for i in range(6)]
    assert verdicts == ["failed"] * 3 + ["rate_limited"] * 3
    assert auth.scrypt_checks == 3  # the refused ones cost no hash
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "rate_limited"  # even a right token
    assert await auth.check("bots", "alice", "right", "10.0.0.2") == "ok"  # another address is unaffected
    auth._verified.clear()
    mock_clock.jump(10.0)  # 6 a minute: one token back every 10 s
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    assert auth.retry_after_s("x", "10.0.0.1") == pytest.approx(0.0)


async def test_wrong_tokens_for_one_name_are_limited_across_addresses(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store, addr_burst=100, name_burst=2, name_per_min=1)
    got = [await auth.check("bots", "alice", "guess", f"10.0.0.{i}") for i in range(5)]
    assert got == ["failed", "failed", "rate_limited", "rate_limited", "rate_limited"]
    assert auth.retry_after_s("alice", "10.0.0.9") == pytest.approx(60.0)
    assert await auth.check("bots", "bob", "guess", "10.0.0.1") == "failed"  # other names unaffected
    mock_clock.jump(60.0)
    assert await auth.check("bots", "alice", "right", "10.0.0.7") == "ok"


async def test_successes_use_up_no_budget(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store, addr_burst=2, name_burst=2)
    for _ in range(20):
        auth._verified.clear()  # force a real check every time
        assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    assert auth.scrypt_checks == 20


async def test_a_verified_token_is_cached_and_the_cache_follows_token_changes(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store)
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    assert auth.scrypt_checks == 1  # the reconnect paid no hash
    assert await auth.check("bots", "alice", "wrong", "10.0.0.1") == "failed"
    assert auth.scrypt_checks == 2  # a wrong token is never answered by the cache
    salt = b"t" * 16  # the organiser issues a new token: new salt, the old token no longer works
    mem_store.db.execute("UPDATE bots SET salt=?, token_hash=? WHERE name='alice'", (salt, fast_hash("new", salt)))
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "failed"
    assert await auth.check("bots", "alice", "new", "10.0.0.1") == "ok"


async def test_an_attacker_failing_under_a_bots_name_cannot_lock_it_out_once_verified(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store, name_burst=3)
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"
    for i in range(10):
        await auth.check("bots", "alice", f"guess{i}", f"10.9.0.{i}")
    assert await auth.check("bots", "alice", "guess", "10.9.9.9") == "rate_limited"
    assert await auth.check("bots", "alice", "right", "10.0.0.1") == "ok"  # answered from the cache


async def test_failures_are_limited_overall_across_addresses_and_names(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store, global_burst=3, global_per_min=60)
    got = [await auth.check("bots", f"fresh{i}", "x", f"10.1.0.{i}") for i in range(5)]
    assert got == ["failed"] * 3 + ["rate_limited"] * 2 and auth.scrypt_checks == 3
    assert auth.by_addr.buckets["10.1.0.4"].tokens == auth.limits.addr_burst  # refunded when refused
    mock_clock.jump(1.0)
    assert await auth.check("bots", "alice", "right", "10.1.0.9") == "ok"


async def test_local_connections_are_not_rate_limited(mem_store, mock_clock):
    register(mem_store, "alice", "right")
    auth = auth_with(mem_store, addr_burst=1, name_burst=1)
    for _ in range(3):
        await auth.check("bots", "alice", "wrong", "local", local=True)
    auth._verified.clear()
    assert await auth.check("bots", "alice", "right", "local", local=True) == "ok"
    assert auth.scrypt_checks == 4


async def test_spectator_accounts_go_through_the_same_checks(mem_store, mock_clock):
    mem_store.add_spectator("carol", "carol-token")
    auth = Authenticator(mem_store, AuthLimits(addr_burst=2))  # real scrypt: the spectators table
    assert await auth.check("spectators", "carol", "carol-token", "10.0.0.1") == "ok"
    assert await auth.check("spectators", "carol", "nope", "10.0.0.1") == "failed"
    assert await auth.check("bots", "carol", "carol-token", "10.0.0.1") == "failed"  # not a bot
    assert await auth.check("spectators", "carol", "nope", "10.0.0.1") == "rate_limited"


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
        return fast_hash(token, salt)

    auth = Authenticator(mem_store, AuthLimits(concurrency=2, addr_burst=100, name_burst=100, global_burst=100),
                         hasher=slow_hash)
    async with trio.open_nursery() as nursery:
        for i in range(12):
            nursery.start_soon(auth.check, "bots", f"n{i}", "wrong", f"10.0.0.{i}")
    assert auth.scrypt_checks == 12 and 1 <= peak <= 2


def test_store_check_token_is_constant_time_and_matches_hash_token(mem_store):
    token = mem_store.add_bot("alice")
    assert mem_store.check_token("alice", token) and not mem_store.check_token("alice", token + "x")
    salt, stored = mem_store.bot_secret("alice")
    assert hash_token(token, salt) == stored and mem_store.bot_secret("nobody") is None


async def test_a_wrong_token_flood_over_tcp_is_refused_and_the_real_bot_gets_in(store, nursery):
    """30 parallel wrong-token hellos from 127.0.0.2: every one is refused with auth_failed or
    rate_limited, at most the burst is hashed, and the bot on 127.0.0.1 still connects."""
    srv = ArenaServer(store, ServerConfig(handshake_timeout_s=5, auth_addr_burst=4, auth_name_burst=100))
    await nursery.start(srv.serve)
    store.add_bot("victim")
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
    assert srv.auth.scrypt_checks <= 4
    client = await connect_bot(srv, "alice")  # from 127.0.0.1: its own budget
    assert "alice" in srv.bots
    await client.aclose()
