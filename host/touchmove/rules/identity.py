"""Piece identity from boards that know their pieces (DGT, ChessLink, Chessnut: docs/boards.md).

A ``place`` record may say which piece was put down (``piece``, a FEN letter). :class:`PieceWatch` keeps the
letters of the squares whose last record was such a place; once the game's position is settled (a move made, a
game started) :meth:`PieceWatch.wrong` returns the squares where the board's piece is not the position's: a
knight where the game has a bishop, two pieces swapped, a start position set up wrongly. Squares with no letter
(an occupancy-only board, a piece lifted since) are never judged: such boards work exactly as before.
"""

from __future__ import annotations

import chess

#: The time given the letters of a snapshot: a whole board reported at rest, judged at once.
WHOLE_BOARD = -(2**62)


class PieceWatch:
    """The pieces a board said it holds, square by square (see the module)."""

    def __init__(self) -> None:
        self.letters: dict[chess.Square, str] = {}
        self.since: dict[chess.Square, int] = {}             # when each letter was put down
        self.last: dict[chess.Square, str] = {}              # the last letter each square had, lifted or not
        self.told: set[tuple[chess.Square, str]] = set()     # (square, found) already reported

    def place(self, sq: chess.Square, piece: str | None, t: int) -> None:
        """Note a place record at ``t`` (``piece`` None: the board did not say)."""
        if piece is None:
            self.letters.pop(sq, None)
        else:
            self.letters[sq] = self.last[sq] = piece
            self.since[sq] = t

    def snapshot(self, placement: str) -> None:
        """Note a snapshot's pieces (a FEN placement): every square's letter is known again."""
        board = chess.BaseBoard(placement)
        self.letters = {sq: piece.symbol() for sq, piece in board.piece_map().items()}
        self.since = dict.fromkeys(self.letters, WHOLE_BOARD)
        self.last.update(self.letters)

    def lift(self, sq: chess.Square) -> None:
        """Note a lift record."""
        self.letters.pop(sq, None)
        self.told = {(s, f) for s, f in self.told if s != sq}

    def piece_on(self, sq: chess.Square) -> str | None:
        """Return the letter the board gave the piece on ``sq``, if it gave one."""
        return self.letters.get(sq)

    def exchanging(self, sq: chess.Square) -> bool:
        """Return True when ``sq`` is empty after a pawn stood on it (a promotion's pawn being exchanged)."""
        return sq not in self.letters and self.last.get(sq) in ("P", "p")

    def wrong(self, board: chess.BaseBoard, settled_by: int) -> list[dict[str, str]]:
        """Return the squares (not reported before) whose piece differs from ``board``'s: square, expected piece
        (the position's) and the piece found. Only pieces put down by ``settled_by`` are judged: one put down
        since may be the next move under way (an answer before the move it answers was made)."""
        out = []
        for sq, found in sorted(self.letters.items()):
            if self.since.get(sq, WHOLE_BOARD) > settled_by:
                continue
            piece = board.piece_at(sq)
            expected = piece.symbol() if piece is not None else ""
            if expected != found and expected and (sq, found) not in self.told:
                self.told.add((sq, found))
                out.append({"sq": chess.square_name(sq), "expected": expected, "found": found})
        return out
