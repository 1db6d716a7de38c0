"""The ``/author`` routes of an author's bots (:mod:`arena.authors.pages` mounts them): a bot's
captured output, its finished matches and its failures a page at a time, and its withdrawal."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from arena.authors.accounts import bot_output, owns, withdraw
from arena.authors.layout import checked_form, faults_table, matches_table, nav, older_link, page
from arena.authors.site import AuthorSite
from arena.net.history import finished_matches
from arena.store import pages


class BotRoutes(AuthorSite):
    """``GET /author/bots/{bot}/output``, ``GET /author/bots/{bot}/matches|failures``, ``POST
    /author/bots/{bot}/withdraw`` and their ``/author/api/`` twins."""

    async def output(self, request: Request) -> Response:
        """The bot's captured output (plain text); 404 for a bot not the author's."""
        author = self.need(request)
        text = bot_output(self.contest, author, request.path_params["bot"], self.idle_sizes)
        if text is None:
            raise HTTPException(404, "no such bot of yours")
        return PlainTextResponse(text or "(no output yet)")

    def bot_list(self, request: Request) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
        """An own bot's older matches or failures (``/bots/{bot}/matches|failures?before=ID``):
        ``(author, bot, which, page)``; 404 for a bot not theirs, 400 for a bad cursor."""

        author = self.need(request)
        bot, which = request.path_params["bot"], request.path_params["which"]
        if which not in ("matches", "failures") or not owns(self.store, author, bot):
            raise HTTPException(404, "no such bot of yours")
        try:
            before = pages.parse_id(request.query_params.get("before"), "before")
        except pages.BadCursor as exc:
            raise HTTPException(400, str(exc)) from None
        if which == "matches":
            got = finished_matches(self.store, self.cfg.game, bot, before=before, per_page=pages.HISTORY_PAGE)
            return author, bot, which, {"matches": got["matches"], "next": got["next"]}
        got = pages.fault_page(self.store, bot, before=before, limit=pages.HISTORY_PAGE)
        return author, bot, which, {"failures": got["rows"], "next": got["next"]}

    async def bot_list_page(self, request: Request) -> Response:
        """A page of :meth:`bot_list`, with a link to the next (older) one."""
        author, bot, which, got = self.bot_list(request)
        path = f'/author/bots/{escape(quote(bot, safe=""))}/{which}'
        table = matches_table(got["matches"]) if which == "matches" else faults_table(got["failures"])
        empty = f'<p class="empty">No {"more " if request.query_params.get("before") else ""}{which}.</p>'
        return page(f"{which} of {bot}", f'{nav(request, author["name"])}<h1>{escape(which.capitalize())} of '
                    f'{escape(bot)}</h1>{table if got[which] else empty}'
                    f'{older_link(path, got["next"], "older " + which)}'
                    f'<p><a href="/author/">back to your page</a></p>')

    async def api_bot_list(self, request: Request) -> Response:
        """:meth:`bot_list` as JSON: ``{"bot", "matches"|"failures", "next"}``."""
        _, bot, which, got = self.bot_list(request)
        return JSONResponse({"bot": bot, **got})

    async def withdraw_form(self, request: Request) -> Response:
        """Withdraws the bot (a form with its CSRF token); a redirect to the own page, 404 for a
        bot not the author's."""
        author = self.need(request)
        await checked_form(request)
        if not withdraw(self.contest, author, request.path_params["bot"]):
            raise HTTPException(404, "no such bot of yours")
        return RedirectResponse("/author/", status_code=303)

    async def api_withdraw(self, request: Request) -> Response:
        """Withdraws the bot: ``{"withdrawn": bot}``, 404 for a bot not the author's."""
        if not withdraw(self.contest, self.need(request, api=True), request.path_params["bot"]):
            raise HTTPException(404, "no such bot of yours")
        return JSONResponse({"withdrawn": request.path_params["bot"]})
