"""The ``/author`` app's protection (:mod:`arena.authors.pages` mounts it): who is asking
(:class:`AuthorBackend`: a bearer token or a session), the answer to a refused token
(:func:`auth_error`), and :class:`Guard`, the middleware that rate limits every request per
address, caps bodies and adds the security headers (:data:`HEADERS`) to every answer."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import trio
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
)
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response

from arena.authors.accounts import split_token
from arena.net.auth import Authenticator, RateLimiter

REQUEST_BURST = 120
REQUESTS_PER_S = 2.0
"""Every request to ``/author``, per client address: a burst, then a steady rate."""

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Author(BaseUser):
    """An authenticated author: their database row and how they came (``api`` or ``session``)."""

    def __init__(self, row: dict[str, Any], via: str) -> None:
        self.row = row
        self.via = via

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.row["name"]


def fingerprint(key: bytes, row: dict[str, Any]) -> str:
    """A keyed hash of an author's id and token salt: a session is valid only for that token."""
    return hmac.new(key, f"{row['id']}:{bytes(row['salt']).hex()}".encode(), hashlib.sha256).hexdigest()


def client_addr(conn: HTTPConnection) -> str:
    """The client's address (the rate limits' key)."""
    return conn.client.host if conn.client else "?"


class AuthorBackend(AuthenticationBackend):
    """Who is asking: a bearer token (checked by ``authenticator``; a bad one is an error, 401
    or 429) or a valid session; otherwise nobody."""

    def __init__(self, store: Any, authenticator: Authenticator, key: bytes) -> None:
        self.store = store
        self.authenticator = authenticator
        self.key = key

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        header = conn.headers.get("authorization")
        if header is not None:
            scheme, _, credentials = header.partition(" ")
            parts = split_token(credentials) if scheme.lower() == "bearer" else None
            if parts is None:
                raise AuthenticationError("bad_token")
            verdict = await self.authenticator.check("authors", parts[0], parts[1], client_addr(conn))
            row = self.store.author(parts[0]) if verdict == "ok" else None
            if row is None:
                raise AuthenticationError("rate_limited" if verdict == "rate_limited" else "bad_token")
            return AuthCredentials(["author"]), Author(row, "api")
        session = conn.session
        name = session.get("author")
        if name:
            row = self.store.author(name)
            if row is not None and row["status"] == "active" and hmac.compare_digest(
                    str(session.get("fp", "")), fingerprint(self.key, row)):
                return AuthCredentials(["author"]), Author(row, "session")
            session.pop("author", None)
            session.pop("fp", None)
        return None


def auth_error(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """A refused bearer token: 429 (with ``Retry-After``) when rate limited, else 401."""
    if str(exc) == "rate_limited":
        return JSONResponse({"error": "rate_limited", "message": "too many failed tokens: wait a minute"},
                            status_code=429, headers={"Retry-After": "60", **HEADERS})
    return JSONResponse({"error": "bad_token", "message": "unknown, suspended or malformed author token "
                         "(Authorization: Bearer NAME:SECRET)"}, status_code=401, headers=HEADERS)


class Guard:
    """Pure ASGI middleware for ``/author``: the per-address request rate, the body cap, and
    the security headers on every response."""

    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        self.requests = RateLimiter(REQUEST_BURST, REQUESTS_PER_S)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        addr = scope["client"][0] if scope.get("client") else "?"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = None
        if not self.requests.take(addr, trio.current_time()):
            refusal = (429, "rate_limited", "too many requests: slow down")
        elif scope["method"] == "POST":
            length = headers.get("content-length")
            if length is None or not length.isdigit():
                refusal = (411, "length_required", "send the body with a Content-Length")
            elif int(length) > self.max_body:
                refusal = (413, "too_large", f"the body has {int(length):,} bytes, over the limit of "
                           f"{self.max_body:,}")
        if refusal is not None:
            response = JSONResponse({"error": refusal[1], "message": refusal[2]}, status_code=refusal[0],
                                    headers=HEADERS)
            await response(scope, receive, send)
            return
        seen = 0

        async def capped_receive() -> dict:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise HTTPException(413, "the body is longer than its Content-Length")
            return message

        async def secured_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k.lower().encode(), v.encode()) for k, v in HEADERS.items()
                                        if k.lower().encode() not in have)]
            await send(message)

        await self.app(scope, capped_receive, secured_send)
