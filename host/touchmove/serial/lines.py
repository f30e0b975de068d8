"""A board's lines, wire protocol v1 (NDJSON): cut from the byte stream (:class:`LineSplitter`) and decoded into
recording-format records (:func:`decode`). Pure: no port, no thread, so they can be fuzzed; the port itself is
:mod:`touchmove.serial.link`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import chess

from touchmove import board_ids, records
from touchmove.serial.line_check import Check, check_line

#: Longest line accepted from a board (a snapshot with every field is about 80 bytes).
MAX_LINE = 512

#: Button ids that are clock presses, and the side that pressed.
CLOCK_BUTTONS = {"clock_white": chess.WHITE, "clock_black": chess.BLACK}


class LineSplitter:
    """Cuts a byte stream into lines (``\\n`` or ``\\r\\n``); a line over ``max_line`` is dropped whole.

    :meth:`feed` returns the complete lines, each as bytes; ``None`` in the list stands for an oversized line
    (reported by the caller as malformed, so it triggers a resync).
    """

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._overflow = False

    def feed(self, data: bytes) -> list[bytes | None]:
        out: list[bytes | None] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                chunk = data[start:]
                if not self._overflow:
                    self._buf += chunk
                    if len(self._buf) > self.max_line:
                        self._buf.clear()
                        self._overflow = True
                return out
            chunk = data[start:end]
            start = end + 1
            if self._overflow or len(self._buf) + len(chunk) > self.max_line:
                out.append(None)
            else:
                line = bytes(self._buf + chunk).rstrip(b"\r")
                if line.strip():
                    out.append(line)
            self._buf.clear()
            self._overflow = False


@dataclass(frozen=True)
class Message:
    """One decoded line from a board."""

    record: records.Record | None   # what the rules engine gets (None for protocol-only messages)
    kind: str                       # the message type (``hello``, ``lift``, ``button`` ...)
    seq: int | None = None
    t: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    checked: bool = False           # the line carried a check (``ck``, :mod:`touchmove.serial.line_check`) that held


#: Largest message counter accepted (the firmware counts per boot from 0).
MAX_SEQ = 2**40
#: Longest boot id accepted in a hello.
MAX_BOOT = 64
#: Fastest clock a simulated board may say it runs (device ms per real ms; a real board says nothing: 1).
MAX_RATE = 1000


#: Longest firmware identification accepted in a hello (``fw``: name and version, e.g. ``touchmove-fw/0.1.0``).
MAX_FW = 64
#: What a board may send (docs/recording-format.md): sensor changes, snapshots, its buttons, clock and promotion
#: choice, protocol messages. Operator records (result, takeback, resync, setup) come only through the
#: authenticated MQTT command path (:mod:`touchmove.bridge.commands`), never from a serial port.
FROM_BOARD = frozenset({"lift", "place", "snapshot", "heartbeat", "clock", "promote", *records.PROTOCOL_ONLY_TYPES})
#: What the host's own adapter of a vendor's board (:mod:`touchmove.boards`) may add to that, read from the pieces
#: the board reports: a Chess960 start array set up (``setup``), a result shown with the kings or DGT's result
#: pieces (``result``). The adapter writes these itself; the board's bytes can only show pieces, never send them.
FROM_BOARD_ADAPTER = FROM_BOARD | {"setup", "result"}


class DecodeError(ValueError):
    """A line that is not a valid message; ``out_of_range`` when it is well-formed but a number is not
    plausible (the bridge logs those as errors)."""

    def __init__(self, message: str, *, out_of_range: bool = False) -> None:
        super().__init__(message)
        self.out_of_range = out_of_range


class BoardIdRefused(DecodeError):
    """A ``hello`` whose board id breaks the rule of :mod:`touchmove.board_ids`; ``claimed`` is what it said."""

    def __init__(self, claimed: object) -> None:
        super().__init__(f"'hello' board id {board_ids.shown(claimed)} refused: {board_ids.id_problem(claimed)}")
        self.claimed = claimed


class OperatorRecordRefused(DecodeError):
    """A record only an operator may give (result, takeback, resync, setup) came from a serial port."""


class CheckFailed(DecodeError):
    """A line whose check (``ck``) does not hold, or a line without one from a board whose lines carry it: bytes
    lost or lines run together on the way (the bridge counts it and asks for a snapshot)."""


def decode(line: bytes | None, accepts: frozenset[str] = FROM_BOARD, *, checked: bool = False) -> Message:
    """Return the message on one line from a board, or raise :class:`DecodeError`; a record whose type is not
    in ``accepts`` (what the port's kind of board may give) is :class:`OperatorRecordRefused`, a line whose
    check fails :class:`CheckFailed`. ``checked``: this board's lines carry a check (it sent one that held), so
    a line without one is refused too, unless it is a ``hello`` (the board restarted into older firmware)."""
    if line is None:
        raise DecodeError(f"line longer than {MAX_LINE} bytes dropped")
    check = check_line(line)
    if check is Check.BAD:
        raise CheckFailed("the line's check (ck) does not match its bytes: lost or spliced on the way")
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DecodeError("not a JSON object")
    if check is Check.NONE and ("ck" in obj or (checked and obj.get("type") != "hello")):
        raise CheckFailed("a line without its check (ck) where the board's lines carry one: cut on the way")
    msg = _decode_object(obj, accepts)
    return replace(msg, checked=True) if check is Check.GOOD else msg


def _decode_object(obj: dict[str, Any], accepts: frozenset[str]) -> Message:
    seq = obj.get("seq")
    try:
        if seq is not None:
            seq = records.int_in_range(obj, "seq", 0, MAX_SEQ, "message counter")
        record = records.from_dict(obj)
    except records.RecordError as exc:
        raise DecodeError(exc.reason, out_of_range=isinstance(exc, records.OutOfRange)) from None
    kind = record.type
    if kind not in accepts and not isinstance(record, records.Other):
        raise OperatorRecordRefused(f"{kind!r} records come only from an operator (the MQTT set command), "
                                    "never from a board's port")
    fields = {k: v for k, v in obj.items() if k not in ("t", "type", "seq", "ck")}
    if isinstance(record, records.Other):
        if kind == "hello":
            board = obj.get("board")
            if not board_ids.is_board_id(board):
                raise BoardIdRefused(board)
            if obj.get("proto") != 1:
                raise DecodeError(f"unsupported protocol {obj.get('proto')!r} (this host speaks 1)")
            fw = obj.get("fw")
            if fw is not None and (not isinstance(fw, str) or len(fw) > MAX_FW or not fw.isprintable()
                                   or not fw.isascii()):
                raise DecodeError(f"'fw' must be printable ASCII of at most {MAX_FW} characters")
            fields["fw"] = fw
            boot = obj.get("boot", "")
            if type(boot) not in (str, int) or len(str(boot)) > MAX_BOOT:
                raise DecodeError(f"'boot' must be a string or integer of at most {MAX_BOOT} characters")
            fields["boot"] = str(boot)
            rate = obj.get("rate", 1)
            if type(rate) not in (int, float):
                raise DecodeError("'rate' (a simulation's device ms per real ms) must be a number")
            if not 1 <= rate <= MAX_RATE:
                raise DecodeError(f"'rate' {rate!r} out of range (1 to {MAX_RATE})", out_of_range=True)
            fields["rate"] = float(rate)
            return Message(None, kind, seq, record.t, fields)
        if kind == "button":
            button = obj.get("id")
            side = CLOCK_BUTTONS.get(button) if isinstance(button, str) else None
            if side is not None:
                return Message(records.Clock(record.t, side), "clock", seq, record.t, fields)
            return Message(None, kind, seq, record.t, fields)
        if not record.known:
            raise DecodeError(f"unknown message type {kind!r}")
        return Message(None, kind, seq, record.t, fields)
    return Message(record, kind, seq, record.t, fields)
