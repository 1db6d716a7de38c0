"""The HTML of the ``/author`` pages (:mod:`arena.authors.pages`): the page frame, the
navigation, the session's CSRF token and the forms checked against it, and the author's own page
(:func:`dashboard_html`) with its tables. Every piece of user text goes through
:func:`html.escape` here; the test matches' HTML is in :mod:`arena.authors.tests_html`."""

from __future__ import annotations

import hmac
import secrets
import time
from html import escape
from typing import Any
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from arena.authors.tests_html import tests_section

FORM_FIELD_BYTES = 4096
"""Largest text field of a form."""

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
    """The form field carrying the session's CSRF token (:func:`csrf_of`), as HTML."""
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
    """The navigation bar, for the author named ``who`` (escaped here; a log-out form) or for nobody."""
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

