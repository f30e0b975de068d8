"""The readings that act as soon as the board shows something, before it rests: a table beside
:data:`~touchmove.rules.at_rest.AT_REST`, and the decisions they return.

:data:`AT_ONCE` is asked after every square change, once the engine knows which move the board shows from the game
position (``shown``, or None), in two parts by that: the rows of ``AT_ONCE[False]`` when it shows none, those of
``AT_ONCE[True]`` when it shows one (no row applies to both, and asking only the part that may apply keeps the
per-change cost down). Each row is a function of a read-only view of the engine
(:class:`~touchmove.rules.readings.BoardView`), that move and the time of the change, and returns a decision or
None. The engine applies the first decision (:meth:`Engine._after_change`): an :class:`AmendLast` ends the
reading of that change, a :class:`RestoreTouchdown` is applied and the reading goes on from the move the board
then shows. Why each must act at once, and why a capture on a touchdown square is otherwise read at rest: see
docs/engine-internals.md. The answer to an interrupted move stood aside as a single step
(:func:`~touchmove.rules.readings.pending_double_step_stood_aside`) is asked where that answer is read, in the
engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from touchmove.rules.at_rest import Decision
from touchmove.rules.footprints import Footprint
from touchmove.rules.readings import (
    BoardView,
    capture_on_touchdown,
    castling_completed,
    double_step_stood_aside,
    pushed_capture,
)

__all__ = ["AT_ONCE", "AmendLast", "RestoreTouchdown"]


@dataclass(frozen=True, slots=True)
class AmendLast(Decision):
    """Re-read the last move from the position before it and amend it (castling completed; ``pushed``: the
    capture whose victim was pushed aside, now taken off). The change is read."""

    pushed: Footprint | None = None


@dataclass(frozen=True, slots=True)
class RestoreTouchdown(Decision):
    """Amend the last move to ``footprint``, the move to the square its piece touched down on at ``landed`` (a
    capture there); the reading of the change goes on from the move the board then shows."""

    footprint: Footprint
    landed: int


#: A row: what the board shows (``view``, the move ``shown`` from the game position or None, the change's time).
AtOnce = Callable[[BoardView, Footprint | None, int], Decision | None]


def castling_finished(view: BoardView, shown: Footprint | None, t: int) -> Decision | None:
    """The king lands beside the rook moved first: castling, at once (the opponent may answer within the settle
    time). (No move shown.)"""
    if view.occupancy & ~view.position.occ and castling_completed(view):
        return AmendLast()
    return None


def pushed_aside_taken_off(view: BoardView, shown: Footprint | None, t: int) -> Decision | None:
    """The pushed-aside victim taken off: the capture, at once. (No move shown.)"""
    if view.interrupted is None and view.evidence.lifted & view.position.occ & ~view.occupancy:
        pushed = pushed_capture(view)
        if pushed is not None:
            return AmendLast(pushed)
    return None


def captured_where_released(view: BoardView, shown: Footprint | None, t: int) -> Decision | None:
    """An amendment as moved after release is provisional: a capture on the square the piece was released on wins
    over a reading that needs the amendment (a pawn stood on its double step's square). (A move shown.)"""
    if not _amended_as_released(view) or shown is None or view.interrupted is not None:
        return None
    touchdown = capture_on_touchdown(view)
    return None if touchdown is None else RestoreTouchdown(*touchdown)


def double_step_captured_where_it_stood(view: BoardView, shown: Footprint | None, t: int) -> Decision | None:
    """En passant, or a single step stood on the double step's square and captured where it stood first. (A move
    shown.)"""
    if (shown is None or shown.move.to_square != view.position.board.ep_square or view.interrupted is not None
            or _amended_as_released(view)):
        return None
    touchdown = double_step_stood_aside(view, shown, t)
    return None if touchdown is None else RestoreTouchdown(*touchdown)


def _amended_as_released(view: BoardView) -> bool:
    """Return whether the last move is an amendment as moved after release (the piece's release square kept)."""
    released = view.line.released_on
    if released is None:
        return False
    game = view.game
    return released[0] == (len(game.moves) if game is not None else 0)


#: The readings asked at once, in order, by whether the board shows a move from the game position (True) or none
#: (False); the first decision is applied.
AT_ONCE: dict[bool, tuple[AtOnce, ...]] = {
    False: (castling_finished, pushed_aside_taken_off),
    True: (captured_where_released, double_step_captured_where_it_stood),
}
