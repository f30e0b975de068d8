"""A game as played on the board so far, and its PGN."""

from __future__ import annotations

from dataclasses import dataclass, field

import chess
import chess.pgn


@dataclass
class GameRecord:
    """One game: its start, its moves, the clock times known for them, and how it ended."""

    number: int
    start_fen: str
    chess960: bool
    t_start: int
    moves: list[chess.Move] = field(default_factory=list)
    clocks: list[int | None] = field(default_factory=list)
    result: str = "*"
    end_reason: str | None = None

    def board(self, plies: int | None = None) -> chess.Board:
        """Return the position after the first ``plies`` moves (all of them by default)."""
        board = chess.Board(self.start_fen, chess960=self.chess960)
        for move in self.moves[:plies]:
            board.push(move)
        return board

    def truncate(self, plies: int) -> None:
        """Keep the first ``plies`` moves only; the game is no longer over."""
        del self.moves[plies:]
        del self.clocks[plies:]
        self.result = "*"
        self.end_reason = None

    def pgn(self, headers: dict[str, str] | None = None) -> chess.pgn.Game:
        """Return the game as a python-chess game, with ``[%clk]`` comments where clock times are known."""
        board = chess.Board(self.start_fen, chess960=self.chess960)
        game = chess.pgn.Game.from_board(board)
        for key, value in (headers or {}).items():
            game.headers[key] = value
        game.headers["Result"] = self.result
        if self.end_reason:
            game.headers["Termination"] = self.end_reason
        node: chess.pgn.GameNode = game
        for move, clock in zip(self.moves, self.clocks, strict=True):
            node = node.add_variation(move)
            if clock is not None:
                node.set_clock(clock / 1000)
        return game

    def pgn_text(self, headers: dict[str, str] | None = None) -> str:
        """Return the game's PGN text."""
        return str(self.pgn(headers))
