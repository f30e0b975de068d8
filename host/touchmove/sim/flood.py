"""A vendor board gone wrong, for the containment tests and bench: a process speaking DGT, ChessLink or Chessnut
on stdin/stdout (put on a pty by :class:`touchmove.sim.ptyboard.PtyBoard`) that answers the bridge as the
board would, shows the start position, then floods the port for ``--seconds``:

=================== =====================================================================================
``dgt-fields``      DGT field updates of random squares with random piece codes (result pieces too)
``dgt-dumps``       DGT board dumps of 64 random piece codes
``dgt-bytes``       random bytes (a wrong baud rate, a broken cable)
``dgt-square``      one square (``--square``, default e2) flickering: its piece, empty, its piece ...
``chesslink-status`` ChessLink status messages of random boards
``chessnut-reports`` Chessnut board reports of random boards
``chessnut-square`` one square flickering in Chessnut board reports
=================== =====================================================================================

    python -m touchmove.sim.flood KIND [--rate N] [--seconds S] [--after MS] [--serial 12345] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

import chess

from touchmove.boards import chesslink, dgt
from touchmove.boards.adapter import Content
from touchmove.sim.dgt import DgtEmulator, field_of, serve
from touchmove.sim.pieces import start_pieces
from touchmove.sim.scanning import ChessLinkEmulator, ChessnutEmulator

KINDS = ("dgt-fields", "dgt-dumps", "dgt-bytes", "dgt-square", "chesslink-status", "chessnut-reports",
         "chessnut-square")
#: What a square may read as on boards without result pieces.
PIECES: tuple[Content, ...] = (None, *"PRNBKQprnbkq")


class Flood:
    """An emulator of ``kind``'s protocol that, once the bridge has set it up, floods (see the module)."""

    def __init__(self, kind: str, rate: float, seconds: float, after_ms: float, serial: str, seed: int,
                 square: chess.Square) -> None:
        self.kind, self.rate, self.seconds, self.after_ms = kind, rate, seconds, after_ms
        self.rng = random.Random(seed)
        self.square = square
        start = start_pieces(chess.Board())
        self.start = start
        self.inner: Any
        if kind.startswith("dgt"):
            self.inner = DgtEmulator(start, [], serial)
        elif kind.startswith("chesslink"):
            self.inner = ChessLinkEmulator(start, [])
        else:
            self.inner = ChessnutEmulator(start, [])
        self.on_at: float | None = None      # when the bridge had set the board up
        self.sent = 0
        self.flicker = False

    def _set_up(self) -> bool:
        inner = self.inner
        if isinstance(inner, DgtEmulator):
            return inner.mode != "idle"
        if isinstance(inner, ChessLinkEmulator):
            return inner.auto
        return bool(inner.realtime)

    def due(self) -> int | None:
        return None      # polled every 50 ms by :func:`serve`, which is fast enough for any rate asked

    def advance(self, now: float) -> bytes:
        out = bytearray(self.inner.advance(now))
        if self.on_at is None:
            if not self._set_up():
                return bytes(out)
            self.on_at = now
        begin = self.on_at + self.after_ms
        if now < begin:
            return bytes(out)
        due = int(min(now - begin, self.seconds * 1000) * self.rate / 1000)
        while self.sent < due:
            self.sent += 1
            out += self._one()
        return bytes(out)

    def _one(self) -> bytes:
        rng = self.rng
        if self.kind == "dgt-fields":
            return dgt.message(dgt.MSG_FIELD_UPDATE, bytes((rng.randrange(64), rng.randrange(16))))
        if self.kind == "dgt-dumps":
            return dgt.message(dgt.MSG_BOARD_DUMP, bytes(rng.randrange(16) for _ in range(64)))
        if self.kind == "dgt-bytes":
            return bytes(rng.randrange(256) for _ in range(16))
        if self.kind == "dgt-square":
            self.flicker = not self.flicker
            piece = None if self.flicker else self.start[self.square]
            return dgt.message(dgt.MSG_FIELD_UPDATE, bytes((field_of(self.square, False), dgt.CONTENT_CODES[piece])))
        if self.kind == "chesslink-status":
            board = [rng.choice(PIECES) for _ in range(64)]
            return chesslink.encode("s" + chesslink.status_text(board))
        if self.kind == "chessnut-reports":
            self.inner.board = [rng.choice(PIECES) for _ in range(64)]
            return bytes(self.inner.report())
        self.flicker = not self.flicker       # chessnut-square
        board = list(self.start)
        board[self.square] = None if self.flicker else self.start[self.square]
        self.inner.board = board
        return bytes(self.inner.report())

    def feed(self, data: bytes) -> bytes:
        if isinstance(self.inner, DgtEmulator):
            return b"".join(self.inner.command(b) for b in data)
        return bytes(self.inner.feed(data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m touchmove.sim.flood", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--rate", type=float, default=200.0, help="messages a second (default 200)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the flood lasts (default 20)")
    parser.add_argument("--after", type=float, default=1500.0,
                        help="ms after the bridge set the board up before the flood (default 1500)")
    parser.add_argument("--serial", default="12345", help="a DGT board's serial number (its id in the bridge)")
    parser.add_argument("--square", default="e2", help="the square that flickers (default e2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    flood = Flood(args.kind, args.rate, args.seconds, args.after, args.serial, args.seed,
                  chess.parse_square(args.square))
    return serve(flood, 1.0)


if __name__ == "__main__":
    sys.exit(main())
