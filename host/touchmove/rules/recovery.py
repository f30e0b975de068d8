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
from touchmove.rules.outcome import position_key as repetition_key

#: The longest lost sequence searched for.
MAX_PLIES = 8
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


#: Orders of the same plies (transpositions) kept per position reached: the board cannot tell them apart.
MAX_ORDERS = 4

#: One way from a position to the target: the plies, the position they leave, its key, a move under way.
_Suffix = tuple[tuple[chess.Move, ...], chess.Board, object, bool]


class _OutOfBudget(Exception):
    """The search visited its most positions (``ambiguous``: it found too many positions to follow instead)."""

    def __init__(self, ambiguous: bool = False) -> None:
        super().__init__()
        self.ambiguous = ambiguous


class _Budget:
    __slots__ = ("memo", "nodes")

    def __init__(self, nodes: int) -> None:
        self.nodes = nodes
        #: (position, plies left, move under way) -> the ways from there to the target (none: a dead end)
        self.memo: dict[tuple[object, int, bool], list[_Suffix]] = {}


@dataclass(frozen=True)
class SearchResult:
    """What one search found: the explanations, whether it gave up (its budget spent before it was done), and
    how many positions it visited. ``gave_up`` with no explanation is not "nothing explains the board"."""

    found: list[Explanation]
    gave_up: bool
    nodes: int
    ambiguous: bool = False     # stopped at MAX_EXPLANATIONS (too many to follow): ``found`` is empty too


def _slack(board: chess.Board, target: chess.Bitboard) -> int:
    """Return how many squares more than two a side's plies may still change at once (castling, en passant).

    Castling counts only while the king's square differs from the target: a king that castles leaves its square
    empty, and filling it again takes a change of its own, which uses up the two castling saved.
    """
    slack = 0
    differ = board.occupied ^ target
    for color in (chess.WHITE, chess.BLACK):
        if (board.castling_rights & board.occupied_co[color] & _CASTLING_RANKS
                and board.kings & board.occupied_co[color] & differ):
            slack += 2
    if board.pawns & _EP_RANKS or board.ep_square is not None:
        slack += 1
    return slack


def _spare(board: chess.Board, target: chess.Bitboard, plies: int, extra: int) -> int | None:
    """Return how many squares the remaining ``plies`` may still change beyond the shown differences (each ply
    changes two squares, a capture one; castling and en passant more, a move under way ``extra``), or None when
    the target cannot be reached (a bound: None is sure, a number is a maybe)."""
    occ = board.occupied
    captures = occ.bit_count() - target.bit_count()
    if extra:
        # A move under way may have two pieces off the board (a capture's victim and the capturing piece).
        if not -2 <= captures <= plies + 2:
            return None
        spare = 2 * plies + _slack(board, target) + extra - (occ ^ target).bit_count()
    else:
        if captures < 0 or captures > plies:
            return None
        spare = 2 * plies - captures + _slack(board, target) - (occ ^ target).bit_count()
    return spare if spare >= 0 else None


def _reachable(board: chess.Board, target: chess.Bitboard, plies: int, extra: int) -> bool:
    """Return whether ``target`` may be reached in ``plies`` plies (a bound: False is sure, True is a maybe)."""
    return _spare(board, target, plies, extra) is not None


def explanations(board: chess.Board, target: chess.Bitboard, max_plies: int = MAX_PLIES,
                 max_nodes: int = MAX_NODES, first: Collection[chess.Move] | None = None,
                 min_plies: int = 1) -> list[Explanation] | None:
    """Return the shortest legal sequences from ``board`` that leave ``target``, or None if the search gave up.

    A sequence of ``n`` plies that leaves ``target`` (complete) is as long as one of ``n - 1`` plies followed by
    a move under way (``in_progress``: a piece in the hand, a capture's victim already off): the shortest length
    that has any gives all of that length, complete ones first. The sure position itself with a move under way
    is not searched for (the engine reads that as a move being made). An empty list: no legal sequence of up to
    ``max_plies`` plies explains the board. ``first``: the sequences begin with one of these plies (legal ones);
    ``min_plies``: no shorter ones are searched for. :func:`search` says the same with how it ended.
    """
    result = search(board, target, max_plies, max_nodes, first, min_plies)
    return None if result.gave_up else result.found


def search(board: chess.Board, target: chess.Bitboard, max_plies: int = MAX_PLIES, max_nodes: int = MAX_NODES,
           first: Collection[chess.Move] | None = None, min_plies: int = 1) -> SearchResult:
    """Return what :func:`explanations` returns, with whether the search gave up and the positions visited.

    Lengths are tried shortest first. Within one length a ply is searched only if the plies left can still
    change every square that differs (:func:`_spare`): with nothing to spare, a ply must empty a square the
    target shows empty and fill one it shows occupied (a capture: empty one); each ply that does less costs
    spare changes (a piece passing through a square moves twice). What a position leads to in so many plies is
    remembered, so a transposition (the same plies in another order) is searched once; at most
    :data:`MAX_ORDERS` orders are kept per position reached, and more than :data:`MAX_EXPLANATIONS` positions
    is too ambiguous to follow (``ambiguous``).
    """
    budget = _Budget(max_nodes)
    start = board.copy(stack=False)
    for plies in range(min_plies, max_plies + 1):
        try:
            ways = _ways_first(start, target, plies, budget, first, in_progress=False)
            if plies > 1:
                ways += _ways_first(start, target, plies - 1, budget, first, in_progress=True)
        except _OutOfBudget as stop:
            return SearchResult([], True, max_nodes - budget.nodes, ambiguous=stop.ambiguous)
        if ways:
            found = [Explanation(moves, final, in_progress) for moves, final, _, in_progress in ways]
            if len({key for _, _, key, _ in ways}) > MAX_EXPLANATIONS:
                return SearchResult([], True, max_nodes - budget.nodes, ambiguous=True)
            # A move under way that the board shows completed is that complete sequence, found already.
            complete = {e.moves[:-1] for e in found if not e.in_progress}
            kept = [e for e in found if not (e.in_progress and e.moves in complete)]
            return SearchResult(kept, False, max_nodes - budget.nodes)
    return SearchResult([], False, max_nodes - budget.nodes)


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


def _ways_first(board: chess.Board, target: chess.Bitboard, plies: int, budget: _Budget,
                first: Collection[chess.Move] | None, *, in_progress: bool) -> list[_Suffix]:
    """:func:`_ways` from ``board``, the first ply one of ``first`` if given."""
    if first is None:
        return list(_ways(board, target, plies, budget, in_progress=in_progress))
    out: list[_Suffix] = []
    for move in first:
        _spend(budget)
        board.push(move)
        try:
            ways = _ways(board, target, plies - 1, budget, in_progress=in_progress)
            out += [((move, *moves), final, key, under_way) for moves, final, key, under_way in ways]
        finally:
            board.pop()
    return _capped(out)


def _spend(budget: _Budget) -> None:
    budget.nodes -= 1
    if budget.nodes < 0:
        raise _OutOfBudget


def _capped(ways: list[_Suffix]) -> list[_Suffix]:
    """Return ``ways`` with at most :data:`MAX_ORDERS` per position reached; raise :class:`_OutOfBudget`
    (ambiguous) past :data:`MAX_EXPLANATIONS` positions."""
    per: dict[object, int] = {}
    out: list[_Suffix] = []
    for way in ways:
        seen = per.get(way[2], 0)
        if seen < MAX_ORDERS:
            out.append(way)
        per[way[2]] = seen + 1
    if len(per) > MAX_EXPLANATIONS:
        raise _OutOfBudget(ambiguous=True)
    return out


def _ways(board: chess.Board, target: chess.Bitboard, plies: int, budget: _Budget, *,
          in_progress: bool) -> list[_Suffix]:
    """Return the ways of exactly ``plies`` more plies from ``board`` to ``target`` (remembered per position)."""
    if plies == 0:
        if in_progress:
            # A move under way changes three squares at most (a capture's two pieces off, or a promotion's new
            # piece placed before the pawn is lifted), castling four.
            changed = (board.occupied ^ target).bit_count()
            castling = board.castling_rights & board.occupied_co[board.turn]
            if 0 < changed <= (4 if castling else 3) and Position(board).continuable(target):
                return [((), board.copy(stack=False), repetition_key(board), True)]
        elif board.occupied == target:
            return [((), board.copy(stack=False), repetition_key(board), False)]
        return []
    spare = _spare(board, target, plies, 2 if in_progress else 0)
    if spare is None:
        return []
    key = (repetition_key(board), plies, in_progress)
    known = budget.memo.get(key)
    if known is not None:
        return known
    occ = board.occupied
    out: list[_Suffix] = []
    for move in _candidates(board, target, plies, spare, occ & ~target, target & ~occ, in_progress):
        _spend(budget)
        board.push(move)
        try:
            out += [((move, *moves), final, final_key, under_way)
                    for moves, final, final_key, under_way in _ways(board, target, plies - 1, budget,
                                                                     in_progress=in_progress)]
        finally:
            board.pop()
    out = _capped(out)
    budget.memo[key] = out
    return out


def _candidates(board: chess.Board, target: chess.Bitboard, plies: int, spare: int, empty_now: chess.Bitboard,
                fill: chess.Bitboard, in_progress: bool) -> list[chess.Move]:
    """Return the legal plies worth trying: those the spare changes allow (see :func:`search`), queen
    promotions only (an under-promotion leaves the squares a queen's does: the queen is assumed, as on the
    board), castling and en passant always (their extra squares are in the slack)."""
    if plies == 1 and not in_progress:
        # The last ply leaves the target: its piece left a square the target shows empty (or castles).
        pool = board.generate_legal_moves((board.occupied & ~target) | board.kings)
    elif spare == 0 and board.ep_square is None:
        # Nothing to spare: the ply empties a square to be emptied (castling moves the king).
        pool = board.generate_legal_moves(empty_now | board.kings)
    else:
        pool = board.generate_legal_moves()
    out: list[chess.Move] = []
    occ = board.occupied
    kings = board.kings
    ep_square = board.ep_square
    for move in pool:
        if move.promotion not in (None, chess.QUEEN):
            continue
        from_bit = chess.BB_SQUARES[move.from_square]
        # castling (a king move) and en passant change more squares: always tried, the slack allows for them
        if spare >= 4 or from_bit & kings or (move.to_square == ep_square and from_bit & board.pawns):
            out.append(move)
            continue
        to_bit = chess.BB_SQUARES[move.to_square]
        cost = 0 if from_bit & empty_now else 2        # leaving a square the target shows occupied
        if not to_bit & occ:
            cost += 0 if to_bit & fill else 2          # landing on a square the target shows empty
        if cost <= spare + 1:       # + 1: a double step may give an en passant's extra square to the plies left
            out.append(move)
    return out
