"""The contest's web side: a Starlette app served by Hypercorn's trio worker.

Routes:

* ``GET /`` - the page (``arena/net/static/index.html``): leaderboard, matches in play, and a live
  view of one match, updated without reloading from the event stream below;
* ``GET /api/leaderboard`` - the persistent ladder of the contest's game, with wins, losses
  and draws, as JSON;
* ``GET /api/matches`` - the matches in play;
* ``GET /api/events`` - server-sent events: every message of the spectator feed
  (:mod:`arena.net.spectate`: ``watch``, ``spectate``, ``reveal``, ``watch_end``) as ``data:``
  lines, plus ``{"type": "leaderboard"}`` whenever a match starts or ends. The page therefore
  sees exactly what a TCP spectator sees: hidden cards only once they cannot help a bot;
* ``GET /metrics`` - Prometheus text exposition (:mod:`arena.metrics`);
* ``GET /api/history?bot=NAME&page=N`` - finished matches, newest first, 20 a page
  (:func:`arena.net.history.finished_matches`);
* ``GET /api/replay/{match_id}`` - a finished match as the spectator messages of its public log
  (:func:`arena.net.history.replay_feed`: hidden cards only in each deal's ``reveal``), for the page
  to replay in its table view; 404 for an unknown match, 409 while it or its duplicate twin is
  in play;
* ``GET /match/{match_id}`` - the page, opening that match's replay (a URL per match);
* ``/author/...`` - bot authors' accounts, uploads and own pages (:mod:`arena.net.author_pages`).

``/api/leaderboard`` also gives ``launched`` (:func:`launched_bots`) and ``state``:
``"running"``, or ``"over"`` once the contest has played its ``max_matches`` (and nothing is in
play) or is shutting down.
"""

from __future__ import annotations

import math
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
from arena.net.spectate import Subscriber

Contest = Any
"""An :class:`arena.schedule.contest.Contest` (not imported: the contest starts this module's server, and
importing it back would make a cycle)."""

LEADERBOARD_CHANGED = b'{"type":"leaderboard"}\n'


def leaderboard(contest: Contest) -> list[dict[str, Any]]:
    """The ladder of the contest's game, best first: ``rank``, ``bot``, ``elo`` (maximum
    likelihood, :mod:`arena.stats.ladder`), ``interval`` (half-width of its 95% interval, Elo points;
    ``None`` until the bot's ladder row has been refitted), ``games`` (matches), ``wins``,
    ``losses``, ``draws``, ``connected``."""
    store, game = contest.store, contest.config.game
    tally: dict[str, list[int]] = {}
    for b0, b1, w in store.db.execute(
        "SELECT bot0, bot1, winner_seat FROM matches WHERE game=? AND status='done'", (game,)
    ):
        for seat, bot in ((0, b0), (1, b1)):
            t = tally.setdefault(bot, [0, 0, 0])
            t[0 if w == seat else 2 if w is None else 1] += 1
    out = []
    for rank, (bot, elo, ci95, games) in enumerate(store.ladder_intervals(game), 1):
        w, lo, d = tally.get(bot, [0, 0, 0])
        out.append({"rank": rank, "bot": bot, "elo": round(elo, 1),
                    "interval": round(ci95, 1) if math.isfinite(ci95) else None, "games": games, "wins": w,
                    "losses": lo, "draws": d, "connected": bot in contest.server.bots})
    return out


def launched_bots(contest: Contest) -> list[dict[str, Any]]:
    """The bots the server launches, with their supervision state (:mod:`arena.schedule.supervisor`):
    ``{"bot", "state", "failures", "last_output" (lines)}``, by name. An author's bot's output is
    for its author only (their page, :mod:`arena.net.author_pages`): empty here."""
    return [{"bot": h.name, "state": h.state, "failures": h.failures,
             "last_output": [] if contest.store.bot_owner(h.name) else h.last_output}
            for h in sorted(contest.supervisor.bots.values(), key=lambda h: h.name)]


def contest_state(contest: Contest) -> str:
    """``"over"`` once the contest is stopping, or has started its ``max_matches`` and none is
    in play; else ``"running"``."""
    cfg = contest.config
    done = cfg.max_matches is not None and contest.matches_started >= cfg.max_matches and contest.running == 0
    return "over" if contest.stopping.is_set() or done else "running"


def make_app(contest: Contest) -> Starlette:
    """The ASGI app of ``contest``."""
    hub = contest.hub
    web_subscribers: set[Subscriber] = set()

    def changed() -> None:
        for sub in list(web_subscribers):
            sub.push(LEADERBOARD_CHANGED)

    hub.on_change.append(changed)

    async def page(request: Request) -> Response:
        html = resources.files("arena.net").joinpath("static/index.html").read_text(encoding="utf-8")
        return HTMLResponse(html.replace("{{CONTEST}}", escape(contest.config.name)))

    async def api_leaderboard(request: Request) -> Response:
        return JSONResponse({"game": contest.config.game, "contest": contest.config.name,
                             "leaderboard": leaderboard(contest), "state": contest_state(contest),
                             "launched": launched_bots(contest)})

    async def api_history(request: Request) -> Response:
        from arena.net.history import finished_matches

        try:
            page = int(request.query_params.get("page", "1"))
        except ValueError:
            page = 1
        bot = request.query_params.get("bot") or None
        return JSONResponse(finished_matches(contest.store, contest.config.game, bot, page))

    async def api_replay(request: Request) -> Response:
        from arena.net.history import NotReplayable, replay_feed

        match_id = request.path_params["match_id"]
        try:
            messages = replay_feed(contest.store, match_id)
        except NotReplayable as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        body = b'{"match_id":' + msgspec.json.encode(match_id) + b',"messages":[' + b",".join(
            m.rstrip(b"\n") for m in messages) + b"]}"
        return Response(body, media_type="application/json")

    async def api_matches(request: Request) -> Response:
        return Response(msgspec.json.encode({"matches": hub.listing()}), media_type="application/json")

    async def api_status(request: Request) -> Response:
        srv = contest.server
        return JSONResponse({"storage": contest.health.state(),
                             "connections": {"open": srv.open_connections, "reserve": srv.reserved,
                                             "spectators": srv.spectators, "web_viewers": len(web_subscribers),
                                             "refused": dict(srv.refused)}})

    async def events(request: Request) -> Response:
        if len(web_subscribers) >= contest.config.server.max_spectators:  # the same cap as TCP spectators
            srv = contest.server
            srv.refused["server_full"] += 1
            METRICS.refused.labels("server_full").inc()
            return JSONResponse({"error": "server_full", "message": "too many viewers: try again later"},
                                status_code=503)
        sub = Subscriber(f"web:{request.client.host if request.client else '?'}")
        hub.add(sub)
        web_subscribers.add(sub)
        hub.subscribe(sub, "*")

        async def stream():
            try:
                yield b": arena live feed\n\n"
                async for line in sub.receive_channel:
                    yield b"data: " + line.rstrip(b"\n") + b"\n\n"
            finally:
                web_subscribers.discard(sub)
                hub.remove(sub)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def metrics(request: Request) -> Response:
        return Response(METRICS.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    from arena.net.author_pages import make_author_app

    return Starlette(routes=[
        Mount("/author", app=make_author_app(contest)),
        Route("/", page),
        Route("/match/{match_id}", page),
        Route("/api/history", api_history),
        Route("/api/replay/{match_id}", api_replay),
        Route("/api/leaderboard", api_leaderboard),
        Route("/api/matches", api_matches),
        Route("/api/status", api_status),
        Route("/api/events", events),
        Route("/metrics", metrics),
    ])


async def serve_http(contest: Contest, host: str, port: int, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the app until cancelled; ``task_status.started(port)`` reports the bound port.
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

    async with trio.open_nursery() as nursery:
        bound = await nursery.start(lambda task_status: serve(make_app(contest), config, task_status=task_status))
        task_status.started(int(str(bound[0]).rsplit(":", 1)[1]))
