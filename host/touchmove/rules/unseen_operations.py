"""The operations unseen play asks of an engine that write the game: plies recovered after lost changes (or given
by an arbiter's resync), the move that waits out its settle time, and play going on blind after every hypothesis
was dropped.

:class:`UnseenOperations` is a collaborator of :class:`~touchmove.rules.engine.Engine`, which applies through it
what :mod:`touchmove.rules.unseen_play` decides; what the board shows after them is read by the engine's
per-record path (given as ``read_board``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chess

from touchmove.rules.board_state import BoardState
from touchmove.rules.events import Event, MoveAmended, MoveMade, RecoveredMove
from touchmove.rules.footprints import Position, footprint
from touchmove.rules.phases import MISMATCH, OUT_OF_SYNC, OVER, PLAYING, UNDISPUTED
from touchmove.rules.ply_evidence import PlyEvidence
from touchmove.rules.ply_writing import PlyWriting

__all__ = ["UnseenOperations"]


class UnseenOperations:
    """Writes what unseen play decided (see the module documentation) in ``state``, the board's state, with
    ``writing`` (a move made, plies taken back); ``read_board`` reads what the board shows after a change at a
    time (the engine's per-record path)."""

    def __init__(self, state: BoardState, writing: PlyWriting, read_board: Callable[[int], list[Event]]) -> None:
        self._state = state
        self._writing = writing
        self._read_board = read_board

    def continue_blind(self, followed: BoardState, *, judge: bool) -> list[Event]:
        """Every hypothesis dropped: play on from the last sure position with the board of ``followed`` (the state
        of one of them), what it shows off the position lifted unseen; ``judge``: read what the board shows at
        once."""
        state = self._state
        state.occ, state.chatter, state.changed_at = followed.occ, followed.chatter, followed.changed_at
        state.t, state.received = max(state.t, followed.t), followed.received
        state.line.note_change(state.t, -1, False)
        state.evidence.lifted |= state.position.occ & ~state.occ
        state.evidence.lifts_unseen = True
        state.judge_at_rest = True
        if not judge:
            state.judge_at_rest = False
            return []
        return self._read_board(state.t)

    def make_pending_move(self) -> list[Event]:
        """Make the move the board shows and that waits out its settle time, if a game is played; return its
        events (none: no such move)."""
        state = self._state
        if state.phase is not PLAYING or state.pending.match is None:
            return []
        match, state.pending.match = state.pending.match, None
        state.judge_at_rest = False
        return self._writing.make(match, state.pending.since)

    def apply_resync(self, t: int, moves: Sequence[chess.Move]) -> list[Event]:
        """An arbiter's resync, checked: make ``moves`` from the last sure position (the arbiter vouches for it)."""
        state = self._state
        was_out = state.sync in OUT_OF_SYNC
        out = state.resume(t) if state.phase is OVER and moves else []
        state.enter(PLAYING)
        state.tell(UNDISPUTED)
        state.unseen.end_lost()
        state.pending.clear()
        state.line.unseen.recovered_plies = 0
        out += self.make_recovered(t, moves)
        if was_out and state.sync is UNDISPUTED:
            out.append(state.alert(t, "board_restored", "7.4", state.ply_number, {"by": "resync"}))
        return out


    def make_recovered(self, t: int, moves: Sequence[chess.Move], shown_at: Sequence[int] | None = None) -> list[Event]:
        """Make plies not seen being made (recovered, or from a resync); the board may show one more under way.
        ``shown_at``: when a board that names its pieces showed each ply's position, in turn (the plies were seen
        after all, read in an order no reading followed): moves made then, not recovered ones."""
        state = self._state
        out: list[Event] = []
        game = state.games[-1]
        earlier = state.evidence
        for i, move in enumerate(moves):
            position = state.position
            after = position.board.copy(stack=False)
            san = after.san_and_push(move)
            number = len(game.moves) + 1
            state.line.push(move, after)
            unseen = PlyEvidence(lifted=footprint(position.board, move).must_lift, lifts_unseen=True)
            state.start_ply(position.after(move, after), (position, unseen))
            if shown_at is not None:
                out.append(MoveMade(game.number, shown_at[i], number, move.uci(), san, state.position.fen()))
            else:
                out.append(RecoveredMove(game.number, t, number, move.uci(), san, state.position.fen()))
            if move.promotion is not None and shown_at is None:
                state.line.promotions[number] = False
                out.append(state.alert(t, "promotion_unverified", "4.4.4", number, {
                    "sq": chess.square_name(move.to_square), "assumed": "q",
                }))
            out += self._writing.after_move(t, after, san)
            if state.phase is OVER:
                break
        if moves and shown_at is not None and state.phase is not OVER:
            # seen after all: what was lifted after the last ply showed is the next ply's (its touches, 4.3), and
            # so is a piece of the side to move now lifted in the report that showed it (his answer begun)
            board, at = state.position.board, shown_at[-1]
            at_once = 0
            for lifted_at, sq in earlier.lifts:
                if lifted_at == at and board.color_at(sq) == board.turn:
                    at_once |= chess.BB_SQUARES[sq]
            state.evidence.carry_late(earlier, at, state.position, at_once)
        if moves:
            state.line.presses.pressed = False
            state.line.unseen.unseen_since = t
            state.line.presses.answered = None
        state.exchange_sq = None
        restored = state.sync is MISMATCH
        state.tell(UNDISPUTED)
        state.unseen.end_lost()
        if restored:
            out.append(state.alert(t, "board_restored", "7.4", state.ply_number, {"by": "recovered plies"}))
        if state.phase is PLAYING and state.occ != state.position.occ:
            # One more move under way: its lifts were not seen.
            state.evidence.lifted = state.position.occ & ~state.occ
            state.evidence.lifts_unseen = True
            state.judge_at_rest = True
            out += self._read_board(t)
        return out

    def reorder_plies(self, t: int, first: int, order: Sequence[chess.Move]) -> list[Event]:
        """Put plies ``first`` .. ``first + len(order) - 1`` in the order ``order``: the same position after them
        (plies recovered unseen, in the order the bridge had published). Return ``move_amended`` for every ply from
        the first that changes to the game's last (the later ones the same moves, told again: a consumer that keeps
        later plies while they stay legal may have dropped them at the first amendment)."""
        state = self._state
        game = state.games[-1]
        line = state.line
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
        if board.fen() != state.position.fen():
            state.position = Position(board.copy(stack=False))    # (its clocks' counts: the placement is the same)
        previous, last = state.previous, len(game.moves)
        if previous is not None and before < last - 1 <= before + len(order):
            state.previous = (Position(game.board(last - 1)), previous[1])     # the position before the last ply
        return out
