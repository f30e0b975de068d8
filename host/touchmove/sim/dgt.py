"""A DGT board emulator: a process speaking DGT's serial protocol on stdin/stdout (put on a pseudo-terminal by
:class:`touchmove.sim.ptyboard.PtyBoard`), playing a piece timeline (:mod:`touchmove.sim.timeline`).

It behaves as the board does: squares sampled one by one, a scan every 200-250 ms (so changes come in scanning
order, pieces lifted and put back between two samples are missed, captures show as a code change), field updates
only in an update mode, no time in any message, a clock message on each press, and every change written to the
EEPROM log whether a host listens or not (read with ``DGT_SEND_EE_MOVES``; consecutive changes of one square
overwrite each other, as the board does).

    python -m touchmove.sim.dgt TIMELINE [--speed N] [--serial 12345] [--serial-size 8|12] [--rotated] [--start FEN]
                                   [--drop START:LENGTH[:power]]
"""

from __future__ import annotations

import argparse
import os
import random
import select
import sys
import time
from dataclasses import dataclass
from typing import Any

import chess

from touchmove.boards import dgt
from touchmove.sim import timeline
from touchmove.sim.pieces import ClockPress, Event, start_pieces

#: A full scan takes this long (ms), drawn per scan.
SCAN_MS = (200, 250)
#: The clock's message reaches the board this long after the press (ms): reading the clock takes up to 1 s.
CLOCK_DELAY_MS = (100, 1000)
#: Reports due this long ago (ms) mean the board was stopped: it then reports the net changes of one scan.
BEHIND_MS = 1000
#: Each side's time on the clock at the start (ms) when the timeline does not say it.
CLOCK_START_MS = 90 * 60 * 1000
#: Bytes of the EEPROM log (a cyclic buffer).
EE_SIZE = 0x1F00
FIELD_ORDER = [f ^ 56 for f in range(64)]      # python-chess squares in the board's scanning order (a8 first)


def field_of(sq: int, rotated: bool) -> int:
    """Return the field number the board gives square ``sq`` (a board set up rotated numbers it turned)."""
    return (63 - sq if rotated else sq) ^ 56


class EepromLog:
    """The board's change log (see the module)."""

    def __init__(self, codes: list[int]) -> None:
        self.data = bytearray((dgt.EE_NOP, dgt.EE_NOP, dgt.EE_NOP, dgt.EE_POWERUP))
        for f, code in enumerate(codes):
            if code:
                self.data += bytes((0x40 | code, f))
        self.last_field: int | None = None

    def change(self, field_no: int, code: int) -> None:
        if self.last_field == field_no and len(self.data) >= 2:
            self.data[-2:] = bytes((0x40 | code, field_no))     # one piece changing: overwritten
        else:
            self.data += bytes((0x40 | code, field_no))
        self.last_field = field_no
        del self.data[:-EE_SIZE]

    def tag(self, code: int) -> None:
        self.data.append(code)
        self.last_field = None
        del self.data[:-EE_SIZE]


@dataclass(frozen=True)
class Drop:
    """The link lost from ``start`` for ``length`` ms (device time), the port kept open (a cable pulled behind
    a USB serial adapter): what the board sends and what it is sent are lost. ``power_cycle``: the board is
    also switched off for its first :data:`POWER_OFF_MS` (it senses nothing, logs nothing meanwhile) and comes
    back idle, its move memory going on with a power-up and the pieces it finds."""

    start: int
    length: int
    power_cycle: bool = False

    def covers(self, t: float) -> bool:
        return self.start <= t < self.start + self.length

    @property
    def power_up_at(self) -> int:
        """Return when the board is switched on again (device ms)."""
        return self.start + min(self.length, POWER_OFF_MS)

    @classmethod
    def parse(cls, text: str) -> Drop:
        """Return a drop from ``START:LENGTH`` or ``START:LENGTH:power`` (ms)."""
        parts = text.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "power"):
            raise argparse.ArgumentTypeError(f"a drop is START:LENGTH[:power] (ms), not {text!r}")
        return cls(int(parts[0]), int(parts[1]), len(parts) == 3)


POWER_UP = 2      # an item kind: the board powered on again (after the pieces' reports of the same time)
#: How long a power-cycled board is off (ms): the rest of the drop it is on, idle, its memory logging.
POWER_OFF_MS = 1000


class DgtEmulator:
    """The board's state and replies (pure: :meth:`advance` and :meth:`command` return bytes to send)."""

    def __init__(self, start: list[str | None], events: list[Event], serial: str = "12345",
                 rotated: bool = False, seed: int = 0, serial_size: int = 12,
                 drops: tuple[Drop, ...] = (), clock_swapped: bool = False) -> None:
        self.rotated = rotated
        self.serial = serial
        self.serial_size = serial_size          # 12: "12345 1.0"; 8: the 5 digits alone (as dgtbrd.h has it)
        self.drops = drops
        self.clock_swapped = clock_swapped      # the DGT clock set up with White on the other side
        rng = random.Random(seed)
        reports = timeline.scan(start, events, SCAN_MS, rng, order=self._order())
        self.items: list[tuple[int, int, Any]] = [(t, 0, (sq, piece)) for t, sq, piece in reports]
        for e in events:
            if isinstance(e, ClockPress):
                self.items.append((e.t + rng.randint(*CLOCK_DELAY_MS), 1, e))
        self.items += [(d.power_up_at, POWER_UP, d) for d in drops if d.power_cycle]
        self.items.sort(key=lambda item: (item[0], item[1]))
        self.next = 0
        self.codes = [0] * 64                    # by field number
        for sq, piece in enumerate(start):
            self.codes[field_of(sq, rotated)] = dgt.CONTENT_CODES[piece]
        self.pieces = list(self.codes)           # what stands on the board (the codes, while it is on)
        self.ee = EepromLog(self.codes)
        self.mode = "idle"
        self.clock = {"white": CLOCK_START_MS, "black": CLOCK_START_MS}
        self.turn: str | None = None
        self.clock_t = 0.0
        self.now = 0.0

    def link_down(self, t: float) -> bool:
        """Return whether the link is lost at device time ``t``."""
        return any(d.covers(t) for d in self.drops)

    def off(self, t: float) -> bool:
        """Return whether the board is switched off at device time ``t``."""
        return any(d.power_cycle and d.start <= t < d.power_up_at for d in self.drops)

    def power_up(self) -> None:
        """Switch the board on: idle, its move memory a power-up and every piece it finds."""
        self.codes = list(self.pieces)
        self.mode = "idle"
        for tag in (dgt.EE_NOP, dgt.EE_NOP, dgt.EE_NOP, dgt.EE_POWERUP):
            self.ee.tag(tag)
        for f, code in enumerate(self.codes):
            if code:
                self.ee.change(f, code)
        self.ee.last_field = None

    def _order(self) -> list[int]:
        return [(63 - sq if self.rotated else sq) for sq in FIELD_ORDER]

    def due(self) -> int | None:
        """Return the time of the next report, or None."""
        return self.items[self.next][0] if self.next < len(self.items) else None

    def advance(self, now: float) -> bytes:
        """Play what is due by ``now`` (device ms); return the messages sent."""
        out = bytearray()
        behind = self.next < len(self.items) and now - self.items[self.next][0] > BEHIND_MS
        before = list(self.codes)
        self.now = now
        while self.next < len(self.items) and self.items[self.next][0] <= now:
            t, kind, data = self.items[self.next]
            self.next += 1
            if kind == POWER_UP:
                self.power_up()
            elif kind == 0:
                sq, piece = data
                f = field_of(sq, self.rotated)
                code = dgt.CONTENT_CODES[piece]
                self.pieces[f] = code
                if self.off(t):
                    continue            # switched off: nothing sensed
                self.codes[f] = code
                if not behind:
                    self.ee.change(f, code)
                if self.mode != "idle" and not behind:
                    out += dgt.message(dgt.MSG_FIELD_UPDATE, bytes((f, code)))
            elif not self.off(t):
                press = data
                assert isinstance(press, ClockPress)
                side = "white" if press.side else "black"
                self.run_clock(now)
                if press.remaining is not None:
                    self.clock[side] = press.remaining
                self.turn = "black" if press.side else "white"
                if self.mode in ("update", "nice"):
                    out += self.clock_message()
        if behind:
            # the board was stopped (a hang): its next scan finds what differs now, once per square
            for f in range(64):
                if self.codes[f] != before[f]:
                    self.ee.change(f, self.codes[f])
                    if self.mode != "idle":
                        out += dgt.message(dgt.MSG_FIELD_UPDATE, bytes((f, self.codes[f])))
        return b"" if self.link_down(now) else bytes(out)

    def run_clock(self, now: float) -> None:
        """Run the clock of the side to move up to ``now``."""
        if self.turn is not None:
            self.clock[self.turn] = max(0, int(self.clock[self.turn] - (now - self.clock_t)))
        self.clock_t = now

    def clock_message(self) -> bytes:
        if self.clock_swapped:      # White's clock on the other side: the sides and the turn bits swapped
            other = {"white": "black", "black": "white", None: None}[self.turn]
            return dgt.message(dgt.MSG_BWTIME, dgt.clock_payload(self.clock["black"], self.clock["white"], other))
        return dgt.message(dgt.MSG_BWTIME, dgt.clock_payload(self.clock["white"], self.clock["black"], self.turn))

    def command(self, byte: int) -> bytes:
        """Return the reply to one command byte (none while the link is lost: the byte never arrives)."""
        if self.link_down(self.now):
            return b""
        if byte == dgt.SEND_RESET:
            self.mode = "idle"
        elif byte == dgt.SEND_UPDATE:
            self.mode = "update"
        elif byte == dgt.SEND_UPDATE_NICE:
            self.mode = "nice"
        elif byte == dgt.SEND_UPDATE_BRD:
            self.mode = "board"
        elif byte == dgt.SEND_BRD:
            return dgt.message(dgt.MSG_BOARD_DUMP, bytes(self.codes))
        elif byte == dgt.RETURN_SERIALNR:
            digits = self.serial[:5].rjust(5, "0")
            return dgt.message(dgt.MSG_SERIALNR, (digits + " 1.0" if self.serial_size == 12 else digits).encode())
        elif byte == dgt.SEND_VERSION:
            return dgt.message(dgt.MSG_VERSION, bytes((1, 7)))
        elif byte == dgt.SEND_CLK:
            return self.clock_message()
        elif byte == dgt.SEND_EE_MOVES:
            reply = dgt.message(dgt.MSG_EE_MOVES, bytes(self.ee.data) + bytes((dgt.EE_EOF,)))
            self.ee.tag(dgt.EE_DOWNLOADED)
            return reply
        return b""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m touchmove.sim.dgt", description=__doc__)
    parser.add_argument("timeline")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--serial", default="12345")
    parser.add_argument("--rotated", action="store_true")
    parser.add_argument("--serial-size", type=int, choices=(8, 12), default=12,
                        help="the serial-number message's size: 12 (digits, space, version) or 8 (the digits)")
    parser.add_argument("--start", default=chess.STARTING_FEN, help="the position on the board at power-on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock-swapped", action="store_true", help="the clock set up with White on the other side")
    parser.add_argument("--drop", type=Drop.parse, action="append", default=[],
                        help="the link lost at START for LENGTH ms of device time (START:LENGTH), the board "
                             "switched off meanwhile with START:LENGTH:power; repeatable")
    parser.add_argument("--t0", type=float, help="time.monotonic() of the timeline's 0 (default: now)")
    parser.add_argument("--wait-host", action="store_true",
                        help="the timeline's 0 when the host first writes to the board (a round starts once the "
                             "board is connected), not at power-on")
    args = parser.parse_args(argv)
    events = timeline.read(args.timeline)
    emulator = DgtEmulator(start_pieces(chess.Board(args.start)), events, args.serial, args.rotated, args.seed,
                           serial_size=args.serial_size, drops=tuple(args.drop),
                           clock_swapped=args.clock_swapped)
    return serve(emulator, args.speed, args.t0, wait_host=args.wait_host)


def serve(emulator: Any, speed: float, t0: float | None = None, *, wait_host: bool = False) -> int:
    """Run an emulator on stdin/stdout in real time (device ms = host ms x ``speed``, from ``t0``, a
    ``time.monotonic()`` reading, or now; with ``wait_host`` from the host's first bytes) until stdin closes."""
    begin: float | None = None if wait_host else time.monotonic() if t0 is None else t0
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()

    def now() -> float:
        return 0.0 if begin is None else (time.monotonic() - begin) * 1000 * speed

    while True:
        out = emulator.advance(now())
        if out:
            _write(stdout, out)
        due = emulator.due()
        wait = 0.05 if due is None else max(0.0, min(0.05, (due - now()) / 1000 / speed))
        ready, _, _ = select.select([stdin], [], [], wait)
        if ready:
            data = os.read(stdin, 4096)
            if not data:
                return 0
            if begin is None:
                begin = time.monotonic()
            reply = emulator.feed(data) if hasattr(emulator, "feed") else \
                b"".join(emulator.command(b) for b in data)
            if reply:
                _write(stdout, reply)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            time.sleep(0.005)


if __name__ == "__main__":
    sys.exit(main())
