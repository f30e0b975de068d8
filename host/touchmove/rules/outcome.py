"""Games that end on the board (5.1.1, 5.2.1, 5.2.2, 9.6.1, 9.6.2) and repeated positions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal, NamedTuple

import chess

#: A game's result as PGN writes it.
Result = Literal["1-0", "0-1", "1/2-1/2", "*"]


class GameEnding(NamedTuple):
    """How a position ends the game on the board: the result, the reason and the FIDE article."""

    result: Result
    reason: str
    article: str


PositionKey = tuple[int, int, int, int, int, int, int, int, bool, int, int | None]


def position_key(board: chess.Board) -> PositionKey:
    """Return what makes two positions the same for repetition (9.2): pieces, turn, castling, en passant."""
    ep = board.ep_square if board.has_legal_en_passant() else None
    return (
        board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.pawns, board.knights,
        board.bishops, board.rooks, board.queens, board.kings, board.turn, board.clean_castling_rights(), ep,
    )


class Repetitions:
    """Counts how often each position of a game has stood on the board."""

    def __init__(self) -> None:
        self._counts: Counter[PositionKey] = Counter()
        self._keys: list[PositionKey] = []

    def add(self, board: chess.Board) -> int:
        """Count the position now on ``board``; return how often it has stood, this time included."""
        key = position_key(board)
        count = self._counts[key] = self._counts[key] + 1
        self._keys.append(key)
        return count

    def remove_last(self) -> None:
        """Forget the position counted last (its move was replaced)."""
        key = self._keys.pop()
        self._counts[key] -= 1

    def rebuild(self, start: chess.Board, moves: Iterable[chess.Move]) -> None:
        """Count again from a start position and moves (after a takeback or an amendment)."""
        self._counts.clear()
        self._keys.clear()
        board = start.copy(stack=False)
        self.add(board)
        for move in moves:
            board.push(move)
            self.add(board)


def game_over(board: chess.Board, occurrences: int = 1, check: bool | None = None) -> GameEnding | None:
    """Return how the position ends the game on the board (result, reason, article), else None.

    ``occurrences`` is how often this position has stood in the game, this time included (9.6.1); ``check``
    whether the side to move is in check, where the caller knows it already (the suffix of the move's SAN).

    Checkmate comes first: it takes precedence over the 75-move rule (9.6.2).
    """
    if check is None:
        check = board.is_check()
    if (check or not _surely_movable(board)) and not any(board.generate_legal_moves()):
        if check:
            return GameEnding("0-1" if board.turn == chess.WHITE else "1-0", "checkmate", "5.1.1")
        return GameEnding("1/2-1/2", "stalemate", "5.2.1")
    if board.is_insufficient_material():
        return GameEnding("1/2-1/2", "dead position", "5.2.2")
    if occurrences >= 5:
        return GameEnding("1/2-1/2", "fivefold repetition", "9.6.1")
    if board.halfmove_clock >= 150:
        return GameEnding("1/2-1/2", "seventy-five-move rule", "9.6.2")
    return None


def _surely_movable(board: chess.Board) -> bool:
    """Return True if the side to move, not in check, has a knight, bishop, rook or queen that is not pinned and
    attacks an empty square or an opponent's piece: a legal move for sure (False proves nothing).

    Every ply asks whether the side to move has a legal move (stalemate); this answers most of them in half the
    time python-chess takes to find the first legal move.
    """
    us = board.occupied_co[board.turn]
    for sq in chess.scan_reversed(us & ~board.pawns & ~board.kings):
        if board.attacks_mask(sq) & ~us and not board.is_pinned(board.turn, sq):
            return True
    return False
