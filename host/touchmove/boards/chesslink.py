"""Millennium ChessLink (and the boards that speak its protocol): 38400 baud, 7 data bits, odd parity, 1 stop.

Facts from the protocol's open description (Millennium's "Magic Chessboard Communications Protocol"): every
message is printable ASCII; a command is one upper-case letter and its data, and a reply the same letter in lower
case; each ends with a block check, the XOR of every character before it as two upper-case hex digits. ``S``
returns ``s`` and 64 piece codes, a8 b8 ... h8, a7 ... h1 (``KQRNBP`` white, ``kqrnbp`` black, ``.`` empty);
``V`` the firmware version; ``W`` writes an option byte (address 02: automatic status reports, 4-7: on any
change after a debounce of 2-5 scans); ``X`` puts the LEDs out and ``L`` sets their flash pattern (81 LEDs on the
corners of the squares). Automatic reports may come between a command and its reply.
"""

from __future__ import annotations

from typing import Any

import chess

from touchmove.boards.adapter import Content
from touchmove.boards.base import ProtocolError, Translator, board_id

#: The option written at start: address 02 = 0x05, status on any change with a 3-scan debounce.
REPORT_ON_CHANGE_3 = 0x05
#: Letters that start a reply, and the length of the data between the letter and the check.
REPLY_DATA = {"s": 64, "v": 4, "w": 4, "r": 4, "l": 0, "x": 0}
PIECES = set("KQRNBPkqrnbp.")
HEX = set("0123456789ABCDEFabcdef")
#: The engine's settle time for a ChessLink board at least (ms): the board reports a position once it has stood
#: three scans (123 ms), so a piece slid over squares is reported on the last square it stood that long and then
#: only where it lands; the reports can show it resting 250 ms where it only passed (bench/boards.py, 100 shared
#: games: 4 of 6 false ``moved_after_release`` gone with the default hands, 3 more games given back with fast
#: replies, one fewer with the harder hands).
MIN_SETTLE_MS = 300
#: The LED pattern byte for a lit LED (always on) and the slot time (units of 4.096 ms).
LED_ON = "FF"
LED_SLOT = "20"


def check(text: str) -> str:
    """Return the block check of ``text``: the XOR of its characters, two upper-case hex digits."""
    value = 0
    for ch in text:
        value ^= ord(ch)
    return f"{value:02X}"


def encode(text: str) -> bytes:
    """Return a message with its block check (7-bit ASCII; the serial port adds the parity bit)."""
    return (text + check(text)).encode("ascii")


def square_of(index: int) -> int:
    """Return the python-chess square of a status position (a8 = 0 ... h1 = 63)."""
    return index ^ 56


def parse_status(data: str) -> list[Content]:
    """Return the 64 squares (python-chess order) of a status's piece codes, or raise :class:`ProtocolError`."""
    if len(data) != 64 or any(c not in PIECES for c in data):
        raise ProtocolError("status with a piece code that is not one of KQRNBPkqrnbp.")
    out: list[Content] = [None] * 64
    for i, c in enumerate(data):
        out[square_of(i)] = None if c == "." else c
    return out


def status_text(board: list[Content]) -> str:
    """Return the 64 piece codes of a board (the emulator's; the inverse of :func:`parse_status`)."""
    return "".join(board[square_of(i)] or "." for i in range(64))


def led_command(squares: list[str]) -> str:
    """Return the ``L`` command lighting the four corner LEDs of each square (LED 1 = a8's top-left corner,
    columns of 9 from file a to h)."""
    leds = ["00"] * 81
    for name in squares:
        sq = chess.parse_square(name)
        f, r = chess.square_file(sq), chess.square_rank(sq)
        for df in (0, 1):
            for dr in (0, 1):
                leds[(f + df) * 9 + (7 - r + dr)] = LED_ON
    return "L" + LED_SLOT + "".join(leds)


#: The longest reply of a letter not known here that is believed (characters, letter and check included).
UNKNOWN_LIMIT = 200


class MessageDecoder:
    """Cuts the ASCII stream into replies (letter, data); a bad check or a cut message is a
    :class:`ProtocolError` in the output and decoding goes on at the next reply letter.

    Replies carry no length: each known letter has its published size. A reply of another lower-case letter is
    *well framed* when the characters up to the next known reply letter (or the end of what arrived) end in the
    block check of those before: it is skipped and counted (:attr:`unknown`, by letter), never an error."""

    def __init__(self) -> None:
        self.buf = ""
        self.unknown: dict[str, int] = {}

    def feed(self, data: bytes) -> list[tuple[str, str] | ProtocolError]:
        self.buf += bytes(b & 0x7F for b in data).decode("ascii")     # the parity bit, if a port leaves it
        out: list[tuple[str, str] | ProtocolError] = []
        while self.buf:
            letter = self.buf[0]
            if letter not in REPLY_DATA and "a" <= letter <= "z":
                end = next((i for i, c in enumerate(self.buf[1:UNKNOWN_LIMIT], start=1) if c in REPLY_DATA),
                           len(self.buf))
                if end >= 3 and end <= UNKNOWN_LIMIT and check(self.buf[:end - 2]) == self.buf[end - 2:end]:
                    self.unknown[letter] = self.unknown.get(letter, 0) + 1
                    self.buf = self.buf[end:]
                    continue
                if end == len(self.buf) and end < UNKNOWN_LIMIT:
                    break           # its check may be still on the way
            if letter not in REPLY_DATA:
                skip = next((i for i, c in enumerate(self.buf) if c in REPLY_DATA), len(self.buf))
                out.append(ProtocolError(f"{skip} character(s) of garbage skipped"))
                self.buf = self.buf[skip:]
                continue
            size = 1 + REPLY_DATA[letter] + 2
            allowed = PIECES if letter == "s" else HEX
            bad = next((i for i, c in enumerate(self.buf[1:size], start=1)
                        if c not in (allowed if i < size - 2 else HEX)), None)
            if bad is not None:
                out.append(ProtocolError(f"reply {letter!r} cut short after {bad} of {size} characters"))
                self.buf = self.buf[bad:]
                continue
            if len(self.buf) < size:
                break
            text, given = self.buf[:size - 2], self.buf[size - 2:size]
            if check(text) != given.upper():
                out.append(ProtocolError(f"reply {letter!r} with a bad block check ({given!r}, "
                                         f"expected {check(text)})"))
                self.buf = self.buf[1:]
                continue
            out.append((letter, text[1:]))
            self.buf = self.buf[size:]
        return out


class ChessLinkTranslator(Translator):
    """A Millennium ChessLink board (see the module). The board has no serial number: its id is made from the
    port's name (a /dev/serial/by-id/ path names the USB adapter's serial)."""

    baudrate = 38400
    bytesize = 7
    parity = "O"
    name = "chesslink"
    min_settle_ms = MIN_SETTLE_MS

    def __init__(self, port: str, rate: float = 1.0) -> None:
        super().__init__(port, rate)
        self.decoder = MessageDecoder()
        self.version: str | None = None
        self.snapshots_wanted = 0

    def start(self, now: int) -> bytes:
        self.last_rx = now
        return encode("V")          # the rest once the board answers

    def poll(self) -> bytes:
        return encode("V")

    def resume(self) -> bytes:
        return encode(f"W02{REPORT_ON_CHANGE_3:02X}") + encode("S")

    def command(self, cmd: dict[str, Any], now: int) -> bytes:
        kind = cmd.get("cmd")
        if kind == "hello":
            return b"" if self.board is not None else encode("V")
        if kind == "snapshot":
            self.snapshots_wanted += 1
            return encode("S")
        if kind == "leds":
            if cmd.get("clear"):
                return encode("X")
            squares = cmd.get("squares")
            if isinstance(squares, list):
                return encode(led_command([str(s) for s in squares]))
        return b""

    def feed(self, data: bytes, now: int) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        try:
            items = self.decoder.feed(data)
        except UnicodeDecodeError:
            items = [ProtocolError("bytes that are not ASCII")]
            self.decoder.buf = ""
        lines += self.skipped_unknown(sum(self.decoder.unknown.values()), now)
        for item in items:
            if isinstance(item, ProtocolError):
                lines.append(self.rejected(str(item), now))
                if b"S" not in self.outbox:
                    self.outbox += encode("S")         # the status is asked again: nothing is lost
                continue
            lines += self.heard(now)
            letter, body = item
            try:
                lines += self._reply(letter, body, now)
            except ProtocolError as exc:
                lines.append(self.rejected(str(exc), now))
                self.outbox += encode("S")
        return lines

    def _reply(self, letter: str, body: str, now: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if letter == "v":
            self.version = f"{body[:2]}.{body[2:]}"
            if self.board is None:
                self.outbox += self.resume()
                out.append(self.hello(board_id("chesslink", self.port.rsplit("/", 1)[-1]), now,
                                      version=self.version))
            return out
        if letter == "s":
            board = parse_status(body)
            snapshot = self.snapshots_wanted > 0
            self.snapshots_wanted = max(0, self.snapshots_wanted - 1)
            if self.board is None:
                return []              # reported before the board is known: the first status after hello tells
            return self.adapter.full_report(board, now, snapshot=snapshot)
        return out
