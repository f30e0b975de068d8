"""Games that end on the board: ``game_over`` agrees with python-chess on checkmate and stalemate (5.1.1, 5.2.1)."""

from __future__ import annotations

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from touchmove.rules.outcome import game_over


def ends_by_itself(board: chess.Board) -> str | None:
    """Return what python-chess says ends the game with no move left (checkmate or stalemate), else None."""
    if board.is_checkmate():
        return "checkmate"
    if board.is_stalemate():
        return "stalemate"
    return None


@pytest.mark.parametrize("fen", [
    # Black's knight on b7 is pinned by the bishop on e4: it attacks free squares, yet cannot move.
    "k7/1nK5/1P6/8/4B3/8/8/8 b - - 0 1",
    # Black's rook on b7 is pinned on the diagonal: it attacks the whole rank and file, yet cannot move.
    "k1K5/1r6/1P6/8/4B3/8/8/8 b - - 0 1",
    # White's bishop on a2 is pinned on the file by the rook on a8; its diagonals are open.
    "r6k/8/8/8/8/8/B1q5/K7 w - - 0 1",
])
def test_a_pinned_piece_does_not_hide_a_stalemate(fen: str) -> None:
    board = chess.Board(fen)
    assert board.is_valid() and board.is_stalemate()
    assert game_over(board) == ("1/2-1/2", "stalemate", "5.2.1")


def test_a_free_piece_is_a_legal_move() -> None:
    # The same knight, unpinned (the bishop gone): black can move it, the game goes on.
    board = chess.Board("k7/1nK5/1P6/8/8/8/8/8 b - - 0 1")
    assert not board.is_stalemate()
    assert game_over(board) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=300))
def test_game_over_agrees_with_python_chess_on_every_position_of_a_random_game(picks: list[int]) -> None:
    board = chess.Board()
    for pick in picks:
        ended = game_over(board)
        assert game_over(board, check=board.is_check()) == ended  # the check told by the caller (a SAN suffix)
        assert (ended[1] if ended and ended[1] in ("checkmate", "stalemate") else None) == ends_by_itself(board), \
            board.fen()
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[pick % len(moves)])
