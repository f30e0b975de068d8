"""Re-reading the last plies when the board contradicts them, before ``board_mismatch`` is raised.

A ply is decided from what the board showed up to then; what follows may contradict it (the piece just moved
stood aside by the hand that captures it, after a slide or a touch that the specific readings of
:mod:`touchmove.rules.readings` do not expect). When the board rests in a state no legal move continues, the
engine first re-reads the last plies: from the position :data:`REREAD_PLIES` plies back at most (the nearest
first), the legal lines at least as long as the plies they replace (each of those was seen made) that lead to
what the board shows (the search for lost changes, :func:`~touchmove.rules.recovery.search`) and that account
for every square change seen since (:func:`accounts_for`: the pieces lifted and put down in the line's order,
each of its positions shown for a moment; the last may be followed by a move under way, its pieces in the hand).
The fewest plies replaced win; there, a unique line is adopted (the replaced plies amended, the ones played on
since made), several or none leave the mismatch to the arbiter.

Pure: what the game and its change log hold (:class:`~touchmove.rules.game_line.GameLine`) in, a line out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import chess

from touchmove.rules.footprints import SLIDE_OVERLAP_MS, footprint
from touchmove.rules.game_line import KEPT_PLIES, GameLine
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.recovery import MAX_NODES, search

__all__ = ["PLAYED_ON", "REREAD_EXPLANATIONS", "REREAD_NODES", "REREAD_PLIES", "Reread", "accounts_for", "reread"]

#: How many of the last plies a contradiction may replace (at most): a bullet reply read two plies wrong (the
#: victim's move merged with its push aside) is contradicted only two plies later (the victim gone, a move of the
#: other side then read over it).
REREAD_PLIES = 4
#: How many plies a line re-read may have beyond the plies it replaces (played on since, before the board rested).
PLAYED_ON = 2
#: The most positions one re-reading's searches visit in all: a lost-changes search's budget (the lines it looks
#: for are a few plies of pieces seen lifted and put down; four plies back, a board a knocked piece contradicts
#: may have a few hundred lines to sift at three plies back before the one line at four).
REREAD_NODES = MAX_NODES
#: The most positions reached one re-reading search follows: more than a lost-changes search (each line is then
#: sifted by the changes seen, :func:`accounts_for`), so a few plies back with many lines is not taken for
#: ambiguous before the changes are asked.
REREAD_EXPLANATIONS = 200

assert REREAD_PLIES < KEPT_PLIES  # the change log reaches back that far

Change = tuple[int, chess.Square, bool]


@dataclass(frozen=True)
class Reread:
    """A line re-read: the game's first ``keep`` plies stand, ``moves`` follow them instead of the rest."""

    keep: int
    moves: tuple[chess.Move, ...]


def reread(game: GameRecord, line: GameLine, occ: chess.Bitboard) -> Reread | None:
    """Return the one line that explains ``occ`` and the changes seen since the fewest last plies it replaces, or
    None (none, or several at the fewest plies; or changes were not all seen one by one since)."""
    plies = len(game.moves)
    budget = [REREAD_NODES]
    for back in range(1, min(REREAD_PLIES, plies) + 1):
        keep = plies - back
        since = line.reached[keep]
        if since is None or since < line.changes_from:
            return None     # a ply not seen made, or changes forgotten: nothing sure to re-read from
        window = line.changes_since(since)
        if any(sq < 0 for _, sq, _ in window):
            return None     # changes not seen one by one (a snapshot)
        lines = _lines(game.board(keep), occ, back, back + PLAYED_ON, window, since, budget)
        if lines is None:
            return None     # the search's budget is spent: no line is sure to be the only one
        if len(lines) == 1:
            return Reread(keep, lines[0]) if lines[0] != tuple(game.moves[keep:]) else None
        if lines:
            return None
    return None


def _lines(start: chess.Board, occ: chess.Bitboard, shortest: int, longest: int, changes: Sequence[Change],
           since: int, budget: list[int]) -> list[tuple[chess.Move, ...]] | None:
    """Return the shortest legal lines from ``start`` (of ``shortest`` to ``longest`` plies: never fewer than the
    plies they replace, each seen made) that leave ``occ`` and account for ``changes`` (:func:`accounts_for`); None
    when the search spent ``budget`` (positions left, updated). A line may end with a move under way (its pieces in
    the hand, the board resting so: the next ply being made); its plies made are the line, as many as ``shortest``
    at least."""
    least = shortest
    # (a line that accounts for the changes lifts each ply's piece from a square seen lifted and sets it on one
    # seen put down: no other ply is searched)
    seen = (_squares(changes, False), _squares(changes, True))
    while shortest <= longest:
        result = search(start, occ, max_plies=longest, max_nodes=budget[0], min_plies=shortest,
                        max_explanations=REREAD_EXPLANATIONS, seen=seen)
        budget[0] -= result.nodes
        if result.gave_up:
            return None
        found = result.found
        if not found:
            return []
        length = len(found[0].moves) + found[0].in_progress
        lines = [e.moves for e in found if (not e.in_progress or len(e.moves) >= least)
                 and accounts_for(start, e.moves, changes, since, occ)]
        if lines:
            return list(dict.fromkeys(lines))
        shortest = length + 1
    return []


def accounts_for(start: chess.Board, moves: Sequence[chess.Move], changes: Sequence[Change], since: int,
                 occ: chess.Bitboard) -> bool:
    """Return whether the square changes seen (``changes``, oldest first, none before ``since``; the board shows
    ``occ`` after them) show ``moves`` played from ``start`` one after the other: each ply's piece (and its victim,
    its castling rook) lifted after the ply before landed, and put down after that (after its victim left; a piece
    slid onto its square may be sensed there :data:`~touchmove.rules.footprints.SLIDE_OVERLAP_MS` before its own
    square empties; a promotion's new piece may come before the pawn leaves); and the board showing each ply's
    position at some moment between its landing and the next ply's first lift. Changes no ply needs are touches,
    slides, pieces stood aside, knocked and put back."""
    lifts: dict[chess.Square, list[tuple[int, int]]] = {}
    places: dict[chess.Square, list[tuple[int, int]]] = {}
    shown = []      # the occupancy after each change
    before = occ
    for _, sq, _ in changes:
        before ^= chess.BB_SQUARES[sq]
    board_occ = before
    for index, (t, sq, occupied) in enumerate(changes):
        (places if occupied else lifts).setdefault(sq, []).append((t, index))
        board_occ ^= chess.BB_SQUARES[sq]
        shown.append(board_occ)
    board = start.copy(stack=False)
    cursor = since
    spans: list[tuple[int, int, chess.Bitboard]] = []   # each ply: its landing, the next ply's first lift, after it
    for move in moves:
        footprint_ = footprint(board, move)
        lifted: dict[chess.Square, tuple[int, int]] = {}
        for sq in chess.scan_forward(footprint_.must_lift):
            found = _first(lifts.get(sq), cursor)
            if found is None:
                return False
            lifted[sq] = found
        if spans:
            spans[-1] = (spans[-1][0], min(index for _, index in lifted.values()), spans[-1][2])
        own = lifted[move.from_square][0] - SLIDE_OVERLAP_MS if move.promotion is None else cursor
        landed, landing = cursor, -1
        for sq in chess.scan_forward(footprint_.placed):
            victim = lifted.get(sq)
            found = _first(places.get(sq), max(cursor, own, cursor if victim is None else victim[0]))
            if found is None:
                return False
            landed, landing = max(landed, found[0]), max(landing, found[1])
        cursor = landed
        board.push(move)
        spans.append((landing, len(changes), board.occupied))
    return all(any(shown[k] == after for k in range(landing, end)) for landing, end, after in spans)


def _squares(changes: Sequence[Change], occupied: bool) -> chess.Bitboard:
    """Return the squares ``changes`` fill (``occupied``) or empty."""
    squares = 0
    for _, sq, filled in changes:
        if filled == occupied:
            squares |= chess.BB_SQUARES[sq]
    return squares


def _first(times: list[tuple[int, int]] | None, after: int) -> tuple[int, int] | None:
    """Return the first of ``times`` (time and index, ascending) not before ``after``, or None."""
    for found in times or ():
        if found[0] >= after:
            return found
    return None
