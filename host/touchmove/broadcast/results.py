"""Game results: their spelling, where they come from, and the DGT "kings in the centre" convention.

Sources, strongest first:

1. ``arbiter``: a result recorded from the dashboard (or the ``results`` of the round in the TOML file);
2. ``board``: the board's own ``game_end`` event (mate, stalemate, insufficient material, ...);
3. ``kings``: the players put both kings on the four centre squares at the end of the game.

Kings in the centre (our mapping of the DGT convention; the four centre squares are two light squares,
d5 and e4, and two dark ones, d4 and e5)::

    both kings on light squares (d5 + e4)       1-0   white wins
    both kings on dark squares  (d4 + e5)       0-1   black wins
    one king on a light, one on a dark square   1/2-1/2  draw (d4+d5, e4+e5, d4+e4, d5+e5)

Two kings on centre squares are always next to each other, so such a position never arises in play: the
pattern cannot be mistaken for a move. The board only senses occupancy, so the pattern is read from the
difference between the game position and the occupancy the bridge reports: the kings' squares (one or
both) emptied, as many centre squares newly occupied, every other square unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import chess

#: Both players lost by forfeit (the arbiter's ``0-0f``): not a PGN result (the PGN says ``*`` with
#: ``[Termination "double forfeit"]``), ``0-0f`` in the CSV, ``-``/``-`` in the TRF.
DOUBLE_FORFEIT = "0-0"
RESULTS = ("1-0", "0-1", "1/2-1/2", "*", DOUBLE_FORFEIT)
SOURCES = ("arbiter", "board", "kings")

_ALIASES = {
    "1-0": "1-0", "0-1": "0-1", "1/2-1/2": "1/2-1/2", "½-½": "1/2-1/2", "0.5-0.5": "1/2-1/2",
    "draw": "1/2-1/2", "=": "1/2-1/2", "*": "*", "white": "1-0", "black": "0-1", "": "*",
    "1-0f": "1-0", "0-1f": "0-1", "+/-": "1-0", "-/+": "0-1",
    "0-0f": DOUBLE_FORFEIT, "0-0": DOUBLE_FORFEIT, "-/-": DOUBLE_FORFEIT, "--": DOUBLE_FORFEIT,
}

#: Results that say the game was not played (a forfeit): the arbiter's reason is then ``forfeit``.
FORFEIT_SPELLINGS = frozenset({"1-0f", "0-1f", "+/-", "-/+", "+-", "-+", "1-0ff", "0-1ff",
                               "0-0f", "0-0", "-/-", "--", "0-0ff"})
#: The arbiter's reason of a forfeit (the CSV writes its result ``1-0f``/``0-1f``, the TRF ``+``/``-``).
FORFEIT = "forfeit"

LIGHT_CENTRE = frozenset({chess.D5, chess.E4})
DARK_CENTRE = frozenset({chess.D4, chess.E5})
CENTRE = LIGHT_CENTRE | DARK_CENTRE


def normalize_result(text: str) -> str | None:
    """Return the PGN spelling of a result (``1-0``, ``0-1``, ``1/2-1/2``, ``*``; :data:`DOUBLE_FORFEIT`
    for a double forfeit) or None if unknown."""
    return _ALIASES.get(text.strip().lower())


def is_forfeit(text: str) -> bool:
    """Return whether a result's spelling says the game was not played (``1-0f``, ``+/-``...)."""
    return text.strip().lower() in FORFEIT_SPELLINGS


def result_from_king_squares(a: chess.Square, b: chess.Square) -> str | None:
    """The result two king squares mean under the mapping above, or None if not both on centre squares."""
    if a == b or a not in CENTRE or b not in CENTRE:
        return None
    light = (a in LIGHT_CENTRE) + (b in LIGHT_CENTRE)
    return {2: "1-0", 0: "0-1", 1: "1/2-1/2"}[light]


def kings_result(board: chess.Board, occupancy: int) -> str | None:
    """Read the kings-in-the-centre pattern from the game position and the sensed occupancy bitmask."""
    before = int(board.occupied)
    vacated = before & ~occupancy
    added = occupancy & ~before
    kings = {k for k in (board.king(chess.WHITE), board.king(chess.BLACK)) if k is not None}
    if len(kings) != 2 or not vacated or vacated & ~chess.SquareSet(kings).mask:
        return None
    gone = list(chess.SquareSet(vacated))
    new = list(chess.SquareSet(added))
    if len(new) != len(gone):
        return None
    staying = [k for k in kings if k not in gone]
    final = staying + new
    if len(final) != 2:
        return None
    return result_from_king_squares(final[0], final[1])


@dataclass
class ResultBook:
    """Results of one board's game by source; :meth:`effective` is what the PGN shows."""

    arbiter: str | None = None
    board: str | None = None
    kings: str | None = None
    board_reason: str | None = None
    #: The arbiter's reason: :data:`FORFEIT` for a game not played, else None.
    arbiter_reason: str | None = None

    def set(self, source: str, result: str | None, reason: str | None = None) -> bool:
        """Record (or clear, with None or ``*``) a result from a source; return whether anything changed."""
        if source not in SOURCES:
            raise ValueError(f"unknown result source {source!r}")
        value = None if result in (None, "*") else result
        if value is not None and value not in RESULTS:
            raise ValueError(f"unknown result {result!r}")
        before = (self.arbiter, self.board, self.kings, self.board_reason, self.arbiter_reason)
        setattr(self, source, value)
        if source == "board":
            self.board_reason = reason if value else None
        elif source == "arbiter":
            self.arbiter_reason = reason if value else None
        return before != (self.arbiter, self.board, self.kings, self.board_reason, self.arbiter_reason)

    @property
    def forfeit(self) -> bool:
        """Whether the result is the arbiter's forfeit (a game not played)."""
        return self.arbiter is not None and self.arbiter_reason == FORFEIT

    def effective(self) -> str:
        return self.arbiter or self.board or self.kings or "*"

    def source(self) -> str | None:
        for name in SOURCES:
            if getattr(self, name):
                return name
        return None

    def clear_game(self) -> None:
        """A new game on the board: what the board and the kings said no longer holds."""
        self.board = self.kings = self.board_reason = None
