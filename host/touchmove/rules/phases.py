"""The states a board's engine is in: where the board is in its games, and what the arbiter was told about it.

Shared by the engine (:mod:`touchmove.rules.engine`) and what corrects its game from outside the changes seen
(:mod:`touchmove.rules.unseen_play`).
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "CLEARED", "CLEARED_SQUARES", "EXCUSED", "LOST", "MISMATCH", "NEW", "OUT_OF_SYNC", "OVER", "PLAYING", "READING",
    "UNDISPUTED", "Phase", "Sync",
]

#: How many squares off the game position mean the board is being cleared or set up (no moves are read then);
#: two plies of castling change eight.
CLEARED_SQUARES = 10


class Phase(Enum):
    """Where a board is in its games."""

    NEW = "new"  # no record yet
    PLAYING = "playing"  # a game is on and moves are read
    CLEARED = "cleared"  # a game is on, but the board is being cleared or set up: no moves are read
    OVER = "over"  # no game is on: the last one ended, or the board waits for a start position


# Each member also under its own name, for the engine's per-record path: in Python 3.11 a member looked up on its
# Enum class takes about 50 ns, eight times a module-level name (a record reads a dozen of them).
NEW, PLAYING, CLEARED, OVER = Phase.NEW, Phase.PLAYING, Phase.CLEARED, Phase.OVER

#: The phases in which a game is on.
READING = (PLAYING, CLEARED)


class Sync(Enum):
    """What the arbiter was told about the board and the game position."""

    UNDISPUTED = "undisputed"  # nothing said against the board: it shows the game, or a difference not yet judged
    EXCUSED = "excused"  # a difference judged at rest as no mismatch (a move made again, a promotion exchange)
    MISMATCH = "mismatch"  # board_mismatch was raised; board_restored ends it
    LOST = "lost"  # changes were lost and no plies explain the board yet (changes_lost was raised)


UNDISPUTED, EXCUSED, MISMATCH, LOST = Sync.UNDISPUTED, Sync.EXCUSED, Sync.MISMATCH, Sync.LOST

#: The states in which the arbiter was told that the board does not show the game.
OUT_OF_SYNC = (MISMATCH, LOST)
