"""The evidence of the ply being made: every lift and place since the last move, and the touches they made."""

from __future__ import annotations

from dataclasses import dataclass, field

import chess

from touchmove.rules.footprints import Position
from touchmove.rules.obligations import Touches

__all__ = ["PlyEvidence"]


@dataclass(slots=True)
class PlyEvidence:
    """What has happened on the board since the last move was made."""

    lifted: chess.Bitboard = 0
    #: A snapshot changed squares whose lifts were not seen (the ply's lifts are incomplete).
    lifts_unseen: bool = False
    #: A snapshot one square off was read as a lift or place, so changes before it may have been lost: the device
    #: time of the record before that snapshot.
    unsure_since: int | None = None
    held: chess.Bitboard = 0  # squares off the board together with another one (two pieces in hand)
    touches: Touches = field(default_factory=Touches)
    first_lift: dict[int, int] = field(default_factory=dict)  # the first lift of each square
    lifts: list[tuple[int, chess.Square]] = field(default_factory=list)  # every lift, in order
    last_lift: dict[int, int] = field(default_factory=dict)  # the last lift of each square
    last_place: dict[int, int] = field(default_factory=dict)  # the last place on each square
    adjusted: chess.Bitboard = 0  # squares last lifted by the last mover adjusting before his press (6.2.5)
    first_match: tuple[chess.Move, int] | None = None  # a matched move and when it first showed
    #: The board rested in the position of several plies ago, not yet read as a takeback: (plies kept, when it
    #: showed). A piece knocked off can leave the same occupancy; the next state at rest decides.
    earlier: tuple[int, int] | None = None
    #: Squares of the next mover's pieces lifted while the board showed a move made (his answer begun within the
    #: scan that showed it): their lifts are the next ply's, whenever they came.
    answer_begun: chess.Bitboard = 0

    def then(self, later: PlyEvidence) -> PlyEvidence:
        """Return this ply's lifts and places followed by ``later``'s (a move re-read over both)."""
        return PlyEvidence(lifted=self.lifted | later.lifted, lifts_unseen=self.lifts_unseen or later.lifts_unseen,
                           held=self.held, touches=self.touches, first_lift={**later.first_lift, **self.first_lift},
                           lifts=self.lifts + later.lifts, last_lift={**self.last_lift, **later.last_lift},
                           last_place={**self.last_place, **later.last_place}, adjusted=self.adjusted | later.adjusted)

    def lifted_since(self, t: int) -> chess.Bitboard:
        """Return the squares lifted after device time ``t``."""
        lifted = 0
        for at, sq in self.lifts:
            if at > t:
                lifted |= chess.BB_SQUARES[sq]
        return lifted

    def carry(self, earlier: PlyEvidence, since: int, position: Position) -> None:
        """Take the lifts and places of ``earlier`` from device time ``since`` on (a move under way from
        ``position``)."""
        for at, sq in earlier.lifts:
            if at >= since:
                self.lifted |= chess.BB_SQUARES[sq]
                self.first_lift.setdefault(sq, at)
                self.lifts.append((at, sq))
                self.last_lift[sq] = at
                self.touches.touch(position, sq)
        self.last_place.update({sq: at for sq, at in earlier.last_place.items() if at >= since})

    def carry_late(self, earlier: PlyEvidence, made_at: int, position: Position, at_once: chess.Bitboard = 0,
                   exchanged: chess.Bitboard = 0, begun: chess.Bitboard = 0, knocked: chess.Bitboard = 0) -> None:
        """Take the lifts of ``earlier`` after ``made_at``, the time its move showed (the opponent started before
        the settle time was over), those at that time of the ``at_once`` squares (reported in the scan that
        showed the move), and every lift of the ``begun`` squares (the answer begun before that scan), and its
        places after that time. A lift of an ``exchanged`` square (the promoted pawn taken off for the new piece,
        4.6) is no touch, nor one of a ``begun`` square reported before the move showed (out of turn, 4.2.1), nor
        one of a ``knocked`` square (a piece the sleeve of the hand that made the move knocked as it left)."""
        for at, sq in earlier.lifts:
            if at > made_at or (at == made_at and at_once & chess.BB_SQUARES[sq]) or begun & chess.BB_SQUARES[sq]:
                self.held |= earlier.held & chess.BB_SQUARES[sq]  # two pieces in hand (a Chess960 swap castling)
                self.lifted |= chess.BB_SQUARES[sq]
                self.first_lift.setdefault(sq, at)
                self.lifts.append((at, sq))
                self.last_lift[sq] = at
                if knocked & chess.BB_SQUARES[sq]:
                    if sq not in self.touches.adjusted:
                        self.touches.adjusted.append(sq)
                elif not exchanged & chess.BB_SQUARES[sq] and not (at < made_at and begun & chess.BB_SQUARES[sq]):
                    self.touches.touch(position, sq)
        self.last_place.update({sq: placed for sq, placed in earlier.last_place.items() if placed > made_at})
