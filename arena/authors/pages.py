"""The authors' side of the contest's web server, mounted at ``/author`` (:mod:`arena.net.web`).

Pages (HTML made here, every piece of user text through :func:`html.escape`; a session cookie):

* ``GET /author/`` - the author's own page (:func:`arena.authors.accounts.author_view`): bots,
  versions, uploads with the doctor's verdict, ratings with intervals, recent matches with
  replay links, failures with the last lines of output; forms to upload and to register a remote bot;
* ``GET|POST /author/login`` (the token), ``POST /author/logout``, ``GET|POST /author/register``;
* ``POST /author/upload`` (a ``.tar.gz`` file field ``archive``), ``POST /author/remote``;
* ``GET /author/uploads/{id}`` - an upload's status and the doctor's report;
* ``GET /author/bots/{name}/output`` - the bot's captured output (plain text);
* ``GET /author/bots/{name}/matches?before=ID``, ``GET /author/bots/{name}/failures?before=ID`` - the
  bot's finished matches, or those it lost by its own fault, newest first, 20 a page older than
  match ``ID`` (the own page shows the newest 10 of each, with a link to the next page): every list
  pages by key (:mod:`arena.store.pages`), none grows with the history;
* ``POST /author/bots/{name}/withdraw`` - the author withdraws their bot (results stay);
* ``POST /author/tests`` - ask for test matches (form fields ``bot``, ``vs``, ``games``:
  :mod:`arena.schedule.on_demand`), listed in the own page's "Test matches" section;
  ``GET /author/tests?before=ID`` - older test matches, 20 a page; ``GET /author/tests/{id}`` -
  one test match: its status, score, and its replay from the author's seat with their bot's
  output beside each of its decisions (HTML of these: :mod:`arena.authors.tests_html`).

API (``Authorization: Bearer NAME:SECRET``; JSON): ``POST /author/api/register``, ``GET
/author/api/me``, ``POST /author/api/upload`` (the archive as the body), ``GET
/author/api/uploads/{id}``, ``POST /author/api/remote``, ``GET /author/api/bots/{name}/output``, ``GET
/author/api/bots/{name}/matches|failures?before=ID`` (``{"bot", "matches"|"failures", "next"}``), ``POST
/author/api/bots/{name}/withdraw``, ``POST /author/api/tests`` (``{"bot", "vs", "games"}``: 202
``{"tests": [ids], ...}``, 429 with ``Retry-After`` over the day's quota), ``GET
/author/api/tests?ids=1,2`` or ``?before=ID`` (``{"tests": [...], "quota"}``), ``GET /author/api/tests/{id}``
(one, with its ``view``).

Protection:

* **Authentication** by Starlette's ``AuthenticationMiddleware`` (:class:`arena.authors.guard.AuthorBackend`): a
  bearer token, checked by the contest's :class:`arena.net.auth.Authenticator` (a salted
  HMAC-SHA256, failures rate limited per address, name and overall), or the
  session of ``SessionMiddleware`` (a signed cookie, ``HttpOnly``, ``SameSite=Strict``, 8 hours,
  key made at start-up) holding the author's name and a fingerprint of their token's salt,
  checked against the database at every request, so a suspended or deleted author's session
  ends at once. Everything but login, logout and registration needs an author.
* **CSRF**: every form POST carries the session's CSRF token (compared in constant time); API
  POSTs need the ``Authorization`` header, which no other site can make a browser send, and
  a JSON or archive content type.
* **Rate limits** (:class:`arena.net.auth.RateLimiter`): every request per address (a burst of
  :data:`arena.authors.guard.REQUEST_BURST`, then :data:`~arena.authors.guard.REQUESTS_PER_S` a second),
  registrations per address and overall, uploads per author. A body over the upload cap is
  refused (413) before it is read.
* **Isolation between authors**: an upload, output or bot of another author answers 404, the
  same as one that does not exist; tokens are shown once and never stored in clear.
* Headers: a strict ``Content-Security-Policy`` (no script at all), ``nosniff``,
  ``frame-ancestors 'none'``, ``no-store``.

Where the pieces are: the protection in :mod:`arena.authors.guard`, the HTML in
:mod:`arena.authors.layout` (and :mod:`arena.authors.tests_html`), the state and helpers every
handler shares in :mod:`arena.authors.site`, and the handlers by concern: the account (own page,
login, registration: :mod:`arena.authors.routes_account`), uploads and remote bots
(:mod:`arena.authors.routes_uploads`), bots (:mod:`arena.authors.routes_bots`) and test matches
(:mod:`arena.authors.routes_tests`); this module joins them into one app.
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.routing import Route

from arena.authors.guard import AuthorBackend, Guard, auth_error
from arena.authors.routes_account import AccountRoutes
from arena.authors.routes_bots import BotRoutes
from arena.authors.routes_tests import OnDemandRoutes
from arena.authors.routes_uploads import UploadRoutes

SESSION_S = 8 * 3600
"""A login lasts this long."""


class AuthorApp(AccountRoutes, UploadRoutes, BotRoutes, OnDemandRoutes):
    """Every handler of the ``/author`` app over one shared state (:class:`arena.authors.site.AuthorSite`)."""

    def routes(self) -> list[Route]:
        """The routes, in the order they are tried (``/bots/{bot}/output`` before ``/bots/{bot}/{which}``)."""
        return [
            Route("/", self.home),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/register", self.register_page, methods=["GET", "POST"]),
            Route("/upload", self.upload_form, methods=["POST"]),
            Route("/remote", self.remote_form, methods=["POST"]),
            Route("/uploads/{upload_id}", self.upload_page),
            Route("/bots/{bot}/output", self.output),
            Route("/bots/{bot}/{which}", self.bot_list_page),
            Route("/bots/{bot}/withdraw", self.withdraw_form, methods=["POST"]),
            Route("/tests", self.tests_form, methods=["POST"]),
            Route("/tests", self.tests_list_page, methods=["GET"]),
            Route("/tests/{test_id}", self.test_page),
            Route("/api/tests", self.api_tests, methods=["GET", "POST"]),
            Route("/api/tests/{test_id}", self.api_test),
            Route("/api/bots/{bot}/withdraw", self.api_withdraw, methods=["POST"]),
            Route("/api/register", self.api_register, methods=["POST"]),
            Route("/api/me", self.api_me),
            Route("/api/upload", self.api_upload, methods=["POST"]),
            Route("/api/uploads/{upload_id}", self.api_upload_status),
            Route("/api/remote", self.api_remote, methods=["POST"]),
            Route("/api/bots/{bot}/output", self.output),
            Route("/api/bots/{bot}/{which}", self.api_bot_list),
        ]


def make_author_app(contest: Any) -> Starlette:
    """The ``/author`` app of ``contest`` (an :class:`arena.schedule.contest.Contest`)."""
    site = AuthorApp(contest)
    cfg = site.cfg
    middleware = [
        Middleware(Guard, max_body=cfg.uploads.packed_bytes + 64 * 1024),
        Middleware(SessionMiddleware, secret_key=secrets.token_urlsafe(32), session_cookie="arena_author",
                   max_age=SESSION_S, path="/author", same_site="strict",
                   https_only=cfg.secure_cookies or cfg.server.tls_cert is not None),  # HTTPS: ours or a proxy's
        Middleware(AuthenticationMiddleware, backend=AuthorBackend(site.store, site.authenticator, site.key),
                   on_error=auth_error),
    ]
    return Starlette(routes=site.routes(), middleware=middleware, exception_handlers={HTTPException: site.http_error})


MOUNTS = {"/author": make_author_app}
"""The author pages as the site mounts them (:func:`arena.net.web.make_app`'s ``mounts``)."""
