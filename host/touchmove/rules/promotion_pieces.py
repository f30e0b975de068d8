"""Promotion pieces: the piece a ``promote`` record chooses, the piece a board that knows its pieces names, and the
piece the board shows moving as another than the one assumed; and, on such boards, the pieces judged against the
position (:mod:`touchmove.rules.identity`).

:class:`PromotionPieces` is a collaborator of :class:`~touchmove.rules.engine.Engine`: it sets a promotion's piece
(4.4.4, 4.6: an occupancy board cannot see it, so a queen is assumed until something tells).
"""

from __future__ import annotations

import chess

from touchmove.records import Lift, Place, Record, Snapshot
from touchmove.rules.board_state import BoardState
from touchmove.rules.events import Alert, Event, GameStart, MoveAmended, MoveMade
from touchmove.rules.footprints import Position, fen_of
from touchmove.rules.identity import PieceWatch, new_piece_of
from touchmove.rules.outcome import game_over
from touchmove.rules.ply_writing import PlyWriting
from touchmove.rules.readings import promotion_under_way, replay_with

__all__ = ["PromotionPieces"]


class PromotionPieces:
    """Sets promotion pieces and judges named pieces (see the module documentation) in ``state``, the board's
    state; the move shown after a piece set is made by ``writing``."""

    def __init__(self, state: BoardState, writing: PlyWriting) -> None:
        self._state = state
        self._writing = writing


    def watch_pieces(self, record: Record) -> PieceWatch:
        """Note the pieces ``record`` names (a board that knows its pieces); return what the board named so far."""
        state = self._state
        pieces = state.pieces
        match record:
            case Place(sq=sq, piece=piece):
                pieces.place(sq, piece, record.t, state.plies)
            case Lift(sq=sq):
                pieces.lift(sq, record.t, state.plies)
            case Snapshot(pieces=placement) if placement is not None:
                pieces.snapshot(placement, record.t, state.plies)
        return pieces

    def named_promotion(self, sq: chess.Square, letter: str) -> None:
        """A piece named ``letter`` put on ``sq``: the new piece of a promotion under way, if it is one."""
        state = self._state
        if (letter.upper() not in ("P", "K") and chess.square_rank(sq) == (7 if letter.isupper() else 0)
                and letter.isupper() == (state.position.board.turn == chess.WHITE)
                and state.unseen.hypotheses is None and promotion_under_way(state)):
            state.chosen_piece = chess.Piece.from_symbol(letter).piece_type   # the new piece, named

    def judge_pieces(self, out: list[Event]) -> list[Event]:
        """Return ``out`` with what the board's pieces tell: a promotion whose new piece the board names is
        made with it, one whose pawn is being exchanged waits for the new piece (no ``promotion_unverified``);
        a position made or started with a piece on a square where the game has another is a
        ``board_mismatch`` naming them (7.4)."""
        state = self._state
        pieces = state.pieces
        if state.unseen.hypotheses is not None:
            return out           # each hypothesis (an engine of its own) judges its events
        judged: list[Event] = []
        for event in out:
            if isinstance(event, Alert) and event.code == "promotion_unverified":
                sq = chess.parse_square(str(event.detail["sq"]))
                white = chess.square_rank(sq) == 7
                letter = pieces.piece_on(sq)
                if not new_piece_of(letter, white):
                    # not the promoting side's piece (an answer's capture): the one it took, if the board named it;
                    # or the one it named there when the promotion was made (put down before its pawn was lifted,
                    # and taken since: the alert is judged once the records after it are in)
                    letter = pieces.promoted_on(sq, white, event.ply - 1)
                    if letter is None and new_piece_of(at_move := pieces.piece_at(sq, event.t), white):
                        letter = at_move
                if letter is not None:
                    judged += self.promote(event.t, chess.Piece.from_symbol(letter).piece_type)
                    continue
                if pieces.exchanging(sq) or pieces.piece_on(sq) == ("P" if white else "p"):
                    # the pawn is being exchanged, or still stands there named (put down again in the exchange):
                    # the new piece names itself (a promote record); a pawn left there is a board_mismatch
                    continue
            judged.append(event)
        for event in judged:
            if type(event) is MoveMade:
                # the lifts and placements after its landing were the next plies', reported before it was made
                pieces.restamp(event.t + 1, event.ply)
        if state.pending.match is None and any(isinstance(e, MoveMade | MoveAmended | GameStart) for e in judged):
            # (with a move shown and waiting out its settle time, the pieces are judged when it is made)
            under_way = state.occ != state.position.occ
            wrong = pieces.wrong(state.position.board, state.t - state.settle_ms,
                                 state.position.board.turn if under_way else None)
            if wrong:
                judged.append(state.alert(judged[-1].t, "board_mismatch", "7.4", state.ply_number, {
                    "pieces": wrong, "extra": [], "missing": []}))
        return judged

    def promote(self, t: int, piece: chess.PieceType) -> list[Event]:
        """A ``promote`` record: the piece chosen for the latest promotion of the game."""
        state = self._state
        if state.pending.match is not None and state.pending.match.move.promotion is not None:
            state.chosen_piece = piece  # chosen before the promotion was made: it is made with this piece
            return []
        if promotion_under_way(state):
            state.chosen_piece = piece  # the pawn is in the hand: the choice is for this promotion, not the last
            return []
        if not state.games or not state.line.promotions:
            return []
        number = max(state.line.promotions)
        original = state.games[-1].moves[number - 1]
        if original.promotion == piece:
            state.line.promotions[number] = True
            return []
        if state.line.promotions[number] and state.pieces.changes:
            # that promotion's piece was named by the board already: this choice is a new piece put down before
            # its pawn was lifted (the promotion to come), never a rewrite of one the board verified
            state.chosen_piece = piece
            return []
        return self._set_promotion(t, number, chess.Move(original.from_square, original.to_square, piece))

    def promotion_seen(self, t: int, number: int, move: chess.Move) -> list[Event]:
        """The promotion at ply ``number`` was ``move``, as the board shows the piece moving: set it, and make the
        move the board shows from there."""
        return self._set_promotion(t, number, move, confirmed=False) + self._writing.make_shown()

    def _set_promotion(self, t: int, number: int, move: chess.Move, confirmed: bool = True) -> list[Event]:
        """Replace the piece of the promotion at ply ``number``; ``confirmed`` by a record, or read from how the
        piece moved (then later moves may still correct it, always to a piece that fits every move since)."""
        state = self._state
        game = state.games[-1]
        board = replay_with(game, number, move)
        if board is None:
            return []
        before = game.board(number - 1)
        san = before.san_and_push(move)
        state.line.replace_promotion(number, move, confirmed)
        state.position = Position(board)
        out: list[Event] = [MoveAmended(game.number, t, number, move.uci(), san, fen_of(before))]
        # The game end (or its absence) rested on the piece assumed: judge the position again.
        ended = game_over(board)
        if ended is None and game.result != "*":
            out += state.resume(t)
        elif ended is not None and game.result == "*" and number == len(game.moves):
            out += self._writing.after_move(t, board)
        return out
