"""The move the board shows and that waits out its settle time, and the one before it that a change interrupted.

One :class:`PendingMove` per engine. :meth:`PendingMove.resolve` is the one place where it is decided which of
the two is made when the board rests or the mover presses his clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import chess

from touchmove.rules.footprints import Footprint, Position, captured_square, castling_squares

__all__ = ["CASTLING_STEP_HOLD_MS", "KNOCK_HOLD_MS", "KNOCK_WINDOW_MS", "SLIDE_ON_HOLD_MS",
           "HeldAnswer", "InterruptedMove", "PendingMove", "castling_step", "knock_lift", "knocked_answer",
           "knocked_by_slide", "knocked_coming_in", "sliding_in", "victim_ahead"]

#: How much longer than the settle time a castling step waits before it is made (ms): a king's step from its square
#: onto the square it crosses castling (Kf1, Kd1 with the right to castle that way, the rook on its square), or a
#: castling rook's step towards its king (Rg1, Rf1). Castling slid along the rank stops on those squares for a
#: moment (the hands: 40-150 ms and the crossing), which a board's reports can stretch to the settle time and
#: beyond (a Chessnut's 100 ms scan shows 190 ms for 200 or 300; ChessLink's debounce and DGT's scan up to 250 ms).
#: A king released there is the king's move all the same, made this much later with the time it showed (4.7);
#: the opponent's answer or a clock press makes it at once.
CASTLING_STEP_HOLD_MS = 300


#: A piece next to the square the last move landed on, lifted this soon (ms) after the board showed that move, was
#: knocked by the sleeve of the hand that made it, as the hand left: a person answers later than that (a bullet
#: reply's first change comes 60-120 ms after the last change, and his hand must travel), but one board report (a
#: DGT scan of 200-250 ms, a Chessnut status every 100 ms) can bring both.
KNOCK_WINDOW_MS = 300
#: How long (ms) after its piece was lifted an answer that a knocked piece may show (:func:`knocked_answer`) waits
#: before it is made: the piece fell onto a neighbouring square and is put back a moment later (the hands: 0.3-1.4 s
#: after it fell, and a report). A piece still there then was moved there: the move, made with the time it showed.
KNOCK_HOLD_MS = 1800


def knock_lift(board: chess.Board, last: chess.Move | None, reached: int | None, sq: chess.Square, t: int) -> bool:
    """Return whether a lift of ``sq`` at ``t`` is a piece knocked off by the sleeve of the hand that made ``last``
    (the move that left ``board``, shown at ``reached``): a piece next to its landing square, lifted within
    :data:`KNOCK_WINDOW_MS` of it showing. Not a touch of the player to move (4.3 binds deliberate touches)."""
    if last is None or reached is None or not 0 <= t - reached <= KNOCK_WINDOW_MS:
        return False
    return bool(chess.BB_KING_ATTACKS[last.to_square] & chess.BB_SQUARES[sq]) and board.piece_at(sq) is not None


def knocked_coming_in(board: chess.Board, move: chess.Move, sq: chess.Square, lifted_at: int | None,
                      shown_at: int) -> bool:
    """Return whether the lift of ``sq`` at ``lifted_at``, during the ply of ``move`` (legal in ``board``, shown at
    ``shown_at``), was a piece the sleeve of the hand coming in with it knocked: a piece next to its landing square
    other than its own and its victim, lifted within :data:`KNOCK_WINDOW_MS` before the move showed (a deliberate
    touch of another piece comes longer before: the hand must let it go, take the moving piece and carry it). The
    caller asks only of a piece not put back before the moving piece landed."""
    if lifted_at is None or not 0 <= shown_at - lifted_at <= KNOCK_WINDOW_MS or board.is_castling(move):
        return False
    return (sq not in (move.from_square, move.to_square, captured_square(board, move))
            and bool(chess.BB_KING_ATTACKS[move.to_square] & chess.BB_SQUARES[sq]))


def knocked_answer(board: chess.Board, last: chess.Move | None, reached: int | None, move: chess.Move,
                   lifted_at: int | None) -> bool:
    """Return whether ``move``, the answer the board shows to ``last`` in ``board``, may be a piece knocked off
    (:func:`knock_lift`, lifted at ``lifted_at``) fallen onto an empty square next to its own, to be put back:
    such an answer waits :data:`KNOCK_HOLD_MS` before it is made."""
    if lifted_at is None or not knock_lift(board, last, reached, move.from_square, lifted_at):
        return False
    return (chess.square_distance(move.from_square, move.to_square) == 1 and not board.is_capture(move)
            and not board.is_castling(move) and move.promotion is None)


def knocked_by_slide(board: chess.Board, move: chess.Move, shown_at: int, answer: chess.Move,
                     lifted_at: int | None) -> bool:
    """Return whether ``answer``, shown right after ``move`` (legal in ``board``, shown at ``shown_at`` and not yet
    made), may be a piece the hand still sliding the move's bishop, rook or queen on along its line knocked onto
    an empty square next to its own: one step, no capture, its piece lifted (at ``lifted_at``) within
    :data:`KNOCK_WINDOW_MS` of the move showing, from next to a square further on that line (up to the first
    piece on it). On a board that names its pieces such an answer does not make the move at once: the piece may
    land further on and the knocked one be put back. The hand sliding on leaves within :data:`KNOCK_WINDOW_MS` of
    the knock: if both stay, the board at rest makes them, or the first change after that (the next ply under way
    with no rest, a bullet answer's mover moving again)."""
    piece = board.piece_at(move.from_square)
    if (piece is None or piece.piece_type not in (chess.BISHOP, chess.ROOK, chess.QUEEN) or board.is_castling(move)
            or lifted_at is None or not 0 <= lifted_at - shown_at <= KNOCK_WINDOW_MS):
        return False
    after = board.copy(stack=False)
    after.push(move)
    if (chess.square_distance(answer.from_square, answer.to_square) != 1 or after.is_capture(answer)
            or after.is_castling(answer) or answer.promotion is not None):
        return False
    for sq in _beyond(move):
        ahead = after.piece_at(sq)
        if ahead is not None and ahead.color == piece.color:
            return False
        if chess.BB_KING_ATTACKS[sq] & chess.BB_SQUARES[answer.from_square]:
            return True
        if ahead is not None:
            return False        # (the line ends at the other side's piece, a capture the slide may be going to)
    return False


def _beyond(move: chess.Move) -> Iterator[chess.Square]:
    """Yield the squares beyond ``move``'s landing square on the line it came along (a bishop, rook or queen going
    on the way it came), nearest first, to the edge of the board."""
    step_file = _sign(chess.square_file(move.to_square) - chess.square_file(move.from_square))
    step_rank = _sign(chess.square_rank(move.to_square) - chess.square_rank(move.from_square))
    file, rank = chess.square_file(move.to_square) + step_file, chess.square_rank(move.to_square) + step_rank
    while 0 <= file < 8 and 0 <= rank < 8:
        yield chess.square(file, rank)
        file, rank = file + step_file, rank + step_rank


#: How long (ms) after its victim's square emptied a line piece's move that stopped short of that victim waits
#: before it is made (:func:`victim_ahead`): a queen slid from d1 to d7 across d2-d6, the victim on d7 taken off
#: first, is sensed on d2 for a whole DGT scan and then nowhere until it lands (the scan misses d3-d6), two scans
#: (up to 500 ms) and a report after it left d2. A piece released short of the victim is that move all the same,
#: made this much later with the time it showed; the opponent's answer or a clock press makes it at once.
SLIDE_ON_HOLD_MS = 600


def victim_ahead(board: chess.Board, move: chess.Move, emptied: dict[chess.Square, int],
                 occupied: chess.Bitboard) -> int | None:
    """Return when the square of the victim ahead of ``move`` (legal in ``board``) emptied, None if there is none:
    the first piece beyond its landing square on its line (a bishop, rook or queen going on the way it came), the
    other side's, its square empty now (``occupied``) and lifted during this ply (``emptied``: the first lift of
    each square). The piece is still sliding on to take it, the victim off first (:data:`SLIDE_ON_HOLD_MS`)."""
    piece = board.piece_at(move.from_square)
    if piece is None or piece.piece_type not in (chess.BISHOP, chess.ROOK, chess.QUEEN) or board.is_castling(move):
        return None
    for sq in _beyond(move):
        ahead = board.piece_at(sq)
        if ahead is not None:
            if ahead.color == piece.color or occupied & chess.BB_SQUARES[sq]:
                return None
            return emptied.get(sq)
    return None


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


@dataclass(slots=True)
class InterruptedMove:
    """A matched move interrupted before its settle time by another change on the board."""

    footprint: Footprint
    t: int
    moved_on: bool  # the change was a lift of a square the move had just filled
    position: Position | None = None  # the position after it (worked out when first asked)
    #: Moved on, its piece having rested on that square for the settle time before the board showed the move
    #: (no legal position meanwhile: a knocked piece missing): released there (4.7), whatever the board shows next.
    released: bool = False

    def after(self, before: Position) -> Position:
        """Return the position after this move, made from ``before``."""
        if self.position is None:
            board = before.board.copy(stack=False)
            board.push(self.footprint.move)
            self.position = Position(board)
        return self.position


@dataclass(frozen=True, slots=True)
class HeldAnswer:
    """An answer the board shows after the interrupted move, not made yet because the hand sliding that move on
    may have knocked its piece (:func:`knocked_by_slide`): ``footprint``, shown since ``since``, held until
    ``until``. A change after ``until`` with the answer still shown makes both moves first: the slide did not go
    on (a bullet answer, the next ply under way with no rest between)."""

    footprint: Footprint
    since: int
    until: int


@dataclass(slots=True)
class PendingMove:
    """The move the board shows (``match``, since ``since``), a move ``interrupted`` before it, if any, and an
    answer ``held`` after that move (:func:`knocked_by_slide`)."""

    match: Footprint | None = None
    since: int = 0
    interrupted: InterruptedMove | None = None
    held: HeldAnswer | None = None

    def clear(self) -> None:
        """Nothing is pending (a move was made, or the game position changed)."""
        self.match = None
        self.interrupted = None
        self.held = None

    def resolve(self, position: Position, occ: chess.Bitboard, *, pressed: bool) -> tuple[Footprint, int]:
        """Return the move to make now and when it showed, the match taken (the interrupted move is dropped by the
        caller's making of the move).

        Both in question (an interrupted move of the same piece, :meth:`stands`): the interrupted one is made when
        its piece was released on its square, or when the board shows the opponent's answer in progress after it
        (on a rest: a promotion's new piece placed first; on the mover's press (``pressed``): the answer sliding
        onto a neighbouring square, sensed there before its own square empties). A board that shows both moves
        alike (two captures by one piece) shows no answer: the later match, the better proven.
        """
        match, interrupted = self.match, self.interrupted
        assert match is not None
        self.match = None
        if interrupted is not None and interrupted.footprint.move != match.move:
            landed = not interrupted.footprint.placed & ~occ
            if pressed:
                take = interrupted.released or (landed and sliding_in(interrupted.after(position), occ))
            else:
                after = interrupted.after(position) if interrupted.released or landed else None
                take = after is not None and occ != after.occ and after.continuable(occ)
            if take:
                return self.take_interrupted()
        return match, self.since

    def take_interrupted(self) -> tuple[Footprint, int]:
        """Return the interrupted move and its time, to make now (what was lifted since belongs to the next ply)."""
        interrupted = self.interrupted
        assert interrupted is not None
        self.interrupted = None
        self.held = None
        return interrupted.footprint, interrupted.t

    def stands(self, shown: Footprint, occ: chess.Bitboard) -> bool:
        """Return whether the interrupted move stays in question beside ``shown``, another move of the same piece.

        Its landing square is still occupied: ``shown`` needs it refilled by another piece while its own piece was in
        the air, the interrupted move only an opponent quick to answer (a piece slid onto its square is sensed
        there before its own square empties). ``shown`` is matched; the next change decides, and if the board rests
        first, ``shown`` is made unless it shows an answer in progress after the interrupted move.
        """
        interrupted = self.interrupted
        assert interrupted is not None
        made = interrupted.footprint
        if (shown.move == made.move or shown.move.from_square != made.move.from_square
                or not made.placed & ~shown.placed):
            return False  # the same move, another piece, or it lands there too (the king's step, then castling)
        return interrupted.released or occ & made.placed == made.placed


def castling_step(board: chess.Board, move: chess.Move) -> bool:
    """Return whether ``move`` (not a castling) is a step castling passes through: the king onto a square it crosses
    to its castling square, or the castling rook onto a square between it and its castling square or onto that
    square, for a castling legal in ``board``."""
    if not board.castling_rights or board.is_castling(move):
        return False
    for castling in board.generate_castling_moves():
        rook, king_to, rook_to = castling_squares(board, castling)
        king = castling.from_square
        if move.from_square == king:
            path = chess.between(king, king_to)
        elif move.from_square == rook:
            path = chess.between(rook, rook_to) | chess.BB_SQUARES[rook_to]
        else:
            continue
        if path & chess.BB_SQUARES[move.to_square]:
            return True
    return False


def sliding_in(position: Position, occ: chess.Bitboard) -> bool:
    """Return whether ``occ`` is ``position`` with a move of it slid onto an empty square next to its own, sensed
    there before its own square empties (the one square filled, nothing vacated yet)."""
    filled = occ & ~position.occ
    if occ & position.occ != position.occ or not filled or filled & (filled - 1):
        return False
    to_sq = filled.bit_length() - 1
    return any(True for _ in position.board.generate_legal_moves(chess.BB_KING_ATTACKS[to_sq] & position.occ,
                                                                  filled))
