"""The operations unseen play asks of an engine that write the game: plies recovered after lost changes (or given
by an arbiter's resync), the move that waits out its settle time, and play going on blind after every hypothesis
was dropped.

:class:`UnseenOperations` is the part of :class:`~touchmove.rules.engine.Engine` that
:mod:`touchmove.rules.unseen_play` calls through :class:`~touchmove.rules.unseen_play.EngineInterface`; what the
board shows after them is read by the engine's per-record path (:meth:`UnseenOperations._after_change`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import chess

from touchmove.rules.events import Event, MoveAmended, RecoveredMove
from touchmove.rules.footprints import Position, footprint
from touchmove.rules.phases import MISMATCH, OUT_OF_SYNC, OVER, PLAYING, UNDISPUTED
from touchmove.rules.ply_evidence import PlyEvidence
from touchmove.rules.ply_writing import PlyWriting

__all__ = ["UnseenOperations"]


class UnseenOperations(PlyWriting):
    """Writes what unseen play decided (see the module documentation)."""

    def _after_change(self, t: int) -> list[Event]:
        """Read what the board shows after a change (the engine's per-record path)."""
        raise NotImplementedError

    def continue_blind(self, line: Self, *, judge: bool) -> list[Event]:
        """Every hypothesis dropped: play on from the last sure position with the board of ``line`` (one of them),
        what it shows off the position lifted unseen; ``judge``: read what the board shows at once."""
        self._occ, self._chatter, self._changed_at = line._occ, line._chatter, line._changed_at
        self._t, self._received = max(self._t, line._t), line._received
        self._line.note_change(self._t, -1, False)
        self._evidence.lifted |= self._position.occ & ~self._occ
        self._evidence.lifts_unseen = True
        self._judge_at_rest = True
        if not judge:
            self._judge_at_rest = False
            return []
        return self._after_change(self._t)

    def make_pending_move(self) -> list[Event]:
        """Make the move the board shows and that waits out its settle time, if a game is played; return its
        events (none: no such move)."""
        if self._phase is not PLAYING or self._pending.match is None:
            return []
        match, self._pending.match = self._pending.match, None
        self._judge_at_rest = False
        return self._make(match, self._pending.since)

    def apply_resync(self, t: int, moves: Sequence[chess.Move]) -> list[Event]:
        """An arbiter's resync, checked: make ``moves`` from the last sure position (the arbiter vouches for it)."""
        was_out = self._sync in OUT_OF_SYNC
        out = self.resume(t) if self._phase is OVER and moves else []
        self._enter(PLAYING)
        self._tell(UNDISPUTED)
        self._unseen.end_lost()
        self._pending.clear()
        self._line.unseen.recovered_plies = 0
        out += self.make_recovered(t, moves)
        if was_out and self._sync is UNDISPUTED:
            out.append(self.alert(t, "board_restored", "7.4", self.ply_number, {"by": "resync"}))
        return out


    def make_recovered(self, t: int, moves: Sequence[chess.Move]) -> list[Event]:
        """Make plies not seen being made (recovered, or from a resync); the board may show one more under way."""
        out: list[Event] = []
        game = self._games[-1]
        for move in moves:
            position = self._position
            after = position.board.copy(stack=False)
            san = after.san_and_push(move)
            number = len(game.moves) + 1
            self._line.push(move, after)
            unseen = PlyEvidence(lifted=footprint(position.board, move).must_lift, lifts_unseen=True)
            self._start_ply(position.after(move, after), (position, unseen))
            out.append(RecoveredMove(game.number, t, number, move.uci(), san, self._position.fen()))
            if move.promotion is not None:
                self._line.promotions[number] = False
                out.append(self.alert(t, "promotion_unverified", "4.4.4", number, {
                    "sq": chess.square_name(move.to_square), "assumed": "q",
                }))
            out += self._after_move(t, after, san)
            if self._phase is OVER:
                break
        if moves:
            self._line.presses.pressed = False
            self._line.unseen.unseen_since = t
            self._line.presses.answered = None
        self._exchange_sq = None
        restored = self._sync is MISMATCH
        self._tell(UNDISPUTED)
        self._unseen.end_lost()
        if restored:
            out.append(self.alert(t, "board_restored", "7.4", self.ply_number, {"by": "recovered plies"}))
        if self._phase is PLAYING and self._occ != self._position.occ:
            # One more move under way: its lifts were not seen.
            self._evidence.lifted = self._position.occ & ~self._occ
            self._evidence.lifts_unseen = True
            self._judge_at_rest = True
            out += self._after_change(t)
        return out

    def reorder_plies(self, t: int, first: int, order: Sequence[chess.Move]) -> list[Event]:
        """Put plies ``first`` .. ``first + len(order) - 1`` in the order ``order``: the same position after them
        (plies recovered unseen, in the order the bridge had published). Return ``move_amended`` for every ply from
        the first that changes to the game's last (the later ones the same moves, told again: a consumer that keeps
        later plies while they stay legal may have dropped them at the first amendment)."""
        game = self._games[-1]
        line = self._line
        before = first - 1
        old = game.moves[before:before + len(order)]
        known = {move: line.promotions.get(first + i, False) for i, move in enumerate(old) if move.promotion}
        changed = next(i for i, (a, b) in enumerate(zip(old, order, strict=True)) if a != b)
        board = game.board(before)
        out: list[Event] = []
        for number in range(first, len(game.moves) + 1):
            index = number - first
            if index < len(order):
                game.moves[number - 1] = order[index]
                line.promotions.pop(number, None)
                if order[index].promotion is not None:
                    line.promotions[number] = known.get(order[index], False)
            move = game.moves[number - 1]
            san = board.san_and_push(move)
            line.occupancies[number] = board.occupied
            if index >= changed:
                out.append(MoveAmended(game.number, t, number, move.uci(), san, board.fen()))
        line.repetitions.rebuild(game.board(0), game.moves)
        if board.fen() != self._position.fen():
            self._position = Position(board.copy(stack=False))    # (its clocks' counts: the placement is the same)
        previous, last = self._previous, len(game.moves)
        if previous is not None and before < last - 1 <= before + len(order):
            self._previous = (Position(game.board(last - 1)), previous[1])     # the position before the last ply
        return out
