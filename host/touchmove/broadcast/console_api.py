"""The console's web routes: board detail, touch timelines and evidence export, arbiters and the audit log.

    GET  /api/boards/{n}                       the board with its moves, alerts and the plies with evidence
    GET  /api/boards/{n}/timeline?ply=P[&game=G]   one ply's touch timeline (JSON)
    GET  /api/boards/{n}/evidence.json[?game=G]    every ply's timeline of a game, with its PGN
    GET  /api/boards/{n}/evidence.pgn[?game=G]     the game's PGN, each ply's evidence as a comment
    GET  /api/audit[?after=ID]                 the latest audit entries (an arbiter's token)
    GET  /api/audit.jsonl                      the whole audit log (an arbiter's token)
    GET  /api/arbiters                         the arbiters and whether revoked (an arbiter's token)
    POST /api/arbiters/{name}/revoke           refuse that arbiter's tokens from now on (the chief's token)

What arbiters did is theirs to read: the audit log and the list of arbiters need a valid (not revoked) token,
the public event stream only says that an entry was added (its id), and who acknowledged an alert
(``acked_by``) is in the answers to requests with a valid token only. Viewing the boards needs none.

Timelines use the events the broadcaster received (kept on disk across its restarts: :mod:`.event_archive`);
where a bridge journal is readable (``journals``), the raw lift and place records of the ply are merged in, and
a game whose events the broadcaster never got is read from the journal.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import chess.pgn
from aiohttp import web

from touchmove.broadcast.arbiter_book import Arbiter, ArbiterBook
from touchmove.broadcast.audit import AuditLog, now_iso
from touchmove.broadcast.board_view import BoardView
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.live_pgn import LiveGame, game_pgn, pgn_headers
from touchmove.broadcast.timeline import (
    GameEvents,
    evidence_pgn,
    game_evidence,
    game_plies,
    journal_records,
    journal_store,
    ply_timeline,
)

BOOK_KEY: web.AppKey[ArbiterBook] = web.AppKey("arbiters", ArbiterBook)
AUDIT_KEY: web.AppKey[AuditLog] = web.AppKey("audit", AuditLog)
JOURNALS_KEY: web.AppKey[list[Path]] = web.AppKey("journals", list)
HUB: web.AppKey[Broadcaster] = web.AppKey("console-hub", Broadcaster)


#: The most digits a number in a URL may have (board, round, game, ply, ids): more is no such thing.
MAX_DIGITS = 9


def count_param(text: str | None) -> int | None:
    """The number ``text`` spells in ASCII digits (at most :data:`MAX_DIGITS`), else None: ``str.isdigit``
    also accepts superscripts and other scripts' digits, which ``int`` refuses or reads otherwise."""
    if text is None or not 0 < len(text) <= MAX_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, separators=(",", ":")))


def _error(exc: type[web.HTTPException], message: str, **kw: Any) -> web.HTTPException:
    return exc(text=json.dumps({"error": message}), content_type="application/json", **kw)


def arbiter_of(request: web.Request) -> Arbiter | None:
    """The arbiter whose valid token the request carries, or None (no token, a wrong or revoked one): for
    answers that anyone may read, with arbiter data added for arbiters."""
    book = request.app[BOOK_KEY]
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer ") or not book.configured:
        return None
    return book.authenticate(header[7:].strip())


def authorized(request: web.Request) -> Arbiter:
    """The arbiter whose token the request carries; 403 when no tokens are configured, 401 otherwise."""
    if not request.app[BOOK_KEY].configured:
        raise _error(web.HTTPForbidden, "arbiter actions are disabled: no token configured")
    arbiter = arbiter_of(request)
    if arbiter is None:
        raise _error(web.HTTPUnauthorized, "a valid arbiter token is required (unknown or revoked)",
                     headers={"WWW-Authenticate": 'Bearer realm="touchmove arbiter"'})
    return arbiter


def board_summary(view: BoardView) -> dict[str, Any]:
    """What an audit entry keeps of a board before and after an action."""
    g = view.game
    return {"game": g.number, "ply": g.ply, "fen": g.position().fen(), "result": g.results.effective(),
            "result_source": g.results.source()}


def record(request: web.Request, arbiter: Arbiter, action: str, *, board: int | None = None, before: Any = None,
           after: Any = None, ok: bool = True, error: str | None = None,
           detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Append to the audit log and tell the consoles."""
    hub = request.app[HUB]
    entry = request.app[AUDIT_KEY].record(arbiter=arbiter.name, action=action, board=board,
                                          round_=hub.storage.round.number, before=before, after=after, ok=ok,
                                          error=error, detail=detail)
    hub.streams.notify("audit", {"id": entry["id"]})  # the stream is public: arbiters fetch the entry with a token
    return entry


def _view(request: web.Request) -> BoardView:
    number = count_param(request.match_info["n"])
    view = request.app[HUB].storage.by_number.get(number) if number is not None else None
    if view is None:
        raise _error(web.HTTPNotFound, "no such board")
    return view


def _game(request: web.Request, view: BoardView) -> GameEvents:
    hub = request.app[HUB]
    raw = request.query.get("game")
    game = None
    if raw:
        game = count_param(raw)
        if game is None:
            raise _error(web.HTTPBadRequest, "game must be a number")
    number = game if game is not None else view.game.number
    record_ = hub.storage.console.events.game(view.pairing.board, number)
    if record_ is None:  # events the broadcaster never got (it was down): the bridge's journal has them
        for path in request.app[JOURNALS_KEY]:
            try:
                record_ = journal_store(path, view.pairing.board_id).game(0, number)
            except (sqlite3.Error, ValueError):
                record_ = None
            if record_ is not None:
                break
    if record_ is None:
        raise _error(web.HTTPNotFound, "no events of that game on this board")
    return record_


def _live_game(view: BoardView, number: int) -> tuple[int, LiveGame] | None:
    """The board's game of the round numbered ``number`` (the bridge's number) and its entry, or None."""
    for entry, game in enumerate(view.games.entries, start=1):
        if game.number == number:
            return entry, game
    return None


def _journal(request: web.Request, view: BoardView, game: int) -> dict[int, list[dict[str, Any]]]:
    for path in request.app[JOURNALS_KEY]:
        found = journal_records(path, view.pairing.board_id, game)
        if found:
            return found
    return {}


async def board_detail(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    view = _view(request)
    n = view.pairing.board
    moves = [{"ply": i, "san": m.san, "uci": m.uci, "clock_ms": m.clock_ms}
             for i, m in enumerate(view.game.moves, start=1)]
    record_ = hub.storage.console.events.game(n, view.game.number)
    arbiter_data = arbiter_of(request) is not None
    return _json({**view.to_json(), "moves": moves, "start_fen": view.game.start_fen,
                  "alerts": [a.to_json(arbiter_data=arbiter_data) for a in hub.storage.alerts if a.board == n],
                  "evidence_plies": game_plies(record_) if record_ else [],
                  "games": sorted(hub.storage.console.events.boards.get(n, {}))})


async def timeline(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    view = _view(request)
    ply = count_param(request.query.get("ply", ""))
    if ply is None or ply < 1:
        raise _error(web.HTTPBadRequest, "ply must be a positive number")
    record_ = _game(request, view)
    last = max((e["ply"] for e in record_.events if type(e.get("ply")) is int), default=0)
    if ply > last + 1:
        raise _error(web.HTTPNotFound, f"ply {ply} is past game {record_.game} (its events reach ply {last})")
    journal = _journal(request, view, record_.game)
    out = ply_timeline(record_, ply, meanings=hub.meanings, timing=hub.storage.console.timing,
                       records=journal.get(ply, ()))
    found = _live_game(view, record_.game)
    fen = found[1].board(ply - 1).fen() if found is not None and ply <= found[1].ply + 1 else None
    return _json({"board": view.pairing.board, "board_id": view.pairing.board_id, "fen": fen, **out})


def _evidence(request: web.Request) -> tuple[BoardView, GameEvents, list[dict[str, Any]], str]:
    hub = request.app[HUB]
    view = _view(request)
    record_ = _game(request, view)
    plies = game_evidence(record_, meanings=hub.meanings, timing=hub.storage.console.timing,
                          journal=_journal(request, view, record_.game))
    found = _live_game(view, record_.game)
    pgn = ""
    if found is not None:  # a game of the round (not one held, nor one the arbiter left out)
        entry, game = found
        headers = pgn_headers(hub.storage.tournament, view.pairing, game.results.effective(), entry=entry)
        pgn = game_pgn(game, headers)
    return view, record_, plies, pgn


async def evidence_json(request: web.Request) -> web.Response:
    view, record_, plies, pgn = _evidence(request)
    p = view.pairing
    name = f"board-{p.board}-game-{record_.game}-evidence.json"
    data = {"board": p.board, "board_id": p.board_id, "round": request.app[HUB].storage.round.number,
            "white": p.white.name, "black": p.black.name, "game": record_.game, "pgn": pgn,
            "timing": request.app[HUB].storage.console.timing, "plies": plies, "exported": now_iso()}
    return web.Response(text=json.dumps(data, indent=1, ensure_ascii=False), content_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})


async def evidence_pgn_route(request: web.Request) -> web.Response:
    view, record_, plies, pgn = _evidence(request)
    if not pgn or chess.pgn.read_game(io.StringIO(pgn)) is None:
        raise _error(web.HTTPNotFound, "no PGN for that game (a game of the round has one; not a held game)")
    name = f"board-{view.pairing.board}-game-{record_.game}-evidence.pgn"
    return web.Response(text=evidence_pgn(pgn, plies), content_type="application/x-chess-pgn", charset="utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})


async def audit(request: web.Request) -> web.Response:
    authorized(request)
    raw = request.query.get("after", "")
    after = count_param(raw)
    if raw and after is None:
        raise _error(web.HTTPBadRequest, "after must be an audit entry id")
    entries = request.app[AUDIT_KEY].entries
    if after is not None:
        entries = [e for e in entries if isinstance(e.get("id"), int) and e["id"] > after]
    return _json({"entries": entries[-500:]})


async def audit_export(request: web.Request) -> web.Response:
    authorized(request)
    return web.Response(text=request.app[AUDIT_KEY].text(), content_type="application/x-ndjson", charset="utf-8",
                        headers={"Content-Disposition": 'attachment; filename="arbiter-audit.jsonl"'})


async def arbiters(request: web.Request) -> web.Response:
    authorized(request)
    return _json({"arbiters": request.app[BOOK_KEY].listing()})


async def revoke(request: web.Request) -> web.Response:
    arbiter = authorized(request)
    name = request.match_info["name"]
    if not arbiter.chief:
        record(request, arbiter, "revoke", ok=False, error="only the chief arbiter revokes tokens",
               detail={"arbiter": name})
        raise _error(web.HTTPForbidden, "only the chief arbiter revokes tokens")
    book = request.app[BOOK_KEY]
    if not book.find(name):
        raise _error(web.HTTPNotFound, f"no arbiter {name!r}")
    revoked = book.revoke(name, arbiter.name, now_iso())
    entry = record(request, arbiter, "revoke", before={"revoked": not revoked}, after={"revoked": True},
                   detail={"arbiter": name, "tokens": len(revoked)})
    return _json({"ok": True, "revoked": len(revoked), "audit": entry["id"]})


def install(app: web.Application, hub: Broadcaster, book: ArbiterBook, audit_log: AuditLog,
            journals: list[Path]) -> None:
    """Add the console's routes (and its keys) to the broadcaster's app."""
    app[HUB] = hub
    app[BOOK_KEY] = book
    app[AUDIT_KEY] = audit_log
    app[JOURNALS_KEY] = journals
    app.router.add_get("/api/boards/{n}", board_detail)
    app.router.add_get("/api/boards/{n}/timeline", timeline)
    app.router.add_get("/api/boards/{n}/evidence.json", evidence_json)
    app.router.add_get("/api/boards/{n}/evidence.pgn", evidence_pgn_route)
    app.router.add_get("/api/audit", audit)
    app.router.add_get("/api/audit.jsonl", audit_export)
    app.router.add_get("/api/arbiters", arbiters)
    app.router.add_post("/api/arbiters/{name}/revoke", revoke)
