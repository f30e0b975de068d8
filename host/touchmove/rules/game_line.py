"""The current game's line: its moves and clock times, the occupancy after each ply, its repetitions and promotions,
and what the engine keeps beside them for the game (the presses as evidence, the plies not seen made).

Everything here belongs to one game: a new game starts a new :class:`GameLine`, a takeback truncates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import chess

from touchmove.rules.footprints import Position
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.outcome import Repetitions
from touchmove.rules.ply_evidence import PlyEvidence

__all__ = [
    "KEPT_PLIES", "Declared", "GameLine", "GameRecovery", "Presses", "Recovered", "RecoveredAlert", "SearchedAgain",
    "UnseenNotes",
]


#: How many of the last plies the square changes are kept for (a re-reading goes back at most this far).
KEPT_PLIES = 5
#: The change log is trimmed when a ply is made and it holds more changes than this.
_CHANGES_TRIMMED_PAST = 96


@dataclass(frozen=True)
class Recovered:
    """Plies were recovered in this game: how many plies it had before (the last sure position) and when the
    board went blind. If the board contradicts them soon after, the recovery is searched again from there.

    ``first``: the ply after the sure position was made when its settle time ran out while the board was blind
    (its rest unseen): the search again begins with it or with its piece slid on further."""

    keep: int
    since: int
    first: tuple[chess.Move, ...] | None = None


@dataclass
class RecoveredAlert:
    """The ``changes_lost`` alert that named recovered plies: the plies (``first``: the number of the first one),
    the ply the alert was raised at and its detail. A recovered ply amended later is named again (:meth:`amend`)."""

    first: int
    moves: list[chess.Move]
    ply: int
    detail: dict[str, object]

    def amend(self, played: list[chess.Move], number: int, move: chess.Move, san: str) -> dict[str, object] | None:
        """Ply ``number`` (one of these, ``played``: the game's plies before the amendment) is now ``move``
        (``san``): return the alert's detail naming it, or None if the game no longer has these plies."""
        index = number - self.first
        if not 0 <= index < len(self.moves) or played[self.first - 1:number] != self.moves[:index + 1]:
            return None
        plies = self.detail.get("plies")
        if not isinstance(plies, list) or len(plies) != len(self.moves):
            return None
        replaced = plies[index]
        self.moves = [*self.moves[:index], move]   # the plies after it, if any, were taken back with it
        self.detail = {**self.detail, "plies": [*plies[:index], san],
                       "amended": {"ply": number, "replaces": replaced, "played": san}}
        self.detail.pop("other_orders", None)
        return self.detail

    def reorder(self, order: list[chess.Move], sans: list[str]) -> dict[str, object]:
        """These plies are now ``order`` (``sans``): the same plies reaching the same position, in the order the
        bridge had published them. Return the alert's detail naming them, and the order they replace."""
        replaced = self.detail.get("plies")
        self.moves = list(order)
        self.detail = {**self.detail, "plies": sans, "order": "published",
                       "amended": {"ply": self.first, "replaces": replaced, "played": sans}}
        self.detail.pop("other_orders", None)
        return self.detail


@dataclass(frozen=True)
class SearchedAgain:
    """The recovery was searched again once in this game: the next correction is the arbiter's resync."""


#: A game's recovery: none yet, plies recovered (may be searched again), or searched again already.
GameRecovery = Recovered | SearchedAgain | None


class Declared(Enum):
    """A game's result declared by a ``result`` record (not seen on the board)."""

    READ_ON = "read on"  # the board's moves are still read: one made withdraws the result (play went on)
    CLEARED = "cleared"  # the board was cleared since: the game is over for good
    #: A claim read from the pieces (``"by": "board"``) the board still shows: moves are read as after READ_ON.
    BOARD_SHOWN = "board shows it"
    #: A claim the board shows no more: moves are read, and the board showing the game's position again
    #: withdraws it (the pieces went back to the game).
    BOARD_GONE = "board shows it no more"


@dataclass(slots=True)
class Presses:
    """The game's clock presses as evidence (6.2): who pressed since the last move, and early answers."""

    pressed: bool = True  # the clock was pressed since the last move
    pressed_at: int = 0  # device time of that press
    #: The last ply was made before the mover of the ply before it pressed his clock (an answer in his time):
    #: the position before that ply and its evidence; and when his press came (None: not yet).
    answered: tuple[Position, PlyEvidence] | None = None
    answered_press: int | None = None
    illegal: dict[chess.Color, int] = field(default_factory=lambda: {chess.WHITE: 0, chess.BLACK: 0})


@dataclass(slots=True)
class UnseenNotes:
    """What the game keeps about plies not seen made (recovered after lost changes, resynced, from snapshots)."""

    recovery: GameRecovery = None  # plies recovered after lost changes, and whether searched again since
    #: The last ply made when its settle time ran out, with no change since (not by a press or a snapshot): its
    #: number and that time. If no record came in by then and the next shows lost changes, its rest went unseen.
    settled_by_time: tuple[int, int] | None = None
    #: The last ply was not seen made (recovered, resynced, read from a snapshot's difference, or made after a
    #: snapshot that may hide lost changes): since when changes may have been lost. Presses prove nothing yet.
    unseen_since: int | None = None
    #: How many plies of this game were recovered after lost changes since the last resync (occupancy cannot prove
    #: every piece's type: presses are no evidence of illegal moves meanwhile).
    recovered_plies: int = 0
    #: The last ``changes_lost`` alert that named recovered plies (one amended later is named again).
    recovered_alert: RecoveredAlert | None = None
    #: The game's plies from its start as the bridge had published them before it restarted (a ``published``
    #: record): plies recovered unseen are taken in that order when it reaches the position they do.
    published: tuple[chess.Move, ...] = ()


@dataclass(slots=True)
class GameLine:
    """The current game's line (``record``: None before the first game) and what the engine keeps beside it."""

    start_occ: chess.Bitboard
    record: GameRecord | None = None
    repetitions: Repetitions = field(default_factory=Repetitions)
    #: Each promotion's ply -> whether the piece is known (else a queen is assumed).
    promotions: dict[int, bool] = field(default_factory=dict)
    occupancies: list[chess.Bitboard] = field(default_factory=list)  # the occupancy after each ply (0: the start)
    presses: Presses = field(default_factory=Presses)
    unseen: UnseenNotes = field(default_factory=UnseenNotes)
    declared: Declared | None = None  # the game's result (when not "*") was declared by a result record, not seen
    #: The last ply amended as moved after release (4.7): its number and the move as released. Provisional: the
    #: board may still show that move was played (its piece stood aside by the opponent capturing it).
    released_on: tuple[int, chess.Move] | None = None
    #: When each position of the game was reached (0: the start; then each ply's time, its piece's release), None
    #: for a ply not seen made (recovered, resynced): a re-reading of the last plies starts no earlier than it.
    reached: list[int | None] = field(default_factory=list)
    #: The square changes seen since about the last :data:`KEPT_PLIES` plies (time, square, occupied; a square of
    #: -1: changes unseen, a snapshot read as several), complete from ``changes_from`` on: what a re-reading of the
    #: last plies must account for (:mod:`touchmove.rules.rereading`).
    changes: list[tuple[int, chess.Square, bool]] = field(default_factory=list)
    changes_from: int = 0
    #: The squares seen to empty and fill again within the chatter time over the same plies (emptied, filled,
    #: square): :meth:`changes_since` puts them among the changes.
    flicks: list[tuple[int, int, chess.Square]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.occupancies.append(self.start_occ)
        start = None if self.record is None else self.record.t_start
        self.reached.append(start)
        self.changes_from = start or 0

    def push(self, move: chess.Move, after: chess.Board, at: int | None = None) -> None:
        """Append a ply that left ``after`` (its clock time unknown; its repetition counted by the caller); ``at``:
        when it was made (None: not seen made)."""
        record = self.record
        assert record is not None
        record.moves.append(move)
        record.clocks.append(None)
        self.occupancies.append(after.occupied)
        self.reached.append(at)
        if len(self.changes) > _CHANGES_TRIMMED_PAST:
            self._trim_changes()

    def note_change(self, t: int, sq: chess.Square, occupied: bool) -> None:
        """Note a square change seen (``sq`` -1: changes not seen one by one)."""
        self.changes.append((t, sq, occupied))

    def note_flick(self, emptied: int, filled: int, sq: chess.Square) -> None:
        """Note a square that emptied and filled again within the chatter time (the chatter filter dropped both
        changes): no change of the board, but what a capture's victim swapped for its piece in one motion leaves."""
        self.flicks.append((emptied, filled, sq))
        if len(self.flicks) > _CHANGES_TRIMMED_PAST:
            del self.flicks[:len(self.flicks) // 2]   # (a sensor flicking on and on, the board at rest)

    def changes_since(self, since: int) -> list[tuple[int, chess.Square, bool]]:
        """Return the square changes seen from device time ``since`` on, oldest first, each flick among them as the
        square emptied and filled again (what a re-reading accounts for)."""
        changes = [change for change in self.changes if change[0] >= since]
        flicks = [flick for flick in self.flicks if flick[0] >= since]
        if not flicks:
            return changes
        for emptied, filled, sq in flicks:
            changes += [(emptied, sq, False), (filled, sq, True)]
        changes.sort(key=lambda change: change[0])     # (stable: changes at one time keep their order)
        return changes

    def _trim_changes(self) -> None:
        """Forget the changes from before the last :data:`KEPT_PLIES` plies (or the older half, if those plies were
        not all seen made)."""
        index = len(self.reached) - 1 - KEPT_PLIES
        since = self.reached[index] if index >= 0 else None
        changes = self.changes
        if since is None:
            since = changes[len(changes) // 2][0]
        cut = next((i for i, change in enumerate(changes) if change[0] >= since), len(changes))
        if cut:
            del changes[:cut]
            self.changes_from = since
        self.flicks = [flick for flick in self.flicks if flick[0] >= since]

    def pop(self) -> None:
        """Remove the last ply, its occupancy and its repetition (it is replaced)."""
        record = self.record
        assert record is not None
        record.moves.pop()
        record.clocks.pop()
        self.occupancies.pop()
        self.reached.pop()
        self.repetitions.remove_last()

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` plies only (a takeback): the game is no longer over."""
        record = self.record
        assert record is not None
        record.truncate(keep)
        del self.occupancies[keep + 1:]
        del self.reached[keep + 1:]
        self.repetitions.rebuild(record.board(0), record.moves)
        for number in [n for n in self.promotions if n > keep]:
            del self.promotions[number]

    def replace_promotion(self, number: int, move: chess.Move, confirmed: bool) -> None:
        """Put ``move`` (the same promotion with another piece) at ply ``number``; ``confirmed``: by a record."""
        record = self.record
        assert record is not None
        record.moves[number - 1] = move
        self.promotions[number] = confirmed
        self.repetitions.rebuild(record.board(0), record.moves)
