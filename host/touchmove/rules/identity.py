"""Piece identity from boards that know their pieces (DGT, ChessLink, Chessnut: docs/boards.md).

A ``place`` record may say which piece was put down (``piece``, a FEN letter). :class:`PieceWatch` keeps the
letters of the squares whose last record was such a place; once the game's position is settled (a move made, a
game started) :meth:`PieceWatch.wrong` returns the squares where the board's piece is not the position's: a
knight where the game has a bishop, two pieces swapped, a start position set up wrongly. Squares with no letter
(an occupancy-only board, a piece lifted since) are never judged: such boards work exactly as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import chess

from touchmove.rules.footprints import captured_square

#: The time given the letters of a snapshot: a whole board reported at rest, judged at once.
WHOLE_BOARD = -(2**62)
#: How many of a board's last lifts and placements :class:`PieceWatch` keeps (:attr:`PieceWatch.changes`): eight
#: plies' lifts, placements, victims taken off and slides, with room.
KEPT_CHANGES = 96


class PieceChange(NamedTuple):
    """A lift (``piece`` None) or a placement of a named piece at ``t``, and how many plies the game had then."""

    t: int
    sq: chess.Square
    piece: str | None
    plies: int


class PieceWatch:
    """The pieces a board said it holds, square by square (see the module)."""

    def __init__(self) -> None:
        self.letters: dict[chess.Square, str] = {}
        self.since: dict[chess.Square, int] = {}             # when each letter was put down
        self.last: dict[chess.Square, str] = {}              # the last letter each square had, lifted or not
        self.told: set[tuple[chess.Square, str]] = set()     # (square, found) already reported
        #: the board's last lifts and placements, oldest first (boards that name their pieces only)
        self.changes: deque[PieceChange] = deque(maxlen=KEPT_CHANGES)

    def place(self, sq: chess.Square, piece: str | None, t: int, plies: int = 0) -> None:
        """Note a place record at ``t`` (``piece`` None: the board did not say) in a game of ``plies`` plies."""
        if piece is None:
            self.letters.pop(sq, None)
        else:
            self.letters[sq] = self.last[sq] = piece
            self.since[sq] = t
            self.changes.append(PieceChange(t, sq, piece, plies))

    def snapshot(self, placement: str, t: int = 0, plies: int = 0) -> None:
        """Note a snapshot's pieces (a FEN placement) at ``t``: every square's letter is known again. The squares
        it shows changed are noted as lifted and placed at ``t`` (a ChessLink frame of many changes at once)."""
        board = chess.BaseBoard(placement)
        letters = {sq: piece.symbol() for sq, piece in board.piece_map().items()}
        if self.letters:
            for sq in sorted(set(self.letters) | set(letters)):
                before, after = self.letters.get(sq), letters.get(sq)
                if before != after:
                    if before is not None:
                        self.changes.append(PieceChange(t, sq, None, plies))
                    if after is not None:
                        self.changes.append(PieceChange(t, sq, after, plies))
        self.letters = letters
        self.since = dict.fromkeys(self.letters, WHOLE_BOARD)
        self.last.update(self.letters)

    def restamp(self, since: int, plies: int) -> None:
        """Give the changes noted at ``since`` or later (host ms) the ply count ``plies``: a snapshot's changes
        belong to the plies read from it."""
        for i in range(len(self.changes) - 1, -1, -1):
            change = self.changes[i]
            if change.t < since:
                break
            self.changes[i] = change._replace(plies=max(change.plies, plies))

    def lift(self, sq: chess.Square, t: int = 0, plies: int = 0) -> None:
        """Note a lift record at ``t`` in a game of ``plies`` plies."""
        if self.letters:
            self.changes.append(PieceChange(t, sq, None, plies))
        self.letters.pop(sq, None)
        self.told = {(s, f) for s, f in self.told if s != sq}

    def piece_on(self, sq: chess.Square) -> str | None:
        """Return the letter the board gave the piece on ``sq``, if it gave one."""
        return self.letters.get(sq)

    def piece_at(self, sq: chess.Square, t: int) -> str | None:
        """Return the letter the board gave the piece on ``sq`` at device time ``t`` (None: empty then, or not
        said): the engine reads a change after its chatter filter held it, when later reports are in already."""
        for change in reversed(self.changes):
            if change.sq == sq and change.t <= t:
                return change.piece
        return self.letters.get(sq)

    def promoted_on(self, sq: chess.Square, white: bool, plies: int) -> str | None:
        """Return the last piece of the promoting side (``white``; not a pawn or king) the board named on ``sq``
        in a game of ``plies`` plies or more: the new piece of a promotion captured since."""
        for change in reversed(self.changes):
            if change.plies < plies:
                break
            if change.sq == sq and new_piece_of(change.piece, white):
                return change.piece
        return None

    def exchanging(self, sq: chess.Square) -> bool:
        """Return True when ``sq`` is empty after a pawn stood on it (a promotion's pawn being exchanged)."""
        return sq not in self.letters and self.last.get(sq) in ("P", "p")

    def wrong(self, board: chess.BaseBoard, settled_by: int,
              capturing: chess.Color | None = None) -> list[dict[str, str]]:
        """Return the squares (not reported before) whose piece differs from ``board``'s: square, expected piece
        (the position's) and the piece found. Only pieces put down by ``settled_by`` are judged: one put down
        since may be the next move under way (an answer before the move it answers was made). With
        ``capturing`` (the side to move, a move of it under way) a piece of that side on the other side's is not
        judged: a capture made but for its victim, pushed aside and still to be taken off. Nor is a new piece of
        the side to move where one of its pawns can promote (put down before the pawn is taken off, 4.4.4)."""
        out = []
        for sq, expected, found in self._differing(board, settled_by):
            if capturing is not None and found.isupper() == capturing and expected.isupper() != capturing:
                continue
            if promotion_begun(board, sq, found):
                continue
            if (sq, found) not in self.told:
                self.told.add((sq, found))
                out.append({"sq": chess.square_name(sq), "expected": expected, "found": found})
        return out

    def contradicts(self, board: chess.BaseBoard, settled_by: int) -> bool:
        """Return whether a piece put down by ``settled_by`` stands where ``board`` has another (as
        :meth:`wrong` judges, told or not): a line of play the board's pieces rule out."""
        return any(True for _ in self._differing(board, settled_by))

    def _differing(self, board: chess.BaseBoard, settled_by: int) -> Iterator[tuple[chess.Square, str, str]]:
        """Yield the squares, by number, whose piece put down by ``settled_by`` differs from the one ``board``
        has there (an empty square of ``board`` is no difference; nor is the victim of a capture read as made,
        still on its square while the capturing piece is in the hand): square, expected and found letters."""
        for sq, found in sorted(self.letters.items()):
            if self.since.get(sq, WHOLE_BOARD) > settled_by:
                continue
            piece = board.piece_at(sq)
            if piece is not None and piece.symbol() != found and found != _victim(board, sq):
                yield sq, piece.symbol(), found

    def placement(self, occ: chess.Bitboard) -> dict[chess.Square, str] | None:
        """Return the board's whole placement (square -> letter) on the squares of ``occ`` when it named the piece
        of each, else None (an occupancy-only board). A square of ``occ`` lifted since (the engine reads the
        lift after this watch, or holds it as possible contact bounce) has the letter it had."""
        if not self.letters:
            return None
        out = {}
        for sq in chess.scan_forward(occ):
            letter = self.letters.get(sq) or self.last.get(sq)
            if letter is None:
                return None
            out[sq] = letter
        return out


def promotion_begun(board: chess.BaseBoard, sq: chess.Square, letter: str) -> bool:
    """Return whether ``letter`` on ``sq`` is the new piece of a promotion ``board``'s side to move can make there:
    put down before its pawn is taken off."""
    if not isinstance(board, chess.Board) or not new_piece_of(letter, board.turn == chess.WHITE):
        return False
    return any(move.promotion is not None for move in board.generate_legal_moves(to_mask=chess.BB_SQUARES[sq]))


def new_piece_of(letter: str | None, white: bool) -> bool:
    """Return whether ``letter`` names a piece a pawn of that side (``white``) can promote to."""
    return letter is not None and letter.upper() not in ("P", "K") and letter.isupper() == white


def _victim(board: chess.BaseBoard, sq: chess.Square) -> str | None:
    """Return the letter of the piece the last move of ``board`` captured on ``sq`` (still on the board while the
    capturing piece is in the hand: a capture whose squares read as made), else None."""
    if not isinstance(board, chess.Board) or not board.move_stack or board.move_stack[-1].to_square != sq:
        return None
    before = board.copy()
    before.pop()
    victim = before.piece_at(sq)
    return None if victim is None else victim.symbol()


def shown_by(moves: tuple[chess.Move, ...], start: chess.Board, in_progress: bool,
             pieces: dict[chess.Square, str]) -> tuple[chess.Move, ...] | None:
    """Return ``moves`` (plies from ``start``, found by occupancy) if the board's ``pieces`` show where they lead,
    with a promotion made with the piece the board shows on its square (the search assumes a queen); else None.

    Played out, the plies must leave every piece the board names on its square; with a move under way
    (``in_progress``), the pieces must show that move under way (:func:`under_way`)."""
    board = start.copy(stack=False)
    played: list[chess.Move] = []
    for move in moves:
        if move.promotion is not None:
            letter = pieces.get(move.to_square)
            if letter is not None and new_piece_of(letter, board.turn):
                move = chess.Move(move.from_square, move.to_square, chess.Piece.from_symbol(letter).piece_type)
        played.append(move)
        board.push(move)
    if in_progress:
        return tuple(played) if under_way(board, pieces) else None
    if any(str(board.piece_at(sq)) != letter for sq, letter in pieces.items()):
        return None
    return tuple(played)


def only_lifted(board: chess.Board, pieces: dict[chess.Square, str]) -> bool:
    """Return whether the board's ``pieces`` are ``board``'s with some of them lifted and nothing else (every
    piece shown stands where the game has it): no ply explains that (every ply puts a piece down somewhere new),
    only hands holding pieces, of either side (an adjustment out of turn)."""
    return all(board.piece_at(sq) is not None and board.piece_at(sq).symbol() == letter  # type: ignore[union-attr]
               for sq, letter in pieces.items())


def made_with_hands(board: chess.Board, pieces: dict[chess.Square, str]) -> bool:
    """Return whether the board's ``pieces`` are ``board`` with one piece of the side to move in the hand and one
    piece more lifted or knocked onto an empty square next to its own, or the position after one legal move of the
    side to move (or after that move and an answer to it) with one piece next to the last move's landing square
    lifted or knocked so: a sleeve knocking a piece off (docs/hands.md), never a second ply; the plies played are
    then not searched (the board is read as a board without names would be). Two pieces off besides the move are
    plies mixed in a scan (searched); so is a move made with a piece lifted away from its landing square (the next
    move begun: the hand that made the move cannot have knocked it). Also hands: a capture under way (its victim
    off) with one piece knocked next to where it goes; a move whose piece an answer took where it landed, with one
    piece off next to it."""
    if _with_hands(board, pieces, board.turn):
        return True
    for capture in board.generate_legal_captures():
        # a capture under way, its victim taken off already, and one piece more knocked by the hand carrying
        # the capturing piece (next to where it goes)
        victim = captured_square(board, capture)
        if victim is None or capture.from_square in pieces or victim in pieces:
            continue
        stripped = board.copy(stack=False)
        stripped.remove_piece_at(victim)
        if _with_hands(stripped, pieces, board.turn, near=capture.to_square):
            return True
    for move, landing in _moves_shown(board, pieces):
        after = _after(board, move)
        if _with_hands(after, pieces, None, near=landing) and not _shows(board, move, pieces):
            return True     # (a move shown made with nothing in a hand is a ply the engine did not read)
        # the answer made too, faster than the scan, by a hand that knocked a piece next to where it landed
        for answer, answer_landing in _moves_shown(after, pieces):
            if _with_hands(_after(after, answer), pieces, None, near=answer_landing) \
                    and not _shows(after, answer, pieces):
                return True
    for _, after, answer, answer_landing in _answers_where_landed(board, pieces):
        # the move's piece taken where it landed by an answer faster than the scan (a bullet recapture), that
        # hand knocking a piece next to it
        if not _shows(after, answer, pieces) and _with_hands(_after(after, answer), pieces, None,
                                                               near=answer_landing):
            return True
    return False


def taken_with_victim_beside(board: chess.Board, pieces: dict[chess.Square, str]) -> bool:
    """Return whether the board's ``pieces`` are ``board`` after a legal move whose piece an answer took where it
    landed, that piece still on the board on an empty square next to its landing: pushed aside by the capturing
    piece, to be taken off (a bullet recapture pushing its victim aside); by the pieces alone this may be plies
    lost, the caller weighs whether the board was blind."""
    return any(_victim_beside(_after(after, answer), pieces, move.to_square, after.piece_at(move.to_square))
               for move, after, answer, _ in _answers_where_landed(board, pieces))


def _victim_beside(final: chess.Board, pieces: dict[chess.Square, str], landing: chess.Square,
                   victim: chess.Piece | None) -> bool:
    """Return whether ``pieces`` are ``final`` (the move's piece, ``victim``, taken where it landed on ``landing``)
    with that piece still on the board, on an empty square next to ``landing``: pushed aside by the capturing
    piece, to be taken off."""
    strays = _strays(final, pieces)
    return (victim is not None and len(pieces) == chess.popcount(final.occupied) + 1 and len(strays) == 1
            and final.piece_at(strays[0][0]) is None and strays[0][1] == victim.symbol()
            and bool(chess.BB_KING_ATTACKS[landing] & chess.BB_SQUARES[strays[0][0]]))


def answer_begun_past_knock(board: chess.Board, pieces: dict[chess.Square, str]
                            ) -> tuple[chess.Square, chess.Square, chess.Square, chess.Square | None] | None:
    """Return (the landing square of the move, the answer's square, the knocked piece's own square, the answer's
    victim's square or None) when the board's ``pieces`` are ``board`` after one legal move of the side to move
    with a piece of the answering side lifted (its answer begun; a capture's victim may be off too) and one piece
    more lifted, or moved onto an empty square next to its own, from a square next to where the lifted piece can
    legally go (a sleeve knocking a piece as the hand carries the answer), not one it can take (that is its victim,
    a capture under way); else None. By the pieces alone this may be plies lost in a drop (...dxe5 dxe5
    before ...O-O-O shows the d6 and d4 pawns gone, a white pawn on e5 as before): the caller weighs the order of
    the changes."""
    for move, landing in _moves_shown(board, pieces):
        after = _after(board, move)
        strays = _strays(after, pieces)
        missing = [sq for sq in chess.SquareSet(after.occupied) if sq not in pieces]
        if len(missing) not in (2, 3) or len(strays) > 1 or (strays and after.piece_at(strays[0][0]) is not None):
            continue
        for answer in missing:
            if after.color_at(answer) != after.turn:
                continue
            replies = list(after.generate_legal_moves(chess.BB_SQUARES[answer]))
            for reply in replies:
                others = [sq for sq in missing if sq not in (answer, reply.to_square)]
                if len(others) != 1:
                    continue        # (the answer and, for a capture under way, its victim: one piece more)
                knocked = others[0]
                if strays and not (str(after.piece_at(knocked)) == strays[0][1]
                                   and chess.BB_KING_ATTACKS[strays[0][0]] & chess.BB_SQUARES[knocked]):
                    continue
                if any(other.to_square == knocked for other in replies):
                    continue        # (a piece the answer can take, lifted: its victim)
                if chess.BB_KING_ATTACKS[reply.to_square] & chess.BB_SQUARES[knocked]:
                    return landing, answer, knocked, reply.to_square if reply.to_square in missing else None
    return None


def _answers_where_landed(board: chess.Board, pieces: dict[chess.Square, str]
                          ) -> Iterator[tuple[chess.Move, chess.Board, chess.Move, chess.Square]]:
    """Yield (a move, the board after it, an answer taking its piece where it landed, that answer's landing square)
    for the moves of :func:`_taken_where_landed` and the answers whose piece the board's ``pieces`` show there."""
    for move in _taken_where_landed(board, pieces):
        after = _after(board, move)
        for answer, answer_landing in _moves_shown(after, pieces):
            if answer.to_square == move.to_square:
                yield move, after, answer, answer_landing


def _taken_where_landed(board: chess.Board, pieces: dict[chess.Square, str]) -> Iterator[chess.Move]:
    """Yield the legal moves of ``board`` (no castling) from a square the board's ``pieces`` show empty onto one
    where they show a piece of the other side: moves whose piece an answer may have taken where it landed."""
    other = board.turn == chess.BLACK
    for move in board.generate_legal_moves():
        letter = pieces.get(move.to_square)
        if (letter is not None and letter.isupper() == other and move.from_square not in pieces
                and not board.is_castling(move)):
            yield move


def captures_past(board: chess.Board, move: chess.Move) -> list[chess.Square]:
    """Return the squares where the piece of ``move`` (legal in ``board``) could capture further along its line,
    ``move``'s landing square on the way there: a board that shows it landed may have read it sliding on."""
    landing = chess.BB_SQUARES[move.to_square]
    return [capture.to_square for capture in board.generate_legal_captures(chess.BB_SQUARES[move.from_square])
            if chess.between(move.from_square, capture.to_square) & landing]


def move_shown(board: chess.Board, pieces: dict[chess.Square, str]) -> tuple[chess.Move, chess.Bitboard] | None:
    """Return the legal move of ``board`` after which the board's ``pieces`` are the placement, but for at most one
    piece of the next mover lifted (his hand already on it: an answer begun, an adjustment), with that piece's
    square (0 for none), when one move is; else None. Such a placement came in an order no reading follows (the
    piece sensed on its new square before its own emptied, a recapture's victim swapped for the capturing piece
    before that piece's square was read, a whole status at once), and no other line of plies leaves it: a side's
    one move in three plies would need the other side's move undone, and a piece of the next mover taken would
    leave the taking piece on its square. A lifted piece of the side that moved is not read so (the king lifted
    after the rook was put down is castling under way), nor one the moved piece could take from its square over
    the square it is shown on (its victim lifted first, the piece sensed on its way there: Rd3 shown as Rxd1
    slides on): other readings judge those."""
    shown: list[tuple[chess.Move, chess.Bitboard]] = []
    for move, _ in _moves_shown(board, pieces):
        after = _after(board, move)
        if not _shown_but_hand(after, pieces):
            continue
        lifted = after.occupied & ~chess.SquareSet(pieces.keys()).mask
        if lifted and any(lifted & chess.BB_SQUARES[sq] for sq in captures_past(board, move)):
            continue    # (its victim lifted first, the piece sensed on a square on its way there)
        shown.append((move, lifted))
    return shown[0] if len(shown) == 1 else None


def shown_in_turn(start: chess.Board, moves: Sequence[chess.Move], changes: Sequence[PieceChange],
                  now: dict[chess.Square, str]) -> list[int] | None:
    """Return when the board showed the position after each of ``moves`` (played from ``start``), in turn, or None
    if it did not show one of them.

    The placement is followed from ``start``'s through ``changes`` (the board's lifts and placements since, oldest
    first; the changes of one report, at one time, read together) and must end as the board shows it ``now``
    (else a piece was in a hand before ``start``, and nothing is said). A ply's position counts as shown with at
    most one piece of the next mover lifted: his hand already on it, in the report that showed the ply."""
    placement = {sq: piece.symbol() for sq, piece in start.piece_map().items()}
    reports: list[tuple[int, dict[chess.Square, str]]] = []
    for i, change in enumerate(changes):
        if change.piece is None:
            placement.pop(change.sq, None)
        else:
            placement[change.sq] = change.piece
        if i + 1 == len(changes) or changes[i + 1].t != change.t:
            reports.append((change.t, dict(placement)))
    if placement != now:
        return None
    board = start.copy(stack=False)
    at, times = 0, []
    for move in moves:
        board.push(move)
        while at < len(reports) and not _shown_but_hand(board, reports[at][1]):
            at += 1
        if at == len(reports):
            return None
        times.append(reports[at][0])
    return times


def _shown_but_hand(board: chess.Board, placement: dict[chess.Square, str]) -> bool:
    """Return whether ``placement`` is ``board``'s but for at most one piece of the side to move lifted."""
    if any(str(board.piece_at(sq)) != letter for sq, letter in placement.items()):
        return False
    lifted = board.occupied & ~chess.SquareSet(placement.keys()).mask
    return not lifted & ~board.occupied_co[board.turn] and chess.popcount(lifted) <= 1


def _moves_shown(board: chess.Board, pieces: dict[chess.Square, str]) -> Iterator[tuple[chess.Move, chess.Square]]:
    """Yield the legal moves of ``board`` whose moving piece the board's ``pieces`` show on its landing square (a
    castling's king on its own), with that square."""
    for move in board.generate_legal_moves():
        landing = move.to_square
        if board.is_castling(move):
            landing = chess.square(6 if chess.square_file(move.to_square) > chess.square_file(move.from_square)
                                   else 2, chess.square_rank(move.from_square))
        letter = pieces.get(landing)
        if letter is None:
            continue
        moved = chess.Piece(move.promotion, board.turn) if move.promotion else board.piece_at(move.from_square)
        if moved is not None and moved.symbol() == letter:
            yield move, landing


def _after(board: chess.Board, move: chess.Move) -> chess.Board:
    """Return ``board`` after ``move``."""
    after = board.copy(stack=False)
    after.push(move)
    return after


def _strays(board: chess.BaseBoard, pieces: dict[chess.Square, str]) -> list[tuple[chess.Square, str]]:
    """Return the squares where the board's ``pieces`` name another piece than ``board`` has there (or one where it
    has none), with the letter named."""
    return [(sq, letter) for sq, letter in pieces.items() if str(board.piece_at(sq)) != letter]


def _with_hands(board: chess.BaseBoard, pieces: dict[chess.Square, str], mover: chess.Color | None,
                near: chess.Square | None = None) -> bool:
    """Return whether ``pieces`` are ``board``'s with one piece of ``mover`` (if given) lifted, and one piece
    more lifted or moved onto an empty neighbour square of its own (a knocked piece fallen there); with ``near``,
    that piece's own square is next to ``near`` (where the hand was)."""
    strays = _strays(board, pieces)
    if len(strays) > 1:
        return False
    home: chess.Square | None = None
    if strays:
        sq, letter = strays[0]
        if board.piece_at(sq) is not None:
            return False
        homes = [h for h in chess.SquareSet(chess.BB_KING_ATTACKS[sq]) if h not in pieces
                 and board.piece_at(h) is not None and board.piece_at(h).symbol() == letter]  # type: ignore[union-attr]
        if not homes:
            return False
        home = homes[0]
    missing = [sq for sq in chess.SquareSet(board.occupied) if sq not in pieces and sq != home]
    if mover is not None:
        own = [sq for sq in missing if board.color_at(sq) == mover]
        if own:
            missing.remove(own[0])
    if near is not None and any(not chess.BB_KING_ATTACKS[near] & chess.BB_SQUARES[sq]
                                for sq in missing + ([] if home is None else [home])):
        return False
    return len(missing) + len(strays) <= 1


def under_way(board: chess.Board, pieces: dict[chess.Square, str]) -> bool:
    """Return whether the board's ``pieces`` (its whole placement) can be ``board`` with one move of the side to
    move under way: its own pieces lifted (two for castling) or put down anywhere (a sliding piece shows on the
    squares it crosses; a promotion's new piece), one piece of the other side taken off where a legal capture
    of a lifted piece goes. False: the pieces show more (an
    answer made, two plies), and the plies played are to be searched."""
    side = board.turn
    lifted: list[chess.Square] = []
    victims: list[chess.Square] = []
    placed: list[tuple[chess.Square, str]] = []
    for sq, piece in board.piece_map().items():
        letter = pieces.get(sq)
        if letter == piece.symbol():
            continue
        if piece.color == side:
            lifted.append(sq)
        else:
            victims.append(sq)
        if letter is not None:
            placed.append((sq, letter))
    placed += [(sq, letter) for sq, letter in pieces.items() if board.piece_at(sq) is None]
    if len(lifted) > 2 or len(victims) > 1 or any(letter.isupper() != side for _, letter in placed):
        return False
    if len(lifted) == 2 and not any(board.is_castling(m) and {m.from_square, _castling_rook(board, m)} == set(lifted)
                                    for m in board.generate_castling_moves()):
        return False  # two of one side's pieces in the air: only a king and rook castling (not a king's step
        # with a rook in the hand after plies not seen)
    moves = list(board.generate_legal_moves(chess.SquareSet(lifted).mask if lifted else chess.BB_ALL))
    for victim in victims:
        if not any(captured_square(board, m) == victim for m in moves):
            return False
    letters = {board.piece_at(sq).symbol() for sq in lifted}  # type: ignore[union-attr]
    for _, letter in placed:
        # a piece of the hand (sliding: on a square it crosses) or a promotion's new piece
        if letter not in letters and not (letter.upper() not in ("P", "K") and any(
                board.piece_type_at(sq) == chess.PAWN and chess.square_rank(sq) in (1, 6) for sq in lifted)):
            return False
    # a legal move the pieces show made, that the engine did not read (a Chess960 castling whose king stays: the
    # king's lift and put-back hidden by the scan) is no move under way
    return not any(_shows(board, m, pieces) for m in board.generate_legal_moves(
        chess.SquareSet(lifted).mask | board.kings & board.occupied_co[side]))


def lands_as_named(board: chess.Board, move: chess.Move, pieces: dict[chess.Square, str]) -> bool:
    """Return whether the piece ``move`` puts on its landing square (castling: the king's) is the one ``pieces``
    names there, or none is named there."""
    after = _after(board, move)
    landing = after.king(board.turn) if board.is_castling(move) else move.to_square
    if landing is None:
        return True
    named = pieces.get(landing)
    return named is None or named == str(after.piece_at(landing))


def _castling_rook(board: chess.Board, move: chess.Move) -> chess.Square:
    """Return the square of the rook that castling ``move`` moves."""
    if board.chess960:
        return move.to_square  # python-chess gives a Chess960 castling as the king taking its rook
    return chess.square(7 if chess.square_file(move.to_square) == 6 else 0, chess.square_rank(move.from_square))


def _shows(board: chess.Board, move: chess.Move, pieces: dict[chess.Square, str]) -> bool:
    """Return whether ``pieces`` is exactly the placement after ``move``."""
    after = board.copy(stack=False)
    after.push(move)
    return len(pieces) == len(after.piece_map()) and all(
        str(after.piece_at(sq)) == letter for sq, letter in pieces.items())
