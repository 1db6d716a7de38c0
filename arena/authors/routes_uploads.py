"""The ``/author`` routes of uploads and remote bots (:mod:`arena.authors.pages` mounts them):
an archive sent by a form or the API, its status with the doctor's report, and a remote bot's
registration."""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from arena.authors.accounts import Refused, accept_archive, own_upload, register_remote
from arena.authors.layout import FORM_FIELD_BYTES, checked_form, nav, page, report_html
from arena.authors.site import AuthorSite


class UploadRoutes(AuthorSite):
    """``POST /author/upload``, ``POST /author/remote``, ``GET /author/uploads/{id}``, ``POST
    /author/api/upload``, ``GET /author/api/uploads/{id}``, ``POST /author/api/remote``."""

    async def upload_form(self, request: Request) -> Response:
        """A form's archive (field ``archive``) handed to the doctor; a redirect to its status page."""
        author = self.need(request)
        form = await checked_form(request, max_files=1, max_part=FORM_FIELD_BYTES)
        archive = form.get("archive")
        try:
            if archive is None or isinstance(archive, str):
                raise Refused(400, "no_file", "choose the bot's .tar.gz file")
            self.upload_allowed(author)
            data = await archive.read(self.cfg.uploads.packed_bytes + 1)
            result = await accept_archive(self.contest, author, data)
        except Refused as exc:
            return self.refused_page(request, exc, "upload refused")
        return RedirectResponse(f"/author/uploads/{result['upload']}", status_code=303)

    async def remote_form(self, request: Request) -> Response:
        """A remote bot registered by a form (field ``name``); its token shown once."""
        author = self.need(request)
        form = await checked_form(request)
        name = str(form.get("name", ""))
        try:
            token = register_remote(self.contest, author, name)
        except Refused as exc:
            return self.refused_page(request, exc, "remote bot refused")
        return page("remote bot", f'{nav(request, author["name"])}<h1>Remote bot {escape(name)}</h1><p>Its token, '
                    f'shown only this once (the bot sends it in its <code>hello</code>; docs/protocol.md):</p>'
                    f'<p class="token" id="token">{escape(token)}</p><p><a href="/author/">back</a></p>')

    def upload_of(self, request: Request, author: dict[str, Any]) -> dict[str, Any]:
        """The author's upload named by the path's ``upload_id``; :class:`HTTPException` 404 for
        one that is not theirs or not a number."""
        return self.owned(request, "upload_id", lambda i: own_upload(self.store, author, i), "no such upload")

    async def upload_page(self, request: Request) -> Response:
        """An upload's status and the doctor's report."""
        author = self.need(request)
        up = self.upload_of(request, author)
        return page(f"upload {up['id']}", f'{nav(request, author["name"])}<h1>Upload {up["id"]}</h1>'
                    f'{report_html(up)}<p><a href="/author/">back</a></p>')

    async def api_upload(self, request: Request) -> Response:
        """The body (a gzip or tar content type, else 415) handed to the doctor: 202 ``{"upload",
        "bot", "status", "poll"}``, or the refusal."""
        author = self.need(request, api=True)
        if request.headers.get("content-type", "").split(";")[0].strip() not in (
                "application/gzip", "application/x-gzip", "application/x-tar", "application/octet-stream"):
            return self.refused_json(Refused(415, "bad_content_type", "send the archive as application/gzip"))
        try:
            self.upload_allowed(author)
            result = await accept_archive(self.contest, author, await self.read_body(request))
        except Refused as exc:
            return self.refused_json(exc)
        return JSONResponse({**result, "poll": f"/author/api/uploads/{result['upload']}"}, status_code=202)

    async def api_upload_status(self, request: Request) -> Response:
        """An upload's status and report as JSON."""
        up = self.upload_of(request, self.need(request, api=True))
        return JSONResponse({k: up[k] for k in ("id", "bot", "status", "version", "report", "created_at",
                                                "finished_at")})

    async def api_remote(self, request: Request) -> Response:
        """``{"name"}`` -> 201 ``{"bot", "token"}``, or the refusal."""
        author = self.need(request, api=True)
        try:
            body = await self.json_body(request)
            token = register_remote(self.contest, author, str(body.get("name", "")))
        except Refused as exc:
            return self.refused_json(exc)
        return JSONResponse({"bot": body["name"], "token": token}, status_code=201)
