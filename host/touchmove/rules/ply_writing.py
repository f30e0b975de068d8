"""Writing the game's plies: a move made, amended, taken back, its promotion piece set, and the events that say so.

:class:`PlyWriting` is a collaborator of :class:`~touchmove.rules.engine.Engine` (and of the engine's other
collaborators): it applies decisions to the game line (:mod:`touchmove.rules.game_line`) and the position of the
state it is given; what to decide is the engine's (the per-record path, the table of
:mod:`touchmove.rules.at_rest`), when it is decided is its too.
"""

from __future__ import annotations

import chess

from touchmove.rules import rereading
from touchmove.rules.board_state import BoardState
from touchmove.rules.events import AmendmentWithdrawn, Event, GameEnd, MoveAmended, MoveMade, Takeback
from touchmove.rules.footprints import Footprint, Position, castling_squares
from touchmove.rules.identity import captures_past
from touchmove.rules.obligations import Touches, judge, out_of_turn
from touchmove.rules.outcome import game_over
from touchmove.rules.pending import knock_lift, knocked_coming_in
from touchmove.rules.phases import MISMATCH, OUT_OF_SYNC, OVER, PLAYING
from touchmove.rules.ply_evidence import PlyEvidence
from touchmove.rules.readings import amendment, explain_shown, mismatch_excused
from touchmove.rules.unseen_play import Role

__all__ = ["PlyWriting"]


class PlyWriting:
    """Applies decisions to the game: makes, amends and takes back plies (see the module documentation); it
    writes ``state``, the board's state."""

    def __init__(self, state: BoardState) -> None:
        self._state = state

    def explain(self, position: Position, ply: PlyEvidence) -> Footprint | None:
        """Return the legal move the board shows from ``position`` with the lifts of ``ply``, if any."""
        state = self._state
        shown = explain_shown(state.occ, position, ply, state.line.presses)
        if shown is None or self.victim_shown(shown, position.board.turn) or self.slid_on_as_named(shown, position) \
                or self.another_named_there(shown, position):
            return None
        return shown

    def another_named_there(self, shown: Footprint, position: Position) -> bool:
        """Return whether a board that names its pieces names another piece of the mover's side on the square
        ``shown`` lands on (not a promotion, nor castling), put down there before the move's piece was lifted:
        that piece stands there, not the move's (the knight taken on f6 pushed aside onto g5 is no ...g7-g5 when
        Black lifts the g7 pawn to recapture). A piece named wrong as it lands is the move, and a mismatch."""
        state = self._state
        board, move = position.board, shown.move
        if not state.pieces.changes or move.promotion is not None or board.is_castling(move):
            return False
        piece = board.piece_at(move.from_square)
        lifted = self._state.evidence.first_lift.get(move.from_square)
        if piece is None or lifted is None:
            return False
        put = next((c for c in reversed(state.pieces.changes)
                    if c.sq == move.to_square and c.t <= state.changed_at), None)
        return (put is not None and put.piece is not None and put.t < lifted
                and put.piece.isupper() == (piece.color == chess.WHITE) and put.piece != piece.symbol())

    def victim_shown(self, shown: Footprint, mover: chess.Color) -> bool:
        """Return whether a board that names its pieces still shows the opponent's piece on the square ``shown``
        moves to: a capture not made yet (the capturing piece is in the hand)."""
        state = self._state
        letter = state.pieces.piece_at(shown.move.to_square, state.changed_at) if state.pieces.changes else None
        return letter is not None and letter.isupper() != mover

    def slid_on_as_named(self, shown: Footprint, position: Position) -> bool:
        """Return whether a board that names its pieces shows the piece of ``shown`` (a rook, bishop or queen) on
        a square further along its line where it captures, ``shown``'s landing square crossed on the way and
        still sensed (a scan reads the square it left after the one it reached): the move is under way."""
        state = self._state
        if not state.pieces.changes:
            return False
        letter = str(position.board.piece_at(shown.move.from_square))
        return any(state.pieces.piece_at(sq, state.changed_at) == letter
                   for sq in captures_past(position.board, shown.move))

    def make(self, shown: Footprint, t: int) -> list[Event]:
        state = self._state
        position, ply = state.position, state.evidence
        board = position.board
        game = state.games[-1]
        move = shown.move
        chosen, state.chosen_piece = state.chosen_piece, None
        if move.promotion is not None and chosen is not None:
            move = chess.Move(move.from_square, move.to_square, chosen)
        number = len(game.moves) + 1
        out: list[Event] = []
        if state.phase is OVER:
            out += state.resume(t)  # a move made after a declared result: play went on
        if state.sync in OUT_OF_SYNC:
            out += state.restored(t, "legal move")
        after = board.copy(stack=False)
        san = after.san_and_push(move)
        state.line.push(move, after, t)
        early = (state.has_clock and not state.line.presses.pressed and number > 1
                 and state.line.unseen.unseen_since is None)
        state.line.presses.answered = state.previous if early else None
        state.line.presses.answered_press = None
        state.start_ply(position.after(move, after), (position, ply))
        state.line.presses.pressed = False
        # Made from a snapshot's difference (its changes not seen), or after a snapshot that may hide lost changes.
        state.line.unseen.unseen_since = (ply.unsure_since if ply.unsure_since is not None
                                          else state.t if ply.lifts_unseen else None)
        out.append(MoveMade(game.number, t, number, move.uci(), san, state.position.fen()))
        # Lifts in the report that showed the move, off its squares, of a piece the answer can move or capture:
        # the answer begun (one report cannot tell which came first; no touch on that for this ply).
        at_once = 0
        answers: set[chess.Square] | None = None
        for at, sq in ply.lifts:
            if at != t or shown.involved & chess.BB_SQUARES[sq]:
                continue
            if board.color_at(sq) == board.turn:
                if answers is None:
                    answers = {m.to_square for m in after.generate_legal_captures()}
                if sq not in answers:
                    continue  # the mover's own piece, which no answer can take: his touch
            at_once |= chess.BB_SQUARES[sq]
        # The answer begun before the scan that showed the move (its pieces lifted while the board showed it).
        begun = ply.answer_begun & ~shown.involved
        late = [(at, sq) for at, sq in ply.lifts if at > t or (at_once | begun) & chess.BB_SQUARES[sq]]
        if late:
            # Lifts after the move showed belong to the next ply (the opponent started before the settle time
            # was over); they are judged there, not here.
            earlier = Touches()
            for sq in ply.touches.order:
                first = ply.first_lift.get(sq, t)
                if begun & chess.BB_SQUARES[sq]:
                    continue  # the answer's, begun before the move showed
                if first < t or (first == t and not at_once & chess.BB_SQUARES[sq]):
                    earlier.touch(position, sq)
            ply.touches = earlier
            nxt = state.evidence
            exchanged = chess.BB_SQUARES[move.to_square] if move.promotion is not None else 0
            knocked = 0
            for at, sq in late:
                if knock_lift(after, move, t, sq, at):
                    knocked |= chess.BB_SQUARES[sq]
            nxt.carry_late(ply, t, state.position, at_once, exchanged, begun, knocked)
            # The answer may be on the board already (a Chess960 castling that leaves the squares as they were).
            answer = self.explain(state.position, nxt)
            if answer is not None:
                state.pending.match, state.pending.since = answer, state.changed_at
                nxt.first_match = (answer.move, state.changed_at)
        state.exchange_sq = move.to_square if move.promotion is not None else None
        touches = self._not_knocked(position, ply, move, t)
        for breach in judge(position, touches, move, ply.first_lift, ply.last_place):
            out.append(state.alert(t, breach.code, breach.article, number, breach.detail))
        for sq in out_of_turn(position, touches, move):
            out.append(state.alert(t, "touch_out_of_turn", "4.2.1", number, {
                "sq": chess.square_name(sq), "piece": str(board.piece_at(sq)),
            }))
        if move.promotion is not None and chosen is not None:
            state.line.promotions[number] = True
        elif move.promotion is not None:
            state.line.promotions[number] = False
            out.append(state.alert(t, "promotion_unverified", "4.4.4", number, {
                "sq": chess.square_name(move.to_square), "assumed": "q",
                "note": "the board cannot see the new piece; a promote record confirms it (7.5.2 if a pawn)",
            }))
        out += self.after_move(t, after, san)
        return out

    @staticmethod
    def _not_knocked(position: Position, ply: PlyEvidence, move: chess.Move, t: int) -> Touches:
        """Return the touches of ``ply`` but the pieces the sleeve of the hand coming in with ``move`` (shown at
        ``t``; its piece landed then or before, a knocked piece missing meanwhile) knocked
        (:func:`~touchmove.rules.pending.knocked_coming_in`): those bind nobody (4.3)."""
        touches = ply.touches
        board = position.board
        landed = min(t, ply.last_place.get(move.to_square, t))
        # (a piece touched and put back before the moving piece landed was let go of: a touch, knocked or not)
        knocked = [sq for sq in touches.order if ply.last_place.get(sq, landed + 1) > landed
                   and knocked_coming_in(board, move, sq, ply.first_lift.get(sq), landed)]
        if not knocked:
            return touches
        kept = Touches(king_on_castling_square=touches.king_on_castling_square, adjusted=list(touches.adjusted))
        for sq in touches.order:
            if sq not in knocked:
                kept.touch(position, sq)
        return kept

    def after_move(self, t: int, board: chess.Board, san: str | None = None) -> list[Event]:
        """Return the game end, or the draws now claimable, after the move that left ``board`` (``san``: its SAN,
        whose suffix tells a check)."""
        state = self._state
        out: list[Event] = []
        game = state.games[-1]
        count = state.line.repetitions.add(board)
        ended = game_over(board, count, None if san is None else san[-1] in "+#")
        if ended is not None:
            state.game_ended(ended)
            out.append(GameEnd(game.number, t, ended.result, ended.reason, ended.article))
            return out
        if count >= 3:
            out.append(state.alert(t, "draw_claimable", "9.2", len(game.moves) + 1, {
                "reason": "threefold repetition", "occurrences": count,
            }))
        if board.halfmove_clock >= 100:
            out.append(state.alert(t, "draw_claimable", "9.3", len(game.moves) + 1, {
                "reason": "fifty-move rule", "halfmove_clock": board.halfmove_clock,
            }))
        return out

    def make_shown(self) -> list[Event]:
        """Make the move the board now shows from the game position, if any (a move under way re-read)."""
        state = self._state
        match = self.explain(state.position, state.evidence)
        return [] if match is None else self.make(match, state.changed_at)

    def undo_answer(self, t: int, position: Position, evidence: PlyEvidence, shown: Footprint | None) -> list[Event]:
        """Take back an answer the board undid before the press of the ply it answered
        (:func:`~touchmove.rules.readings.answer_undone`); amend the ply before it to ``shown`` if the board shows
        its piece elsewhere (no alert: the piece only crossed the square it was read on), or (None) keep it and
        read the opponent's real answer under way."""
        state = self._state
        pressed = state.line.presses.answered_press
        now = state.evidence
        game = state.games[-1]
        answer = game.moves[-1]
        answer_ply = state.previous[1] if state.previous is not None else None
        out = self.take_back_to(t, len(game.moves) - 1)
        self._answer_taken_back(pressed)
        state.previous = (position, evidence)
        if shown is None:
            if answer_ply is not None and state.occ & chess.BB_SQUARES[answer.to_square] \
                    and not state.occ & chess.BB_SQUARES[answer.from_square]:
                # the answer's piece still stands where it landed: the first step of the real answer (castling's
                # rook put down first, then the king lifted after a rest), its lift seen and its touch made
                state.evidence.carry(answer_ply, 0, state.position)
            state.evidence.carry(now, 0, state.position)
        elif shown.move != game.moves[-1]:
            out += self.amend_last(t, shown)
        return out

    def _answer_taken_back(self, pressed: int | None) -> None:
        """After an answer taken back: whether (and when) the mover of the ply kept has pressed his clock."""
        state = self._state
        state.line.presses.pressed = pressed is not None
        state.line.presses.pressed_at = pressed or 0

    def amend_last(self, t: int, pushed: Footprint | None = None) -> list[Event]:
        """Re-explain the board from the position before the last move (:func:`~touchmove.rules.readings.amendment`)
        and amend the last move if it shows another."""
        shown = amendment(self._state, pushed)
        return [] if shown is None else self.amend(t, shown, pushed is not None)

    def amend(self, t: int, shown: Footprint, by_evidence: bool) -> list[Event]:
        """Replace the last move by ``shown`` (what the board shows wins); ``by_evidence``: read from other
        evidence (a capture whose victim was pushed aside first, an answer displaced): no alert, no rule broken."""
        state = self._state
        previous = state.previous
        assert previous is not None
        position = previous[0]
        game = state.games[-1]
        last = game.moves[-1]
        board = position.board
        number = len(game.moves)
        castling = board.is_castling(shown.move)
        rook_part = castling and castling_squares(board, shown.move)[0] == last.from_square
        king_part = castling and last.from_square == shown.move.from_square
        out: list[Event] = []
        made_at = state.line.reached[-1]     # (a re-reading of the last plies starts no later)
        state.line.pop()
        after = board.copy(stack=False)
        san = after.san_and_push(shown.move)
        state.line.push(shown.move, after, made_at)
        # What was seen since the amended move was first made stays its evidence for a later re-reading.
        state.start_ply(position.after(shown.move, after), (position, previous[1].then(state.evidence)))
        state.enter(PLAYING)
        out.append(MoveAmended(game.number, t, number, shown.move.uci(), san, state.position.fen()))
        noted = state.line.unseen.recovered_alert
        named = None if noted is None else noted.amend([*game.moves[:-1], last], number, shown.move, san)
        if noted is not None and named is not None:
            # A recovered ply amended: the changes_lost alert that named it names the move played (it supersedes).
            out.append(state.alert(t, "changes_lost", "7.4", noted.ply, named))
        if state.sync is MISMATCH:
            out += state.restored(t, "amended move")
        if rook_part:
            out.append(state.alert(t, "castling_rook_first", "4.4.2", number, {
                "played": shown.move.uci(), "replaces": last.uci(),
                "rook": chess.square_name(last.from_square),
            }))
        elif not king_part and not by_evidence and state.line.unseen.unseen_since is None:  # (release not seen)
            state.line.released_on = (number, last)
            out.append(state.alert(t, "moved_after_release", "4.7", number, {
                "released": chess.square_name(last.to_square), "final": chess.square_name(shown.move.to_square),
                "replaces": last.uci(), "played": shown.move.uci(),
            }))
        if shown.move.promotion is not None:
            state.line.promotions[number] = False
            out.append(state.alert(t, "promotion_unverified", "4.4.4", number, {
                "sq": chess.square_name(shown.move.to_square), "assumed": "q",
            }))
        out += self.after_move(t, after, san)
        return out

    def restore_touchdown(self, t: int, moved: Footprint, landed: int) -> list[Event]:
        """Amend the last move to ``moved``, the move to the square its piece touched down on at ``landed`` (see
        :func:`~touchmove.rules.readings.capture_on_touchdown`); an amendment as moved after release that this
        contradicts is withdrawn (``amendment_withdrawn``). The lifts since the touchdown go on to the next ply."""
        state = self._state
        previous = state.previous
        assert previous is not None
        seen = previous[1].then(state.evidence)
        number = len(state.games[-1].moves)
        replaced = state.games[-1].moves[-1]
        released, state.line.released_on = state.line.released_on, None
        out = self.amend(t, moved, by_evidence=True)
        if released == (number, moved.move):
            out.append(AmendmentWithdrawn(state.game_number, t, number, moved.move.uci(), replaced.uci(),
                                          "moved_after_release"))
        state.evidence.carry(seen, landed + 1, state.position)
        return out

    def report_mismatch(self, t: int, *, force: bool) -> list[Event]:
        """Re-read the last plies (:meth:`reread`) before a mismatch; raise it only when no one line explains the
        board."""
        state = self._state
        if state.phase is PLAYING and (force or not mismatch_excused(state)):
            reread_events = self.reread(t)
            if reread_events:
                return reread_events
        return state.mismatch_alert(t, force=force)

    def reread(self, t: int) -> list[Event]:
        """The board contradicts the game: return the events of the one line of :func:`~touchmove.rules.rereading.
        reread` that explains it (the plies it replaces amended), or none."""
        state = self._state
        unseen = state.unseen
        if (state.phase is not PLAYING or unseen.role is not Role.BOARD or unseen.lost is not None
                or unseen.hypotheses is not None or not state.games):
            return []
        found = rereading.reread(state.games[-1], state.line, state.occ)
        if found is None:
            return []
        pieces = state.pieces_shown
        if pieces is not None:
            board = state.games[-1].board(found.keep)
            for move in found.moves:
                board.push(move)
            if any(str(board.piece_at(sq)) != letter for sq, letter in pieces.items()):
                return []   # a board that names its pieces shows others
        return self._replace_plies(t, found.keep, found.moves)

    def _replace_plies(self, t: int, keep: int, moves: tuple[chess.Move, ...]) -> list[Event]:
        """Play ``moves`` (as many plies as the rest at least) after the game's first ``keep`` plies instead of the
        rest: ``move_amended`` for each ply that changes and the ones after it, ``move`` for the plies beyond; an
        amendment as moved after release that the line undoes is withdrawn; the lifts of a move under way after the
        line (pieces in the hand) are carried to the next ply."""
        state = self._state
        game = state.games[-1]
        line = state.line
        old, clocks, reached = list(game.moves), list(game.clocks), list(line.reached)
        released, line.released_on = line.released_on, None
        changed = next((i for i, (a, b) in enumerate(zip(old[keep:], moves, strict=False)) if a != b),
                       min(len(old) - keep, len(moves)))
        assert keep + len(moves) >= len(old)    # (a line re-read replaces every ply it does not keep)
        out: list[Event] = []
        line.truncate(keep)
        board = game.board(keep)
        before = board
        for index, move in enumerate(moves):
            number = keep + index + 1
            before = board.copy(stack=False)
            san = board.san_and_push(move)
            line.push(move, board, reached[number] if number < len(reached) else t)
            if number <= len(old):
                game.clocks[number - 1] = clocks[number - 1]
                if index >= changed:
                    out.append(MoveAmended(game.number, t, number, move.uci(), san, board.fen()))
            else:
                out.append(MoveMade(game.number, t, number, move.uci(), san, board.fen()))
            if released is not None and released[0] == number and released[1] == move:
                out.append(AmendmentWithdrawn(game.number, t, number, move.uci(), old[number - 1].uci(),
                                              "moved_after_release"))
            if move.promotion is not None:
                line.promotions[number] = False
                out.append(state.alert(t, "promotion_unverified", "4.4.4", number, {
                    "sq": chess.square_name(move.to_square), "assumed": "q",
                }))
            ended = self.after_move(t, board.copy(stack=False), san)
            out += ended
            if any(isinstance(event, GameEnd) for event in ended):
                break
        over = state.phase is OVER
        seen = state.evidence
        state.start_ply(Position(board.copy(stack=False)), (Position(before), PlyEvidence()))
        in_hand = [seen.last_lift[sq] for sq in chess.scan_forward(board.occupied & ~state.occ) if sq in seen.last_lift]
        if in_hand:     # the line ends with the next move under way: its lifts are that move's
            state.evidence.carry(seen, min(in_hand), state.position)
        if not over:
            state.enter(PLAYING)
        state.exchange_sq = None
        state.judge_at_rest = False
        line.presses.pressed = False
        line.presses.answered = None
        line.presses.answered_press = None
        line.unseen.settled_by_time = None
        return out

    def take_back_to(self, t: int, keep: int) -> list[Event]:
        """Remove plies after the first ``keep``: the board (or an operator) went back to that position."""
        state = self._state
        if not state.games:
            return []
        game = state.games[-1]
        if keep < 0 or keep >= len(game.moves):
            return []
        state.line.truncate(keep)
        state.start_ply(Position(game.board()), None)
        state.enter(PLAYING)
        state.line.presses.pressed = True
        state.line.presses.answered = None
        out: list[Event] = [Takeback(game.number, t, keep + 1, state.position.fen())]
        if state.occ == state.position.occ and state.sync is MISMATCH:
            out += state.restored(t, "takeback")
        return out
