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

* **Authentication** by Starlette's ``AuthenticationMiddleware`` (:class:`AuthorBackend`): a
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
  :data:`REQUEST_BURST`, then :data:`REQUESTS_PER_S` a second), registrations per address and
  overall, uploads per author. A body over the upload cap is refused (413) before it is read.
* **Isolation between authors**: an upload, output or bot of another author answers 404, the
  same as one that does not exist; tokens are shown once and never stored in clear.
* Headers: a strict ``Content-Security-Policy`` (no script at all), ``nosniff``,
  ``frame-ancestors 'none'``, ``no-store``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from html import escape
from typing import Any
from urllib.parse import quote

import msgspec
import trio
from starlette.applications import Starlette
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
)
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from arena.authors.accounts import (
    Refused,
    accept_archive,
    author_view,
    bot_output,
    own_test,
    own_tests,
    own_upload,
    owns,
    register,
    register_remote,
    split_token,
    withdraw,
)
from arena.authors.tests_html import match_page_html, tests_section, tests_table
from arena.net.auth import Authenticator, RateLimiter
from arena.net.history import finished_matches
from arena.schedule.on_demand import Refusal
from arena.store import pages

REQUEST_BURST = 120
REQUESTS_PER_S = 2.0
"""Every request to ``/author``, per client address: a burst, then a steady rate."""
REGISTER_BURST = 10
"""Registrations per address in a burst (refilled at the contest's ``registrations_per_hour``)."""
SESSION_S = 8 * 3600
"""A login lasts this long."""
FORM_FIELD_BYTES = 4096
"""Largest text field of a form."""

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


# ---------------------------------------------------------------------------------------- HTML

STYLE = """body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:980px;padding:1em;color:#222;
overflow-wrap:anywhere}table{border-collapse:collapse;margin:.5em 0;display:block;max-width:100%;overflow-x:auto}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
pre{background:#f4f4f4;padding:.5em;overflow:auto;max-height:20em;white-space:pre-wrap;overflow-wrap:anywhere}
.PASS,.passed,.done{color:#070}.FAIL,.failed,.aborted{color:#b00}.SKIP,.queued,.checking,.playing{color:#a60}
.token{font:bold 1.1em monospace;background:#ffd;padding:.4em;word-break:break-all}
form{margin:.6em 0}section{border-top:1px solid #ddd;margin-top:1em}nav form{display:inline}"""


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """A whole page; ``title`` is escaped here, ``body`` must already be."""
    return HTMLResponse(f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
                        f'content="width=device-width,initial-scale=1"><title>{escape(title)}</title><style>'
                        f'{STYLE}</style></head><body>{body}</body></html>', status_code=status)


def csrf_of(request: Request) -> str:
    """The session's CSRF token (made on first use)."""
    token = request.session.get("csrf")
    if not token:
        token = request.session["csrf"] = secrets.token_urlsafe(24)
    return token


def hidden_csrf(request: Request) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(csrf_of(request))}">'


async def checked_form(request: Request, max_files: int = 0, max_part: int = FORM_FIELD_BYTES) -> Any:
    """The POSTed form (Starlette's parser) once its CSRF token matches the session's; 403
    otherwise."""
    form = await request.form(max_files=max_files, max_fields=10, max_part_size=max_part)
    expected = request.session.get("csrf")
    got = form.get("csrf")
    if not expected or not isinstance(got, str) or not hmac.compare_digest(got.encode(), str(expected).encode()):
        raise HTTPException(403, "the form is stale or came from another site: reload the page and try again")
    return form


def _when(t: float | None) -> str:
    return "-" if not t else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def report_html(up: dict[str, Any]) -> str:
    """An upload's status and doctor report, escaped."""
    rep = up.get("report") or {}
    out = [f'<p>upload {up["id"]} of <b>{escape(up["bot"])}</b>: <span class="{escape(up["status"])}" '
           f'id="upload-status">{escape(up["status"])}</span>'
           + (f' (version {up["version"]})' if up.get("version") else "") + "</p>"]
    if rep:
        out.append(f'<p id="upload-summary">{escape(str(rep.get("summary", "")))}</p>')
    if rep.get("checks"):
        rows = "".join(f'<tr><td>{escape(c["title"])}</td><td class="{escape(c["status"])}">{escape(c["status"])}'
                       f'</td><td>{escape(c["details"])}</td></tr>' for c in rep["checks"])
        out.append(f'<table id="doctor-report"><tr><th>check</th><th>result</th><th>details</th></tr>{rows}</table>')
    if rep.get("log_tail"):
        out.append(f'<h3>last lines of the bot\'s output</h3><pre id="doctor-output">{escape(rep["log_tail"])}</pre>')
    if up["status"] in ("queued", "checking"):
        out.append('<p>The doctor is checking it: reload this page in a few seconds.</p>')
    return "".join(out)


def nav(request: Request, who: str | None) -> str:
    if who is None:
        return '<nav><a href="/">contest</a> · <a href="/author/login">log in</a> · ' \
               '<a href="/author/register">register</a></nav>'
    return (f'<nav><a href="/">contest</a> · <a href="/author/">{escape(who)}</a> · <form method="post" '
            f'action="/author/logout">{hidden_csrf(request)}<button>log out</button></form></nav>')


def faults_table(faults: list[dict[str, Any]]) -> str:
    """The matches a bot lost by its own fault, escaped."""
    rows = "".join(f'<tr><td><a href="/match/{escape(quote(f["match_key"], safe=""))}">{escape(f["match_key"])}</a>'
                   f'</td><td>{escape(f["reason"] or "")}</td><td>{escape(f["detail"] or "")}</td>'
                   f'<td>{_when(f["finished_at"])}</td></tr>' for f in faults)
    return f'<table class="faults"><tr><th>match</th><th>how</th><th>detail</th><th>finished</th></tr>{rows}</table>'


def matches_table(matches: list[dict[str, Any]]) -> str:
    """A list of finished matches (:func:`arena.net.history.finished_matches`), escaped."""
    rows = "".join(f'<tr><td><a class="replay" href="/match/{escape(quote(m["match_id"], safe=""))}">'
                   f'{escape(m["match_id"])}</a></td><td>{escape(" v ".join(m["bots"]))}</td>'
                   f'<td>{escape(m["winner"] or "-")}</td><td>{escape(m["reason"] or "")}</td>'
                   f'<td>{_when(m["finished_at"])}</td></tr>' for m in matches)
    return (f'<table class="matches"><tr><th>match</th><th>bots</th><th>winner</th><th>how</th><th>finished</th></tr>'
            f'{rows}</table>')


def older_link(path: str, before: int | None, text: str) -> str:
    """A link to the next (older) page of a list at ``path`` (escaped), or nothing at its end."""
    return "" if before is None else f'<p><a class="older" href="{path}?before={int(before)}">{escape(text)} ›</a></p>'


def dashboard_html(request: Request, view: dict[str, Any]) -> str:
    """The author's page, escaped."""
    out = [nav(request, view["author"]), f'<h1>{escape(view["author"])}</h1>',
           f'<p>Contest {escape(view["contest"])} ({escape(view["game"])}). <small id="ratings-age">'
           f'{escape(view["ratings"]["text"])}; a provisional Elo (interval over '
           f'±{view["ratings"]["provisional_ci95"]:.0f} or not known yet) is marked so.</small></p>']
    if not view["bots"]:
        out.append('<p id="no-bots">No bots yet: upload one below.</p>')
    for b in view["bots"]:
        name, path = escape(b["bot"]), escape(quote(b["bot"], safe=""))
        rating = "-" if b["elo"] is None else f'{b["elo"]:.0f}' + (
            f' ± {b["interval"]:.0f}' if b["interval"] is not None else "") + (
            " (provisional)" if b["provisional"] else "")
        out.append(f'<section class="bot" data-bot="{name}"><h2>{name} <small>({escape(b["kind"])})</small></h2>'
                   f'<p>state <b class="state">{escape(b["state"])}</b>, connected {"yes" if b["connected"] else "no"}'
                   f', Elo <span class="rating">{escape(rating)}</span> (95% interval), {b["games"]} games'
                   + (f', {b["failures"]} failures in a row' if b["failures"] else "") + "</p>")
        if b["last_output"]:
            out.append(f'<p>last lines of output at its last failure:</p><pre class="last-output">'
                       f'{escape(chr(10).join(b["last_output"]))}</pre>')
        if b["versions"]:
            rows = "".join(f'<tr><td>{v["version"]}</td><td><code>{escape(v["sha256"][:12])}</code></td>'
                           f'<td>{v["size"]:,}</td><td>{_when(v["created_at"])}</td></tr>' for v in b["versions"])
            out.append(f'<table class="versions"><tr><th>version</th><th>sha256</th><th>bytes</th><th>accepted</th>'
                       f'</tr>{rows}</table>')
        if b["uploads"]:
            rows = "".join(f'<tr><td><a href="/author/uploads/{u["id"]}">upload {u["id"]}</a></td>'
                           f'<td class="{escape(u["status"])}">{escape(u["status"])}</td>'
                           f'<td>{escape(u["summary"] or "")}</td><td>{_when(u["created_at"])}</td></tr>'
                           for u in b["uploads"])
            out.append(f'<table class="uploads"><tr><th>upload</th><th>status</th><th>doctor</th><th>sent</th></tr>'
                       f'{rows}</table>')
        if b["faults"]:
            out.append(f'<h3>failures</h3>{faults_table(b["faults"])}'
                       + older_link(f'/author/bots/{path}/failures', b["faults_next"], "older failures"))
        if b["matches"]:
            out.append(f'<h3>recent matches</h3>{matches_table(b["matches"])}'
                       + older_link(f'/author/bots/{path}/matches', b["matches_next"], "older matches"))
        out.append(f'<p><a class="output" href="/author/bots/{name}/output">captured output</a></p>'
                   f'<form method="post" action="/author/bots/{name}/withdraw">{hidden_csrf(request)}'
                   f'<button class="withdraw">withdraw {name}</button> (its results stay; its code and '
                   f'versions are deleted)</form></section>')
    if view.get("failed_uploads"):
        rows = "".join(f'<tr><td><a href="/author/uploads/{u["id"]}">upload {u["id"]}</a></td>'
                       f'<td>{escape(u["bot"])}</td><td class="failed">failed</td>'
                       f'<td>{escape(u["summary"] or "")}</td><td>{_when(u["created_at"])}</td></tr>'
                       for u in view["failed_uploads"])
        out.append(f'<section class="failed-uploads"><h2>Uploads that failed</h2><p>A bot whose first upload fails '
                   f'holds no name: fix it and upload again.</p><table class="uploads"><tr><th>upload</th><th>bot</th>'
                   f'<th>status</th><th>doctor</th><th>sent</th></tr>{rows}</table></section>')
    out.append(tests_section(hidden_csrf(request), view))
    out.append(f'<section><h2>Upload a bot</h2><p>A <code>.tar.gz</code> with <code>manifest.toml</code> at its '
               f'root and the bot\'s files beside it (or use <code>arena bots upload</code>). A new upload of a '
               f'bot replaces it in the ladder once the doctor passes it.</p>'
               f'<form method="post" action="/author/upload" enctype="multipart/form-data">{hidden_csrf(request)}'
               f'<input type="file" name="archive" accept=".tar.gz,.tgz,application/gzip" required> '
               f'<button id="upload-button">upload</button></form></section>'
               f'<section><h2>A remote bot</h2><p>A bot that connects over TCP with its own token.</p>'
               f'<form method="post" action="/author/remote">{hidden_csrf(request)}<input name="name" required '
               f'maxlength="32" placeholder="bot name"> <button id="remote-button">get a token</button></form>'
               f'</section>')
    return "".join(out)


# ---------------------------------------------------------------------------------------- the app


def make_author_app(contest: Any) -> Starlette:
    """The ``/author`` app of ``contest`` (an :class:`arena.schedule.contest.Contest`)."""
    store, cfg = contest.store, contest.config
    authenticator: Authenticator = contest.server.auth  # one bound on scrypt work for TCP and HTTP alike
    key = secrets.token_bytes(32)
    idle_sizes: dict[Any, int] = {}  # bot output shown while it plays: see accounts.bot_output
    per_hour = cfg.uploads.registrations_per_hour / 3600
    reg_by_addr = RateLimiter(REGISTER_BURST, per_hour)
    reg_overall = RateLimiter(max(1.0, cfg.uploads.registrations_per_hour / 6), per_hour, max_keys=1)
    uploads_by_author = RateLimiter(cfg.uploads.uploads_per_hour, cfg.uploads.uploads_per_hour / 3600)

    def who(request: Request) -> dict[str, Any] | None:
        return request.user.row if request.user.is_authenticated else None

    def need(request: Request, api: bool = False) -> dict[str, Any]:
        author = who(request)
        if author is None:
            raise HTTPException(401, "log in first (or send Authorization: Bearer NAME:SECRET)")
        if api and request.method == "POST" and request.user.via != "api":
            raise HTTPException(403, "API requests must carry the Authorization header")
        return author

    def refused_json(exc: Refused) -> JSONResponse:
        return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status)

    def refused_page(request: Request, exc: Refused, title: str = "refused") -> HTMLResponse:
        return page(title, f'{nav(request, (who(request) or {}).get("name"))}<h1>{escape(title)}</h1>'
                    f'<p class="error" id="error">{escape(exc.message)}</p><p><a href="/author/">back</a></p>',
                    exc.status)

    def registration_allowed(request: Request) -> None:
        now = trio.current_time()
        if not reg_by_addr.take(client_addr(request), now) or not reg_overall.take("*", now):
            raise Refused(429, "rate_limited", "too many registrations: try again later")

    def upload_allowed(author: dict[str, Any]) -> None:
        if not uploads_by_author.take(str(author["id"]), trio.current_time()):
            raise Refused(429, "rate_limited", f"at most {cfg.uploads.uploads_per_hour:g} uploads an hour: try "
                          "again later")

    async def read_body(request: Request) -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cfg.uploads.packed_bytes:
                raise Refused(413, "archive_too_large", f"the archive is over {cfg.uploads.packed_bytes:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(request: Request) -> dict[str, Any]:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise Refused(415, "bad_content_type", "send JSON (Content-Type: application/json)")
        try:
            body = msgspec.json.decode(await read_body(request))
        except msgspec.DecodeError:
            raise Refused(400, "bad_json", "the body is not JSON") from None
        if not isinstance(body, dict):
            raise Refused(400, "bad_json", "send a JSON object")
        return body

    # ---- pages

    async def home(request: Request) -> Response:
        author = who(request)
        if author is None:
            return RedirectResponse("/author/login", status_code=303)
        return page(f"{author['name']} - {cfg.name}", dashboard_html(request, author_view(contest, author)))

    async def login_form(request: Request, error: str = "", status: int = 200) -> Response:
        reg = '' if cfg.registration == "organiser" else ' · <a href="/author/register">register</a>'
        return page("log in", f'{nav(request, None)}<h1>Log in</h1>'
                    + (f'<p class="error" id="error">{escape(error)}</p>' if error else "")
                    + f'<form method="post" action="/author/login">{hidden_csrf(request)}<label>author token '
                      f'<input name="token" type="password" autocomplete="current-password" required size="60">'
                      f'</label> <button id="login-button">log in</button></form><p>The token you were given at '
                      f'registration (<code>NAME:SECRET</code>){reg}.</p>', status)

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return await login_form(request)
        form = await checked_form(request)
        parts = split_token(str(form.get("token", "")))
        verdict = "failed"
        if parts is not None:
            verdict = await authenticator.check("authors", parts[0], parts[1], client_addr(request))
        row = store.author(parts[0]) if verdict == "ok" else None
        if row is None:
            if verdict == "rate_limited":
                return await login_form(request, "too many failed attempts: wait a minute", 429)
            return await login_form(request, "unknown, suspended or mistyped token", 401)
        request.session.clear()  # a fresh session: nothing from before the login survives
        request.session.update({"author": row["name"], "fp": fingerprint(key, row),
                                "csrf": secrets.token_urlsafe(24)})
        return RedirectResponse("/author/", status_code=303)

    async def logout(request: Request) -> Response:
        await checked_form(request)
        request.session.clear()
        return RedirectResponse("/author/login", status_code=303)

    async def register_page(request: Request) -> Response:
        if cfg.registration == "organiser":
            return page("register", f'{nav(request, None)}<h1>Register</h1><p id="error">This contest does not take '
                        'registrations: ask its organiser for an account.</p>', 403)
        invite = ('<label>invitation code <input name="invitation" required></label> '
                  if cfg.registration == "invite" else "")
        if request.method == "GET":
            return page("register", f'{nav(request, None)}<h1>Register as a bot author</h1>'
                        f'<form method="post" action="/author/register">{hidden_csrf(request)}<label>your name '
                        f'<input name="name" required maxlength="32"></label> {invite}'
                        f'<button id="register-button">register</button></form><p>A name is 1-32 characters among '
                        f'A-Z a-z 0-9 _ . - (not starting with . or -).</p>')
        form = await checked_form(request)
        try:
            registration_allowed(request)
            token = register(store, cfg.registration, str(form.get("name", "")), form.get("invitation"))
        except Refused as exc:
            return refused_page(request, exc, "registration refused")
        name = token.split(":", 1)[0]
        row = store.author(name)
        request.session.clear()
        request.session.update({"author": name, "fp": fingerprint(key, row), "csrf": secrets.token_urlsafe(24)})
        return page("registered", f'{nav(request, name)}<h1>Welcome, {escape(name)}</h1><p>Your author token, '
                    f'shown only this once: store it now (a password manager, or <code>ARENA_AUTHOR_TOKEN</code> '
                    f'for <code>arena bots upload</code>).</p><p class="token" id="token">{escape(token)}</p>'
                    f'<p><a href="/author/">to your page</a></p>')

    async def upload_form(request: Request) -> Response:
        author = need(request)
        form = await checked_form(request, max_files=1, max_part=FORM_FIELD_BYTES)
        archive = form.get("archive")
        try:
            if archive is None or isinstance(archive, str):
                raise Refused(400, "no_file", "choose the bot's .tar.gz file")
            upload_allowed(author)
            data = await archive.read(cfg.uploads.packed_bytes + 1)
            result = await accept_archive(contest, author, data)
        except Refused as exc:
            return refused_page(request, exc, "upload refused")
        return RedirectResponse(f"/author/uploads/{result['upload']}", status_code=303)

    async def remote_form(request: Request) -> Response:
        author = need(request)
        form = await checked_form(request)
        name = str(form.get("name", ""))
        try:
            token = register_remote(contest, author, name)
        except Refused as exc:
            return refused_page(request, exc, "remote bot refused")
        return page("remote bot", f'{nav(request, author["name"])}<h1>Remote bot {escape(name)}</h1><p>Its token, '
                    f'shown only this once (the bot sends it in its <code>hello</code>; docs/protocol.md):</p>'
                    f'<p class="token" id="token">{escape(token)}</p><p><a href="/author/">back</a></p>')

    def upload_of(request: Request, author: dict[str, Any]) -> dict[str, Any]:
        try:
            upload_id = int(request.path_params["upload_id"])
        except ValueError:
            upload_id = -1
        up = own_upload(store, author, upload_id)
        if up is None:
            raise HTTPException(404, "no such upload")
        return up

    async def upload_page(request: Request) -> Response:
        author = need(request)
        up = upload_of(request, author)
        return page(f"upload {up['id']}", f'{nav(request, author["name"])}<h1>Upload {up["id"]}</h1>'
                    f'{report_html(up)}<p><a href="/author/">back</a></p>')

    async def output(request: Request) -> Response:
        author = need(request)
        text = bot_output(contest, author, request.path_params["bot"], idle_sizes)
        if text is None:
            raise HTTPException(404, "no such bot of yours")
        return PlainTextResponse(text or "(no output yet)")

    def bot_list(request: Request) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
        """An own bot's older matches or failures (``/bots/{bot}/matches|failures?before=ID``):
        ``(author, bot, which, page)``; 404 for a bot not theirs, 400 for a bad cursor."""

        author = need(request)
        bot, which = request.path_params["bot"], request.path_params["which"]
        if which not in ("matches", "failures") or not owns(store, author, bot):
            raise HTTPException(404, "no such bot of yours")
        try:
            before = pages.parse_id(request.query_params.get("before"), "before")
        except pages.BadCursor as exc:
            raise HTTPException(400, str(exc)) from None
        if which == "matches":
            got = finished_matches(store, cfg.game, bot, before=before, per_page=pages.HISTORY_PAGE)
            return author, bot, which, {"matches": got["matches"], "next": got["next"]}
        got = pages.fault_page(store, bot, before=before, limit=pages.HISTORY_PAGE)
        return author, bot, which, {"failures": got["rows"], "next": got["next"]}

    async def bot_list_page(request: Request) -> Response:
        author, bot, which, got = bot_list(request)
        path = f'/author/bots/{escape(quote(bot, safe=""))}/{which}'
        table = matches_table(got["matches"]) if which == "matches" else faults_table(got["failures"])
        empty = f'<p class="empty">No {"more " if request.query_params.get("before") else ""}{which}.</p>'
        return page(f"{which} of {bot}", f'{nav(request, author["name"])}<h1>{escape(which.capitalize())} of '
                    f'{escape(bot)}</h1>{table if got[which] else empty}'
                    f'{older_link(path, got["next"], "older " + which)}'
                    f'<p><a href="/author/">back to your page</a></p>')

    async def api_bot_list(request: Request) -> Response:
        _, bot, which, got = bot_list(request)
        return JSONResponse({"bot": bot, **got})

    async def withdraw_form(request: Request) -> Response:
        author = need(request)
        await checked_form(request)
        if not withdraw(contest, author, request.path_params["bot"]):
            raise HTTPException(404, "no such bot of yours")
        return RedirectResponse("/author/", status_code=303)

    async def api_withdraw(request: Request) -> Response:
        if not withdraw(contest, need(request, api=True), request.path_params["bot"]):
            raise HTTPException(404, "no such bot of yours")
        return JSONResponse({"withdrawn": request.path_params["bot"]})

    # ---- test matches (arena.schedule.on_demand)

    def refusal_headers(exc: Refusal) -> dict[str, str]:
        return {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else {}

    async def tests_form(request: Request) -> Response:
        author = need(request)
        form = await checked_form(request)
        try:
            contest.tests.request(author, str(form.get("bot", "")), str(form.get("vs", "")).strip(),
                                  str(form.get("games", "")))
        except Refusal as exc:
            response = refused_page(request, Refused(exc.status, exc.code, exc.message), "test matches refused")
            response.headers.update(refusal_headers(exc))
            return response
        return RedirectResponse("/author/#tests", status_code=303)

    def test_of(request: Request, author: dict[str, Any]) -> dict[str, Any]:
        try:
            test_id = int(request.path_params["test_id"])
        except ValueError:
            test_id = -1
        t = own_test(store, author, test_id)
        if t is None:
            raise HTTPException(404, "no such test match of yours")
        return t

    async def test_page(request: Request) -> Response:
        author = need(request)
        t = test_of(request, author)
        return page(f"test match x{t['id']}", f'{nav(request, author["name"])}<h1>Test match x{t["id"]}</h1>'
                    f'{match_page_html(t)}<p><a href="/author/#tests">back</a></p>')

    async def tests_list_page(request: Request) -> Response:
        author = need(request)
        try:
            before = pages.parse_id(request.query_params.get("before"), "before")
        except pages.BadCursor as exc:
            raise HTTPException(400, str(exc)) from None
        got = own_tests(store, author, before=before)
        more = older_link("/author/tests", got[-1]["id"], "older test matches") if len(got) >= pages.HISTORY_PAGE \
            else ""
        return page("test matches", f'{nav(request, author["name"])}<h1>Test matches</h1>'
                    + (tests_table(got) if got else '<p class="empty">No more test matches.</p>') + more
                    + '<p><a href="/author/">back to your page</a></p>')

    async def api_tests(request: Request) -> Response:
        author = need(request, api=True)
        if request.method == "POST":
            try:
                body = await json_body(request)
                got = contest.tests.request(author, str(body.get("bot", "")), str(body.get("vs", "")),
                                            body.get("games", 1))
            except Refused as exc:
                return refused_json(exc)
            except Refusal as exc:
                return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status,
                                    headers=refusal_headers(exc))
            return JSONResponse({**got, "poll": "/author/api/tests?ids=" + ",".join(map(str, got["tests"]))},
                                status_code=202)
        ids = None
        if request.query_params.get("ids"):
            try:
                ids = [int(x) for x in request.query_params["ids"].split(",") if x.strip()]
            except ValueError:
                raise HTTPException(400, "ids: give test match numbers separated by commas") from None
        try:
            before = pages.parse_id(request.query_params.get("before"), "before")
        except pages.BadCursor as exc:
            raise HTTPException(400, str(exc)) from None
        return JSONResponse({"tests": own_tests(store, author, ids, before), "quota": contest.tests.quota(author)})

    async def api_test(request: Request) -> Response:
        return JSONResponse(test_of(request, need(request, api=True)))

    # ---- API

    async def api_register(request: Request) -> Response:
        try:
            body = await json_body(request)
            registration_allowed(request)
            token = register(store, cfg.registration, str(body.get("name", "")), body.get("invitation"))
        except Refused as exc:
            return refused_json(exc)
        return JSONResponse({"author": token.split(":", 1)[0], "token": token}, status_code=201)

    async def api_me(request: Request) -> Response:
        return JSONResponse(author_view(contest, need(request, api=True)))

    async def api_upload(request: Request) -> Response:
        author = need(request, api=True)
        if request.headers.get("content-type", "").split(";")[0].strip() not in (
                "application/gzip", "application/x-gzip", "application/x-tar", "application/octet-stream"):
            return refused_json(Refused(415, "bad_content_type", "send the archive as application/gzip"))
        try:
            upload_allowed(author)
            result = await accept_archive(contest, author, await read_body(request))
        except Refused as exc:
            return refused_json(exc)
        return JSONResponse({**result, "poll": f"/author/api/uploads/{result['upload']}"}, status_code=202)

    async def api_upload_status(request: Request) -> Response:
        up = upload_of(request, need(request, api=True))
        return JSONResponse({k: up[k] for k in ("id", "bot", "status", "version", "report", "created_at",
                                                "finished_at")})

    async def api_remote(request: Request) -> Response:
        author = need(request, api=True)
        try:
            body = await json_body(request)
            token = register_remote(contest, author, str(body.get("name", "")))
        except Refused as exc:
            return refused_json(exc)
        return JSONResponse({"bot": body["name"], "token": token}, status_code=201)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/author/api/"):
            return JSONResponse({"error": "refused", "message": exc.detail}, status_code=exc.status_code)
        if exc.status_code == 401:
            return RedirectResponse("/author/login", status_code=303)
        return page("refused", f'{nav(request, (who(request) or {}).get("name"))}<h1>{exc.status_code}</h1>'
                    f'<p class="error" id="error">{escape(str(exc.detail))}</p>', exc.status_code)

    routes = [
        Route("/", home),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/register", register_page, methods=["GET", "POST"]),
        Route("/upload", upload_form, methods=["POST"]),
        Route("/remote", remote_form, methods=["POST"]),
        Route("/uploads/{upload_id}", upload_page),
        Route("/bots/{bot}/output", output),
        Route("/bots/{bot}/{which}", bot_list_page),
        Route("/bots/{bot}/withdraw", withdraw_form, methods=["POST"]),
        Route("/tests", tests_form, methods=["POST"]),
        Route("/tests", tests_list_page, methods=["GET"]),
        Route("/tests/{test_id}", test_page),
        Route("/api/tests", api_tests, methods=["GET", "POST"]),
        Route("/api/tests/{test_id}", api_test),
        Route("/api/bots/{bot}/withdraw", api_withdraw, methods=["POST"]),
        Route("/api/register", api_register, methods=["POST"]),
        Route("/api/me", api_me),
        Route("/api/upload", api_upload, methods=["POST"]),
        Route("/api/uploads/{upload_id}", api_upload_status),
        Route("/api/remote", api_remote, methods=["POST"]),
        Route("/api/bots/{bot}/output", output),
        Route("/api/bots/{bot}/{which}", api_bot_list),
    ]
    middleware = [
        Middleware(Guard, max_body=cfg.uploads.packed_bytes + 64 * 1024),
        Middleware(SessionMiddleware, secret_key=secrets.token_urlsafe(32), session_cookie="arena_author",
                   max_age=SESSION_S, path="/author", same_site="strict",
                   https_only=cfg.secure_cookies or cfg.server.tls_cert is not None),  # HTTPS: ours or a proxy's
        Middleware(AuthenticationMiddleware, backend=AuthorBackend(store, authenticator, key), on_error=auth_error),
    ]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: http_error})


MOUNTS = {"/author": make_author_app}
"""The author pages as the site mounts them (:func:`arena.net.web.make_app`'s ``mounts``)."""
