"""The broadcaster's web side (aiohttp): the round PGN, the arbiter's dashboard and its actions.

Public (read-only; after the broadcast delay, with an ETag from the content, Last-Modified, CORS):
    GET  /round/{n}.pgn                 a round's multi-game PGN (``current`` for the current round)
    GET  /round/{n}/game/{b}.pgn        one game: board ``b`` (``b-2`` for the board's second game)
    GET  /all.pgn                       every round so far
    GET  /round/{n}/results.csv         the round's results (CSV); ``/results.csv`` every round
    GET  /results.trf                   every round's results as a FIDE TRF-16 (``/results-2026.trf``: TRF-2026)
    GET  /live/tournament.json          DGT LiveChess Cloud shapes: the tournament,
    GET  /live/round-{n}/index.json     a round's pairings and live state,
    GET  /live/round-{n}/game-{i}.json  a game's moves and clocks
    GET  /status.json                   rounds, delay, bridges, the lichess push status

The arbiter's view (live, no delay):
    GET  /                     the dashboard (static HTML/JS/CSS, no build step)
    GET  /board/{n}.svg        one board's position (python-chess ``chess.svg``)
    GET  /api/state            everything as JSON (``?svg=0`` leaves the SVGs out)
    GET  /api/stream           server-sent events: snapshot, board, svg, alert, ack, bridge, response, round,
                               audit (``?svg=0``: without pictures; the console draws its own boards); no
                               arbiter data: ``audit`` carries only the new entry's id, alerts no ``acked_by``

Arbiter actions (``Authorization: Bearer <token>``; refused when no token is configured):
    POST /api/auth                          check a token
    POST /api/alerts/{id}/ack               acknowledge an alert
    POST /api/boards/{n}/promote   {"piece": "q"|"r"|"b"|"n"}
    POST /api/boards/{n}/takeback  {"ply": 7}
    POST /api/boards/{n}/setup     {"fen": "...", "chess960": false}
    POST /api/boards/{n}/result    {"result": "1-0"|"0-1"|"1/2-1/2"|"*", "game": 1}  (game: optional)
    POST /api/boards/{n}/allow     {"allow": "next"|"replace"|"none"}  (the board's next game)
    POST /api/boards/{n}/assign    {}  (send the pairing's names to the bridge)
    POST /api/round                {"round": 4}  (switch the round being broadcast)
    POST /api/lichess/token        {"token": "lip_..."}  (a new lichess token after "token refused")

Each arbiter has a token of his own (:mod:`.arbiter_book`); every action goes to the audit log (:mod:`.audit`).
The private console's cookie is a session value (:mod:`.console_sessions`), never the token; an open event stream
is checked before each write (a revoked arbiter's ends; an anonymous one ends when the console turns private).
Every response carries a Content-Security-Policy, ``X-Content-Type-Options: nosniff`` and frame protection.
The console's other routes (timelines, evidence, audit, arbiters) are in :mod:`.console_api`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from touchmove.broadcast import console_api, livechess_json
from touchmove.broadcast.arbiter_book import Arbiter, ArbiterBook, book_for
from touchmove.broadcast.audit import AuditLog
from touchmove.broadcast.broadcaster import ActionError, Broadcaster
from touchmove.broadcast.console_sessions import KEY_NAME, ConsoleSessions
from touchmove.broadcast.results_export import results_csv, results_trf

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
HUB_KEY: web.AppKey[Broadcaster] = web.AppKey("hub", Broadcaster)
TOKEN_KEY: web.AppKey[str | None] = web.AppKey("token", str)
ENCODED_KEY: web.AppKey[dict[str, tuple[str, bytes, str]]] = web.AppKey("encoded", dict)
SESSIONS_KEY: web.AppKey[ConsoleSessions] = web.AppKey("sessions", ConsoleSessions)
KEEPALIVE = 15.0
#: How often an idle event stream checks that it may still be sent to (a change is checked before it goes).
PERMISSION_CHECK_S = 0.25

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, separators=(",", ":")))


def _board_number(request: web.Request) -> int:
    number = console_api.count_param(request.match_info["n"])
    if number is None:
        raise web.HTTPNotFound()
    return number


@web.middleware
async def no_internal_text(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An unexpected error is logged here and answered with a plain 500: its text never reaches a client."""
    try:
        return await handler(request)
    except (web.HTTPException, asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return _json({"error": "internal error (logged by the broadcaster)"}, 500)


async def dashboard(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "dashboard.html", headers={"Cache-Control": "no-cache"})


def _http_date(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


def public(request: web.Request, key: str, body: str, content_type: str) -> web.Response:
    """A public document with caching headers: ETag from its content, Last-Modified from when this
    content was first served (so a poller never gets 304 for new content, whatever restarts)."""
    hub = request.app[HUB_KEY]
    cache = request.app[ENCODED_KEY]
    hit = cache.get(key)
    if hit is not None and hit[0] is body:  # the same text object: cached renders are not encoded again
        raw, etag = hit[1], hit[2]
    else:
        raw = body.encode("utf-8")
        etag = '"' + hashlib.blake2b(raw, digest_size=12).hexdigest() + '"'
        cache[key] = (body, raw, etag)
    seen = hub.outputs.modified.get(key)
    if seen is None or seen[0] != etag:
        seen = (etag, float(int(hub.storage.clock.wall())))
        hub.outputs.modified[key] = seen
    headers = {"Cache-Control": "no-cache", "Access-Control-Allow-Origin": "*", "ETag": etag,
               "Last-Modified": _http_date(seen[1])}
    match = request.headers.get("If-None-Match")
    if match is not None:
        if etag in {tag.strip() for tag in match.split(",")} or match.strip() == "*":
            return web.Response(status=304, headers=headers)
    elif (since := request.headers.get("If-Modified-Since")) is not None:
        try:
            when = dt.datetime.strptime(since, "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=dt.UTC)
        except ValueError:
            when = None
        if when is not None and seen[1] <= when.timestamp():
            return web.Response(status=304, headers=headers)
    return web.Response(body=raw, content_type=content_type, charset="utf-8", headers=headers)


def _round_number(request: web.Request, name: str = "n") -> int:
    hub = request.app[HUB_KEY]
    text = request.match_info[name]
    if text == "current":
        return hub.storage.round.number
    number = console_api.count_param(text)
    if number is None or number not in hub.storage.tournament.rounds:
        raise web.HTTPNotFound(text="no such round\n")
    return number


PGN = "application/x-chess-pgn"
JSON = "application/json"


async def round_pgn(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    number = _round_number(request)
    return public(request, f"round-{number}.pgn", hub.outputs.public_pgn(number), PGN)


async def game_pgn(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    number = _round_number(request)
    board_text, _, entry_text = request.match_info["g"].partition("-")
    board, entry = console_api.count_param(board_text), console_api.count_param(entry_text or "1")
    if board is None or entry is None:
        raise web.HTTPNotFound()
    text = hub.outputs.public_game_pgn(number, board, entry)
    if text is None:
        raise web.HTTPNotFound(text=f"no game {board}-{entry} in round {number}\n")
    return public(request, f"round-{number}-game-{board}-{entry}.pgn", text, PGN)


async def all_pgn(request: web.Request) -> web.Response:
    return public(request, "all.pgn", request.app[HUB_KEY].outputs.all_rounds_pgn(), PGN)


def _rounds_so_far(hub: Broadcaster) -> dict[int, dict[int, tuple[Any, ...]]]:
    return {n: hub.outputs.public_games(n) for n in hub.storage.rounds_so_far()}


async def round_results_csv(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    number = _round_number(request)
    text = results_csv(hub.storage.tournament, {number: hub.outputs.public_games(number)})
    return public(request, f"round-{number}-results.csv", text, "text/csv")


async def all_results_csv(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    return public(request, "results.csv", results_csv(hub.storage.tournament, _rounds_so_far(hub)), "text/csv")


async def all_results_trf(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    variant = "2026" if request.path.endswith("-2026.trf") else "16"
    text = results_trf(hub.storage.tournament, _rounds_so_far(hub), hub.storage.round_date, variant=variant)
    return public(request, request.path.lstrip("/"), text, "text/plain")


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


async def live_tournament(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    counts = {n: sum(len(g) or 1 for g in hub.outputs.public_games(n).values()) for n in _rounds_so_far(hub)}
    chess960 = any(g.chess960 for games in hub.outputs.public_games().values() for g in games)
    data = livechess_json.tournament_json(hub.storage.tournament, hub.storage.round.number, counts, chess960)
    return public(request, "live/tournament.json", _dumps(data), JSON)


async def live_index(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    number = _round_number(request)
    storage = hub.storage
    data = livechess_json.index_json(storage.tournament, number, hub.outputs.public_games(number),
                                     storage.round_date(number), number == storage.round.number)
    return public(request, f"live/round-{number}/index.json", _dumps(data), JSON)


async def live_game(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    number = _round_number(request)
    index = console_api.count_param(request.match_info["i"])
    found = livechess_json.game_at(hub.storage.tournament, number, hub.outputs.public_games(number), index) \
        if index is not None else None
    if found is None:
        raise web.HTTPNotFound(text=f"no such game in round {number}\n")
    data = livechess_json.game_json(found[0], found[1], number == hub.storage.round.number,
                                    hub.storage.tournament.time_control)
    return public(request, f"live/round-{number}/game-{index}.json", _dumps(data), JSON)


async def status(request: web.Request) -> web.Response:
    arbiter = console_api.arbiter_of(request) is not None
    return _json(request.app[HUB_KEY].status(arbiter=arbiter))


#: The live views a private console keeps to arbiters (GET; the actions always need a token).
PRIVATE_PREFIXES = ("/api/state", "/api/stream", "/board/", "/api/boards/")
COOKIE = "touchmove_arbiter"


Viewer = Callable[[], Arbiter | None]


def viewer(request: web.Request) -> Viewer:
    """Return what tells, each time it is called, which arbiter the request's credentials stand for now (None:
    no credentials, or revoked since): the ``Authorization`` header, else the session cookie ``/api/auth``
    sets. A stream calls it again before each write (permissions hold for the life of a connection)."""
    book = request.app[console_api.BOOK_KEY]
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        token = header[7:].strip()
        return lambda: book.authenticate(token) if token and book.configured else None
    cookie = request.cookies.get(COOKIE, "")
    sessions = request.app[SESSIONS_KEY]
    return lambda: sessions.arbiter(cookie, book) if cookie else None


@web.middleware
async def private_console(request: web.Request, handler: Handler) -> web.StreamResponse:
    """While the console is private (:attr:`.PublicOutputs.console_private`), its live views need an arbiter's
    token: the ``Authorization`` header, or the session cookie ``/api/auth`` sets (an EventSource sends no
    header)."""
    hub = request.app[HUB_KEY]
    if (request.method in ("GET", "HEAD") and hub.outputs.console_private
            and request.path.startswith(PRIVATE_PREFIXES) and viewer(request)() is None):
        raise web.HTTPUnauthorized(
            text=json.dumps({"error": "the console is private while the broadcast is delayed: an arbiter "
                                      "token is needed"}),
            content_type="application/json", headers={"WWW-Authenticate": 'Bearer realm="touchmove arbiter"'})
    return await handler(request)


#: What every page may load: its own scripts, styles, pictures and stream; never framed by another site.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
#: A board's picture (``chess.svg`` styles its pieces inline): nothing else, no script.
CSP_SVG = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                    "Referrer-Policy": "no-referrer"}


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Set the security headers on every response (pages, documents, errors, the event stream, static files)."""
    svg = response.content_type == "image/svg+xml"
    response.headers["Content-Security-Policy"] = CSP_SVG if svg else CSP
    response.headers.update(SECURITY_HEADERS)


async def board_svg(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    view = hub.storage.by_number.get(_board_number(request))
    if view is None:
        raise web.HTTPNotFound()
    return web.Response(text=view.svg(), content_type="image/svg+xml", headers={"Cache-Control": "no-cache"})


async def state(request: web.Request) -> web.Response:
    return _json(request.app[HUB_KEY].snapshot(svg=request.query.get("svg") != "0"))


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream_permission(request: web.Request) -> Callable[[], bool]:
    """Return what tells whether the stream opened by ``request`` may still be sent to: one opened by an arbiter
    while his token or session holds, one opened without (or with credentials no longer valid) while the
    console is not private (a round switched to a delay makes it private)."""
    hub = request.app[HUB_KEY]
    who = viewer(request)
    if who() is not None:
        return lambda: who() is not None
    return lambda: not hub.outputs.console_private


async def stream(request: web.Request) -> web.StreamResponse:
    hub = request.app[HUB_KEY]
    allowed = stream_permission(request)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    svg = request.query.get("svg") != "0"
    queue = hub.streams.listen(svg=svg)
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    try:
        await resp.write(b"retry: 1000\n\n" + _sse("snapshot", hub.snapshot(svg=svg)))
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), PERMISSION_CHECK_S)
            except TimeoutError:
                if not allowed():
                    return resp  # revoked, or the console became private: the stream ends
                if loop.time() - quiet_since >= KEEPALIVE:
                    await resp.write(b": keepalive\n\n")
                    quiet_since = loop.time()
                continue
            if not allowed():
                return resp
            chunks = []
            while True:  # send what is queued in one write
                if item[0] == "overflow":
                    return resp
                chunks.append(_sse(*item))
                if queue.empty() or len(chunks) >= 200:
                    break
                item = queue.get_nowait()
            await resp.write(b"".join(chunks))
            quiet_since = loop.time()
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        hub.streams.unlisten(queue)
    return resp


def _authorized(request: web.Request) -> Arbiter:
    return console_api.authorized(request)


async def _body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        data = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text=json.dumps({"error": "the body must be JSON"}),
                                 content_type="application/json") from None
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": "the body must be a JSON object"}),
                                 content_type="application/json")
    return data


async def auth(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    resp = _json({"ok": True, "arbiter": arbiter.name, "role": arbiter.role})
    # for the private console's live views only (the actions need the header: a cookie is sent cross-site);
    # a session value, never the token (see console_sessions)
    resp.set_cookie(COOKIE, request.app[SESSIONS_KEY].issue(arbiter), httponly=True, samesite="Strict", path="/")
    return resp


async def ack(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    hub = request.app[HUB_KEY]
    alert_id = console_api.count_param(request.match_info["id"])
    if alert_id is None:
        return _json({"error": "no such alert"}, 404)
    try:
        was_open = any(a.id == alert_id and not a.acked for a in hub.storage.alerts)
        entry = hub.actions.acknowledge(alert_id, by=arbiter.name)
    except ActionError as exc:
        return _json({"error": str(exc)}, 404)
    if was_open:  # acknowledging an acknowledged alert changes nothing: nothing to log
        console_api.record(request, arbiter, "acknowledge", board=entry.board, before={"acked": False},
                           after={"acked": True}, detail={"alert": entry.id, "code": entry.code,
                                                          "article": entry.article, "ply": entry.ply})
    return _json(entry.to_json(arbiter_data=True))


async def action(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    hub = request.app[HUB_KEY]
    number = _board_number(request)
    name = request.match_info["action"]
    data = await _body(request)
    view = hub.storage.by_number.get(number)
    before = console_api.board_summary(view) if view is not None else None
    try:
        if name == "promote":
            out = await hub.actions.promote(number, str(data.get("piece", "")))
        elif name == "takeback":
            ply = data.get("ply")
            if not isinstance(ply, int) or isinstance(ply, bool):
                raise ActionError("ply must be an integer")
            out = await hub.actions.takeback(number, ply)
        elif name == "setup":
            out = await hub.actions.setup(number, str(data.get("fen", "")), bool(data.get("chess960", False)))
        elif name == "result":
            game = data.get("game")
            if game is not None and (type(game) is not int or game < 1):
                raise ActionError("game must be a number from 1")
            out = hub.actions.record_result(number, str(data.get("result", "")), game)
        elif name == "allow":
            allow = data.get("allow")
            if allow is not None and not isinstance(allow, str):
                raise ActionError("allow must be next, replace or none")
            out = hub.actions.permit_game(number, allow)
        elif name == "assign":
            out = await hub.actions.assign(number)
        else:
            return _json({"error": f"unknown action {name!r}"}, 404)
    except ActionError as exc:
        console_api.record(request, arbiter, name, board=number, before=before, after=before, ok=False,
                           error=str(exc), detail=data)
        return _json({"error": str(exc)}, 400)
    after = console_api.board_summary(view) if view is not None else None
    console_api.record(request, arbiter, name, board=number, before=before, after=after, detail=data)
    return _json({"ok": True, "sent": out} if "topic" in out else {"ok": True, "board": out})


async def switch_round(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    data = await _body(request)
    number = data.get("round")
    if type(number) is not int:
        return _json({"error": "round must be a round number"}, 400)
    before = {"round": request.app[HUB_KEY].storage.round.number}
    try:
        out = request.app[HUB_KEY].switch_round(number)
    except ActionError as exc:
        console_api.record(request, arbiter, "round", before=before, after=before, ok=False, error=str(exc),
                           detail=data)
        return _json({"error": str(exc)}, 400)
    console_api.record(request, arbiter, "round", before=before, after={"round": number})
    return _json({"ok": True, **out})


async def lichess_token(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    hub = request.app[HUB_KEY]
    data = await _body(request)
    token = data.get("token")
    if not isinstance(token, str) or not token.strip() or len(token) > 500 or any(c.isspace() for c in token):
        return _json({"error": "token must be a lichess token (one word)"}, 400)
    if hub.set_lichess_token is None:
        return _json({"error": "no lichess push is configured"}, 400)
    hub.set_lichess_token(token.strip())
    console_api.record(request, arbiter, "lichess_token", detail={"token": "(replaced, not logged)"})
    return _json({"ok": True})


def make_app(hub: Broadcaster, token: str | None, *, arbiters: ArbiterBook | None = None,
             audit: AuditLog | None = None, journals: list[Path] | None = None) -> web.Application:
    """The web app; ``token`` is the tournament's shared token (an arbiter named ``arbiter``)."""
    app = web.Application(middlewares=[no_internal_text, private_console])
    app.on_response_prepare.append(security_headers)
    app[HUB_KEY] = hub
    app[SESSIONS_KEY] = ConsoleSessions(hub.storage.output_dir / KEY_NAME)
    app[TOKEN_KEY] = token
    app[ENCODED_KEY] = {}
    if arbiters is None:
        arbiters = book_for(hub.storage.output_dir, token)
    if audit is None:
        audit = AuditLog.read(hub.storage.output_dir / "arbiter-audit.jsonl")
    if journals is None:
        journals = [Path(p) for p in os.environ.get("TOUCHMOVE_JOURNALS", "").split(os.pathsep) if p]
    console_api.install(app, hub, arbiters, audit, journals)
    app.router.add_get("/", dashboard)
    app.router.add_get("/round/{n}.pgn", round_pgn)
    app.router.add_get("/round/{n}/game/{g}.pgn", game_pgn)
    app.router.add_get("/all.pgn", all_pgn)
    app.router.add_get("/round/{n}/results.csv", round_results_csv)
    app.router.add_get("/results.csv", all_results_csv)
    app.router.add_get("/results.trf", all_results_trf)
    app.router.add_get("/results-2026.trf", all_results_trf)
    app.router.add_get("/live/tournament.json", live_tournament)
    app.router.add_get("/live/round-{n}/index.json", live_index)
    app.router.add_get("/live/round-{n}/game-{i}.json", live_game)
    app.router.add_get("/status.json", status)
    app.router.add_post("/api/round", switch_round)
    app.router.add_post("/api/lichess/token", lichess_token)
    app.router.add_get("/board/{n}.svg", board_svg)
    app.router.add_get("/api/state", state)
    app.router.add_get("/api/stream", stream)
    app.router.add_post("/api/auth", auth)
    app.router.add_post("/api/alerts/{id}/ack", ack)
    app.router.add_post("/api/boards/{n}/{action}", action)
    app.router.add_static("/static/", STATIC, show_index=False)

    async def close_streams(app: web.Application) -> None:
        hub.streams.close()

    app.on_shutdown.append(close_streams)
    return app
