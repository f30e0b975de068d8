"""JSON in the shape of DGT LiveChess Cloud's public files, so viewers and scripts made for it can follow.

Three documents (served under ``/live/``; docs/broadcast.md has examples):

``tournament.json``
    ``id`` (a UUID derived from the event's name: the same for every run), ``name``, ``location``,
    ``country`` (null), ``website`` (null), ``rules`` (``STANDARD``),
    ``chess960`` (``STANDARD`` or ``ANY``), ``timecontrol``, ``rounds``: one ``{"count", "live"}`` per
    round from 1 (``count`` games, ``live`` 1 for the round being broadcast), ``eboards``: the board ids.
``round-<n>/index.json``
    ``date`` (``YYYY-MM-DD``) and ``pairings``: ``{"white", "black", "result", "live"}`` in game order:
    every board's first game in board order, then the further games the arbiter allowed, in the order
    they were added (a game's number never changes when another is added). Players are ``{"fname", "mname", "lname",
    "title", "federation", "gender", "fideid"}`` (``"Last, First"`` split at the comma).
``round-<n>/game-<i>.json``
    game ``i`` of the index (from 1): ``live``, ``serialNr`` (the board id), ``firstMove`` (when the
    first move was made, epoch milliseconds; null before it or when not known), ``chess960`` (the Scharnagl
    number of the start, 518 for the standard position), ``result`` (``WHITEWIN``, ``BLACKWIN``, ``DRAW``
    or null), ``comment`` (null), ``clock`` (``{"white", "black", "time", "run"}``: seconds left after each
    side's last move, ``time`` when they were read (the latest move, epoch milliseconds, an integer always:
    the first move's time, or 0, when not known), and who is to move in a live game; null without clock
    times and on a finished game) and
    ``moves``: ``"SAN seconds+spent"`` per ply (``"e4 5371+29"``: the mover's clock after the move, and the
    seconds the move took, from the clock times and the time control's increment; ``"e4 5371"`` when the
    time spent cannot be known, just ``"e4"`` without a time).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import chess

from touchmove.broadcast.live_pgn import EMPTY_GAME, GameSnapshot
from touchmove.broadcast.tournament import Pairing, Player, Tournament

RESULT_WORDS = {"1-0": "WHITEWIN", "0-1": "BLACKWIN", "1/2-1/2": "DRAW"}


def player_json(player: Player) -> dict[str, Any]:
    last, _, first = player.name.partition(",")
    return {"fname": first.strip() or None, "mname": None, "lname": last.strip() or None,
            "title": player.title, "federation": player.federation, "gender": None, "fideid": player.fide_id}


def tournament_id(tournament: Tournament) -> str:
    """The tournament's id: a UUID from its event name (stable across runs and restarts)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"touchmove:tournament:{tournament.event}"))


def round_games(tournament: Tournament, number: int, games: Mapping[int, Sequence[GameSnapshot]]
                ) -> list[tuple[Pairing, GameSnapshot]]:
    """The round's games in index order: every board's first game in board order, then the further games
    in the order they were added (so a game keeps its place when another is added)."""
    first: list[tuple[Pairing, GameSnapshot]] = []
    further: list[tuple[int, int, int, Pairing, GameSnapshot]] = []
    for pairing in tournament.rounds[number].pairings:
        listed = games.get(pairing.board) or (EMPTY_GAME,)
        first.append((pairing, listed[0]))
        for k, game in enumerate(listed[1:], 2):
            further.append((game.added_ns, pairing.board, k, pairing, game))
    further.sort(key=lambda item: item[:3])
    return first + [(p, g) for *_, p, g in further]


def increment_seconds(time_control: str) -> int | None:
    """The increment of a PGN TimeControl such as ``5400+30`` (0 for ``300``), None if not one."""
    base, plus, inc = time_control.partition("+")
    if not base.isascii() or not base.isdigit() or (plus and not (inc.isascii() and inc.isdigit())):
        return None
    return int(inc) if plus else 0


def base_seconds(time_control: str) -> int | None:
    base = time_control.partition("+")[0]
    return int(base) if base.isascii() and base.isdigit() else None


def _live(game: GameSnapshot, current: bool) -> bool:
    return current and game.number is not None and game.result == "*"


def tournament_json(tournament: Tournament, current: int, counts: Mapping[int, int],
                    chess960: bool = False) -> dict[str, Any]:
    """``counts``: games per round (a round not in it counts its pairings)."""
    last = max(tournament.rounds)
    return {
        "id": tournament_id(tournament), "name": tournament.event, "location": tournament.site,
        "country": None, "website": None,
        "rules": "STANDARD", "chess960": "ANY" if chess960 else "STANDARD",
        "timecontrol": tournament.time_control,
        "rounds": [{"count": counts.get(n, len(tournament.rounds[n].pairings) if n in tournament.rounds else 0),
                    "live": 1 if n == current else 0} for n in range(1, last + 1)],
        "eboards": [p.board_id for p in tournament.rounds[current].pairings],
    }


def index_json(tournament: Tournament, number: int, games: Mapping[int, Sequence[GameSnapshot]],
               date: dt.date, current: bool) -> dict[str, Any]:
    return {
        "date": date.isoformat(),
        "pairings": [{"white": player_json(p.white), "black": player_json(p.black),
                      "result": g.result if g.result != "0-0" else "*",  # a double forfeit: no PGN result
                      "live": _live(g, current), "board": p.board}
                     for p, g in round_games(tournament, number, games)],
    }


def _scharnagl(game: GameSnapshot) -> int:
    board = chess.Board(game.start_fen, chess960=game.chess960)
    n = board.chess960_pos()
    return 518 if n is None else n


def game_json(pairing: Pairing, game: GameSnapshot, current: bool, time_control: str = "") -> dict[str, Any]:
    """One game as LiveChess Cloud's ``game-<i>.json`` (``time_control``: the PGN TimeControl, for the time
    each move took)."""
    start = chess.Board(game.start_fen, chess960=game.chess960)
    moves: list[str] = []
    last: dict[bool, int | None] = {chess.WHITE: None, chess.BLACK: None}
    increment, base = increment_seconds(time_control), base_seconds(time_control)
    before: dict[bool, int | None] = {chess.WHITE: base, chess.BLACK: base}
    turn = start.turn
    for rec in game.moves:
        if rec.clock_ms is None:
            moves.append(rec.san)
            before[turn] = None
        else:
            seconds = max(0, rec.clock_ms) // 1000
            had = before[turn]
            spent = None if had is None or increment is None else max(0, had + increment - seconds)
            moves.append(f"{rec.san} {seconds}" + (f"+{spent}" if spent is not None else ""))
            last[turn] = before[turn] = seconds
        turn = not turn
    clock = None
    if game.result == "*" and (last[chess.WHITE] is not None or last[chess.BLACK] is not None):
        live = _live(game, current)
        # ``time``: when these clock times were read (epoch ms; lichess's reader requires it, an integer)
        read = game.last_move_ms or game.first_move_ms or 0
        clock = {"white": last[chess.WHITE], "black": last[chess.BLACK], "time": read,
                 "run": ("white" if turn == chess.WHITE else "black") if live else None}
    return {
        "live": _live(game, current), "serialNr": pairing.board_id, "firstMove": game.first_move_ms,
        "chess960": _scharnagl(game), "result": RESULT_WORDS.get(game.result), "comment": None,
        "clock": clock, "moves": moves,
    }


def game_at(tournament: Tournament, number: int, games: Mapping[int, Sequence[GameSnapshot]], index: int,
            ) -> tuple[Pairing, GameSnapshot] | None:
    """Game ``index`` (from 1) of the round's index, or None."""
    listed = round_games(tournament, number, games)
    return listed[index - 1] if 1 <= index <= len(listed) else None

