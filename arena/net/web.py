"""The contest's web side: a Starlette app served by Hypercorn's trio worker.

Routes:

* ``GET /`` - the page (``arena/net/static/index.html``): leaderboard, matches in play, and a live
  view of one match, updated without reloading from the event stream below;
* ``GET /api/leaderboard?after=BOT|before=BOT&q=PREFIX&limit=N`` - a page of the persistent ladder
  of the contest's game (:func:`leaderboard_page`: 50 bots, best first, keyed on the rating and
  the name; ``q``: the bots whose name starts with it, any case, by name), with games and score,
  how old the ratings are and which are provisional, as JSON;
* ``GET /api/matches`` - the matches in play;
* ``GET /api/events`` - server-sent events: every message of the spectator feed
  (:mod:`arena.net.spectate`: ``watch``, ``spectate``, ``reveal``, ``watch_end``) as ``data:``
  lines, plus ``{"type": "leaderboard"}`` whenever a match starts or ends. The page therefore
  sees exactly what a TCP spectator sees: hidden cards only once they cannot help a bot;
* ``GET /metrics`` - Prometheus text exposition (:mod:`arena.metrics`);
* ``GET /api/history?bot=NAME&before=ID|after=ID&limit=N`` - finished matches, newest first, 20 a
  page, paged by match id (:func:`arena.net.history.finished_matches`);
* ``GET /api/replay/{match_id}`` - a finished match as the spectator messages of its public log
  (:func:`arena.net.history.replay_feed`: hidden cards only in each deal's ``reveal``), for the page
  to replay in its table view; 404 for an unknown match, 409 while it or its duplicate twin is
  in play;
* ``GET /match/{match_id}`` - the page, opening that match's replay (a URL per match);
* ``/author/...`` - bot authors' accounts, uploads and own pages (:mod:`arena.authors.pages`), mounted
  by whoever composes the server (``mounts`` of :func:`make_app`): the author pages sit in a layer
  above this one (they use the scheduler), so this module does not import them.

A cursor or limit that is not one a page gave is a 400 with one line (``{"error": "bad_cursor",
"message"}``). Every statement these routes run is in :mod:`arena.store.pages`, each answered
through an index (tests/test_query_plans.py), so a page costs the same on the last day of a
season as on the first.

``/api/leaderboard`` also gives ``launched`` (:func:`launched_bots`: at most
:data:`LAUNCHED_SHOWN`, the failing ones first) and ``state``: ``"running"``, or ``"over"`` once
the contest has played its ``max_matches`` (and nothing is in play) or is shutting down.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from html import escape
from importlib import resources
from typing import Any

import msgspec
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from arena.metrics import METRICS
from arena.net.history import NotReplayable, finished_matches, replay_feed
from arena.net.spectate import Subscriber
from arena.store import pages

Contest = Any
"""An :class:`arena.schedule.contest.Contest` (not imported: the contest starts this module's server, and
importing it back would make a cycle)."""

Mounts = Mapping[str, Callable[[Contest], Any]]
"""Sub-apps of the site by path prefix, each an ASGI app built from the contest (for example
``{"/author": arena.authors.pages.make_author_app}``, :data:`arena.authors.pages.MOUNTS`)."""

LEADERBOARD_CHANGED = b'{"type":"leaderboard"}\n'


LAUNCHED_SHOWN = 100
"""At most this many launched bots in ``/api/leaderboard``'s ``launched`` (the failing ones first)."""


def leaderboard_page(contest: Contest, *, after: str | None = None, before: str | None = None,
                     q: str | None = None, limit: int | None = None) -> dict[str, Any]:
    """A page of the ladder of the contest's game (:func:`arena.store.pages.leaderboard_page`,
    whose arguments these are): ``{"leaderboard": [rows], "next", "prev", "q", "bots",
    "ratings"}``. Each row: ``rank``, ``bot``, ``elo`` (maximum likelihood, :mod:`arena.stats.ladder`),
    ``interval`` (half-width of its 95% interval, Elo points; ``None`` until the bot has been
    fitted), ``provisional`` (interval unknown or wider than ``ratings.provisional_ci95``),
    ``games`` (finished matches, aborted ones aside, counted now: the ratings may lag them),
    ``points`` (1 a win, ½ a draw), ``score`` (points / games, None before a game),
    ``connected``. ``ratings``: how old the ratings are (:func:`arena.store.pages.ratings_age`,
    with ``text``: "ratings fitted 12 s ago, 3 results since"). Raises
    :class:`arena.store.pages.BadCursor` for a bad ``limit``, prefix or cursor."""
    store, game = contest.store, contest.config.game
    page = pages.leaderboard_page(store, game, after=after, before=before, q=q, limit=limit)
    rows = [{"rank": r["rank"], "bot": r["bot"], "elo": round(r["elo"], 1),
             "interval": None if r["ci95"] is None else round(r["ci95"], 1), "provisional": r["provisional"],
             "games": r["games"], "points": r["points"],
             "score": round(r["points"] / r["games"], 4) if r["games"] else None,
             "connected": r["bot"] in contest.server.bots} for r in page["rows"]]
    age = pages.ratings_age(store, game)
    return {"leaderboard": rows, "next": page["next"], "prev": page["prev"], "q": page["q"], "bots": page["bots"],
            "ratings": {**age, "text": pages.describe_age(age)}}


def launched_bots(contest: Contest, shown: int = LAUNCHED_SHOWN) -> list[dict[str, Any]]:
    """The bots the server launches, with their supervision state (:mod:`arena.schedule.supervisor`):
    ``{"bot", "state", "failures", "last_output" (lines)}``; at most ``shown`` of them, those
    failing (``backoff``, ``disabled``) first, then by name. An author's bot's output is for its
    author only (their page, :mod:`arena.authors.pages`): empty here."""
    chosen = heapq.nsmallest(shown, contest.supervisor.bots.values(),
                             key=lambda h: (h.state not in ("backoff", "disabled"), h.name))
    return [{"bot": h.name, "state": h.state, "failures": h.failures,
             "last_output": [] if contest.store.bot_owner(h.name) else h.last_output}
            for h in chosen]


def contest_state(contest: Contest) -> str:
    """``"over"`` once the contest is stopping, or has started its ``max_matches`` and none is
    in play; else ``"running"``."""
    cfg = contest.config
    done = cfg.max_matches is not None and contest.matches_started >= cfg.max_matches and contest.running == 0
    return "over" if contest.stopping.is_set() or done else "running"


def _bad_cursor(exc: pages.BadCursor) -> Response:
    """A 400 answer naming the bad paging parameter."""
    return JSONResponse({"error": "bad_cursor", "message": str(exc)}, status_code=400)


def _limit_of(request: Request) -> int | None:
    """The ``limit`` query parameter (rows per page), None if absent; :class:`pages.BadCursor`
    if it is not a number."""
    value = request.query_params.get("limit")
    if not value:
        return None
    if not value.isdigit():
        raise pages.BadCursor(f"limit must be a number from 1 to {pages.MAX_PAGE}")
    return int(value)


class _Site:
    """The handlers of a contest's web app (one per app); ``viewers`` are the live feed's web
    subscribers, told when the leaderboard changes."""

    def __init__(self, contest: Contest) -> None:
        self.contest = contest
        self.hub = contest.hub
        self.viewers: set[Subscriber] = set()
        self.hub.on_change.append(self.changed)

    def changed(self) -> None:
        for sub in list(self.viewers):
            sub.push(LEADERBOARD_CHANGED)

    async def page(self, request: Request) -> Response:
        html = resources.files("arena.net").joinpath("static/index.html").read_text(encoding="utf-8")
        return HTMLResponse(html.replace("{{CONTEST}}", escape(self.contest.config.name)))

    async def api_leaderboard(self, request: Request) -> Response:
        contest, params = self.contest, request.query_params
        try:
            board = leaderboard_page(contest, after=params.get("after") or None, before=params.get("before") or None,
                                     q=params.get("q") or None, limit=_limit_of(request))
        except pages.BadCursor as exc:
            return _bad_cursor(exc)
        launched = launched_bots(contest)
        return JSONResponse({"game": contest.config.game, "contest": contest.config.name, **board,
                             "state": contest_state(contest), "launched": launched,
                             "launched_total": len(contest.supervisor.bots)})

    async def api_history(self, request: Request) -> Response:
        params = request.query_params
        try:
            before, after = pages.parse_id(params.get("before"), "before"), pages.parse_id(params.get("after"), "after")
            limit = _limit_of(request)
            return JSONResponse(finished_matches(self.contest.store, self.contest.config.game,
                                                 params.get("bot") or None, before=before, after=after,
                                                 per_page=pages.HISTORY_PAGE if limit is None else limit))
        except pages.BadCursor as exc:
            return _bad_cursor(exc)

    async def api_replay(self, request: Request) -> Response:
        match_id = request.path_params["match_id"]
        try:
            messages = replay_feed(self.contest.store, match_id)
        except NotReplayable as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        body = b'{"match_id":' + msgspec.json.encode(match_id) + b',"messages":[' + b",".join(
            m.rstrip(b"\n") for m in messages) + b"]}"
        return Response(body, media_type="application/json")

    async def api_matches(self, request: Request) -> Response:
        return Response(msgspec.json.encode({"matches": self.hub.listing()}), media_type="application/json")

    async def api_status(self, request: Request) -> Response:
        srv = self.contest.server
        return JSONResponse({"storage": self.contest.health.state(),
                             "connections": {"open": srv.open_connections, "reserve": srv.reserved,
                                             "spectators": srv.spectators, "web_viewers": len(self.viewers),
                                             "refused": dict(srv.refused)}})

    async def events(self, request: Request) -> Response:
        if len(self.viewers) >= self.contest.config.server.max_spectators:  # the same cap as TCP spectators
            srv = self.contest.server
            srv.refused["server_full"] += 1
            METRICS.refused.labels("server_full").inc()
            return JSONResponse({"error": "server_full", "message": "too many viewers: try again later"},
                                status_code=503)
        hub = self.hub
        sub = Subscriber(f"web:{request.client.host if request.client else '?'}")
        hub.add(sub)
        self.viewers.add(sub)
        hub.subscribe(sub, "*")

        async def stream():
            try:
                yield b": arena live feed\n\n"
                async for line in sub.receive_channel:
                    yield b"data: " + line.rstrip(b"\n") + b"\n\n"
            finally:
                self.viewers.discard(sub)
                hub.remove(sub)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def metrics(self, request: Request) -> Response:
        return Response(METRICS.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")


def make_app(contest: Contest, mounts: Mounts | None = None) -> Starlette:
    """The ASGI app of ``contest``: the page, its JSON API, the live feed (server-sent events),
    ``/metrics``, and each of ``mounts`` (path prefix -> a function of the contest giving an ASGI
    app). ``mounts`` defaults to the contest's ``web_mounts`` attribute, if any (``arena serve``
    sets the author pages there), else none."""
    site = _Site(contest)
    if mounts is None:
        mounts = getattr(contest, "web_mounts", None) or {}
    return Starlette(routes=[
        *(Mount(prefix, app=build(contest)) for prefix, build in mounts.items()),
        Route("/", site.page),
        Route("/match/{match_id}", site.page),
        Route("/api/history", site.api_history),
        Route("/api/replay/{match_id}", site.api_replay),
        Route("/api/leaderboard", site.api_leaderboard),
        Route("/api/matches", site.api_matches),
        Route("/api/status", site.api_status),
        Route("/api/events", site.events),
        Route("/metrics", site.metrics),
    ])


async def serve_http(contest: Contest, host: str, port: int, *, mounts: Mounts | None = None,
                     task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the app (:func:`make_app` of ``contest`` and ``mounts``) until cancelled;
    ``task_status.started(port)`` reports the bound port.
    With the contest's ``[server] tls_cert`` and ``tls_key``, over HTTPS only (hypercorn's own
    TLS, 1.2 or later, from the same two files as the bots' port)."""
    config = Config()
    config.bind = [f"{host}:{port}"]
    server = contest.config.server
    if server.tls_cert is not None and server.tls_key is not None:
        config.certfile, config.keyfile = server.tls_cert, server.tls_key
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0

    app = make_app(contest, mounts)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(lambda task_status: serve(app, config, task_status=task_status))
        task_status.started(int(str(bound[0]).rsplit(":", 1)[1]))
