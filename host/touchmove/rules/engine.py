"""The engine: one board's records in, its games as events out.

How a ply is decided (FIDE 4.7, for a board that sees only occupancy):

* Every square change passes the chatter filter first; what survives is a lift or a place with its time.
* A move is *matched* when the occupancy equals what one legal move leaves AND the lifts since the last move
  prove it (from-square lifted; a capture's victim square lifted; castling's king and rook both lifted).
* A matched move is *made* once the board has rested in that state for the settle time (a piece resting for
  less was passing through: a slide or a bounce), or at once when the mover presses the clock.
* A made move that the board then contradicts is re-explained from the position before it: rook-first castling
  becomes castling, a piece released and moved on is recorded on its final square; both are amendments.
* When the board rests in a state no legal move can continue, ``board_mismatch``; play resumes when the board
  shows the game position, a legal move from it, or an earlier position of the game (a takeback).

This module holds the wiring (the engine holds a state and the collaborators that write it, each given what it
needs), the per-record path and the application of decisions; the state and its transitions are in
:mod:`touchmove.rules.board_state`, the plies written in :mod:`touchmove.rules.ply_writing`, promotion pieces in
:mod:`touchmove.rules.promotion_pieces`, what a clock press records in :mod:`touchmove.rules.clock_presses`, the
re-readings of a board at rest in :mod:`touchmove.rules.at_rest` (their order) and :mod:`touchmove.rules.readings`,
play not seen made in :mod:`touchmove.rules.unseen_play` (its decisions, and what it writes:
:mod:`touchmove.rules.unseen_operations`). A map of it all: docs/engine-internals.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self

import chess

from touchmove.records import (
    Clock,
    Lift,
    Other,
    Place,
    Promote,
    Published,
    Record,
    Result,
    Resync,
    Setup,
    Snapshot,
    TakebackRequest,
)
from touchmove.rules.at_once import AT_ONCE, AmendLast, RestoreTouchdown
from touchmove.rules.at_rest import (
    AT_REST,
    Amend,
    CaptureOnTouchdown,
    Decision,
    MakeAnswerBegun,
    MakeInterrupted,
    MakeKnocked,
    MakeShown,
    RecoverAgain,
    Reopen,
    SearchLost,
    SetPromotion,
    TakeBack,
    TakeBackProven,
    UndoAnswer,
    Wait,
)
from touchmove.rules.board_state import (
    DEFAULT_MISMATCH_MS,
    DEFAULT_SETTLE_MS,
    START_OCCUPANCY,
    BoardState,
    EngineState,
)
from touchmove.rules.chatter import DEFAULT_CHATTER_MS
from touchmove.rules.clock_presses import ClockPresses
from touchmove.rules.events import (
    Alert,
    AlertCode,
    Event,
    GameResumed,
    MoveAmended,
    Touch,
    TouchSide,
)
from touchmove.rules.footprints import Footprint, Position
from touchmove.rules.game_line import Declared, GameLine
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.identity import PieceChange, under_way
from touchmove.rules.pending import (
    CASTLING_STEP_HOLD_MS,
    KNOCK_HOLD_MS,
    KNOCK_WINDOW_MS,
    SLIDE_ON_HOLD_MS,
    HeldAnswer,
    InterruptedMove,
    castling_step,
    knock_lift,
    knocked_answer,
    knocked_by_slide,
    sliding_in,
    victim_ahead,
)
from touchmove.rules.phases import (
    CLEARED,
    CLEARED_SQUARES,
    EXCUSED,
    LOST,
    NEW,
    OVER,
    PLAYING,
    UNDISPUTED,
    Phase,
    Sync,
)
from touchmove.rules.phases import OUT_OF_SYNC as _OUT_OF_SYNC
from touchmove.rules.phases import READING as _READING
from touchmove.rules.ply_writing import PlyWriting
from touchmove.rules.promotion_pieces import PromotionPieces
from touchmove.rules.readings import (
    amendment,
    answer_undone,
    capture_swapped_unseen,
    knock_hold_until,
    pending_double_step_stood_aside,
    promotion_seen,
    pushed_capture,
)
from touchmove.rules.unseen_operations import UnseenOperations
from touchmove.rules.unseen_play import (
    AdoptLine,
    ApplyResync,
    ContinueBlind,
    DeclareEnd,
    EngineInterface,
    FollowBoard,
    ReorderPlies,
    ResumeGame,
    declared_as,
    declared_event,
)

__all__ = ["DEFAULT_SETTLE_MS", "Engine", "EngineState", "GameRecord"]

#: Declared results after which the board's moves are still read (one made withdraws the result).
_READ_ON = (Declared.READ_ON, Declared.BOARD_SHOWN, Declared.BOARD_GONE)

class Engine:
    """Turns one board's records into events (see the module documentation): a :class:`BoardState` and its
    collaborators, :class:`PlyWriting`, :class:`ClockPresses`, :class:`PromotionPieces` and
    :class:`UnseenOperations`.

    ``fen`` and ``chess960`` give the first game's start (standard by default); later games start when the
    board shows the standard start occupancy after a game, or from a ``setup`` record.
    """

    def __init__(
        self,
        *,
        fen: str | None = None,
        chess960: bool = False,
        settle_ms: int = DEFAULT_SETTLE_MS,
        chatter_ms: int = DEFAULT_CHATTER_MS,
        mismatch_ms: int = DEFAULT_MISMATCH_MS,
    ) -> None:
        self._wire(BoardState(fen=fen, chess960=chess960, settle_ms=settle_ms, chatter_ms=chatter_ms,
                              mismatch_ms=mismatch_ms))

    def _wire(self, state: BoardState) -> None:
        """Hold ``state``, the board's state, and the collaborators that write it."""
        self._state = state
        self._writing = PlyWriting(state)
        self._presses = ClockPresses(state, self._writing)
        self._promotions = PromotionPieces(state, self._writing)
        self._unseen_writing = UnseenOperations(state, self._writing, self._after_change)

    # ----------------------------------------------------------------------------------------------------------
    # public API

    def feed(self, record: Record) -> list[Event]:
        """Return the events caused by one record (time first advances to ``record.t``); a board that names its
        pieces has them judged once the position is settled (:meth:`PromotionPieces.judge_pieces`)."""
        state = self._state
        out = self._feed(record)
        pieces = state.pieces
        if not pieces.letters:
            return out      # a board that does not name its pieces
        if isinstance(record, Snapshot):
            pieces.restamp(record.t, state.plies)   # what it showed changed: the plies read from it
        elif isinstance(record, Place) and record.piece is not None:
            self._promotions.named_promotion(record.sq, record.piece)
        return self._promotions.judge_pieces(out)

    def _feed(self, record: Record) -> list[Event]:
        state = self._state
        if state.unseen.hypotheses is not None:
            followed = self._follow_record(record)
            if followed is not None:
                self._promotions.watch_pieces(record)
                return followed
        t = record.t if record.t > state.t else state.t
        out = self._tick(t)
        # The pieces the record names are noted once the board at rest until its time has been judged (the
        # hypotheses the time passed opened note them in their own feed).
        self._promotions.watch_pieces(record)
        if state.unseen.hypotheses is not None:
            # The time passed opened hypotheses (lost changes, several explanations): the record is theirs.
            followed = self._follow_record(record)
            if followed is not None:
                return out + followed
        if state.phase is NEW and not isinstance(record, Published):
            out += state.start_first(record, t)
        match record:
            case Lift(sq=sq):
                for change in state.chatter.push(t, sq, False):
                    out += self._change(*change)
            case Place(sq=sq):
                state.reports_changes = True
                for change in state.chatter.push(t, sq, True):
                    out += self._change(*change)
                if state.chatter.flicks:
                    self._note_flicks()     # (only a place ends a flick)
            case Snapshot(occ=occ, type=kind):
                out += self._snapshot(t, occ, heartbeat=kind == "heartbeat")
            case Clock():
                out += self._clock(record)
            case Promote(piece=piece):
                out += self._promotions.promote(t, piece)
            case Setup(fen=fen, chess960=chess960):
                state.setup = (chess.Board(fen, chess960=chess960).fen(), chess960)
                out += state.try_new_game(t)
            case TakebackRequest(ply=ply):
                out += self._writing.take_back_to(t, ply - 1)
            case Resync():
                out += self._resync(t, record)
            case Result():
                out += self._declare(t, record)
            case Published():
                reorder = state.unseen.published(self, record)
                if reorder is not None:
                    out += self._reorder(t, reorder)
            case Other():
                pass
        state.t = state.received = t
        return out

    def advance(self, t: int) -> list[Event]:
        """Return the events due by device time ``t`` when no record has come (settled moves, mismatches)."""
        state = self._state
        out = self._advance(t)
        return self._promotions.judge_pieces(out) if state.pieces.letters else out

    def _advance(self, t: int) -> list[Event]:
        state = self._state
        if state.unseen.hypotheses is not None:
            return self._follow(lambda engine: engine.advance(t), t)
        t = max(t, state.t)
        out = self._tick(t)
        state.t = t
        return out

    def next_deadline(self) -> int | None:
        """Return the device time at which :meth:`advance` may have events to give, or None."""
        state = self._state
        if state.unseen.hypotheses is not None:
            return state.unseen.next_deadline()
        deadlines = [d for d in (state.chatter.next_deadline(), self._decision_deadline()) if d is not None]
        return min(deadlines) if deadlines else None

    def finish(self) -> list[Event]:
        """Return the events still pending at the end of the input (everything counts as settled)."""
        state = self._state
        if state.unseen.hypotheses is not None:
            return self._follow(lambda engine: engine.finish(), state.t)
        out = self.flush_chatter()
        deadline = self._decision_deadline()
        while deadline is not None:
            out += self.advance(deadline)
            next_deadline = self._decision_deadline()
            if next_deadline is not None and next_deadline <= deadline:
                break
            deadline = next_deadline
        return out

    def decide_by(self, t: int) -> list[Event]:
        """Take the decisions due by device time ``t`` (a step given to the hypotheses)."""
        return self._decide(t)

    def apply_change(self, t: int, sq: chess.Square, occupied: bool) -> list[Event]:
        """Take one square change released by the chatter filter (a step given to the hypotheses)."""
        return self._change(t, sq, occupied)

    # ----------------------------------------------------------------------------------------------------------
    # views of the state (read-only: what the bridge, the publishers and unseen play see)

    @property
    def settle_ms(self) -> int:
        """How long a move must rest to be made (ms)."""
        return self._state.settle_ms

    @property
    def mismatch_ms(self) -> int:
        """How long the board must rest off the position before ``board_mismatch`` (ms)."""
        return self._state.mismatch_ms

    @property
    def games(self) -> list[GameRecord]:
        """Return every game seen so far, the current one last."""
        return list(self._state.games)

    def state(self) -> EngineState:
        """Return the board's current state for publishing."""
        state = self._state
        game = state.games[-1] if state.games else None
        return EngineState(
            game=game.number if game else 0,
            ply=len(game.moves) if game else 0,
            fen=state.position.fen(),
            last_move=game.moves[-1].uci() if game and game.moves else None,
            in_sync=state.sync not in _OUT_OF_SYNC and state.occ == state.position.occ,
            occupancy=state.occ,
            game_over=state.phase is OVER,
        )

    @property
    def occupancy(self) -> chess.Bitboard:
        """The occupancy the board shows (the chatter filter's held changes not included)."""
        return self._state.occ

    @property
    def pieces_shown(self) -> dict[chess.Square, str] | None:
        """The board's whole placement when it names its pieces (DGT, ChessLink, Chessnut), else None."""
        return self._state.pieces_shown

    def pieces_placed_at(self) -> dict[chess.Square, int]:
        """When the board put down each piece it names (host ms; a snapshot's pieces: long before)."""
        return self._state.pieces_placed_at()

    def pieces_changes(self) -> Sequence[PieceChange]:
        """The last lifts and placements of a board that names its pieces, oldest first (none on other boards)."""
        return self._state.pieces_changes()

    @property
    def position(self) -> Position:
        """The game position (after the last ply made)."""
        return self._state.position

    @property
    def game(self) -> GameRecord | None:
        """The current game, or None before the first."""
        return self._state.game

    @property
    def current_game(self) -> GameRecord:
        """The current game (there is one)."""
        return self._state.current_game

    @property
    def line(self) -> GameLine:
        """The current game's line and what is kept beside it."""
        return self._state.line

    @property
    def plies(self) -> int:
        """How many plies the current game has (0 before the first game)."""
        return self._state.plies

    @property
    def now(self) -> int:
        """The device time reached (by a record or by :meth:`advance`)."""
        return self._state.t

    @property
    def received(self) -> int:
        """The device time of the last record fed."""
        return self._state.received

    @property
    def phase(self) -> Phase:
        """Where the board is in its games."""
        return self._state.phase

    @property
    def sync(self) -> Sync:
        """What the arbiter was told about the board and the game position."""
        return self._state.sync

    @property
    def game_number(self) -> int:
        """The current game's number (0 before the first)."""
        return self._state.game_number

    @property
    def ply_number(self) -> int:
        """The ply being played now (1 for the first move of a game)."""
        return self._state.ply_number

    # ----------------------------------------------------------------------------------------------------------
    # what unseen play does to the engine

    def fork(self) -> Self:
        """Return a copy of this engine that follows one hypothesis: its state forked
        (:meth:`~touchmove.rules.board_state.BoardState.fork`), its collaborators its own."""
        child: Self = type(self).__new__(type(self))
        child._wire(self._state.fork())
        return child

    def contradicted(self) -> bool:
        """Return whether the board, at rest, shows what this game cannot go on to (a hypothesis ruled out)."""
        return self._state.contradicted()

    def rule_out(self) -> None:
        """This engine follows a hypothesis the board contradicts: it is out of sync (and dropped)."""
        self._state.rule_out()

    def mark_lost(self) -> None:
        """Changes were lost and no plies explain the board yet: nothing is read as a move until they do."""
        self._state.mark_lost()

    def read_moves(self) -> None:
        """Read moves again (many squares off after lost changes are plies lost, not the board cleared)."""
        self._state.read_moves()

    def take_back_to(self, t: int, keep: int) -> list[Event]:
        """Remove plies after the first ``keep``: the board (or an operator) went back to that position."""
        return self._writing.take_back_to(t, keep)

    def make_recovered(self, t: int, moves: Sequence[chess.Move], shown_at: Sequence[int] | None = None) -> list[Event]:
        """Make plies not seen being made (recovered, or from a resync; ``shown_at``: each ply's position shown by
        the pieces, in turn, when it was)."""
        return self._unseen_writing.make_recovered(t, moves, shown_at)

    def alert(self, t: int, code: AlertCode, article: str, ply: int, detail: dict[str, object]) -> Alert:
        """Return an alert of the current game."""
        return self._state.alert(t, code, article, ply, detail)

    # ----------------------------------------------------------------------------------------------------------
    # time

    def flush_chatter(self) -> list[Event]:
        """Take every held square change as certain now (end of input, a snapshot, a clock press)."""
        state = self._state
        out: list[Event] = []
        for change in state.chatter.flush():
            out += self._change(*change)
        return out

    def _move_deadline(self) -> int:
        """Return when the pending move is made if the board rests: the settle time after the last change, and
        :data:`~touchmove.rules.pending.CASTLING_STEP_HOLD_MS` more for a castling step (the king or the rook slid
        on through it, castling); later while a knocked piece may be put back. (A victim's lift ahead of the move's
        piece interrupts the match: :meth:`_at_rest_deadline` holds that.)"""
        state = self._state
        deadline = state.changed_at + state.settle_ms
        match = state.pending.match
        if match is None:
            return deadline
        board = state.position.board
        if castling_step(board, match.move):
            deadline += CASTLING_STEP_HOLD_MS
        lifted_at = state.evidence.first_lift.get(match.move.from_square)
        if knocked_answer(board, self._last_move(), state.line.reached[-1], match.move, lifted_at):
            assert lifted_at is not None
            deadline = max(deadline, lifted_at + KNOCK_HOLD_MS)  # a piece knocked off may be put back
        return deadline

    def _last_move(self) -> chess.Move | None:
        """Return the last move of the game on (None: none yet)."""
        game = self._state.game
        return game.moves[-1] if game is not None and game.moves else None

    def _at_rest_deadline(self) -> int:
        """Return when the board at rest is judged: the settle time after the last change, or later while the move
        a lift interrupted may still slide on to that lifted piece, its victim taken off first (``victim_ahead``)."""
        state = self._state
        deadline = state.changed_at + state.settle_ms
        interrupted = state.pending.interrupted
        if interrupted is not None and not interrupted.moved_on:
            victim_off = victim_ahead(state.position.board, interrupted.footprint.move, state.evidence.first_lift,
                                      state.occ)
            if victim_off is not None:
                deadline = max(deadline, victim_off + SLIDE_ON_HOLD_MS)
        return deadline

    def _decision_deadline(self) -> int | None:
        state = self._state
        if state.pending.match is not None:
            return self._move_deadline()
        if state.judge_at_rest:
            return self._at_rest_deadline()
        if state.phase in _READING and state.sync is UNDISPUTED and state.occ != state.position.occ:
            return self._mismatch_deadline()
        return None

    def _mismatch_deadline(self) -> int:
        """Return when a board resting off the game position is a ``board_mismatch``: the mismatch time after the
        last change, or later while a piece the last move's hand knocked off may still be put back."""
        state = self._state
        return max(state.changed_at + state.mismatch_ms, knock_hold_until(state) or 0)

    def _tick(self, t: int) -> list[Event]:
        state = self._state
        released = state.chatter.release(t)
        if not released and t < state.changed_at + state.settle_ms and state.unseen.lost is None:
            return []  # nothing due (most records)
        out: list[Event] = []
        for at, sq, occupied in released:
            if state.unseen.hypotheses is not None:
                # An earlier change opened hypotheses: the changes after it are theirs.
                out += self._follow(_held_change(at, sq, occupied), at)
                continue
            out += self._decide(at)
            out += self._change(at, sq, occupied)
        if state.unseen.hypotheses is not None:
            return out + self._follow(lambda engine: engine.decide_by(t), t)
        out += self._decide(t)
        return out

    def _decide(self, t: int) -> list[Event]:
        """Take the decisions due by ``t``: made moves, unexplained states, mismatches."""
        state = self._state
        out: list[Event] = []
        if state.phase is NEW or t < state.changed_at + state.settle_ms:
            return out
        if state.pending.match is not None:
            deadline = self._move_deadline()
            if t < deadline:
                return out  # a castling step held a moment longer
            state.judge_at_rest = False
            out += self._writing.make(*state.pending.resolve(state.position, state.occ, pressed=False))
            state.line.unseen.settled_by_time = (len(state.games[-1].moves), deadline)
        elif state.judge_at_rest:
            if t < self._at_rest_deadline():
                return out  # a line piece may still slide on to its victim
            state.judge_at_rest = False
            out += self._unexplained(state.changed_at)
        if (
            state.sync is UNDISPUTED
            and state.phase is not OVER
            and state.occ != state.position.occ
            and state.pending.match is None
            and t >= self._mismatch_deadline()
        ):
            out += self._writing.report_mismatch(state.changed_at, force=False)
        return out

    def _change(self, t: int, sq: chess.Square, occupied: bool) -> list[Event]:
        state = self._state
        bb = chess.BB_SQUARES[sq]
        if bool(state.occ & bb) == occupied:
            return []  # a repeated report: nothing changed
        out: list[Event] = [] if state.pending.held is None else self._release_held(t)
        state.line.changes.append((t, sq, occupied))     # (GameLine.note_change, inlined: every change passes)
        state.occ ^= bb
        state.changed_at = t
        state.judge_at_rest = True
        if state.sync is EXCUSED:
            state.tell(UNDISPUTED)  # a new state of the board: judged again when it rests
        ply = state.evidence
        match = state.pending.match
        if match is not None and state.pending.interrupted is None:
            # A change while the matched move waits out its settle time: the mover's piece sliding on, or the
            # opponent starting already (fast play without clocks). Keep the move as a checkpoint.
            moved_on = not occupied and bool(match.placed & bb)
            # Its piece had rested there for the settle time before the board showed the move (a knocked piece
            # missing meanwhile).
            released = moved_on and state.pending.since - ply.last_place.get(sq, state.pending.since) >= state.settle_ms
            if released and state.pieces.letters:
                # a board that names its pieces: only the mover's piece rested there (not a victim stood aside)
                letter = state.pieces.last.get(sq)
                released = letter is None or letter.isupper() == (state.position.board.turn == chess.WHITE)
            state.pending.interrupted = InterruptedMove(match, state.pending.since, moved_on, released=released)
        if occupied:
            ply.last_place[sq] = t
        else:
            ply.last_lift[sq] = t
            if not ply.lifted & bb:
                ply.first_lift[sq] = t
            ply.lifted |= bb
            ply.adjusted &= ~bb
            ply.lifts.append((t, sq))
            vacated = state.position.occ & ~state.occ
            if vacated & (vacated - 1):
                ply.held |= vacated
            out += self._touch(t, sq)
        return out + self._after_change(t)

    def _snapshot(self, t: int, occ: chess.Bitboard, heartbeat: bool = False) -> list[Event]:
        """A full occupancy report: resynchronise if it differs from what the changes said.

        A snapshot one square off is one change not reported as such (a board that sends only snapshots): it
        is read as that lift or place. A heartbeat off (it repeats what the changes said), or a snapshot more
        squares off, means changes were lost: their order is unknown, and what was lifted and put back in
        between cannot be seen (the ply turns ``blind``).
        """
        state = self._state
        diff = occ ^ state.chatter.pending(state.occ)
        if not heartbeat and diff and not diff & (diff - 1):
            sq = diff.bit_length() - 1
            out: list[Event] = []
            for change in state.chatter.push(t, sq, bool(occ & diff)):
                out += self._change(*change)
            if state.chatter.flicks:
                self._note_flicks()
            if state.reports_changes and state.evidence.unsure_since is None:
                state.evidence.unsure_since = state.t  # a board that reports lifts and places sent this as a snapshot
            return out
        out = self.flush_chatter()
        if occ == state.occ:
            if not heartbeat and state.reports_changes and state.evidence.unsure_since is None:
                # A board that reports its changes sends a snapshot when it (re)connects: changes may have been
                # lost that left the squares as they were (a capture looks like a piece in the hand).
                state.evidence.unsure_since = state.t
            return out
        gone = state.occ & ~occ
        state.line.note_change(t, -1, False)   # changes not seen one by one: no re-reading across them
        state.occ = occ
        state.changed_at = t
        state.judge_at_rest = True
        state.evidence.lifted |= gone
        state.evidence.lifts_unseen = True
        out += self._after_change(t)
        if state.phase in _READING and state.occ != state.position.occ and (
                state.unseen.lost is not None or not state.position.continuable(state.occ)):
            # (A move under way from the game position is read as such: its lifts were not seen.)
            out += state.unseen.changes_lost(self, t)
        else:
            if state.evidence.unsure_since is None:
                # Read as a move under way; if the board contradicts that, search then.
                state.evidence.unsure_since = state.t
            if state.reports_changes and state.pending.match is not None and state.phase is PLAYING:
                # A board that reports its changes was blind (it reconnected): the move it shows has rested there
                # for a while already, it is made now (the next change is the next move's).
                shown, state.pending.match = state.pending.match, None
                state.judge_at_rest = False
                out += self._writing.make(shown, t)
        return out

    def _after_change(self, t: int) -> list[Event]:
        state = self._state
        out: list[Event] = []
        if state.phase is OVER:
            started = state.try_new_game(t)
            cleared = (state.occ ^ state.position.occ).bit_count() >= CLEARED_SQUARES
            if cleared and state.line.declared in _READ_ON:
                state.line.declared = Declared.CLEARED  # the board is being cleared: that game is over for good
            if (not started and state.line.declared is Declared.BOARD_GONE and state.unseen.declared_end(self)
                    and state.occ == state.position.occ):
                return state.resume(t)  # the board's claim withdrawn: the pieces stand as in the game again
            if started or not state.unseen.declared_end(self) or state.line.declared not in _READ_ON:
                state.pending.match = None
                return started
            # A declared result: moves are still read, and one made withdraws it (play went on).
            state.pending.match = self._writing.explain(state.position, state.evidence)
            state.pending.since = t
            return []
        if state.setup is not None:
            started = state.try_new_game(t)
            if started:
                return started
        if state.sync is LOST:
            if state.occ == START_OCCUPANCY:
                started = state.try_new_game(t)  # set up again for a new game while blind
                if started:
                    return out + started
        elif (state.occ ^ state.position.occ).bit_count() >= CLEARED_SQUARES:
            state.enter(CLEARED)
        if state.phase is CLEARED:
            state.pending.match = None
            if state.occ == state.position.occ:
                state.enter(PLAYING)
                out += state.restored(t, "game position")
            else:
                out += state.try_new_game(t)
            return out
        shown = self._writing.explain(state.position, state.evidence)
        interrupted = state.pending.interrupted
        for reading in AT_ONCE[shown is not None]:
            decision = reading(state, shown, t)
            if decision is None:
                continue
            if isinstance(decision, AmendLast):
                return out + self._writing.amend_last(t, decision.pushed)
            assert isinstance(decision, RestoreTouchdown)
            out += self._writing.restore_touchdown(t, decision.footprint, decision.landed)
            shown = self._writing.explain(state.position, state.evidence)
            break
        held, state.pending.held = state.pending.held, None
        if interrupted is not None and (shown is None or shown.move == interrupted.footprint.move):
            # The board may show the checkpoint move and the opponent's answer (when it shows the checkpoint move
            # alone, an answer that leaves the squares as they were: a Chess960 castling of king and rook).
            answer = self._answer_after(interrupted)
            lifted_at = None if answer is None else state.evidence.last_lift.get(answer.move.from_square)
            if answer is not None and state.pieces.letters and knocked_by_slide(
                    state.position.board, interrupted.footprint.move, interrupted.t, answer.move, lifted_at):
                # A piece knocked by the hand sliding on: held a moment (a board that names its pieces tells at
                # rest; one that does not may be a bullet reply the next changes would bury).
                assert lifted_at is not None
                since = held.since if held is not None and held.footprint.move == answer.move else t
                state.pending.held = HeldAnswer(answer, since, lifted_at + KNOCK_WINDOW_MS)
                answer = None
            touchdown = None if answer is None else pending_double_step_stood_aside(state, interrupted, answer, t)
            if touchdown is not None:
                # the single step, stood aside before it settled, then its capture
                out += self._writing.make(*touchdown)
                shown = self._writing.explain(state.position, state.evidence)
            elif answer is not None:
                out += self._writing.make(*state.pending.take_interrupted())
                shown = answer
            elif shown is not None:
                state.pending.interrupted = None
        elif interrupted is not None and shown is not None and not state.pending.stands(shown, state.occ):
            state.pending.interrupted = None
        state.pending.match = shown
        state.pending.since = t
        if shown is not None:
            # The same move showing again (a piece lifted and put back meanwhile) was made when it first showed.
            first = state.evidence.first_match
            if first is not None and first[0] == shown.move:
                state.pending.since = first[1]
            else:
                state.evidence.first_match = (shown.move, t)
        if shown is None and state.occ == state.position.occ:
            # the move shown was undone (the piece back on its square): shown again, it is made from then on
            state.evidence.first_match = None
            if state.sync in _OUT_OF_SYNC:
                out += state.restored(t, "game position")
        return out

    def _answer_after(self, interrupted: InterruptedMove) -> Footprint | None:
        """Return the opponent's answer the board shows after the interrupted move, None if it shows none."""
        state = self._state
        ply = state.evidence
        since = ply.lifted_since(interrupted.t)
        after = interrupted.after(state.position)
        answer = after.explain(state.occ, since, ply.lifts_unseen, ply.held & since, ply.last_lift, ply.last_place)
        if answer is not None and (self._writing.victim_shown(answer, after.board.turn)
                                   or self._writing.another_named_there(answer, after)):
            return None  # (a blind answer's capture, its victim still on the square; another piece named there)
        return answer

    def _release_held(self, t: int) -> list[Event]:
        """A change at ``t``, past the time an answer held after the interrupted move was due (``HeldAnswer``):
        if the board still shows both, make the interrupted move and match the answer (the change then interrupts
        it as it would any move shown); return the events."""
        state = self._state
        held, interrupted = state.pending.held, state.pending.interrupted
        state.pending.held = None
        if held is None or interrupted is None or t < held.until:
            return []
        answer = self._answer_after(interrupted)
        if answer is None or answer.move != held.footprint.move:
            return []
        out = self._writing.make(*state.pending.take_interrupted())
        state.pending.match = answer
        state.pending.since = held.since
        state.evidence.first_match = (answer.move, held.since)
        return out

    def _touch(self, t: int, sq: chess.Square) -> list[Event]:
        state = self._state
        if state.phase is not PLAYING:
            return []
        position = state.position
        piece = position.board.piece_at(sq)
        touches = state.evidence.touches
        if piece is None or sq == state.exchange_sq:
            return []  # the promoted pawn being exchanged for the new piece (4.6) is no touch
        side: TouchSide = "mover" if piece.color == position.board.turn else "opponent"
        if knock_lift(position.board, self._last_move(), state.line.reached[-1], sq, t):
            # A piece next to where the last move landed, lifted as that hand left: knocked off by its sleeve, no
            # touch of the player to move (it may still be the answer's victim, lifted first: no adjustment).
            if sq in touches.order or sq in touches.adjusted:
                return []
            touches.adjusted.append(sq)
            return [Touch(state.game_number, t, state.ply_number, chess.square_name(sq), piece.symbol(), side, False)]
        if (side == "opponent" and state.has_clock and not state.line.presses.pressed
                and state.line.unseen.unseen_since is None):
            # The player who just moved adjusts a piece before pressing: his clock still runs (6.2.5). (After plies
            # not seen made, his press may have been lost too: a lift of his piece is the mover's capture.)
            state.evidence.adjusted |= chess.BB_SQUARES[sq]
            if sq in touches.order or sq in touches.adjusted:
                return []
            touches.adjusted.append(sq)
            return [Touch(state.game_number, t, state.ply_number, chess.square_name(sq), piece.symbol(), side, False)]
        binds = touches.touch(position, sq, piece)
        if binds is None:
            return []
        game = state.games[-1]  # (a game is on)
        return [Touch(game.number, t, len(game.moves) + 1, chess.square_name(sq), piece.symbol(), side, binds)]

    def _unexplained(self, t: int) -> list[Event]:
        """The board rests in a state the current position does not explain: the first decision of the rows of
        :data:`~touchmove.rules.at_rest.AT_REST` that apply, applied (amend, take back, search, or wait)."""
        for reading in AT_REST:
            decision = reading(self._state)
            if decision is not None:
                out = self._apply(decision, t)
                if out or not decision.tentative():
                    return out
        return []

    def _apply(self, decision: Decision, t: int) -> list[Event]:
        """Apply a decision about the board at rest since ``t``; return its events."""
        state = self._state
        match decision:
            case Wait(castling_rook=rook, earlier=earlier):
                if rook is not None:
                    state.evidence.touches.king_on_castling_square = rook
                if earlier is not None:
                    state.evidence.earlier = (earlier, t)
                return []
            case Reopen():
                return self._reopen(t)
            case SearchLost(since=since, quiet=quiet):
                return state.unseen.changes_lost(self, t, since=since, quiet=quiet)
            case RecoverAgain():
                return state.unseen.recover_again(self, t)
            case MakeInterrupted():
                return self._writing.make(*state.pending.take_interrupted())
            case MakeShown(footprint=shown):
                return self._writing.make(shown, t)
            case MakeKnocked(footprint=shown, landed=landed):
                # (then the board is judged again from the move made: the answer shown, the piece knocked off)
                return self._writing.make(shown, landed) + self._unexplained(t)
            case MakeAnswerBegun(footprint=shown, begun=begun):
                if self._writing.victim_shown(shown, state.position.board.turn):
                    return []  # (a board that names its pieces shows the victim still there: no capture yet)
                state.evidence.answer_begun |= begun
                return self._writing.make(shown, t)
            case Amend(footprint=shown, by_evidence=by_evidence):
                return self._writing.amend(t, shown, by_evidence)
            case SetPromotion(number=number, move=move):
                return self._promotions.promotion_seen(t, number, move)
            case UndoAnswer(position=position, evidence=evidence, footprint=shown):
                return self._writing.undo_answer(t, position, evidence, shown)
            case TakeBackProven(keep=keep, shown=shown_at):
                ply = state.evidence
                out = self._writing.take_back_to(shown_at, keep)
                state.evidence.carry(ply, shown_at, state.position)
                return out + self._writing.make_shown()
            case TakeBack(keep=keep):
                return self._writing.take_back_to(t, keep)
            case CaptureOnTouchdown(footprint=moved, landed=landed, made=made):
                out = self._writing.restore_touchdown(t, moved, landed) if made else self._writing.make(moved, landed)
                return out + self._writing.make_shown()
        raise AssertionError(f"no application for {decision}")

    # ----------------------------------------------------------------------------------------------------------
    # the decisions of unseen play: the hypotheses followed, operators' and the bridge's records

    def _follow(self, step: Callable[[EngineInterface], list[Event]], t: int) -> list[Event]:
        """Give a step (a record, the time) to the hypotheses followed; apply what unseen play decides of them."""
        return self._follow_board(self._state.unseen.feed_hypotheses(self, step, t))

    def _follow_record(self, record: Record) -> list[Event] | None:
        """Give ``record`` to the hypotheses followed; None when the engine reads it itself (an operator's record:
        the hypotheses dropped first)."""
        decision = self._state.unseen.feed(self, record)
        if isinstance(decision, list):
            return decision
        if isinstance(decision, ContinueBlind):
            self._continue_blind(self._hypothesis(decision.line), judge=decision.judge)
            return None
        return self._follow_board(decision)

    def _follow_board(self, decision: FollowBoard) -> list[Event]:
        """Show the board of the hypotheses (the occupancy of one, the time reached), then adopt the line the
        board left, or play on blind when it left none."""
        state = self._state
        state.follow_board(self._state_of(self._hypothesis(decision.shown)), decision.t)
        then = decision.then
        if isinstance(then, AdoptLine):
            state.adopt(self._state_of(self._hypothesis(then.line)))   # its unseen play a board's again
            return then.events
        if isinstance(then, ContinueBlind):
            return self._continue_blind(self._hypothesis(then.line), judge=then.judge)
        return []

    def _continue_blind(self, line: Self, *, judge: bool) -> list[Event]:
        """Every hypothesis dropped: play on from the last sure position with the board of ``line`` (one of them);
        ``judge``: read what the board shows at once."""
        return self._unseen_writing.continue_blind(line._state, judge=judge)

    def _hypothesis(self, line: EngineInterface) -> Self:
        """Return ``line``, a hypothesis of unseen play: a fork of this engine (:meth:`fork`)."""
        assert isinstance(line, type(self))
        return line

    def _state_of(self, line: Self) -> BoardState:
        """Return the state of ``line``, a fork of this engine."""
        return line._state

    def _resync(self, t: int, record: Resync) -> list[Event]:
        """An arbiter's resync: applied as unseen play checked it (its plies made), or rejected."""
        out = self.flush_chatter()
        decision = self._state.unseen.resync(self, t, record)
        if isinstance(decision, ApplyResync):
            return out + self._unseen_writing.apply_resync(t, decision.moves)
        return out + decision

    def _declare(self, t: int, record: Result) -> list[Event]:
        """A declared result: applied as unseen play decided (the game ended as declared, after the move the board
        shows; a board's claim withdrawn), or rejected."""
        state = self._state
        out = self.flush_chatter()
        while True:
            decision = state.unseen.declare(self, t, record)
            if isinstance(decision, list):
                return out + decision
            if isinstance(decision, ResumeGame):
                return out + state.resume(t)
            assert isinstance(decision, DeclareEnd)
            made = self._unseen_writing.make_pending_move()  # the board shows the last move: made before it
            out += made
            if not made or state.games[-1].result == "*":
                break
            # that move ended the game on the board: the record is asked about again
        state.end_declared(record.result, record.reason, declared_as(state, record))
        out.append(declared_event(state.games[-1].number, t, record))
        return out

    def _reorder(self, t: int, decision: ReorderPlies) -> list[Event]:
        """Plies recovered unseen put in the order the bridge had published, and the alert that named them again."""
        out = self._unseen_writing.reorder_plies(t, decision.first, decision.order)
        return [*out, self._state.alert(t, "changes_lost", "7.4", decision.ply, decision.detail)]

    def _reopen(self, t: int) -> list[Event]:
        """The game ended, and the board shows play going on: if the end rested on an assumed promotion piece or
        on a move now amended, withdraw it (``game_resumed``) and go on."""
        state = self._state
        game = state.games[-1]
        ended = (game.result, game.end_reason)
        ply = len(game.moves) + 1
        state.enter(PLAYING)
        promotion = promotion_seen(state)
        if promotion is not None:
            return self._promotions.promotion_seen(t, *promotion)
        game.result, game.end_reason = "*", None
        pushed = pushed_capture(state)  # (the victim pushed aside onto a mating square)
        shown = amendment(state, pushed)
        if shown is not None:
            out = self._writing.amend(t, shown, pushed is not None)
            at = next(i for i, e in enumerate(out) if isinstance(e, MoveAmended)) + 1
            out.insert(at, GameResumed(game.number, t, ply))
            return out
        undone = answer_undone(state)
        if undone is not None:
            return [GameResumed(game.number, t, ply), *self._writing.undo_answer(t, *undone)]
        game.result, game.end_reason = ended
        state.enter(OVER)
        return []

    def _clock(self, record: Clock) -> list[Event]:
        """A clock press completes the mover's move (6.2.1): which move is decided here; what the press records (its
        time, or ``illegal_move`` for a press without a legal move, 7.5) by :meth:`ClockPresses.press`."""
        state = self._state
        t = record.t if record.t >= state.t else state.t
        out = self.flush_chatter()
        if state.phase is NEW or state.phase is OVER:
            return out
        side = record.side
        state.has_clock = True
        if record.late_ms:
            # Read up to a second late (a DGT clock through the board): the ply's time, no evidence on any move.
            return out + self._presses.press(record, t)
        if state.pending.match is not None and state.position.board.turn == side:
            state.judge_at_rest = False
            out += self._writing.make(*state.pending.resolve(state.position, state.occ, pressed=True))
        elif state.pending.interrupted is not None and state.position.board.turn == side:
            # The mover's press: the opponent's hand was already moving.
            out += self._writing.make(*state.pending.take_interrupted())
        elif state.judge_at_rest and not (state.position.board.turn != side and (
                sliding_in(state.position, state.occ) or state.evidence.touches.own is not None)):
            # (The last mover's press is no evidence on an answer already under way: its piece lifted (he pressed
            # late), or sliding onto its square, sensed there before its own square empties. It is judged when the
            # board rests.)
            state.judge_at_rest = False
            out += self._unexplained(state.changed_at)
        if (state.position.board.turn == side and state.phase in _READING and state.sync is UNDISPUTED
                and state.pending.match is None):
            # The mover presses with only his piece's square empty: a capture whose victim was swapped for the
            # piece faster than the chatter time (its square flicked) is made, rather than a press without a move.
            swapped = capture_swapped_unseen(state)
            if swapped is not None:
                out += self._writing.make(*swapped)
        unsure = state.evidence.unsure_since
        if unsure is None:
            unsure = state.line.unseen.unseen_since
        if (unsure is not None and state.position.board.turn == side and state.sync is not LOST
                and state.occ != state.position.occ and not self._pieces_under_way()):
            # The mover presses while the board shows a move under way that a snapshot told (or right after a
            # move not seen made): it may be a move whose changes were lost (a capture looks like a piece in the
            # hand, and the lifts of the last move may have been the next one's).
            out += state.unseen.changes_lost(self, t, since=unsure, quiet=True)
        if state.unseen.hypotheses is not None:
            return out
        return out + self._presses.press(record, t)

    def _note_flicks(self) -> None:
        """Note the squares the chatter filter took a flick on (emptied and filled again) in the game line, beside
        the changes a re-reading accounts for (a capture's victim swapped for its piece in one motion)."""
        state = self._state
        for emptied, filled, sq in state.chatter.flicks:
            state.line.note_flick(emptied, filled, sq)
        state.chatter.flicks.clear()

    def _pieces_under_way(self) -> bool:
        """Return whether a board that names its pieces shows the game position with one move under way (then
        a press is no sign of lost changes: the pieces show none; a DGT clock's press comes late)."""
        state = self._state
        pieces = state.pieces_shown
        return pieces is not None and under_way(state.position.board, pieces)


def _held_change(t: int, sq: chess.Square, occupied: bool) -> Callable[[EngineInterface], list[Event]]:
    """Return a step that gives an engine (a hypothesis) one change released by the chatter filter."""

    def step(engine: EngineInterface) -> list[Event]:
        return engine.decide_by(t) + engine.apply_change(t, sq, occupied)

    return step
