"""Board pictures for the dashboard: python-chess's ``chess.svg``, rendered from plain values.

A module of its own with light imports, so the renderer can run in a worker process (rendering is the
most expensive thing the broadcaster does: a few milliseconds a picture).
"""

from __future__ import annotations

import chess
import chess.svg


def render_svg(fen: str, chess960: bool = False, lastmove: str | None = None) -> str:
    """The SVG of a position, with the last move and a king in check marked."""
    board = chess.Board(fen, chess960=chess960)
    move = chess.Move.from_uci(lastmove) if lastmove else None
    check = board.king(board.turn) if board.is_check() else None
    return chess.svg.board(board, lastmove=move, check=check, coordinates=False)


def render_many(jobs: list[tuple[str, bool, str | None]]) -> list[str]:
    """Several pictures in one call (one round trip to a worker process for a whole batch)."""
    return [render_svg(*job) for job in jobs]
