"""A model of human hands at an occupancy board: games turned into timed lift/place records.

Used by the demo (the simulated board's timeline), the property tests and the benchmarks. Hands vary: captures
victim first or mover first, all en passant orders, castling king first, two-handed or rook first, the four
promotion manners of FIDE 4.6, slides across squares, bounces and sensor chatter, hesitation with a piece in the
air, and clock presses. Harder habits (off unless the style asks, see ``HARDER_HANDS`` and docs/hands.md): the
player not to move straightening his own pieces, a sleeve knocking a neighbouring piece off, castling slid square
by square, bullet replies 60-120 ms after the last change, victims pushed aside before the capturing piece
lands, and the piece just moved stood aside for a moment by the hand that then captures it. Everything is drawn
from the ``random.Random`` passed in, so a seed reproduces a timeline (and a style with
the harder habits off gives the very timeline it gave before they existed).
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
    #: While the other player thinks, the player not to move lifts one of his own pieces and puts it back.
    idle_adjust: float = 0.0
    #: The mover's sleeve knocks a piece next to the landing square off its square (as the hand comes in or
    #: leaves); it falls off the board or onto an empty neighbouring square and is put back before the press.
    sleeve: float = 0.0
    #: Castling: the king and the rook are slid along the rank, sensed on each empty square they cross.
    castle_slide: float = 0.0
    #: Bullet: the reply's first change comes 60-120 ms after the last change of the move it answers (the
    #: clock pressed meanwhile): with this chance for a recapture on the square just played to ...
    bullet_recapture: float = 0.0
    #: ... and with this chance for any other reply.
    bullet: float = 0.0
    #: A capture: the capturing piece pushes the victim aside onto an empty neighbouring square, lands, and the
    #: victim is then taken off the board.
    push_aside: float = 0.0
    #: A capture of the piece just moved (by a move that captured nothing): the capturing player first lifts it and
    #: stands it for a moment (:data:`STAND_ASIDE_MS`) on an empty neighbouring square it could have reached (often
    #: one it slid across), takes it off, and his own piece lands on its square 0.4-1.2 s later; the lift comes a
    #: thinking time after the move, or 70-120 ms after it landed (:data:`STAND_ASIDE_QUICK`), before it settled.
    stand_aside: float = 0.0
    #: How a piece is stood aside (None: as :attr:`stand_aside` says); the combinations of issue 35, each one the
    #: board first read another way, that only the capture landing tells apart (:data:`STOOD_ASIDE_COMBINATIONS`).
    stand_aside_after: str | None = None


#: The combinations of a piece stood aside before its capture (:attr:`Style.stand_aside_after`):
#: ``fast``: the piece just moved rests about 100 ms on its square (not settled), is lifted, stood about 120 ms on a
#: neighbouring square and taken off; the capturing piece lands about 0.7 s later;
#: ``slid``: the piece just moved slid across the square next to its own (sensed there), and is stood on it;
#: ``touched``: between the move and the stand aside, the player who moved lifts another of his pieces and puts it
#: back (Rd8-d2; g8 lifted and put back; the rook stood on d3, taken off; Rd1xd2);
#: ``hesitant``: the capturing player first lifts the piece he will capture with and puts it back (Qg8-d8+; Ke7
#: lifted and put back; the queen stood on c8, taken off; Kxd8).
STOOD_ASIDE_COMBINATIONS = ("fast", "slid", "touched", "hesitant")
#: ``fast``: how long (ms) the piece just moved rests before it is lifted, stands aside, and the capturing piece
#: lands after it was taken off.
FAST_ASIDE_REST_MS = (90, 110)
FAST_ASIDE_STAND_MS = (110, 130)
FAST_ASIDE_LANDING_MS = (650, 750)


#: The reply of a bullet player comes this long (ms) after the last change of the move it answers.
BULLET_REPLY_MS = (60, 120)
#: A victim stood aside rests this long (ms) on its neighbouring square before it is taken off ...
STAND_ASIDE_MS = (120, 400)
#: ... and the capturing piece lands on its square this long (ms) after that.
STAND_ASIDE_LANDING_MS = (400, 1200)
#: The chance that the victim is lifted before its move settled, and how long (ms) after it landed.
STAND_ASIDE_QUICK = 0.3
STAND_ASIDE_QUICK_MS = (70, 120)


#: The harder hands, one new habit each (over today's default hands), and all of them at once: what the tests
#: and ``bench/hand_styles.py`` play every shared game with.
HARDER_HANDS: dict[str, Style] = {
    "idle adjust": Style(idle_adjust=0.5),
    "idle adjust, no clocks": Style(idle_adjust=0.5, clock=False),
    "sleeve": Style(sleeve=0.3),
    "sleeve, no clocks": Style(sleeve=0.3, clock=False),
    "castling slid": Style(castle_slide=1.0),
    "bullet replies": Style(bullet_recapture=0.8, bullet=0.2, think_ms=(100, 600)),
    "bullet replies, no clocks": Style(bullet_recapture=0.8, bullet=0.2, think_ms=(100, 600), clock=False),
    "victim pushed aside": Style(push_aside=0.7),
    "victim stood aside": Style(stand_aside=0.8),
    "victim stood aside, no clocks": Style(stand_aside=0.8, clock=False),
    **{f"stood aside {how}{suffix}": Style(stand_aside=0.8, stand_aside_after=how, clock=suffix == "")
       for how in STOOD_ASIDE_COMBINATIONS for suffix in ("", ", no clocks")},
    "all at once": Style(idle_adjust=0.3, sleeve=0.15, castle_slide=0.7, bullet_recapture=0.6, bullet=0.1,
                         push_aside=0.4, overlap=0.3, adjust=0.2, jadoube=0.1),
}


#: The four manners of promotion :meth:`Hands._promote` plays (4.6), by name.
PROMOTION_MANNERS = ("promotion: pawn exchanged on the last rank", "promotion: pawn off, then the new piece",
                     "promotion: new piece first, then the pawn off", "promotion: pawn left on the last rank")
#: The habits :attr:`Hands.habits` names.
HABITS = frozenset({
    "slid across squares", "sleeve knock", "knocked onto a square", "slid onto its square", "victim pushed aside",
    "victim stood aside", "j'adoube before the move", "adjusted after the move", "bullet recapture",
    "bullet reply", "adjustment out of turn", "castling slid", "castling slid, rook first",
    "castling with two hands", "castling rook first", "en passant", *PROMOTION_MANNERS})


class Hands:
    """Writes records for moves played on a board, keeping the device time."""

    def __init__(self, rng: random.Random, style: Style | None = None, t: int = 0) -> None:
        self.rng = rng
        self.style = style or Style()
        self.t = t
        self.records: list[Record] = []
        self._due: Clock | None = None  # the last mover's clock press, written once time passes it
        self._last_change = t  # device time of the last lift or place
        self._last_record = t  # device time of the last record written
        #: The move after the one being played, if known (:func:`play` tells): a piece slid across the square it
        #: will be stood on (``stand_aside_after="slid"``) is slid so for that capture.
        self.next_move: chess.Move | None = None
        #: The habits the last :meth:`move` was played with, by name (``bullet reply``, ``sleeve knock`` ...): what
        #: the benchmark names for a ply a board misread (:data:`HABITS`). Noting them draws nothing from the rng.
        self.habits: list[str] = []
        #: the placements of knocked pieces (by the record's id) and the square each was knocked from: a board that
        #: names its pieces names the knocked piece there (:func:`touchmove.sim.pieces.piece_timeline`)
        self.fallen: dict[int, chess.Square] = {}

    # -- primitives ------------------------------------------------------------------------------------------

    def emit(self, record: Record) -> None:
        """Write one record (a clock press still due comes first once the record's time has passed it)."""
        due = self._due
        if due is not None and due.t <= record.t:
            self.records.append(due)
            self._due = None
        self.records.append(record)
        self._last_record = record.t
        if isinstance(record, Lift | Place):
            self._last_change = record.t

    def flush(self) -> None:
        """Write the clock press still due (the end of a recording)."""
        if self._due is not None:
            self.records.append(self._due)
            self._last_record = self._due.t
            self.t = max(self.t, self._due.t)
            self._due = None

    def habit(self, name: str) -> None:
        """Note that the move being played uses the habit ``name`` (one of :data:`HABITS`)."""
        assert name in HABITS, name
        self.habits.append(name)

    def chance(self, p: float) -> bool:
        """Return True with probability ``p`` (no draw when ``p`` is 0: the other styles' timelines stay)."""
        return p > 0 and self.rng.random() < p

    def wait(self, lo: int, hi: int) -> None:
        self.t += self.rng.randint(lo, hi)

    def lift(self, sq: chess.Square) -> None:
        if self.rng.random() < self.style.chatter:  # contacts bounce as the magnet leaves
            self.emit(Lift(self.t, sq))
            self.t += self.rng.randint(1, 4)
            self.emit(Place(self.t, sq))
            self.t += self.rng.randint(1, 4)
        self.emit(Lift(self.t, sq))
        self.wait(40, 160)

    def place(self, sq: chess.Square, *, rest: bool = True) -> None:
        self.emit(Place(self.t, sq))
        if self.rng.random() < self.style.bounce:  # the piece bounces on landing
            self.t += self.rng.randint(1, 6)
            self.emit(Lift(self.t, sq))
            self.t += self.rng.randint(1, 6)
            self.emit(Place(self.t, sq))
        if rest:
            self.rest()
        else:
            self.wait(40, 120)

    def rest(self) -> None:
        """Let the released piece rest (a little over the settle time unless the style says otherwise)."""
        self.wait(*(self.style.release_ms or (self.style.settle_ms + 60, self.style.settle_ms + 400)))

    def carry(self, board: chess.Board, src: chess.Square, dst: chess.Square, *, knock: bool = False) -> None:
        """Move a lifted piece to ``dst``, maybe sliding over empty squares on the way (brief rests).

        With ``knock`` the sleeve knocks a piece next to ``dst`` off its square as the hand comes in or leaves.
        """
        if self.rng.random() < self.style.hesitate:
            self.wait(300, 1500)
        between = chess.SquareSet(chess.between(src, dst))
        if between and self.rng.random() < self.style.slide:
            self.habit("slid across squares")
            dwell_hi = max(30, self.style.settle_ms // 2)
            for sq in between:
                if not board.piece_at(sq) and self.rng.random() < 0.7:
                    self.emit(Place(self.t, sq))
                    self.t += self.rng.randint(15, dwell_hi)
                    self.emit(Lift(self.t, sq))
                    self.t += self.rng.randint(5, 30)
        if not knock:
            self.place(dst)
            return
        occ = (board.occupied & ~chess.BB_SQUARES[src]) | chess.BB_SQUARES[dst]
        if self.rng.random() < 0.5:  # as the hand comes in
            knocked = self.knock(occ, src, dst)
            self.place(dst, rest=False)
        else:  # as the hand leaves
            self.place(dst, rest=False)
            knocked = self.knock(occ, src, dst)
        self.put_back(knocked)
        self.rest()

    def knock(self, occ: chess.Bitboard, src: chess.Square, dst: chess.Square
              ) -> tuple[chess.Square, chess.Square | None] | None:
        """Knock a piece next to ``dst`` off its square; return (its square, where it fell) or None.

        It falls off the board (None) or onto an empty neighbouring square, sensed there.
        """
        near = chess.BB_KING_ATTACKS[dst] & occ & ~chess.BB_SQUARES[src]
        if not near:
            return None
        self.habit("sleeve knock")
        sq = self.rng.choice(list(chess.scan_forward(near)))
        free = chess.BB_KING_ATTACKS[sq] & ~occ & ~chess.BB_SQUARES[src]
        fell: chess.Square | None = None
        self.emit(Lift(self.t, sq))
        if free and self.rng.random() < 0.4:
            fell = self.rng.choice(list(chess.scan_forward(free)))
            self.habit("knocked onto a square")
            self.t += self.rng.randint(2, 30)
            placed = Place(self.t, fell)
            self.fallen[id(placed)] = sq
            self.emit(placed)
        self.wait(20, 150)
        return sq, fell

    def put_back(self, knocked: tuple[chess.Square, chess.Square | None] | None) -> None:
        """Put a knocked piece back on its square (picked up from where it fell first)."""
        if knocked is None:
            return
        sq, fell = knocked
        self.wait(300, 1200)
        if fell is not None:
            self.lift(fell)
        self.place(sq, rest=False)

    def slide_onto(self, src: chess.Square, dst: chess.Square) -> None:
        """Slide a piece from ``src`` onto ``dst``: sensed on ``dst`` before ``src`` empties (the sensors overlap)."""
        self.habit("slid onto its square")
        self.emit(Place(self.t, dst))
        self.t += self.rng.randint(5, 120)
        self.emit(Lift(self.t, src))
        self.rest()

    def slide_along(self, occ: chess.Bitboard, src: chess.Square, dst: chess.Square, *, rest: bool) -> None:
        """Slide a piece from ``src`` to ``dst`` along the rank, sensed on each empty square it crosses.

        Going from one square to the next the piece is sensed on both for a moment, or on neither.
        """
        step = 1 if dst > src else -1
        path = [sq for sq in range(src + step, dst, step) if not occ & chess.BB_SQUARES[sq]] + [dst]
        here = src
        for sq in path:
            if self.rng.random() < 0.5:
                self.emit(Place(self.t, sq))
                self.t += self.rng.randint(5, 40)
                self.emit(Lift(self.t, here))
            else:
                self.emit(Lift(self.t, here))
                self.t += self.rng.randint(5, 40)
                self.emit(Place(self.t, sq))
            here = sq
            if sq != dst:
                self.wait(40, 150)
        if rest:
            self.rest()
        else:
            self.wait(40, 120)

    def push_aside(self, board: chess.Board, move: chess.Move) -> bool:
        """Capture by pushing the victim onto an empty neighbouring square first, then taking it off.

        Return False (nothing written) when the victim has no empty square to go to.
        """
        src, dst = move.from_square, move.to_square
        free = chess.BB_KING_ATTACKS[dst] & ~board.occupied & ~chess.BB_SQUARES[src]
        if not free:
            return False
        self.habit("victim pushed aside")
        aside = self.rng.choice(list(chess.scan_forward(free)))
        self.lift(src)
        if self.rng.random() < self.style.hesitate:
            self.wait(300, 1500)
        if self.rng.random() < 0.5:  # sensed on both squares for a moment, or on neither
            self.emit(Place(self.t, aside))
            self.t += self.rng.randint(5, 40)
            self.emit(Lift(self.t, dst))
        else:
            self.emit(Lift(self.t, dst))
            self.t += self.rng.randint(5, 40)
            self.emit(Place(self.t, aside))
        self.wait(30, 150)
        self.place(dst, rest=False)
        self.wait(100, 600)
        self.lift(aside)
        self.rest()
        return True

    def stand_aside_square(self, board: chess.Board, move: chess.Move) -> chess.Square | None:
        """Return where the capturing player stands the piece just moved before taking it off, or None (``move``
        is no plain capture of it, the move before captured, or it had no empty neighbouring square to reach)."""
        if not board.move_stack or board.is_castling(move) or board.is_en_passant(move) or move.promotion:
            return None
        last = board.peek()
        if last.to_square != move.to_square or last.promotion is not None:
            return None
        before = board.copy(stack=1)
        before.pop()
        if before.is_capture(last) or before.is_castling(last):
            return None
        reachable = [sq for sq in chess.scan_forward(chess.BB_KING_ATTACKS[last.to_square] & ~board.occupied)
                     if sq != move.from_square and before.is_legal(chess.Move(last.from_square, sq))]
        if not reachable:
            return None
        crossed = [sq for sq in reachable if chess.BB_SQUARES[sq] & chess.between(last.from_square, last.to_square)]
        if crossed and self.style.stand_aside_after == "slid":
            return self.rng.choice(crossed)     # the square it was slid across
        return self.rng.choice(crossed if crossed and self.rng.random() < 0.6 else reachable)

    def capture_stood_aside(self, board: chess.Board, move: chess.Move, aside: chess.Square,
                            think_ms: int | None, remaining_ms: int | None = None) -> None:
        """Capture the piece just moved: lift it, stand it on ``aside`` for a moment, take it off, then land the
        capturing piece on its square (see :attr:`Style.stand_aside`)."""
        rng, style = self.rng, self.style
        how = style.stand_aside_after
        self.habit("victim stood aside")
        fast = how == "fast"
        if fast or rng.random() < STAND_ASIDE_QUICK:  # before the move settled (the last mover presses meanwhile)
            if self._due is not None:
                press = max(self._last_change + rng.randint(20, 150), self._last_record)
                self._due = Clock(press, self._due.side, self._due.remaining)
            rest = FAST_ASIDE_REST_MS if fast else STAND_ASIDE_QUICK_MS
            self.t = max(self._last_change + rng.randint(*rest), self._last_record)
        else:
            if think_ms is None:
                think_ms = rng.randint(*style.think_ms)
            self.think(board, think_ms)
        src, dst = move.from_square, move.to_square
        if how == "touched":  # the player who moved lifts another of his pieces and puts it back
            others = [sq for sq in chess.scan_forward(board.occupied_co[not board.turn]) if sq != dst]
            if others:
                self.touch_and_put_back(rng.choice(others))
        elif how == "hesitant":  # the capturing player lifts his capturing piece and puts it back first
            self.touch_and_put_back(src)
        self.emit(Lift(self.t, dst))
        self.t += rng.randint(30, 120)
        self.emit(Place(self.t, aside))
        self.t += rng.randint(*(FAST_ASIDE_STAND_MS if fast else STAND_ASIDE_MS))
        self.emit(Lift(self.t, aside))
        landing = self.t + rng.randint(*(FAST_ASIDE_LANDING_MS if fast else STAND_ASIDE_LANDING_MS))
        self.t += rng.randint(100, 300)
        self.lift(src)
        self.t = max(self.t, landing)
        self.place(dst)
        self.flush()  # the previous press, if it came after the lift
        if style.clock:
            self.wait(20, 150)
            self._due = Clock(self.t, board.turn, remaining_ms)

    def touch_and_put_back(self, sq: chess.Square) -> None:
        """Lift the piece on ``sq`` and put it back (a touch, or an adjustment)."""
        self.lift(sq)
        self.wait(100, 300)
        self.place(sq, rest=False)
        self.wait(200, 500)

    def slid_for_stand_aside(self, board: chess.Board, move: chess.Move) -> bool:
        """With ``stand_aside_after="slid"``: if the next move captures ``move``'s piece on its square and ``move``
        crosses an empty square next to it, slide the piece there across every square on the way (sensed on
        each) and return True; else write nothing and return False."""
        after = self.next_move
        if (self.style.stand_aside_after != "slid" or after is None or after.to_square != move.to_square
                or board.is_capture(move) or board.is_castling(move) or move.promotion is not None):
            return False
        src, dst = move.from_square, move.to_square
        path = sorted(chess.scan_forward(chess.between(src, dst)), key=lambda sq: chess.square_distance(src, sq))
        if not path or chess.square_distance(path[-1], dst) != 1 or board.occupied & chess.BB_SQUARES[path[-1]]:
            return False
        self.lift(src)
        for sq in path:
            self.emit(Place(self.t, sq))
            self.t += self.rng.randint(20, 60)
            self.emit(Lift(self.t, sq))
            self.t += self.rng.randint(5, 30)
        self.place(dst)
        return True

    # -- moves -----------------------------------------------------------------------------------------------

    def move(self, board: chess.Board, move: chess.Move, remaining_ms: int | None = None,
             think_ms: int | None = None) -> None:
        """Play one legal move on the board (the board is not changed here).

        ``think_ms`` is how long the player thinks first (drawn from the style when None); ``remaining_ms`` is
        what the clock shows after the press.
        """
        rng = self.rng
        style = self.style
        self.habits = []
        aside = self.stand_aside_square(board, move) if self.chance(style.stand_aside) else None
        if aside is not None:
            self.capture_stood_aside(board, move, aside, think_ms, remaining_ms)
            return
        bullet = self.bullet_reply(board, move)
        # A piece slid onto its square is sensed there before its own square empties; a reply begun at once can
        # do so only to a neighbouring square (a longer slide is sensed on the way, or the piece is lifted).
        can_overlap = not bullet or chess.square_distance(move.from_square, move.to_square) == 1
        if not bullet:
            if think_ms is None:
                lo, hi = style.think_ms
                think_ms = rng.randint(lo, hi)
            self.think(board, think_ms)
        if rng.random() < style.jadoube:
            others = [sq for sq in chess.SquareSet(board.occupied_co[board.turn])
                      if sq != move.from_square and not board.is_castling(move)]
            if others:
                self.habit("j'adoube before the move")
                sq = rng.choice(others)
                self.lift(sq)
                self.wait(100, 600)
                self.place(sq, rest=False)
                self.wait(200, 800)
        if self.slid_for_stand_aside(board, move):
            pass
        elif board.is_castling(move):
            self._castle(board, move)
        elif move.promotion is not None:
            self._promote(board, move)
        elif board.is_en_passant(move):
            self._en_passant(board, move)
        elif board.piece_at(move.to_square):
            if self.chance(style.push_aside) and self.push_aside(board, move):
                pass
            elif rng.random() < style.victim_first:
                self.lift(move.to_square)
                self.wait(100, 600)
                if rng.random() < style.overlap and can_overlap:
                    self.slide_onto(move.from_square, move.to_square)
                else:
                    self.lift(move.from_square)
                    self.carry(board, move.from_square, move.to_square, knock=self.chance(style.sleeve))
            else:
                self.lift(move.from_square)
                self.lift(move.to_square)
                self.carry(board, move.from_square, move.to_square, knock=self.chance(style.sleeve))
        elif rng.random() < style.overlap and can_overlap:
            self.slide_onto(move.from_square, move.to_square)
        else:
            self.lift(move.from_square)
            self.carry(board, move.from_square, move.to_square, knock=self.chance(style.sleeve))
        if rng.random() < style.adjust and not board.is_castling(move):
            self.habit("adjusted after the move")
            self.lift(move.to_square)
            self.wait(20, 200)
            self.place(move.to_square, rest=False)
        self.flush()  # the previous press, if a bullet reply came before it
        if style.clock:
            self.wait(20, 150)
            self._due = Clock(self.t, board.turn, remaining_ms)

    def bullet_reply(self, board: chess.Board, move: chess.Move) -> bool:
        """Maybe start the reply 60-120 ms after the last change (the press comes meanwhile); return whether."""
        if not board.move_stack:
            return False
        last = board.move_stack[-1]
        recapture = board.is_capture(move) and move.to_square == last.to_square
        if not self.chance(self.style.bullet_recapture if recapture else self.style.bullet):
            return False
        self.habit("bullet recapture" if recapture else "bullet reply")
        if self._due is not None:  # the last mover presses as the reply begins
            press = max(self._last_change + self.rng.randint(20, 150), self._last_record)
            self._due = Clock(press, self._due.side, self._due.remaining)
        self.t = max(self._last_change + self.rng.randint(*BULLET_REPLY_MS), self._last_record)
        return True

    def think(self, board: chess.Board, think_ms: int) -> None:
        """Let ``think_ms`` pass; meanwhile the player not to move may straighten one of his own pieces."""
        end = self.t + think_ms
        if think_ms >= 1200 and self.chance(self.style.idle_adjust):
            self.habit("adjustment out of turn")
            sq = self.rng.choice(list(chess.scan_forward(board.occupied_co[not board.turn])))
            self.t += self.rng.randint(200, think_ms - 1000)
            self.lift(sq)
            self.wait(60, 400)
            self.place(sq, rest=False)
            end = max(end, self.t + 200)
        self.t = end

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
        if self.chance(self.style.castle_slide):
            self.habit("castling slid" if how < 0.8 else "castling slid, rook first")
            self._castle_sliding(board, king, rook, king_to, rook_to, how)
        elif how < 0.6:  # king first, as 4.4.1 asks
            self.lift(king)
            self.place(king_to, rest=self.rng.random() < 0.5)
            self.lift(rook)
            self.place(rook_to)
        elif how < 0.8:  # two hands at once (7.5.4, but the board cannot see hands)
            self.habit("castling with two hands")
            self.lift(king)
            self.lift(rook)
            self.place(king_to, rest=False)
            self.place(rook_to)
        else:  # rook first (4.4.2): recorded as castling with an alert
            self.habit("castling rook first")
            self.lift(rook)
            self.place(rook_to, rest=False)
            self.lift(king)
            self.place(king_to)

    def _castle_sliding(self, board: chess.Board, king: chess.Square, rook: chess.Square, king_to: chess.Square,
                        rook_to: chess.Square, how: float) -> None:
        """Castle with king and rook slid along the rank (each sensed on the empty squares it crosses)."""
        occ = board.occupied
        king_bb, rook_bb = chess.BB_SQUARES[king], chess.BB_SQUARES[rook]
        if how < 0.8:  # king first (two hands slide one after the other too)
            self.slide_along(occ, king, king_to, rest=self.rng.random() < 0.5)
            self.slide_along(occ & ~king_bb | chess.BB_SQUARES[king_to], rook, rook_to, rest=True)
        else:  # rook first
            self.slide_along(occ, rook, rook_to, rest=False)
            self.slide_along(occ & ~rook_bb | chess.BB_SQUARES[rook_to], king, king_to, rest=True)

    def _en_passant(self, board: chess.Board, move: chess.Move) -> None:
        victim = move.to_square + (-8 if board.turn == chess.WHITE else 8)
        how = self.rng.randrange(3)
        self.habit("en passant")
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
        self.habit(PROMOTION_MANNERS[manner])
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
            self.emit(Place(self.t, dst))
            self.wait(100, 500)
            self.lift(src)
            self.wait(self.style.settle_ms + 60, self.style.settle_ms + 300)
        else:  # pawn left standing on the last rank (7.5.2 if the clock is pressed)
            self.lift(src)
            self.place(dst)
        if move.promotion != chess.QUEEN and self.style.promote_record:
            self.emit(Promote(self.t, move.promotion or chess.QUEEN))
            self.wait(50, 200)

    # -- between games ---------------------------------------------------------------------------------------

    def rearrange(self, occ_from: chess.Bitboard, occ_to: chess.Bitboard) -> None:
        """Clear the board piece by piece, then set up ``occ_to`` piece by piece (random orders)."""
        self.wait(1000, 5000)
        on_board = list(chess.scan_forward(occ_from))
        self.rng.shuffle(on_board)
        for sq in on_board:
            self.emit(Lift(self.t, sq))
            self.wait(150, 700)
        targets = list(chess.scan_forward(occ_to))
        self.rng.shuffle(targets)
        for sq in targets:
            self.emit(Place(self.t, sq))
            self.wait(150, 700)
        self.wait(1000, 3000)

    def snapshot(self, occ: chess.Bitboard) -> None:
        self.emit(Snapshot(self.t, occ))
        self.wait(50, 200)


def play(board: chess.Board, moves: list[chess.Move], hands: Hands,
         clocks: list[int | None] | None = None, thinks: list[int | None] | None = None) -> chess.Board:
    """Play ``moves`` from ``board`` with ``hands``; return the final position (``board`` is not changed).

    ``clocks`` (remaining ms after each move) and ``thinks`` (ms of thought before each) come from a game's
    ``[%clk]`` comments when it has them (see :func:`game_timing`).
    """
    board = board.copy()
    for i, move in enumerate(moves):
        hands.next_move = moves[i + 1] if i + 1 < len(moves) else None
        hands.move(board, move, clocks[i] if clocks else None, thinks[i] if thinks else None)
        board.push(move)
    hands.flush()
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
        occ = occupancy_after(occ, record)
    return out


def occupancy_after(occ: chess.Bitboard, record: Record) -> chess.Bitboard:
    """Return the occupancy ``occ`` after one record (a lift, a place or a snapshot; others change nothing)."""
    if isinstance(record, Lift):
        return occ & ~chess.BB_SQUARES[record.sq]
    if isinstance(record, Place):
        return occ | chess.BB_SQUARES[record.sq]
    if isinstance(record, Snapshot):
        return record.occ
    return occ


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
                hands.emit(Setup(hands.t, start.fen(), start.chess960))
                hands.wait(100, 300)
            hands.rearrange(occ, start.occupied)
        final = play(start, moves, hands)
        occ = final.occupied
