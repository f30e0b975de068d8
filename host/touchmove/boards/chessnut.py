"""Chessnut Air and Pro over USB HID (vendor id 0x2D80), read on Linux from ``/dev/hidraw*`` as a file.

Facts from Chessnut's MIT-licensed EasyLink SDK: the host switches the board to real-time mode with the report
``21 01 00``; the board then sends its position as report ``01``, one length byte (0x24) and 32 bytes with two
squares a byte (rank 8 first; in each rank's four bytes h and g share the first byte, h in its low nibble, a in
the last byte's high nibble), then 4 bytes the SDK does not read. Piece nibbles: 0 empty, 1 q, 2 k, 3 b, 4 p,
5 n, 6 R, 7 P, 8 r, 9 B, 10 N, 11 Q, 12 K. LEDs: report ``0A 08`` and 8 bytes, one a rank from rank 8, the
high bit the a-file. Battery: ``29 01 00``, answered by report ``2A``. The SDK waits 200 ms between two writes.
Reports carry no check: a report whose length byte is not the one its id has, or an unknown id, is rejected.
"""

from __future__ import annotations

from typing import Any

import chess

from touchmove.boards.adapter import Content
from touchmove.boards.base import ProtocolError, Translator, board_id

REALTIME_MODE = bytes((0x21, 0x01, 0x00))
BATTERY = bytes((0x29, 0x01, 0x00))
BOARD_REPORT = 0x01
BOARD_LENGTH = 0x24
BATTERY_REPORT = 0x2A
LED_REPORT = (0x0A, 0x08)
#: Lengths (after the length byte) of the reports the board sends.
REPORT_LENGTHS = {BOARD_REPORT: BOARD_LENGTH, BATTERY_REPORT: 2}
NIBBLES: dict[int, Content] = {0: None, 1: "q", 2: "k", 3: "b", 4: "p", 5: "n", 6: "R", 7: "P", 8: "r", 9: "B",
                               10: "N", 11: "Q", 12: "K"}
NIBBLE_OF = {c: n for n, c in NIBBLES.items()}


def square_of(row: int, j: int) -> int:
    """Return the python-chess square of nibble ``j`` (0-7, h to a) of rank row ``row`` (0 = rank 8)."""
    return chess.square(7 - j, 7 - row)


def parse_board(data: bytes) -> list[Content]:
    """Return the 64 squares of a board report's 32 bytes, or raise :class:`ProtocolError`."""
    out: list[Content] = [None] * 64
    for row in range(8):
        for j in range(8):
            byte = data[(row * 8 + j) // 2]
            nibble = byte & 0x0F if j % 2 == 0 else byte >> 4
            if nibble not in NIBBLES:
                raise ProtocolError(f"board report with an unknown piece nibble {nibble}")
            out[square_of(row, j)] = NIBBLES[nibble]
    return out


def board_bytes(board: list[Content]) -> bytes:
    """Return the 32 bytes of a board (the emulator's; the inverse of :func:`parse_board`)."""
    out = bytearray(32)
    for row in range(8):
        for j in range(8):
            nibble = NIBBLE_OF[board[square_of(row, j)]]
            out[(row * 8 + j) // 2] |= nibble if j % 2 == 0 else nibble << 4
    return bytes(out)


def led_report(squares: list[str]) -> bytes:
    """Return the LED report lighting ``squares``."""
    rows = bytearray(8)
    for name in squares:
        sq = chess.parse_square(name)
        rows[7 - chess.square_rank(sq)] |= 0x80 >> chess.square_file(sq)
    return bytes(LED_REPORT) + bytes(rows)


#: The longest report (its id and length byte included): one USB HID report.
REPORT_LIMIT = 64


class ReportDecoder:
    """Cuts reports out of a byte stream (a pipe or pty) or takes one report a read (hidraw, padded).

    Each report is framed by its length byte. A known id must have its published length; a report of another
    id (0 is padding, no id) is *well framed* when its length ends it where the next known report starts or
    where what arrived ends: it is skipped and counted (:attr:`unknown`, by id), never an error."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.unknown: dict[int, int] = {}

    def feed(self, data: bytes) -> list[tuple[int, bytes] | ProtocolError]:
        self.buf += data
        out: list[tuple[int, bytes] | ProtocolError] = []
        while len(self.buf) >= 2:
            rid, length = self.buf[0], self.buf[1]
            expected = REPORT_LENGTHS.get(rid)
            end = 2 + length
            if expected is None and rid and end <= REPORT_LIMIT:
                if end == len(self.buf) or (end < len(self.buf) and self.buf[end] in REPORT_LENGTHS):
                    self.unknown[rid] = self.unknown.get(rid, 0) + 1
                    del self.buf[:end]
                    continue
                if end > len(self.buf):
                    break           # the rest of it may be on the way
            if expected is None or length != expected:
                skip = next((i for i in range(1, len(self.buf)) if self.buf[i] in REPORT_LENGTHS), len(self.buf))
                what = "unknown report id" if expected is None else "report with a wrong length"
                out.append(ProtocolError(f"{what} ({rid:#04x}, {length}): {skip} byte(s) skipped"))
                del self.buf[:skip]
                continue
            if len(self.buf) < 2 + length:
                break
            out.append((rid, bytes(self.buf[2:2 + length])))
            del self.buf[:2 + length]
        return out


class ChessnutTranslator(Translator):
    """A Chessnut Air/Pro (see the module); its id is made from the node's name (hidraw nodes get renumbered:
    use a udev rule's stable name, docs/boards.md)."""

    name = "chessnut"

    def __init__(self, port: str, rate: float = 1.0) -> None:
        super().__init__(port, rate)
        self.decoder = ReportDecoder()
        self.snapshots_wanted = 0
        self.latest: list[Content] | None = None

    def start(self, now: int) -> bytes:
        self.last_rx = now
        return REALTIME_MODE + BATTERY

    def poll(self) -> bytes:
        return BATTERY

    def resume(self) -> bytes:
        return REALTIME_MODE

    def command(self, cmd: dict[str, Any], now: int) -> bytes:
        kind = cmd.get("cmd")
        if kind == "hello":
            return b"" if self.board is not None else BATTERY     # its answer binds the board
        if kind == "snapshot":
            if self.latest is not None and self.board is not None:
                self.snapshots_wanted += 1      # answered from the latest report on the next feed or tick
            return REALTIME_MODE                # the board sends its position again
        if kind == "leds":
            if cmd.get("clear"):
                return led_report([])
            squares = cmd.get("squares")
            if isinstance(squares, list):
                return led_report([str(s) for s in squares])
        return b""

    def feed(self, data: bytes, now: int) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        items = self.decoder.feed(data)
        lines += self.skipped_unknown(sum(self.decoder.unknown.values()), now)
        for item in items:
            if isinstance(item, ProtocolError):
                lines.append(self.rejected(str(item), now))
                if REALTIME_MODE not in self.outbox:
                    self.outbox += REALTIME_MODE       # the board sends its position again
                continue
            lines += self.heard(now)
            rid, body = item
            if rid == BATTERY_REPORT:
                if self.board is None:
                    self.outbox += REALTIME_MODE
                    lines.append(self.hello(board_id("chessnut", self.port.rsplit("/", 1)[-1]), now,
                                            battery=body[0]))
                continue
            try:
                board = parse_board(body[:32])
            except ProtocolError as exc:
                lines.append(self.rejected(str(exc), now))
                continue
            self.latest = board
            if self.board is None:
                continue
            snapshot = self.snapshots_wanted > 0 or not self.adapter.synced
            self.snapshots_wanted = 0
            lines += self.adapter.full_report(board, now, snapshot=snapshot)
        return lines

    def tick(self, now: int) -> tuple[list[dict[str, Any]], bytes]:
        lines, out = super().tick(now)
        if self.snapshots_wanted and self.latest is not None and self.adapter.synced:
            self.snapshots_wanted = 0
            lines += self.adapter.snapshot(now)
        return lines, out
