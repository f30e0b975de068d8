"""Touch-move obligations (FIDE Laws 4.3 to 4.5 and 4.7.2), judged from the order pieces were lifted.

The board cannot hear "j'adoube" nor tell whose hand touched a piece: what this module finds are alerts for an
arbiter, never penalties.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import chess

from touchmove.rules.events import AlertCode
from touchmove.rules.footprints import Position, captured_square, castling_squares

#: Two lifts told this close together (ms) may be one scan's reading: a DGT board samples its fields in turn, about
#: 4 ms apart (a rook and its king at most seven fields apart on their rank), a ChessLink or Chessnut report tells
#: them at once; the order they come in may be the scan's, not the hand's (no hand lifts a rook and then its king
#: quicker than that).
ONE_SCAN_MS = 40


@dataclass(slots=True)
class Touches:
    """The pieces lifted during one ply, in order, and the obligations they created."""

    order: list[chess.Square] = field(default_factory=list)
    own: chess.Square | None = None  # first own piece touched that can move (4.3.1)
    opponent: chess.Square | None = None  # first opponent piece touched that can be captured (4.3.2)
    own_first: bool = True  # whether ``own`` was touched before ``opponent`` (4.3.3)
    castle_rook: chess.Square | None = None  # king touched first, then this castling rook (4.4.1 / 4.4.3)
    king_on_castling_square: chess.Square | None = None  # rook of the castling the king was released for
    adjusted: list[chess.Square] = field(default_factory=list)  # the last mover's pieces, before his press

    def touch(self, position: Position, sq: chess.Square, piece: chess.Piece | None = None) -> bool | None:
        """Record a lift of the piece on ``sq``; return whether it binds, or None if already touched.

        ``piece`` is what stands on ``sq`` in the position, where the caller has looked it up already.
        """
        if sq in self.order:
            return None
        board = position.board
        if piece is None:
            piece = board.piece_at(sq)
            if piece is None:
                return None
        self.order.append(sq)
        if piece.color == board.turn:
            if (
                piece.piece_type == chess.ROOK
                and self.castle_rook is None
                and board.castling_rights & chess.BB_SQUARES[sq]
                and self.own is not None
                and self.order[0] == self.own
                and self.own == board.king(board.turn)
            ):
                self.castle_rook = sq
            if self.own is None and position.can_move(sq):
                self.own = sq
                self.own_first = self.opponent is None
                return True
            return False
        if self.opponent is None and position.can_be_captured(sq):
            self.opponent = sq
            self.own_first = self.own is not None
            return True
        return False


@dataclass(frozen=True)
class Breach:
    """An obligation not met: the alert code, the article, and details for the arbiter."""

    code: AlertCode
    article: str
    detail: dict[str, Any]


def judge(position: Position, touches: Touches, move: chess.Move, lift_times: dict[int, int],
          place_times: dict[int, int] | None = None) -> list[Breach]:
    """Return the breaches of 4.3, 4.4 and 4.7.2 that ``move`` shows, given the ply's touches, the first lift on
    each square and the last placement on each (``place_times``)."""
    board = position.board
    castling = board.is_castling(move)
    breaches: list[Breach] = []
    if not (castling or touches.king_on_castling_square is not None or touches.castle_rook is not None
            or touches.opponent is not None or (touches.own is not None and touches.own != move.from_square)):
        return breaches  # nothing touched binds to anything but this move
    played = move.uci()
    names = [chess.square_name(sq) for sq in touches.order]

    if castling:
        rook_from, king_to, rook_to = castling_squares(board, move)
        king_t = lift_times.get(move.from_square)
        rook_t = lift_times.get(rook_from)
        placed = place_times or {}
        rook_down, king_down = placed.get(rook_to), placed.get(king_to)
        if king_t is not None and rook_t is not None and rook_t < king_t and (
                king_t - rook_t > ONE_SCAN_MS
                or (rook_down is not None and king_down is not None and rook_down < king_down)):
            # (lifted within one scan: the rook first only when it was also put down first, as a hand castling
            # rook first does; a king put down first was lifted first, the scan having read the rook's square first)
            breaches.append(Breach("castling_rook_first", "4.4.2", {
                "played": played, "rook": chess.square_name(rook_from), "touched": names,
            }))
            return breaches
        if (king_t is not None and rook_t is not None and abs(king_t - rook_t) <= ONE_SCAN_MS
                and set(touches.order) <= {move.from_square, rook_from}):
            # Both lifted in one scan's reading (a ChessLink status, a Chessnut scan, a DGT scan's field updates),
            # the king put down first: which the hand took first is not known (the order they were told in is the
            # scan's or the adapter's), so neither 4.4.2 nor 4.3.1 is breached.
            return breaches

    if touches.king_on_castling_square is not None:
        rook = touches.king_on_castling_square
        if not (castling and castling_squares(board, move)[0] == rook):
            breaches.append(Breach("castling_obligation", "4.7.2", {
                "played": played, "rook": chess.square_name(rook),
                "reason": "king released on its castling square; only castling on that side may follow",
            }))
            return breaches

    if touches.castle_rook is not None:
        rook = touches.castle_rook
        that_side = [m for m in board.generate_castling_moves()
                     if castling_squares(board, m)[0] == rook]
        if that_side:
            if move not in that_side:
                breaches.append(Breach("castling_obligation", "4.4.1", {
                    "played": played, "required": that_side[0].uci(), "touched": names,
                }))
        else:
            king_sq = board.king(board.turn)
            king_can_move = king_sq is not None and position.can_move(king_sq)
            if king_can_move and move.from_square != king_sq:
                breaches.append(Breach("castling_obligation", "4.4.3", {
                    "played": played, "required": "another king move", "touched": names,
                }))
        return breaches

    own, opp = touches.own, touches.opponent
    moved_own = own is not None and move.from_square == own
    captured_opp = opp is not None and captured_square(board, move) == opp
    if own is not None and opp is not None:
        combined = [m for m in position.moves_from(own) if captured_square(board, m) == opp]
        if combined:
            ok = moved_own and captured_opp
            required = f"capture {chess.square_name(opp)} with {chess.square_name(own)}"
        elif touches.own_first:
            ok = moved_own
            required = f"move {chess.square_name(own)}"
        else:
            ok = captured_opp
            required = f"capture {chess.square_name(opp)}"
        if not ok:
            # 4.3.3 when two pieces bind; when the own piece touched is the one moved, that touch was the move
            # itself and the opponent's piece alone binds (4.3.2).
            article = "4.3.3" if combined or not moved_own else "4.3.2"
            breaches.append(Breach("touch_move", article, {"played": played, "required": required,
                                                           "touched": names}))
    elif own is not None and not moved_own:
        breaches.append(Breach("touch_move", "4.3.1", {
            "played": played, "required": f"move {chess.square_name(own)}", "touched": names,
        }))
    elif opp is not None and not captured_opp:
        breaches.append(Breach("touch_move", "4.3.2", {
            "played": played, "required": f"capture {chess.square_name(opp)}", "touched": names,
        }))
    return breaches


def out_of_turn(position: Position, touches: Touches, move: chess.Move) -> list[chess.Square]:
    """Return the opponent's pieces lifted and put back that could not be captured (4.2.1, 6.2.5)."""
    board = position.board
    theirs = board.occupied_co[not board.turn]
    lifted = [sq for sq in touches.order if theirs & chess.BB_SQUARES[sq]]
    if not lifted:
        return lifted
    captured = captured_square(board, move)
    return [sq for sq in lifted if sq != captured and not position.can_be_captured(sq)]
