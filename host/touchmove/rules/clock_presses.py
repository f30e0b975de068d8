"""What a clock press means for the clocks and for FIDE 7.5: the time it records, and a press without a legal
move (``illegal_move``).

:class:`ClockPresses` is a collaborator of :class:`~touchmove.rules.engine.Engine`: it writes a press once the engine
has made (or not) the move the press completes (the engine's ``_clock``).
"""

from __future__ import annotations

from touchmove.records import Clock
from touchmove.rules.board_state import BoardState
from touchmove.rules.events import ClockPress, Event
from touchmove.rules.phases import OUT_OF_SYNC, READING, UNDISPUTED
from touchmove.rules.ply_writing import PlyWriting

__all__ = ["ClockPresses"]


class ClockPresses:
    """Records clock presses (see the module documentation) in ``state``, the board's state; a press against a
    board that contradicts the game has ``writing`` re-read the last plies first."""

    def __init__(self, state: BoardState, writing: PlyWriting) -> None:
        self._state = state
        self._writing = writing

    def press(self, record: Clock, t: int) -> list[Event]:
        """Return the events of the press ``record`` at ``t``, its move made or not: its time for the ply it ends
        (or for the ply before, when the answer came before it), or ``illegal_move`` (7.5.1, 7.5.3)."""
        state = self._state
        side = record.side
        game = state.games[-1]
        board = state.position.board
        presses = state.line.presses
        if (board.turn == side and presses.answered is not None and presses.answered_press is None
                and len(game.moves) >= 2):
            # The press of the ply before the last: the answer came before it (bullet).
            presses.answered_press = t
            game.clocks[-2] = record.remaining
            return [ClockPress(game.number, t, len(game.moves) - 1, "white" if side else "black", record.remaining)]
        if board.turn != side and game.moves and not presses.pressed:
            presses.pressed = True
            presses.pressed_at = t
            game.clocks[-1] = record.remaining
            return [ClockPress(game.number, t, len(game.moves), "white" if side else "black", record.remaining)]
        if state.sync in OUT_OF_SYNC or state.evidence.lifts_unseen or state.line.unseen.unseen_since is not None:
            # The board was out of sync before this press (changes lost, or a mismatch already raised): the game
            # position may be behind the board, a press proves nothing.
            return []
        if board.turn != side or state.phase not in READING or record.late_ms:
            # (the move made may have ended the game; a press read late may come before the board's report of
            # the move it ends: no 7.5 on it)
            return []
        # A position no legal move can continue is an illegal move completed; the game position, or a move still in
        # progress (a piece in the hand), is a press without a move.
        shown = state.occ != state.position.occ and not state.position.continuable(state.occ)
        mismatch: list[Event] = []
        if shown and state.sync is UNDISPUTED:
            reread = self._writing.reread(t)
            if reread:
                return reread + self.press(record, t)  # the press judged again on the plies re-read
            mismatch = state.mismatch_alert(t, force=True)
        if state.line.unseen.recovered_plies:
            # The game rests on plies recovered after lost changes: the board may be right and a recovered ply
            # wrong (another piece moved, or captured) rather than this press illegal, until a resync.
            return mismatch
        presses.illegal[side] += 1
        count = presses.illegal[side]
        detail: dict[str, object] = {"side": "white" if side else "black", "count": count}
        if shown:
            article = "7.5.1"
            detail["reason"] = "clock pressed after a move that is not legal"
        else:
            article = "7.5.3"
            detail["reason"] = "clock pressed without a move"
        if count >= 2:
            detail["note"] = "second completed illegal move by this player (7.5.5)"
        return [*mismatch, state.alert(t, "illegal_move", article, state.ply_number, detail)]
