"""Token checks that let every bot in and that an anonymous client cannot turn into a denial of service.

Each row of ``bots``, ``spectators`` and ``authors`` says how its token was hashed
(:class:`arena.store.sqlite.TokenHash`, ``hash_scheme``):

* **fast** (``hmac-sha256``): the tokens the arena generates (192 random bits): a salted
  HMAC-SHA256, about a microsecond, checked right on the event loop with no lock and no
  thread (:func:`arena.store.sqlite.fast_token_hash` says why a fast hash is enough for them);
* **slow** (``scrypt``, 16 MiB and about 30 ms of a core): a token a person chose
  (``Store.add_bot(name, token)`` in Python), and every row stored before schema 9. At most
  ``auth_concurrency`` scrypt computations run at once (worker threads behind a
  :class:`trio.CapacityLimiter`). A slow row whose token verifies and has the shape of a
  generated token (:func:`arena.store.sqlite.looks_generated`: before schema 9 every token the
  arena issued had it, and no command let a person choose one) is re-stored under the fast
  scheme, with the same salt: an upgraded database pays scrypt once per bot, at its first
  connection.

:class:`Authenticator` counts **only failures** against the rate limits (:class:`RateLimiter`,
token buckets on trio's clock): a wrong token, or an unknown name, takes one token from the
client address's bucket, one from the name's and one from the server's overall bucket; a right
token never takes any. While any of the three is empty, a check that fails is answered
``rate_limited`` instead of ``auth_failed``, and a slow check is refused before any hashing.
By default (:class:`AuthLimits`) an address may fail 10 times at once then 30 times a minute, a
name 5 times then 6 a minute, the whole server 10 times then 120 a minute.

Is a right token refused while its address (or the server) is over its failure budget?

* **A generated token (fast row): never.** Checking it costs a microsecond, so refusing it would
  save nothing; and the answer ``ok`` cannot help anyone guess, since no one can find a
  192-bit random secret by trying, at any rate. Refusing it would only let a flood of wrong
  tokens, from anywhere, lock the contest's own bots out when they reconnect after a restart.
* **A slow row's token: yes**, refused with ``rate_limited`` before it is hashed. The budget is
  what bounds the CPU scrypt can take (by default 2 failed checks a second overall, well under a
  tenth of a core), and accepting a right guess while refusing wrong ones would turn the limit
  into an oracle with no bound on guesses at a secret that a person chose, which may be
  guessable. Two things soften it: a slow check *reserves* its tokens before hashing and gives
  them back if the token was right, and a check that finds a bucket empty only because checks
  in flight hold its tokens waits for their outcome instead of being refused, so a crowd of
  right tokens arriving together is checked in turn (``auth_concurrency`` at a time) and all get
  in, while a crowd of wrong ones spends the budget and is refused. And a slow row's token once
  verified is remembered (an HMAC-SHA256, under a key made at start-up, of ``(table, name, salt,
  token)``): that bot's next ``hello`` costs no scrypt and is never rate limited.

Every comparison of secrets uses :func:`hmac.compare_digest`; an unknown name costs the same
fast hash as a wrong generated token and gets the same answer. Connections the server makes
for the bots it launches itself (``local``) skip the rate limits (their tokens are fresh and
right), not the concurrency bound of scrypt.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import sqlite3
from collections import Counter
from collections.abc import Callable
from typing import Literal

import msgspec
import trio

from arena.metrics import METRICS
from arena.store.sqlite import DUMMY_TOKEN_HASH, FAST, Store, TokenHash, fast_token_hash, hash_token, looks_generated

log = logging.getLogger("arena.net.auth")

Verdict = Literal["ok", "failed", "rate_limited"]
"""What :meth:`Authenticator.check` decides: welcome, ``auth_failed`` or ``rate_limited``."""


class TokenBucket:
    """A token bucket: holds up to ``capacity`` tokens, refilled at ``per_s`` tokens per
    second (times in seconds on the caller's clock)."""

    __slots__ = ("capacity", "per_s", "tokens", "stamp")

    def __init__(self, capacity: float, per_s: float, now: float) -> None:
        self.capacity = capacity
        self.per_s = per_s
        self.tokens = float(capacity)
        self.stamp = now

    def _refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.per_s)
        self.stamp = now

    def take(self, now: float) -> bool:
        """Take one token; False (and nothing taken) if the bucket holds less than one."""
        self._refill(now)
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def give(self, now: float) -> None:
        """Give one token back (never beyond ``capacity``)."""
        self._refill(now)
        self.tokens = min(self.capacity, self.tokens + 1)

    def full(self, now: float) -> bool:
        """True if the bucket has refilled completely (it then remembers nothing)."""
        self._refill(now)
        return self.tokens >= self.capacity

    def wait_s(self, now: float) -> float:
        """Seconds until one token is available (0 if one is)."""
        self._refill(now)
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.per_s if self.per_s > 0 else float("inf")


class RateLimiter:
    """One :class:`TokenBucket` per key (an address, a name), made on first use. At most
    ``max_keys`` buckets are kept: beyond that, full buckets (which hold no memory of past
    failures) are dropped first, then the oldest ones, so a flood of fresh keys costs bounded
    memory."""

    def __init__(self, capacity: float, per_s: float, max_keys: int = 10_000) -> None:
        self.capacity = capacity
        self.per_s = per_s
        self.max_keys = max_keys
        self.buckets: dict[str, TokenBucket] = {}

    def _bucket(self, key: str, now: float) -> TokenBucket:
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= self.max_keys:
                self._prune(now)
            bucket = self.buckets[key] = TokenBucket(self.capacity, self.per_s, now)
        return bucket

    def _prune(self, now: float) -> None:
        for key in [k for k, b in self.buckets.items() if b.full(now)]:
            del self.buckets[key]
        while len(self.buckets) >= self.max_keys:  # all busy: forget the oldest
            del self.buckets[next(iter(self.buckets))]

    def take(self, key: str, now: float) -> bool:
        """Take one token of ``key``'s bucket; False if it is empty."""
        return self._bucket(key, now).take(now)

    def give(self, key: str, now: float) -> None:
        """Give ``key`` one token back."""
        bucket = self.buckets.get(key)
        if bucket is not None:
            bucket.give(now)

    def wait_s(self, key: str, now: float) -> float:
        """Seconds until ``key`` may try again."""
        bucket = self.buckets.get(key)
        return 0.0 if bucket is None else bucket.wait_s(now)


class AuthLimits(msgspec.Struct, frozen=True):
    """The knobs of :class:`Authenticator` (the ``auth_*`` keys of ``[server]``): concurrent
    scrypt checks (slow rows only); per address, per name and overall, the burst of failed
    checks allowed and how many more are allowed per minute after it."""

    concurrency: int = 1
    addr_burst: int = 10
    addr_per_min: float = 30.0
    name_burst: int = 5
    name_per_min: float = 6.0
    global_burst: int = 10
    global_per_min: float = 120.0


class Authenticator:
    """Checks a ``hello``'s name and token against the store (see the module docstring).

    ``table`` is ``"bots"``, ``"spectators"`` or ``"authors"``. ``hasher`` (default
    :func:`arena.store.sqlite.hash_token`, scrypt) is the slow scheme's hash, a seam for tests.
    Counters: ``fast_checks`` (fast hashes computed, an unknown name's included),
    ``scrypt_checks`` (slow hashes started: the cache and the rate limits avoid them),
    ``failures`` (checks that spent the failure budget), ``upgraded`` (slow rows re-stored fast)."""

    def __init__(self, store: Store, limits: AuthLimits | None = None,
                 hasher: Callable[[str, bytes], bytes] = hash_token) -> None:
        self.store = store
        self.limits = limits or AuthLimits()
        self.limiter = trio.CapacityLimiter(max(1, self.limits.concurrency))
        self.by_addr = RateLimiter(self.limits.addr_burst, self.limits.addr_per_min / 60)
        self.by_name = RateLimiter(self.limits.name_burst, self.limits.name_per_min / 60)
        self.overall = RateLimiter(self.limits.global_burst, self.limits.global_per_min / 60, max_keys=1)
        self.hasher = hasher
        self.fast_checks = 0
        self.scrypt_checks = 0
        self.failures = 0
        self.upgraded = 0
        self._key = secrets.token_bytes(32)
        self._verified: dict[tuple[str, str], bytes] = {}
        self._pending: Counter[tuple[int, str]] = Counter()  # (id(limiter), key) -> tokens held by slow checks
        self._settled = trio.Event()  # set (and replaced) whenever a slow check gives its reservation up

    def _secret(self, table: str, name: str) -> TokenHash | None:
        if table == "bots":
            return self.store.bot_secret(name)
        if table == "authors":  # bot authors on the web side (arena.authors.pages)
            return self.store.author_secret(name)
        return self.store.spectator_secret(name)

    def _mac(self, table: str, name: str, salt: bytes, token: str) -> bytes:
        return hmac.new(self._key, msgspec.json.encode([table, name, salt.hex(), token]), hashlib.sha256).digest()

    def _keys(self, table: str, name: str, addr: str) -> tuple[tuple[RateLimiter, str], ...]:
        return (self.by_addr, addr), (self.by_name, f"{table}:{name}"), (self.overall, "*")

    def retry_after_s(self, name: str, addr: str, table: str = "bots") -> float:
        """Seconds until a client at ``addr`` may try ``name`` again (for the error message)."""
        now = trio.current_time()
        return max(limiter.wait_s(key, now) for limiter, key in self._keys(table, name, addr))

    def _take_all(self, keys: tuple[tuple[RateLimiter, str], ...], now: float) -> list[tuple[RateLimiter, str]]:
        """Take one token from each bucket of ``keys``; if one is empty, give back those taken
        and return the empty ones (an empty list: all taken)."""
        taken: list[tuple[RateLimiter, str]] = []
        for limiter, key in keys:
            if not limiter.take(key, now):
                for done, k in taken:
                    done.give(k, now)
                return [(limiter, key)]
            taken.append((limiter, key))
        return []

    async def check(self, table: str, name: str, token: str, addr: str, *, local: bool = False) -> Verdict:
        """``"ok"`` if ``token`` is ``name``'s token in ``table``; ``"failed"`` if not (unknown
        name or wrong token); ``"rate_limited"`` if it failed while the address, the name or the
        server is over its failure budget, or, for a slow (scrypt) row, if the budget is spent
        before hashing (nothing hashed then). ``local``: a connection made by the server for a
        bot it launched, never rate limited. Never raises for a wrong token; a storage error of
        the lookup propagates."""
        secret = self._secret(table, name)
        if secret is None or secret.scheme == FAST:
            return self._check_fast(table, name, token, addr, secret, local)
        return await self._check_slow(table, name, token, addr, secret, local)

    def _check_fast(self, table: str, name: str, token: str, addr: str, secret: TokenHash | None,
                    local: bool) -> Verdict:
        """A generated token (or an unknown name): one HMAC, on the event loop."""
        expected = secret if secret is not None else DUMMY_TOKEN_HASH
        self.fast_checks += 1
        ok = hmac.compare_digest(fast_token_hash(token, expected.salt), expected.digest) and secret is not None
        if ok:
            METRICS.auth_checks.labels("ok").inc()
            return "ok"
        verdict: Verdict = "failed"
        if not local:
            if self._take_all(self._keys(table, name, addr), trio.current_time()):
                verdict = "rate_limited"
            else:
                self.failures += 1
        METRICS.auth_checks.labels(verdict).inc()
        return verdict

    async def _check_slow(self, table: str, name: str, token: str, addr: str, secret: TokenHash,
                          local: bool) -> Verdict:
        """A slow row: the cache, else reserve the budget, scrypt in a worker thread, settle."""
        cached = self._verified.get((table, name))
        if cached is not None and hmac.compare_digest(cached, self._mac(table, name, secret.salt, token)):
            return "ok"
        keys = self._keys(table, name, addr)
        if not local:
            while empty := self._take_all(keys, trio.current_time()):
                limiter, key = empty[0]
                if not self._pending[(id(limiter), key)]:  # no check in flight could give a token back
                    METRICS.auth_checks.labels("rate_limited").inc()
                    return "rate_limited"
                await self._settled.wait()  # the checks in flight may succeed and give theirs back
            for limiter, key in keys:
                self._pending[(id(limiter), key)] += 1
        ok = hashed = False
        try:
            self.scrypt_checks += 1
            digest = await trio.to_thread.run_sync(self.hasher, token, secret.salt, limiter=self.limiter)
            ok, hashed = hmac.compare_digest(digest, secret.digest), True
        finally:
            if not local:
                now = trio.current_time()
                for limiter, key in keys:
                    self._pending[(id(limiter), key)] -= 1
                    if not self._pending[(id(limiter), key)]:
                        del self._pending[(id(limiter), key)]
                    if ok or not hashed:
                        limiter.give(key, now)  # a right token (or a check cut short) spends nothing
                self.failures += int(hashed and not ok)
                self._settled.set()
                self._settled = trio.Event()
        if ok:
            self._verified[(table, name)] = self._mac(table, name, secret.salt, token)
            if looks_generated(token):
                self._upgrade(table, name, secret, token)
        METRICS.auth_checks.labels("ok" if ok else "failed").inc()
        return "ok" if ok else "failed"

    def _upgrade(self, table: str, name: str, secret: TokenHash, token: str) -> None:
        """Re-store a verified generated token of a slow row under the fast scheme; a storage
        error only leaves the row slow (it is logged, the bot is welcome all the same)."""
        try:
            if self.store.upgrade_token_hash(table, name, secret, token):
                self.upgraded += 1
        except (sqlite3.Error, OSError) as exc:
            log.warning("could not re-store %s %r's token under the fast hash: %s", table, name, exc)

