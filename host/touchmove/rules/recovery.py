"""Recovery after lost changes: the legal plies that lead from a sure position to what the board shows.

When a board's changes are lost (a cable pulled, a USB hub reset), the next snapshot shows an occupancy that the
game position does not explain. The plies played meanwhile are searched for, shortest first: every legal
sequence of up to :data:`MAX_PLIES` plies that leaves exactly that occupancy (*complete*), or, failing that, one
that leaves it with one more move under way (a piece in the hand, a capture's victim off the board).

The search is pruned by occupancy: each ply changes at most two squares (castling four, en passant three) and a
capture removes a piece, so a branch that cannot reach the shown occupancy in the plies left is cut at once. A
search that would cost more than :data:`MAX_NODES` positions gives up (``None``): the arbiter resyncs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import chess

from touchmove.rules.footprints import Position

#: The longest lost sequence searched for.
MAX_PLIES = 5
#: The most positions one search visits before it gives up.
MAX_NODES = 12_000
#: The most explanations kept (beyond, the board is too ambiguous to follow).
MAX_EXPLANATIONS = 24

_CASTLING_RANKS = chess.BB_RANK_1 | chess.BB_RANK_8
_EP_RANKS = chess.BB_RANK_4 | chess.BB_RANK_5


@dataclass(frozen=True)
class Explanation:
    """Plies that lead from the sure position to the shown occupancy; ``in_progress``: one more move under way."""

    moves: tuple[chess.Move, ...]
    board: chess.Board
    in_progress: bool = False

    def sans(self, start: chess.Board) -> list[str]:
        """Return the plies in SAN, played from ``start``."""
        board = start.copy(stack=False)
        out = []
        for move in self.moves:
            out.append(board.san_and_push(move))
        return out


def position_key(board: chess.Board) -> str:
    """Return what tells two positions apart for the rest of the game (placement, turn, castling, en passant)."""
    return board.epd()


class _Budget:
    __slots__ = ("nodes",)

    def __init__(self, nodes: int) -> None:
        self.nodes = nodes


def _slack(board: chess.Board) -> int:
    """Return how many squares more than two a side's plies may still change at once (castling, en passant)."""
    slack = 0
    for color in (chess.WHITE, chess.BLACK):
        if board.castling_rights & board.occupied_co[color] & _CASTLING_RANKS:
            slack += 2
    if board.pawns & _EP_RANKS or board.ep_square is not None:
        slack += 1
    return slack


def _reachable(board: chess.Board, target: chess.Bitboard, plies: int, extra: int) -> bool:
    """Return whether ``target`` may be reached in ``plies`` plies (a bound: False is sure, True is a maybe)."""
    occ = board.occupied
    captures = occ.bit_count() - target.bit_count()
    if extra:
        # A move under way may have two pieces off the board (a capture's victim and the capturing piece).
        return -2 <= captures <= plies + 2 and (occ ^ target).bit_count() <= 2 * plies + _slack(board) + extra
    if captures < 0 or captures > plies:
        return False
    # Each ply changes two squares at most; a capture only one (the capturing piece's own square).
    return (occ ^ target).bit_count() <= 2 * plies - captures + _slack(board)


def explanations(board: chess.Board, target: chess.Bitboard, max_plies: int = MAX_PLIES,
                 max_nodes: int = MAX_NODES, first: Collection[chess.Move] | None = None,
                 min_plies: int = 1) -> list[Explanation] | None:
    """Return the shortest legal sequences from ``board`` that leave ``target``, or None if the search gave up.

    A sequence of ``n`` plies that leaves ``target`` (complete) is as long as one of ``n - 1`` plies followed by
    a move under way (``in_progress``: a piece in the hand, a capture's victim already off): the shortest length
    that has any gives all of that length, complete ones first. The sure position itself with a move under way
    is not searched for (the engine reads that as a move being made). An empty list: no legal sequence of up to
    ``max_plies`` plies explains the board. ``first``: the sequences begin with one of these plies (legal ones);
    ``min_plies``: no shorter ones are searched for.
    """
    budget = _Budget(max_nodes)
    start = board.copy(stack=False)
    for plies in range(min_plies, max_plies + 1):
        found: list[Explanation] = []
        if not _search_first(start, target, plies, found, budget, first, in_progress=False):
            return None
        if plies > 1 and not _search_first(start, target, plies - 1, found, budget, first, in_progress=True):
            return None
        if found:
            # A move under way that the board shows completed is that complete sequence, found already.
            complete = {e.moves[:-1] for e in found if not e.in_progress}
            return [e for e in found if not (e.in_progress and e.moves in complete)]
    return []


def likeliest_first(found: list[Explanation], last_to: chess.Square | None) -> list[Explanation]:
    """Return the explanations, those with more recaptures first (a capture on the square the ply before landed
    on: the usual answer to a capture); ``last_to`` is where the last ply seen landed. Orders of the same plies
    (transpositions) cannot be told apart by the board: this picks the usual one."""

    def recaptures(explanation: Explanation) -> int:
        count, previous = 0, last_to
        for move in explanation.moves:
            count += move.to_square == previous
            previous = move.to_square
        return count

    return sorted(found, key=recaptures, reverse=True)


def _search_first(board: chess.Board, target: chess.Bitboard, plies: int, found: list[Explanation],
                  budget: _Budget, first: Collection[chess.Move] | None, *, in_progress: bool) -> bool:
    """:func:`_search` from ``board``, the first ply one of ``first`` if given."""
    if first is None:
        return _search(board, target, plies, [], found, budget, in_progress=in_progress)
    for move in first:
        budget.nodes -= 1
        if budget.nodes < 0:
            return False
        board.push(move)
        ok = _search(board, target, plies - 1, [move], found, budget, in_progress=in_progress)
        board.pop()
        if not ok:
            return False
    return True


def _search(board: chess.Board, target: chess.Bitboard, plies: int, line: list[chess.Move],
            found: list[Explanation], budget: _Budget, *, in_progress: bool) -> bool:
    """Add the sequences of exactly ``plies`` more plies to ``found``; return False once the budget is spent."""
    if plies == 0:
        if in_progress:
            # A move under way changes three squares at most (a capture's two pieces off, or a promotion's new
            # piece placed before the pawn is lifted), castling four.
            changed = (board.occupied ^ target).bit_count()
            castling = board.castling_rights & board.occupied_co[board.turn]
            if 0 < changed <= (4 if castling else 3) and Position(board).continuable(target):
                found.append(Explanation(tuple(line), board.copy(stack=False), True))
        elif board.occupied == target:
            found.append(Explanation(tuple(line), board.copy(stack=False)))
        return len(found) <= MAX_EXPLANATIONS
    extra = 2 if in_progress else 0
    if not _reachable(board, target, plies, extra):
        return True
    if plies == 1 and not in_progress:
        # The last ply leaves the target: its piece left a square the target shows empty (or castles).
        from_mask = (board.occupied & ~target) | board.kings
        moves = list(board.generate_legal_moves(from_mask))
    else:
        moves = list(board.generate_legal_moves())
    for move in moves:
        if move.promotion not in (None, chess.QUEEN):
            continue  # an under-promotion leaves the squares a queen's does: the queen is assumed, as on the board
        budget.nodes -= 1
        if budget.nodes < 0:
            return False
        board.push(move)
        line.append(move)
        ok = _search(board, target, plies - 1, line, found, budget, in_progress=in_progress)
        line.pop()
        board.pop()
        if not ok:
            return False
    return True
