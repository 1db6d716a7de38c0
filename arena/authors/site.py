"""What every handler of the ``/author`` app shares (:class:`AuthorSite`): the contest, the
session key, the registration and upload rate limits, who is asking, the refusals as a page or
as JSON, and a request's body read within the upload cap. The handlers themselves are grouped by
concern in the ``routes_*`` modules, each a subclass of :class:`AuthorSite`; :mod:`arena.authors.pages`
joins them into one app."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from html import escape
from typing import Any

import msgspec
import trio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from arena.authors.accounts import Refused
from arena.authors.guard import client_addr
from arena.authors.layout import nav, page
from arena.net.auth import Authenticator, RateLimiter

REGISTER_BURST = 10
"""Registrations per address in a burst (refilled at the contest's ``registrations_per_hour``)."""


class AuthorSite:
    """The state of one ``/author`` app of ``contest`` (an :class:`arena.schedule.contest.Contest`)
    and the helpers its handlers share. ``key`` (32 random bytes, made here) keys the sessions'
    fingerprints (:func:`arena.authors.guard.fingerprint`); registrations are limited per address
    (a burst of :data:`REGISTER_BURST`) and overall, uploads per author, all at the contest's
    ``[uploads]`` rates (an hour's)."""

    def __init__(self, contest: Any) -> None:
        self.contest = contest
        self.store, self.cfg = contest.store, contest.config
        self.authenticator: Authenticator = contest.server.auth  # one bound on scrypt work for TCP and HTTP alike
        self.key = secrets.token_bytes(32)
        self.idle_sizes: dict[Any, int] = {}  # bot output shown while it plays: see accounts.bot_output
        uploads = self.cfg.uploads
        per_hour = uploads.registrations_per_hour / 3600
        self.reg_by_addr = RateLimiter(REGISTER_BURST, per_hour)
        self.reg_overall = RateLimiter(max(1.0, uploads.registrations_per_hour / 6), per_hour, max_keys=1)
        self.uploads_by_author = RateLimiter(uploads.uploads_per_hour, uploads.uploads_per_hour / 3600)

    def who(self, request: Request) -> dict[str, Any] | None:
        """The asking author's database row, or None for nobody."""
        return request.user.row if request.user.is_authenticated else None

    def need(self, request: Request, api: bool = False) -> dict[str, Any]:
        """The asking author's row; :class:`HTTPException` 401 for nobody, and 403 for an ``api``
        POST that came with a session instead of the ``Authorization`` header."""
        author = self.who(request)
        if author is None:
            raise HTTPException(401, "log in first (or send Authorization: Bearer NAME:SECRET)")
        if api and request.method == "POST" and request.user.via != "api":
            raise HTTPException(403, "API requests must carry the Authorization header")
        return author

    @staticmethod
    def refused_json(exc: Refused) -> JSONResponse:
        """A refusal as the API answers it: ``{"error", "message"}`` with its status."""
        return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status)

    def refused_page(self, request: Request, exc: Refused, title: str = "refused") -> HTMLResponse:
        """A refusal as a page (its message, a link back), with its status."""
        return page(title, f'{nav(request, (self.who(request) or {}).get("name"))}<h1>{escape(title)}</h1>'
                    f'<p class="error" id="error">{escape(exc.message)}</p><p><a href="/author/">back</a></p>',
                    exc.status)

    def registration_allowed(self, request: Request) -> None:
        """Takes one registration from the address's and the overall limits; :class:`Refused` 429
        when either is spent."""
        now = trio.current_time()
        if not self.reg_by_addr.take(client_addr(request), now) or not self.reg_overall.take("*", now):
            raise Refused(429, "rate_limited", "too many registrations: try again later")

    def upload_allowed(self, author: dict[str, Any]) -> None:
        """Takes one upload from the author's limit; :class:`Refused` 429 when it is spent."""
        if not self.uploads_by_author.take(str(author["id"]), trio.current_time()):
            raise Refused(429, "rate_limited", f"at most {self.cfg.uploads.uploads_per_hour:g} uploads an hour: try "
                          "again later")

    def owned(self, request: Request, key: str, find: Callable[[int], dict[str, Any] | None],
              missing: str) -> dict[str, Any]:
        """The row named by the path parameter ``key`` (an integer id) that ``find(id)`` returns
        for the author; :class:`HTTPException` 404 with ``missing`` when it is not a number or not
        theirs (both look the same from outside)."""
        try:
            row = find(int(request.path_params[key]))
        except ValueError:
            row = None
        if row is None:
            raise HTTPException(404, missing)
        return row

    async def read_body(self, request: Request) -> bytes:
        """The request's body; :class:`Refused` 413 once it passes ``[uploads] packed_bytes``."""
        cap = self.cfg.uploads.packed_bytes
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise Refused(413, "archive_too_large", f"the archive is over {cap:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(self, request: Request) -> dict[str, Any]:
        """The request's body as a JSON object; :class:`Refused` 415 for another content type,
        400 for a body that is not JSON or not an object."""
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise Refused(415, "bad_content_type", "send JSON (Content-Type: application/json)")
        try:
            body = msgspec.json.decode(await self.read_body(request))
        except msgspec.DecodeError:
            raise Refused(400, "bad_json", "the body is not JSON") from None
        if not isinstance(body, dict):
            raise Refused(400, "bad_json", "send a JSON object")
        return body

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """The app's answer to an :class:`HTTPException`: JSON under ``/author/api/``, else the
        login page for a 401 (a redirect), else a page with the status and its detail."""
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/author/api/"):
            return JSONResponse({"error": "refused", "message": exc.detail}, status_code=exc.status_code)
        if exc.status_code == 401:
            return RedirectResponse("/author/login", status_code=303)
        return page("refused", f'{nav(request, (self.who(request) or {}).get("name"))}<h1>{exc.status_code}</h1>'
                    f'<p class="error" id="error">{escape(str(exc.detail))}</p>', exc.status_code)
