"""The ``/author`` routes of test matches (:mod:`arena.authors.pages` mounts them; the requests
go to :mod:`arena.schedule.on_demand`, the HTML is :mod:`arena.authors.tests_html`'s): asking
for them by a form or the API, listing them a page at a time, and one match with its replay."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from arena.authors.accounts import Refused, own_test, own_tests
from arena.authors.layout import checked_form, nav, older_link, page
from arena.authors.site import AuthorSite
from arena.authors.tests_html import match_page_html, tests_table
from arena.schedule.on_demand import Refusal
from arena.store import pages


def refusal_headers(exc: Refusal) -> dict[str, str]:
    """``Retry-After`` (seconds) for a refusal over the day's quota, else no header."""
    return {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else {}


class OnDemandRoutes(AuthorSite):
    """``POST|GET /author/tests``, ``GET /author/tests/{id}``, ``GET|POST /author/api/tests``,
    ``GET /author/api/tests/{id}``."""

    async def tests_form(self, request: Request) -> Response:
        """Test matches asked by a form (fields ``bot``, ``vs``, ``games``); a redirect to the
        own page's list, or the refusal (with ``Retry-After`` over the quota)."""
        author = self.need(request)
        form = await checked_form(request)
        try:
            self.contest.tests.request(author, str(form.get("bot", "")), str(form.get("vs", "")).strip(),
                                       str(form.get("games", "")))
        except Refusal as exc:
            response = self.refused_page(request, Refused(exc.status, exc.code, exc.message), "test matches refused")
            response.headers.update(refusal_headers(exc))
            return response
        return RedirectResponse("/author/#tests", status_code=303)

    def test_of(self, request: Request, author: dict[str, Any]) -> dict[str, Any]:
        """The author's test match named by the path's ``test_id``; :class:`HTTPException` 404 for
        one that is not theirs or not a number."""
        return self.owned(request, "test_id", lambda i: own_test(self.store, author, i), "no such test match of yours")

    async def test_page(self, request: Request) -> Response:
        """One test match: its status, score and replay."""
        author = self.need(request)
        t = self.test_of(request, author)
        return page(f"test match x{t['id']}", f'{nav(request, author["name"])}<h1>Test match x{t["id"]}</h1>'
                    f'{match_page_html(t)}<p><a href="/author/#tests">back</a></p>')

    async def tests_list_page(self, request: Request) -> Response:
        """The author's test matches older than ``?before=ID``, a page of them."""
        author = self.need(request)
        try:
            before = pages.parse_id(request.query_params.get("before"), "before")
        except pages.BadCursor as exc:
            raise HTTPException(400, str(exc)) from None
        got = own_tests(self.store, author, before=before)
        more = older_link("/author/tests", got[-1]["id"], "older test matches") if len(got) >= pages.HISTORY_PAGE \
            else ""
        return page("test matches", f'{nav(request, author["name"])}<h1>Test matches</h1>'
                    + (tests_table(got) if got else '<p class="empty">No more test matches.</p>') + more
                    + '<p><a href="/author/">back to your page</a></p>')

    async def api_tests(self, request: Request) -> Response:
        """POST ``{"bot", "vs", "games"}`` -> 202 ``{"tests": [ids], ..., "poll"}`` (429 with
        ``Retry-After`` over the quota); GET ``?ids=1,2`` or ``?before=ID`` -> ``{"tests", "quota"}``."""
        author = self.need(request, api=True)
        tests = self.contest.tests
        if request.method == "POST":
            try:
                body = await self.json_body(request)
                got = tests.request(author, str(body.get("bot", "")), str(body.get("vs", "")), body.get("games", 1))
            except Refused as exc:
                return self.refused_json(exc)
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
        return JSONResponse({"tests": own_tests(self.store, author, ids, before), "quota": tests.quota(author)})

    async def api_test(self, request: Request) -> Response:
        """One test match, with its ``view``, as JSON."""
        return JSONResponse(self.test_of(request, self.need(request, api=True)))
