"""What a board that knows its pieces reports, turned into the recording format's records (pure: no I/O).

DGT, ChessLink and Chessnut boards report which piece stands on each square. :class:`PieceAdapter` keeps the
board as reported (``actual``) and the board as the records have told it (``shown``); every report moves
``actual`` and emits the records that bring ``shown`` to it:

- a square that empties is a ``lift``, one that fills a ``place`` (with the optional ``piece``, the FEN letter);
  a square whose piece changes with no empty in between (a capture seen in one scan) is a ``lift`` and a
  ``place`` :data:`SWAP_GAP_MS` later. Several squares changed in one report go in an order a hand could have
  made them (:func:`report_order`): the end of a move first (pieces already in the hand; else a move the side
  to move made whole in the report, its lifts before its landing), then the answer begun in the same scan
  (:data:`ANSWER_GAP_MS` later), empties before fills, a king's squares before its rook's; more than
  :data:`MAX_CHANGES_AS_MOVES` at once is a ``snapshot`` (the engine searches the plies that explain it:
  ``changes_lost``);
- squares reported one by one (DGT's scan): a lift the scan's order may have put before a change the hand made
  first is held back: the other side's lift while the side to move has a piece in the hand, until that side's
  landing (at most :data:`ANSWER_HOLD_MS`), a rook's lift beside its king on their back rank, until the king's
  lift (at most :data:`CASTLE_HOLD_MS`; not once that king has left its square of the last start array shown);
- the scan is absorbed: a piece reported on its new square while it still stands on its old one (no such
  piece in the hand) waits up to :data:`FILL_HOLD_MS` for the old square to empty, which is then told first
  (if the new square empties first, the placement is told then, and the lift after it: never dropped);
- a promotion read from the board: a pawn gone from its 7th rank and a queen, rook, bishop or knight of its
  side put on the last rank is a ``promote`` record with that piece, before the ``place``;
- a result shown with the kings: both kings on the four centre squares (never a legal position: the squares
  touch) is a ``result`` record (both on light squares 1-0, both on dark 0-1, one of each 1/2-1/2); the kings'
  centre squares are not shown, so no king move is read. A king put in the centre while the other is off the
  board is held back (:data:`KING_HOLD_MS`) until the other lands;
- a result read from the pieces is a claim, not a verdict: it must stand unchanged :data:`RESULT_STEADY_MS`
  (several scans of any board), and the board must have been heard from after that (so no report contradicting
  it can still be on its way: a link or a host that stalls for a second delays the reports behind it, and the
  host's clock alone would call a one-scan misreading steady), before its ``result`` record (``"by": "board"``)
  is told; until then the squares
  that show it are held as they were shown, so a reading seen for one scan and gone is no move, no touch and no
  result. A claimed result no longer shown for as long is withdrawn (a ``result`` record ``*``, ``"by":
  "board"``: the engine resumes the game once the pieces stand as in it);
- a Chess960 start array set up on the board (not the standard one) is a ``setup`` record with
  ``chess960``: the next game starts from it;
- DGT's result pieces (codes 13-15) are a ``result`` record and are never shown as pieces;
- a start position set up rotated (White on the 8th rank side) is detected and turned; the change of
  orientation is an alert line (``board_rotated``).

Records are dicts for the wire protocol v1 (:mod:`touchmove.serial.lines` decodes them), host-stamped in ms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import chess

#: A square's content: a FEN piece letter, a result marker (``"1-0"``, ``"0-1"``, ``"1/2-1/2"``) or None.
Content = str | None

CENTRE = (chess.D4, chess.E4, chess.D5, chess.E5)
LIGHT_CENTRE = frozenset({chess.E4, chess.D5})
#: Longest a king put in the centre is held back while the other king is off the board (ms).
KING_HOLD_MS = 3000
#: How long a result read from the pieces (kings in the centre, a result piece) must stand unchanged before it is
#: claimed, and how long a claimed one must be gone before it is withdrawn (ms). Every supported board reports
#: again on any change, so this many ms without a contradicting report is several scans that agree: DGT's
#: (about 4 a second), ChessLink's (41 ms, debounced over 3), Chessnut's (about 100 ms). A piece misread for a
#: scan (set down off-centre, slid over a square) lasts one scan.
RESULT_STEADY_MS = 1200
#: More squares changed in one report than this (castling changes four) is read as lost changes.
MAX_CHANGES_AS_MOVES = 4
#: Pieces remembered in the hand (lifted, not put down): enough for any move.
MAX_HAND = 8
#: Longest a placement waits for the piece's own square to be reported empty (ms): a scan and a margin.
FILL_HOLD_MS = 400
#: A report that ends one side's move and starts the other's: the answer is told this much later (ms), as
#: the fastest hands answer (the scan hides the true times; this keeps the order readable).
ANSWER_GAP_MS = 60
#: Longest a lift reported square by square (DGT) waits when it is the other side's while the side to move has a
#: piece in the hand (ms): a scan and a margin. The scan reports squares in its own order, so a reply faster than
#: the scan can show its lift before the landing that ends the move it answers; held back, it is told after that
#: landing when the landing comes within the scan, else as it came.
ANSWER_HOLD_MS = 260
#: Longest a rook's lift from its side's back rank, beside that side's king, waits for the king's lift (ms): a
#: king and rook lifted within one scan are reported in the scan's order (a1 before e1), not the hand's.
CASTLE_HOLD_MS = 100
HOLD_MS = {"answer": ANSWER_HOLD_MS, "castling": CASTLE_HOLD_MS}
#: A piece replaced by another in one scan is a lift and, this long after (ms), a place: the engine drops a
#: lift and place of one square closer together than its chatter window (25 ms) as contact bounce.
SWAP_GAP_MS = 30
#: The standard start's number among the 960 start arrays.
STANDARD_960_INDEX = 518
#: A board with fewer pieces than this has been cleared (a Chess960 array set up next is told again).
CLEARED_BELOW = 8
RESULT_REASON_KINGS = "result shown with the kings"
RESULT_REASON_PIECE = "result piece put on the board"
RESULT_REASON_GONE = "result no longer shown"
RESULTS = ("1-0", "0-1", "1/2-1/2")


def is_piece(content: Content) -> bool:
    """Return True for a chess piece letter (not empty, not a result marker)."""
    return content is not None and content not in RESULTS


def rotate(board: Sequence[Content]) -> list[Content]:
    """Return the board turned by 180 degrees (a1 <-> h8)."""
    return [board[63 - sq] for sq in range(64)]


def start_orientation(board: Sequence[Content]) -> bool | None:
    """Return False for a start position the right way up, True for one rotated by 180 degrees, None when the
    board shows no start (the pawn ranks decide: all 16 pawns on their ranks)."""
    def rank_is(rank: int, letter: str) -> bool:
        return all(board[chess.square(f, rank)] == letter for f in range(8))

    if rank_is(1, "P") and rank_is(6, "p"):
        return False
    if rank_is(6, "P") and rank_is(1, "p"):
        return True
    return None


def board_fen(board: Sequence[Content]) -> str:
    """Return the FEN piece placement of a board (result markers left out)."""
    b = chess.BaseBoard.empty()
    for sq, content in enumerate(board):
        if is_piece(content):
            assert content is not None
            b.set_piece_at(sq, chess.Piece.from_symbol(content))
    return b.board_fen()


def occupancy(board: Sequence[Content]) -> int:
    """Return the occupancy bitboard (bit i = square i) of the chess pieces on a board."""
    return sum(1 << sq for sq, content in enumerate(board) if is_piece(content))


def kings_result(board: Sequence[Content]) -> str | None:
    """Return the result both kings in the centre show, or None."""
    white = [sq for sq in CENTRE if board[sq] == "K"]
    black = [sq for sq in CENTRE if board[sq] == "k"]
    if not white or not black:
        return None
    light = (white[0] in LIGHT_CENTRE) + (black[0] in LIGHT_CENTRE)
    return ("0-1", "1/2-1/2", "1-0")[light]


#: A result read from the pieces: the result, and the squares with what shows it (kings or result pieces).
Reading = tuple[str, frozenset[tuple[int, str]]]


def result_reading(board: Sequence[Content]) -> Reading | None:
    """Return the result the pieces show (a result piece, else the kings in the centre) and the squares that show
    it, or None."""
    markers = frozenset((sq, c) for sq, c in enumerate(board) if c in RESULTS)
    if markers:
        return min(markers)[1], markers
    result = kings_result(board)
    if result is None:
        return None
    return result, frozenset((sq, str(board[sq])) for sq in CENTRE if board[sq] in ("K", "k"))


class PieceAdapter:
    """The board as a piece-reporting board shows it, and the records that tell it (see the module)."""

    def __init__(self) -> None:
        self.actual: list[Content] = [None] * 64
        self.shown: list[Content] = [None] * 64
        self.synced = False          # a full report has been seen
        self.rotated = False
        self.last_t = 0
        self.claimed: str | None = None          # the result claimed (told) from the pieces, until withdrawn
        self.reading: Reading | None = None      # the result the pieces show now (None: none)
        self.reading_since = 0                   # since when they show it (or show none)
        self.heard_at = 0                        # when the board was last heard: its reports until then are in
        #: called with the board as reported (turned) after each report, before anything is held back or ordered
        #: (the simulation harness keeps them: which positions a board's own reports showed)
        self.reported: Callable[[Sequence[Content]], None] | None = None
        self.king_held_at: int | None = None     # when a king in the centre was first held back
        self.hand: list[tuple[str, int]] = []    # pieces lifted and not put down yet (letter, square)
        self.aside: set[int] = set()             # squares of victims told only pushed aside (lifted: off the board)
        self.taken: list[tuple[str, int]] = []   # the pieces the last placement took (letter, square)
        self.new_on_last_rank: tuple[int, str] | None = None   # a piece from outside put on a last rank
        self.fill_held: dict[int, tuple[int, str]] = {}   # placements waiting for their piece's own square to
                                                          # empty: square -> (since, piece)
        self.lifted_at: dict[int, int] = {}     # when each square was last told empty
        self.last_mover: str | None = None      # the colour of the piece told placed last
        self.announced_start: str | None = None # the Chess960 start array last told as a setup
        self.lift_held: dict[int, tuple[int, str]] = {}   # lifts held back: square -> (since, what for)
        # where each king ("K", "k") stood when the board last showed a start array (32 pieces, the pawns home): a
        # king shown elsewhere has moved and its side can no longer castle (unknown: the game began elsewhere)
        self.king_home: dict[str, int] = {}

    # -- reports ---------------------------------------------------------------------------------------------
    def full_report(self, board_raw: Sequence[Content], t: int, *, snapshot: bool = False) -> list[dict[str, Any]]:
        """Take a whole board as the board numbers it (not yet turned); return the records.

        The first report (or ``snapshot``: asked for by the bridge) is a ``snapshot`` record; later ones are
        their changes."""
        self.heard(t)
        out: list[dict[str, Any]] = []
        orientation = start_orientation(board_raw)
        if orientation is not None and (orientation != self.rotated or (orientation and not self.synced)):
            if self.synced or orientation:      # set up rotated from the start: said too
                out.append(alert_line("board_rotated", t, rotated=orientation,
                                      message="the board is set up rotated: squares are turned"
                                      if orientation else "the board is the right way up again"))
            self.rotated = orientation
        self.actual = rotate(board_raw) if self.rotated else list(board_raw)
        first = not self.synced
        self.synced = True
        if self.reported is not None:
            self.reported(self.actual)
        out += self._update(t, force_snapshot=first or snapshot)
        return out

    def square_report(self, raw_square: int, content: Content, t: int) -> list[dict[str, Any]]:
        """Take one square's new content (square as the board numbers it in python-chess order, not turned);
        return the records."""
        self.heard(t)
        sq = 63 - raw_square if self.rotated else raw_square
        self.actual[sq] = content
        out: list[dict[str, Any]] = []
        if sq in self.lift_held and content is not None:
            # a held lift's square filled again: the lift is told first (the piece put back is a touch)
            del self.lift_held[sq]
            if is_piece(self.shown[sq]):
                t = max(t, self.last_t)
                self.last_t = t
                self._change(out, t, sq, [None] * 64)
        elif content is None:
            self._hold_lift(sq, t)
        orientation = start_orientation(rotate(self.actual) if self.rotated else self.actual)
        if orientation is not None and orientation != self.rotated:
            # the pieces set up the other way round: turn everything (a snapshot) and say so
            raw = rotate(self.actual) if self.rotated else list(self.actual)
            return self.full_report(raw, t, snapshot=True)
        if self.reported is not None:
            self.reported(self.actual)
        out += self._update(t)
        return out

    def heard(self, t: int) -> None:
        """Note that the board was heard from at ``t`` (a report or any answer): what it reported before is in."""
        self.heard_at = max(self.heard_at, t)

    def tick(self, t: int, heard: int | None = None) -> list[dict[str, Any]]:
        """Release what a timer holds back (a king in the centre held too long); return the records.

        ``heard``: when the board was last heard from (default ``t``: every report until now is in)."""
        self.heard(t if heard is None else heard)
        if self.king_held_at is not None and t - self.king_held_at >= KING_HOLD_MS:
            return self._update(t)
        if self._steady() and self._claim_due():
            return self._update(t)
        if self.fill_held and t - min(since for since, _ in self.fill_held.values()) >= FILL_HOLD_MS:
            return self._update(t)
        if any(t - since >= HOLD_MS[why] for since, why in self.lift_held.values()):
            return self._update(t)
        return []

    def snapshot(self, t: int) -> list[dict[str, Any]]:
        """Return a ``snapshot`` record of the board as shown (the bridge asked for one)."""
        self.last_t = max(self.last_t, t)
        return [{"t": self.last_t, "type": "snapshot", "occ": f"{occupancy(self.shown):016x}",
                 "pieces": board_fen(self.shown)}]

    # -- what is shown ---------------------------------------------------------------------------------------
    def _hidden(self, t: int) -> set[int]:
        """Return the squares not shown: result pieces, kings showing a result, a king held in the centre."""
        hidden = {sq for sq, c in enumerate(self.actual) if c in RESULTS}
        if kings_result(self.actual) is not None:
            hidden |= {sq for sq in CENTRE if self.actual[sq] in ("K", "k")}
            self.king_held_at = None
            return hidden
        for king, other in (("K", "k"), ("k", "K")):
            in_centre = [sq for sq in CENTRE if self.actual[sq] == king]
            if in_centre and other not in self.actual and self.shown[in_centre[0]] != king:
                if self.king_held_at is None:
                    self.king_held_at = t
                if t - self.king_held_at < KING_HOLD_MS:
                    hidden.add(in_centre[0])
                    return hidden
        self.king_held_at = None
        return hidden

    def _update(self, t: int, *, force_snapshot: bool = False) -> list[dict[str, Any]]:
        t = max(t, self.last_t)
        self.last_t = t
        out = self._held_fills_gone(t)
        t = self.last_t
        reading = result_reading(self.actual)
        if reading != self.reading:
            self.reading, self.reading_since = reading, t
        steady = self._steady()
        # a reading not steady yet: the squares that show it stay as shown (one scan's misreading is nothing)
        unsure = set() if reading is None or steady else {sq for sq, _ in reading[1]}
        hidden = self._hidden(t)
        target = [None if (sq in hidden or not is_piece(c)) else c for sq, c in enumerate(self.actual)]
        self._release_lifts(t, target)
        for sq in (*self.lift_held, *unsure):
            target[sq] = self.shown[sq]
        changed = [sq for sq in range(64) if target[sq] != self.shown[sq]]
        if start_orientation(target) is not None and sum(is_piece(c) for c in target) == 32:
            self.king_home = {c: sq for sq, c in enumerate(target) if c in ("K", "k")}
        out += self._chess960_start(t, target)
        if force_snapshot or len(changed) > MAX_CHANGES_AS_MOVES:
            self.lift_held = {}
            target = [None if (sq in hidden or not is_piece(c)) else c for sq, c in enumerate(self.actual)]
            for sq in unsure:
                target[sq] = self.shown[sq]
            self.shown = target
            self.hand = []
            self.aside.clear()
            self.taken = []
            self.fill_held = {}
            out += self.snapshot(t)
        else:
            out += self._changes(t, target, changed)
        if steady and self._claim_due():
            if reading is None:
                out.append({"t": t, "type": "result", "result": "*", "reason": RESULT_REASON_GONE, "by": "board"})
                self.claimed = None
            else:
                reason = RESULT_REASON_PIECE if any(c in RESULTS for _, c in reading[1]) else RESULT_REASON_KINGS
                out.append({"t": t, "type": "result", "result": reading[0], "reason": reason, "by": "board"})
                self.claimed = reading[0]
        return out

    def _steady(self) -> bool:
        """Return whether the reading has stood :data:`RESULT_STEADY_MS` by what the board has said (a report or
        an answer heard that long after it began)."""
        return self.heard_at - self.reading_since >= RESULT_STEADY_MS

    def confirmation_wanted(self, t: int) -> bool:
        """Return whether a claim (or a withdrawal) waits only for the board to be heard from: the reading has
        stood :data:`RESULT_STEADY_MS` by the clock at ``t`` but nothing came from the board since (the
        translator asks it something harmless)."""
        return self._claim_due() and t - self.reading_since >= RESULT_STEADY_MS and not self._steady()

    def _claim_due(self) -> bool:
        """Return whether the result the pieces show differs from the one claimed (a claim or a withdrawal is due
        once the reading has stood :data:`RESULT_STEADY_MS`)."""
        return (None if self.reading is None else self.reading[0]) != self.claimed

    def _hold_lift(self, sq: int, t: int) -> None:
        """Hold back the lift of ``sq`` reported alone (a square of a scan) when the scan's order may have put it
        before a change the hand made first: the other side's piece lifted while the side to move has a piece in
        the hand (a reply faster than the scan; held until that side's landing, at most
        :data:`ANSWER_HOLD_MS`), or a rook beside its king on their back rank (castling: held until the king's
        lift, at most :data:`CASTLE_HOLD_MS`; a king away from its square of the start array cannot castle)."""
        piece = self.shown[sq]
        if not is_piece(piece):
            return
        assert piece is not None
        white = piece.isupper()
        mover = "black" if white else "white"
        kings = piece in ("K", "k") and any(c in ("K", "k") for c, _ in self.hand)   # a result shown: not held
        if self.last_mover != mover and not kings and any(c.isupper() != white for c, _ in self.hand):
            self.lift_held[sq] = (t, "answer")
            return
        back = 0 if white else 7
        king = "K" if white else "k"
        if piece.upper() == "R" and chess.square_rank(sq) == back and any(
                self.shown[chess.square(f, back)] == king and self.actual[chess.square(f, back)] == king
                and self.king_home.get(king, chess.square(f, back)) == chess.square(f, back) for f in range(8)):
            self.lift_held[sq] = (t, "castling")    # (not beside a king that has moved: it cannot castle)

    def _release_lifts(self, t: int, target: list[Content]) -> None:
        """Let go of the held lifts whose wait is over or whose awaited change is in ``target``: a landing of
        the side to move, a king's lift beside a held rook; and a lift whose piece shows on another square."""
        for sq, (since, why) in list(self.lift_held.items()):
            piece = self.shown[sq]
            if not is_piece(piece) or t - since >= HOLD_MS[why]:
                del self.lift_held[sq]
                continue
            assert piece is not None
            white = piece.isupper()
            if why == "castling":
                king = "K" if white else "k"
                if any(self.shown[s] == king and target[s] != king for s in range(64)):
                    del self.lift_held[sq]
                continue
            if any(target[s] == piece and self.shown[s] != piece for s in range(64) if s != sq):
                del self.lift_held[sq]      # the piece itself seen elsewhere (slid aside): its lift goes first
                continue
            if any(target[s] is not None and target[s] != self.shown[s] and str(target[s]).isupper() != white
                   for s in range(64) if s not in self.lift_held):
                self.lift_held.clear()
                return

    def _chess960_start(self, t: int, board: list[Content]) -> list[dict[str, Any]]:
        """Return a ``setup`` record when the board shows a Chess960 start array other than the standard one
        (once per array; again after the board was cleared)."""
        if sum(is_piece(c) for c in board) < CLEARED_BELOW:
            self.announced_start = None
            return []
        if start_orientation(board) is not False or sum(is_piece(c) for c in board) != 32:
            return []
        fen = board_fen(board)
        if fen == self.announced_start:
            return []
        index = chess.Board(f"{fen} w KQkq - 0 1", chess960=True).chess960_pos()
        if index is None or index == STANDARD_960_INDEX:
            return []
        self.announced_start = fen
        return [{"t": t, "type": "setup", "fen": chess.Board.from_chess960_pos(index).fen(), "chess960": True}]

    def _changes(self, t: int, target: list[Content], changed: list[int]) -> list[dict[str, Any]]:
        """Return the records of the changed squares of one report, in an order a hand could have made them
        (:func:`report_order`): first the placements of pieces already in the hand (the end of a move under
        way), then a move made whole within the report by the side to move (its lifts, then its placements),
        then the rest, the empties before the fills; a king's squares before its rook's. A part of the other side
        than the part before it is the answer begun within the same scan: it is told :data:`ANSWER_GAP_MS`
        later."""
        to_move = self.last_mover != "white"
        parts = report_order(self.shown, target, changed, [c for c, _ in self.hand], to_move)
        out: list[dict[str, Any]] = []
        before: set[bool] = set()
        for part in parts:
            # the side a part is of: who puts pieces down in it, else whose pieces are lifted
            sides = ({str(target[sq]).isupper() for sq in part if target[sq] is not None}
                     or {str(self.shown[sq]).isupper() for sq in part})
            if before and not sides <= before:
                # the answer began within the same scan: it cannot have begun sooner than a hand answers
                t += ANSWER_GAP_MS
                self.last_t = t
            for sq in part:
                t = self._change(out, t, sq, target)
            before = sides
        return out

    def _change(self, out: list[dict[str, Any]], t: int, sq: int, target: list[Content]) -> int:
        """Append the records of one changed square (emptied, filled or replaced); return the time reached."""
        if target[sq] is not None:
            return self._place(out, t, sq, target)
        out.append({"t": t, "type": "lift", "sq": chess.square_name(sq)})
        self.lifted_at[sq] = t
        promoted = self._to_hand(sq)
        if promoted is not None:
            out.append({"t": t, "type": "promote", "piece": promoted})
        return t

    def _place(self, out: list[dict[str, Any]], t: int, sq: int, target: list[Content]) -> int:
        """Append the records putting ``target[sq]`` on ``sq`` (a replaced piece lifted first); return the time
        reached."""
        piece = target[sq]
        assert piece is not None
        swap = self.shown[sq] is not None
        if self._hold_fill(sq, piece, t):
            if swap:        # the victim is off: say so now
                out.append({"t": t, "type": "lift", "sq": chess.square_name(sq)})
                self.lifted_at[sq] = t
                self._to_hand(sq)
            return t
        if swap:
            out.append({"t": t, "type": "lift", "sq": chess.square_name(sq)})
            self._to_hand(sq)
            self.lifted_at[sq] = t
        promoted = self._promotion(sq, piece)
        if sq in self.lifted_at and t - self.lifted_at[sq] < SWAP_GAP_MS:
            t = self.lifted_at[sq] + SWAP_GAP_MS     # not read as contact chatter
            self.last_t = t
        out.append({"t": t, "type": "place", "sq": chess.square_name(sq), "piece": piece})
        self.shown[sq] = piece
        self.last_mover = "white" if piece.isupper() else "black"
        if promoted is not None:
            out.append({"t": t, "type": "promote", "piece": promoted})
        return t

    def _hold_fill(self, sq: int, piece: str, t: int) -> bool:
        """Return True when the placement of ``piece`` on ``sq`` waits: no such piece is in the hand but one
        still stands elsewhere, so its own square is about to be reported empty (the scan saw the new square
        first). It waits :data:`FILL_HOLD_MS` at most; the lift, when it comes, goes first."""
        if any(c == piece for c, _ in self.hand) or not any(
                self.shown[s] == piece for s in range(64) if s != sq):
            self.fill_held.pop(sq, None)
            return False
        since, _ = self.fill_held.setdefault(sq, (t, piece))
        if t - since >= FILL_HOLD_MS:
            del self.fill_held[sq]
            return False
        return True

    def _held_fills_gone(self, t: int) -> list[dict[str, Any]]:
        """Return the ``place`` records of held placements whose square no longer shows their piece (lifted or
        replaced before any other square emptied): the piece stood there, put down and taken at once (a pawn
        landing as a recapture lifts it), and the board showed it. Each is told at ``t``, and what followed it
        :data:`SWAP_GAP_MS` later (never dropped: a ply's position the board showed)."""
        out: list[dict[str, Any]] = []
        for sq, (_, piece) in list(self.fill_held.items()):
            if self.actual[sq] == piece:
                continue
            del self.fill_held[sq]
            if self.shown[sq] is not None:
                continue     # (the square's old piece still told there: the placement never replaced it)
            out.append({"t": t, "type": "place", "sq": chess.square_name(sq), "piece": piece})
            self.shown[sq] = piece
            self.last_mover = "white" if piece.isupper() else "black"
            self.last_t = t + SWAP_GAP_MS
        return out

    def _to_hand(self, sq: int) -> str | None:
        """Put the piece of ``sq`` in the hand; return the promoted piece's letter when it is a pawn leaving its
        7th rank after a new piece was put on the last rank next to it (the new piece placed first, 4.6.2)."""
        piece = self.shown[sq]
        self.shown[sq] = None
        if piece is None:
            return None
        if sq in self.aside:
            self.aside.discard(sq)
            return None     # a victim told only pushed aside, taken off the board: no piece of a move in the hand
        self.hand = [*self.hand[-(MAX_HAND - 1):], (piece, sq)]
        new = self.new_on_last_rank
        if (piece in ("P", "p") and new is not None and new[1].isupper() == piece.isupper()
                and chess.square_rank(sq) == (6 if piece == "P" else 1)
                and abs(chess.square_file(sq) - chess.square_file(new[0])) <= 1 and self.shown[new[0]] == new[1]):
            self.hand.pop()
            self.new_on_last_rank = None
            return new[1].lower()
        return None

    def _pushed_aside(self, sq: int, piece: str, own: int | None) -> bool:
        """Return whether ``piece`` put on ``sq`` is a victim the capturing hand pushed aside, not its side's move
        ending (``own``: its index in the hand), taking it out of the hand: put down next to its square while a
        piece of the other side that can take it there is in the hand (and not where such a piece stood: that is
        a capture of it, hxg3 after the g3 pawn was lifted), whoever put a piece down last (an adjustment before
        the capture does not make it the victim's side's move ending)."""
        if own is None or chess.square_distance(self.hand[own][1], sq) != 1:
            return False
        origin, white = self.hand[own][1], piece.isupper()
        other_side = [(c, s) for c, s in self.hand if c.isupper() != white]
        if all(s != sq for _, s in other_side) and any(_can_take(c, s, origin) for c, s in other_side):
            self.hand.pop(own)
            return True
        return False

    def _promotion(self, sq: int, piece: str) -> str | None:
        """Track the pieces in the hand for a placement; return the piece letter (q r b n) when ``piece`` put
        on ``sq`` is a promotion the board shows: on its last rank, not a pawn or king, not a piece of the hand,
        and the last piece its side lifted a pawn from its 7th rank."""
        white = piece.isupper()
        own = next((i for i in range(len(self.hand) - 1, -1, -1) if self.hand[i][0] == piece), None)
        taken, self.taken = self.taken, []
        self.aside.discard(sq)
        if self._pushed_aside(sq, piece, own):
            return None
        if own is None and any(c == piece and chess.square_distance(s, sq) == 1 for c, s in taken):
            # a victim the placement before took, told only where it was pushed (the scan read the capture
            # landing first: the g4 knight on e5, then the e5 pawn on f6): lifted from there, it leaves the board
            # and goes into no hand (it would stand for a piece of its side's next move)
            self.aside.add(sq)
        if own is not None and self.last_mover != ("white" if white else "black"):
            # The piece's own move ends (its side is to move): the other side's pieces lifted before it (victims,
            # a move over) leave the hand, and so does this move's victim; one lifted since is the answer begun
            # within the scan (a reply faster than the scan) and stays in the hand until it is put down.
            self.taken = [(c, s) for i, (c, s) in enumerate(self.hand)
                          if i != own and c.isupper() != white and _victim_of(piece, sq, c, s)]
            self.hand = [(c, s) for i, (c, s) in enumerate(self.hand)
                         if i != own and (c.isupper() == white or (i > own and not _victim_of(piece, sq, c, s)))]
            return None
        if own is not None and chess.square_distance(self.hand[own][1], sq) <= 1:
            # A piece of the side that moved last put down on its square or next to it (an adjustment, a victim the
            # other side's hand pushed aside): the other side's move is still under way, its pieces stay in the hand.
            self.hand.pop(own)
            return None
        self.hand = [(c, s) for c, s in self.hand if c.isupper() == white]   # the other side's move is over
        if own is not None:
            # a piece of the side that moved last put down further away (a victim carried across the board: the
            # capturing piece, out of the hand, waits to land until the victim's square clears)
            self.hand.pop(max(i for i, (c, _) in enumerate(self.hand) if c == piece))
            return None
        self.new_on_last_rank = None
        if piece.upper() in ("P", "K") or chess.square_rank(sq) != (7 if white else 0):
            return None
        if not self.hand:
            self.new_on_last_rank = (sq, piece)
            return None
        letter, origin = self.hand[-1]
        if letter == ("P" if white else "p") and chess.square_rank(origin) in ((6, 7) if white else (1, 0)):
            self.hand.pop()
            return piece.lower()
        self.new_on_last_rank = (sq, piece)
        return None


def _kings_first(squares: list[int], board: Sequence[Content]) -> list[int]:
    """Return ``squares`` with those of kings first (castling is made with the king first, 4.4.2), else in
    square order."""
    return sorted(squares, key=lambda sq: (board[sq] not in ("K", "k"), sq))


def report_order(shown: Sequence[Content], target: Sequence[Content], changed: list[int], hand: list[str],
                 white_to_move: bool) -> list[list[int]]:
    """Return the changed squares of one report in an order a hand could have made them, in parts: each part but
    the last ends a move, and what follows it is the answer begun within the same scan.

    A board that names its pieces reports many changes at once (a scan, a debounced frame) without their order.
    The parts: the placements of pieces already in ``hand`` (lifted in an earlier report: the end of a move under
    way, which passes the move to the other side); then a move the side to move made whole within the report (a
    piece of its lifted and one of the same kind put down elsewhere; with the lift of a pawn taken en passant),
    its lifts before its placements; then the rest, the empties before the fills and replacements. Kings' squares
    go before the others of their part (castling is made with the king first, 4.4.2)."""
    parts: list[list[int]] = []
    left = list(changed)
    finishing = [sq for sq in left if target[sq] is not None and shown[sq] is None and target[sq] in hand]
    if finishing:
        parts.append(_kings_first(finishing, target))
        left = [sq for sq in left if sq not in finishing]
        white_to_move = not str(target[finishing[0]]).isupper()
    empties = [sq for sq in left if target[sq] is None]
    placed = [sq for sq in left if target[sq] is not None]
    for white in (white_to_move, not white_to_move):
        lifted = [sq for sq in empties if is_piece(shown[sq]) and str(shown[sq]).isupper() == white]
        letters = {shown[sq] for sq in lifted}
        landed = [sq for sq in placed if str(target[sq]).isupper() == white and target[sq] in letters]
        if not landed:
            if lifted:
                break       # the side to move has a move under way: the other side's cannot come before it
            continue
        own = [sq for sq in lifted if shown[sq] in {target[s] for s in landed}]
        victims = [sq for sq in empties if is_piece(shown[sq]) and str(shown[sq]).isupper() != white
                   and any(_victim_of(str(target[s]), s, str(shown[sq]), sq) for s in landed)]
        move = _kings_first(own, shown) + victims + _kings_first(landed, target)
        parts.append(move)
        left = [sq for sq in left if sq not in move]
        break
    parts.append(_kings_first([sq for sq in left if target[sq] is None], shown)
                 + _kings_first([sq for sq in left if target[sq] is not None], target))
    return [part for part in parts if part]


def _can_take(piece: str, origin: int, target: int) -> bool:
    """Return whether ``piece`` (a FEN letter) standing on ``origin`` attacks ``target`` on an empty board (the
    pieces between are not known here)."""
    board = chess.BaseBoard.empty()
    board.set_piece_at(origin, chess.Piece.from_symbol(piece))
    return bool(board.attacks_mask(origin) & chess.BB_SQUARES[target])


def _victim_of(piece: str, sq: int, other: str, origin: int) -> bool:
    """Return True when ``other`` lifted from ``origin`` can be the victim of ``piece`` put on ``sq``: taken on
    that square, or a pawn taken en passant beside a pawn's landing."""
    if origin == sq:
        return True
    return (piece in ("P", "p") and other in ("P", "p") and chess.square_file(origin) == chess.square_file(sq)
            and abs(chess.square_rank(origin) - chess.square_rank(sq)) == 1)


def alert_line(code: str, t: int, **detail: Any) -> dict[str, Any]:
    """Return the wire line that makes the bridge raise an alert ``code`` for the board (an ``error`` line with
    ``alert``)."""
    return {"t": t, "type": "error", "why": detail.get("message", code), "alert": code, "detail": detail}
