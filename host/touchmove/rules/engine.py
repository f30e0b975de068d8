"""The engine: one board's games, reconstructed from its records."""

from __future__ import annotations

from dataclasses import dataclass, field

import chess
import chess.pgn

from touchmove.records import Record
from touchmove.rules.events import Event

DEFAULT_SETTLE_MS = 200


@dataclass
class GameRecord:
    """One game as played so far: its start, its moves, and how it ended."""

    number: int
    start_fen: str
    chess960: bool
    t_start: int
    moves: list[chess.Move] = field(default_factory=list)
    clocks: list[int | None] = field(default_factory=list)
    result: str = "*"
    end_reason: str | None = None

    def board(self) -> chess.Board:
        """Return the position after the moves played so far."""
        board = chess.Board(self.start_fen, chess960=self.chess960)
        for move in self.moves:
            board.push(move)
        return board

    def pgn(self, headers: dict[str, str] | None = None) -> chess.pgn.Game:
        """Return the game as a python-chess PGN game (clock comments where clock records gave times)."""
        raise NotImplementedError


@dataclass(frozen=True)
class EngineState:
    """What a publisher shows of a board: retained state."""

    game: int
    ply: int
    fen: str
    last_move: str | None
    in_sync: bool
    occupancy: int
    game_over: bool


class Engine:
    """Turns one board's records into events. See the module docs of :mod:`touchmove.rules`."""

    def __init__(self, *, fen: str | None = None, chess960: bool = False,
                 settle_ms: int = DEFAULT_SETTLE_MS) -> None:
        raise NotImplementedError

    def feed(self, record: Record) -> list[Event]:
        """Return the events caused by one record (time first advances to ``record.t``)."""
        raise NotImplementedError

    def advance(self, t: int) -> list[Event]:
        """Return the events due by device time ``t`` when no record has come (settled moves)."""
        raise NotImplementedError

    def next_deadline(self) -> int | None:
        """Return the device time at which :meth:`advance` may have events to give, or None."""
        raise NotImplementedError

    def finish(self) -> list[Event]:
        """Return the events still pending at the end of the input (everything counts as settled)."""
        raise NotImplementedError

    @property
    def games(self) -> list[GameRecord]:
        """Return every game seen so far, the current one last."""
        raise NotImplementedError

    def state(self) -> EngineState:
        """Return the board's current state for publishing."""
        raise NotImplementedError
