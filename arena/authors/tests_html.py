"""The authors' test matches on their pages (:mod:`arena.authors.pages`): the "Test matches"
section of the own page, a list of test matches, and one test match's replay from the author's
seat with their bot's output beside each of its decisions (:mod:`arena.schedule.on_demand`).
HTML made here; every piece of user text (names, details, the bot's output) goes through
:func:`html.escape`."""

from __future__ import annotations

import time
from html import escape
from typing import Any

from arena.match.views import describe


def _when(t: float | None) -> str:
    return "-" if not t else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def tests_table(tests: list[dict[str, Any]]) -> str:
    """Test matches (:func:`arena.authors.accounts.test_summary`), escaped."""
    rows = []
    for t in tests:
        score = "-" if t["score"] is None else f'{t["score"][0]}-{t["score"][1]}'
        how = " ".join(x for x in (t["outcome"] or "", t["reason"] or "") if x)
        link = f'<a class="replay" href="{escape(t["replay"])}">x{t["id"]}</a>' if t["replay"] else f'x{t["id"]}'
        rows.append(f'<tr data-test="{t["id"]}"><td>{link}</td><td>{escape(t["bot"])}</td><td>{escape(t["vs"])}</td>'
                    f'<td>{t["seat"]}</td><td class="status {escape(t["status"])}">{escape(t["status"])}</td>'
                    f'<td class="score">{escape(score)}</td><td>{escape(how)}</td><td>{escape(t["detail"])}</td>'
                    f'<td>{_when(t["created_at"])}</td></tr>')
    return (f'<table class="tests"><tr><th>test</th><th>your bot</th><th>against</th><th>seat</th><th>status</th>'
            f'<th>score (yours-theirs)</th><th>result</th><th>detail</th><th>asked</th></tr>{"".join(rows)}</table>')


def tests_section(csrf_field: str, view: dict[str, Any]) -> str:
    """The own page's "Test matches" section: the quota, the form (with ``csrf_field``, the
    session's hidden CSRF input), the newest test matches."""
    q = view["tests_quota"]
    head = (f'<section id="tests"><h2>Test matches</h2><p>Unrated games of your bot against a ladder bot of your '
            f'choice, played when both are free; never rated, never shown to anyone else. Their replay shows your '
            f'seat only, with your bot\'s output beside each of its decisions. <span id="tests-quota">{q["used"]} '
            f'of {q["per_day"]} games asked today; {q["left"]} left until 00:00 UTC.</span></p>')
    if q["per_day"] == 0:
        return head + '<p>This contest plays no test matches.</p></section>'
    own = [b["bot"] for b in view["bots"]]
    form = ""
    if own:
        options = "".join(f'<option value="{escape(b)}">{escape(b)}</option>' for b in own)
        form = (f'<form method="post" action="/author/tests" id="tests-form">{csrf_field}<label>your bot '
                f'<select name="bot">{options}</select></label> <label>against <input name="vs" required '
                f'maxlength="32" placeholder="a ladder bot"></label> <label>games <input name="games" type="number" '
                f'min="1" max="{q["per_request"]}" value="2" required></label> <button id="tests-button">ask</button>'
                f'</form>')
    table = tests_table(view["tests"]) if view["tests"] else '<p class="empty">No test matches yet.</p>'
    more = f'<p><a class="older" href="/author/tests?before={int(view["tests"][-1]["id"])}">older test matches ›' \
        '</a></p>' if len(view["tests"]) >= 10 else ""
    return head + form + table + more + '</section>'


def match_page_html(t: dict[str, Any]) -> str:
    """One test match and, once it is over, its replay from the author's seat with their bot's
    output beside each decision (:func:`arena.schedule.on_demand.seat_view`), escaped."""
    score = "" if t["score"] is None else f', score {t["score"][0]}-{t["score"][1]}'
    status = escape(t["status"])
    out = [f'<p>{escape(t["bot"])} (seat {t["seat"]}) against {escape(t["vs"])}: <b class="status {status}" '
           f'id="test-status">{status}</b>{escape(score)}'
           + (f' ({escape(t["outcome"] or "")} {escape(t["reason"] or "")})' if t["status"] == "done" else "")
           + (f'; {escape(t["detail"])}' if t["detail"] else "") + '</p>']
    view = t.get("view")
    if t["status"] in ("queued", "playing"):
        out.append('<p>Not over yet: reload this page in a while.</p>')
    if not view:
        return "".join(out)
    lines = view["lines"]
    header = next((line for line in lines if line.get("type") == "match"), None)
    names = list(header["bots"]) if header and header.get("bots") else ["seat 0", "seat 1"]
    if view.get("note"):
        out.append(f'<p class="note">{escape(view["note"])}</p>')
    rows = []
    for line in lines:
        text = escape(describe(line, names).strip())
        if line.get("type") == "action":
            said = line.get("output")
            cell = ('<pre class="output">' + escape(said) + '</pre>') if said else \
                ('<span class="quiet">(nothing)</span>' if said is not None else "")
            rows.append(f'<tr class="decision"><td>{text}</td><td>{cell}</td></tr>')
        else:
            rows.append(f'<tr class="{escape(str(line.get("type")))}"><td>{text}</td><td></td></tr>')
    out.append(f'<table id="replay"><tr><th>the game, as your seat saw it</th><th>your bot\'s output</th></tr>'
               f'{"".join(rows)}</table>')
    if view.get("after"):
        out.append(f'<h3>after its last decision</h3><pre class="output" id="after">{escape(view["after"])}</pre>')
    return "".join(out)
