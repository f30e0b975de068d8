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

This module holds the per-record path and the application of decisions; the state and its transitions are in
:mod:`touchmove.rules.board_state`, the plies written in :mod:`touchmove.rules.ply_writing`, promotion pieces in
:mod:`touchmove.rules.promotion_pieces`, what a clock press records in :mod:`touchmove.rules.clock_presses`, the
re-readings of a board at rest in :mod:`touchmove.rules.at_rest` (their order) and :mod:`touchmove.rules.readings`,
play not seen made in :mod:`touchmove.rules.unseen_play` (what it writes: :mod:`touchmove.rules.unseen_operations`).
A map of it all: docs/engine-internals.md.
"""

from __future__ import annotations

from collections.abc import Callable

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
from touchmove.rules.at_rest import (
    AT_REST,
    Amend,
    CaptureOnTouchdown,
    Decision,
    MakeInterrupted,
    RecoverAgain,
    Reopen,
    SearchLost,
    SetPromotion,
    TakeBack,
    TakeBackProven,
    UndoAnswer,
    Wait,
)
from touchmove.rules.board_state import DEFAULT_SETTLE_MS, START_OCCUPANCY, EngineState
from touchmove.rules.clock_presses import ClockPresses
from touchmove.rules.events import (
    Event,
    GameResumed,
    MoveAmended,
    Touch,
    TouchSide,
)
from touchmove.rules.game_line import Declared
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.identity import under_way
from touchmove.rules.pending import InterruptedMove, sliding_in
from touchmove.rules.phases import (
    CLEARED,
    CLEARED_SQUARES,
    EXCUSED,
    LOST,
    NEW,
    OVER,
    PLAYING,
    UNDISPUTED,
)
from touchmove.rules.phases import OUT_OF_SYNC as _OUT_OF_SYNC
from touchmove.rules.phases import READING as _READING
from touchmove.rules.promotion_pieces import PromotionPieces
from touchmove.rules.readings import (
    amendment,
    answer_undone,
    capture_on_touchdown,
    castling_completed,
    double_step_stood_aside,
    pending_double_step_stood_aside,
    promotion_seen,
    pushed_capture,
)
from touchmove.rules.unseen_operations import UnseenOperations
from touchmove.rules.unseen_play import EngineInterface

__all__ = ["DEFAULT_SETTLE_MS", "Engine", "EngineState", "GameRecord"]

#: Declared results after which the board's moves are still read (one made withdraws the result).
_READ_ON = (Declared.READ_ON, Declared.BOARD_SHOWN, Declared.BOARD_GONE)

class Engine(PromotionPieces, ClockPresses, UnseenOperations):
    """Turns one board's records into events (see the module documentation).

    ``fen`` and ``chess960`` give the first game's start (standard by default); later games start when the
    board shows the standard start occupancy after a game, or from a ``setup`` record.
    """

    # ----------------------------------------------------------------------------------------------------------
    # public API

    def feed(self, record: Record) -> list[Event]:
        """Return the events caused by one record (time first advances to ``record.t``); a board that names its
        pieces has them judged once the position is settled (:meth:`_judge_pieces`)."""
        out = self._feed(record)
        pieces = self._pieces
        if not pieces.letters:
            return out      # a board that does not name its pieces
        if isinstance(record, Snapshot):
            pieces.restamp(record.t, self.plies)   # what it showed changed: the plies read from it
        elif isinstance(record, Place) and record.piece is not None:
            self._named_promotion(record.sq, record.piece)
        return self._judge_pieces(out)

    def _feed(self, record: Record) -> list[Event]:
        if self._unseen.hypotheses is not None:
            followed = self._unseen.feed(self, record)
            if followed is not None:
                self._watch_pieces(record)
                return followed
        t = record.t if record.t > self._t else self._t
        out = self._tick(t)
        # The pieces the record names are noted once the board at rest until its time has been judged (the
        # hypotheses the time passed opened note them in their own feed).
        self._watch_pieces(record)
        if self._unseen.hypotheses is not None:
            # The time passed opened hypotheses (lost changes, several explanations): the record is theirs.
            followed = self._unseen.feed(self, record)
            if followed is not None:
                return out + followed
        if self._phase is NEW and not isinstance(record, Published):
            out += self._start_first(record, t)
        match record:
            case Lift(sq=sq):
                for change in self._chatter.push(t, sq, False):
                    out += self._change(*change)
            case Place(sq=sq):
                self._reports_changes = True
                for change in self._chatter.push(t, sq, True):
                    out += self._change(*change)
            case Snapshot(occ=occ, type=kind):
                out += self._snapshot(t, occ, heartbeat=kind == "heartbeat")
            case Clock():
                out += self._clock(record)
            case Promote(piece=piece):
                out += self._promote(t, piece)
            case Setup(fen=fen, chess960=chess960):
                self._setup = (chess.Board(fen, chess960=chess960).fen(), chess960)
                out += self._try_new_game(t)
            case TakebackRequest(ply=ply):
                out += self.take_back_to(t, ply - 1)
            case Resync():
                out += self._unseen.resync(self, t, record)
            case Result():
                out += self._unseen.declare(self, t, record)
            case Published():
                out += self._unseen.published(self, t, record)
            case Other():
                pass
        self._t = self._received = t
        return out

    def advance(self, t: int) -> list[Event]:
        """Return the events due by device time ``t`` when no record has come (settled moves, mismatches)."""
        out = self._advance(t)
        return self._judge_pieces(out) if self._pieces.letters else out

    def _advance(self, t: int) -> list[Event]:
        if self._unseen.hypotheses is not None:
            return self._unseen.feed_hypotheses(self, lambda engine: engine.advance(t), t)
        t = max(t, self._t)
        out = self._tick(t)
        self._t = t
        return out

    def next_deadline(self) -> int | None:
        """Return the device time at which :meth:`advance` may have events to give, or None."""
        if self._unseen.hypotheses is not None:
            return self._unseen.next_deadline()
        deadlines = [d for d in (self._chatter.next_deadline(), self._decision_deadline()) if d is not None]
        return min(deadlines) if deadlines else None

    def finish(self) -> list[Event]:
        """Return the events still pending at the end of the input (everything counts as settled)."""
        if self._unseen.hypotheses is not None:
            return self._unseen.feed_hypotheses(self, lambda engine: engine.finish(), self._t)
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
    # time

    def flush_chatter(self) -> list[Event]:
        """Take every held square change as certain now (end of input, a snapshot, a clock press)."""
        out: list[Event] = []
        for change in self._chatter.flush():
            out += self._change(*change)
        return out

    def _decision_deadline(self) -> int | None:
        if self._pending.match is not None:
            return self._changed_at + self.settle_ms
        if self._judge_at_rest:
            return self._changed_at + self.settle_ms
        if self._phase in _READING and self._sync is UNDISPUTED and self._occ != self._position.occ:
            return self._changed_at + self.mismatch_ms
        return None

    def _tick(self, t: int) -> list[Event]:
        released = self._chatter.release(t)
        if not released and t < self._changed_at + self.settle_ms and self._unseen.lost is None:
            return []  # nothing due (most records)
        out: list[Event] = []
        for at, sq, occupied in released:
            if self._unseen.hypotheses is not None:
                # An earlier change opened hypotheses: the changes after it are theirs.
                out += self._unseen.feed_hypotheses(self, _held_change(at, sq, occupied), at)
                continue
            out += self._decide(at)
            out += self._change(at, sq, occupied)
        if self._unseen.hypotheses is not None:
            return out + self._unseen.feed_hypotheses(self, lambda engine: engine.decide_by(t), t)
        out += self._decide(t)
        return out

    def _decide(self, t: int) -> list[Event]:
        """Take the decisions due by ``t``: made moves, unexplained states, mismatches."""
        out: list[Event] = []
        if self._phase is NEW or t < self._changed_at + self.settle_ms:
            return out
        if self._pending.match is not None:
            self._judge_at_rest = False
            out += self._make(*self._pending.resolve(self._position, self._occ, pressed=False))
            self._line.unseen.settled_by_time = (len(self._games[-1].moves), self._changed_at + self.settle_ms)
        elif self._judge_at_rest:
            self._judge_at_rest = False
            out += self._unexplained(self._changed_at)
        if (
            self._sync is UNDISPUTED
            and self._phase is not OVER
            and self._occ != self._position.occ
            and t >= self._changed_at + self.mismatch_ms
            and self._pending.match is None
        ):
            out += self._report_mismatch(self._changed_at, force=False)
        return out

    def _change(self, t: int, sq: chess.Square, occupied: bool) -> list[Event]:
        bb = chess.BB_SQUARES[sq]
        if bool(self._occ & bb) == occupied:
            return []  # a repeated report: nothing changed
        out: list[Event] = []
        self._line.changes.append((t, sq, occupied))     # (GameLine.note_change, inlined: every change passes)
        self._occ ^= bb
        self._changed_at = t
        self._judge_at_rest = True
        if self._sync is EXCUSED:
            self._tell(UNDISPUTED)  # a new state of the board: judged again when it rests
        ply = self._evidence
        match = self._pending.match
        if match is not None and self._pending.interrupted is None:
            # A change while the matched move waits out its settle time: the mover's piece sliding on, or the
            # opponent starting already (fast play without clocks). Keep the move as a checkpoint.
            moved_on = not occupied and bool(match.placed & bb)
            # Its piece had rested there for the settle time before the board showed the move (a knocked piece
            # missing meanwhile).
            released = moved_on and self._pending.since - ply.last_place.get(sq, self._pending.since) >= self.settle_ms
            if released and self._pieces.letters:
                # a board that names its pieces: only the mover's piece rested there (not a victim stood aside)
                letter = self._pieces.last.get(sq)
                released = letter is None or letter.isupper() == (self._position.board.turn == chess.WHITE)
            self._pending.interrupted = InterruptedMove(match, self._pending.since, moved_on, released=released)
        if occupied:
            ply.last_place[sq] = t
        else:
            ply.last_lift[sq] = t
            if not ply.lifted & bb:
                ply.first_lift[sq] = t
            ply.lifted |= bb
            ply.adjusted &= ~bb
            ply.lifts.append((t, sq))
            vacated = self._position.occ & ~self._occ
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
        diff = occ ^ self._chatter.pending(self._occ)
        if not heartbeat and diff and not diff & (diff - 1):
            sq = diff.bit_length() - 1
            out: list[Event] = []
            for change in self._chatter.push(t, sq, bool(occ & diff)):
                out += self._change(*change)
            if self._reports_changes and self._evidence.unsure_since is None:
                self._evidence.unsure_since = self._t  # a board that reports lifts and places sent this as a snapshot
            return out
        out = self.flush_chatter()
        if occ == self._occ:
            if not heartbeat and self._reports_changes and self._evidence.unsure_since is None:
                # A board that reports its changes sends a snapshot when it (re)connects: changes may have been
                # lost that left the squares as they were (a capture looks like a piece in the hand).
                self._evidence.unsure_since = self._t
            return out
        gone = self._occ & ~occ
        self._line.note_change(t, -1, False)   # changes not seen one by one: no re-reading across them
        self._occ = occ
        self._changed_at = t
        self._judge_at_rest = True
        self._evidence.lifted |= gone
        self._evidence.lifts_unseen = True
        out += self._after_change(t)
        if self._phase in _READING and self._occ != self._position.occ and (
                self._unseen.lost is not None or not self._position.continuable(self._occ)):
            # (A move under way from the game position is read as such: its lifts were not seen.)
            out += self._unseen.changes_lost(self, t)
        else:
            if self._evidence.unsure_since is None:
                # Read as a move under way; if the board contradicts that, search then.
                self._evidence.unsure_since = self._t
            if self._reports_changes and self._pending.match is not None and self._phase is PLAYING:
                # A board that reports its changes was blind (it reconnected): the move it shows has rested there
                # for a while already, it is made now (the next change is the next move's).
                shown, self._pending.match = self._pending.match, None
                self._judge_at_rest = False
                out += self._make(shown, t)
        return out

    def _after_change(self, t: int) -> list[Event]:
        out: list[Event] = []
        if self._phase is OVER:
            started = self._try_new_game(t)
            cleared = (self._occ ^ self._position.occ).bit_count() >= CLEARED_SQUARES
            if cleared and self._line.declared in _READ_ON:
                self._line.declared = Declared.CLEARED  # the board is being cleared: that game is over for good
            if (not started and self._line.declared is Declared.BOARD_GONE and self._unseen.declared_end(self)
                    and self._occ == self._position.occ):
                return self.resume(t)  # the board's claim withdrawn: the pieces stand as in the game again
            if started or not self._unseen.declared_end(self) or self._line.declared not in _READ_ON:
                self._pending.match = None
                return started
            # A declared result: moves are still read, and one made withdraws it (play went on).
            self._pending.match = self._explain(self._position, self._evidence)
            self._pending.since = t
            return []
        if self._setup is not None:
            started = self._try_new_game(t)
            if started:
                return started
        if self._sync is LOST:
            if self._occ == START_OCCUPANCY:
                started = self._try_new_game(t)  # set up again for a new game while blind
                if started:
                    return out + started
        elif (self._occ ^ self._position.occ).bit_count() >= CLEARED_SQUARES:
            self._enter(CLEARED)
        if self._phase is CLEARED:
            self._pending.match = None
            if self._occ == self._position.occ:
                self._enter(PLAYING)
                out += self._restored(t, "game position")
            else:
                out += self._try_new_game(t)
            return out
        shown = self._explain(self._position, self._evidence)
        if shown is None and self._occ & ~self._position.occ and castling_completed(self):
            # The king lands beside the rook moved first: castling, at once (the opponent may answer within the
            # settle time).
            return out + self._amend_last(t)
        interrupted = self._pending.interrupted
        if shown is None and interrupted is None and self._evidence.lifted & self._position.occ & ~self._occ:
            pushed = pushed_capture(self)
            if pushed is not None:
                return self._amend_last(t, pushed)  # the pushed-aside victim taken off: the capture, at once
        if shown is not None and interrupted is None:
            released = self._line.released_on
            touchdown = None
            if released is not None and released[0] == self.plies:
                # An amendment as moved after release is provisional: a capture on the square the piece was released
                # on wins over a reading that needs the amendment (a pawn stood on its double step's square).
                touchdown = capture_on_touchdown(self)
            elif shown.move.to_square == self._position.board.ep_square:
                # En passant, or a single step stood on the double step's square and captured where it stood first.
                touchdown = double_step_stood_aside(self, shown, t)
            if touchdown is not None:
                out += self._restore_touchdown(t, *touchdown)
                shown = self._explain(self._position, self._evidence)
        if interrupted is not None and (shown is None or shown.move == interrupted.footprint.move):
            # The board may show the checkpoint move and the opponent's answer (when it shows the checkpoint move
            # alone, an answer that leaves the squares as they were: a Chess960 castling of king and rook).
            ply = self._evidence
            since = ply.lifted_since(interrupted.t)
            after = interrupted.after(self._position)
            answer = after.explain(self._occ, since, ply.lifts_unseen, ply.held & since, ply.last_lift, ply.last_place)
            if answer is not None and self._victim_shown(answer, after.board.turn):
                answer = None  # (a blind answer's capture, its victim still on the square)
            touchdown = None if answer is None else pending_double_step_stood_aside(self, interrupted, answer, t)
            if touchdown is not None:
                out += self._make(*touchdown)  # the single step, stood aside before it settled, then its capture
                shown = self._explain(self._position, self._evidence)
            elif answer is not None:
                out += self._make(*self._pending.take_interrupted())
                shown = answer
            elif shown is not None:
                self._pending.interrupted = None
        elif interrupted is not None and shown is not None and not self._pending.stands(shown, self._occ):
            self._pending.interrupted = None
        self._pending.match = shown
        self._pending.since = t
        if shown is not None:
            # The same move showing again (a piece lifted and put back meanwhile) was made when it first showed.
            first = self._evidence.first_match
            if first is not None and first[0] == shown.move:
                self._pending.since = first[1]
            else:
                self._evidence.first_match = (shown.move, t)
        if shown is None and self._occ == self._position.occ and self._sync in _OUT_OF_SYNC:
            out += self._restored(t, "game position")
        return out

    def _touch(self, t: int, sq: chess.Square) -> list[Event]:
        if self._phase is not PLAYING:
            return []
        position = self._position
        piece = position.board.piece_at(sq)
        touches = self._evidence.touches
        if piece is None or sq == self._exchange_sq:
            return []  # the promoted pawn being exchanged for the new piece (4.6) is no touch
        side: TouchSide = "mover" if piece.color == position.board.turn else "opponent"
        if (side == "opponent" and self._has_clock and not self._line.presses.pressed
                and self._line.unseen.unseen_since is None):
            # The player who just moved adjusts a piece before pressing: his clock still runs (6.2.5). (After plies
            # not seen made, his press may have been lost too: a lift of his piece is the mover's capture.)
            self._evidence.adjusted |= chess.BB_SQUARES[sq]
            if sq in touches.order or sq in touches.adjusted:
                return []
            touches.adjusted.append(sq)
            return [Touch(self.game_number, t, self.ply_number, chess.square_name(sq), piece.symbol(), side, False)]
        binds = touches.touch(position, sq, piece)
        if binds is None:
            return []
        game = self._games[-1]  # (a game is on)
        return [Touch(game.number, t, len(game.moves) + 1, chess.square_name(sq), piece.symbol(), side, binds)]

    def _unexplained(self, t: int) -> list[Event]:
        """The board rests in a state the current position does not explain: the first decision of the rows of
        :data:`~touchmove.rules.at_rest.AT_REST` that apply, applied (amend, take back, search, or wait)."""
        for reading in AT_REST:
            decision = reading(self)
            if decision is not None:
                out = self._apply(decision, t)
                if out or not decision.tentative():
                    return out
        return []

    def _apply(self, decision: Decision, t: int) -> list[Event]:
        """Apply a decision about the board at rest since ``t``; return its events."""
        match decision:
            case Wait(castling_rook=rook, earlier=earlier):
                if rook is not None:
                    self._evidence.touches.king_on_castling_square = rook
                if earlier is not None:
                    self._evidence.earlier = (earlier, t)
                return []
            case Reopen():
                return self._reopen(t)
            case SearchLost(since=since, quiet=quiet):
                return self._unseen.changes_lost(self, t, since=since, quiet=quiet)
            case RecoverAgain():
                return self._unseen.recover_again(self, t)
            case MakeInterrupted():
                return self._make(*self._pending.take_interrupted())
            case Amend(footprint=shown, by_evidence=by_evidence):
                return self._amend(t, shown, by_evidence)
            case SetPromotion(number=number, move=move):
                return self._promotion_seen(t, number, move)
            case UndoAnswer(position=position, evidence=evidence, footprint=shown):
                return self._undo_answer(t, position, evidence, shown)
            case TakeBackProven(keep=keep, shown=shown_at):
                ply = self._evidence
                out = self.take_back_to(shown_at, keep)
                self._evidence.carry(ply, shown_at, self._position)
                return out + self._make_shown()
            case TakeBack(keep=keep):
                return self.take_back_to(t, keep)
            case CaptureOnTouchdown(footprint=moved, landed=landed, made=made):
                out = self._restore_touchdown(t, moved, landed) if made else self._make(moved, landed)
                return out + self._make_shown()
        raise AssertionError(f"no application for {decision}")

    def _reopen(self, t: int) -> list[Event]:
        """The game ended, and the board shows play going on: if the end rested on an assumed promotion piece or
        on a move now amended, withdraw it (``game_resumed``) and go on."""
        game = self._games[-1]
        ended = (game.result, game.end_reason)
        ply = len(game.moves) + 1
        self._enter(PLAYING)
        promotion = promotion_seen(self)
        if promotion is not None:
            return self._promotion_seen(t, *promotion)
        game.result, game.end_reason = "*", None
        pushed = pushed_capture(self)  # (the victim pushed aside onto a mating square)
        shown = amendment(self, pushed)
        if shown is not None:
            out = self._amend(t, shown, pushed is not None)
            at = next(i for i, e in enumerate(out) if isinstance(e, MoveAmended)) + 1
            out.insert(at, GameResumed(game.number, t, ply))
            return out
        undone = answer_undone(self)
        if undone is not None:
            return [GameResumed(game.number, t, ply), *self._undo_answer(t, *undone)]
        game.result, game.end_reason = ended
        self._enter(OVER)
        return []

    def _clock(self, record: Clock) -> list[Event]:
        """A clock press completes the mover's move (6.2.1): which move is decided here; what the press records (its
        time, or ``illegal_move`` for a press without a legal move, 7.5) by :meth:`_press`."""
        t = record.t if record.t >= self._t else self._t
        out = self.flush_chatter()
        if self._phase is NEW or self._phase is OVER:
            return out
        side = record.side
        self._has_clock = True
        if record.late_ms:
            # Read up to a second late (a DGT clock through the board): the ply's time, no evidence on any move.
            return out + self._press(record, t)
        if self._pending.match is not None and self._position.board.turn == side:
            self._judge_at_rest = False
            out += self._make(*self._pending.resolve(self._position, self._occ, pressed=True))
        elif self._pending.interrupted is not None and self._position.board.turn == side:
            # The mover's press: the opponent's hand was already moving.
            out += self._make(*self._pending.take_interrupted())
        elif self._judge_at_rest and not (self._position.board.turn != side and (
                sliding_in(self._position, self._occ) or self._evidence.touches.own is not None)):
            # (The last mover's press is no evidence on an answer already under way: its piece lifted (he pressed
            # late), or sliding onto its square, sensed there before its own square empties. It is judged when the
            # board rests.)
            self._judge_at_rest = False
            out += self._unexplained(self._changed_at)
        unsure = self._evidence.unsure_since
        if unsure is None:
            unsure = self._line.unseen.unseen_since
        if (unsure is not None and self._position.board.turn == side and self._sync is not LOST
                and self._occ != self._position.occ and not self._pieces_under_way()):
            # The mover presses while the board shows a move under way that a snapshot told (or right after a
            # move not seen made): it may be a move whose changes were lost (a capture looks like a piece in the
            # hand, and the lifts of the last move may have been the next one's).
            out += self._unseen.changes_lost(self, t, since=unsure, quiet=True)
        if self._unseen.hypotheses is not None:
            return out
        return out + self._press(record, t)

    def _pieces_under_way(self) -> bool:
        """Return whether a board that names its pieces shows the game position with one move under way (then
        a press is no sign of lost changes: the pieces show none; a DGT clock's press comes late)."""
        pieces = self.pieces_shown
        return pieces is not None and under_way(self._position.board, pieces)


def _held_change(t: int, sq: chess.Square, occupied: bool) -> Callable[[EngineInterface], list[Event]]:
    """Return a step that gives an engine (a hypothesis) one change released by the chatter filter."""

    def step(engine: EngineInterface) -> list[Event]:
        return engine.decide_by(t) + engine.apply_change(t, sq, occupied)

    return step
