"""The broadcaster's web side (aiohttp): the round PGN, the arbiter's dashboard and its actions.

Public (read-only):
    GET  /                     the dashboard (static HTML/JS/CSS, no build step)
    GET  /round/{n}.pgn        the round's multi-game PGN (live for the current round, with an ETag for
                               conditional polling; other rounds from their files)
    GET  /board/{n}.svg        one board's position (python-chess ``chess.svg``)
    GET  /api/state            everything as JSON (``?svg=0`` leaves the SVGs out)
    GET  /api/stream           server-sent events: snapshot, board, svg, alert, ack, bridge, response, audit
                               (``?svg=0``: without pictures; the console draws its own boards)

Arbiter actions (``Authorization: Bearer <token>``; refused when no token is configured):
    POST /api/auth                          check a token
    POST /api/alerts/{id}/ack               acknowledge an alert
    POST /api/boards/{n}/promote   {"piece": "q"|"r"|"b"|"n"}
    POST /api/boards/{n}/takeback  {"ply": 7}
    POST /api/boards/{n}/setup     {"fen": "...", "chess960": false}
    POST /api/boards/{n}/result    {"result": "1-0"|"0-1"|"1/2-1/2"|"*"}
    POST /api/boards/{n}/assign    {}  (send the pairing's names to the bridge)

Each arbiter has a token of his own (:mod:`.arbiters`); every action goes to the audit log (:mod:`.audit`).
The console's other routes (timelines, evidence, audit, arbiters) are in :mod:`.console_api`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from touchmove.broadcast import console_api
from touchmove.broadcast.arbiters import ARBITERS_ENV, ARBITERS_FILE_ENV, Arbiter, ArbiterBook
from touchmove.broadcast.audit import AuditLog
from touchmove.broadcast.broadcaster import ActionError, Broadcaster

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
HUB_KEY: web.AppKey[Broadcaster] = web.AppKey("hub", Broadcaster)
TOKEN_KEY: web.AppKey[str | None] = web.AppKey("token", str)
KEEPALIVE = 15.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, separators=(",", ":")))


def _board_number(request: web.Request) -> int:
    try:
        return int(request.match_info["n"])
    except ValueError:
        raise web.HTTPNotFound() from None


async def dashboard(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "dashboard.html", headers={"Cache-Control": "no-cache"})


async def round_pgn(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    number = request.match_info["n"]
    headers = {"Cache-Control": "no-cache", "Access-Control-Allow-Origin": "*"}
    if number == str(hub.round.number) or number == "current":
        etag = f'"r{hub.round.number}-v{hub.version}"'
        headers["ETag"] = etag
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        text = hub.round_pgn()
    else:
        if not number.isdigit():
            raise web.HTTPNotFound()
        path = hub.output_dir / f"round-{int(number)}.pgn"
        if not path.is_file():
            raise web.HTTPNotFound(text=f"no PGN for round {number}\n")
        text = path.read_text(encoding="utf-8")
    return web.Response(text=text, content_type="application/x-chess-pgn", charset="utf-8", headers=headers)


async def board_svg(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    view = hub.by_number.get(_board_number(request))
    if view is None:
        raise web.HTTPNotFound()
    return web.Response(text=view.svg(), content_type="image/svg+xml", headers={"Cache-Control": "no-cache"})


async def state(request: web.Request) -> web.Response:
    return _json(request.app[HUB_KEY].snapshot(svg=request.query.get("svg") != "0"))


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def stream(request: web.Request) -> web.StreamResponse:
    hub = request.app[HUB_KEY]
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    svg = request.query.get("svg") != "0"
    queue = hub.listen(svg=svg)
    try:
        await resp.write(b"retry: 1000\n\n" + _sse("snapshot", hub.snapshot(svg=svg)))
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE)
            except TimeoutError:
                await resp.write(b": keepalive\n\n")
                continue
            chunks = []
            while True:  # send what is queued in one write
                if item[0] == "overflow":
                    return resp
                chunks.append(_sse(*item))
                if queue.empty() or len(chunks) >= 200:
                    break
                item = queue.get_nowait()
            await resp.write(b"".join(chunks))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        hub.unlisten(queue)
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
    return _json({"ok": True, "arbiter": arbiter.name, "role": arbiter.role})


async def ack(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    try:
        entry = request.app[HUB_KEY].acknowledge(int(request.match_info["id"]), by=arbiter.name)
    except (ValueError, ActionError) as exc:
        return _json({"error": str(exc)}, 404)
    if entry.acked_by == arbiter.name and entry.acked_at is not None:
        console_api.record(request, arbiter, "acknowledge", board=entry.board, before={"acked": False},
                           after={"acked": True}, detail={"alert": entry.id, "code": entry.code,
                                                          "article": entry.article, "ply": entry.ply})
    return _json(entry.to_json())


async def action(request: web.Request) -> web.Response:
    arbiter = _authorized(request)
    hub = request.app[HUB_KEY]
    number = _board_number(request)
    name = request.match_info["action"]
    data = await _body(request)
    view = hub.by_number.get(number)
    before = console_api.board_summary(view) if view is not None else None
    try:
        if name == "promote":
            out = await hub.promote(number, str(data.get("piece", "")))
        elif name == "takeback":
            ply = data.get("ply")
            if not isinstance(ply, int) or isinstance(ply, bool):
                raise ActionError("ply must be an integer")
            out = await hub.takeback(number, ply)
        elif name == "setup":
            out = await hub.setup(number, str(data.get("fen", "")), bool(data.get("chess960", False)))
        elif name == "result":
            out = hub.record_result(number, str(data.get("result", "")))
        elif name == "assign":
            out = await hub.assign(number)
        else:
            return _json({"error": f"unknown action {name!r}"}, 404)
    except ActionError as exc:
        console_api.record(request, arbiter, name, board=number, before=before, after=before, ok=False,
                           error=str(exc), detail=data)
        return _json({"error": str(exc)}, 400)
    after = console_api.board_summary(view) if view is not None else None
    console_api.record(request, arbiter, name, board=number, before=before, after=after, detail=data)
    return _json({"ok": True, "sent": out} if "topic" in out else {"ok": True, "board": out})


def make_app(hub: Broadcaster, token: str | None, *, arbiters: ArbiterBook | None = None,
             audit: AuditLog | None = None, journals: list[Path] | None = None) -> web.Application:
    """The web app; ``token`` is the tournament's shared token (an arbiter named ``arbiter``)."""
    app = web.Application()
    app[HUB_KEY] = hub
    app[TOKEN_KEY] = token
    if arbiters is None:
        file = os.environ.get(ARBITERS_FILE_ENV)
        arbiters = ArbiterBook(file=Path(file) if file else hub.output_dir / "arbiters.toml",
                               env=os.environ.get(ARBITERS_ENV), shared_token=token,
                               revoked_path=hub.output_dir / "arbiters-revoked.json")
    if audit is None:
        audit = AuditLog(hub.output_dir / "arbiter-audit.jsonl")
    if journals is None:
        journals = [Path(p) for p in os.environ.get("TOUCHMOVE_JOURNALS", "").split(os.pathsep) if p]
    console_api.install(app, hub, arbiters, audit, journals)
    app.router.add_get("/", dashboard)
    app.router.add_get("/round/{n}.pgn", round_pgn)
    app.router.add_get("/board/{n}.svg", board_svg)
    app.router.add_get("/api/state", state)
    app.router.add_get("/api/stream", stream)
    app.router.add_post("/api/auth", auth)
    app.router.add_post("/api/alerts/{id}/ack", ack)
    app.router.add_post("/api/boards/{n}/{action}", action)
    app.router.add_static("/static/", STATIC, show_index=False)

    async def close_streams(app: web.Application) -> None:
        hub.close_listeners()

    app.on_shutdown.append(close_streams)
    return app
