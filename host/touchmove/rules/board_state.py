"""One board's engine state: a plain object of fields, the views of them the readings see, their copy for a
hypothesis, and every change of :class:`~touchmove.rules.phases.Phase` and :class:`~touchmove.rules.phases.Sync`
(its transitions).

:class:`~touchmove.rules.engine.Engine` holds one :class:`BoardState` and gives it to its collaborators (the ply
writing, the clock presses, the promotion pieces, the unseen operations); what they decide goes through the two
transition methods here, ``enter`` and ``tell``: every change in the diagrams of docs/engine-internals.md is a call
of one of them. A :class:`BoardState` is the :class:`~touchmove.rules.readings.BoardView` the readings are given;
:mod:`touchmove.rules.unseen_play` sees the engine (an ``EngineInterface``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import chess

from touchmove.records import Record, Snapshot
from touchmove.rules.chatter import DEFAULT_CHATTER_MS, ChatterFilter
from touchmove.rules.events import ALERT_ARTICLES, Alert, AlertCode, Event, GameResumed, GameStart
from touchmove.rules.footprints import Position
from touchmove.rules.game_line import Declared, GameLine
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.identity import PieceChange, PieceWatch
from touchmove.rules.obligations import Touches
from touchmove.rules.outcome import GameEnding
from touchmove.rules.pending import InterruptedMove, PendingMove
from touchmove.rules.phases import (
    EXCUSED,
    LOST,
    MISMATCH,
    NEW,
    OUT_OF_SYNC,
    OVER,
    PLAYING,
    UNDISPUTED,
    Phase,
    Sync,
)
from touchmove.rules.ply_evidence import PlyEvidence
from touchmove.rules.readings import mismatch_excused
from touchmove.rules.unseen_play import Role, UnseenPlay

__all__ = [
    "COPIED_FIELDS", "DEFAULT_MISMATCH_MS", "DEFAULT_SETTLE_MS", "SHARED_FIELDS", "START_OCCUPANCY", "STATE_FIELDS",
    "BoardState", "EngineState",
]

DEFAULT_SETTLE_MS = 200
#: How long the board must rest in a state with no legal continuation before ``board_mismatch``.
DEFAULT_MISMATCH_MS = 1000
START_OCCUPANCY = chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8

#: The fields of an engine's state whose values are never changed in place (numbers, strings, enums, tuples of
#: them, and the game position, a :class:`~touchmove.rules.footprints.Position` that is replaced, never changed):
#: a fork shares them, as python-chess's ``Board.copy`` shares its bitboards.
SHARED_FIELDS = (
    "settle_ms", "mismatch_ms", "first_fen", "chess960", "default_fen", "occ", "phase", "t", "received",
    "changed_at", "setup", "sync", "position", "exchange_sq", "chosen_piece", "has_clock", "judge_at_rest",
    "reports_changes",
)
#: The fields changed in place (the chatter filter's held changes, the games, the evidence of the last ply and of
#: this one, the pending move, the game line): a fork gets copies of its own, deep, with one memo (the last game
#: and the line's record stay one object), the positions in them shared.
COPIED_FIELDS = ("chatter", "games", "previous", "evidence", "pending", "line", "pieces")
#: Every field of an engine's state: what :meth:`BoardState.fork` copies or shares and :meth:`BoardState.adopt`
#: takes over (besides its unseen play, ``unseen``, which a fork gets new).
STATE_FIELDS = SHARED_FIELDS + COPIED_FIELDS


@dataclass(frozen=True)
class EngineState:
    """What a publisher shows of a board (retained state)."""

    game: int
    ply: int
    fen: str
    last_move: str | None
    in_sync: bool
    occupancy: int
    game_over: bool


class BoardState:
    """One board's engine state (see the module documentation); ``fen`` and ``chess960`` give the first game's
    start (standard by default). Its fields are the engine's state, read and written by the engine and its
    collaborators; the fields ``position``, ``line``, ``phase``, ``sync``, ``previous``, ``evidence``,
    ``has_clock`` and ``received`` are views of a :class:`~touchmove.rules.readings.BoardView` as they are."""

    def __init__(
        self,
        *,
        fen: str | None = None,
        chess960: bool = False,
        settle_ms: int = DEFAULT_SETTLE_MS,
        chatter_ms: int = DEFAULT_CHATTER_MS,
        mismatch_ms: int = DEFAULT_MISMATCH_MS,
    ) -> None:
        start = chess.Board(fen or chess.STARTING_FEN, chess960=chess960)
        self.settle_ms = settle_ms
        self.mismatch_ms = max(mismatch_ms, settle_ms)
        self.first_fen = start.fen()
        self.chess960 = chess960
        # Later games reuse the given start when it is a start array (Chess960 included), else the standard one.
        self.default_fen = self.first_fen if start.occupied == START_OCCUPANCY else chess.STARTING_FEN
        self.chatter = ChatterFilter(chatter_ms)
        self.games: list[GameRecord] = []
        self.occ: chess.Bitboard = start.occupied
        self.phase = NEW
        self.t = 0
        self.received = 0  # the device time of the last record fed (advance moves only _t)
        self.changed_at = 0
        self.setup: tuple[str, bool] | None = None
        self.sync = UNDISPUTED
        self.position: Position = Position(start)
        self.previous: tuple[Position, PlyEvidence] | None = None
        self.evidence = PlyEvidence()
        self.pending = PendingMove()
        self.exchange_sq: chess.Square | None = None  # the last move's promotion square
        self.chosen_piece: chess.PieceType | None = None  # a promote record that came before its promotion
        self.has_clock = False  # the board has clock buttons: presses tell whose clock runs
        self.judge_at_rest = False  # a change came that the board has not yet been judged on at rest
        self.line = GameLine(start.occupied)
        self.reports_changes = False  # the board sends lifts and places (not only snapshots)
        self.pieces = PieceWatch()  # the pieces a board that names them said it holds (empty on other boards)
        self.unseen = UnseenPlay()  # plies not seen made: lost changes, hypotheses, resync, declared results



    @property
    def occupancy(self) -> chess.Bitboard:
        """The occupancy the board shows (the chatter filter's held changes not included)."""
        return self.occ

    @property
    def pieces_shown(self) -> dict[chess.Square, str] | None:
        """The board's whole placement when it names its pieces (DGT, ChessLink, Chessnut), else None."""
        return self.pieces.placement(self.occ)

    def pieces_placed_at(self) -> dict[chess.Square, int]:
        """When the board put down each piece it names (host ms; a snapshot's pieces: long before)."""
        return self.pieces.since

    def pieces_changes(self) -> Sequence[PieceChange]:
        """The last lifts and placements of a board that names its pieces, oldest first (none on other boards)."""
        return self.pieces.changes


    @property
    def game(self) -> GameRecord | None:
        """The current game, or None before the first."""
        return self.games[-1] if self.games else None

    @property
    def current_game(self) -> GameRecord:
        """The current game (there is one)."""
        return self.games[-1]


    @property
    def plies(self) -> int:
        """How many plies the current game has (0 before the first game)."""
        return len(self.games[-1].moves) if self.games else 0

    @property
    def now(self) -> int:
        """The device time reached (by a record or by :meth:`advance`)."""
        return self.t

    # the readings' view (readings.BoardView) besides the above and the fields

    @property
    def interrupted(self) -> InterruptedMove | None:
        """A matched move interrupted by another change before its settle time, or None."""
        return self.pending.interrupted

    @property
    def exchange_square(self) -> chess.Square | None:
        """The last move's promotion square (its pawn may be taken off for the new piece), or None."""
        return self.exchange_sq

    @property
    def lost_unsearched(self) -> bool:
        """Whether changes were lost and the board shows what was not searched yet."""
        return self.unseen.still_blind(self.occ)

    def fork(self) -> Self:
        """Return a copy of this state that follows one hypothesis (with unseen play of its own, as a hypothesis).

        The fields of :data:`SHARED_FIELDS` are shared (never changed in place); those of :data:`COPIED_FIELDS` are
        copied deeply with one memo, which holds the game position and the one before it from the start: what
        the copies refer to of them is shared too.
        """
        child: Self = type(self).__new__(type(self))
        for name in SHARED_FIELDS:
            setattr(child, name, getattr(self, name))
        memo: dict[int, object] = {id(self.position): self.position}
        if self.previous is not None:
            memo[id(self.previous[0])] = self.previous[0]
        for name in COPIED_FIELDS:
            setattr(child, name, copy.deepcopy(getattr(self, name), memo))
        child.unseen = UnseenPlay(Role.HYPOTHESIS)
        return child

    def adopt(self, line: Self) -> None:
        """Go on as ``line``, a fork the board followed: its fields of :data:`STATE_FIELDS` and its unseen play,
        now the board's own."""
        for name in STATE_FIELDS:
            setattr(self, name, getattr(line, name))
        self.unseen = line.unseen
        self.unseen.role = Role.BOARD

    def follow_board(self, line: Self, t: int) -> None:
        """While hypotheses are followed: show the occupancy of ``line`` (one of them) and time ``t``."""
        self.occ, self.t = line.occ, max(self.t, t)

    def rule_out(self) -> None:
        """This engine follows a hypothesis the board contradicts: it is out of sync (and dropped)."""
        self.tell(LOST)

    def mark_lost(self) -> None:
        """Changes were lost and no plies explain the board yet: nothing is read as a move until they do."""
        self.tell(LOST)
        self.pending.match = None

    def read_moves(self) -> None:
        """Read moves again (many squares off after lost changes are plies lost, not the board cleared)."""
        self.enter(PLAYING)

    def end_declared(self, result: str, reason: str, declared: Declared) -> None:
        """End the current game with a result declared by a record (not seen on the board)."""
        game = self.games[-1]
        game.result, game.end_reason = result, reason
        self.line.declared = declared
        self.enter(OVER)
        self.pending.clear()
        if declared is Declared.BOARD_SHOWN:
            self.evidence.touches = Touches()  # the pieces lifted to show the result were no play

    @property
    def game_number(self) -> int:
        return self.games[-1].number if self.games else 0

    @property
    def ply_number(self) -> int:
        """The ply being played now (1 for the first move of a game)."""
        return len(self.games[-1].moves) + 1 if self.games else 1

    def alert(self, t: int, code: AlertCode, article: str, ply: int, detail: dict[str, object]) -> Alert:
        assert article in ALERT_ARTICLES[code]
        return Alert(self.game_number, t, code, ply, article, dict(detail))

    def start_first(self, record: Record, t: int) -> list[Event]:
        if isinstance(record, Snapshot) and record.occ != self.position.occ:
            # The board is not (yet) in the start position: wait for it as for a set-up.
            self.occ = record.occ
            self.enter(OVER)
            self.setup = (self.first_fen, self.chess960)
            return []
        return self.begin_game(t, self.first_fen, self.chess960)

    def begin_game(self, t: int, fen: str, chess960: bool) -> list[Event]:
        number = len(self.games) + 1
        self.games.append(GameRecord(number, fen, chess960, t))
        board = chess.Board(fen, chess960=chess960)
        self.start_ply(Position(board), None)
        self.enter(PLAYING)
        self.tell(UNDISPUTED)
        self.judge_at_rest = False
        self.line = GameLine(board.occupied, self.games[-1])
        self.line.repetitions.add(board)
        self.setup = None
        return [GameStart(number, t, fen, chess960)]

    def try_new_game(self, t: int) -> list[Event]:
        """Start the next game if the board shows its start (a pending setup, or the standard array)."""
        if self.setup is not None:
            fen, chess960 = self.setup
            if self.occ == chess.Board(fen, chess960=chess960).occupied:
                return self.begin_game(t, fen, chess960)
            return []
        if self.occ != START_OCCUPANCY or self.occ == self.position.occ:
            return []
        game = self.games[-1] if self.games else None
        if self.phase is not PLAYING or game is None or len(game.moves) > 2:
            return self.begin_game(t, self.default_fen, self.chess960 and self.default_fen != chess.STARTING_FEN)
        return []

    def start_ply(self, position: Position, previous: tuple[Position, PlyEvidence] | None) -> None:
        """Play on from ``position``: nothing lifted, nothing matched; ``previous`` is what an amendment re-reads."""
        self.position = position
        self.previous = previous
        self.evidence = PlyEvidence()
        self.pending.clear()

    def mismatch_alert(self, t: int, *, force: bool) -> list[Event]:
        """Return ``board_mismatch`` (none when the board at rest shows no mismatch and ``force`` is not set)."""
        if self.phase is OVER or (not force and mismatch_excused(self)):
            self.tell(EXCUSED)
            return []
        self.tell(MISMATCH)
        extra = self.occ & ~self.position.occ
        missing = self.position.occ & ~self.occ
        return [self.alert(t, "board_mismatch", "7.4", self.ply_number, {
            "extra": [chess.square_name(sq) for sq in chess.scan_forward(extra)],
            "missing": [chess.square_name(sq) for sq in chess.scan_forward(missing)],
        })]

    def restored(self, t: int, how: str) -> list[Event]:
        self.tell(UNDISPUTED)
        self.unseen.end_lost()
        return [self.alert(t, "board_restored", "7.4", self.ply_number, {"by": how})]

    def contradicted(self) -> bool:
        """Return whether the board, at rest, shows what this game cannot go on to (a hypothesis ruled out)."""
        if self.unseen.hypotheses is not None:
            return False
        if self.sync in OUT_OF_SYNC:
            return True
        if self.phase is not PLAYING or self.judge_at_rest or self.pending.match is not None:
            return False
        occ = self.occ
        if occ == self.position.occ:
            # the squares fit; on a board that names its pieces, they may not (cxd5 Nxd5 Nxd5 Bxd5 against cxd5
            # Bxd5 Nxd5 Nxd5: a bishop or a knight on d5)
            return bool(self.pieces.letters) and self.pieces.contradicts(self.position.board,
                                                                            self.t - self.settle_ms)
        if self.position.continuable(occ):
            return False
        interrupted = self.pending.interrupted
        return not (interrupted is not None and interrupted.after(self.position).continuable(occ))

    def resume(self, t: int) -> list[Event]:
        """The game end announced is withdrawn: the board shows play going on."""
        game = self.games[-1]
        if game.result == "*" and self.phase is not OVER:
            return []
        game.result, game.end_reason = "*", None
        self.enter(PLAYING)
        return [GameResumed(game.number, t, len(game.moves) + 1)]

    # ----------------------------------------------------------------------------------------------------------
    # transitions: every change of the phase and of what the arbiter was told

    def enter(self, phase: Phase) -> None:
        """The board is now in ``phase`` of its games (the members of :class:`~touchmove.rules.phases.Phase` say
        when; docs/engine-internals.md lists who calls this for which)."""
        self.phase = phase

    def tell(self, sync: Sync) -> None:
        """The arbiter is now told ``sync`` about the board (:class:`~touchmove.rules.phases.Sync`)."""
        self.sync = sync

    def game_ended(self, ending: GameEnding) -> None:
        """The board shows the current game ended (its result seen, not declared)."""
        game = self.games[-1]
        game.result, game.end_reason = ending.result, ending.reason
        self.line.declared = None
        self.enter(OVER)

