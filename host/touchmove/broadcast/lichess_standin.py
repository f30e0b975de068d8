"""A local stand-in for lichess's broadcast push, to rehearse an event without lichess.

``python -m touchmove.broadcast.lichess_standin --port 9000 --out pushed`` answers
``POST /api/broadcast/round/{id}/push`` as lichess does (a JSON list of the games it read, an error for a game
it cannot read), refuses a request without a bearer token (401), answers ``POST /api/token/test`` (every token
known, with the push's scope) and ``GET /api/broadcast/-/-/{id}`` (every round exists): what ``touchmove
doctor`` asks, writes each round's latest PGN to
``OUT/{id}.pgn`` and prints one line per push. Point the tournament's ``lichess_url`` at it
(docs/club.md, the rehearsal). It is never lichess: nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
from pathlib import Path
from typing import Any

import chess.pgn
from aiohttp import web

ROUND_ID = "round_id"


def read_games(pgn: str) -> list[dict[str, Any]]:
    """Return, per game of ``pgn``, its tags and number of plies (or an ``error``), as lichess answers a push."""
    games: list[dict[str, Any]] = []
    stream = io.StringIO(pgn)
    while True:
        game = chess.pgn.read_game(stream)
        if game is None:
            return games
        tags = dict(game.headers)
        if game.errors:
            games.append({"tags": tags, "error": str(game.errors[0]).split(" while parsing")[0]})
        else:
            games.append({"tags": tags, "moves": sum(1 for _ in game.mainline_moves())})


def make_app(out: Path) -> web.Application:
    """Return the stand-in's web app; pushed PGNs go to ``out``."""

    async def push(request: web.Request) -> web.Response:
        round_id = request.match_info[ROUND_ID]
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            return web.json_response({"error": "no token"}, status=401)
        body = await request.text()
        games = read_games(body)
        (out / f"{round_id}.pgn").write_text(body, encoding="utf-8")
        plies = sum(g.get("moves", 0) for g in games)
        finished = sum(1 for g in games if g["tags"].get("Result", "*") != "*")
        print(f"push to round {round_id}: {len(games)} games, {plies} plies, {finished} finished", flush=True)
        return web.json_response({"games": games})

    async def token_test(request: web.Request) -> web.Response:
        # lichess's POST /api/token/test: tokens separated by commas -> each one's scopes and user (or null);
        # the stand-in knows every token but an empty one, as an account with the push's scope
        tokens = [t.strip() for t in (await request.text()).split(",")]
        return web.json_response({t: {"scopes": "study:write", "userId": "rehearsal", "expires": None}
                                  if t else None for t in tokens})

    async def round_info(request: web.Request) -> web.Response:
        # lichess's GET /api/broadcast/{tour slug}/{round slug}/{round id}: every round exists here
        round_id = request.match_info[ROUND_ID]
        return web.json_response({"round": {"id": round_id, "name": f"round {round_id}"},
                                  "tour": {"name": "lichess stand-in"}})

    app = web.Application(client_max_size=8 << 20)
    app.router.add_get(f"/api/broadcast/{{tour}}/{{slug}}/{{{ROUND_ID}}}", round_info)
    app.router.add_post(f"/api/broadcast/round/{{{ROUND_ID}}}/push", push)
    app.router.add_post("/api/token/test", token_test)
    return app


#: How long Ctrl-C waits for a push being received (aiohttp's default, 60 s, held the stand-in that long after a
#: client stopped mid-push).
SHUTDOWN_WAIT_S = 1.0


async def serve(host: str, port: int, out: Path) -> None:
    runner = web.AppRunner(make_app(out), shutdown_timeout=SHUTDOWN_WAIT_S)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"lichess stand-in on http://{host}:{port} (lichess_url), writing pushed rounds to {out}/", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    """Run the stand-in until Ctrl-C; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m touchmove.broadcast.lichess_standin",
                                     description="a local stand-in for lichess's broadcast push (rehearsals)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--out", type=Path, default=Path("lichess-standin"), help="where pushed PGNs go")
    args = parser.parse_args(argv)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        asyncio.run(serve(args.host, args.port, args.out))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"lichess stand-in: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
