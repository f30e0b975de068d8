"""The DGT emulator (:mod:`touchmove.sim.dgt`) whose board dump misreads one square once: the first dump asked for
at or after ``--glitch-at`` (ms of the timeline) shows ``--square`` as ``--piece``, and no field update ever says
so (the misread is in that one dump alone, as when the board's scan that answers the dump misreads a square). The
wall time (``time.time()``) the glitched dump was sent is written to ``--sent-log``.

    python tests/boards/dgt_dump_glitch.py TIMELINE --speed N --start FEN --glitch-at MS --square d5 --piece k
                                         --sent-log PATH
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import chess

from touchmove.boards import dgt
from touchmove.sim import timeline
from touchmove.sim.dgt import DgtEmulator, field_of, serve
from touchmove.sim.pieces import Event, start_pieces


class GlitchedDumpEmulator(DgtEmulator):
    """A DGT board whose first dump from ``glitch_at`` on misreads ``square`` as ``piece``."""

    def __init__(self, start: list[str | None], events: list[Event], *, glitch_at: float, square: int,
                 piece: str, sent_log: Path) -> None:
        super().__init__(start, events)
        self.glitch_at, self.square, self.piece, self.sent_log = glitch_at, square, piece, sent_log
        self.glitched = False

    def command(self, byte: int) -> bytes:
        """Return the reply to one command byte: the emulator's, but for the one glitched dump."""
        if byte != dgt.SEND_BRD or self.glitched or self.now < self.glitch_at or self.link_down(self.now):
            return super().command(byte)
        self.glitched = True
        codes = list(self.codes)
        codes[field_of(self.square, self.rotated)] = dgt.CONTENT_CODES[self.piece]
        self.sent_log.write_text(f"{time.time()}\n")
        return dgt.message(dgt.MSG_BOARD_DUMP, bytes(codes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("timeline")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--start", default=chess.STARTING_FEN)
    parser.add_argument("--glitch-at", type=float, required=True)
    parser.add_argument("--square", type=chess.parse_square, required=True)
    parser.add_argument("--piece", required=True)
    parser.add_argument("--sent-log", type=Path, required=True)
    args = parser.parse_args(argv)
    emulator = GlitchedDumpEmulator(start_pieces(chess.Board(args.start)), timeline.read(args.timeline),
                                    glitch_at=args.glitch_at, square=args.square, piece=args.piece,
                                    sent_log=args.sent_log)
    return serve(emulator, args.speed)


if __name__ == "__main__":
    sys.exit(main())
