"""The lost-changes search bounded by the pieces a board names: each piece it shows where a position has none or
another must be put there by a ply of its side. The bound only cuts lines the pieces rule out anyway, and lets the
search reach lines the squares alone leave too many positions to find (DGT game 36: a queen never reported on f5)."""

from __future__ import annotations

import random

import chess

from touchmove.rules.identity import shown_by
from touchmove.rules.recovery import Explanation, explanations


def pieces_of(board: chess.Board) -> dict[chess.Square, str]:
    return {sq: piece.symbol() for sq, piece in board.piece_map().items()}


def shown(found: list[Explanation] | None, start: chess.Board, pieces: dict[chess.Square, str]) -> set[tuple[str, ...]]:
    return {tuple(m.uci() for m in e.moves) + (("...",) if e.in_progress else ())
            for e in found or [] if shown_by(e.moves, start, e.in_progress, pieces) is not None}


def play_randomly(board: chess.Board, rng: random.Random, plies: int) -> None:
    """Push up to ``plies`` random legal plies on ``board`` (fewer if the game ends)."""
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            return
        board.push(rng.choice(moves))


def test_the_bound_keeps_every_line_the_pieces_show() -> None:
    """Random games, a window of 1-4 plies lost: the lines the pieces show among those the squares allow are all
    found with the bound too (it cuts only what the pieces rule out)."""
    rng = random.Random(36)
    compared = 0
    for _ in range(150):
        board = chess.Board()
        play_randomly(board, rng, rng.randint(6, 40))
        start = board.copy(stack=False)
        play_randomly(board, rng, rng.randint(1, 4))
        pieces = pieces_of(board)
        plain = explanations(start, board.occupied, max_plies=4, under_way_too=True)
        want = shown(plain, start, pieces)
        if plain is None or not want:
            continue
        bounded = explanations(start, board.occupied, max_plies=4, under_way_too=True, pieces=pieces)
        assert want <= shown(bounded, start, pieces), start.fen()
        compared += 1
    assert compared >= 100


def test_five_plies_the_squares_alone_give_up_on_are_found_by_the_pieces() -> None:
    """DGT game 36: Qf5 Qxf5 gxf5 Bc2 Ng6 with the queens never reported on f5. The squares allow four plies
    the pieces rule out, and the search for longer ones gives up; bounded by the pieces, the five are found."""
    start = chess.Board("r3rn2/pp3pkn/3p2pb/2pPP3/P1P2P2/2N4Q/1Pq4P/R1BBR1K1 b - - 4 24")
    board = start.copy()
    for san in ("Qf5", "Qxf5", "gxf5", "Bc2", "Ng6"):
        board.push_san(san)
    pieces = pieces_of(board)
    plain = explanations(start, board.occupied, under_way_too=True)
    assert plain and not shown(plain, start, pieces)            # four plies, none the pieces show
    assert explanations(start, board.occupied, min_plies=5, under_way_too=True) is None     # gave up
    found = explanations(start, board.occupied, under_way_too=True, pieces=pieces)
    assert ("c2f5", "h3f5", "g6f5", "d1c2", "f8g6") in shown(found, start, pieces)
