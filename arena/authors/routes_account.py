"""The ``/author`` routes of an author's account (:mod:`arena.authors.pages` mounts them): their
own page, logging in and out, registering, and the API's registration and ``me``."""

from __future__ import annotations

import secrets
from html import escape

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from arena.authors.accounts import Refused, author_view, register, split_token
from arena.authors.guard import client_addr, fingerprint
from arena.authors.layout import checked_form, dashboard_html, hidden_csrf, nav, page
from arena.authors.site import AuthorSite


class AccountRoutes(AuthorSite):
    """``GET /author/``, ``GET|POST /author/login``, ``POST /author/logout``, ``GET|POST
    /author/register``, ``POST /author/api/register``, ``GET /author/api/me``."""

    async def home(self, request: Request) -> Response:
        """The author's own page (:func:`arena.authors.layout.dashboard_html`); nobody is sent to log in."""
        author = self.who(request)
        if author is None:
            return RedirectResponse("/author/login", status_code=303)
        return page(f"{author['name']} - {self.cfg.name}", dashboard_html(request, author_view(self.contest, author)))

    async def login_form(self, request: Request, error: str = "", status: int = 200) -> Response:
        """The login page, with ``error`` (if any) and ``status``."""
        reg = '' if self.cfg.registration == "organiser" else ' · <a href="/author/register">register</a>'
        return page("log in", f'{nav(request, None)}<h1>Log in</h1>'
                    + (f'<p class="error" id="error">{escape(error)}</p>' if error else "")
                    + f'<form method="post" action="/author/login">{hidden_csrf(request)}<label>author token '
                      f'<input name="token" type="password" autocomplete="current-password" required size="60">'
                      f'</label> <button id="login-button">log in</button></form><p>The token you were given at '
                      f'registration (<code>NAME:SECRET</code>){reg}.</p>', status)

    async def login(self, request: Request) -> Response:
        """The login form, or its POST: the token checked (401, or 429 when rate limited), then a
        fresh session and a redirect to the own page."""
        if request.method == "GET":
            return await self.login_form(request)
        form = await checked_form(request)
        parts = split_token(str(form.get("token", "")))
        verdict = "failed"
        if parts is not None:
            verdict = await self.authenticator.check("authors", parts[0], parts[1], client_addr(request))
        row = self.store.author(parts[0]) if verdict == "ok" else None
        if row is None:
            if verdict == "rate_limited":
                return await self.login_form(request, "too many failed attempts: wait a minute", 429)
            return await self.login_form(request, "unknown, suspended or mistyped token", 401)
        request.session.clear()  # a fresh session: nothing from before the login survives
        request.session.update({"author": row["name"], "fp": fingerprint(self.key, row),
                                "csrf": secrets.token_urlsafe(24)})
        return RedirectResponse("/author/", status_code=303)

    async def logout(self, request: Request) -> Response:
        """Ends the session (a form with its CSRF token) and redirects to the login page."""
        await checked_form(request)
        request.session.clear()
        return RedirectResponse("/author/login", status_code=303)

    async def register_page(self, request: Request) -> Response:
        """The registration form (403 where only the organiser makes accounts), or its POST: the
        new author logged in and their token shown once."""
        cfg = self.cfg
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
            self.registration_allowed(request)
            token = register(self.store, cfg.registration, str(form.get("name", "")), form.get("invitation"))
        except Refused as exc:
            return self.refused_page(request, exc, "registration refused")
        name = token.split(":", 1)[0]
        row = self.store.author(name)
        request.session.clear()
        request.session.update({"author": name, "fp": fingerprint(self.key, row), "csrf": secrets.token_urlsafe(24)})
        return page("registered", f'{nav(request, name)}<h1>Welcome, {escape(name)}</h1><p>Your author token, '
                    f'shown only this once: store it now (a password manager, or <code>ARENA_AUTHOR_TOKEN</code> '
                    f'for <code>arena bots upload</code>).</p><p class="token" id="token">{escape(token)}</p>'
                    f'<p><a href="/author/">to your page</a></p>')

    async def api_register(self, request: Request) -> Response:
        """``{"name", "invitation"?}`` -> 201 ``{"author", "token"}``, or the refusal."""
        try:
            body = await self.json_body(request)
            self.registration_allowed(request)
            token = register(self.store, self.cfg.registration, str(body.get("name", "")), body.get("invitation"))
        except Refused as exc:
            return self.refused_json(exc)
        return JSONResponse({"author": token.split(":", 1)[0], "token": token}, status_code=201)

    async def api_me(self, request: Request) -> Response:
        """The author's own view (:func:`arena.authors.accounts.author_view`) as JSON."""
        return JSONResponse(author_view(self.contest, self.need(request, api=True)))
