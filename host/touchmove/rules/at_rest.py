"""The board at rest in a state the game position does not explain: the re-readings, in order, and their decisions.

:data:`AT_REST` is the policy. Each row is a function of a read-only view of the engine
(:class:`~touchmove.rules.readings.BoardView`) that returns a decision, or None when it does not apply; the
engine asks the rows in order and applies the first decision (:meth:`Engine._unexplained`). A *tentative*
decision is a search whose result only its application knows (plies lost): when it finds nothing, the next row
is asked. docs/engine-internals.md lists the rows and why they come in this order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import chess

from touchmove.rules.footprints import Footprint, Position, footprint
from touchmove.rules.identity import lands_as_named, made_with_hands, move_shown, only_lifted, under_way
from touchmove.rules.phases import CLEARED, LOST, OVER, PLAYING
from touchmove.rules.ply_evidence import PlyEvidence
from touchmove.rules.readings import (
    BoardView,
    amendment,
    answer_begun_knocking,
    answer_moved_on,
    answer_undone,
    capture_but_victim_aside,
    capture_on_touchdown,
    earlier_position,
    end_in_question,
    king_on_castling_square,
    landed_then_knocked,
    made_past_knock,
    move_captured_on_touchdown,
    named_further_on,
    promotion_seen,
    pushed_capture,
    released_there,
    shown_with_answer_begun,
    takeback_proven,
    taken_with_victim_pushed_aside,
    victim_pushed_first,
    victim_set_aside,
)

__all__ = [
    "AT_REST", "Amend", "CaptureOnTouchdown", "Decision", "MakeAnswerBegun", "MakeInterrupted", "MakeKnocked",
    "MakeShown",
    "RecoverAgain", "Reopen", "SearchLost", "SetPromotion", "TakeBack", "TakeBackProven", "UndoAnswer", "Wait",
]


class Decision:
    """What the engine does about a board at rest (applied by the engine)."""

    __slots__ = ()

    def tentative(self) -> bool:
        """Return whether this is a search whose application may find nothing (then the next row is asked)."""
        return False


@dataclass(frozen=True, slots=True)
class Wait(Decision):
    """Nothing to do yet (a move in progress, a capture's victim still to be taken off ...); note the rook of a
    castling whose square the king rests on (4.7.2), or an earlier position shown (plies it keeps)."""

    castling_rook: chess.Square | None = None
    earlier: int | None = None


@dataclass(frozen=True, slots=True)
class Reopen(Decision):
    """The game ended, and the board may show play going on: withdraw the end if it rested on an assumption."""


@dataclass(frozen=True, slots=True)
class SearchLost(Decision):
    """Search the plies lost since ``since`` (None: the last record); ``quiet``: if none explain the board, say
    nothing (it may be no loss): then tentative."""

    since: int | None = None
    quiet: bool = False

    def tentative(self) -> bool:
        """Return whether the search is quiet (then, finding nothing, the next row is asked)."""
        return self.quiet


@dataclass(frozen=True, slots=True)
class RecoverAgain(Decision):
    """The board contradicts plies recovered a moment ago: search again from before them (tentative)."""

    def tentative(self) -> bool:
        """Return True: the search again may find nothing."""
        return True


@dataclass(frozen=True, slots=True)
class MakeInterrupted(Decision):
    """Make the interrupted move: the board shows the opponent's answer (or a move in progress) after it."""


@dataclass(frozen=True, slots=True)
class MakeShown(Decision):
    """Make ``footprint``: a board that names its pieces shows exactly the position after it."""

    footprint: Footprint


@dataclass(frozen=True, slots=True)
class MakeKnocked(Decision):
    """Make ``footprint``, whose piece landed at ``landed`` and was knocked off its square since by the answering
    hand (:func:`~touchmove.rules.readings.landed_then_knocked`), then what the board shows."""

    footprint: Footprint
    landed: int


@dataclass(frozen=True, slots=True)
class MakeAnswerBegun(Decision):
    """Make ``footprint``, which the board shows but for the next mover's piece lifted from ``begun`` (his answer
    begun within the scan that showed the move: that lift is the next ply's). Tentative: a board that names its
    pieces may show the victim of the capture still on its square (then nothing is made)."""

    footprint: Footprint
    begun: chess.Bitboard

    def tentative(self) -> bool:
        """Return True: when the move is not made, the next row is asked."""
        return True


@dataclass(frozen=True, slots=True)
class Amend(Decision):
    """Replace the last move by ``footprint``; ``by_evidence``: read from other evidence than the board re-read
    (a pushed-aside capture, an answer displaced), so no rule was broken and no alert."""

    footprint: Footprint
    by_evidence: bool


@dataclass(frozen=True, slots=True)
class SetPromotion(Decision):
    """The promotion at ply ``number`` was ``move`` (another piece than assumed): the board shows it moving."""

    number: int
    move: chess.Move


@dataclass(frozen=True, slots=True)
class UndoAnswer(Decision):
    """Take back an answer the board undid before the press (:func:`~touchmove.rules.readings.answer_undone`)."""

    position: Position
    evidence: PlyEvidence
    footprint: Footprint | None


@dataclass(frozen=True, slots=True)
class TakeBackProven(Decision):
    """Take back to ``keep`` plies, the position shown at ``shown`` and played on from since."""

    keep: int
    shown: int


@dataclass(frozen=True, slots=True)
class CaptureOnTouchdown(Decision):
    """The last move was ``footprint``, to the square its piece touched down on at ``landed``, and the board shows
    it captured there: amend it back (withdrawing an amendment as moved after release) and make the capture."""

    footprint: Footprint
    landed: int
    made: bool  # the move was made (to the other square): amend it; else make it


@dataclass(frozen=True, slots=True)
class TakeBack(Decision):
    """Take back to ``keep`` plies (the board shows the position of one ply ago)."""

    keep: int


WAIT = Wait()

Reading = Callable[[BoardView], Decision | None]


def game_end_in_question(view: BoardView) -> Decision | None:
    """1. The game ended and the board, a few squares off, may show it going on."""
    return Reopen() if view.phase is OVER and end_in_question(view) else None


#: The most pieces a lost-plies search of a board that looks cleared may find taken (:func:`pieces_played_on`).
PLAYED_ON_CAPTURES = 4


def pieces_played_on(view: BoardView) -> Decision | None:
    """1a. A board that names its pieces shows ten squares or more off the game position, but with the game's own
    pieces (none added, at most :data:`PLAYED_ON_CAPTURES` gone): replies faster than its scan mixed several
    plies, not a board being cleared or set up. The plies played are searched (quietly: nothing found, it is
    the clearing it looked like)."""
    if view.phase is not CLEARED or view.sync is LOST or view.occupancy == view.position.occ:
        return None
    pieces = view.pieces_shown
    if pieces is None:
        return None
    board = view.position.board
    for color in chess.COLORS:
        had = chess.popcount(board.occupied_co[color])
        shown = sum(1 for letter in pieces.values() if letter.isupper() == (color == chess.WHITE))
        if shown > had or had - shown > PLAYED_ON_CAPTURES:
            return None
    return SearchLost(quiet=True)


def nothing_to_read(view: BoardView) -> Decision | None:
    """2. No game is read (over, cleared) or the board shows the game position."""
    return WAIT if view.phase is not PLAYING or view.occupancy == view.position.occ else None


def promotion_exchange(view: BoardView) -> Decision | None:
    """3. The promoted pawn taken off to be exchanged for the new piece (4.6): a move in progress."""
    exchange = view.exchange_square
    if exchange is not None and view.occupancy ^ view.position.occ == chess.BB_SQUARES[exchange]:
        return WAIT
    return None


def still_lost(view: BoardView) -> Decision | None:
    """4. Still blind after lost changes: what the board shows now may be explained by more of the lost plies."""
    return SearchLost() if view.sync is LOST and view.lost_unsearched else None


def interrupted_move_shown(view: BoardView) -> Decision | None:
    """5. An interrupted move (not moved on, or released) that the board continues from: a move of it in progress,
    a capture of it under way or made but for its victim, pushed aside, or one piece of the other side lifted
    (even one that cannot move: a touch, an adjustment; that side reacts, the move was made)."""
    interrupted = view.interrupted
    if interrupted is None or (interrupted.moved_on and not interrupted.released):
        return None
    after, occ = interrupted.after(view.position), view.occupancy
    touched = after.occ & ~occ & after.board.occupied_co[after.board.turn]
    if (after.continuable(occ) or victim_pushed_first(after, occ, view.pieces_shown)
            or (occ == after.occ & ~touched and touched and not touched & (touched - 1))
            or capture_but_victim_aside(after, occ, view.evidence, view.evidence.lifted_since(interrupted.t),
                                        view.pieces_shown)):
        return MakeInterrupted()
    return None


def pushed_aside_capture(view: BoardView) -> Decision | None:
    """6. The last move pushed its victim aside, now taken off: the capture."""
    pushed = pushed_capture(view)
    if pushed is None:
        return None
    shown = amendment(view, pushed)
    return WAIT if shown is None else Amend(shown, by_evidence=True)


def captured_on_touchdown(view: BoardView) -> Decision | None:
    """7. The last move's piece (or the piece being moved), read on a neighbouring square, captured on the square
    it touched down on (the capturing player stood it aside first): it was moved there."""
    found = capture_on_touchdown(view)
    if found is not None:
        return CaptureOnTouchdown(*found, made=True)
    found = move_captured_on_touchdown(view)
    return None if found is None else CaptureOnTouchdown(*found, made=False)


def displaced_answer_moved_on(view: BoardView) -> Decision | None:
    """8. An answer read before the press of the ply it answers was a piece displaced, now played elsewhere."""
    shown = answer_moved_on(view)
    return None if shown is None else Amend(shown, by_evidence=True)


def answer_begun_shown(view: BoardView) -> Decision | None:
    """15a. A move shown made but for a piece of the next mover lifted away from it (his answer begun within the
    scan that showed the move, :func:`~touchmove.rules.readings.shown_with_answer_begun`): the move, that lift the
    next ply's."""
    found = shown_with_answer_begun(view.occupancy, view.position, view.evidence, view.line.presses)
    return None if found is None else MakeAnswerBegun(*found)


def move_shown_by_pieces(view: BoardView) -> Decision | None:
    """15b. A board that names its pieces shows exactly the position after one legal move, which no row above
    reads (its lift came after its placement: a piece slid onto a recaptured pawn's square, sensed there before
    its own square emptied), or that position with one piece of the next mover lifted (a status bringing the
    move and his hand on a piece at once): that move, made as seen, not searched for as a ply lost (the board
    lost nothing); the lift is the next ply's."""
    pieces = view.pieces_shown
    if pieces is None or view.sync is LOST:
        return None
    found = move_shown(view.position.board, pieces)
    if found is None:
        return None
    move, lifted = found
    shown = footprint(view.position.board, move)
    return MakeAnswerBegun(shown, lifted) if lifted else MakeShown(shown)


def move_past_knock(view: BoardView) -> Decision | None:
    """15c. A move made but for a piece next to its landing square that the hand coming in knocked off (lifted
    just before the move landed, not back yet): that move; the piece is in the air, its owner's to put back."""
    found = made_past_knock(view)
    return None if found is None else MakeShown(found[0])


def knocked_before_made(view: BoardView) -> Decision | None:
    """15d. The board shows the answer made, with the piece of the move it answers knocked off by the answering
    hand before that move was made (its settle time not over; a board that names its pieces shows it so): that
    move, then the answer."""
    found = landed_then_knocked(view)
    return None if found is None else MakeKnocked(*found)


def pieces_moved_on(view: BoardView) -> Decision | None:
    """15e. A board that names its pieces shows more than a move under way (an answer faster than its scan) and
    no row above reads it: the plies played are searched, those that leave every piece where it shows them
    recovered. Not hands: pieces only lifted, one ply made with a piece in a hand, or made and then (seen) the
    answer begun by a hand that knocked a piece next to where it goes, or taken where it landed with its piece
    pushed aside; unless the board named the plies that the first two stand for (:func:`_landed_then_taken`:
    searched; :func:`_landed_then_lifted`: that move made at its landing)."""
    pieces = view.pieces_shown
    board = view.position.board
    if pieces is None or view.sync is LOST or under_way(board, pieces):
        return None
    if only_lifted(board, pieces) or made_with_hands(board, pieces):
        # what hands would explain, unless the board named a ply and its answer landed, or under way
        if _landed_then_taken(view, pieces):
            return SearchLost(quiet=True)
        landed = _landed_then_lifted(view, pieces)
        if landed is not None:
            return MakeKnocked(*landed)
    if only_lifted(board, pieces) or made_with_hands(board, pieces) or answer_begun_knocking(view) \
            or taken_with_victim_pushed_aside(view):
        return None         # (pieces only lifted, of either side, or one ply made with a piece in a hand: hands)
    return SearchLost(quiet=True)


def _landed_then_lifted(view: BoardView, pieces: dict[chess.Square, str]) -> tuple[Footprint, int] | None:
    """Return a move of the side to move the board named landing since the last ply (its piece put down where a
    legal move of it from a square now empty lands), and when, if that square is empty now and the pieces shown
    are the position after it with the answer under way (:func:`~touchmove.rules.identity.under_way`): the move
    was made, its piece the answer's victim, lifted before it rested the settle time (dxc4 named on c4, then the
    pawn lifted with Black's b5 pawn for ...bxc4 reads, at rest, like three pieces in the air; ChessLink harder
    game 145), or the answer named landing since and the next move under way (:func:`_answered_then_lifted`). Else
    None."""
    board, plies = view.position.board, len(view.current_game.moves)
    white = board.turn == chess.WHITE
    for change in reversed(view.pieces_changes()):
        if change.plies < plies:
            break
        sq, letter = change.sq, change.piece
        if letter is None or letter.isupper() != white or sq in pieces:
            continue
        for move in _named_landings(board, sq, letter, pieces):
            if move.promotion not in (None, chess.QUEEN) or named_further_on(view, board, move, change.t):
                continue    # (one promotion; named further on since: it moved on, a rook sliding down a file)
            after = board.copy(stack=False)
            after.push(move)
            if under_way(after, pieces) or _answered_then_lifted(view, after, move, change.t, pieces):
                return footprint(board, move), change.t
    return None


def _answered_then_lifted(view: BoardView, after: chess.Board, move: chess.Move, landed: int,
                          pieces: dict[chess.Square, str]) -> bool:
    """Return whether the board named, after ``landed``, an answer of ``after``'s side to move landing, and the
    pieces it names now are the position after that answer with the next move under way, ``move``'s piece lifted
    again and in the hand (Qf4 named on f4, ...Kg6 named on g6, then the queen lifted again for Qd6 reads, at rest,
    like the queen in the hand and the king moved out of turn; Chessnut fast replies, game 168). The answer landed
    before that piece left: one put down once it had (a pawn a sleeve knocked as the piece went on) answers
    nothing; nor does anything when the piece was put down elsewhere since (a rook sliding down a file), nor an
    answer landing next to it where the move could have gone (Be3 taken by ...Bxe3 with the bishop pushed onto
    d2 and then taken off reads the same: ChessLink harder hands, game 22)."""
    letter_moved = str(after.piece_at(move.to_square))
    if sum(1 for letter in pieces.values() if letter == letter_moved) >= len(
            after.pieces(chess.Piece.from_symbol(letter_moved).piece_type, not after.turn)):
        return False
    left = next((t for t, sq, occupied in view.line.changes if t > landed and sq == move.to_square and not occupied),
                None)
    white = after.turn == chess.WHITE
    for change in reversed(view.pieces_changes()):
        if change.t <= landed:
            break
        if left is None or change.t > left:
            continue
        letter = change.piece
        if letter is None or letter.isupper() != white or pieces.get(change.sq) != letter:
            continue
        for answer in _named_landings(after, change.sq, letter, pieces):
            if (chess.square_distance(answer.to_square, move.to_square) == 1
                    and chess.Move(move.from_square, answer.to_square) in view.position.board.legal_moves):
                continue    # (or the move went there, and was taken with its piece pushed aside where it shows)
            answered = after.copy(stack=False)
            answered.push(answer)
            if under_way(answered, pieces):
                return True
    return False


def _named_landings(board: chess.Board, sq: chess.Square, letter: str,
                    pieces: dict[chess.Square, str]) -> list[chess.Move]:
    """Return the legal moves of ``board`` that put the piece ``letter`` names on ``sq`` from a square where the
    board's ``pieces`` name nothing now."""
    return [m for m in board.generate_legal_moves(to_mask=chess.BB_SQUARES[sq])
            if str(board.piece_at(m.from_square)) == letter and m.from_square not in pieces]


def _landed_then_taken(view: BoardView, pieces: dict[chess.Square, str]) -> bool:
    """Return whether, since the last ply, the board named a piece of the side to move put down where a legal move
    of it lands, then a piece of the other side there, and the pieces it names now are exactly the position after
    that move and that capture of it: two plies, not hands (c2-c4 named on c4, then ...dxc4 with the black pawn
    named there reads, at rest, like the c2 pawn in the hand and the d5 pawn knocked onto c4; ChessLink harder
    game 148). With a piece more off (a sleeve's knock) hands still explain it."""
    board, plies = view.position.board, len(view.current_game.moves)
    white = board.turn == chess.WHITE
    landed: dict[chess.Square, list[chess.Move]] = {}
    for change in view.pieces_changes():
        if change.plies < plies or change.piece is None:
            continue
        sq, letter = change.sq, change.piece
        if letter.isupper() == white:
            landed[sq] = _named_landings(board, sq, letter, pieces)
            continue
        for move in landed.get(sq, []):
            after = board.copy(stack=False)
            after.push(move)
            for answer in after.generate_legal_moves(to_mask=chess.BB_SQUARES[sq]):
                if str(after.piece_at(answer.from_square)) != letter:
                    continue
                after.push(answer)
                if {s: p.symbol() for s, p in after.piece_map().items()} == pieces:
                    return True
                after.pop()
    return False


def move_in_progress(view: BoardView) -> Decision | None:
    """9. A move in progress from the game position (a piece in hand, the new piece placed first, the king on its
    castling square); on a board that names its pieces, only if they show that move under way."""
    if view.position.continuable(view.occupancy):
        pieces = view.pieces_shown
        if pieces is not None and not under_way(view.position.board, pieces):
            return None
        return Wait(castling_rook=king_on_castling_square(view))
    return None


def capture_victim_aside(view: BoardView) -> Decision | None:
    """10. A capture made but for its victim, pushed onto a square next to it and still to be taken off; or under
    way, the victim pushed aside before the capturing piece lands."""
    return WAIT if victim_set_aside(view) or victim_pushed_first(view.position, view.occupancy,
                                                                  view.pieces_shown) else None


def snapshot_hides_loss(view: BoardView) -> Decision | None:
    """11. A snapshot was read as one change and nothing explains the board: changes may have been lost."""
    since = view.evidence.unsure_since
    return None if since is None else SearchLost(since, quiet=True)


def unseen_ply_contradicted(view: BoardView) -> Decision | None:
    """12. The board contradicts a ply not seen made: search the lost plies again (not moved after release). One
    piece lifted from the game position contradicts nothing (a hand on a piece that cannot move: a touch, an
    adjustment; the plies put a piece there, the board showed one), nor do pieces a hand explains (a knock)."""
    if view.line.unseen.unseen_since is None or _hands_only(view):
        return None
    return RecoverAgain()


def moved_after_release(view: BoardView) -> Decision | None:
    """13. The last move's piece (or castling's king) shown elsewhere: the last move amended (4.7 when its piece had
    rested there, :func:`~touchmove.rules.readings.released_there`); on a board that names its pieces, only when it
    names that piece there (not the victim pushed aside onto a square the capturing piece could have gone to, told
    after the capture)."""
    shown = amendment(view)
    if shown is None:
        return None
    pieces, previous = view.pieces_shown, view.previous
    if pieces is not None and previous is not None and not lands_as_named(previous[0].board, shown.move, pieces):
        return None
    # (a piece passing through, never released on the square it was read on, breaks no rule: no alert)
    return Amend(shown, by_evidence=not released_there(view, shown.move.to_square))


def promotion_piece_seen(view: BoardView) -> Decision | None:
    """14. A promoted piece moving as another piece would: the piece really chosen."""
    found = promotion_seen(view)
    return None if found is None else SetPromotion(*found)


def answer_undone_before_press(view: BoardView) -> Decision | None:
    """15. An answer the board undid before the press of the ply it answered."""
    found = answer_undone(view)
    return None if found is None else UndoAnswer(*found)


def recovered_plies_contradicted(view: BoardView) -> Decision | None:
    """16. Plies recovered a moment ago that the board contradicts: search again (not for hands only)."""
    return None if _hands_only(view) else RecoverAgain()


def _hands_only(view: BoardView) -> bool:
    """Return whether the board shows the game position with one piece lifted and nothing else, or (a board that
    names its pieces) pieces that hands explain (:func:`~touchmove.rules.identity.made_with_hands`: a sleeve's
    knock) other than pieces only lifted: no ply contradicted."""
    missing = view.position.occ & ~view.occupancy
    if not view.occupancy & ~view.position.occ and missing and not missing & (missing - 1):
        return True
    pieces, board = view.pieces_shown, view.position.board
    # (not pieces only lifted: two of them may be plies whose pieces came back to the squares they left, dxe5 dxe5
    # shown as the d6 and d4 pawns lifted, the changes between lost)
    return pieces is not None and not only_lifted(board, pieces) and made_with_hands(board, pieces)


def takeback_played_on(view: BoardView) -> Decision | None:
    """17. An earlier position shown, and play now goes on from it: the takeback of several plies."""
    found = takeback_proven(view)
    return None if found is None else TakeBackProven(*found)


def earlier_position_shown(view: BoardView) -> Decision | None:
    """18. The position of one ply ago: taken back; of several plies ago: noted (the next rest decides)."""
    keep = earlier_position(view)
    if keep is None:
        return None
    if len(view.current_game.moves) - keep < 2:
        return TakeBack(keep)
    earlier = view.evidence.earlier
    return Wait(earlier=keep) if earlier is None or earlier[0] != keep else None


#: The re-readings of a board at rest that the game position does not explain, in the order they are asked.
AT_REST: tuple[Reading, ...] = (
    game_end_in_question,
    pieces_played_on,
    nothing_to_read,
    promotion_exchange,
    still_lost,
    interrupted_move_shown,
    pushed_aside_capture,
    captured_on_touchdown,
    displaced_answer_moved_on,
    move_in_progress,
    capture_victim_aside,
    snapshot_hides_loss,
    unseen_ply_contradicted,
    moved_after_release,
    promotion_piece_seen,
    answer_undone_before_press,
    answer_begun_shown,
    move_shown_by_pieces,
    move_past_knock,
    knocked_before_made,
    pieces_moved_on,
    recovered_plies_contradicted,
    takeback_played_on,
    earlier_position_shown,
)
