"""Domain events: what the rules engine says happened at the board.

Every event turns into one JSON object with ``type`` (the event name), ``game`` and ``t`` (the device time of
the record that caused it). Games count from 1; plies count from 1 within each game.
"""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any, Literal, get_args

from touchmove.values import value

_JSON = json.JSONEncoder(separators=(",", ":"))  # one encoder for every event: json.dumps makes one a call

#: The alert codes (the fixed vocabulary of :data:`ALERT_ARTICLES`).
AlertCode = Literal[
    "touch_move", "castling_rook_first", "castling_obligation", "moved_after_release", "illegal_move",
    "touch_out_of_turn", "promotion_unverified", "board_mismatch", "board_restored", "draw_claimable",
    "changes_lost", "square_flicker",
]
#: Whose piece a touch lifted: the side to move's or the opponent's.
TouchSide = Literal["mover", "opponent"]
#: A side as events name it.
SideName = Literal["white", "black"]

#: The fixed alert vocabulary: code -> the FIDE Laws articles it refers to.
ALERT_ARTICLES: dict[AlertCode, tuple[str, ...]] = {
    "touch_move": ("4.3.1", "4.3.2", "4.3.3"),
    "castling_rook_first": ("4.4.2",),
    "castling_obligation": ("4.4.1", "4.4.3", "4.7.2"),
    "moved_after_release": ("4.7",),
    "illegal_move": ("7.5.1", "7.5.3"),
    "touch_out_of_turn": ("4.2.1", "6.2.5"),
    "promotion_unverified": ("4.4.4", "7.5.2"),
    "board_mismatch": ("7.4",),
    "board_restored": ("7.4",),
    "draw_claimable": ("9.2", "9.3"),
    "changes_lost": ("7.4",),
    "square_flicker": (),   # a board's fault, no player's: raised by the bridge (touchmove.bridge.flicker)
}

#: What each alert means, for people reading alerts (README table, dashboard).
ALERT_MEANINGS: dict[str, str] = {
    "touch_move": "a touched piece that could be moved (or captured) was not",
    "castling_rook_first": "castling was made by touching the rook before the king",
    "castling_obligation": "king then rook touched, or king released on its castling square, without castling",
    "moved_after_release": "a piece released on a legal square was moved on to another square",
    "illegal_move": "an illegal move completed by a clock press, or a press without a move",
    "touch_out_of_turn": "a piece of the player not having the move was lifted and put back",
    "promotion_unverified": "the promotion piece cannot be seen by the board: queen assumed until confirmed",
    "board_mismatch": "the board shows no legal continuation of the game (extra and missing squares)",
    "board_restored": "the board shows the game position again",
    "draw_claimable": "a draw may be claimed: threefold repetition or fifty-move rule",
    "changes_lost": "the board's changes were lost for a while: the plies recovered, or the candidates to resync",
    "square_flicker": "a square changes faster than any hand (a failing sensor, a misread square): its changes are "
                      "coalesced until it is quiet; check the square",
}


@value
class Event:
    """Base of all events: the game it belongs to and the device time it happened at."""

    game: int
    t: int

    @property
    def type(self) -> str:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """Return the event as a JSON-ready object with its ``type`` first."""
        out: dict[str, Any] = {"type": self.type}
        for name in self.__dataclass_fields__:
            out[name] = getattr(self, name)
        return out

    def to_json(self) -> str:
        """Return the event as one compact JSON line (without the newline)."""
        return _JSON.encode(self.to_dict())


@value
class GameStart(Event):
    fen: str
    chess960: bool = False

    @property
    def type(self) -> str:
        return "game_start"


@value
class Touch(Event):
    """A piece lifted during a ply: ``side`` is ``mover`` or ``opponent``; ``binds`` if it creates a 4.3 duty."""

    ply: int
    sq: str
    piece: str
    side: TouchSide
    binds: bool

    @property
    def type(self) -> str:
        return "touch"

    def to_json(self) -> str:
        """Return the event as one compact JSON line (the most frequent event: written without the encoder)."""
        # Numbers, a boolean and names from fixed alphabets (squares, piece letters, mover/opponent): nothing to
        # escape. Tests hold this to the encoder's output.
        return (f'{{"type":"touch","game":{self.game},"t":{self.t},"ply":{self.ply},"sq":"{self.sq}",'
                f'"piece":"{self.piece}","side":"{self.side}","binds":{"true" if self.binds else "false"}}}')


@value
class MoveMade(Event):
    ply: int
    uci: str
    san: str
    fen: str

    @property
    def type(self) -> str:
        return "move"

    def to_json(self) -> str:
        """Return the event as one compact JSON line (one a ply: written without the encoder)."""
        # UCI, SAN and FEN use fixed alphabets (letters, digits, "/+#=-" and spaces): nothing to escape.
        return (f'{{"type":"{self.type}","game":{self.game},"t":{self.t},"ply":{self.ply},"uci":"{self.uci}",'
                f'"san":"{self.san}","fen":"{self.fen}"}}')


@value
class RecoveredMove(MoveMade):
    """A ``move`` not seen being made: recovered after lost changes, or given by an arbiter's resync."""

    recovered: bool = True

    def to_json(self) -> str:
        """Return the event as one compact JSON line."""
        return _JSON.encode(self.to_dict())


@value
class MoveAmended(MoveMade):
    """Ply ``ply`` was replaced by this move (rook-first castling, moved after release, promotion piece)."""

    @property
    def type(self) -> str:
        return "move_amended"


@value
class AmendmentWithdrawn(Event):
    """The amendment of ply ``ply`` to ``withdrawn`` (and its ``alert``, if it raised one) is withdrawn: later
    changes showed the move as first read, ``uci``, was played (a ``move_amended`` back to it comes just before)."""

    ply: int
    uci: str
    withdrawn: str
    alert: str | None = None

    @property
    def type(self) -> str:
        return "amendment_withdrawn"


@value
class ClockPress(Event):
    """A clock press completing ply ``ply``; ``remaining`` ms on the presser's clock where the board tells it."""

    ply: int
    side: SideName
    remaining: int | None = None

    @property
    def type(self) -> str:
        return "clock"

    def to_json(self) -> str:
        """Return the event as one compact JSON line (one a ply on boards with clocks: written without the encoder)."""
        remaining = "null" if self.remaining is None else self.remaining
        return (f'{{"type":"clock","game":{self.game},"t":{self.t},"ply":{self.ply},"side":"{self.side}",'
                f'"remaining":{remaining}}}')


@value
class Takeback(Event):
    """Plies ``ply`` and later were removed: the board was restored to the position before ``ply``."""

    ply: int
    fen: str = ""

    @property
    def type(self) -> str:
        return "takeback"


@value
class Alert(Event):
    """Something for the arbiter, never an automatic penalty."""

    code: AlertCode
    ply: int
    article: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return "alert"


@value
class GameEnd(Event):
    result: str
    reason: str
    article: str

    @property
    def type(self) -> str:
        return "game_end"


@value
class DeclaredEnd(GameEnd):
    """A ``game_end`` the board cannot see (resignation, time, agreement), declared by ``by`` (a ``result``
    record: the arbiter or the operator)."""

    by: str = "arbiter"


@value
class ResultRejected(Event):
    """A declared ``result`` that was not applied: ``reason`` says why (no game on, another result seen)."""

    reason: str
    result: str
    declared: str

    @property
    def type(self) -> str:
        return "result_rejected"


@value
class GameResumed(Event):
    """The game end announced before ply ``ply`` is withdrawn: the board showed play going on (a promoted piece
    other than the one assumed, an amended move, a move made after a declared result); the result is ``*``
    again."""

    ply: int

    @property
    def type(self) -> str:
        return "game_resumed"


@value
class ResyncRejected(Event):
    """An arbiter's ``resync`` that was not applied: ``reason`` says why (an illegal move, another occupancy)."""

    reason: str
    moves: list[str] = field(default_factory=list)
    fen: str | None = None

    @property
    def type(self) -> str:
        return "resync_rejected"


assert set(get_args(AlertCode)) == set(ALERT_ARTICLES) == set(ALERT_MEANINGS), "every alert code has its articles"


def side_name(color: bool) -> SideName:
    """Return how events name a side (``chess.WHITE`` is True)."""
    return "white" if color else "black"
