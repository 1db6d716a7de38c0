"""Tokens as the store keeps them: a random salt and a hash, made the way the row says (``hash_scheme``).

A keyed HMAC-SHA256 for the long random tokens the arena issues, scrypt for a token a person chose
(see :func:`fast_token_hash`). Pure functions: no SQL here (the rows are :mod:`arena.store.accounts`).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import NamedTuple

SCRYPT = {"n": 2**14, "r": 8, "p": 1}
"""scrypt cost parameters for the hashes of tokens a person chose (16 MiB and about 30 ms per
check on one core)."""

FAST = "hmac-sha256"
"""``hash_scheme`` of a token the arena generated (:func:`fast_token_hash`)."""

SLOW = "scrypt"
"""``hash_scheme`` of a token a person chose, and of every row made before schema 9 (:func:`hash_token`)."""

TOKEN_SCHEMES = (FAST, SLOW)
"""The values of the ``hash_scheme`` column of ``bots``, ``spectators`` and ``authors``."""

GENERATED_TOKEN_CHARS = 32
"""Length of the tokens the arena issues: ``secrets.token_urlsafe(24)``, 24 random bytes (192
bits) in 32 characters of the URL-safe base64 alphabet."""


def hash_token(token: str, salt: bytes) -> bytes:
    """scrypt hash of ``token`` with ``salt`` (32-byte digest): the slow scheme (:data:`SLOW`),
    for a token a person chose. Costs :data:`SCRYPT` (about 30 ms of a core)."""
    return hashlib.scrypt(token.encode(), salt=salt, dklen=32, **SCRYPT)  # add_launched_bot: 32 random bytes


def fast_token_hash(token: str, salt: bytes) -> bytes:
    """HMAC-SHA256 of ``token`` keyed with the row's ``salt`` (32-byte digest): the fast scheme
    (:data:`FAST`), about a microsecond, for the tokens the arena generates.

    Why fast is enough: a generated token is 192 random bits (:data:`GENERATED_TOKEN_CHARS`), so
    whoever reads the database cannot find it by guessing, whatever the hash costs (2**191
    tries on average); a slow hash only protects secrets that can be guessed, the ones a person
    chooses, which keep scrypt. The key is the per-row random salt rather than a server key: two
    rows never share a function (no precomputed table, equal tokens give unrelated hashes), and
    there is no secret outside the database to keep, back up, move to another host or lose
    (losing a server key would void every token). This is how services that issue API tokens
    store them (a plain or keyed SHA-256 of a long random token)."""
    return hmac.new(salt, token.encode(), hashlib.sha256).digest()


def looks_generated(token: str) -> bool:
    """True if ``token`` has the shape of a token the arena issues (:data:`GENERATED_TOKEN_CHARS`
    characters of the URL-safe base64 alphabet). Before schema 9 every bot, spectator and author
    token the arena handed out had it, and no command let a person choose one (only
    ``Store.add_bot(name, token)`` in Python did)."""
    return len(token) == GENERATED_TOKEN_CHARS and all(c.isascii() and (c.isalnum() or c in "-_") for c in token)


class TokenHash(NamedTuple):
    """What a row stores of a token: ``salt`` (16 random bytes), ``digest`` (32 bytes) and
    ``scheme`` (:data:`FAST` or :data:`SLOW`: which function made ``digest``)."""

    salt: bytes
    digest: bytes
    scheme: str

    def matches(self, token: str) -> bool:
        """True if ``token`` is the token hashed here (its scheme's hash, compared in constant
        time). Costs scrypt for a :data:`SLOW` row: call it off the event loop then."""
        made = fast_token_hash(token, self.salt) if self.scheme == FAST else hash_token(token, self.salt)
        return hmac.compare_digest(made, self.digest)


DUMMY_TOKEN_HASH = TokenHash(b"0" * 16, b"", FAST)
"""Checked for an unknown name so that it costs what a generated token's check costs (and never matches)."""
