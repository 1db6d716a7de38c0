"""Token checks that an anonymous client cannot turn into a denial of service.

A token is stored only as a salted scrypt hash (:func:`arena.store.sqlite.hash_token`, 16 MiB of
memory and about 30 ms of a core per check). Unbounded, a few hundred wrong-token ``hello``
lines in parallel would hold gigabytes and every core. :class:`Authenticator` bounds the cost:

* **Concurrency**: at most ``auth_concurrency`` scrypt computations run at once (worker
  threads behind a :class:`trio.CapacityLimiter`); the others wait their turn.
* **Rate limits**: every scrypt check that is not answered from the cache costs one token of
  the client address's bucket, one of the name's bucket and one of the server's overall bucket
  (:class:`RateLimiter`, token buckets on trio's clock); a check that succeeds gets them back,
  so only failures use them up. An empty bucket refuses at once, before any hashing, with
  ``rate_limited``. The overall bucket bounds the CPU a flood from many addresses with fresh
  names can take (by default 2 failed checks a second, well under a tenth of a core).
* **Cache**: a verified token is remembered as an HMAC-SHA256, under a key made at start-up, of
  ``(table, name, salt, token)``: the next ``hello`` of the same bot (a reconnect) is checked
  with one fast keyed hash and no scrypt, and is never rate limited, so an attacker failing on
  purpose under a bot's name cannot lock that bot out once it has connected. Replacing a token
  changes its salt, which invalidates the cache entry.
* **Constant time**: every comparison of secrets uses :func:`hmac.compare_digest`; an unknown
  name costs the same scrypt as a wrong token (the two answers are not distinguished).

Connections the server makes for the bots it launches itself (``local``) skip the rate limits
(their tokens are fresh and right), not the concurrency bound.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import Literal

import msgspec
import trio

from arena.metrics import METRICS
from arena.store.sqlite import Store, hash_token

Verdict = Literal["ok", "failed", "rate_limited"]
"""What :meth:`Authenticator.check` decides: welcome, ``auth_failed`` or ``rate_limited``."""

DUMMY_SALT = b"0" * 16
"""Salt hashed for an unknown name, so that it costs as much as a wrong token."""


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
    scrypt checks; per address and per name, the burst of failed checks allowed and how many
    more are allowed per minute after it."""

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
    :func:`arena.store.sqlite.hash_token`) is a seam for tests. ``scrypt_checks`` counts the scrypt
    computations run (the cache and the rate limits avoid them)."""

    def __init__(self, store: Store, limits: AuthLimits | None = None,
                 hasher: Callable[[str, bytes], bytes] = hash_token) -> None:
        self.store = store
        self.limits = limits or AuthLimits()
        self.limiter = trio.CapacityLimiter(max(1, self.limits.concurrency))
        self.by_addr = RateLimiter(self.limits.addr_burst, self.limits.addr_per_min / 60)
        self.by_name = RateLimiter(self.limits.name_burst, self.limits.name_per_min / 60)
        self.overall = RateLimiter(self.limits.global_burst, self.limits.global_per_min / 60, max_keys=1)
        self.hasher = hasher
        self.scrypt_checks = 0
        self._key = secrets.token_bytes(32)
        self._verified: dict[tuple[str, str], bytes] = {}

    def _secret(self, table: str, name: str) -> tuple[bytes, bytes] | None:
        if table == "bots":
            return self.store.bot_secret(name)
        if table == "authors":  # bot authors on the web side (arena.net.author_pages)
            return self.store.author_secret(name)
        return self.store.spectator_secret(name)

    def _mac(self, table: str, name: str, salt: bytes, token: str) -> bytes:
        return hmac.new(self._key, msgspec.json.encode([table, name, salt.hex(), token]), hashlib.sha256).digest()

    def retry_after_s(self, name: str, addr: str, table: str = "bots") -> float:
        """Seconds until a client at ``addr`` may try ``name`` again (for the error message)."""
        now = trio.current_time()
        return max(self.by_addr.wait_s(addr, now), self.by_name.wait_s(f"{table}:{name}", now),
                   self.overall.wait_s("*", now))

    async def check(self, table: str, name: str, token: str, addr: str, *, local: bool = False) -> Verdict:
        """``"ok"`` if ``token`` is ``name``'s token in ``table``; ``"failed"`` if not (unknown
        name or wrong token); ``"rate_limited"`` if the address or the name has used up its
        failures (nothing hashed). ``local``: a connection made by the server for a bot it
        launched, not rate limited."""
        secret = self._secret(table, name)
        if secret is not None:
            cached = self._verified.get((table, name))
            if cached is not None and hmac.compare_digest(cached, self._mac(table, name, secret[0], token)):
                return "ok"
        name_key = f"{table}:{name}"
        now = trio.current_time()
        if not local:
            taken: list[tuple[RateLimiter, str]] = []
            for limiter, key in ((self.by_addr, addr), (self.by_name, name_key), (self.overall, "*")):
                if not limiter.take(key, now):
                    for done, k in taken:
                        done.give(k, now)
                    METRICS.auth_checks.labels("rate_limited").inc()
                    return "rate_limited"
                taken.append((limiter, key))
        salt, expected = secret if secret is not None else (DUMMY_SALT, b"")
        self.scrypt_checks += 1
        digest = await trio.to_thread.run_sync(self.hasher, token, salt, limiter=self.limiter)
        ok = hmac.compare_digest(digest, expected) and secret is not None
        if ok:
            now = trio.current_time()
            if not local:
                self.by_addr.give(addr, now)
                self.by_name.give(name_key, now)
                self.overall.give("*", now)
            self._verified[(table, name)] = self._mac(table, name, salt, token)
        METRICS.auth_checks.labels("ok" if ok else "failed").inc()
        return "ok" if ok else "failed"
