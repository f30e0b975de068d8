"""Emulators of the boards that send whole positions: Millennium ChessLink (status on change after a debounce
of some scans, ASCII with block checks) and Chessnut Air/Pro (a board report on each change in real-time mode).

    python -m touchmove.sim.scanning chesslink|chessnut TIMELINE [--speed N]
"""

from __future__ import annotations

import argparse
import math
import random
import sys

import chess

from touchmove.boards import chesslink, chessnut
from touchmove.boards.adapter import Content
from touchmove.sim import timeline
from touchmove.sim.dgt import serve
from touchmove.sim.pieces import Event, start_pieces

#: ChessLink's default scan (20 x 2.048 ms) and its debounce option 0x05 (3 scans).
CHESSLINK_SCAN_MS = 40.96
CHESSLINK_DEBOUNCE = 3
#: Chessnut's scan of its squares (ms; not documented: a figure of the same order as the others).
CHESSNUT_SCAN_MS = (100.0, 100.0)


def scanned_positions(start: list[Content], events: list[Event], period: tuple[float, float],
                      rng: random.Random) -> list[tuple[int, list[Content]]]:
    """Return the board after each scan that changed it: ``(t at the scan's end, board)``."""
    reports = timeline.scan(start, events, period, random.Random(rng.random()))
    out: list[tuple[int, list[Content]]] = []
    board = list(start)
    for t, sq, piece in reports:
        board[sq] = piece
        end = int(t - t % period[0] + period[0]) if period[0] == period[1] else t + 1
        if out and out[-1][0] == end:
            out[-1] = (end, list(board))
        else:
            out.append((end, list(board)))
    return out


class ChessLinkEmulator:
    """A ChessLink board (see the module); reports only once the host wrote address 02 (on change)."""

    def __init__(self, start: list[Content], events: list[Event], seed: int = 0,
                 debounce: int = CHESSLINK_DEBOUNCE) -> None:
        self.positions = scanned_positions(start, events, (CHESSLINK_SCAN_MS, CHESSLINK_SCAN_MS),
                                           random.Random(seed))
        self.debounce_ms = CHESSLINK_SCAN_MS * debounce
        self.board = list(start)
        self.reported = list(start)
        self.next = 0
        self.auto = False
        self.pending = b""

    def due(self) -> int | None:
        if self.next < len(self.positions):
            return math.ceil(self.positions[self.next][0] + self.debounce_ms)
        return None

    def advance(self, now: float) -> bytes:
        out = b""
        while self.next < len(self.positions) and self.positions[self.next][0] + self.debounce_ms <= now:
            t, board = self.positions[self.next]
            self.next += 1
            stable = self.next >= len(self.positions) or self.positions[self.next][0] > t + self.debounce_ms
            self.board = board
            if stable and board != self.reported:
                self.reported = list(board)
                if self.auto:
                    out += chesslink.encode("s" + chesslink.status_text(board))
        return out

    def feed(self, data: bytes) -> bytes:
        self.pending += data
        out = b""
        sizes = {"V": 0, "S": 0, "X": 0, "T": 0, "W": 4, "R": 2, "L": 164}
        while self.pending:
            letter = chr(self.pending[0] & 0x7F)
            if letter not in sizes:
                self.pending = self.pending[1:]
                continue
            size = 1 + sizes[letter] + 2
            if len(self.pending) < size:
                break
            text = self.pending[:size - 2].decode("ascii", "replace")
            given = self.pending[size - 2:size].decode("ascii", "replace")
            self.pending = self.pending[size:]
            if chesslink.check(text) != given:
                continue                       # the board ignores a command with a bad check
            body = text[1:]
            if letter == "V":
                out += chesslink.encode("v0107")
            elif letter == "S":
                out += chesslink.encode("s" + chesslink.status_text(self.board))
            elif letter == "W":
                if body[:2] == "02":
                    self.auto = int(body[2:], 16) >= 3
                out += chesslink.encode("w" + body)
            elif letter == "R":
                out += chesslink.encode("r" + body + "00")
            elif letter in "LX":
                out += chesslink.encode(letter.lower())
        return out


class ChessnutEmulator:
    """A Chessnut Air (see the module): a board report on each scanned change once in real-time mode."""

    def __init__(self, start: list[Content], events: list[Event], seed: int = 0) -> None:
        self.positions = scanned_positions(start, events, CHESSNUT_SCAN_MS, random.Random(seed))
        self.board = list(start)
        self.next = 0
        self.realtime = False
        self.pending = b""
        self.leds = b""

    def due(self) -> int | None:
        return self.positions[self.next][0] if self.next < len(self.positions) else None

    def report(self) -> bytes:
        return bytes((chessnut.BOARD_REPORT, chessnut.BOARD_LENGTH)) + chessnut.board_bytes(self.board) + bytes(4)

    def advance(self, now: float) -> bytes:
        out = b""
        while self.next < len(self.positions) and self.positions[self.next][0] <= now:
            self.board = self.positions[self.next][1]
            self.next += 1
            if self.realtime:
                out += self.report()
        return out

    def feed(self, data: bytes) -> bytes:
        self.pending += data
        out = b""
        while len(self.pending) >= 2:
            rid, length = self.pending[0], self.pending[1]
            if len(self.pending) < 2 + length:
                break
            body = self.pending[2:2 + length]
            self.pending = self.pending[2 + length:]
            if rid == 0x21 and body[:1] == b"\x00":
                self.realtime = True
                out += self.report()
            elif rid == 0x29:
                out += bytes((chessnut.BATTERY_REPORT, 2, 90, 0))
            elif rid == 0x0A:
                self.leds = body
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m touchmove.sim.scanning", description=__doc__)
    parser.add_argument("protocol", choices=("chesslink", "chessnut"))
    parser.add_argument("timeline")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--start", default=chess.STARTING_FEN)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, help="time.monotonic() of the timeline's 0 (default: now)")
    args = parser.parse_args(argv)
    events = timeline.read(args.timeline)
    start = start_pieces(chess.Board(args.start))
    emulator: ChessLinkEmulator | ChessnutEmulator = (
        ChessLinkEmulator(start, events, args.seed) if args.protocol == "chesslink"
        else ChessnutEmulator(start, events, args.seed))
    return serve(emulator, args.speed, args.t0)


if __name__ == "__main__":
    sys.exit(main())
