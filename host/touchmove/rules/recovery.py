"""Recovery after lost changes: the legal plies that lead from a sure position to what the board shows.

When a board's changes are lost (a cable pulled, a USB hub reset), the next snapshot shows an occupancy that the
game position does not explain. The plies played meanwhile are searched for, shortest first: every legal
sequence of up to :data:`MAX_PLIES` plies that leaves exactly that occupancy (*complete*), or, failing that, one
that leaves it with one more move under way (a piece in the hand, a capture's victim off the board).

The search is pruned by occupancy: each ply changes at most two squares (castling four, en passant three) and a
capture removes a piece, so a branch that cannot reach the shown occupancy in the plies left is cut at once. The
snapshot bounds it from its end too: the squares each side must still leave, and the squares to fill, against
the plies each side has left (:func:`_leaves_fit`); a ply is bounded on the squares before it is made. A search
that would cost more than :data:`MAX_NODES` positions gives up (``None``): the arbiter resyncs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
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
    __slots__ = ("explanations", "memo", "nodes", "pieces", "reported", "seen")

    def __init__(self, nodes: int, reported: tuple[chess.Bitboard, chess.Bitboard] | None = None,
                 pieces: dict[chess.Square, str] | None = None, explanations: int = MAX_EXPLANATIONS,
                 seen: tuple[chess.Bitboard, chess.Bitboard] | None = None) -> None:
        self.nodes = nodes
        #: the squares seen lifted and put down since the search's position (every change seen one by one): a ply
        #: is searched only if it lifts its piece from the first and sets it on the second (castling: its king
        #: lifted)
        self.seen = seen
        #: the most positions reached that the search follows (past them: ambiguous, it gives up)
        self.explanations = explanations
        #: the squares a board that names its pieces reported lifted from and put down on (plies that use them
        #: are tried first, so the orders kept per position are the ones the board showed)
        self.reported = reported
        #: the pieces such a board shows now (square, colour, type): each that a position lacks is put there by a
        #: ply of its side (:func:`_landings_fit`)
        self.pieces = None if pieces is None else [
            (sq, piece.color, piece.piece_type) for sq, letter in pieces.items()
            for piece in (chess.Piece.from_symbol(letter),)]
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
    empty, and filling it again takes a change of its own, which uses up the two castling saved. En passant
    changes three squares and is a capture (which the bound counts as changing one square less): two more.
    """
    return _castling_slack(board, target) + (_EN_PASSANT_SLACK if _en_passant(board) else 0)


#: The squares an en passant capture changes beyond a capture's one: the square it lands on, the pawn taken.
_EN_PASSANT_SLACK = 2


def _castling_slack(board: chess.Board, target: chess.Bitboard) -> int:
    """Return the part of :func:`_slack` castling gives."""
    slack = 0
    differ = board.occupied ^ target
    for color in (chess.WHITE, chess.BLACK):
        if (board.castling_rights & board.occupied_co[color] & _CASTLING_RANKS
                and board.kings & board.occupied_co[color] & differ):
            slack += 2
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


def _leaves_fit(occ: chess.Bitboard, own: chess.Bitboard, other: chess.Bitboard, castlers: chess.Bitboard,
                target: chess.Bitboard, plies: int, extra: int, en_passant: bool) -> int | None:
    """Return how many squares more the side to move (its pieces ``own``) may leave than the target needs of
    it, or None when either side cannot empty its squares in the plies left (a bound: None is sure).

    The snapshot's side of the search (a bound from the target back): a square a side holds now and the target
    shows empty is first left by a ply of that side (castling leaves two) or its piece is captured by the other
    side (one piece a capture). So a side's such squares are at most its plies left, plus one if it may still
    castle (``castlers``: the pieces of the sides with castling rights), plus the other side's captures (at most
    the pieces fewer on the target, and the other side's plies). A move under way at the end (``extra``) lifts
    up to two pieces more and may be one capture more.

    Likewise a square empty now that the target shows occupied is first filled by a ply that is no capture
    (the square was empty; en passant aside): the squares to fill are at most the plies left less the captures
    they make, plus one per side that may castle (two squares filled), one for an en passant (``en_passant``:
    one may come), and one for a promotion's new piece placed by a move under way.
    """
    gone = occ & ~target
    shown = target.bit_count()
    if extra:
        least = max(0, occ.bit_count() - shown - 2)
        fills = plies - least + 1
    else:
        fills = plies - (occ.bit_count() - shown)
    fills += (1 if castlers & own else 0) + (1 if castlers & other else 0) + en_passant
    if (target & ~occ).bit_count() > fills:
        return None
    captures = occ.bit_count() - shown + (1 if extra else 0)
    own_plies = (plies + 1) // 2
    other_plies = plies - own_plies
    lift = 2 if extra else 0
    other_left = (gone & other).bit_count()
    if other_left > other_plies + max(0, min(captures, own_plies)) + lift + (1 if castlers & other else 0):
        return None
    spare = own_plies + max(0, min(captures, other_plies)) + lift + (1 if castlers & own else 0) \
        - (gone & own).bit_count()
    return spare if spare >= 0 else None


def _landings_fit(board: chess.Board, pieces: list[tuple[chess.Square, chess.Color, chess.PieceType]], plies: int,
                  in_progress: bool) -> bool:
    """Return whether each side's plies left can put down every piece of its that the board names where
    ``board`` has none or another (a bound: False is sure). Each ply puts down one piece, castling two. A piece of
    the same side and another type, neither pawn nor king, is no count (a promotion's piece, searched as a
    queen); with a move under way at the end, its side's pieces are not counted (a sliding piece shows on the
    squares it crosses). The occupancy's bounds cannot see a piece standing where the board names another."""
    need = _pieces_missing(board, pieces)
    mover = board.turn
    left = {mover: (plies + 1) // 2, not mover: plies // 2}
    last = mover if plies % 2 == 0 else not mover    # the side whose move is under way at the end
    for color in (chess.WHITE, chess.BLACK):
        if in_progress and color == last:
            continue
        castles = 1 if plies and board.castling_rights & board.occupied_co[color] & _CASTLING_RANKS else 0
        if need[color] > left[color] + castles:
            return False
    return True


def _pieces_missing(board: chess.Board, pieces: list[tuple[chess.Square, chess.Color, chess.PieceType]],
                    ) -> list[int]:
    """Return how many of the named ``pieces`` of each side (by colour) ``board`` lacks on their squares (see
    :func:`_landings_fit`)."""
    need = [0, 0]
    for sq, color, piece_type in pieces:
        have = board.piece_type_at(sq)
        if have == piece_type and board.color_at(sq) == color:
            continue
        if (have is not None and board.color_at(sq) == color and have not in (chess.PAWN, chess.KING)
                and piece_type not in (chess.PAWN, chess.KING)):
            continue
        need[color] += 1
    return need


def _reachable(board: chess.Board, target: chess.Bitboard, plies: int, extra: int) -> bool:
    """Return whether ``target`` may be reached in ``plies`` plies (a bound: False is sure, True is a maybe)."""
    return _spare(board, target, plies, extra) is not None


def explanations(board: chess.Board, target: chess.Bitboard, max_plies: int = MAX_PLIES,
                 max_nodes: int = MAX_NODES, first: Collection[chess.Move] | None = None,
                 min_plies: int = 1, reported: tuple[chess.Bitboard, chess.Bitboard] | None = None,
                 under_way_too: bool = False, pieces: dict[chess.Square, str] | None = None,
                 ) -> list[Explanation] | None:
    """Return the shortest legal sequences from ``board`` that leave ``target``, or None if the search gave up.

    A sequence of ``n`` plies that leaves ``target`` (complete) is as long as one of ``n - 1`` plies followed by
    a move under way (``in_progress``: a piece in the hand, a capture's victim already off): the shortest length
    that has any gives all of that length, complete ones first. The sure position itself with a move under way
    is not searched for (the engine reads that as a move being made). An empty list: no legal sequence of up to
    ``max_plies`` plies explains the board. ``first``: the sequences begin with one of these plies (legal ones);
    ``min_plies``: no shorter ones are searched for; ``reported``: the squares a board that names its pieces
    reported lifted from and put down on, whose plies are tried first; ``under_way_too``: a move under way is kept
    beside the same plies' completed sequence (a board that names its pieces tells them apart; else the move made
    is read, :func:`completed_first`); ``pieces``: the pieces such a board shows now, a bound on the plies
    searched (each piece named where a position has none or another is put there by a ply of its side; the
    explanations are still to be checked against them). :func:`search` says the same with how it ended.
    """
    result = search(board, target, max_plies, max_nodes, first, min_plies, reported, under_way_too, pieces)
    return None if result.gave_up else result.found


def search(board: chess.Board, target: chess.Bitboard, max_plies: int = MAX_PLIES, max_nodes: int = MAX_NODES,
           first: Collection[chess.Move] | None = None, min_plies: int = 1,
           reported: tuple[chess.Bitboard, chess.Bitboard] | None = None, under_way_too: bool = False,
           pieces: dict[chess.Square, str] | None = None, max_explanations: int = MAX_EXPLANATIONS,
           seen: tuple[chess.Bitboard, chess.Bitboard] | None = None) -> SearchResult:
    """Return what :func:`explanations` returns, with whether the search gave up and the positions visited.

    Lengths are tried shortest first. Within one length a ply is searched only if the plies left can still
    change every square that differs (:func:`_spare`): with nothing to spare, a ply must empty a square the
    target shows empty and fill one it shows occupied (a capture: empty one); each ply that does less costs
    spare changes (a piece passing through a square moves twice). What a position leads to in so many plies is
    remembered, so a transposition (the same plies in another order) is searched once; at most
    :data:`MAX_ORDERS` orders are kept per position reached, and more than :data:`MAX_EXPLANATIONS` positions
    is too ambiguous to follow (``ambiguous``; ``max_explanations`` for a caller that sifts them by other evidence):
    the plies from and to ``reported`` squares are tried first, so the orders kept are the ones the board showed
    (Kd1 Ke2 it reported, not Bh7 Bd3 it never did). ``seen``: the squares seen lifted and put down since
    ``board``, every change seen one by one; then only plies from the first to the second are searched.
    """
    budget = _Budget(max_nodes, reported, pieces, max_explanations, seen)
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
            if len({key for _, _, key, _ in ways}) > max_explanations:
                return SearchResult([], True, max_nodes - budget.nodes, ambiguous=True)
            return SearchResult(found if under_way_too else completed_first(found), False,
                                max_nodes - budget.nodes)
    return SearchResult([], False, max_nodes - budget.nodes)


def completed_first(found: list[Explanation]) -> list[Explanation]:
    """Return ``found`` without the moves under way that one of them shows completed: a capture's piece in the hand
    leaves the squares as the capture made does, and the occupancy cannot tell them apart (the move made is read)."""
    complete = {e.moves[:-1] for e in found if not e.in_progress}
    return [e for e in found if not (e.in_progress and e.moves in complete)]


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


#: The most orders of one set of plies :func:`in_landing_order` tries (each side's plies permuted among its turns).
MAX_LANDING_ORDERS = 2_000


def landed_out_of_order(moves: Sequence[chess.Move], placed_at: dict[chess.Square, int]) -> int:
    """Return how many pairs of ``moves`` landed in the other order by the times the board put their pieces down
    (``placed_at``: square -> host ms); a ply whose square a later ply took again, or whose time is not known, is
    not counted."""
    times = []
    for i, move in enumerate(moves):
        if all(later.to_square != move.to_square for later in moves[i + 1:]) and move.to_square in placed_at:
            times.append(placed_at[move.to_square])
    return _pairs_reversed(times)


def _pairs_reversed(times: Sequence[int]) -> int:
    """Return how many pairs of ``times`` come in decreasing order."""
    return sum(a > b for i, a in enumerate(times) for b in times[i + 1:])


def order_disagreement(start: chess.Board, moves: Sequence[chess.Move],
                       changes: Sequence[tuple[int, chess.Square, str | None]]) -> int:
    """Return how many pairs of the lifts and placements ``moves`` (plies from ``start``) make happened the other
    way round by what a board that names its pieces reported (``changes``: time, square, the piece put down or None
    for a lift, oldest first, since the plies began).

    Each ply lifts its piece from its square and puts it (or the piece it promotes to) down on another; each is
    matched to the first report of that kind on that square after the one matched there before. A capture's
    placement on a square that saw other placements is so told from them: cxd4 Nxd4 Nxd4 from Nxd4 Nxd4 cxd4 by
    the pawn seen on d4 before the knights were lifted. What was not reported (a piece there for less than a
    scan) is not counted."""
    return _pairs_reversed(_reported(start, moves, changes)[0])


def under_way_before_its_turn(start: chess.Board, explanation: Explanation, target: chess.Bitboard,
                              changes: Sequence[tuple[int, chess.Square, str | None]]) -> bool:
    """Return whether the move ``explanation`` (plies from ``start``) has under way began, by what a board that names
    its pieces reported (``changes`` as in :func:`order_disagreement`), before its mover's ply before it: every
    square it has emptied (the line leaves a piece there, ``target`` shows none) was last lifted before the lift
    of the line's last ply but one (matched as :func:`order_disagreement` matches them; a hand cannot begin a move
    before making the one before it). A pawn lifted from e6 before ...Nd7 Bxg7 Kxg7 were played is not Rxe6 begun
    after Kxg7 (its victim lifted first) but a ply of its own: ...e5, in a longer line (a DGT move memory read back
    after a link drop merges ...e5 and Bxe5 on e5 into one change). False when nothing tells (a complete line, a
    line of one ply, no report of those lifts)."""
    if not explanation.in_progress or len(explanation.moves) < 2:
        return False
    emptied = chess.SquareSet(explanation.board.occupied & ~target)
    made = _lift_times(start, explanation.moves, changes)[-2]
    lifted: dict[chess.Square, int] = {}
    for t, sq, letter in changes:
        if letter is None:
            lifted[sq] = t
    if made is None or not emptied or any(sq not in lifted for sq in emptied):
        return False
    return all(lifted[sq] < made for sq in emptied)


def _lift_times(start: chess.Board, moves: Sequence[chess.Move],
                changes: Sequence[tuple[int, chess.Square, str | None]]) -> list[int | None]:
    """Return the time of the report matched to each ply's lift (None: none), matched as :func:`_matched` does."""
    lifts = [lift for lift, _ in _matched(start, moves, changes)]
    return lifts + [None] * (len(moves) - len(lifts))


def unreported(start: chess.Board, moves: Sequence[chess.Move],
               changes: Sequence[tuple[int, chess.Square, str | None]]) -> int:
    """Return how many of the lifts and placements ``moves`` make the board never reported (matched as in
    :func:`order_disagreement`). Of two lines to one position, Kd1 Ke2 that the board showed beats Bh7 Bd3 that
    it never did."""
    return _reported(start, moves, changes)[1]


def unaccounted(start: chess.Board, explanation: Explanation,
                changes: Sequence[tuple[int, chess.Square, str | None]]) -> int:
    """Return how many of the pieces a board that names them reported put down (``changes`` as in
    :func:`order_disagreement`) the plies of ``explanation`` from ``start`` do not account for: a piece counts
    when some position of the line has it on that square (a landing, or a piece put back), when a move of the
    line carries it across that square (a slide), or when it is of the side whose move is under way. Two rooks
    shown one after the other on h8 (Rxh8 Rxh8 made) are not Rxb8 under way from a8."""
    board = start.copy(stack=False)
    seen = {(sq, piece.symbol()) for sq, piece in board.piece_map().items()}
    for move in explanation.moves:
        piece = board.piece_at(move.from_square)
        if piece is not None and piece.piece_type != chess.KNIGHT:
            seen.update((sq, piece.symbol()) for sq in chess.SquareSet.between(move.from_square, move.to_square))
        board.push(move)
        seen.update((sq, p.symbol()) for sq, p in board.piece_map().items())
    in_hand = board.turn if explanation.in_progress else None
    return sum(1 for _, sq, letter in changes
               if letter is not None and (sq, letter) not in seen
               and (in_hand is None or letter.isupper() != (in_hand == chess.WHITE)))


def _reported(start: chess.Board, moves: Sequence[chess.Move],
              changes: Sequence[tuple[int, chess.Square, str | None]]) -> tuple[list[int], int]:
    """Return the report times matched to the lifts and placements of ``moves``, in the plies' order, and how many
    had no report (:func:`order_disagreement`)."""
    told = [when for pair in _matched(start, moves, changes) for when in pair]
    return [when for when in told if when is not None], sum(when is None for when in told)


def _matched(start: chess.Board, moves: Sequence[chess.Move],
             changes: Sequence[tuple[int, chess.Square, str | None]]) -> list[tuple[int | None, int | None]]:
    """Return, for each of ``moves`` (plies from ``start``, up to one with no piece to move), the times of the
    reports matched to its lift and to its placement (None: no report): each matched to the first report of that
    kind on that square after the one matched there before (:func:`order_disagreement`)."""
    by_square: dict[chess.Square, list[tuple[int, str | None]]] = {}
    for t, sq, letter in changes:
        by_square.setdefault(sq, []).append((t, letter))
    board = start.copy(stack=False)
    matched: dict[chess.Square, int] = {}
    out: list[tuple[int | None, int | None]] = []
    for move in moves:
        piece = board.piece_at(move.from_square)
        if piece is None:
            break
        landing = move.to_square
        if board.is_castling(move):
            landing = chess.square(6 if board.is_kingside_castling(move) else 2, chess.square_rank(move.from_square))
        put = chess.Piece(move.promotion, piece.color).symbol() if move.promotion else piece.symbol()
        pair: list[int | None] = []
        for sq, kind in ((move.from_square, None), (landing, put)):
            reports = by_square.get(sq, ())
            i = matched.get(sq, 0)
            while i < len(reports) and reports[i][1] != kind:
                i += 1
            if i < len(reports):
                pair.append(reports[i][0])
                matched[sq] = i + 1
            else:
                pair.append(None)
        out.append((pair[0], pair[1]))
        board.push(move)
    return out


def in_landing_order(start: chess.Board, moves: Sequence[chess.Move], placed_at: dict[chess.Square, int],
                     changes: Sequence[tuple[int, chess.Square, str | None]] = ()) -> tuple[chess.Move, ...]:
    """Return ``moves`` (plies from ``start``) in the legal order, reaching the same position, that agrees best
    with what a board that names its pieces reported: the fewest lifts and placements the other way round
    (:func:`order_disagreement` over ``changes``), then the fewest pieces landed the other way round
    (:func:`landed_out_of_order`); ``moves`` as they are when no order agrees better or there are too many orders
    to try (:data:`MAX_LANDING_ORDERS`).

    The search for lost plies keeps one path to each position it passes, so of 1. e4 e5 2. Nf3 and 1. Nf3 e5 2.
    e4 it may keep either; a DGT board that showed e4 land long before f3 tells which was played."""

    def score(order: Sequence[chess.Move]) -> tuple[int, int]:
        return order_disagreement(start, order, changes), landed_out_of_order(order, placed_at)

    best, best_score = tuple(moves), score(moves)
    if best_score == (0, 0) or len(moves) < 3:
        return best
    ours, theirs = list(moves[0::2]), list(moves[1::2])
    if math.factorial(len(ours)) * math.factorial(len(theirs)) > MAX_LANDING_ORDERS:
        return best
    target = start.copy(stack=False)
    for move in moves:
        target.push(move)
    key = position_key(target)
    for own in itertools.permutations(ours):
        for other in itertools.permutations(theirs):
            order = tuple(m for pair in itertools.zip_longest(own, other) for m in pair if m is not None)
            board = start.copy(stack=False)
            for move in order:
                if not board.is_legal(move):
                    break
                board.push(move)
            else:
                if position_key(board) == key:
                    order_score = score(order)
                    if order_score < best_score:
                        best, best_score = order, order_score
    return best


def in_published_order(start: chess.Board, moves: Sequence[chess.Move],
                       published: Sequence[chess.Move]) -> tuple[chess.Move, ...] | None:
    """Return ``moves`` (plies from ``start``, recovered unseen) in the order they were published, or None when that
    order is theirs already or unknown.

    ``published``: the plies from ``start`` on as they were published (a bridge's before it restarted: it may have
    fewer plies than ``moves``, or more). The order returned begins with the published plies (up to as many as
    ``moves``) and reaches the position ``moves`` does (the board cannot tell it apart); when the published plies
    are fewer, the rest is the usual order of the plies that reach it from there (:func:`explanations`). None when
    the published plies do not reach that position, or agree with ``moves`` already.
    """
    count = min(len(moves), len(published))
    if count == 0 or tuple(published[:count]) == tuple(moves[:count]):
        return None
    target = start.copy(stack=False)
    for move in moves:
        target.push(move)
    board = start.copy(stack=False)
    for move in published[:count]:
        if not board.is_legal(move):
            return None
        board.push(move)
    if count == len(moves):
        return tuple(published[:count]) if position_key(board) == position_key(target) else None
    left = len(moves) - count
    rest = [e for e in explanations(board, target.occupied, max_plies=left, min_plies=left) or []
            if not e.in_progress and position_key(e.board) == position_key(target)]
    if not rest:
        return None
    return (*published[:count], *likeliest_first(rest, published[count - 1].to_square)[0].moves)


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
    return _capped(out, budget)


def _spend(budget: _Budget) -> None:
    budget.nodes -= 1
    if budget.nodes < 0:
        raise _OutOfBudget


def _capped(ways: list[_Suffix], budget: _Budget) -> list[_Suffix]:
    """Return ``ways`` with at most :data:`MAX_ORDERS` per position reached; raise :class:`_OutOfBudget`
    (ambiguous) past the budget's positions (:data:`MAX_EXPLANATIONS` unless the caller gives more)."""
    per: dict[object, int] = {}
    out: list[_Suffix] = []
    for way in ways:
        seen = per.get(way[2], 0)
        if seen < MAX_ORDERS:
            out.append(way)
        per[way[2]] = seen + 1
    if len(per) > budget.explanations:
        raise _OutOfBudget(ambiguous=True)
    return out


def _ways(board: chess.Board, target: chess.Bitboard, plies: int, budget: _Budget, *,
          in_progress: bool) -> list[_Suffix]:
    """Return the ways of exactly ``plies`` more plies from ``board`` to ``target`` (remembered per position)."""
    if plies == 0:
        if budget.pieces is not None and not _landings_fit(board, budget.pieces, 0, in_progress):
            return []   # the named pieces are not where this line leaves them (the ambiguity cap counts it not)
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
    own_spare = _bounded(board, target, plies, in_progress)
    if own_spare is None or (budget.pieces is not None and not _landings_fit(board, budget.pieces, plies,
                                                                              in_progress)):
        return []
    key = (repetition_key(board), plies, in_progress)
    known = budget.memo.get(key)
    if known is not None:
        return known
    occ = board.occupied
    out: list[_Suffix] = []
    candidates = _candidates(board, target, plies, occ & ~target, in_progress, must_leave=own_spare == 0)
    if budget.seen is not None:
        lifted, placed = budget.seen
        candidates = [m for m in candidates if lifted >> m.from_square & 1
                      and (placed >> m.to_square & 1 or board.is_castling(m))]
    if budget.reported is not None:
        lifted, placed = budget.reported
        candidates.sort(key=lambda m: not (lifted >> m.from_square & 1 and placed >> m.to_square & 1))
    for move in candidates:
        _spend(budget)
        board.push(move)
        try:
            out += [((move, *moves), final, final_key, under_way)
                    for moves, final, final_key, under_way in _ways(board, target, plies - 1, budget,
                                                                     in_progress=in_progress)]
        finally:
            board.pop()
    out = _capped(out, budget)
    budget.memo[key] = out
    return out


def _en_passant(board: chess.Board) -> bool:
    """Return whether an en passant capture may be made now (the last ply was a double step).

    Only then does the bound need an en passant's extra squares: when the double step is among the plies left,
    the pawn's square it filled is emptied again by the capture, so the two plies change at most the squares a
    ply and a capture do (and the capture's landing square costs the double step's landing)."""
    return board.ep_square is not None


def plies_tried(board: chess.Board, target: chess.Bitboard, plies: int,
                in_progress: bool = False) -> list[chess.Move] | None:
    """Return the plies the search tries from ``board`` with ``plies`` left to leave ``target`` (a move under way
    after them if ``in_progress``), or None when it cuts the position (its bounds: the plies left cannot reach
    the target). What the search does at each position it visits, for checking its bounds."""
    own_spare = _bounded(board, target, plies, in_progress)
    if own_spare is None:
        return None
    return _candidates(board, target, plies, board.occupied & ~target, in_progress, must_leave=own_spare == 0)


def _bounded(board: chess.Board, target: chess.Bitboard, plies: int, in_progress: bool) -> int | None:
    """Return how many squares more the side to move may leave than the target needs (:func:`_leaves_fit`), or
    None when :func:`_spare` or :func:`_leaves_fit` says the target cannot be reached in ``plies`` plies."""
    extra = 2 if in_progress else 0
    if _spare(board, target, plies, extra) is None:
        return None
    mover = board.turn
    return _leaves_fit(board.occupied, board.occupied_co[mover], board.occupied_co[not mover], _castlers(board),
                       target, plies, extra, _en_passant(board))


def _castlers(board: chess.Board) -> chess.Bitboard:
    """Return the pieces of the sides that may still castle."""
    out = 0
    for color in (chess.WHITE, chess.BLACK):
        if board.castling_rights & board.occupied_co[color] & _CASTLING_RANKS:
            out |= board.occupied_co[color]
    return out


def _candidates(board: chess.Board, target: chess.Bitboard, plies: int, empty_now: chess.Bitboard,
                in_progress: bool, *, must_leave: bool) -> list[chess.Move]:
    """Return the legal plies worth trying: those after which the plies left can still reach the target by
    :func:`_spare` and :func:`_leaves_fit` (worked out on the squares, before the ply is made: a ply's cost is
    a move generated, not a position), queen promotions only (an under-promotion leaves the squares a queen's
    does: the queen is assumed, as on the board), castling and en passant always (they change more squares:
    the position after them is bounded once made). ``must_leave``: every ply of the side to move must leave a
    square the target shows empty (:func:`_leaves_fit` has nothing to spare)."""
    occ = board.occupied
    # The plies are generated as the rules allow the pieces to move and bounded on the squares; only those left
    # are checked for leaving the king in check (the costly part), in the order python-chess gives legal moves.
    # In check, the legal moves (evasions) are few: generated as such.
    in_check = board.is_check()
    generate = board.generate_legal_moves if in_check else board.generate_pseudo_legal_moves
    # must leave, or the last ply: it leaves a square the target shows empty (castling moves the king)
    leaving = must_leave or (plies == 1 and not in_progress)
    pool = generate(empty_now | board.kings) if leaving else generate()
    mover = board.turn
    own, other = board.occupied_co[mover], board.occupied_co[not mover]
    kings, pawns = board.kings, board.pawns
    ep_square = board.ep_square
    extra = 2 if in_progress else 0
    left = plies - 1
    captures = occ.bit_count() - target.bit_count()
    # the slack after a ply other than the king's: castling's as now at most, en passant's after a double step
    castling_slack = _castling_slack(board, target)
    castlers = _castlers(board)
    limit = (4 if castlers & other else 3)
    out: list[chess.Move] = []
    for move in pool:
        if move.promotion not in (None, chess.QUEEN):
            continue
        from_bit = chess.BB_SQUARES[move.from_square]
        if from_bit & kings or (move.to_square == ep_square and from_bit & pawns):
            if in_check or not board.is_into_check(move):
                out.append(move)
            continue
        to_bit = chess.BB_SQUARES[move.to_square]
        captured = 1 if to_bit & occ else 0
        after = (occ & ~from_bit) | to_bit
        if left == 0:
            if (0 < (after ^ target).bit_count() <= limit if in_progress else after == target) and (
                    in_check or not board.is_into_check(move)):
                out.append(move)
            continue
        # the bounds of _spare and _leaves_fit for the position after the ply (the other side to move)
        # an en passant may be made after the ply only if it is a double step
        after_en_passant = bool(from_bit & pawns) and abs(move.to_square - move.from_square) == 16
        slack = castling_slack + (_EN_PASSANT_SLACK if after_en_passant else 0)
        after_captures = captures - captured
        if extra:
            if not -2 <= after_captures <= left + 2:
                continue
            spare = 2 * left + slack + extra - (after ^ target).bit_count()
        else:
            if not 0 <= after_captures <= left:
                continue
            spare = 2 * left - after_captures + slack - (after ^ target).bit_count()
        if spare < 0:
            continue
        moved = (own & ~from_bit) | to_bit
        if _leaves_fit(after, other & ~to_bit, moved, castlers, target, left, extra, after_en_passant) is None:
            continue
        if in_check or not board.is_into_check(move):
            out.append(move)
    return out
