"""Legal-move footprints: what each legal move leaves on an occupancy board.

A footprint says which squares are occupied after the move, which squares must have been lifted for the move to
be proven (the board cannot tell a lone lift from a capture), and which squares the move involves at all.
"""

from __future__ import annotations

import chess

from touchmove.values import value


@value
class Footprint:
    """One legal move as an occupancy board sees it (promotions: one footprint per to-square, queen first)."""

    move: chess.Move
    occ_after: chess.Bitboard
    must_lift: chess.Bitboard
    involved: chess.Bitboard
    placed: chess.Bitboard


def castling_squares(board: chess.Board, move: chess.Move) -> tuple[chess.Square, chess.Square, chess.Square]:
    """Return (rook from, king to, rook to) of a castling move, in standard or Chess960 encoding."""
    rank = chess.square_rank(move.from_square)
    kingside = board.is_kingside_castling(move)
    # python-chess encodes Chess960 castling as "king takes own rook", standard castling as the king's step.
    rook_from = move.to_square if board.chess960 else chess.square(7 if kingside else 0, rank)
    king_to = chess.square(6 if kingside else 2, rank)
    rook_to = chess.square(5 if kingside else 3, rank)
    return rook_from, king_to, rook_to


def captured_square(board: chess.Board, move: chess.Move) -> chess.Square | None:
    """Return the square of the piece a legal ``move`` captures (en passant: the square beside its destination),
    or None when it captures nothing (castling onto its own rook included)."""
    if board.is_en_passant(move):
        return move.to_square + (-8 if board.turn == chess.WHITE else 8)
    if board.occupied_co[not board.turn] & chess.BB_SQUARES[move.to_square]:
        return move.to_square
    return None


def footprint(board: chess.Board, move: chess.Move) -> Footprint:
    """Return the footprint of a legal move in a position."""
    occ = board.occupied
    src = chess.BB_SQUARES[move.from_square]
    if board.is_castling(move):
        rook_from, king_to, rook_to = castling_squares(board, move)
        lifted = src | chess.BB_SQUARES[rook_from]
        placed = chess.BB_SQUARES[king_to] | chess.BB_SQUARES[rook_to]
        return Footprint(move, (occ & ~lifted) | placed, lifted, lifted | placed, placed)
    dst = chess.BB_SQUARES[move.to_square]
    victim = captured_square(board, move)
    if victim is not None and victim != move.to_square:     # en passant
        vbb = chess.BB_SQUARES[victim]
        return Footprint(move, (occ & ~src & ~vbb) | dst, src | vbb, src | vbb | dst, dst)
    if occ & dst:
        return Footprint(move, occ & ~src, src | dst, src | dst, dst)
    return Footprint(move, (occ & ~src) | dst, src, src | dst, dst)


PROMOTION_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)

#: A piece slid from one square to the next is sensed on the new square a moment before the old one empties:
#: a capture's square refilled up to this long before the capturing piece's square emptied is that piece.
SLIDE_OVERLAP_MS = 150


class Position:
    """A position of the game, with what its legal moves leave on the board, computed as needed.

    Looking a board state up costs only the moves that fit the squares that changed, not all legal moves:
    an event costs microseconds.
    """

    __slots__ = ("_captured", "_castlings", "_cells", "_from", "_rows", "board", "occ")

    def __init__(self, board: chess.Board) -> None:
        self.board = board
        self.occ: chess.Bitboard = board.occupied
        self._from: dict[chess.Square, list[chess.Move]] = {}
        self._captured: dict[chess.Square, bool] = {}
        self._castlings: list[Footprint] | None = None
        self._cells: list[str] | None = None  # the FEN symbol on each square ("1" when empty), a1 first
        self._rows: list[str] | None = None  # each rank as FEN writes it, rank 1 first

    def after(self, move: chess.Move, board: chess.Board) -> Position:
        """Return the position ``board`` shows, this one with legal ``move`` played; its FEN comes from this one's.

        A move changes at most four squares and two ranks: only those are written again.
        """
        child = Position(board)
        cells, rows = self._placement()
        cells = cells.copy()
        src, dst = move.from_square, move.to_square
        here = self.board
        changed = [src, dst]
        if here.is_castling(move):
            rook_from, king_to, rook_to = castling_squares(here, move)
            king, rook = cells[src], cells[rook_from]
            cells[src] = cells[rook_from] = "1"
            cells[king_to], cells[rook_to] = king, rook
        else:
            if move.promotion is not None:
                symbol = chess.piece_symbol(move.promotion)
                cells[dst] = symbol.upper() if here.turn == chess.WHITE else symbol
            else:
                cells[dst] = cells[src]
            cells[src] = "1"
            victim = captured_square(here, move)
            if victim is not None and victim != dst:    # en passant
                cells[victim] = "1"
                changed.append(victim)
        rows = rows.copy()
        for rank in {sq >> 3 for sq in changed}:
            rows[rank] = _row(cells, rank)
        child._cells, child._rows = cells, rows
        return child

    def fen(self) -> str:
        """Return the position's FEN (as ``board.fen()``)."""
        _, rows = self._placement()
        return f"{'/'.join(reversed(rows))} {_fen_fields(self.board)}"

    def _placement(self) -> tuple[list[str], list[str]]:
        """Return the FEN symbol of each square and the FEN of each rank, written once when first asked."""
        if self._cells is None or self._rows is None:
            self._cells = _cells(self.board)
            self._rows = [_row(self._cells, rank) for rank in range(8)]
        return self._cells, self._rows

    def moves_from(self, sq: chess.Square) -> list[chess.Move]:
        """Return the legal moves of the piece on ``sq`` (castling included for the king), kept for reuse."""
        moves = self._from.get(sq)
        if moves is None:
            moves = self._from[sq] = list(self.board.generate_legal_moves(chess.BB_SQUARES[sq]))
        return moves

    def castlings(self) -> list[Footprint]:
        """Return the footprints of the legal castling moves, kept for reuse (each change of a ply asks again)."""
        if self._castlings is None:
            board = self.board
            self._castlings = [footprint(board, move) for move in board.generate_castling_moves()]
        return self._castlings

    def explain(self, occ: chess.Bitboard, lifted: chess.Bitboard, blind: bool = False,
                held: chess.Bitboard = 0, last_lift: dict[int, int] | None = None,
                last_place: dict[int, int] | None = None, adjusted: chess.Bitboard = 0) -> Footprint | None:
        """Return the legal move that leaves ``occ``, proven by the ``lifted`` squares, or None.

        ``blind`` (after lost changes) waives the proof, but a capture whose victim square was not seen lifted
        must then be the only one that fits. Castling wins over a rook or king move with the same
        footprint only when both king and rook were lifted (Chess960); promotions give the queen. A Chess960
        castling that swaps king and rook leaves the board as it was: it needs both off the board at once
        (``held``), or it would be a touch of each. With ``last_lift`` and ``last_place`` (the last lift and place
        of each square), a capture also needs its square refilled after the capturing piece was lifted: a
        victim square lifted and put back before (an adjustment) proves nothing; on the ``adjusted`` squares
        (its owner straightening it before his press) the refill must follow the capturing piece's lift.
        """
        vacated = self.occ & ~occ
        filled = occ & ~self.occ
        nv, nf = vacated.bit_count(), filled.bit_count()
        board = self.board
        if nv == 0:
            if nf or not held & board.kings or not board.chess960:
                return None
            for fp in self.castlings():
                if fp.occ_after == occ and fp.must_lift & ~held == 0:
                    return fp
            return None
        if nv > 2 or nf > 2:
            return None
        found: Footprint | None = None
        castlers = board.kings | (board.rooks & board.castling_rights)
        if vacated & castlers & board.occupied_co[board.turn]:
            for fp in self.castlings():
                if fp.occ_after == occ and (blind or fp.must_lift & ~lifted == 0):
                    return fp
        if nf == 0:
            # A capture: the victim's square was lifted and refilled.
            targets = board.occupied_co[not board.turn] & occ
            if not blind or targets & lifted:
                targets &= lifted
        else:
            targets = filled
        if not targets:
            return found
        # Several victims lifted and refilled (a sleeve knocked one off, put back after the capturing piece
        # landed; its owner straightened one just before): see _capture_proof.
        several = (nf == 0 and not blind and targets & (targets - 1) and last_lift is not None
                   and last_place is not None)
        # Only the legal moves of the mover's pieces that left their squares can explain it (kept per square: a
        # touch looked them up already).
        candidates = [move for from_sq in chess.scan_reversed(vacated & board.occupied_co[board.turn])
                      for move in self.moves_from(from_sq) if chess.BB_SQUARES[move.to_square] & targets]
        for move in candidates:
            if move.promotion not in (None, chess.QUEEN):
                continue
            fp = footprint(board, move)
            if fp.occ_after != occ or not (blind or fp.must_lift & ~lifted == 0):
                continue
            if (not blind and nf == 0 and move.promotion is None and last_lift is not None and last_place is not None
                    and last_place.get(move.to_square, -1) < last_lift.get(move.from_square, 0)
                    - (0 if adjusted & chess.BB_SQUARES[move.to_square] else SLIDE_OVERLAP_MS)):
                # The victim's square was refilled before the capturing piece left its square (a promotion's
                # new piece may come first: it is not the pawn); a piece slid across is sensed on both at once.
                continue
            if several:
                if found is None or self._capture_proof(move, last_lift, last_place) < self._capture_proof(
                        found.move, last_lift, last_place):
                    found = fp
                continue
            if not (blind and nf == 0):
                return fp
            if found is not None:
                return None  # lifts unseen and two captures fit: no guess
            found = fp
        return found

    @staticmethod
    def _capture_proof(move: chess.Move, last_lift: dict[int, int] | None,
                       last_place: dict[int, int] | None) -> tuple[bool, int]:
        """Return how weakly the lifts prove a capture, for ranking several (smaller is stronger).

        A victim square refilled only after the capturing piece left its square is the better proof (a refill
        just before is allowed for a piece slid onto it, but is as likely its owner straightening it); then the
        victim lifted first (a piece knocked off by the sleeve on the way comes later).
        """
        assert last_lift is not None and last_place is not None
        before = last_place.get(move.to_square, -1) < last_lift.get(move.from_square, 0)
        return before, last_lift.get(move.to_square, 0)

    def can_move(self, sq: chess.Square) -> bool:
        """Return whether the piece on ``sq`` has a legal move (castling counts for the king only)."""
        return bool(self.moves_from(sq))

    def can_be_captured(self, sq: chess.Square) -> bool:
        """Return whether the piece on ``sq`` can be captured by a legal move (en passant included)."""
        captured = self._captured.get(sq)
        if captured is None:
            board = self.board
            captured = any(board.generate_legal_moves(chess.BB_ALL, chess.BB_SQUARES[sq]))
            ep = board.ep_square
            if not captured and ep is not None and sq == ep + (-8 if board.turn == chess.WHITE else 8):
                captured = any(board.generate_legal_ep())
            self._captured[sq] = captured
        return captured

    def continuable(self, occ: chess.Bitboard) -> bool:
        """Return whether ``occ`` could be a legal move of this position still in progress (pieces in hand).

        Every changed square must belong to one legal move, and a newly filled square needs that move's piece
        already lifted, unless the move is a promotion (the new piece comes from off the board, 4.6).
        """
        diff = occ ^ self.occ
        if not diff:
            return True
        board = self.board
        filled = occ & ~self.occ
        if not filled and not diff & (diff - 1):
            # One piece in the air (the common case): its own move, or a capture of it, would continue.
            sq = diff.bit_length() - 1
            if self.can_move(sq) or self.can_be_captured(sq):
                return True
            return bool(diff & board.rooks & board.castling_rights) and any(
                castling_squares(board, m)[0] == sq for m in board.generate_castling_moves())
        # Only moves that touch a changed square can explain it: from it, to it, or castling / en passant.
        candidates = [move for sq in chess.scan_reversed(diff & board.occupied_co[board.turn])
                      for move in self.moves_from(sq)]
        candidates += board.generate_legal_moves(chess.BB_ALL, diff)
        if diff & board.rooks & board.castling_rights:
            candidates += board.generate_castling_moves()
        if board.ep_square is not None:
            candidates += board.generate_legal_ep()
        for move in candidates:
            fp = footprint(board, move)
            if diff & ~fp.involved:
                continue
            if filled and move.promotion is None and occ & chess.BB_SQUARES[move.from_square]:
                continue
            return True
        return False


def promotion_alternatives(board: chess.Board, move: chess.Move) -> list[chess.Move]:
    """Return the same promotion with each other piece, most often chosen first (q, n, r, b)."""
    if move.promotion is None:
        return []
    return [
        chess.Move(move.from_square, move.to_square, promotion=piece)
        for piece in (chess.QUEEN, chess.KNIGHT, chess.ROOK, chess.BISHOP)
        if piece != move.promotion
    ]


_RUNS = tuple(("1" * n, str(n)) for n in range(8, 1, -1))


def _castling_field(board: chess.Board) -> str:
    if board.chess960:
        return board.castling_xfen()
    rights = board.clean_castling_rights()
    field = (("K" if rights & chess.BB_H1 else "") + ("Q" if rights & chess.BB_A1 else "")
             + ("k" if rights & chess.BB_H8 else "") + ("q" if rights & chess.BB_A8 else ""))
    return field or "-"


def _cells(board: chess.Board) -> list[str]:
    """Return the FEN symbol on each square of ``board`` ("1" when empty), a1 first."""
    cells = ["1"] * 64
    white = board.occupied_co[chess.WHITE]
    for bb, upper, lower in ((board.pawns, "P", "p"), (board.knights, "N", "n"), (board.bishops, "B", "b"),
                             (board.rooks, "R", "r"), (board.queens, "Q", "q"), (board.kings, "K", "k")):
        while bb:
            lsb = bb & -bb
            cells[lsb.bit_length() - 1] = upper if lsb & white else lower
            bb ^= lsb
    return cells


def _row(cells: list[str], rank: int) -> str:
    """Return one rank as FEN writes it (empty squares counted)."""
    row = "".join(cells[rank * 8:rank * 8 + 8])
    if "11" in row:
        for run, digit in _RUNS:
            if run in row:
                row = row.replace(run, digit)
    return row


def _fen_fields(board: chess.Board) -> str:
    """Return the FEN after its placement: turn, castling, en passant square, halfmove clock, move number."""
    ep = board.ep_square
    ep_name = chess.SQUARE_NAMES[ep] if ep is not None and board.has_legal_en_passant() else "-"
    turn = "w" if board.turn else "b"
    return f"{turn} {_castling_field(board)} {ep_name} {board.halfmove_clock} {board.fullmove_number}"


def fen_of(board: chess.Board) -> str:
    """Return ``board.fen()``, built from the bitboards (several times faster)."""
    cells = _cells(board)
    placement = "/".join(["".join(cells[i:i + 8]) for i in (56, 48, 40, 32, 24, 16, 8, 0)])
    for run, digit in _RUNS:
        if run in placement:
            placement = placement.replace(run, digit)
    return f"{placement} {_fen_fields(board)}"
