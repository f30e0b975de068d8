"""The hand model with the pieces it carries: what a board that senses pieces would see, change by change.

:func:`piece_timeline` plays a game with :class:`touchmove.sim.hands.Hands` and names the piece of every placement:
the piece the move leaves on that square for its last placement there in the move (the promoted piece on a
promotion; a piece slid onto its square before its own square is sensed empty); on the move's landing square
before that (the piece bouncing, or resting before an adjustment), the moving piece, but a lifted piece's contacts
bouncing as it leaves (within :data:`CHATTER_MS` of its lift); else the piece lifted from that square and not put
down (a bounce, a piece put back), else the piece lifted last (a piece slid over squares, a neighbour knocked by
a sleeve), but the moving piece on a square it slides across after its victim was lifted; a victim pushed aside
is the victim, also when it is sensed on its new square before its own empties. At the end of each move the board is
checked against the position: the names can then only differ from the game where the hand model's habits put a
piece on a square the move does not use.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import chess

from touchmove.records import Clock, Lift, Place, Record
from touchmove.sim import hands


@dataclass(frozen=True)
class Change:
    """A square's content changed at ``t`` (device ms): ``piece`` is a FEN letter, None when it empties."""

    t: int
    sq: chess.Square
    piece: str | None


@dataclass(frozen=True)
class ClockPress:
    """A clock press at ``t``: ``side`` pressed; ``remaining`` ms on its clock (None: unknown)."""

    t: int
    side: chess.Color
    remaining: int | None


Event = Change | ClockPress

#: A square filled again this soon (ms) after its lift is the lifted piece's contacts bouncing as it leaves
#: (:meth:`touchmove.sim.hands.Hands.lift`: 1-4 ms).
CHATTER_MS = 8
#: A piece slid onto its square is sensed there this long (ms) at most before its own square empties
#: (:meth:`touchmove.sim.hands.Hands.slide_onto`: 5-120 ms).
SLID_ONTO_MS = 130


def start_pieces(board: chess.Board) -> list[str | None]:
    """Return the 64 squares' contents of a position (FEN letters, None for empty; a1 = 0)."""
    return [(p.symbol() if (p := board.piece_at(sq)) else None) for sq in range(64)]


def piece_timeline(start: chess.Board, moves: list[chess.Move], rng: random.Random,
                   style: hands.Style | None = None, t: int = 1500,
                   habits: list[list[str]] | None = None) -> list[Event]:
    """Return the timed changes (with pieces) and clock presses of ``moves`` played from ``start`` by hands;
    ``habits``, if given, gets the habits each ply was played with (:attr:`touchmove.sim.hands.Hands.habits`)."""
    style = style or hands.Style(promote_record=False)
    player = hands.Hands(rng, style, t=t)
    board = start.copy()
    squares = start_pieces(board)
    events: list[Event] = []
    in_hand: list[tuple[str, chess.Square]] = []
    for move in moves:
        before = len(player.records)
        player.move(board, move)
        if habits is not None:
            habits.append(list(player.habits))
        after_board = board.copy()
        after_board.push(move)
        after = start_pieces(after_board)
        recs = player.records[before:]
        last_place = {r.sq: i for i, r in enumerate(recs) if isinstance(r, Place)}
        aside = _pushed_aside_to(recs, move) if "victim pushed aside" in player.habits else None
        pushed_from: chess.Square | None = None     # the victim's square, while it is sensed on both
        # the moving piece (castling's two pieces and promotions are named as before) and the squares it slides
        # across
        mover = None if board.is_castling(move) or move.promotion is not None else board.piece_at(move.from_square)
        across = chess.SquareSet(chess.between(move.from_square, move.to_square))
        lifted_at: dict[chess.Square, int] = {}     # each square's last lift in the move
        for i, rec in enumerate(recs):
            if isinstance(rec, Clock):
                events.append(ClockPress(rec.t, rec.side, rec.remaining))
            elif isinstance(rec, Lift):
                piece = squares[rec.sq]
                if piece is not None and rec.sq != pushed_from:
                    in_hand.append((piece, rec.sq))
                pushed_from = None if rec.sq == pushed_from else pushed_from
                squares[rec.sq] = None
                lifted_at[rec.sq] = rec.t
                events.append(Change(rec.t, rec.sq, None))
            elif isinstance(rec, Place):
                knocked_from = player.fallen.get(id(rec))
                if knocked_from is not None and any(sq == knocked_from for _, sq in in_hand):
                    # a piece the sleeve knocked onto this square: that piece (not one that just crossed it)
                    index = max(i for i, (_, sq) in enumerate(in_hand) if sq == knocked_from)
                    piece = in_hand.pop(index)[0]
                elif rec.sq == aside and squares[move.to_square] is not None:
                    # the victim pushed onto its neighbour square, sensed there before its own square empties
                    piece = squares[move.to_square]
                    pushed_from, aside = move.to_square, None
                elif mover is not None and (
                        (rec.sq == move.to_square and i != last_place[rec.sq]
                         and rec.t - lifted_at.get(rec.sq, -CHATTER_MS - 1) > CHATTER_MS
                         and (move.from_square in lifted_at or _slid_onto(recs, i, move)))
                        or (rec.sq in across and rec.sq != aside and move.from_square in lifted_at and bool(in_hand)
                            and in_hand[-1][1] == move.to_square)):
                    # the moving piece on its square before its last placement there (bouncing, or an adjustment
                    # follows), not the victim lifted from it nor a piece a sleeve knocked; or slid across a square
                    # after the victim was taken (not the victim pushed onto that square)
                    piece = mover.symbol()
                else:
                    piece = _placed(rec.sq, i == last_place[rec.sq], after, in_hand, move)
                squares[rec.sq] = piece
                events.append(Change(rec.t, rec.sq, piece))
        board = after_board
        in_hand = []                                  # the move is over: victims are off the board
        for sq in range(64):
            if squares[sq] is not None and after[sq] is not None and squares[sq] != after[sq]:
                squares[sq] = after[sq]                     # a habit named a piece wrongly: the game rules
    player.flush()
    # the clock press the flush wrote at the end
    seen = {(e.t, e.side) for e in events if isinstance(e, ClockPress)}
    for rec in player.records:
        if isinstance(rec, Clock) and (rec.t, rec.side) not in seen:
            events.append(ClockPress(rec.t, rec.side, rec.remaining))
    events.sort(key=lambda e: e.t)
    return events


def _slid_onto(recs: list[Record], i: int, move: chess.Move) -> bool:
    """Return whether placement ``recs[i]`` is the moving piece slid onto its square: the next change is its own
    square emptying a moment later (:meth:`touchmove.sim.hands.Hands.slide_onto`: 5-120 ms)."""
    later = next((r for r in recs[i + 1:] if isinstance(r, Lift | Place)), None)
    return isinstance(later, Lift) and later.sq == move.from_square and later.t - recs[i].t <= SLID_ONTO_MS


def _pushed_aside_to(recs: list[Record], move: chess.Move) -> chess.Square | None:
    """Return the square a victim pushed aside is put on (:meth:`touchmove.sim.hands.Hands.push_aside`): the
    move's first placement off its own two squares once the capturing piece is lifted (a piece adjusted before
    is put back on its own square)."""
    lifted = False
    for rec in recs:
        lifted = lifted or (isinstance(rec, Lift) and rec.sq == move.from_square)
        if lifted and isinstance(rec, Place) and rec.sq not in (move.from_square, move.to_square):
            return rec.sq
    return None


def _placed(sq: chess.Square, final: bool, after: list[str | None], in_hand: list[tuple[str, chess.Square]],
            move: chess.Move) -> str | None:
    """Return the piece put on ``sq`` (and take it from the hand)."""
    def take(piece: str) -> str:
        for i in range(len(in_hand) - 1, -1, -1):
            if in_hand[i][0] == piece:
                del in_hand[i]
                break
        return piece

    promoting = move.promotion is not None and sq == move.to_square
    if promoting and not final:
        pawn = next((p for p, _ in reversed(in_hand) if p in ("P", "p")), None)
        if pawn is not None:
            return take(pawn)
    if final and after[sq] is not None:
        piece = after[sq]
        assert piece is not None
        if promoting:
            take("P" if piece.isupper() else "p")
            return piece
        return take(piece)
    for i in range(len(in_hand) - 1, -1, -1):
        if in_hand[i][1] == sq:
            return take(in_hand[i][0])
    if in_hand:
        return take(in_hand[-1][0])
    return after[sq]
