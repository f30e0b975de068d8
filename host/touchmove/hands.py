"""A model of human hands at an occupancy board: games turned into timed lift/place records.

Used by the demo (the simulated board's timeline), the property tests and the benchmarks. Hands vary: captures
victim first or mover first, all en passant orders, castling king first, two-handed or rook first, the four
promotion manners of FIDE 4.6, slides across squares, bounces and sensor chatter, hesitation with a piece in the
air, and clock presses. Everything is drawn from the ``random.Random`` passed in, so a seed reproduces a timeline.
"""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass

import chess
import chess.pgn

from touchmove.records import Clock, Lift, Place, Promote, Record, Setup, Snapshot
from touchmove.rules.footprints import castling_squares


@dataclass(frozen=True)
class Style:
    """How a pair of hands behaves; probabilities are per move."""

    settle_ms: int = 200  # the engine's settle time: rests meant as releases last longer than this
    think_ms: tuple[int, int] = (400, 3000)
    #: How long a released piece rests before anything else happens; None: a little over the settle time.
    #: Below the settle time, the opponent answers before the engine could call the move made (bullet).
    release_ms: tuple[int, int] | None = None
    slide: float = 0.3
    bounce: float = 0.15
    chatter: float = 0.2
    hesitate: float = 0.2
    victim_first: float = 0.5
    clock: bool = True
    promote_record: bool = True  # a board button or operator confirms an under-promotion
    adjust: float = 0.0  # after the move, the mover straightens the piece (lift and put back)
    jadoube: float = 0.0  # before the move, another own piece is lifted and put back (alerts, same moves)
    #: The piece is slid onto its square (the victim, if any, removed first) and sensed there a moment before
    #: its own square empties.
    overlap: float = 0.1


class Hands:
    """Writes records for moves played on a board, keeping the device time."""

    def __init__(self, rng: random.Random, style: Style | None = None, t: int = 0) -> None:
        self.rng = rng
        self.style = style or Style()
        self.t = t
        self.records: list[Record] = []

    # -- primitives ------------------------------------------------------------------------------------------

    def wait(self, lo: int, hi: int) -> None:
        self.t += self.rng.randint(lo, hi)

    def lift(self, sq: chess.Square) -> None:
        if self.rng.random() < self.style.chatter:  # contacts bounce as the magnet leaves
            self.records.append(Lift(self.t, sq))
            self.t += self.rng.randint(1, 4)
            self.records.append(Place(self.t, sq))
            self.t += self.rng.randint(1, 4)
        self.records.append(Lift(self.t, sq))
        self.wait(40, 160)

    def place(self, sq: chess.Square, *, rest: bool = True) -> None:
        self.records.append(Place(self.t, sq))
        if self.rng.random() < self.style.bounce:  # the piece bounces on landing
            self.t += self.rng.randint(1, 6)
            self.records.append(Lift(self.t, sq))
            self.t += self.rng.randint(1, 6)
            self.records.append(Place(self.t, sq))
        if rest:
            self.wait(*(self.style.release_ms or (self.style.settle_ms + 60, self.style.settle_ms + 400)))
        else:
            self.wait(40, 120)

    def carry(self, board: chess.Board, src: chess.Square, dst: chess.Square) -> None:
        """Move a lifted piece to ``dst``, maybe sliding over empty squares on the way (brief rests)."""
        if self.rng.random() < self.style.hesitate:
            self.wait(300, 1500)
        between = chess.SquareSet(chess.between(src, dst))
        if between and self.rng.random() < self.style.slide:
            dwell_hi = max(30, self.style.settle_ms // 2)
            for sq in between:
                if not board.piece_at(sq) and self.rng.random() < 0.7:
                    self.records.append(Place(self.t, sq))
                    self.t += self.rng.randint(15, dwell_hi)
                    self.records.append(Lift(self.t, sq))
                    self.t += self.rng.randint(5, 30)
        self.place(dst)

    def slide_onto(self, src: chess.Square, dst: chess.Square) -> None:
        """Slide a piece from ``src`` onto ``dst``: sensed on ``dst`` before ``src`` empties (the sensors overlap)."""
        self.records.append(Place(self.t, dst))
        self.t += self.rng.randint(5, 120)
        self.records.append(Lift(self.t, src))
        self.wait(*(self.style.release_ms or (self.style.settle_ms + 60, self.style.settle_ms + 400)))

    # -- moves -----------------------------------------------------------------------------------------------

    def move(self, board: chess.Board, move: chess.Move, remaining_ms: int | None = None,
             think_ms: int | None = None) -> None:
        """Play one legal move on the board (the board is not changed here).

        ``think_ms`` is how long the player thinks first (drawn from the style when None); ``remaining_ms`` is
        what the clock shows after the press.
        """
        if think_ms is None:
            lo, hi = self.style.think_ms
            self.wait(lo, hi)
        else:
            self.t += think_ms
        rng = self.rng
        if rng.random() < self.style.jadoube:
            others = [sq for sq in chess.SquareSet(board.occupied_co[board.turn])
                      if sq != move.from_square and not board.is_castling(move)]
            if others:
                sq = rng.choice(others)
                self.lift(sq)
                self.wait(100, 600)
                self.place(sq, rest=False)
                self.wait(200, 800)
        if board.is_castling(move):
            self._castle(board, move)
        elif move.promotion is not None:
            self._promote(board, move)
        elif board.is_en_passant(move):
            self._en_passant(board, move)
        elif board.piece_at(move.to_square):
            if rng.random() < self.style.victim_first:
                self.lift(move.to_square)
                self.wait(100, 600)
                if rng.random() < self.style.overlap:
                    self.slide_onto(move.from_square, move.to_square)
                else:
                    self.lift(move.from_square)
                    self.carry(board, move.from_square, move.to_square)
            else:
                self.lift(move.from_square)
                self.lift(move.to_square)
                self.carry(board, move.from_square, move.to_square)
        elif rng.random() < self.style.overlap:
            self.slide_onto(move.from_square, move.to_square)
        else:
            self.lift(move.from_square)
            self.carry(board, move.from_square, move.to_square)
        if self.rng.random() < self.style.adjust and not board.is_castling(move):
            self.lift(move.to_square)
            self.wait(20, 200)
            self.place(move.to_square, rest=False)
        if self.style.clock:
            self.wait(20, 150)
            self.records.append(Clock(self.t, board.turn, remaining_ms))

    def _castle(self, board: chess.Board, move: chess.Move) -> None:
        king = move.from_square
        rook, king_to, rook_to = castling_squares(board, move)
        how = self.rng.random()
        if king_to in (king, rook) or rook_to in (rook, king):
            # Chess960 overlaps: both pieces in hand, then both placed.
            self.lift(king)
            self.lift(rook)
            self.place(king_to, rest=False)
            if rook_to != king_to:
                self.place(rook_to)
            return
        if how < 0.6:  # king first, as 4.4.1 asks
            self.lift(king)
            self.place(king_to, rest=self.rng.random() < 0.5)
            self.lift(rook)
            self.place(rook_to)
        elif how < 0.8:  # two hands at once (7.5.4, but the board cannot see hands)
            self.lift(king)
            self.lift(rook)
            self.place(king_to, rest=False)
            self.place(rook_to)
        else:  # rook first (4.4.2): recorded as castling with an alert
            self.lift(rook)
            self.place(rook_to, rest=False)
            self.lift(king)
            self.place(king_to)

    def _en_passant(self, board: chess.Board, move: chess.Move) -> None:
        victim = move.to_square + (-8 if board.turn == chess.WHITE else 8)
        how = self.rng.randrange(3)
        if how == 0:  # victim first
            self.lift(victim)
            self.lift(move.from_square)
            self.place(move.to_square, rest=False)
        elif how == 1:  # pawn lands, then the victim is removed
            self.lift(move.from_square)
            self.place(move.to_square, rest=False)
            self.lift(victim)
        else:  # pawn in hand, victim removed with it, pawn lands
            self.lift(move.from_square)
            self.lift(victim)
            self.place(move.to_square, rest=False)
        self.wait(self.style.settle_ms + 60, self.style.settle_ms + 300)

    def _promote(self, board: chess.Board, move: chess.Move) -> None:
        src, dst = move.from_square, move.to_square
        if board.piece_at(dst):  # capturing promotion: the victim goes first
            self.lift(dst)
        manner = self.rng.randrange(4)
        if manner == 0:  # pawn to the last rank, then exchanged (4.6)
            self.lift(src)
            self.place(dst)
            self.lift(dst)
            self.wait(200, 800)
            self.place(dst)
        elif manner == 1:  # pawn removed, then the new piece placed (4.6.2)
            self.lift(src)
            self.wait(200, 900)
            self.place(dst)
        elif manner == 2:  # new piece placed first, then the pawn removed (4.6.2)
            self.records.append(Place(self.t, dst))
            self.wait(100, 500)
            self.lift(src)
            self.wait(self.style.settle_ms + 60, self.style.settle_ms + 300)
        else:  # pawn left standing on the last rank (7.5.2 if the clock is pressed)
            self.lift(src)
            self.place(dst)
        if move.promotion != chess.QUEEN and self.style.promote_record:
            self.records.append(Promote(self.t, move.promotion or chess.QUEEN))
            self.wait(50, 200)

    # -- between games ---------------------------------------------------------------------------------------

    def rearrange(self, occ_from: chess.Bitboard, occ_to: chess.Bitboard) -> None:
        """Clear the board piece by piece, then set up ``occ_to`` piece by piece (random orders)."""
        self.wait(1000, 5000)
        on_board = list(chess.scan_forward(occ_from))
        self.rng.shuffle(on_board)
        for sq in on_board:
            self.records.append(Lift(self.t, sq))
            self.wait(150, 700)
        targets = list(chess.scan_forward(occ_to))
        self.rng.shuffle(targets)
        for sq in targets:
            self.records.append(Place(self.t, sq))
            self.wait(150, 700)
        self.wait(1000, 3000)

    def snapshot(self, occ: chess.Bitboard) -> None:
        self.records.append(Snapshot(self.t, occ))
        self.wait(50, 200)


def play(board: chess.Board, moves: list[chess.Move], hands: Hands,
         clocks: list[int | None] | None = None, thinks: list[int | None] | None = None) -> chess.Board:
    """Play ``moves`` from ``board`` with ``hands``; return the final position (``board`` is not changed).

    ``clocks`` (remaining ms after each move) and ``thinks`` (ms of thought before each) come from a game's
    ``[%clk]`` comments when it has them (see :func:`game_timing`).
    """
    board = board.copy()
    for i, move in enumerate(moves):
        hands.move(board, move, clocks[i] if clocks else None, thinks[i] if thinks else None)
        board.push(move)
    return board


def game_timing(game: chess.pgn.Game) -> tuple[list[int | None], list[int | None]]:
    """Return the remaining clock (ms) after each move and the thinking time (ms) before it, from ``[%clk]``.

    Thinking time is the fall of the mover's clock since his previous move plus the increment of the
    ``TimeControl`` tag; unknown where the game has no clock comments.
    """
    increment = 0
    control = game.headers.get("TimeControl", "")
    if "+" in control:
        try:
            increment = int(float(control.split("+", 1)[1]) * 1000)
        except ValueError:
            increment = 0
    clocks: list[int | None] = []
    thinks: list[int | None] = []
    last: dict[bool, int] = {}
    node: chess.pgn.GameNode = game
    turn = game.board().turn
    while node.variations:
        node = node.variations[0]
        seconds = node.clock()
        remaining = None if seconds is None else int(seconds * 1000)
        clocks.append(remaining)
        previous = last.get(turn)
        if remaining is not None and previous is not None:
            thinks.append(max(0, previous - remaining + increment))
        else:
            thinks.append(None)
        if remaining is not None:
            last[turn] = remaining
        turn = not turn
    return clocks, thinks


def with_heartbeats(records: list[Record], occ: chess.Bitboard, every_ms: int = 1000) -> list[Record]:
    """Return the records with the firmware's heartbeat (occupancy once a second) woven in, as a board sends."""
    out: list[Record] = []
    next_beat = (records[0].t // every_ms + 1) * every_ms if records else 0
    for record in records:
        while record.t >= next_beat:
            out.append(Snapshot(next_beat, occ, "heartbeat"))
            next_beat += every_ms
        out.append(record)
        if isinstance(record, Lift):
            occ &= ~chess.BB_SQUARES[record.sq]
        elif isinstance(record, Place):
            occ |= chess.BB_SQUARES[record.sq]
        elif isinstance(record, Snapshot):
            occ = record.occ
    return out


def read_games(path: str) -> list[chess.pgn.Game]:
    """Return the games of a PGN file; a game's tags may follow the previous moves without a blank line."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    games = []
    for chunk in re.split(r"\n(?=\[Event )", text):
        game = chess.pgn.read_game(io.StringIO(chunk))
        if game is not None:
            games.append(game)
    return games


def playable_moves(game: chess.pgn.Game) -> list[chess.Move] | None:
    """Return a game's moves if a board can play them: read without errors, not empty, no null move."""
    moves = list(game.mainline_moves())
    if game.errors or not moves or chess.Move.null() in moves:
        return None
    return moves


def play_session(games: list[tuple[chess.Board, list[chess.Move]]], hands: Hands) -> None:
    """Play several games on one board: between games the board is cleared and set up again piece by piece.

    The first game's start is the board's default for later games (as ``touchmove replay --fen`` makes it for a
    start array); a game that starts elsewhere is announced with a ``setup`` record first.
    """
    occ: chess.Bitboard | None = None
    default = games[0][0].fen() if games else chess.STARTING_FEN
    for start, moves in games:
        if occ is not None:
            if start.fen() != default:
                hands.records.append(Setup(hands.t, start.fen(), start.chess960))
                hands.wait(100, 300)
            hands.rearrange(occ, start.occupied)
        final = play(start, moves, hands)
        occ = final.occupied
