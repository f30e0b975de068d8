"""The recording format: one JSON object per line.

The firmware streams these objects over serial and ``touchmove replay`` reads them back, so any capture from a
board replays. Every record has ``t`` (integer device milliseconds, non-decreasing) and ``type``:

========== ================================ ==========================================================
type       fields                           meaning
========== ================================ ==========================================================
lift       ``sq`` ("a1".."h8")              a square became empty
place      ``sq``, optional ``piece``         a square became occupied (``piece``: FEN letter, if the board knows)
snapshot   ``occ`` (16 hex digits)          the whole occupancy; bit i is square i, a1 = 0 ... h8 = 63
heartbeat  ``occ``                          the firmware's periodic occupancy report (same meaning)
promote    ``piece`` (q, r, b, n)           the piece chosen for the latest promotion
clock      ``side`` (white, black)          a clock press; optional ``remaining`` ms on that clock, and
                                            ``late_ms``: the press was read up to that long after it was
                                            made (a DGT clock through the board: it times the ply, it is
                                            no evidence of which move it completes)
setup      ``fen``, optional ``chess960``   the next game starts from that position once the board matches
takeback   ``ply``                          operator correction: plies >= ``ply`` are removed
resync     ``moves`` (SAN/UCI) or ``fen``   arbiter's correction: the plies since the last sure position,
                                            or the position now; the current game goes on
result     ``result``, ``reason``,          arbiter's declaration of how the game ended where the board
           optional ``by``                  cannot see it (resignation, time, agreement); ``"by":
                                            "board"``: a vendor board's adapter read it from the pieces
                                            (kings in the centre, a result piece), a claim the board may
                                            withdraw (``result`` ``*``: no longer shown)
published  ``moves`` (SAN/UCI)              the bridge's: the current game's plies from its start as it
                                            had published them before a restart (read back from the
                                            broker), evidence of the order of plies recovered unseen
========== ================================ ==========================================================

Numbers are range-checked: ``t`` is 0 .. 2**40 ms (about 35 years), ``remaining`` 0 .. 100 hours, ``late_ms`` 0 ..
60,000, ``ply``
1 .. 10000, ``occ`` exactly hex digits, ``reason`` 1 .. 40 characters; a value outside raises
:class:`OutOfRange` (a :class:`RecordError`).

Other keys (``seq``, ``board``, ...) are allowed and ignored here. The serial protocol's other messages
(``hello``, ``pong``, ``error``, ``button``) are known but carry nothing for the rules engine; any other type
is unknown and skipped with a warning by the readers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, Literal

import chess

from touchmove.values import value

PIECE_LETTERS = ("q", "r", "b", "n")
#: The most plies one ``resync`` record may give.
MAX_RESYNC_MOVES = 600
#: The most plies one ``published`` record may give (a game's, from its start).
MAX_PUBLISHED_MOVES = 1200
_PIECE_TYPES = {"q": chess.QUEEN, "r": chess.ROOK, "b": chess.BISHOP, "n": chess.KNIGHT}
_SQUARES = {name: sq for sq, name in enumerate(chess.SQUARE_NAMES)}
_PIECE_LETTERS = frozenset("PNBRQKpnbrqk")

#: Largest device time accepted (ms): 2**40 ms is about 35 years of uptime, far below SQLite's 64-bit integers
#: even after the bridge adds its reboot offsets.
MAX_T = 2**40
#: Largest clock reading accepted (ms): 100 hours.
MAX_REMAINING_MS = 100 * 3600 * 1000
#: Largest ``late_ms`` a clock record may give (ms).
MAX_LATE_MS = 60_000
#: Largest ply a takeback may name.
MAX_PLY = 10_000
#: Longest FEN accepted in a setup record.
MAX_FEN = 200
#: The results a ``result`` record may declare.
RESULTS = ("1-0", "0-1", "1/2-1/2")
#: Longest ``reason`` a ``result`` record may give.
MAX_REASON = 40
_HEX = re.compile(r"[0-9a-fA-F]{1,16}")

#: Types the firmware sends that the rules engine has no use for (accepted silently).
PROTOCOL_ONLY_TYPES = frozenset({"hello", "pong", "error", "button", "diag"})


class RecordError(ValueError):
    """A line that is not a valid record; ``lineno`` is 1-based where known."""

    def __init__(self, message: str, lineno: int | None = None) -> None:
        self.lineno = lineno
        self.reason = message
        super().__init__(f"line {lineno}: {message}" if lineno is not None else message)


class OutOfRange(RecordError):
    """A record whose numbers are well-formed but outside the accepted range."""


def int_in_range(obj: dict[str, Any], name: str, low: int, high: int, what: str) -> int:
    """Return ``obj[name]`` if it is an integer (not a bool) in ``low..high``; raise otherwise."""
    value = obj.get(name)
    if type(value) is not int:  # bool is an int to isinstance
        raise RecordError(f"{name!r} must be an integer ({what})")
    if not low <= value <= high:
        raise OutOfRange(f"{name!r} out of range: {value} not in {low}..{high} ({what})")
    return value


@value
class Lift:
    t: int
    sq: chess.Square
    type: Literal["lift"] = "lift"


@value
class Place:
    t: int
    sq: chess.Square
    type: Literal["place"] = "place"
    piece: str | None = None     # the piece put down (FEN letter), from a board that knows it


@value
class Snapshot:
    """A full occupancy report (``snapshot`` or ``heartbeat``)."""

    t: int
    occ: chess.Bitboard
    type: Literal["snapshot", "heartbeat"] = "snapshot"
    pieces: str | None = None    # the pieces (FEN placement), from a board that knows them


@value
class Promote:
    t: int
    piece: chess.PieceType
    type: Literal["promote"] = "promote"


@value
class Clock:
    t: int
    side: chess.Color
    remaining: int | None = None
    type: Literal["clock"] = "clock"
    #: The press was read up to this long after it was made (ms; None: at once).
    late_ms: int | None = None


@value
class Setup:
    t: int
    fen: str
    chess960: bool = False
    type: Literal["setup"] = "setup"


@value
class TakebackRequest:
    """An operator's correction: remove plies ``ply`` and later (the board must then show that position)."""

    t: int
    ply: int
    type: Literal["takeback"] = "takeback"


@value
class Resync:
    """An arbiter's resync of the current game: the plies played since the last position the engine is sure of
    (SAN or UCI, in order), or the position the board shows now (``fen``)."""

    t: int
    moves: tuple[str, ...] = ()
    fen: str | None = None
    type: Literal["resync"] = "resync"


@value
class Result:
    """An arbiter's (or operator's) declaration that the current game ended with ``result`` for ``reason``
    (``resignation``, ``time``, ``agreement``, ...): an end the board cannot see."""

    t: int
    result: str
    reason: str
    #: None: the arbiter's (or operator's); ``"board"``: read from the pieces by a vendor board's adapter (a
    #: claim, ``*`` when the pieces no longer show it).
    by: Literal["board"] | None = None
    type: Literal["result"] = "result"


@value
class Published:
    """The bridge's evidence after a restart: the current game's plies (SAN or UCI, from its start) as the bridge had
    published them before (read back from the broker's retained PGN). The board cannot tell orders of the same
    plies apart; this tells the order consumers were given."""

    t: int
    moves: tuple[str, ...]
    type: Literal["published"] = "published"


@value
class Other:
    """A record of a type the rules engine does not use (``hello``, ``button``, or an unknown type)."""

    t: int
    type: str
    fields: tuple[tuple[str, Any], ...] = ()

    @property
    def known(self) -> bool:
        """Whether the type is part of the serial protocol (not an unknown type)."""
        return self.type in PROTOCOL_ONLY_TYPES


Record = Lift | Place | Snapshot | Promote | Clock | Setup | TakebackRequest | Resync | Result | Published | Other


def _square(obj: dict[str, Any]) -> chess.Square:
    name = obj.get("sq")
    if not isinstance(name, str):
        raise RecordError("'sq' must be a square name such as \"e4\"")
    sq = _SQUARES.get(name)
    if sq is None:
        sq = _SQUARES.get(name.lower())
        if sq is None:
            raise RecordError(f"'sq' is not a square: {name!r}")
    return sq


def _occupancy(obj: dict[str, Any]) -> chess.Bitboard:
    occ = obj.get("occ")
    if not isinstance(occ, str) or not _HEX.fullmatch(occ):
        # int(x, 16) alone would take "-1", " ff" and "f_f"
        raise RecordError(f"'occ' must be 1 to 16 hexadecimal digits (bit 0 = a1): {str(occ)[:20]!r}")
    return int(occ, 16)


def _pieces(obj: dict[str, Any]) -> str | None:
    pieces = obj.get("pieces")
    if pieces is None:
        return None
    try:
        if not isinstance(pieces, str) or len(pieces) > MAX_FEN:
            raise ValueError(pieces)
        chess.BaseBoard(pieces)
    except ValueError:
        raise RecordError("'pieces' must be a FEN piece placement") from None
    return pieces


def fen_problem(fen: str, chess960: bool = False) -> str | None:
    """Return why a FEN cannot start a game (not FEN, no king, an impossible position), or None when it can."""
    try:
        board = chess.Board(fen, chess960=chess960)
    except ValueError as exc:
        return str(exc)
    status = board.status()
    if status == chess.STATUS_VALID:
        return None
    flags = [flag.name.lower().replace("_", " ") for flag in chess.Status if flag and flag in status and flag.name]
    return "illegal position: " + ", ".join(flags)


def from_dict(obj: Any) -> Record:
    """Return the record for a decoded JSON object, or raise :class:`RecordError`."""
    if not isinstance(obj, dict):
        raise RecordError("a record must be a JSON object")
    t = int_in_range(obj, "t", 0, MAX_T, "device milliseconds")
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise RecordError("'type' must be a string")
    if kind == "lift":
        return Lift(t, _square(obj))
    if kind == "place":
        piece = obj.get("piece")
        if piece is not None and (not isinstance(piece, str) or piece not in _PIECE_LETTERS):
            raise RecordError("'piece' must be a FEN piece letter (PNBRQK, pnbrqk)")
        return Place(t, _square(obj), piece=piece)
    if kind in ("snapshot", "heartbeat"):
        return Snapshot(t, _occupancy(obj), "snapshot" if kind == "snapshot" else "heartbeat", _pieces(obj))
    if kind == "promote":
        piece = obj.get("piece")
        if not isinstance(piece, str) or piece.lower() not in _PIECE_TYPES:
            raise RecordError("'piece' must be one of q, r, b, n")
        return Promote(t, _PIECE_TYPES[piece.lower()])
    if kind == "clock":
        side = obj.get("side")
        if side not in ("white", "black"):
            raise RecordError("'side' must be \"white\" or \"black\"")
        remaining = obj.get("remaining")
        if remaining is not None:
            remaining = int_in_range(obj, "remaining", 0, MAX_REMAINING_MS, "milliseconds on the clock")
        late_ms = None
        if obj.get("late_ms") is not None:
            late_ms = int_in_range(obj, "late_ms", 0, MAX_LATE_MS, "milliseconds the press may be late")
        return Clock(t, side == "white", remaining, late_ms=late_ms)
    if kind == "setup":
        fen = obj.get("fen")
        chess960 = obj.get("chess960", False)
        if not isinstance(fen, str) or not isinstance(chess960, bool):
            raise RecordError("'setup' needs 'fen' (string) and optional 'chess960' (boolean)")
        if len(fen) > MAX_FEN:
            raise OutOfRange(f"'fen' longer than {MAX_FEN} characters")
        problem = fen_problem(fen, chess960)
        if problem is not None:
            raise RecordError(f"invalid FEN: {problem}")
        return Setup(t, fen, chess960)
    if kind == "takeback":
        return TakebackRequest(t, int_in_range(obj, "ply", 1, MAX_PLY, "the first ply to remove"))
    if kind == "resync":
        return _resync(t, obj)
    if kind == "result":
        return _result(t, obj)
    if kind == "published":
        return Published(t, _moves(obj, MAX_PUBLISHED_MOVES))
    fields = tuple((k, v) for k, v in obj.items() if k not in ("t", "type"))
    return Other(t, kind, fields)


def _resync(t: int, obj: dict[str, Any]) -> Resync:
    moves, fen = obj.get("moves"), obj.get("fen")
    if (moves is None) == (fen is None):
        raise RecordError("'resync' needs either 'moves' (a list of SAN or UCI moves) or 'fen'")
    if fen is not None:
        if not isinstance(fen, str):
            raise RecordError("'fen' must be a string")
        try:
            chess.Board(fen, chess960=True)
        except ValueError as exc:
            raise RecordError(f"invalid FEN: {exc}") from None
        return Resync(t, fen=fen)
    return Resync(t, _moves(obj, MAX_RESYNC_MOVES))


def _moves(obj: dict[str, Any], most: int) -> tuple[str, ...]:
    """Return ``obj["moves"]``, a list of at most ``most`` SAN or UCI moves, or raise :class:`RecordError`."""
    moves = obj.get("moves")
    if not isinstance(moves, list) or not all(isinstance(m, str) and 0 < len(m) <= 12 for m in moves):
        raise RecordError("'moves' must be a list of SAN or UCI moves such as [\"Nf3\", \"e7e5\"]")
    if len(moves) > most:
        raise RecordError(f"'moves' may hold at most {most} moves")
    return tuple(moves)


def _result(t: int, obj: dict[str, Any]) -> Result:
    result, reason, by = obj.get("result"), obj.get("reason"), obj.get("by")
    if by not in (None, "board"):
        raise RecordError("'by' may only be \"board\" (a result read from the pieces)")
    if result not in RESULTS and not (by == "board" and result == "*"):
        raise RecordError(f"'result' must be one of {', '.join(RESULTS)}")
    if not isinstance(reason, str) or not reason.strip():
        raise RecordError("'reason' must be a short text such as \"resignation\", \"time\" or \"agreement\"")
    if len(reason) > MAX_REASON or not reason.isprintable():
        raise OutOfRange(f"'reason' must be at most {MAX_REASON} printable characters")
    return Result(t, str(result), reason.strip(), "board" if by == "board" else None)


def parse_line(line: str | bytes, lineno: int | None = None) -> Record:
    """Return the record on one line of JSON, or raise :class:`RecordError` naming the line."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"not JSON ({exc})", lineno) from None
    try:
        return from_dict(obj)
    except RecordError as exc:
        raise type(exc)(exc.reason, lineno) from None


def to_dict(record: Record) -> dict[str, Any]:
    """Return the JSON object for a record (the inverse of :func:`from_dict`)."""
    out: dict[str, Any] = {"t": record.t, "type": record.type}
    match record:
        case Lift(sq=sq):
            out["sq"] = chess.square_name(sq)
        case Place(sq=sq, piece=piece):
            out["sq"] = chess.square_name(sq)
            if piece is not None:
                out["piece"] = piece
        case Snapshot(occ=occ, pieces=pieces):
            out["occ"] = format_occupancy(occ)
            if pieces is not None:
                out["pieces"] = pieces
        case Promote(piece=piece):
            out["piece"] = chess.piece_symbol(piece)
        case Clock(side=side, remaining=remaining, late_ms=late_ms):
            out["side"] = "white" if side else "black"
            if remaining is not None:
                out["remaining"] = remaining
            if late_ms is not None:
                out["late_ms"] = late_ms
        case Setup(fen=fen, chess960=chess960):
            out["fen"] = fen
            if chess960:
                out["chess960"] = True
        case TakebackRequest(ply=ply):
            out["ply"] = ply
        case Resync(moves=moves, fen=fen):
            if fen is not None:
                out["fen"] = fen
            else:
                out["moves"] = list(moves)
        case Result(result=result, reason=reason, by=by):
            out["result"] = result
            out["reason"] = reason
            if by is not None:
                out["by"] = by
        case Published(moves=moves):
            out["moves"] = list(moves)
        case Other(fields=fields):
            out.update(fields)
    return out


def to_line(record: Record) -> str:
    """Return a record as one compact JSON line (without the newline)."""
    return json.dumps(to_dict(record), separators=(",", ":"))


def format_occupancy(occ: chess.Bitboard) -> str:
    """Return an occupancy bitboard as 16 lowercase hex digits."""
    return f"{occ & chess.BB_ALL:016x}"


@value
class Problem:
    """A line that was skipped while reading a recording."""

    lineno: int
    message: str


def read(lines: Iterable[str | bytes]) -> Iterator[Record | Problem]:
    """Yield the records of a recording in order, and a :class:`Problem` for each line that was skipped.

    Blank lines are ignored. A line that is not a valid record, a record of an unknown type and a time that
    runs backwards are reported and skipped; nothing else is lost.
    """
    last_t = 0
    for lineno, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text or text.isspace():
            continue
        try:
            record = parse_line(text, lineno)
        except RecordError as exc:
            yield Problem(lineno, exc.reason)
            continue
        if isinstance(record, Other):
            if not record.known:
                yield Problem(lineno, f"unknown record type {record.type!r} skipped")
            continue
        if record.t < last_t:
            # A rebooted board restarts its clock: keep the record, on the last time seen.
            yield Problem(lineno, f"time runs backwards ({record.t} < {last_t}); read as {last_t}")
            record = replace(record, t=last_t)
        last_t = record.t
        yield record
