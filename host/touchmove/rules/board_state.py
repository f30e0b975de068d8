"""One board's engine state: its fields, read-only views of them, their copy for a hypothesis, and every change of
:class:`~touchmove.rules.phases.Phase` and :class:`~touchmove.rules.phases.Sync` (its transitions).

:class:`~touchmove.rules.engine.Engine` is a :class:`BoardState` that reads records; what it decides goes through
the two transition methods here, ``_enter`` and ``_tell``: every change in the diagrams of docs/engine-internals.md
is a call of one of them. The views are what :mod:`touchmove.rules.readings` (a ``BoardView``) and
:mod:`touchmove.rules.unseen_play` (an ``EngineInterface``) see of an engine.
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
    "settle_ms", "mismatch_ms", "_first_fen", "_chess960", "_default_fen", "_occ", "_phase", "_t", "_received",
    "_changed_at", "_setup", "_sync", "_position", "_exchange_sq", "_chosen_piece", "_has_clock", "_judge_at_rest",
    "_reports_changes",
)
#: The fields changed in place (the chatter filter's held changes, the games, the evidence of the last ply and of
#: this one, the pending move, the game line): a fork gets copies of its own, deep, with one memo (the last game
#: and the line's record stay one object), the positions in them shared.
COPIED_FIELDS = ("_chatter", "_games", "_previous", "_evidence", "_pending", "_line", "_pieces")
#: Every field of an engine's state: what :meth:`BoardState.fork` copies or shares and :meth:`BoardState.adopt`
#: takes over (besides its unseen play, ``_unseen``, which a fork gets new).
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
    start (standard by default)."""

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
        self._first_fen = start.fen()
        self._chess960 = chess960
        # Later games reuse the given start when it is a start array (Chess960 included), else the standard one.
        self._default_fen = self._first_fen if start.occupied == START_OCCUPANCY else chess.STARTING_FEN
        self._chatter = ChatterFilter(chatter_ms)
        self._games: list[GameRecord] = []
        self._occ: chess.Bitboard = start.occupied
        self._phase = NEW
        self._t = 0
        self._received = 0  # the device time of the last record fed (advance moves only _t)
        self._changed_at = 0
        self._setup: tuple[str, bool] | None = None
        self._sync = UNDISPUTED
        self._position: Position = Position(start)
        self._previous: tuple[Position, PlyEvidence] | None = None
        self._evidence = PlyEvidence()
        self._pending = PendingMove()
        self._exchange_sq: chess.Square | None = None  # the last move's promotion square
        self._chosen_piece: chess.PieceType | None = None  # a promote record that came before its promotion
        self._has_clock = False  # the board has clock buttons: presses tell whose clock runs
        self._judge_at_rest = False  # a change came that the board has not yet been judged on at rest
        self._line = GameLine(start.occupied)
        self._reports_changes = False  # the board sends lifts and places (not only snapshots)
        self._pieces = PieceWatch()  # the pieces a board that names them said it holds (empty on other boards)
        self._unseen = UnseenPlay()  # plies not seen made: lost changes, hypotheses, resync, declared results

    @property
    def games(self) -> list[GameRecord]:
        """Return every game seen so far, the current one last."""
        return list(self._games)

    def state(self) -> EngineState:
        """Return the board's current state for publishing."""
        game = self._games[-1] if self._games else None
        return EngineState(
            game=game.number if game else 0,
            ply=len(game.moves) if game else 0,
            fen=self._position.fen(),
            last_move=game.moves[-1].uci() if game and game.moves else None,
            in_sync=self._sync not in OUT_OF_SYNC and self._occ == self._position.occ,
            occupancy=self._occ,
            game_over=self._phase is OVER,
        )

    @property
    def occupancy(self) -> chess.Bitboard:
        """The occupancy the board shows (the chatter filter's held changes not included)."""
        return self._occ

    @property
    def pieces_shown(self) -> dict[chess.Square, str] | None:
        """The board's whole placement when it names its pieces (DGT, ChessLink, Chessnut), else None."""
        return self._pieces.placement(self._occ)

    def pieces_placed_at(self) -> dict[chess.Square, int]:
        """When the board put down each piece it names (host ms; a snapshot's pieces: long before)."""
        return self._pieces.since

    def pieces_changes(self) -> Sequence[PieceChange]:
        """The last lifts and placements of a board that names its pieces, oldest first (none on other boards)."""
        return self._pieces.changes

    @property
    def position(self) -> Position:
        """The game position (after the last ply made)."""
        return self._position

    @property
    def game(self) -> GameRecord | None:
        """The current game, or None before the first."""
        return self._games[-1] if self._games else None

    @property
    def current_game(self) -> GameRecord:
        """The current game (there is one)."""
        return self._games[-1]

    @property
    def line(self) -> GameLine:
        """The current game's line and what is kept beside it."""
        return self._line

    @property
    def plies(self) -> int:
        """How many plies the current game has (0 before the first game)."""
        return len(self._games[-1].moves) if self._games else 0

    @property
    def now(self) -> int:
        """The device time reached (by a record or by :meth:`advance`)."""
        return self._t

    @property
    def received(self) -> int:
        """The device time of the last record fed."""
        return self._received

    @property
    def phase(self) -> Phase:
        """Where the board is in its games."""
        return self._phase

    @property
    def sync(self) -> Sync:
        """What the arbiter was told about the board and the game position."""
        return self._sync

    # the readings' view (readings.BoardView) besides the above

    @property
    def previous(self) -> tuple[Position, PlyEvidence] | None:
        """The position before the last move and its evidence (what an amendment re-reads), or None."""
        return self._previous

    @property
    def evidence(self) -> PlyEvidence:
        """What has happened on the board since the last move was made."""
        return self._evidence

    @property
    def interrupted(self) -> InterruptedMove | None:
        """A matched move interrupted by another change before its settle time, or None."""
        return self._pending.interrupted

    @property
    def exchange_square(self) -> chess.Square | None:
        """The last move's promotion square (its pawn may be taken off for the new piece), or None."""
        return self._exchange_sq

    @property
    def has_clock(self) -> bool:
        """Whether the board has clock buttons (presses tell whose clock runs)."""
        return self._has_clock

    @property
    def lost_unsearched(self) -> bool:
        """Whether changes were lost and the board shows what was not searched yet."""
        return self._unseen.still_blind(self._occ)

    def fork(self) -> Self:
        """Return a copy of this engine that follows one hypothesis (with unseen play of its own, as a hypothesis).

        The fields of :data:`SHARED_FIELDS` are shared (never changed in place); those of :data:`COPIED_FIELDS` are
        copied deeply with one memo, which holds the game position and the one before it from the start: what
        the copies refer to of them is shared too.
        """
        child: Self = type(self).__new__(type(self))
        for name in SHARED_FIELDS:
            setattr(child, name, getattr(self, name))
        memo: dict[int, object] = {id(self._position): self._position}
        if self._previous is not None:
            memo[id(self._previous[0])] = self._previous[0]
        for name in COPIED_FIELDS:
            setattr(child, name, copy.deepcopy(getattr(self, name), memo))
        child._unseen = UnseenPlay(Role.HYPOTHESIS)
        return child

    def adopt(self, line: Self) -> None:
        """Go on as ``line``, a fork the board followed: its fields of :data:`STATE_FIELDS` and its unseen play,
        now the board's own."""
        for name in STATE_FIELDS:
            setattr(self, name, getattr(line, name))
        self._unseen = line._unseen
        self._unseen.role = Role.BOARD

    def follow_board(self, line: Self, t: int) -> None:
        """While hypotheses are followed: show the occupancy of ``line`` (one of them) and time ``t``."""
        self._occ, self._t = line._occ, max(self._t, t)

    def rule_out(self) -> None:
        """This engine follows a hypothesis the board contradicts: it is out of sync (and dropped)."""
        self._tell(LOST)

    def mark_lost(self) -> None:
        """Changes were lost and no plies explain the board yet: nothing is read as a move until they do."""
        self._tell(LOST)
        self._pending.match = None

    def read_moves(self) -> None:
        """Read moves again (many squares off after lost changes are plies lost, not the board cleared)."""
        self._enter(PLAYING)

    def end_declared(self, result: str, reason: str, declared: Declared) -> None:
        """End the current game with a result declared by a record (not seen on the board)."""
        game = self._games[-1]
        game.result, game.end_reason = result, reason
        self._line.declared = declared
        self._enter(OVER)
        self._pending.clear()
        if declared is Declared.BOARD_SHOWN:
            self._evidence.touches = Touches()  # the pieces lifted to show the result were no play

    @property
    def game_number(self) -> int:
        return self._games[-1].number if self._games else 0

    @property
    def ply_number(self) -> int:
        """The ply being played now (1 for the first move of a game)."""
        return len(self._games[-1].moves) + 1 if self._games else 1

    def alert(self, t: int, code: AlertCode, article: str, ply: int, detail: dict[str, object]) -> Alert:
        assert article in ALERT_ARTICLES[code]
        return Alert(self.game_number, t, code, ply, article, dict(detail))

    def _start_first(self, record: Record, t: int) -> list[Event]:
        if isinstance(record, Snapshot) and record.occ != self._position.occ:
            # The board is not (yet) in the start position: wait for it as for a set-up.
            self._occ = record.occ
            self._enter(OVER)
            self._setup = (self._first_fen, self._chess960)
            return []
        return self._begin_game(t, self._first_fen, self._chess960)

    def _begin_game(self, t: int, fen: str, chess960: bool) -> list[Event]:
        number = len(self._games) + 1
        self._games.append(GameRecord(number, fen, chess960, t))
        board = chess.Board(fen, chess960=chess960)
        self._start_ply(Position(board), None)
        self._enter(PLAYING)
        self._tell(UNDISPUTED)
        self._judge_at_rest = False
        self._line = GameLine(board.occupied, self._games[-1])
        self._line.repetitions.add(board)
        self._setup = None
        return [GameStart(number, t, fen, chess960)]

    def _try_new_game(self, t: int) -> list[Event]:
        """Start the next game if the board shows its start (a pending setup, or the standard array)."""
        if self._setup is not None:
            fen, chess960 = self._setup
            if self._occ == chess.Board(fen, chess960=chess960).occupied:
                return self._begin_game(t, fen, chess960)
            return []
        if self._occ != START_OCCUPANCY or self._occ == self._position.occ:
            return []
        game = self._games[-1] if self._games else None
        if self._phase is not PLAYING or game is None or len(game.moves) > 2:
            return self._begin_game(t, self._default_fen, self._chess960 and self._default_fen != chess.STARTING_FEN)
        return []

    def _start_ply(self, position: Position, previous: tuple[Position, PlyEvidence] | None) -> None:
        """Play on from ``position``: nothing lifted, nothing matched; ``previous`` is what an amendment re-reads."""
        self._position = position
        self._previous = previous
        self._evidence = PlyEvidence()
        self._pending.clear()

    def _report_mismatch(self, t: int, *, force: bool) -> list[Event]:
        """Return ``board_mismatch`` for the board at rest since ``t`` (none when excused; the engine re-reads the
        last plies first)."""
        return self._mismatch_alert(t, force=force)

    def _mismatch_alert(self, t: int, *, force: bool) -> list[Event]:
        """Return ``board_mismatch`` (none when the board at rest shows no mismatch and ``force`` is not set)."""
        if self._phase is OVER or (not force and mismatch_excused(self)):
            self._tell(EXCUSED)
            return []
        self._tell(MISMATCH)
        extra = self._occ & ~self._position.occ
        missing = self._position.occ & ~self._occ
        return [self.alert(t, "board_mismatch", "7.4", self.ply_number, {
            "extra": [chess.square_name(sq) for sq in chess.scan_forward(extra)],
            "missing": [chess.square_name(sq) for sq in chess.scan_forward(missing)],
        })]

    def _restored(self, t: int, how: str) -> list[Event]:
        self._tell(UNDISPUTED)
        self._unseen.end_lost()
        return [self.alert(t, "board_restored", "7.4", self.ply_number, {"by": how})]

    def contradicted(self) -> bool:
        """Return whether the board, at rest, shows what this game cannot go on to (a hypothesis ruled out)."""
        if self._unseen.hypotheses is not None:
            return False
        if self._sync in OUT_OF_SYNC:
            return True
        if self._phase is not PLAYING or self._judge_at_rest or self._pending.match is not None:
            return False
        occ = self._occ
        if occ == self._position.occ:
            # the squares fit; on a board that names its pieces, they may not (cxd5 Nxd5 Nxd5 Bxd5 against cxd5
            # Bxd5 Nxd5 Nxd5: a bishop or a knight on d5)
            return bool(self._pieces.letters) and self._pieces.contradicts(self._position.board,
                                                                            self._t - self.settle_ms)
        if self._position.continuable(occ):
            return False
        interrupted = self._pending.interrupted
        return not (interrupted is not None and interrupted.after(self._position).continuable(occ))

    def resume(self, t: int) -> list[Event]:
        """The game end announced is withdrawn: the board shows play going on."""
        game = self._games[-1]
        if game.result == "*" and self._phase is not OVER:
            return []
        game.result, game.end_reason = "*", None
        self._enter(PLAYING)
        return [GameResumed(game.number, t, len(game.moves) + 1)]

    # ----------------------------------------------------------------------------------------------------------
    # transitions: every change of the phase and of what the arbiter was told

    def _enter(self, phase: Phase) -> None:
        """The board is now in ``phase`` of its games (the members of :class:`~touchmove.rules.phases.Phase` say
        when; docs/engine-internals.md lists who calls this for which)."""
        self._phase = phase

    def _tell(self, sync: Sync) -> None:
        """The arbiter is now told ``sync`` about the board (:class:`~touchmove.rules.phases.Sync`)."""
        self._sync = sync

    def _game_ended(self, ending: GameEnding) -> None:
        """The board shows the current game ended (its result seen, not declared)."""
        game = self._games[-1]
        game.result, game.end_reason = ending.result, ending.reason
        self._line.declared = None
        self._enter(OVER)

