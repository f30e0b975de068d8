"""Readings of the board: pure functions of a read-only view of an engine (:class:`BoardView`).

Each answers one question about what the board shows against the game (was the last move a capture whose victim
was pushed aside, did the board undo an answer, does it show an earlier position ...). They change nothing: the
table of :mod:`touchmove.rules.at_rest` turns their answers into decisions, and the engine applies those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import chess

from touchmove.rules.footprints import (
    SLIDE_OVERLAP_MS,
    Footprint,
    Position,
    castling_squares,
    footprint,
    promotion_alternatives,
)
from touchmove.rules.game_line import GameLine, Presses
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.identity import (
    PieceChange,
    answer_begun_past_knock,
    lands_as_named,
    made_with_hands,
    taken_with_victim_beside,
    under_way,
)
from touchmove.rules.pending import KNOCK_HOLD_MS, KNOCK_WINDOW_MS, InterruptedMove, knocked_coming_in
from touchmove.rules.phases import CLEARED_SQUARES, Phase, Sync
from touchmove.rules.ply_evidence import PlyEvidence

__all__ = [
    "KNOCK_ORDER_MS", "PROMOTION_LOOKBACK", "PUSH_ASIDE_MS", "STOOD_ASIDE_LANDING_MS", "STOOD_ASIDE_MS", "BoardView",
    "GameView",
    "amendment", "answer_left_before_press", "answer_undone", "capture_but_victim_aside", "capture_on_touchdown",
    "capture_swapped_unseen",
    "capture_under_way_on_touchdown", "castling_completed", "double_step_stood_aside", "earlier_position",
    "end_in_question", "explain_shown", "king_on_castling_square", "knock_hold_until", "landed_then_knocked",
    "made_past_knock", "mismatch_excused", "move_captured_on_touchdown", "named_further_on", "named_landing",
    "pending_double_step_stood_aside", "pending_touchdowns", "promotion_seen", "promotion_under_way",
    "pushed_capture", "reexplained_last", "replay_with", "shown_with_answer_begun", "takeback_proven", "touchdowns",
    "victim_pushed_first",
    "victim_set_aside",
]

#: How long (ms) before the lift of a move's piece the board may report the lift of a piece that move's hand
#: knocked: the squares of one DGT scan are read in field order (c5 before d4), so a knock may come out first.
KNOCK_ORDER_MS = 100
#: A victim pushed aside is replaced by the capturing piece in one motion: its square refilled within this long
#: after the push (a piece knocked off by a sleeve and put back takes a separate, slower reach).
PUSH_ASIDE_MS = 250
#: A piece stood aside by the hand that captures it rests on the neighbouring square at most this long (ms) before
#: it is taken off (hands: 120-400 ms); a piece that rested there longer was moved there, and its going is a knock.
STOOD_ASIDE_MS = 600
#: ... and the capturing piece lands on its square at least this long (ms) after it was taken off (hands, issue 24:
#: 0.4-1.2 s); an en passant capture takes its victim off in the capture's motion (80-320 ms before the landing, or
#: after it).
STOOD_ASIDE_LANDING_MS = 400
#: How many plies back an assumed promotion piece may still be corrected by how the piece moves.
PROMOTION_LOOKBACK = 40


class GameView(Protocol):
    """What the engine shows of itself, read-only: the board, the game and the time (what the readings and unseen
    play both see: :class:`BoardView`, :class:`~touchmove.rules.unseen_play.EngineInterface`)."""

    @property
    def occupancy(self) -> chess.Bitboard: ...
    @property
    def position(self) -> Position: ...
    @property
    def game(self) -> GameRecord | None: ...
    @property
    def current_game(self) -> GameRecord: ...
    @property
    def line(self) -> GameLine: ...
    @property
    def phase(self) -> Phase: ...
    @property
    def sync(self) -> Sync: ...
    @property
    def now(self) -> int: ...
    @property
    def pieces_shown(self) -> dict[chess.Square, str] | None: ...


class BoardView(GameView, Protocol):
    """What a reading sees of an engine (read-only): its :class:`GameView` and the evidence of the plies."""

    @property
    def previous(self) -> tuple[Position, PlyEvidence] | None: ...
    @property
    def evidence(self) -> PlyEvidence: ...
    @property
    def interrupted(self) -> InterruptedMove | None: ...
    @property
    def exchange_square(self) -> chess.Square | None: ...
    @property
    def has_clock(self) -> bool: ...
    @property
    def lost_unsearched(self) -> bool: ...
    @property
    def settle_ms(self) -> int: ...
    def pieces_changes(self) -> Sequence[PieceChange]: ...


#: A piece shown leaving its landing square in the same report that shows it on the square it is amended to (a
#: board reporting whole positions, its travel never shown) counts as released there only when the reports showed
#: it there this long (ms): how long it rested they cannot tell from its slide, which takes up to about half a
#: second over the board's squares (shared game 59 on a ChessLink board, default hands: a rook resting 95 ms on c3
#: on its way c1-c7 was shown there 330 ms).
SLID_ON_UNSEEN_MS = 1000


def released_there(view: BoardView, final: chess.Square) -> bool:
    """Return whether the last move's piece rested on its landing square for the settle time (released there, 4.7)
    before it left that square or a piece came down on ``final`` (the square it is amended to): one gone on sooner,
    the move made all the same (the square refilled within the sensors' chatter time, or held by a knocked piece
    fallen there), was passing through, not released; nor was a capture read from its square's flick. Shown
    leaving it and on ``final`` at once, it is released there only when shown there :data:`SLID_ON_UNSEEN_MS`."""
    game = view.current_game
    reached = view.line.reached[-1]
    if not game.moves or reached is None or final == game.moves[-1].to_square:
        return True
    landing = game.moves[-1].to_square
    if _read_from_flick(view.line, landing):
        return False
    changes = view.line.changes
    for t, sq, occupied in changes:
        if t >= reached and ((sq == landing and not occupied) or (sq == final and occupied)):
            at_once = any(when == t and (there, filled) in ((landing, False), (final, True)) and there != sq
                          for when, there, filled in changes)
            return t - reached >= (max(view.settle_ms, SLID_ON_UNSEEN_MS) if at_once else view.settle_ms)
    return True


def _read_from_flick(line: GameLine, landing: chess.Square) -> bool:
    """Return whether the last ply, a capture landing on ``landing``, was read from that square's flick (it emptied
    and filled again within the chatter time) with no change of it seen."""
    before = line.reached[-2] if len(line.reached) >= 2 else None
    reached = line.reached[-1]
    if before is None or reached is None:
        return False
    return (any(sq == landing and emptied >= before for emptied, _, sq in line.flicks)
            and not any(sq == landing and before < t <= reached for t, sq, _ in line.changes))


def straightened(ply: PlyEvidence, presses: Presses) -> chess.Bitboard:
    """Return the squares the last mover lifted and put back before his press (adjustments, 6.2.5).

    A lift before the press whose square was refilled only after it may be the opponent's, taking the piece as a
    victim (a bullet reply): that one is not counted.
    """
    squares = 0
    for sq in chess.scan_forward(ply.adjusted):
        placed = ply.last_place.get(sq)
        if placed is not None and (not presses.pressed or placed <= presses.pressed_at):
            squares |= chess.BB_SQUARES[sq]
    return squares


def explain_shown(occ: chess.Bitboard, position: Position, ply: PlyEvidence, presses: Presses) -> Footprint | None:
    """Return the legal move that ``occ`` shows from ``position`` with the lifts of ``ply``, if any."""
    return position.explain(occ, ply.lifted, ply.lifts_unseen, ply.held, ply.last_lift, ply.last_place,
                            straightened(ply, presses) if ply.adjusted else 0)


def shown_with_answer_begun(occ: chess.Bitboard, position: Position, ply: PlyEvidence,
                            presses: Presses) -> tuple[Footprint, chess.Bitboard] | None:
    """Return the legal move ``occ`` shows from ``position`` but for a piece of the next mover lifted away from it,
    with its square: the answer begun before the scan that showed the move (the hand had landed, the opponent's
    hand came within one scan); else None.

    A lifted piece the moving piece can capture may be its victim (a capture under way), one next to the move's
    squares a piece his sleeve knocked, and one that can capture a piece lifted too may have done so (the board
    shows that capture made alike): none is read so. Lifts not seen (a snapshot) prove nothing.
    """
    board = position.board
    begun = board.occupied_co[not board.turn] & ply.lifted & ~occ
    if not begun or begun & (begun - 1) or ply.lifts_unseen:
        return None  # (more than one piece of his off the board: not one move begun, the board being cleared)
    shown = explain_shown(occ | begun, position, ply, presses)
    if shown is None or ply.lifted & position.occ & ~shown.involved & ~begun:
        return None  # (another piece of the position lifted too: a touch, a capture's victim, ... not so plain)
    for capture in board.generate_legal_captures(chess.BB_SQUARES[shown.move.from_square]):
        victim = capture.to_square
        if board.is_en_passant(capture):
            victim = chess.square(chess.square_file(capture.to_square), chess.square_rank(capture.from_square))
        if begun & chess.BB_SQUARES[victim]:
            return None  # the piece shown moved may be taking it (set down on its way)
    near = shown.involved
    for sq in chess.scan_forward(shown.involved):
        near |= chess.BB_KING_ATTACKS[sq]
    if near & begun:
        return None
    after = board.copy(stack=False)
    after.push(shown.move)
    if any(True for _ in after.generate_pseudo_legal_captures(begun, ply.lifted)):
        return None  # a piece it takes was lifted too: the board would show that capture made alike
    return shown, begun


def reexplained_last(view: BoardView) -> Footprint | None:
    """Return the move the board shows from the position before the last move, with both plies' lifts."""
    previous = view.previous
    if previous is None:
        return None
    position, ply = previous
    return explain_shown(view.occupancy, position, ply.then(view.evidence), view.line.presses)


def pushed_capture(view: BoardView) -> Footprint | None:
    """Return the capture the last move really was when its piece only pushed the victim aside, else None.

    The last move landed next to a piece the same piece could capture; that piece's square was emptied and
    refilled after the landing (the victim pushed onto the landing square, the capturing piece set down in its
    place, in the same motion), and the landing square is empty again (the victim taken off, before the mover's
    clock is pressed): the board shows the capture. The opponent lifting the piece that just landed, to capture
    it, refills no square next to it.
    """
    previous, game = view.previous, view.game
    if previous is None or game is None:
        return None
    last = game.moves[-1]
    landing = chess.BB_SQUARES[last.to_square]
    evidence = view.evidence
    if not evidence.lifted & landing or view.occupancy & landing:
        return None
    taken_off = evidence.first_lift.get(last.to_square, view.now)
    presses = view.line.presses
    if view.has_clock and presses.pressed and presses.pressed_at < taken_off:
        return None  # taken off after the press: the opponent's hand
    position, ply = previous
    landed = ply.last_place.get(last.to_square)
    shown = reexplained_last(view)
    if shown is None or landed is None or shown.move.from_square != last.from_square:
        return None
    victim = shown.move.to_square
    # The first refill after the landing (the mover may straighten the capturing piece later).
    refilled = min((placed for placed in (ply.last_place.get(victim), evidence.last_place.get(victim))
                    if placed is not None and placed > landed), default=-1)
    if (not position.board.occupied_co[not position.board.turn] & chess.BB_SQUARES[victim]
            or not chess.BB_KING_ATTACKS[victim] & landing or not 0 <= refilled - landed <= PUSH_ASIDE_MS):
        return None
    return shown


def touchdowns(view: BoardView) -> list[tuple[Position, chess.Move, int]]:
    """Return the other readings of the last move that its piece touched down for: for each square it was placed
    on during its ply, empty before and not where it was read, and that it could legally reach, the position after
    that move, the move, and when it landed there."""
    previous, game = view.previous, view.game
    if previous is None or game is None or not game.moves:
        return []
    last = game.moves[-1]
    before, ply = previous
    found = []
    for square, landed in ply.last_place.items():
        if square == last.to_square or before.occ & chess.BB_SQUARES[square]:
            continue
        moved = chess.Move(last.from_square, square)
        if before.board.is_legal(moved):
            after = before.board.copy(stack=False)
            after.push(moved)
            found.append((before.after(moved, after), moved, landed))
    return found


def capture_on_touchdown(view: BoardView) -> tuple[Footprint, int] | None:
    """Return the move the last one really was and when its piece touched down, when the board shows the piece
    captured on a square it touched down on, else None.

    The last move's piece landed on a square (a touchdown) and was then read elsewhere (moved on after release,
    or taken as the destination): a neighbouring square it could have reached, where the opponent stood it for a
    moment before taking it off to capture it. When the opponent's piece then lands on the touchdown square, the
    only legal reading is "moved there, then captured there": the move to the touchdown square, and the capture
    on it proven by the lifts since the touchdown.
    """
    previous, game = view.previous, view.game
    if previous is None or game is None or not game.moves:
        return None
    occ = view.occupancy
    last_to = game.moves[-1].to_square
    if occ & chess.BB_SQUARES[last_to]:
        return None  # the piece still stands where it was read (the common case: checked first)
    before_occ = previous[0].occ
    for after, moved, landed in touchdowns(view):
        if not occ & chess.BB_SQUARES[moved.to_square]:
            continue
        evidence = previous[1].then(view.evidence)
        # (a piece put back on its own square meanwhile is a touch or an adjustment, of either player)
        placed = {sq for sq, at in evidence.last_place.items() if at > landed and not before_occ >> sq & 1}
        if not placed <= {moved.to_square, last_to}:
            continue  # something else was placed since: not a piece stood aside and captured
        stood, taken_off = evidence.last_place.get(last_to), evidence.last_lift.get(last_to)
        if stood is None or taken_off is None or not stood < taken_off <= stood + STOOD_ASIDE_MS:
            continue  # it rested where it was read: moved there (its going is a knock, not this capture)
        lifted = evidence.lifted_since(landed)
        capture = after.explain(occ, lifted, False, evidence.held & lifted, evidence.last_lift, evidence.last_place)
        if capture is not None and capture.move.to_square == moved.to_square:
            return footprint(previous[0].board, moved), landed
    return None


def double_step_stood_aside(view: BoardView, shown: Footprint, t: int) -> tuple[Footprint, int] | None:
    """Return the single step the last move really was and when its pawn touched down (as
    :func:`capture_on_touchdown`), when ``shown``, landing at ``t``, is an en passant capture of that pawn that the
    board shows exactly as a single step stood aside and captured on its square: the pawn touched down on the square
    passed, stood on its double step's square only a moment (at most :data:`STOOD_ASIDE_MS`), and was taken off at
    least :data:`STOOD_ASIDE_LANDING_MS` before the capturing pawn landed; else None (the double step and en
    passant stand: the same position after either)."""
    game = view.game
    if game is None or not game.moves or not view.position.board.is_en_passant(shown.move):
        return None
    taken_off = view.evidence.last_lift.get(game.moves[-1].to_square)
    if taken_off is None or t - taken_off < STOOD_ASIDE_LANDING_MS:
        return None
    return capture_on_touchdown(view)


def pending_touchdowns(view: BoardView) -> list[tuple[Position, chess.Move, int]]:
    """Return the moves being made whose piece touched down on a square, was lifted from it and stood on an empty
    neighbouring square it could also reach, and is off the board again (no move of it made yet): for each, the
    position after it, the move, and a time just before the touchdown square's first lift."""
    position, evidence, occ = view.position, view.evidence, view.occupancy
    board = position.board
    found = []
    for square in evidence.last_place:
        if position.occ & chess.BB_SQUARES[square]:
            continue
        # The touchdown came before the square's first lift (its last place may be the capturing piece's).
        taken = evidence.first_lift.get(square)
        if taken is None:
            continue
        # Stood aside: a neighbouring square placed after that lift and empty again, and nothing else placed since
        # but the capturing piece (a piece slid on across the square lands somewhere).
        places, lifts = evidence.last_place, evidence.last_lift
        aside = [sq for sq in chess.scan_forward(chess.BB_KING_ATTACKS[square] & ~position.occ & ~occ)
                 if places.get(sq, -1) > taken and places[sq] < lifts.get(sq, -1) <= places[sq] + STOOD_ASIDE_MS]
        placed_since = {sq for sq, at in evidence.last_place.items() if at > taken and not position.occ >> sq & 1}
        if not aside or not placed_since <= {square, *aside}:
            continue
        for start, lifted_at in evidence.first_lift.items():
            if lifted_at >= taken or not board.occupied_co[board.turn] & chess.BB_SQUARES[start]:
                continue
            moved = chess.Move(start, square)
            if board.is_legal(moved) and any(board.is_legal(chess.Move(start, sq)) for sq in aside):
                after = board.copy(stack=False)
                after.push(moved)
                found.append((position.after(moved, after), moved, taken - 1))
    return found


def move_captured_on_touchdown(view: BoardView) -> tuple[Footprint, int] | None:
    """Return the move being made and when its piece touched down, when the board shows that piece captured on a
    square it touched down on before any move was made of it (the capturing player lifted it before it settled
    and stood it aside a moment), else None."""
    occ, evidence = view.occupancy, view.evidence
    for after, moved, landed in pending_touchdowns(view):
        if not occ & chess.BB_SQUARES[moved.to_square]:
            continue
        lifted = evidence.lifted_since(landed)
        capture = after.explain(occ, lifted, False, evidence.held & lifted, evidence.last_lift, evidence.last_place)
        if capture is not None and capture.move.to_square == moved.to_square:
            return footprint(view.position.board, moved), landed
    return None


def pending_double_step_stood_aside(view: BoardView, interrupted: InterruptedMove, answer: Footprint,
                                    t: int) -> tuple[Footprint, int] | None:
    """Return the single step being made and when its pawn touched down (as :func:`move_captured_on_touchdown`),
    when ``answer``, landing at ``t``, is an en passant capture after ``interrupted``, a double step not made yet
    (its pawn lifted before it settled), that the board shows exactly as a single step stood aside and captured on
    its square (see :func:`double_step_stood_aside`); else None."""
    after = interrupted.after(view.position)
    if answer.move.to_square != after.board.ep_square or not after.board.is_en_passant(answer.move):
        return None
    taken_off = view.evidence.last_lift.get(interrupted.footprint.move.to_square)
    if taken_off is None or t - taken_off < STOOD_ASIDE_LANDING_MS:
        return None
    return move_captured_on_touchdown(view)


def capture_under_way_on_touchdown(view: BoardView) -> bool:
    """Return whether the board shows a capture under way of the last move's piece on a square it touched down on
    (its piece stood aside and taken off, the capturing piece in the hand): no mismatch yet."""
    occ, game = view.occupancy, view.game
    if any(after.continuable(occ) for after, _, _ in pending_touchdowns(view)):
        return True
    if game is None or not game.moves or occ & chess.BB_SQUARES[game.moves[-1].to_square]:
        return False
    return any(after.continuable(occ) for after, _, _ in touchdowns(view))


def refilled_before_moving_on(view: BoardView, position: Position, last: chess.Move, shown: Footprint) -> bool:
    """Return whether ``shown``, the last move's piece moved on to a capture, had its victim's square refilled
    before that piece left its landing square: then the refill was someone else's hand (the victim's owner
    straightening it), not the piece moving on, which a slide may sense there only a moment early.
    """
    victim = shown.move.to_square
    evidence = view.evidence
    left = evidence.first_lift.get(last.to_square)
    if left is None or victim == last.to_square or not position.occ & chess.BB_SQUARES[victim]:
        return False
    refilled = evidence.last_place.get(victim)
    previous = view.previous
    if refilled is None and previous is not None:
        refilled = previous[1].last_place.get(victim)
    return refilled is not None and refilled < left - SLIDE_OVERLAP_MS


def amendment(view: BoardView, pushed: Footprint | None = None) -> Footprint | None:
    """Return the move the last one is to be amended to, re-read from the position before it (what the board
    shows wins), or None. ``pushed``: the move it really was, read from other evidence (a capture whose victim
    was pushed aside first, an answer whose first reading was a piece displaced).

    Only the same piece replayed (or castling completed from its rook's move) is an amendment; a different piece
    is left to a takeback or a mismatch, and a piece moved on to a capture whose square was refilled before it
    left is no amendment (:func:`refilled_before_moving_on`).
    """
    previous = view.previous
    if previous is None:
        return None
    position = previous[0]
    last = view.current_game.moves[-1]
    shown = pushed or reexplained_last(view)
    if shown is None or shown.move == last:
        return None
    board = position.board
    castling = board.is_castling(shown.move)
    rook_part = castling and castling_squares(board, shown.move)[0] == last.from_square
    if not (last.from_square == shown.move.from_square or rook_part):
        return None
    if pushed is None and not castling and refilled_before_moving_on(view, position, last, shown):
        return None
    return shown


def victim_set_aside(view: BoardView) -> bool:
    """Return whether the board shows a capture made but for its victim, pushed onto a square next to it.

    The victim is still to be taken off: a capture in progress, which no other explanation may preempt.
    """
    return capture_but_victim_aside(view.position, view.occupancy, view.evidence, view.evidence.lifted,
                                    view.pieces_shown)


def capture_but_victim_aside(position: Position, occ: chess.Bitboard, ply: PlyEvidence, lifted: chess.Bitboard,
                             pieces: dict[chess.Square, str] | None = None) -> bool:
    """Return whether ``occ`` shows a capture of ``position`` made (proven by ``lifted``) but for its victim, pushed
    onto a square next to it (on a board that names its pieces, ``pieces``, the victim named there)."""
    filled = occ & ~position.occ
    if not filled or filled & (filled - 1):
        return False
    shown = position.explain(occ & ~filled, lifted, ply.lifts_unseen, ply.held, ply.last_lift, ply.last_place)
    return (shown is not None and bool(chess.BB_KING_ATTACKS[shown.move.to_square] & filled)
            and bool(position.occ & chess.BB_SQUARES[shown.move.to_square])
            and _named_as(pieces, filled.bit_length() - 1, position.board.piece_at(shown.move.to_square)))


def _named_as(pieces: dict[chess.Square, str] | None, sq: chess.Square, piece: chess.Piece | None) -> bool:
    """Return whether a board that names its pieces (``pieces``) names ``piece`` on ``sq``, or names nothing there
    (a board that names none: True)."""
    named = None if pieces is None else pieces.get(sq)
    return named is None or piece is None or named == piece.symbol()


def victim_pushed_first(position: Position, occ: chess.Bitboard, pieces: dict[chess.Square, str] | None = None) -> bool:
    """Return whether ``occ`` shows a capture of ``position`` under way whose victim was pushed aside before the
    capturing piece landed: one square filled that the position has empty, next to an emptied square whose piece
    (the other side's; on a board that names its pieces, ``pieces``, the one named on the filled square) a piece
    the side to move has lifted can capture; with the victim back on its square the board is a move of the position
    in progress. The capturing piece lands next, then the victim is taken off."""
    filled = occ & ~position.occ
    if not filled or filled & (filled - 1):
        return False
    board = position.board
    aside = filled.bit_length() - 1
    for victim in chess.scan_forward(position.occ & ~occ & chess.BB_KING_ATTACKS[aside]
                                     & board.occupied_co[not board.turn]):
        if not _named_as(pieces, aside, board.piece_at(victim)):
            continue    # (the piece on the square filled is another: a knight landed there, not the victim)
        back = (occ & ~filled) | chess.BB_SQUARES[victim]
        lifted = position.occ & ~back & board.occupied_co[board.turn]
        if (any(True for _ in board.generate_legal_moves(lifted, chess.BB_SQUARES[victim]))
                and position.continuable(back)):
            return True
    return False


def answer_left_before_press(view: BoardView) -> bool:
    """Return whether the last ply is an answer made before the press of the ply it answers, and the board left
    it (a change since it was made) before that press."""
    presses = view.line.presses
    if (presses.answered is None or view.previous is None or not view.has_clock
            or view.line.unseen.unseen_since is not None):
        return False
    pressed, lifts = presses.answered_press, view.evidence.lifts
    return pressed is None or (bool(lifts) and lifts[0][0] <= pressed)


def answer_moved_on(view: BoardView) -> Footprint | None:
    """Return the move the answer really was when its piece, lying where it was read, is taken up and played
    elsewhere (the first reading was a piece displaced, not released: no alert), else None."""
    if not answer_left_before_press(view):
        return None
    shown = reexplained_last(view)
    last = view.current_game.moves[-1]
    if shown is None or shown.move == last or shown.move.from_square != last.from_square:
        return None
    return amendment(view, shown)


def answer_undone(view: BoardView) -> tuple[Position, PlyEvidence, Footprint | None] | None:
    """Return how to take back an answer that the board undid before the move it answered was completed by the
    press, else None: the position before the answered ply, the evidence to re-read it with, and the move it is
    amended to (None: it stands, the opponent's real answer is under way).

    The last ply was made before the mover of the ply before it pressed his clock, and before that press the board
    shows that ply alone again (or that piece's move re-read over both plies): the answer was a piece displaced
    (knocked off by the sleeve and lying where it could move), not a move. Its piece lifted from where it landed,
    nothing else changed, shows neither yet (a hand straightening it, a DGT clock's press read late or left out).
    """
    presses = view.line.presses
    answered, previous = presses.answered, view.previous
    if answered is None or previous is None or not answer_left_before_press(view):
        return None
    game = view.current_game
    if len(game.moves) < 2:
        return None
    position, ply = answered
    landing = chess.BB_SQUARES[game.moves[-1].to_square]
    if view.evidence.lifted & view.position.occ == landing and view.occupancy == view.position.occ & ~landing:
        # its piece lifted from where it landed, nothing else of the position (a victim pushed aside may have been
        # taken off meanwhile): maybe to straighten it (the next change)
        return None
    pieces = view.pieces_shown
    if previous[0].continuable(view.occupancy) and (pieces is None or under_way(previous[0].board, pieces)):
        # the ply before the answer, with the opponent's real answer under way (on a board that names its pieces,
        # only if they show it so: not the answer's piece put back where it landed, beside a touch of the next
        # mover, which the squares alone read as another capture under way)
        return position, ply, None
    lifts = ply.then(previous[1]).then(view.evidence)
    shown = explain_shown(view.occupancy, position, lifts, presses)
    if shown is None or shown.move.from_square != game.moves[-2].from_square:
        return None
    return position, lifts, shown


def castling_completed(view: BoardView) -> bool:
    """Return whether the last move was a rook's that the king has now completed into castling (4.4.2)."""
    previous, game = view.previous, view.game
    if previous is None or game is None or not game.moves:
        return False
    last = game.moves[-1]
    board = previous[0].board
    rook = chess.BB_SQUARES[last.from_square]
    if not board.rooks & rook & board.castling_rights:
        return False
    return any(castling_squares(board, move)[0] == last.from_square
               and footprint(board, move).occ_after == view.occupancy for move in board.generate_castling_moves())


def end_in_question(view: BoardView) -> bool:
    """Return whether the board, a few squares off the final position, may show the game going on."""
    game = view.game
    if game is None or game.result == "*" or not game.moves:
        return False
    diff = view.occupancy ^ view.position.occ
    return bool(diff) and diff.bit_count() < CLEARED_SQUARES


def replay_with(game: GameRecord, number: int, move: chess.Move) -> chess.Board | None:
    """Return the game's position with ply ``number`` replaced by ``move`` (None: a later ply is then illegal)."""
    board = game.board(number - 1)
    for m in [move, *game.moves[number:]]:
        if not board.is_legal(m):
            return None
        board.push(m)
    return board


def promotion_seen(view: BoardView) -> tuple[int, chess.Move] | None:
    """Return a promotion (its ply and the move with another piece) that the board shows was made with another
    piece than assumed (the promoted piece moving as that piece would), else None."""
    game = view.current_game
    promotions = view.line.promotions
    unverified = [number for number in sorted(promotions, reverse=True)
                  if not promotions[number] and number >= len(game.moves) - PROMOTION_LOOKBACK]
    if not unverified or explain_shown(view.occupancy, view.position, view.evidence, view.line.presses) is not None:
        return None  # (the game's own line shows it: a board that names its pieces may not have it made yet)
    for number in unverified:
        original = game.moves[number - 1]
        before = game.board(number - 1)
        for alternative in promotion_alternatives(before, original):
            replayed = replay_with(game, number, alternative)
            if replayed is None:
                continue
            if explain_shown(view.occupancy, Position(replayed), view.evidence, view.line.presses) is not None:
                return number, alternative
    return None


def promotion_under_way(view: BoardView) -> bool:
    """Return whether a pawn of the mover that can promote is off its square (a promotion being made)."""
    if view.phase is not Phase.PLAYING:
        return False
    board = view.position.board
    last_rank_next = chess.BB_RANK_7 if board.turn == chess.WHITE else chess.BB_RANK_2
    return bool(board.pawns & board.occupied_co[board.turn] & last_rank_next & ~view.occupancy)


def takeback_proven(view: BoardView) -> tuple[int, int] | None:
    """Return (plies kept, when that position showed) when the board showed the position of several plies ago
    and now shows play from there: the takeback; else None.

    Taking back several plies at once is read only when the board goes on from that position (a move of it made
    or under way) and not from the game position: until then, a piece knocked off its square and lying where the
    earlier position has one shows that position as well, and its owner putting it back shows the game again.
    """
    evidence = view.evidence
    pending = evidence.earlier
    if pending is None:
        return None
    keep, shown = pending
    game = view.current_game
    occ = view.occupancy
    if occ == view.line.occupancies[keep] or keep >= len(game.moves):
        return None
    earlier = Position(game.board(keep))
    lifted = 0
    for at, sq in evidence.lifts:
        if at >= shown:
            lifted |= chess.BB_SQUARES[sq]
    move = earlier.explain(occ, lifted, False, evidence.held & lifted, evidence.last_lift, evidence.last_place)
    if move is None and not earlier.continuable(occ):
        return None
    return keep, shown


def earlier_position(view: BoardView) -> int | None:
    """Return how many plies to keep if the board shows an earlier position of this game, else None."""
    occupancies = view.line.occupancies
    for plies in range(len(occupancies) - 2, -1, -1):
        if occupancies[plies] == view.occupancy:
            return plies
    return None


def king_on_castling_square(view: BoardView) -> chess.Square | None:
    """Return the rook of the castling whose square the king alone rests on (4.7.2: only that castling may
    follow), else None."""
    position = view.position
    board = position.board
    king = board.king(board.turn)
    if king is None or not view.evidence.lifted & chess.BB_SQUARES[king]:
        return None
    found = None
    for move in board.generate_castling_moves():
        if move.from_square == king:
            rook, king_to, _ = castling_squares(board, move)
            shown = (position.occ & ~chess.BB_SQUARES[king]) | chess.BB_SQUARES[king_to]
            if king_to != king and shown == view.occupancy:
                found = rook
    return found


def mismatch_excused(view: BoardView) -> bool:
    """Return whether the board, at rest off the game position, shows no mismatch (most often first): a move in
    progress (a piece in the hand), the promoted pawn taken off to be exchanged for the new piece (4.6), the last
    move being made again (rook-first castling, a piece moved on), an interrupted move with the opponent's answer
    in progress after it (a bullet recapture, victim lifted first, the capturing piece still in the hand), or a
    capture under way of the last move's piece on a square it touched down on.
    """
    occ, position = view.occupancy, view.position
    exchange, previous, interrupted = view.exchange_square, view.previous, view.interrupted
    return (position.continuable(occ)
            or (exchange is not None and occ ^ position.occ == chess.BB_SQUARES[exchange])
            or (previous is not None and previous[0].continuable(occ))
            or (interrupted is not None and interrupted.after(position).continuable(occ))
            or capture_under_way_on_touchdown(view))


def landed_then_knocked(view: BoardView) -> tuple[Footprint, int] | None:
    """Return the move of the side to move whose piece landed and was gone from its square again before the move
    was made (within the settle time), and when it landed, when the board now shows the opponent's answer made
    with that piece off: the answer landed next to it within :data:`~touchmove.rules.pending.KNOCK_WINDOW_MS` of
    its going (the sleeve of the hand coming in knocked it off, and the move was made). On a board that names its
    pieces they must show that (:func:`~touchmove.rules.identity.made_with_hands` after the move). None: no such
    move."""
    pieces = view.pieces_shown
    board, evidence, occ = view.position.board, view.evidence, view.occupancy
    for sq, landed in evidence.last_place.items():
        gone = evidence.last_lift.get(sq)
        if gone is None or gone < landed or occ & chess.BB_SQUARES[sq] or board.piece_at(sq) is not None:
            continue
        answered = [other for other, at in evidence.last_place.items() if other != sq
                    and 0 <= at - gone <= KNOCK_WINDOW_MS and chess.BB_KING_ATTACKS[sq] & chess.BB_SQUARES[other]]
        if not answered:
            continue        # no answer landed next to it as it went: the mover's own hand took it up again
        for move in board.generate_legal_moves(chess.BB_ALL, chess.BB_SQUARES[sq]):
            lifted = evidence.first_lift.get(move.from_square)
            if move.promotion not in (None, chess.QUEEN) or board.is_castling(move) or lifted is None \
                    or lifted > landed:
                continue
            after = board.copy(stack=False)
            after.push(move)
            if pieces is not None:
                white = board.turn == chess.WHITE
                if not any((named_landing(view, other, evidence.last_place[other]) or pieces.get(other, "K")).isupper()
                           != white for other in answered):
                    continue    # what landed next to it is not the other side's (the piece itself, pushed aside or
                    #             slid on: a pawn named on e6 then e5, taken there at once, is ...e5 fxe5)
                letter = str(board.piece_at(move.from_square))
                if named_landing(view, sq, landed) != letter:
                    continue    # the board named another piece where it landed (a piece of the other side)
                # (its piece named on another square it could have gone to, now or since it landed, is that piece
                # moving on: Bc5 touched down on f2 and slid on to g1 as the king answered, not Bf2 with the bishop
                # knocked onto g1; ...Rc8-c3 named on c6 next, lifted from there, is no ...Rc3 knocked off)
                moved_on = any(named == letter and str(board.piece_at(other)) != named and other != sq
                               and board.is_legal(chess.Move(move.from_square, other))
                               for other, named in pieces.items()) or named_further_on(view, board, move, landed)
                if not moved_on and made_with_hands(after, pieces):
                    return footprint(board, move), landed
                continue
            # (an answer landing where the move's own piece could have gone on to is that piece moving on: Qc1-f4
            # touched down, then on to g5, the g6 pawn knocked, is not Qf4 g5)
            answer = Position(after).explain(occ | chess.BB_SQUARES[sq], evidence.lifted & ~chess.BB_SQUARES[sq])
            if (answer is not None and answer.move.to_square in answered
                    and not answer.must_lift & chess.BB_SQUARES[sq]
                    and not any(board.generate_legal_moves(chess.BB_SQUARES[move.from_square],
                                                           chess.BB_SQUARES[answer.move.to_square]))):
                return footprint(board, move), landed
    return None


def named_landing(view: BoardView, sq: chess.Square, at: int) -> str | None:
    """Return the piece a board that names its pieces named put down on ``sq`` at ``at`` (or last before it), None
    if it named none."""
    return next((c.piece for c in reversed(view.pieces_changes()) if c.sq == sq and c.t <= at and c.piece is not None),
                None)


def named_further_on(view: BoardView, board: chess.Board, move: chess.Move, since: int) -> bool:
    """Return whether a board that names its pieces named ``move``'s piece (legal in ``board``), at ``since`` or
    later, on another square than its landing that it could have gone to: it moved on (a rook slid c8-c3 named on
    c6 next). A square holding that piece already is no such square (no move goes there)."""
    letter = str(board.piece_at(move.from_square))
    return any(c.piece == letter and c.t >= since and c.sq != move.to_square
               and board.is_legal(chess.Move(move.from_square, c.sq)) for c in view.pieces_changes())


#: How far apart (ms) the lift of a piece knocked by a hand carrying an answer and the lift of that answer's piece
#: (or of its victim) may be: the sleeve knocks while the hand carries the piece, within a Chessnut or ChessLink
#: report or the next (100 ms); a piece lifted 287 ms after an answer begun was the next ply's (ChessLink fast
#: replies 22: ...f6 with exf6 begun).
KNOCKED_CARRYING_MS = 150


def answer_begun_knocking(view: BoardView) -> bool:
    """Return whether a board that names its pieces shows a legal move made and then, its changes seen one by one
    after that move's piece landed, the answer begun and one piece off next to where the answering piece can go
    (:func:`~touchmove.rules.identity.answer_begun_past_knock`): hands (the answering sleeve), not plies lost. A
    board blind meanwhile (a snapshot after lost changes) leaves it to the search."""
    pieces, evidence = view.pieces_shown, view.evidence
    if pieces is None or evidence.lifts_unseen:
        return False
    found = answer_begun_past_knock(view.position.board, pieces)
    if found is None:
        return False
    landing, answer, knocked, victim = found
    landed = evidence.last_place.get(landing)
    if landed is None or any(evidence.last_lift.get(sq, -1) < landed for sq in (answer, knocked)):
        return False
    # the sleeve knocks as the hand carries the answer: within moments of its lift (or of its victim's)
    carried = max(evidence.last_lift[answer], evidence.last_lift.get(victim, -1) if victim is not None else -1)
    return abs(evidence.last_lift[knocked] - carried) <= KNOCKED_CARRYING_MS


def taken_with_victim_pushed_aside(view: BoardView) -> bool:
    """Return whether a board that names its pieces, its changes seen one by one, shows a move whose piece an
    answer took where it landed with that piece pushed onto an empty square beside it, still to be taken off
    (:func:`~touchmove.rules.identity.taken_with_victim_beside`): a bullet recapture's hand, not plies lost."""
    pieces = view.pieces_shown
    return pieces is not None and not view.evidence.lifts_unseen and taken_with_victim_beside(view.position.board,
                                                                                               pieces)


def made_past_knock(view: BoardView) -> tuple[Footprint, chess.Square] | None:
    """Return the legal move the board shows made but for one piece of the other side off next to its landing
    square, and that square, when that piece was lifted within :data:`~touchmove.rules.pending.KNOCK_WINDOW_MS`
    before the move's piece landed (and not long before that piece was lifted) and is not back: the sleeve of the
    hand coming in knocked it off (it is put back later, or the board says otherwise then); else None. Not a piece
    the move lifts itself (its victim), nor a move whose piece a board that names its pieces does not name on its
    landing square. A piece of the mover's own is never read so: knocked onto the square read as the landing, it is
    what the board shows there (Qd1-e2 with the king lifted from e1 just after is the queen's move, not Ke2)."""
    occ, position, evidence, pieces = view.occupancy, view.position, view.evidence, view.pieces_shown
    board = position.board
    missing = position.occ & ~occ
    for sq in chess.scan_forward(missing & board.occupied_co[not board.turn]):
        # (only the other side's piece: one of the mover's own knocked onto the square read as the landing is that
        # move's piece to the board, ...b6 with the c6 pawn knocked onto b5 read as ...b5 while b6 is not reported)
        gone = evidence.last_lift.get(sq)
        if gone is None or evidence.last_place.get(sq, -1) > gone:
            continue
        shown = explain_shown(occ | chess.BB_SQUARES[sq], position, evidence, view.line.presses)
        if shown is None or (pieces is not None and not lands_as_named(board, shown.move, pieces)):
            continue
        landed = evidence.last_place.get(shown.move.to_square)
        taken = evidence.first_lift.get(shown.move.from_square)
        if (landed is None or taken is None or gone < taken - KNOCK_ORDER_MS
                or not knocked_coming_in(board, shown.move, sq, gone, landed)):
            continue    # (a piece lifted well before the moving piece was in the hand is no knock of that hand)
        # Another square lifted or filled while the move was made may be where it really went, the knocked piece
        # fallen on the square read as its landing (Nxe4 with the d4 pawn knocked onto c4 is not Nc4; Rxf6, its
        # victim taken off first, with the e5 pawn knocked onto f4 is not Rf4).
        others = shown.must_lift | shown.placed | chess.BB_SQUARES[sq]
        if not any(at >= taken and not others & chess.BB_SQUARES[lifted] for at, lifted in evidence.lifts) \
                and not any(at >= taken and not others & chess.BB_SQUARES[placed]
                            for placed, at in evidence.last_place.items()):
            return shown, sq
    return None


def capture_swapped_unseen(view: BoardView) -> tuple[Footprint, int] | None:
    """Return the capture the board shows made but for its victim's going, and when its square emptied, when the
    capture square flicked (emptied and filled again within the sensors' chatter time, which drops both changes)
    after the capturing piece was lifted (the only such square): the victim swapped for it in one motion. The board
    then shows only the capturing piece's square empty, as for a piece in the hand; a press or the next ply tells
    which (a touched victim binds to its capture too, 4.3.2). A promotion is read as the queen's. None: no such
    capture."""
    occ, position, evidence, pieces = view.occupancy, view.position, view.evidence, view.pieces_shown
    board = position.board
    missing = position.occ & ~occ
    if occ & ~position.occ or not missing or missing & (missing - 1) or not missing & board.occupied_co[board.turn]:
        return None
    src = missing.bit_length() - 1
    lifted = evidence.last_lift.get(src)
    if lifted is None:
        return None
    emptied = {sq: at for at, _, sq in view.line.flicks if at > lifted}     # (the flicks of this ply, latest last)
    if not emptied:
        return None
    flicked = [move for move in board.generate_legal_captures(from_mask=missing)
               if move.to_square in emptied and move.promotion in (None, chess.QUEEN) and not board.is_en_passant(move)]
    if len(flicked) != 1:
        return None
    move = flicked[0]
    if pieces is not None and not lands_as_named(board, move, pieces):
        return None
    return footprint(board, move), emptied[move.to_square]


def knock_hold_until(view: BoardView) -> int | None:
    """Return until when (device ms) the board may rest with one piece off that the last move's hand knocked (a
    piece next to its landing square, lifted within :data:`~touchmove.rules.pending.KNOCK_WINDOW_MS` of the move
    being made, before or after) before ``board_mismatch`` is raised: :data:`~touchmove.rules.pending.KNOCK_HOLD_MS`
    after it went, the time a hand takes to put it back. None: the board differs in another way."""
    game, occ, position = view.game, view.occupancy, view.position
    missing = position.occ & ~occ
    if game is None or not game.moves or occ & ~position.occ or missing.bit_count() != 1:
        return None
    reached = view.line.reached[-1]
    sq = chess.lsb(missing)
    if reached is None or not chess.BB_KING_ATTACKS[game.moves[-1].to_square] & missing:
        return None
    previous = view.previous
    gone = view.evidence.last_lift.get(sq, previous[1].last_lift.get(sq) if previous is not None else None)
    if gone is None or abs(reached - gone) > KNOCK_WINDOW_MS:
        return None
    return gone + KNOCK_HOLD_MS
