"""DGT electronic boards (serial or USB serial, 9600 8N1): framing, messages, and the translator to records.

Facts from DGT's protocol description (``dgtbrd.h``; its use is restricted: see docs/boards.md). Commands are
single bytes; replies start with a 3-byte header: the message id with the top bit set, then the total length
(header included) as 14 bits in two 7-bit bytes; every data byte has its top bit clear. Squares are numbered
a8 = 0, b8 = 1 ... h1 = 63 as the board lies (a board set up rotated numbers them the other way round: the
adapter detects that from the start position). Piece codes: 0 empty, 1-6 white P R N B K Q, 7-12 black, 13-15
the result pieces (draw, white wins, black wins).

The board scans its squares one by one (200-250 ms a scan) and reports every change as a field update with
no time: the host stamps it. So a capture can show as a code changing with no empty between, the old square may
clear after the new one fills, a slid piece shows on squares it crosses: the rules engine reads occupancy
changes in that order as it does for touchmove's own boards (its settle time and its slide and overlap
readings), and the adapter gives it the pieces.

The board keeps every change in a cyclic EEPROM log (8 kB) whether a host listens or not. After a reconnection
the translator reads it (``DGT_SEND_EE_MOVES``) and replays the changes made while the port was closed, before
the board dump that follows (which would otherwise be read as lost changes).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from touchmove.boards.adapter import RESULTS, Content
from touchmove.boards.base import ProtocolError, Translator, board_id

log = logging.getLogger("touchmove.boards.dgt")

# -- commands (host to board) ----------------------------------------------------------------------------------
SEND_RESET = 0x40
SEND_CLK = 0x41
SEND_BRD = 0x42
SEND_UPDATE = 0x43
SEND_UPDATE_BRD = 0x44
RETURN_SERIALNR = 0x45
SEND_EE_MOVES = 0x49
SEND_UPDATE_NICE = 0x4B
SEND_VERSION = 0x4D

# -- messages (board to host): id | 0x80 ----------------------------------------------------------------------
MESSAGE_BIT = 0x80
MSG_BOARD_DUMP = MESSAGE_BIT | 0x06
MSG_BWTIME = MESSAGE_BIT | 0x0D
MSG_FIELD_UPDATE = MESSAGE_BIT | 0x0E
MSG_EE_MOVES = MESSAGE_BIT | 0x0F
MSG_BUSADRES = MESSAGE_BIT | 0x10
MSG_SERIALNR = MESSAGE_BIT | 0x11
MSG_TRADEMARK = MESSAGE_BIT | 0x12
MSG_VERSION = MESSAGE_BIT | 0x13
MSG_BOARD_DUMP_50B = MESSAGE_BIT | 0x14
MSG_BOARD_DUMP_50W = MESSAGE_BIT | 0x15
MSG_BATTERY_STATUS = MESSAGE_BIT | 0x20
MSG_LONG_SERIALNR = MESSAGE_BIT | 0x22
#: The total sizes (header included) DGT has published for the messages of fixed size. The serial number comes
#: in two: 8 bytes (5 digits, as ``dgtbrd.h`` gives it) and 12 (5 digits, a space and the version "1.0", as
#: many boards answer).
FIXED_SIZES: dict[int, frozenset[int]] = {
    MSG_BOARD_DUMP: frozenset({67}), MSG_BWTIME: frozenset({10}), MSG_FIELD_UPDATE: frozenset({5}),
    MSG_BUSADRES: frozenset({5}), MSG_SERIALNR: frozenset({8, 12}), MSG_VERSION: frozenset({5}),
    MSG_BOARD_DUMP_50B: frozenset({53}), MSG_BOARD_DUMP_50W: frozenset({53}),
    MSG_BATTERY_STATUS: frozenset({7, 12}), MSG_LONG_SERIALNR: frozenset({13})}
#: Messages of variable size and their largest total size; the EEPROM dump is the largest (0x2000 - 0x100 + 3).
VARIABLE = {MSG_EE_MOVES: 0x2000, MSG_TRADEMARK: 256 + 3}
#: The largest total size believed of a message whose id DGT has not published here (a newer board's): framed by
#: its header, skipped and counted (:attr:`FrameDecoder.unknown`).
UNKNOWN_LIMIT = 256
HEADER = 3
#: The engine's settle time for a DGT board at least (ms): a scan takes up to 250 ms, so a piece slid over a
#: square is seen there for a whole scan; 300 reads slides as slides (bench/boards.py: 300 of 300 shared games
#: exact against 294 with 200).
MIN_SETTLE_MS = 300
#: Sent once the board has answered: version, the EEPROM log (changes made while no host listened), the board,
#: the clock, then field updates and clock times as they change.
SETUP = bytes((SEND_VERSION, SEND_EE_MOVES, SEND_BRD, SEND_CLK, SEND_UPDATE_NICE))
#: A clock press is told this long (ms) after it arrives: the placement before it may still be in the scan.
CLOCK_AFTER_SCAN_MS = 300
#: A press reaches the board up to this long (ms) after it was made: the board reads the clock about once a
#: second. Told with the press (``late_ms``), the engine takes it for the ply's time, never as which move it ends.
CLOCK_READ_MS = 1000

# -- EEPROM log ---------------------------------------------------------------------------------------------------
EE_POWERUP = 0x6A
EE_EOF = 0x6B
EE_FOURROWS = 0x6C
EE_EMPTYBOARD = 0x6D
EE_DOWNLOADED = 0x6E
EE_BEGINPOS = 0x6F
EE_BEGINPOS_ROT = 0x7A
EE_NOP = 0x7F
EE_NOP2 = 0x00

#: Piece codes to contents (FEN letters; 13-15 the result pieces).
CODES: dict[int, Content] = {0: None, **{i + 1: c for i, c in enumerate("PRNBKQprnbkq")},
                             13: "1/2-1/2", 14: "1-0", 15: "0-1"}
CONTENT_CODES = {c: code for code, c in CODES.items()}


def to_square(field_no: int) -> int:
    """Return the python-chess square (a1 = 0) of a DGT field number (a8 = 0)."""
    return field_no ^ 56


def header(msg_id: int, size: int) -> bytes:
    """Return a message header: the id and the total size in two 7-bit bytes."""
    return bytes((msg_id, (size >> 7) & 0x7F, size & 0x7F))


def message(msg_id: int, payload: bytes) -> bytes:
    """Return a whole message (header and payload)."""
    return header(msg_id, HEADER + len(payload)) + payload


def bcd(value: int) -> int:
    """Return the BCD byte of 0..99."""
    return ((value // 10) << 4) | (value % 10)


def from_bcd(byte: int) -> int:
    """Return the value of a BCD byte, or raise :class:`ProtocolError`."""
    hi, lo = byte >> 4, byte & 0x0F
    if hi > 9 or lo > 9:
        raise ProtocolError(f"clock digit not BCD: {byte:#04x}")
    return hi * 10 + lo


@dataclass(frozen=True)
class Frame:
    """One message from the board: its id and payload."""

    msg_id: int
    payload: bytes


@dataclass
class FrameDecoder:
    """Cuts the board's byte stream into :class:`Frame` objects by each message's header (its length).

    A message of a published id must have one of the sizes DGT published for it; one of an id not published
    here is *well framed* when its length is sane and its bytes all have the top bit clear: it is skipped and
    counted (:attr:`unknown`, by id), never an error. What is not a frame is a :class:`ProtocolError` in the
    output (and skipped: the decoder resynchronises on the next byte with the top bit set)."""

    buf: bytearray = field(default_factory=bytearray)
    unknown: dict[int, int] = field(default_factory=dict)    # well-framed messages of unknown ids skipped

    def feed(self, data: bytes) -> list[Frame | ProtocolError]:
        """Return the frames (and errors) completed by ``data``."""
        self.buf += data
        out: list[Frame | ProtocolError] = []
        while self.buf:
            start = 0
            while start < len(self.buf) and not self.buf[start] & MESSAGE_BIT:
                start += 1
            if start:
                out.append(ProtocolError(f"{start} byte(s) of garbage outside a message skipped"))
                del self.buf[:start]
                continue
            if len(self.buf) < HEADER:
                break
            msg_id = self.buf[0]
            if self.buf[1] & MESSAGE_BIT or self.buf[2] & MESSAGE_BIT:
                out.append(ProtocolError(f"message {msg_id:#04x} truncated in its header"))
                del self.buf[:1]
                continue
            size = (self.buf[1] << 7) | self.buf[2]
            sizes = FIXED_SIZES.get(msg_id)
            limit = VARIABLE.get(msg_id)
            known = sizes is not None or limit is not None
            if sizes is not None:
                fits = size in sizes
            else:
                fits = HEADER <= size <= (limit if limit is not None else UNKNOWN_LIMIT)
            if not fits:
                what = "a wrong length" if known else "an unbelievable length"
                out.append(ProtocolError(f"message {msg_id:#04x} with {what} {size} skipped"))
                del self.buf[:1]
                continue
            body = self.buf[HEADER:size]
            cut = next((i for i, b in enumerate(body) if b & MESSAGE_BIT), None)
            if cut is not None:
                out.append(ProtocolError(f"message {msg_id:#04x} truncated after {HEADER + cut} of {size} bytes"))
                del self.buf[:HEADER + cut]
                continue
            if len(self.buf) < size:
                break
            if known:
                out.append(Frame(msg_id, bytes(body)))
            else:
                self.unknown[msg_id] = self.unknown.get(msg_id, 0) + 1
            del self.buf[:size]
        return out


@dataclass(frozen=True)
class ClockReading:
    """A clock message: both sides' times (ms; bytes 3-5 white, 6-8 black) and whose turn it is."""

    white_ms: int
    black_ms: int
    turn: str | None          # "white", "black" or None (not said)
    running: bool
    connected: bool


def parse_clock(payload: bytes) -> ClockReading | None:
    """Return the clock reading of a BWTIME payload, None for a clock acknowledgement; raise
    :class:`ProtocolError` for digits out of range."""
    if len(payload) != 7:
        raise ProtocolError("clock message of a wrong length")
    if payload[0] & 0x0F == 0x0A or payload[3] & 0x0F == 0x0A:
        return None

    def side(b: bytes) -> int:
        hours = b[0] & 0x0F
        minutes, seconds = from_bcd(b[1]), from_bcd(b[2])
        if hours > 9 or minutes > 59 or seconds > 59:
            raise ProtocolError("clock time out of range")
        return ((hours * 60 + minutes) * 60 + seconds) * 1000

    status = payload[6]
    turn = "black" if status & 0x08 else "white" if status & 0x10 else None
    return ClockReading(side(payload[0:3]), side(payload[3:6]), turn, bool(status & 0x01), not status & 0x20)


def clock_payload(white_ms: int, black_ms: int, turn: str | None, running: bool = True) -> bytes:
    """Return a BWTIME payload (the emulator's; the inverse of :func:`parse_clock`)."""
    def side(ms: int) -> bytes:
        s = max(0, ms) // 1000
        return bytes((min(9, s // 3600), bcd(s // 60 % 60), bcd(s % 60)))

    status = (0x01 if running else 0) | (0x08 if turn == "black" else 0) | (0x10 if turn == "white" else 0)
    return side(white_ms) + side(black_ms) + bytes((status,))


def parse_ee(payload: bytes) -> list[tuple[str, int, int]]:
    """Return the EEPROM log's events in order: ``("field", field_no, code)``, ``("tag", code, 0)`` and
    ``("time", left, ms)``; bytes that are none of these are skipped."""
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(payload):
        b = payload[i]
        if 0x40 <= b <= 0x5F and i + 1 < len(payload):
            out.append(("field", payload[i + 1] & 0x3F, b & 0x0F))
            i += 2
        elif (0x60 <= b <= 0x69 or 0x70 <= b <= 0x79) and i + 2 < len(payload):
            try:
                ms = ((b & 0x0F) * 3600 + from_bcd(payload[i + 1]) * 60 + from_bcd(payload[i + 2])) * 1000
                out.append(("time", int(bool(b & 0x10)), ms))
            except ProtocolError:
                pass
            i += 3
        else:
            if b in (EE_POWERUP, EE_EOF, EE_FOURROWS, EE_EMPTYBOARD, EE_DOWNLOADED, EE_BEGINPOS, EE_BEGINPOS_ROT):
                out.append(("tag", b, 0))
            i += 1
    return out


def recover(at_download: list[int], host_last: list[int], events: list[tuple[str, int, int]]
            ) -> list[tuple[int, int]]:
    """Return the field changes (field, code) made after the host last saw the board.

    ``events`` is the EEPROM log; the changes after its last ``EE_DOWNLOADED`` tag started from ``at_download``
    (the board the host read after that download). The host saw them up to some point, ``host_last``: the
    changes after the latest state equal to it (else the nearest, fewest squares off) are the ones it missed.
    """
    marks = [i for i, e in enumerate(events) if e == ("tag", EE_DOWNLOADED, 0)]
    tail = [(f, c) for kind, f, c in events[(marks[-1] + 1) if marks else 0:] if kind == "field"]
    state = list(at_download)
    best, best_k = sum(a != b for a, b in zip(state, host_last, strict=True)), 0
    for k, (f, c) in enumerate(tail, start=1):
        state[f] = c
        off = sum(a != b for a, b in zip(state, host_last, strict=True))
        if off <= best:
            best, best_k = off, k
    return tail[best_k:]


@dataclass
class Memory:
    """What the host knows of one DGT board across reconnections (by serial number)."""

    at_download: list[int] | None = None   # the board read right after the last EEPROM download
    last: list[int] | None = None          # the board as last reported
    last_t: int = 0                        # the time of the last record told


#: Per serial number, for the life of the bridge process.
MEMORIES: dict[str, Memory] = {}


class DgtTranslator(Translator):
    """A DGT board on a serial port (see the module)."""

    baudrate = 9600
    name = "dgt"
    min_settle_ms = MIN_SETTLE_MS

    def __init__(self, port: str, rate: float = 1.0) -> None:
        super().__init__(port, rate)
        self.decoder = FrameDecoder()
        self.raw = [0] * 64                  # piece codes as the board numbers its fields
        self.serial: str | None = None
        self.version: str | None = None
        self.ee_events: list[tuple[str, int, int]] | None = None
        self.dumps_wanted = 0                # board dumps asked for that the bridge wants as a snapshot
        self.turn: str | None = None
        self.clock_due: list[tuple[int, dict[str, Any]]] = []   # presses waiting for the scan (due, line)
        self.late_presses = 0                # presses read after the opponent's reply (left out)
        self.clock_primed = False            # the clock has been read once (its turn then is no press)
        self.recovered = 0                   # changes replayed from the EEPROM log

    def start(self, now: int) -> bytes:
        self.last_rx = now                   # the watch starts now
        return bytes((SEND_RESET, RETURN_SERIALNR))     # the rest once the board answers (:data:`SETUP`)

    def poll(self) -> bytes:
        return bytes((SEND_VERSION,))

    def resume(self) -> bytes:
        return bytes((SEND_BRD, SEND_UPDATE_NICE))

    def command(self, cmd: dict[str, Any], now: int) -> bytes:
        kind = cmd.get("cmd")
        if kind == "hello":
            return b"" if self.board is not None else bytes((RETURN_SERIALNR,))
        if kind == "snapshot":
            self.dumps_wanted += 1
            return bytes((SEND_BRD,))
        return b""          # no LEDs on DGT's wooden boards

    def feed(self, data: bytes, now: int) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        items = self.decoder.feed(data)
        lines += self.skipped_unknown(sum(self.decoder.unknown.values()), now)
        for item in items:
            if isinstance(item, ProtocolError):
                lines.append(self.rejected(str(item), now))
                if self.adapter.synced and SEND_BRD not in self.outbox:
                    self.outbox.append(SEND_BRD)     # a change may be hidden in it: the dump is diffed
                continue
            lines += self.heard(now)
            try:
                lines += self._message(item, now)
            except ProtocolError as exc:
                lines.append(self.rejected(str(exc), now))
        return lines + self._clock_lines(now)

    def _message(self, frame: Frame, now: int) -> list[dict[str, Any]]:
        p = frame.payload
        if frame.msg_id == MSG_SERIALNR:
            serial = "".join(chr(b) for b in p[:5] if 0x20 < b < 0x7F)     # 8 or 12 bytes: the 5 digits
            if not serial:
                raise ProtocolError("serial number message without digits")
            self.serial = serial
            if self.board is not None:
                return []            # identified already (a second answer)
            self.outbox += SETUP
            return [self.hello(board_id("dgt", serial), now, serial=serial)]
        if frame.msg_id == MSG_VERSION:
            self.version = f"{p[0]}.{p[1]:02d}"
            return []
        if frame.msg_id == MSG_EE_MOVES:
            self.ee_events = parse_ee(p)
            return []
        if frame.msg_id == MSG_BOARD_DUMP:
            return self._dump(list(p), now)
        if frame.msg_id == MSG_FIELD_UPDATE:
            field_no, code = p[0], p[1]
            if field_no > 63 or code not in CODES:
                raise ProtocolError(f"field update out of range (field {field_no}, code {code})")
            self.raw[field_no] = code
            if not self.adapter.synced or self.resyncing:
                self._remember()
                return []
            lines = self.adapter.square_report(to_square(field_no), CODES[code], now)
            self._remember()
            return lines
        if frame.msg_id == MSG_BWTIME:
            return self._clock(p, now)
        return []

    def _dump(self, codes: list[int], now: int) -> list[dict[str, Any]]:
        if any(c not in CODES for c in codes):
            raise ProtocolError("board dump with an unknown piece code")
        out: list[dict[str, Any]] = []
        memory = MEMORIES.get(self.serial) if self.serial else None
        if self.ee_events is not None and memory is not None and memory.at_download and memory.last:
            missed = recover(memory.at_download, memory.last, self.ee_events)
            since = min(memory.last_t, now)
            if missed and self.adapter.synced is False:
                # the adapter starts from what the host saw last, then replays the missed changes
                self.adapter.full_report(_contents(memory.last), since)
                self.adapter.shown = list(self.adapter.actual)
            if missed:
                log.info("%s: %d change(s) made while disconnected read from the board's memory", self.board,
                         len(missed))
                out.append({"t": now, "type": "error", "why": f"{len(missed)} change(s) read from the board's "
                            "memory (made while the port was closed)", "recovered": len(missed)})
            for i, (field_no, code) in enumerate(missed, start=1):
                # made at unknown times while the port was closed: spread over that time, in their order
                self.recovered += 1
                t = since + (now - since) * i // (len(missed) + 1)
                out += self.adapter.square_report(to_square(field_no), CODES.get(code), t)
            out = [line for line in out if line.get("type") != "snapshot"]
        if self.ee_events is not None and self.serial:
            MEMORIES.setdefault(self.serial, Memory()).at_download = list(codes)
            self.ee_events = None
        self.raw = list(codes)
        self.resyncing = False
        snapshot = self.dumps_wanted > 0
        self.dumps_wanted = max(0, self.dumps_wanted - 1)
        out += self.adapter.full_report(_contents(codes), now, snapshot=snapshot)
        self._remember()
        return out

    def _remember(self) -> None:
        if self.serial:
            memory = MEMORIES.setdefault(self.serial, Memory())
            memory.last = list(self.raw)
            memory.last_t = max(memory.last_t, self.adapter.last_t)

    def _clock(self, payload: bytes, now: int) -> list[dict[str, Any]]:
        reading = parse_clock(payload)
        if reading is None or not reading.connected:
            return []
        before, self.turn = self.turn, reading.turn
        primed, self.clock_primed = self.clock_primed, True
        if not primed or before == reading.turn or not self.adapter.synced:
            return []           # the first reading (asked for at the start) is no press
        side = "white" if reading.turn == "black" else "black"
        remaining = reading.white_ms if side == "white" else reading.black_ms
        self.clock_due.append((now + CLOCK_AFTER_SCAN_MS, {"type": "clock", "side": side, "remaining": remaining,
                                                           "late_ms": CLOCK_READ_MS + CLOCK_AFTER_SCAN_MS}))
        return []

    def _clock_lines(self, now: int) -> list[dict[str, Any]]:
        """Return the clock presses whose wait is over (a scan's reports that came after them go first)."""
        out = []
        while self.clock_due and self.clock_due[0][0] <= now:
            _, line = self.clock_due.pop(0)
            if self.adapter.last_mover not in (None, line["side"]):
                # the opponent has moved since this press (the clock is read up to 1 s late): told now, the
                # press would stand after the reply; left out (its time is lost, never a move)
                self.late_presses += 1
                log.debug("%s: a %s clock press read after the reply, left out", self.board, line["side"])
                continue
            out.append({"t": max(now, self.adapter.last_t), **line})
        return out

    def tick(self, now: int) -> tuple[list[dict[str, Any]], bytes]:
        lines, out = super().tick(now)
        return lines + self._clock_lines(now), out


def _contents(codes: list[int]) -> list[Content]:
    """Return the contents in python-chess square order (a1 = 0) of a dump in DGT field order."""
    out: list[Content] = [None] * 64
    for field_no, code in enumerate(codes):
        out[to_square(field_no)] = CODES.get(code)
    return out


__all__ = ["RESULTS", "DgtTranslator", "Frame", "FrameDecoder", "message"]
